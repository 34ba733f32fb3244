//! One transcript row: the owner's message as a bubble, or the assistant's turn as its blocks
//! in order. The live turn and its final form are the same row (same key), so nothing flickers.

import { memo, type ReactNode, useEffect, useMemo, useRef, useState } from "react";
import type { ApprovalAnswers, Block, QuestionAnswers, RunUsage, Waiting } from "../../api/types";
import { describeStretch, FIRST_STEPS, formatElapsed, isPlanTool, stepEstimatePx, STEPS_PER_FRAME, stretches, WINDOWED_FROM_STEPS } from "../../chat/activity";
import { describeLive, isSubagentCall, splitSubagents } from "../../chat/subagents";
import { copyToClipboard } from "../../chat/clipboard";
import type { ChatMessage } from "../../chat/reducer";
import type { VersionSwitch } from "../../chat/versions";
import { ErrorView, HandoffView, Kept, type KeptSteps, TextRest, ThinkingView, ToolView, wasCut } from "./Blocks";
import { MessageFiles } from "./ChatFiles";
import { FilesChanged } from "./Diff";
import { filesChanged, sourcesOf } from "../../chat/diff";
import { Sources } from "./Sources";
import { PlanView } from "./Plan";
import { SubagentChip } from "./Subagent";
import { Icon } from "../ui/Icon";
import { scrollParentOf, VirtualList } from "../ui/VirtualList";
import { Markdown } from "./Markdown";
import { QuestionCard } from "./QuestionCard";

export interface MessageRowProps {
  rowKey: string;
  chatId: string;
  message: ChatMessage;
  live: boolean;
  /** Live and not waiting on the owner: show the working dots. */
  working: boolean;
  onAnswer: (questionId: string, answers: QuestionAnswers | ApprovalAnswers) => Promise<void>;
  offline: boolean;
  /** The message's index in the transcript (settled rows). */
  idx?: number | undefined;
  /** The search hit the owner opened the chat at. */
  hit?: boolean;
  /** Put this (the owner's last) message back in the composer; absent on other rows. */
  onEdit?: (() => void) | undefined;
  /** Ask for this (the last) reply again; absent on other rows. */
  onRegenerate?: (() => void) | undefined;
  /** This row ends the shown version of a reply that has several (‹ 1/2 ›). */
  versions?: VersionSwitch | undefined;
  /** Shows version `shown` of the reply `group`. */
  onVersion?: ((group: string, shown: number) => void) | undefined;
  /** The CLI retrying a failed model request (the live row only). */
  retry?: { attempt: number; max_retries: number; reason: string } | null | undefined;
  /** The turn waiting for a free agent (the live row only). */
  waiting?: Waiting | null | undefined;
  /** Opens Settings (an error whose fix is there). */
  onOpenSettings?: (() => void) | undefined;
}

/** The text a row's Copy button copies: the owner's words, or the reply's text blocks. */
export function copyText(message: ChatMessage): string {
  if (message.role === "user") return message.content;
  const texts = (message.blocks ?? []).filter((b) => b.type === "text").map((b) => b.content);
  return texts.length > 0 ? texts.join("\n\n") : message.content;
}

/** The reply's versions: ‹ 1/2 ›, stepping through what Regenerate wrote. */
function Versions({ versions, onVersion }: { versions: VersionSwitch; onVersion: (group: string, shown: number) => void }) {
  const { group, shown, count } = versions;
  return (
    <div className="row-versions" role="group" aria-label="Versions of this reply">
      <button type="button" className="row-action row-version-step" aria-label="Previous version" disabled={shown <= 1} onClick={() => onVersion(group, shown - 1)}>
        <Icon name="back" size={15} />
      </button>
      <span className="row-version-count" aria-live="polite">
        <span aria-hidden="true">
          {shown}/{count}
        </span>
        <span className="visually-hidden">
          Version {shown} of {count}
        </span>
      </span>
      <button type="button" className="row-action row-version-step" aria-label="Next version" disabled={shown >= count} onClick={() => onVersion(group, shown + 1)}>
        <Icon name="chevron" size={15} />
      </button>
    </div>
  );
}

/** Copy (and Edit or Regenerate where they apply, and the versions of a regenerated reply) under
 *  a settled row; buttons, so touch reaches them. */
