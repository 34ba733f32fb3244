//! What the agent is doing right now, in words, for the live row: derived from the live
//! message's blocks alone (no extra request), so it changes exactly when the transcript does.

import type { Block, ToolBlock } from "../api/types";



const READS = new Set(["Read", "NotebookRead"]);
const EDITS = new Set(["Write", "Edit", "MultiEdit", "NotebookEdit"]);
const SEARCHES = new Set(["Glob", "Grep", "LS"]);

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
    case "TodoWrite":
      return "Planning";
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
