import { describe, expect, it } from "vitest";
import type { Block, ToolBlock } from "../api/types";
import { describeActivity, describeStretch, formatElapsed, outputTail, stretches } from "./activity";

const tool = (name: string, input: string, status: "running" | "done" = "running"): Block => ({
  type: "tool",
  tool: name,
  tool_use_id: `${name}:${input}`,
  input,
  output: "",
  status,
});

describe("describeActivity", () => {
  it("says what the running tool does", () => {
    expect(describeActivity([tool("Bash", "npm test")])).toBe("Running `npm test`");
    expect(describeActivity([tool("Edit", "apps/notes/src/App.tsx")])).toBe("Editing App.tsx");
    expect(describeActivity([tool("Read", "a/b.ts")])).toBe("Reading b.ts");
    expect(describeActivity([tool("Grep", "TODO")])).toBe("Searching files");
    expect(describeActivity([tool("WebSearch", "rust")])).toBe("Searching the web");
    expect(describeActivity([tool("mcp:thing", "{}")])).toBe("Using mcp:thing");
    expect(describeActivity([tool("Agents", "wait")])).toBe("Waiting for subagents");
  });

  it("counts reads run back to back", () => {
    const reads = [tool("Bash", "ls", "done"), tool("Read", "a", "done"), tool("Read", "b", "done"), tool("Read", "c")];
    expect(describeActivity(reads)).toBe("Reading 3 files");
  });

  it("names thinking, writing and the start", () => {
    expect(describeActivity([])).toBe("Starting");
    expect(describeActivity(null)).toBe("Starting");
    expect(describeActivity([{ type: "thinking", content: "hm", item_id: "k" }])).toBe("Thinking");
    expect(describeActivity([{ type: "text", content: "Sure", item_id: "t" }])).toBe("Writing");
    // A finished tool with nothing after it: the model is deciding what comes next.
    expect(describeActivity([tool("Bash", "ls", "done")])).toBe("Thinking");
  });

  it("keeps a long command on one short line", () => {
    const line = describeActivity([tool("Bash", "x".repeat(200))]);
    expect(line.length).toBeLessThan(60);
    expect(line.endsWith("…`")).toBe(true);
  });
});

describe("formatElapsed", () => {
  it("reads like a clock", () => {
    expect(formatElapsed(-5)).toBe("0 s");
    expect(formatElapsed(4_900)).toBe("4 s");
    expect(formatElapsed(65_000)).toBe("1 min 05 s");
    expect(formatElapsed(3_720_000)).toBe("1 h 02 min");
  });
});

describe("outputTail", () => {
  it("keeps the last lines without the trailing newline", () => {
    expect(outputTail("1\n2\n3\n4\n5\n6\n", 4)).toBe("3\n4\n5\n6");
    expect(outputTail("one")).toBe("one");
  });
});

describe("stretches of tool work in a settled reply", () => {
  const step = (name: string, input: string, extra: Partial<ToolBlock> = {}): Block => ({ type: "tool", tool: name, tool_use_id: `${name}-${input}`, input, output: "", status: "done", ...extra });
  const text = (content: string): Block => ({ type: "text", content, item_id: content });

  it("groups two or more tool calls (thinking between them included) and leaves the rest alone", () => {
    const blocks = [text("a"), step("Read", "x"), { type: "thinking", content: "hm", item_id: "k" } as Block, step("Bash", "ls"), text("b"), step("Read", "y"), text("c")];
    const out = stretches(blocks);
    expect(out.map((s) => (s.type === "group" ? `group:${s.blocks.length}@${s.index}` : `block@${s.index}`))).toEqual(["block@0", "group:3@1", "block@4", "block@5", "block@6"]);
  });

  it("says what a stretch did in one line, with its time and failures", () => {
    const blocks = [
      step("Read", "a", { elapsed_ms: 20_000 }),
      step("Read", "b"),
      step("Grep", "x"),
      step("Glob", "*"),
      step("Bash", "npm test", { elapsed_ms: 21_000, status: "error" }),
      step("Edit", "a.ts", { files: [{ path: "a.ts", change: "update", added: 1, removed: 0, diff: "+x\n" }] }),
      step("Edit", "a.ts", { files: [{ path: "a.ts", change: "update", added: 1, removed: 0, diff: "+y\n" }] }),
    ];
    expect(describeStretch(blocks)).toBe("Read 2 files, searched twice, ran a command, edited a file · 41 s · 1 failed");
    expect(describeStretch([step("WebSearch", "q"), step("WebFetch", "u"), step("mcp:x", "")])).toBe("Searched the web, fetched a page, used a tool");
    // Codex's sub-agent and its talk with it.
    expect(describeStretch([step("Agent", "find config"), step("Agents", "wait"), step("Agents", "sendMessage")])).toBe(
      "Ran a subagent, waited for subagents, talked to subagents",
    );
  });
});