function RowActions({
  message,
  onEdit,
  onRegenerate,
  versions,
  onVersion,
}: {
  message: ChatMessage;
  onEdit?: (() => void) | undefined;
  onRegenerate?: (() => void) | undefined;
  versions?: VersionSwitch | undefined;
  onVersion?: ((group: string, shown: number) => void) | undefined;
}) {
  const [copied, setCopied] = useState(false);
  useEffect(() => {
    if (!copied) return;
    const timer = setTimeout(() => setCopied(false), 1500);
    return () => clearTimeout(timer);
  }, [copied]);
  const text = copyText(message);
  const switcher = versions && onVersion ? versions : undefined;
  if (!text && !onEdit && !onRegenerate && !switcher) return null;
  return (
    <div className="row-actions">
      {switcher && onVersion && <Versions versions={switcher} onVersion={onVersion} />}
      {text && (
        <button type="button" className="row-action" onClick={() => void copyToClipboard(text).then(setCopied)} aria-label={copied ? "Copied" : "Copy message"}>
          <Icon name={copied ? "check" : "copy"} size={15} />
          <span>{copied ? "Copied" : "Copy"}</span>
        </button>
      )}
      {onEdit && (
        <button type="button" className="row-action" onClick={onEdit} aria-label="Edit and resend">
          <Icon name="edit" size={15} />
          <span>Edit</span>
        </button>
      )}
      {onRegenerate && (
        <button type="button" className="row-action" onClick={onRegenerate} aria-label="Regenerate reply">
          <Icon name="refresh" size={15} />
          <span>Regenerate</span>
        </button>
      )}
    </div>
  );
}

/** "12.3k" for 12,345. */
export function compactCount(n: number): string {
  if (n < 1000) return String(n);
  if (n < 100_000) return `${(n / 1000).toFixed(1).replace(/\.0$/, "")}k`;
  if (n < 1_000_000) return `${Math.round(n / 1000)}k`;
  return `${(n / 1_000_000).toFixed(1).replace(/\.0$/, "")}M`;
}

/** "$0.0123" / "$1.20": a turn's cost as the owner reads it. */
export function dollars(cost: number): string {
  return cost < 0.1 ? `$${cost.toFixed(4)}` : `$${cost.toFixed(2)}`;
}

/** The one-line summary of what a turn used: "12.3k in · 456 out · $0.05". */
export function usageLine(usage: RunUsage): string {
  const parts: string[] = [];
  const input = (usage.input_tokens ?? 0) + (usage.cache_read_tokens ?? 0) + (usage.cache_write_tokens ?? 0);
  if (input > 0) parts.push(`${compactCount(input)} in`);
  if (typeof usage.output_tokens === "number") parts.push(`${compactCount(usage.output_tokens)} out`);
  if (typeof usage.cost_usd === "number") parts.push(dollars(usage.cost_usd));
  return parts.join(" · ");
}

/** What the turn used, under its reply; a tap shows every count. */
function UsageView({ usage }: { usage: RunUsage }) {
  const [open, setOpen] = useState(false);
  const line = usageLine(usage);
  if (!line) return null;
  return (
    <div className="row-usage">
      <button type="button" className="row-usage-line" aria-expanded={open} onClick={() => setOpen((o) => !o)} aria-label={`Usage: ${line}`}>
        {line}
      </button>
      {open && (
        <dl className="row-usage-detail">
          {typeof usage.input_tokens === "number" && (<><dt>Input</dt><dd>{usage.input_tokens.toLocaleString()} tokens</dd></>)}
          {typeof usage.cache_read_tokens === "number" && (<><dt>Cache read</dt><dd>{usage.cache_read_tokens.toLocaleString()} tokens</dd></>)}
          {typeof usage.cache_write_tokens === "number" && (<><dt>Cache write</dt><dd>{usage.cache_write_tokens.toLocaleString()} tokens</dd></>)}
          {typeof usage.output_tokens === "number" && (<><dt>Output</dt><dd>{usage.output_tokens.toLocaleString()} tokens</dd></>)}
          {typeof usage.cost_usd === "number" && (<><dt>Cost</dt><dd>{dollars(usage.cost_usd)}</dd></>)}
        </dl>
      )}
    </div>
  );
}

/** A turn that has not started because as many agents run as the server allows. */
export function waitingText(waiting: Waiting): string {
  return `Waiting for a free agent: ${waiting.busy} of ${waiting.limit} are busy`;
}

/** The live row's status: what the agent is doing and for how long, ticking once a second. It
 *  is not a live region: a screen reader would read the clock every second (the chat announces
 *  a turn's start and end instead). */
function Activity({ message, retry, waiting }: { message: ChatMessage; retry?: MessageRowProps["retry"]; waiting?: MessageRowProps["waiting"] }) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  const what = retry
    ? `Retrying, ${retry.attempt} of ${retry.max_retries}: ${retry.reason}`
    : waiting
      ? waitingText(waiting)
      : describeLive(message.blocks);
  return (
    <div className="working">
      <span className="working-dots" aria-hidden="true">
        <span />
        <span />
        <span />
      </span>
      <span className="working-what">{what}</span>
      <span className="working-time" aria-hidden="true">
        {formatElapsed(now - message.ts)}
      </span>
    </div>
  );
}

