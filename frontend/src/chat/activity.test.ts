import { describe, expect, it } from "vitest";
import type { Block } from "../api/types";
import { describeActivity, formatElapsed, outputTail } from "./activity";

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
