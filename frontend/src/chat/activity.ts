//! What the agent is doing right now, in words, for the live row: derived from the live
//! message's blocks alone (no extra request), so it changes exactly when the transcript does.

import type { Block, ToolBlock } from "../api/types";



const READS = new Set(["Read", "NotebookRead"]);
const EDITS = new Set(["Write", "Edit", "MultiEdit", "NotebookEdit"]);
const SEARCHES = new Set(["Glob", "Grep", "LS"]);
/** The CLIs' own plan tools: Claude's TodoWrite and its task tools (the plan card stands for them). */
const PLAN_TOOLS = new Set(["TodoWrite", "TaskCreate", "TaskUpdate", "TaskList", "TaskGet"]);

/** Is this tool one of the agent's plan tools (its calls are shown by the plan card)? */
export const isPlanTool = (name: string): boolean => PLAN_TOOLS.has(name);

/** The last path segment of a path summary (`apps/notes/src/App.tsx` → `App.tsx`). */
function fileName(input: string): string {
  const trimmed = input.replace(/\/+$/, "");
  const last = trimmed.split("/").pop();
  return last && last.length > 0 ? last : input;
}

/** A command shortened for one line. */
function shortCommand(input: string): string {
  const line = input.trim();
  return line.length > 48 ? `${line.slice(0, 47)}…` : line;
}

/**
 * One line for the live row: "Running `npm test`", "Reading 3 files", "Editing App.tsx",
 * "Thinking", "Writing", or "Starting" before anything arrived.
 */
export function describeActivity(blocks: readonly Block[] | null | undefined): string {
  const list = blocks ?? [];
  const last = list[list.length - 1];
  if (!last) return "Starting";
  switch (last.type) {
    case "thinking":
      return "Thinking";
    case "text":
      return "Writing";
    case "question":
      return "Waiting for your answer";
    case "error":
      return "Recovering";
    case "handoff":
      return "Starting";
    case "plan":
      return "Planning";
    case "tool":
      return describeTool(last, list);
  }
}

function describeTool(tool: ToolBlock, list: readonly Block[]): string {
  if (tool.status !== "running") return "Thinking";
  if (READS.has(tool.tool)) {
    // Reads the agent runs back to back count together, as one reading step.
    let reads = 0;
    for (let i = list.length - 1; i >= 0; i--) {
      const block = list[i];
      if (block?.type !== "tool" || !READS.has(block.tool)) break;
      reads += 1;
    }
    return reads > 1 ? `Reading ${reads} files` : `Reading ${fileName(tool.input)}`;
  }
  if (EDITS.has(tool.tool)) return tool.input ? `Editing ${fileName(tool.input)}` : "Editing a file";
  if (SEARCHES.has(tool.tool)) return "Searching files";
  if (PLAN_TOOLS.has(tool.tool)) return "Planning";
  switch (tool.tool) {
    case "Bash":
      return tool.input ? `Running \`${shortCommand(tool.input)}\`` : "Running a command";
    case "WebFetch":
      return "Fetching a page";
    case "WebSearch":
      return "Searching the web";
    case "Task":
    case "Agent":
      return "Working on a subtask";
    // Codex talking to the sub-agents it started (`wait`, `sendMessage`…).
    case "Agents":
      return tool.input === "wait" ? "Waiting for subagents" : "Talking to subagents";
    default:
      return `Using ${tool.tool}`;
  }
}