/** A slow action on the chat that is not a turn (`/compact`): a row like the live one, with its
 *  elapsed time, until it ends. */
export function Progress({ since, label }: { since: number; label: string }) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  return (
    <div className="row row-assistant row-progress" aria-busy="true">
      <div className="working">
        <span className="working-dots" aria-hidden="true">
          <span />
          <span />
          <span />
        </span>
        <span className="working-what">{label}</span>
        <span className="working-time" aria-hidden="true">
          {formatElapsed(now - since)}
        </span>
      </div>
    </div>
  );
}

/** `items` in runs of `size`. */
function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** One step of an opened stretch: its block and its place in the stretch. */
interface Step {
  block: Block;
  k: number;
}

const stepKey = (step: Step) => String(step.k);
/** Steps rendered beyond each edge of the screen, in px: the window moves every half of it, a
 *  few steps at a time (fewer and larger moves cost longer frames at a time). */
const STEP_OVERSCAN_PX = 400;
/** A step's assumed height before it is measured (`activity.ts`). */
const stepEstimate = (step: Step) => stepEstimatePx(step.block);

/** One step of a windowed stretch; rendered again only when it comes into range. */
const StepItem = memo(function StepItem({ step, total, render }: { step: Step; total: number; render: (block: Block, k: number) => ReactNode }) {
  return (
    <li className="activity-step" aria-posinset={step.k + 1} aria-setsize={total}>
      {render(step.block, step.k)}
    </li>
  );
});

/** The steps of a long stretch: only those near the screen are in the page (`VirtualList` in the
 *  chat's scroller), so a stretch of thousands scrolls and opens at the cost of one screen. */
function StepWindow({ blocks, render, scroller }: { blocks: Block[]; render: (block: Block, k: number) => ReactNode; scroller: HTMLElement | null }) {
  const steps = useMemo(() => blocks.map((block, k) => ({ block, k })), [blocks]);
  return (
    <VirtualList
      className="activity-group-steps activity-group-window"
      items={steps}
      itemKey={stepKey}
      renderItem={(step) => <StepItem key={step.k} step={step} total={steps.length} render={render} />}
      estimate={stepEstimate}
      scroller={scroller}
      overscanPx={STEP_OVERSCAN_PX}
    />
  );
}

/** A settled stretch of tool work as one line ("Read 6 files, ran 3 commands · 41 s") that
 *  expands into its steps; the steps render only once opened: a frame's batch at a time, or past
 *  `WINDOWED_FROM_STEPS` only those near the screen. A step stays as the owner left it (opened,
 *  its diff's context and rows) while the stretch is open, scrolled out of range and back
 *  included. */
function ActivityGroup({ blocks, render }: { blocks: Block[]; render: (block: Block, k: number) => ReactNode }) {
  // What the open stretch keeps of its steps (`Blocks.tsx`); made on opening, dropped on closing.
  const [kept, setKept] = useState<KeptSteps | null>(null);
  const open = kept !== null;
  const [count, setCount] = useState(FIRST_STEPS);
  const windowed = blocks.length > WINDOWED_FROM_STEPS;
  const ref = useRef<HTMLDivElement>(null);
  // The chat's scroller, found when the stretch opens (a windowed stretch follows its scroll).
  const [scroller, setScroller] = useState<HTMLElement | null>(null);
  useEffect(() => {
    if (!open || windowed || count >= blocks.length) return;
    const frame = requestAnimationFrame(() => setCount((n) => n + STEPS_PER_FRAME));
    return () => cancelAnimationFrame(frame);
  }, [open, windowed, count, blocks.length]);
  const failed = blocks.some((b) => b.type === "tool" && b.status === "error");
  const toggle = () => {
    if (windowed && !open) setScroller(scrollParentOf(ref.current));
    setKept(open ? null : { open: new Set(), outputs: new Map(), diffs: new Map() });
    setCount(FIRST_STEPS);
  };
  return (
    <div className="activity-group" data-failed={failed || undefined} ref={ref}>
      <button type="button" className="activity-group-head" aria-expanded={open} onClick={toggle}>
        <span className="tool-glyph tool-glyph-terminal" aria-hidden="true" />
        <span className="activity-group-line">{describeStretch(blocks)}</span>
        <span className="tool-glyph tool-chevron" aria-hidden="true" />
      </button>
      {kept && (
        <Kept.Provider value={kept}>
          {windowed ? (
            <StepWindow blocks={blocks} render={render} scroller={scroller} />
          ) : (
            <div className="activity-group-steps" aria-busy={count < blocks.length || undefined}>
              {chunks(
                blocks.slice(0, count).map((block, k) => render(block, k)),
                STEPS_PER_FRAME,
              ).map((chunk, i) => (
                // Chunks of a fixed size: a step never moves to another one as more arrive.
                <div className="activity-group-chunk" key={i}>
                  {chunk}
                </div>
              ))}
            </div>
          )}
        </Kept.Provider>
      )}
    </div>
  );
}

