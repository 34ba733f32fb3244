//! The assistant's non-text blocks: a tool call (collapsible, with status and the full output
//! on demand), the thinking disclosure and an error line.

import { createContext, useContext, useState } from "react";
import { fetchToolOutput } from "../../api/chats";
import type { ErrorBlock, HandoffBlock, Pause, ThinkingBlock, ToolBlock } from "../../api/types";
import { outputTail } from "../../chat/activity";
import { ToolImages } from "./ChatFiles";
import { DiffCounts, FileDiffView, type DiffView } from "./Diff";
import { Icon } from "../ui/Icon";

const STATUS_TEXT: Record<ToolBlock["status"], string> = {
  running: "Running",
  done: "Done",
  error: "Failed",
  stopped: "Stopped",
};

/** What an opened stretch keeps of its steps, so a step that leaves the page (a windowed
 *  stretch) comes back as the owner left it: the steps, thoughts and subagent chips opened, the
 *  full outputs the owner fetched, and the view of each diff the owner (or its filling) changed
 *  from how it opens. Only the stretch's steps, only while it is open. */
export interface KeptSteps {
  /** By `tool_use_id`, `thinking:<item_id>` or `subagent:<tool_use_id>`. */
  open: Set<string>;
  /** A step's whole output once "Show full output" fetched it, by `tool_use_id`. */
  outputs: Map<string, string>;
  /** By `<tool_use_id>:<the file's place in the step>`. */
  diffs: Map<string, DiffView>;
}


export const Kept = createContext<KeptSteps | null>(null);

export function ToolView({ chatId, block }: { chatId: string; block: ToolBlock }) {
  const kept = useContext(Kept);
  const [open, setOpen] = useState(() => kept?.open.has(block.tool_use_id) ?? false);
  const toggle = () => {
    if (open) kept?.open.delete(block.tool_use_id);
    else kept?.open.add(block.tool_use_id);
    setOpen(!open);
  };
  const [full, setFull] = useState<string | null>(() => kept?.outputs.get(block.tool_use_id) ?? null);
  const [fetching, setFetching] = useState(false);
  const [fetchError, setFetchError] = useState<string | null>(null);
  const bodyId = `tool-${block.tool_use_id}`;

  async function showFull() {
    setFetching(true);
    setFetchError(null);
    try {
      const whole = await fetchToolOutput(chatId, block.tool_use_id);
      kept?.outputs.set(block.tool_use_id, whole);
      setFull(whole);
    } catch {
      setFetchError("Couldn't load the full output.");
    } finally {
      setFetching(false);
    }
  }

  const output = full ?? block.output;
  const files = block.files ?? [];
  const added = files.reduce((n, f) => n + f.added, 0);
  const removed = files.reduce((n, f) => n + f.removed, 0);
  const hidden = block.output_full_len !== undefined ? Math.max(0, block.output_full_len - block.output.length) : null;
  return (
    <div className="tool" data-status={block.status}>
      <button type="button" className="tool-head" aria-expanded={open} aria-controls={bodyId} onClick={toggle}>
        <span className="tool-icon tool-glyph tool-glyph-terminal" aria-hidden="true" />
        <span className="tool-name">{block.tool}</span>
        <span className="tool-input">{block.input}</span>
        {files.length > 0 && <DiffCounts added={added} removed={removed} />}
        <span className="tool-status" data-status={block.status}>
          <span className="tool-status-dot" aria-hidden="true" />
          {STATUS_TEXT[block.status]}
        </span>
        <span className="tool-glyph tool-chevron" aria-hidden="true" />
      </button>
      {block.images && block.images.length > 0 && <ToolImages chatId={chatId} urls={block.images} />}
      {!open && block.status === "running" && block.output && (
        <pre className="tool-pre tool-tail" aria-label={`Latest output of ${block.tool}`}>
          {outputTail(block.output)}
        </pre>
      )}
      {open && (
        <div className="tool-body" id={bodyId}>
          {files.map((file, i) => (
            <div className="tool-file" key={`${file.path}:${i}`}>
              {files.length > 1 && <p className="tool-file-path">{file.path}</p>}
              <FileDiffView chatId={chatId} file={file} views={kept?.diffs} viewKey={`${block.tool_use_id}:${i}`} />
            </div>
          ))}
          {block.input && files.length === 0 && <pre className="tool-pre tool-pre-input">{block.input}</pre>}
          {output ? <pre className="tool-pre">{output}</pre> : <p className="tool-empty">{block.status === "running" ? "Waiting for output…" : "No output."}</p>}
          {block.output_exit_code !== undefined && block.output_exit_code !== null && (
            <p className="tool-meta">Exit code {block.output_exit_code}</p>
          )}
          {block.output_truncated && full === null && (
            <button type="button" className="tool-more" onClick={() => void showFull()} disabled={fetching} aria-busy={fetching}>
              {fetching ? "Loading…" : hidden ? `Show full output (${hidden.toLocaleString()} more characters)` : "Show full output"}
            </button>
          )}
          {fetchError && (
            <p className="tool-meta tool-meta-error" role="alert">
              {fetchError}
            </p>
          )}
        </div>
      )}
    </div>
  );
}