/** Elapsed time as "4 s", "1 min 05 s", "1 h 02 min". */
export function formatElapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, "0")} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, "0")} min`;
}

/** The last `lines` lines of a streaming output, for a running tool's preview. */
export function outputTail(output: string, lines = 4): string {
  const all = output.replace(/\s+$/, "").split("\n");
  return all.slice(-lines).join("\n");
}

/** A settled reply's blocks in order, with each stretch of tool work (two or more tool calls,
 *  thinking between them included) as one group; anything else stands alone. */
export type Stretch = { type: "block"; block: Block; index: number } | { type: "group"; blocks: Block[]; index: number };

/** Steps an opened stretch shows in its first frame (more than a phone's screen holds), and how
 *  many join in each frame after: a stretch of hundreds of calls opens at once, and the page keeps
 *  drawing while the rest arrive. */
export const FIRST_STEPS = 24;
export const STEPS_PER_FRAME = 48;
/** Stretches longer than this keep only the steps near the screen in the page (windowed): past
 *  a few hundred steps, laying out and painting them all costs frames while scrolling. Shorter
 *  ones are whole, so the browser's find-in-page sees every step. */
export const WINDOWED_FROM_STEPS = 200;
/** A closed step's height in a windowed stretch until it is measured, in px (the row, its border
 *  and the 8 px to the next; `chat-blocks.css`): right for every closed step, so a step coming
 *  into range moves nothing. */
export function stepEstimatePx(block: Block): number {
  return block.type === "thinking" ? 40 : 54;
}

const WORK = (b: Block) => b.type === "tool" || b.type === "thinking";

export function stretches(blocks: readonly Block[]): Stretch[] {
  const out: Stretch[] = [];
  let i = 0;
  while (i < blocks.length) {
    const block = blocks[i] as Block;
    if (!WORK(block)) {
      out.push({ type: "block", block, index: i });
      i += 1;
      continue;
    }
    let end = i;
    let tools = 0;
    while (end < blocks.length && WORK(blocks[end] as Block)) {
      if ((blocks[end] as Block).type === "tool") tools += 1;
      end += 1;
    }
    if (tools >= 2) out.push({ type: "group", blocks: blocks.slice(i, end), index: i });
    else for (let k = i; k < end; k++) out.push({ type: "block", block: blocks[k] as Block, index: k });
    i = end;
  }
  return out;
}

const times = (n: number, one: string, many: (n: number) => string) => (n === 1 ? one : many(n));
const timesWord = (n: number) => (n === 2 ? "twice" : `${n} times`);

/**
 * One line for a stretch of tool work: "Read 6 files, searched twice, ran 3 commands · 41 s"
 * (the time is the calls' own, summed; left out when none was measured), "· 1 failed" when
 * some call failed.
 */
export function describeStretch(blocks: readonly Block[]): string {
  const counts = new Map<string, number>();
  const edited = new Set<string>();
  let ms = 0;
  let failed = 0;
  const order: string[] = [];
  const add = (key: string) => {
    if (!counts.has(key)) order.push(key);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  };
  for (const block of blocks) {
    if (block.type !== "tool") continue;
    ms += block.elapsed_ms ?? 0;
    if (block.status === "error") failed += 1;
    const name = block.tool;
    if (READS.has(name)) add("read");
    else if (EDITS.has(name)) {
      if (!counts.has("edit")) order.push("edit");
      counts.set("edit", 1);
      for (const file of block.files ?? []) edited.add(file.path);
      if (!block.files?.length) edited.add(block.input || block.tool_use_id);
    } else if (SEARCHES.has(name)) add("search");
    else if (name === "Bash") add("run");
    else if (name === "WebSearch") add("web");
    else if (name === "WebFetch") add("fetch");
    else if (name === "Task" || name === "Agent") add("task");
    else if (PLAN_TOOLS.has(name)) add("plan");
    else if (name === "Agents") add(block.input === "wait" ? "wait" : "talk");
    else add("other");
  }
  const phrase = (key: string): string => {
    const n = counts.get(key) ?? 0;
    switch (key) {
      case "read":
        return times(n, "read a file", (k) => `read ${k} files`);
      case "edit":
        return times(edited.size, "edited a file", (k) => `edited ${k} files`);
      case "search":
        return times(n, "searched once", (k) => `searched ${timesWord(k)}`);
      case "run":
        return times(n, "ran a command", (k) => `ran ${k} commands`);
      case "web":
        return times(n, "searched the web", (k) => `searched the web ${timesWord(k)}`);
      case "fetch":
        return times(n, "fetched a page", (k) => `fetched ${k} pages`);
      case "task":
        return times(n, "ran a subagent", (k) => `ran ${k} subagents`);
      case "plan":
        return "updated the plan";
      case "wait":
        return "waited for subagents";
      case "talk":
        return "talked to subagents";
      default:
        return times(n, "used a tool", (k) => `used ${k} tools`);
    }
  };
  let line = order.map(phrase).join(", ");
  line = line.charAt(0).toUpperCase() + line.slice(1);
  if (ms >= 1000) line += ` · ${formatElapsed(ms)}`;
  if (failed > 0) line += ` · ${failed} failed`;
  return line;
}
