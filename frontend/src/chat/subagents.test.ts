import { describe, expect, it } from "vitest";
import type { Block, ToolBlock } from "../api/types";
import { describeStretch, stretches } from "./activity";
import { describeLive, splitSubagents } from "./subagents";

const tool = (id: string, name: string, extra: Partial<Omit<ToolBlock, "type">> = {}): Block => ({
  type: "tool",
  tool: name,
  tool_use_id: id,
  input: id,
  output: "",
  status: "done",
  ...extra,
});

describe("subagent steps", () => {
  it("go under their call, and the grouped activity counts the subagent as one step", () => {
    const blocks = [
      tool("r0", "Read"),
      tool("a1", "Agent", { subagent_type: "Explore", elapsed_ms: 4000 }),
      tool("r1", "Read", { parent_tool_use_id: "a1" }),
      tool("b1", "Bash", { parent_tool_use_id: "a1", status: "error" }),
      { type: "text", item_id: "t", content: "Found it." } as Block,
    ];
    const { main, steps } = splitSubagents(blocks);
    expect(main.map((b) => (b.type === "tool" ? b.tool_use_id : b.type))).toEqual(["r0", "a1", "text"]);
    expect(steps.get("a1")?.map((b) => b.tool_use_id)).toEqual(["r1", "b1"]);
    const [group] = stretches(main);
    expect(group?.type).toBe("group");
    expect(describeStretch(group?.type === "group" ? group.blocks : [])).toBe("Read a file, ran a subagent · 4 s");
  });

  it("leave a step whose call is not in the message among the reply's own", () => {
    const { main, steps } = splitSubagents([tool("r1", "Read", { parent_tool_use_id: "gone" })]);
    expect(main).toHaveLength(1);
    expect(steps.size).toBe(0);
  });

  it("give the live line while one works, also after the reply went on in words (a background agent)", () => {
    const running = tool("a1", "Agent", { status: "running" });
    const words = { type: "text", item_id: "t", content: "It is on its way." } as Block;
    expect(describeLive([running])).toBe("Starting a subagent");
    expect(describeLive([running, words])).toBe("Waiting for a subagent");
    expect(describeLive([running, words, tool("b1", "Bash", { parent_tool_use_id: "a1", status: "running", input: "ls" })])).toBe("Subagent: Running `ls`");
    expect(describeLive([tool("a1", "Agent"), words])).toBe("Writing");
  });
});