/** The end of a text block the server cut at its inline cap (agent/fold.rs `OVERFLOW_NOTE`). */
const OVERFLOW_NOTE_END = "as this block's full output.]";

/** True when the server cut this text block and keeps the rest. */
export const wasCut = (text: string) => text.endsWith(OVERFLOW_NOTE_END);

/** The rest of a text block past its inline cap, on demand. */
export function TextRest({ chatId, itemId }: { chatId: string; itemId: string }) {
  const [rest, setRest] = useState<string | null>(null);
  const [fetching, setFetching] = useState(false);
  const [failed, setFailed] = useState(false);
  async function load() {
    setFetching(true);
    setFailed(false);
    try {
      setRest(await fetchToolOutput(chatId, itemId));
    } catch {
      setFailed(true);
    } finally {
      setFetching(false);
    }
  }
  if (rest !== null) return <pre className="tool-pre">{rest}</pre>;
  return (
    <>
      <button type="button" className="tool-more" onClick={() => void load()} disabled={fetching} aria-busy={fetching}>
        {fetching ? "Loading…" : "Show the rest of this text"}
      </button>
      {failed && (
        <p className="tool-meta tool-meta-error" role="alert">
          Couldn't load the rest.
        </p>
      )}
    </>
  );
}

export function ThinkingView({ block, live }: { block: ThinkingBlock; live: boolean }) {
  const kept = useContext(Kept);
  const key = `thinking:${block.item_id}`;
  return (
    <details
      className="thinking"
      open={kept?.open.has(key)}
      onToggle={(e) => {
        if (e.currentTarget.open) kept?.open.add(key);
        else kept?.open.delete(key);
      }}
    >
      <summary>
        <Icon name="spark" size={15} />
        <span>{live ? "Thinking…" : "Thought process"}</span>
      </summary>
      <div className="thinking-body">{block.content}</div>
    </details>
  );
}

const PROVIDER_NAMES: Record<string, string> = { claude: "Claude", codex: "Codex" };

/** The marker of a provider switch or a compaction, with the summary the next session got. */
export function HandoffView({ block }: { block: HandoffBlock }) {
  const [open, setOpen] = useState(false);
  const to = PROVIDER_NAMES[block.to_provider] ?? block.to_provider;
  const from = block.from_provider ? (PROVIDER_NAMES[block.from_provider] ?? block.from_provider) : null;
  const title = block.reason === "compact" ? `Compacted: ${to} goes on from a summary` : from ? `Moved from ${from} to ${to}` : `Moved to ${to}`;
  const by = block.summarized_by === "provider" ? `written by ${from ?? to}` : "made from the transcript";
  return (
    <div className="handoff-block" role="note" data-reason={block.reason}>
      <button type="button" className="handoff-title" aria-expanded={open} onClick={() => setOpen((o) => !o)}>
        <Icon name="refresh" size={15} />
        <span>{title}</span>
        <span className="handoff-by">Summary {by}</span>
      </button>
      {open && <p className="handoff-summary">{block.summary}</p>}
    </div>
  );
}

/** What a paused turn's card adds: when it continues by itself. */
export function pauseNote(pause: Pause): string {
  if (pause.kind === "restart") return "Continuing by itself after the restart.";
  if (typeof pause.resumes_at !== "number") return "Automatic continuation is off for this chat: send a message once the limit resets.";
  const at = new Date(pause.resumes_at);
  const sameDay = at.toDateString() === new Date().toDateString();
  const time = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return `Continues at ${sameDay ? time : `${at.toLocaleDateString([], { weekday: "short" })} ${time}`}.`;
}

export function ErrorView({ block, onOpenSettings }: { block: ErrorBlock; onOpenSettings?: (() => void) | undefined }) {
  return (
    <div className="error-block" role="note" data-pause={block.pause?.kind}>
      <Icon name="alert" size={16} />
      <span>
        {block.message}
        {block.pause && <span className="error-pause"> {pauseNote(block.pause)}</span>}
      </span>
      {block.fix === "provider_settings" && onOpenSettings && (
        <button type="button" className="btn btn-secondary btn-small error-fix" onClick={onOpenSettings}>
          Open provider settings
        </button>
      )}
    </div>
  );
}
