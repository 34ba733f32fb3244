//! A subagent's steps (Claude's Task/Agent call): the tool calls its agent made carry the call's
//! id (`parent_tool_use_id`) and are shown under its chip instead of among the reply's own steps.
//! Pure, so the rule is unit-tested.

import type { Block, ToolBlock } from "../api/types";
import { describeActivity } from "./activity";

/** Is this tool call a subagent call (it may have steps of its own)? */
export const isSubagentCall = (tool: ToolBlock): boolean => tool.tool === "Task" || tool.tool === "Agent" || !!tool.subagent_type;

/** Is this block a subagent call? */
export const isSubagent = (block: Block): block is ToolBlock => block.type === "tool" && isSubagentCall(block);

/**
 * The reply's own blocks and, for each subagent call in it, the steps its agent made. A step
 * whose call is not in the message (a row sealed in between) stays among the reply's own, so no
 * step is ever hidden.
 */
export function splitSubagents(blocks: readonly Block[]): { main: Block[]; steps: Map<string, ToolBlock[]> } {
  const calls = new Set<string>();
  for (const b of blocks) if (b.type === "tool") calls.add(b.tool_use_id);
  const steps = new Map<string, ToolBlock[]>();
  const main: Block[] = [];
  for (const b of blocks) {
    const parent = b.type === "tool" ? b.parent_tool_use_id : null;
    if (b.type === "tool" && parent && parent !== b.tool_use_id && calls.has(parent)) {
      const list = steps.get(parent);
      if (list) list.push(b);
      else steps.set(parent, [b]);
    } else main.push(b);
  }
  return { main, steps };
}

/**
 * The live row's line: the reply's own last step, or, while a subagent works, its last step —
 * also when the reply went on in words after starting one in the background (the turn then
 * waits for it).
 */
export function describeLive(blocks: readonly Block[] | null | undefined): string {
  const { main, steps } = splitSubagents(blocks ?? []);
  const last = main[main.length - 1];
  const waiting = last?.type === "text" ? main.findLast((b) => isSubagent(b) && b.status === "running") : undefined;
  const working = last && isSubagent(last) && last.status === "running" ? last : waiting;
  if (working && working.type === "tool") {
    const own = steps.get(working.tool_use_id) ?? [];
    return own.length > 0 ? `Subagent: ${describeActivity(own)}` : waiting ? "Waiting for a subagent" : "Starting a subagent";
  }
  return describeActivity(main);
}