export const MessageRow = memo(function MessageRow({
  rowKey,
  chatId,
  message,
  live,
  working,
  onAnswer,
  offline,
  idx,
  hit,
  onEdit,
  onRegenerate,
  versions,
  onVersion,
  retry,
  waiting,
  onOpenSettings,
}: MessageRowProps) {
  if (message.role === "user") {
    return (
      <div className="row row-user" data-key={rowKey} data-idx={idx} data-hit={hit || undefined} data-cid={message.cid ?? undefined} data-sending={message.sending || undefined}>
        {message.cid?.startsWith("schedule-") && <span className="row-note">Scheduled</span>}
        {message.attachments && message.attachments.length > 0 && <MessageFiles chatId={chatId} files={message.attachments} />}
        {(message.content !== "" || !message.attachments?.length) && <div className="bubble">{message.content}</div>}
        {message.sending && <span className="row-note">Sending…</span>}
        {!message.sending && idx !== undefined && <RowActions message={message} onEdit={onEdit} />}
      </div>
    );
  }
  const all = message.blocks && message.blocks.length > 0 ? message.blocks : message.content ? [{ type: "text" as const, content: message.content, item_id: "content" }] : [];
  // The question card stands for the AskUserQuestion call that produced it.
  const hasCard = all.some((b) => b.type === "question");
  // So does the plan card for the plan tool calls (TodoWrite, TaskCreate/TaskUpdate…) that wrote it.
  const hasPlan = all.some((b) => b.type === "plan");
  const shown = all.filter((b) => !(b.type === "tool" && ((hasCard && b.tool === "AskUserQuestion") || (hasPlan && isPlanTool(b.tool)))));
  // A subagent's steps show under its chip; the reply's own steps (and their groups) without them.
  const { main: blocks, steps } = splitSubagents(shown);
  const changed = live ? [] : filesChanged(shown);
  const sources = sourcesOf(shown);
  function renderBlock(block: Block, i: number) {
    switch (block.type) {
      case "text":
        return wasCut(block.content) ? (
          <div key={`t:${block.item_id}:${i}`}>
            <Markdown text={block.content} chatId={chatId} />
            <TextRest chatId={chatId} itemId={block.item_id} />
          </div>
        ) : (
          <Markdown key={`t:${block.item_id}:${i}`} text={block.content} chatId={chatId} />
        );
      case "thinking":
        return <ThinkingView key={`k:${block.item_id}:${i}`} block={block} live={live && i === blocks.length - 1} />;
      case "tool":
        return isSubagentCall(block) ? (
          <SubagentChip key={`u:${block.tool_use_id}`} chatId={chatId} block={block} steps={steps.get(block.tool_use_id) ?? []} />
        ) : (
          <ToolView key={`u:${block.tool_use_id}`} chatId={chatId} block={block} />
        );
      case "question":
        return <QuestionCard key={`q:${block.question_id}`} block={block} onAnswer={onAnswer} disabled={offline} chatId={chatId} live={live} />;
      case "error":
        return <ErrorView key={`e:${i}`} block={block} onOpenSettings={onOpenSettings} />;
      case "handoff":
        return <HandoffView key={`h:${block.switch_id}`} block={block} />;
      case "plan":
        return <PlanView key="plan" block={block} />;
    }
      }
  return (
    <div className="row row-assistant" data-key={rowKey} data-idx={idx} data-hit={hit || undefined} data-live={live || undefined} aria-busy={live || undefined}>
      {live
        ? blocks.map(renderBlock)
        : stretches(blocks).map((stretch) =>
            stretch.type === "group" ? (
              <ActivityGroup key={`g:${stretch.index}`} blocks={stretch.blocks} render={(block, k) => renderBlock(block, stretch.index + k)} />
            ) : (
              renderBlock(stretch.block, stretch.index)
            ),
          )}
      {!live && blocks.length === 0 && <p className="row-quiet">Stopped before replying.</p>}
      {working && <Activity message={message} retry={retry} waiting={waiting} />}
      {sources.length > 0 && <Sources sources={sources} />}
      {changed.length > 0 && <FilesChanged chatId={chatId} files={changed} />}
      {!live && message.usage && <UsageView usage={message.usage} />}
      {!live && idx !== undefined && <RowActions message={message} onRegenerate={onRegenerate} versions={versions} onVersion={onVersion} />}
    </div>
  );
});
