//! The chat state machine: folds the detail snapshot, stream events and the owner's own
//! sends into one transcript. Pure, so every event type in API.md is unit-tested. Events
//! carry `seq`; anything at or below the last applied `seq` is a replay and changes nothing.
//! One run can own several assistant rows: steering seals the reply so far into its own row.
//! The live message folds exactly as the server's `protocol/live.rs` does; the shared fixture
//! `tests/fixtures/chat-turns.jsonl` checks both against the transcript the server stored.

import { pendingOf } from "../api/types";
import type {
  ApprovalAnswers,
  Attachment,
  Block,
  ChatPage,
  GoalPin,
  JournalEntry,
  Message,
  PendingMessage,
  ProviderId,
  QuestionAnswers,
  RegenerateResult,
  RunStatus,
  RunUsage,
  SendResult,
  StreamEvent,
  TokenCounts,
  ToolBlock,
  Waiting,
} from "../api/types";

/** Images one tool block shows at most (the server's `MAX_TOOL_IMAGES`). */
const MAX_TOOL_IMAGES = 8;

/** A transcript row; `sending` marks the owner's own message before the server confirmed it. */
export type ChatMessage = Message & { sending?: boolean };

/** How the last turn ended, for the error + Retry line. */
export interface LastRun {
  runId: string;
  status: RunStatus;
  error: string | null;
}

export interface ChatState {
  id: string;
  title: string;
  provider: ProviderId | null;
  model: string | null;
  effort: string | null;
  /** Durable history (and optimistic user rows), oldest first; `offset` is messages[0]'s index. */
  messages: ChatMessage[];
  offset: number;
  total: number;
  hasMore: boolean;
  /** The running turn's assistant message, keyed by its run_id; null between turns. */
  live: ChatMessage | null;
  running: boolean;
  runId: string | null;
  pendingQuestionId: string | null;
  /** The server's queue, as last reported. */
  pending: PendingMessage[];
  /** Messages sent while a turn ran whose POST has not answered yet. */
  localQueue: PendingMessage[];
  /**
   * Steering messages not in the transcript yet, shown after the live row: `sending` until the
   * POST answers `steered`, then confirmed until `steered_into_turn` puts them in their place.
   */
  steering: ChatMessage[];
  /** The stream cursor: the last applied event's seq. */
  seq: number;
  lastRun: LastRun | null;
  /** The CLI is retrying a failed model request (cleared by the next event). */
  retry: { attempt: number; max_retries: number; reason: string } | null;
  /** The running turn has not started: it waits for a free agent (cleared once it works). */
  waiting: Waiting | null;
  deleted: boolean;
  /** Queue rows Stop took away: a snapshot or event that raced the stop must not bring them back. */
  dropped: string[];
  /** The goal pinned at the top of the chat (`/goal`), with the agent's plan for it. */
  goal: GoalPin | null;
}

export type ChatAction =
  | { type: "snapshot"; detail: ChatPage }
  | { type: "older"; page: ChatPage }
  | { type: "event"; event: StreamEvent; now?: number }
  | { type: "send_local"; cid: string; content: string; ts: number; attachments?: Attachment[] }
  | { type: "steer_local"; cid: string; content: string; ts: number }
  | { type: "send_result"; cid: string; result: SendResult; now?: number }
  | { type: "send_failed"; cid: string }
  | { type: "regenerate_result"; result: RegenerateResult; now?: number }
  | { type: "queue_cleared" }
  | { type: "pending_replaced"; pending: PendingMessage[] }
  | { type: "answer_local"; questionId: string; answers: QuestionAnswers | ApprovalAnswers | null };

/** An empty chat, before its detail arrives. */
export function emptyChat(id: string): ChatState {
  return {
    id,
    title: "",
    provider: null,
    model: null,
    effort: null,
    messages: [],
    offset: 0,
    total: 0,
    hasMore: false,
    live: null,
    running: false,
    runId: null,
    pendingQuestionId: null,
    pending: [],
    localQueue: [],
    steering: [],
    seq: 0,
    lastRun: null,
    retry: null,
    waiting: null,
    deleted: false,
    dropped: [],
    goal: null,
  };
}

/** State from a detail snapshot, keeping the owner's unconfirmed sends. */
export function fromDetail(detail: ChatPage, previous?: ChatState): ChatState {
  const all = detail.messages;
  const last = all[all.length - 1];
  const liveRow = last?.live ? last : null;
  let messages: ChatMessage[] = liveRow ? all.slice(0, -1) : [...all];
  // The live row is keyed by its run: take the detail's run_id when the row does not carry one.
  let live: ChatMessage | null = liveRow ? { ...liveRow, run_id: liveRow.run_id ?? detail.run_id, blocks: liveRow.blocks ?? [] } : null;
  if (!live && detail.running && detail.run_id) live = emptyLive(detail.run_id, Date.now());
  let localQueue: PendingMessage[] = [];
  let steering: ChatMessage[] = [];
  const dropped = previous?.id === detail.id ? previous.dropped : [];
  if (previous && previous.id === detail.id) {
    const known = new Set<string>();
    for (const m of messages) if (m.cid) known.add(m.cid);
    for (const p of pendingOf(detail.pending_messages)) known.add(p.cid);
    // Optimistic rows the snapshot does not know yet stay until their POST answers.
    const unconfirmed = previous.messages.filter((m) => m.sending && m.cid && !known.has(m.cid));
    messages = [...messages, ...unconfirmed];
    localQueue = previous.localQueue.filter((p) => !known.has(p.cid));
    // Steering the snapshot already shows (or queued) is settled; the rest waits for its event.
    steering = previous.steering.filter((m) => !m.cid || !known.has(m.cid));
    // Keep older pages already loaded when the snapshot is the newest page.
    if (previous.offset < detail.offset && previous.messages.length > 0) {
      const older = previous.messages.filter((_, i) => previous.offset + i < detail.offset && !previous.messages[i]?.sending);
      if (older.length === detail.offset - previous.offset) {
        messages = [...older, ...messages];
        return finish(previous.offset, previous.hasMore);
      }
    }
  }
  return finish(detail.offset, detail.has_more);

  function finish(offset: number, hasMore: boolean): ChatState {
    return {
      id: detail.id,
      title: detail.title,
      provider: detail.provider,
      model: detail.model ?? null,
      effort: detail.effort ?? null,
      messages,
      offset,
      total: detail.total,
      hasMore,
      live,
      running: detail.running,
      runId: detail.run_id,
      pendingQuestionId: detail.pending_question_id,
      pending: notDropped(pendingOf(detail.pending_messages), dropped),
      localQueue,
      steering,
      seq: detail.seq,
      lastRun: previous?.id === detail.id ? previous.lastRun : null,
      retry: null,
      waiting: detail.running ? (detail.waiting ?? null) : null,
      deleted: false,
      dropped,
      goal: detail.goal ?? null,
    };
  }
}

function emptyLive(runId: string, ts: number, version?: number | null): ChatMessage {
  const live: ChatMessage = { role: "assistant", content: "", ts, run_id: runId, blocks: [], live: true };
  if (typeof version === "number") live.version = version;
  return live;
}

/** The reducer. */
export function chatReducer(state: ChatState, action: ChatAction): ChatState {
  switch (action.type) {
    case "snapshot":
      return fromDetail(action.detail, state);
    case "older": {
      const page = action.page;
      if (page.offset >= state.offset) return state;
      const take = Math.min(page.messages.length, state.offset - page.offset);
      const older = page.messages.slice(0, take).filter((m) => !m.live);
      return { ...state, messages: [...older, ...state.messages], offset: page.offset, hasMore: page.has_more };
    }
    case "event":
      return applyEvent(state, action.event, action.now ?? Date.now());
    case "send_local": {
      const files = action.attachments ? { attachments: action.attachments } : {};
      const row: PendingMessage = { role: "user", cid: action.cid, content: action.content, ts: action.ts, ...files };
      if (state.running) return { ...state, localQueue: [...state.localQueue, row] };
      const message: ChatMessage = { role: "user", content: action.content, ts: action.ts, cid: action.cid, sending: true, ...files };
      return { ...state, messages: [...state.messages, message], lastRun: null };
    }
    case "steer_local": {
      const message: ChatMessage = { role: "user", content: action.content, ts: action.ts, cid: action.cid, sending: true };
      return { ...state, steering: [...state.steering, message] };
    }
    case "send_result":
      return settleSteering(applySendResult(state, action.cid, action.result, action.now ?? Date.now()));
    case "regenerate_result": {
      const result = action.result;
      if (result.status !== "started") return state;
      // The stream may already have started (or even ended) the run.
      const known = state.live?.run_id === result.run_id || state.lastRun?.runId === result.run_id || state.messages.some((m) => m.run_id === result.run_id);
      if (known) return state;
      const base = state.live ? promote(state, "completed") : state;
      return { ...base, running: true, runId: result.run_id, live: emptyLive(result.run_id, action.now ?? Date.now(), result.version), lastRun: null };
    }
    case "send_failed":
      return {
        ...state,
        messages: state.messages.filter((m) => !(m.sending && m.cid === action.cid)),
        localQueue: state.localQueue.filter((p) => p.cid !== action.cid),
        steering: state.steering.filter((m) => m.cid !== action.cid),
      };
    case "queue_cleared":
      return { ...state, pending: [], localQueue: [], dropped: [...state.dropped, ...queueOf(state).map((p) => p.cid)] };
    case "pending_replaced":
      return settleSteering({ ...state, pending: notDropped(action.pending, state.dropped), localQueue: withoutCids(state.localQueue, action.pending) });
    case "answer_local":
      return setAnswers(state, action.questionId, action.answers);
  }
}

function applySendResult(state: ChatState, cid: string, result: SendResult, now: number): ChatState {
  switch (result.status) {
    case "started": {
      let next: ChatState = { ...state, localQueue: state.localQueue.filter((p) => p.cid !== cid) };
      for (const message of result.messages ?? []) next = upsertUser(next, message);
      next = confirm(next, cid);
      // The turn may already have run to its end on the stream before this answer arrived.
      const finished =
        state.lastRun?.runId === result.run_id || state.messages.some((m) => m.role === "assistant" && m.run_id === result.run_id);
      if (finished) return next;
      const live = next.live?.run_id === result.run_id ? next.live : next.live ?? emptyLive(result.run_id, now);
      return { ...next, running: true, runId: result.run_id, live, lastRun: null };
    }
    case "queued":
      return {
        ...state,
        messages: state.messages.filter((m) => !(m.sending && m.cid === cid)),
        pending: notDropped(pendingOf(result.pending_messages), state.dropped),
        localQueue: state.localQueue.filter((p) => p.cid !== cid),
        steering: state.steering.filter((m) => m.cid !== cid),
      };
    case "steered":
      // The words are in the turn; `steered_into_turn` (before or after this) places the row.
      return confirm(state, cid);
    case "duplicate": {
      const next = { ...state, localQueue: state.localQueue.filter((p) => p.cid !== cid) };
      return confirm(next, cid);
    }
    case "answer_delivered":
      return state;
  }
}

function confirm(state: ChatState, cid: string): ChatState {
  const unsent = (m: ChatMessage) => m.sending === true && m.cid === cid;
  const sent = (m: ChatMessage) => (unsent(m) ? { ...m, sending: false } : m);
  let next = state;
  if (state.messages.some(unsent)) next = { ...next, messages: next.messages.map(sent) };
  if (state.steering.some(unsent)) next = { ...next, steering: next.steering.map(sent) };
  return next;
}

/** Drops steering rows the transcript or the queue now holds (each is shown exactly once). */
function settleSteering(state: ChatState): ChatState {
  if (state.steering.length === 0) return state;
  const known = new Set<string>();
  for (const m of state.messages) if (m.cid && !m.sending) known.add(m.cid);
  for (const p of state.pending) known.add(p.cid);
  const steering = state.steering.filter((m) => !m.cid || !known.has(m.cid));
  return steering.length === state.steering.length ? state : { ...state, steering };
}

function notDropped(pending: PendingMessage[], dropped: readonly string[]): PendingMessage[] {
  return dropped.length === 0 ? pending : pending.filter((p) => !dropped.includes(p.cid));
}

function withoutCids(queue: PendingMessage[], present: PendingMessage[]): PendingMessage[] {
  const cids = new Set(present.map((p) => p.cid));
  return queue.filter((p) => !cids.has(p.cid));
}

/** Adds a user row, replacing the optimistic or replayed row with the same cid. */
function upsertUser(state: ChatState, message: Message): ChatState {
  const cid = message.cid;
  if (cid) {
    const index = state.messages.findIndex((m) => m.cid === cid);
    if (index >= 0) {
      const messages = [...state.messages];
      messages[index] = { ...message };
      return { ...state, messages };
    }
  }
  return { ...state, messages: [...state.messages, { ...message }], total: state.total + 1 };
}

/** Events that leave a waiting turn waiting. */
const STILL_WAITING = new Set(["queue_changed", "chat_renamed", "app_updated", "goal_changed"]);

function applyEvent(state: ChatState, event: StreamEvent, now: number): ChatState {
  if (event.type === "resync") return state;
  if (event.type === "catch_up_done") return event.seq > state.seq ? { ...state, seq: event.seq } : state;
  if (event.seq <= state.seq) return state;
  // An event type this client does not know yet (a newer server) changes nothing.
  const next = (foldEvent(state, event, now) as ChatState | undefined) ?? state;
  const retry = event.type === "retrying" ? { attempt: event.attempt, max_retries: event.max_retries, reason: event.reason } : null;
  // A turn waiting for a free agent waits until its run does something (or ends); the queue
  // changing or the chat being renamed meanwhile does not start it.
  const waiting = event.type === "waiting" ? { busy: event.busy, limit: event.limit } : STILL_WAITING.has(event.type) ? next.waiting : null;
  return settleSteering({ ...next, seq: event.seq, retry, waiting });
}

function foldEvent(state: ChatState, event: JournalEntry, now: number): ChatState {
  switch (event.type) {
    case "handoff": {
      // A provider switch or a compaction: the marker joins the transcript, the chat runs on
      // the provider it names (with that provider's defaults unless the switch picked).
      const card = event.message.blocks?.find((b) => b.type === "handoff");
      const next = appendSealed(state, { ...event.message });
      if (!card || card.type !== "handoff" || card.to_provider === state.provider) return next;
      return { ...next, provider: card.to_provider, model: null, effort: null };
    }
    case "user_message": {
      const next = upsertUser(state, event.message);
      const cid = event.message.cid;
      if (!cid) return next;
      return { ...next, pending: next.pending.filter((p) => p.cid !== cid), localQueue: next.localQueue.filter((p) => p.cid !== cid) };
    }
    case "run_started": {
      if (state.live?.run_id === event.run_id) return { ...state, running: true, runId: event.run_id };
      const base = state.live ? promote(state, "completed") : state;
      return { ...base, running: true, runId: event.run_id, live: emptyLive(event.run_id, event.ts ?? now, event.version), lastRun: null };
    }
    case "text":
      return withLive(state, now, (blocks) => appendText(blocks, "text", event.item_id, event.content, false));
    case "text_final":
      return withLive(state, now, (blocks) => appendText(blocks, "text", event.item_id, event.content, true));
    case "thinking":
      return withLive(state, now, (blocks) => appendText(blocks, "thinking", event.item_id, event.content, false));
    case "tool_start":
      return withLive(state, now, (blocks) => {
        if (blocks.some((b) => b.type === "tool" && b.tool_use_id === event.tool_use_id)) return blocks;
        const tool: ToolBlock = { type: "tool", tool: event.tool, tool_use_id: event.tool_use_id, input: event.input, output: "", status: "running" };
        // A subagent's step carries its call; a subagent call its agent type (as `live.rs`).
        if (event.parent_tool_use_id) tool.parent_tool_use_id = event.parent_tool_use_id;
        if (event.subagent_type) tool.subagent_type = event.subagent_type;
        return [...blocks, tool];
      });
    case "tool_output":
      return updateTool(state, now, event.tool_use_id, (tool) => {
        const updated: ToolBlock = { ...tool, output: event.append ? tool.output + event.content : event.content };
        if (event.output_truncated) updated.output_truncated = true;
        if (event.output_full_len !== undefined) updated.output_full_len = event.output_full_len;
        if (event.output_exit_code !== undefined && event.output_exit_code !== null) updated.output_exit_code = event.output_exit_code;
        return updated;
      });
    case "plan": {
      // One plan card a message, replaced in place as the agent works through it.
      return withLive(state, now, (blocks) => {
        const plan: Block = {
          type: "plan",
          steps: event.steps,
          ...(event.explanation ? { explanation: event.explanation } : {}),
          ...(event.omitted ? { omitted: event.omitted } : {}),
        };
        const at = blocks.findIndex((b) => b.type === "plan");
        return at < 0 ? [...blocks, plan] : blocks.map((b, i) => (i === at ? plan : b));
      });
    }
    case "tool_input":
      return updateTool(state, now, event.tool_use_id, (tool) => ({ ...tool, input: event.input }));
    case "tool_sources":
      return updateTool(state, now, event.tool_use_id, (tool) => ({ ...tool, sources: event.sources }));
    case "tool_files":
      return updateTool(state, now, event.tool_use_id, (tool) => ({ ...tool, files: event.files }));
    case "tool_image":
      return updateTool(state, now, event.tool_use_id, (tool) => {
        const images = tool.images ?? [];
        if (images.includes(event.url) || images.length >= MAX_TOOL_IMAGES) return tool;
        return { ...tool, images: [...images, event.url] };
      });
    case "tool_end":
      return updateTool(state, now, event.tool_use_id, (tool) => ({
        ...tool,
        // A step cut short by an interrupt (a steer) was stopped, not failed.
        status: event.interrupted ? "stopped" : event.is_error ? "error" : "done",
        ...(typeof event.elapsed_ms === "number" ? { elapsed_ms: event.elapsed_ms } : {}),
      }));
    case "question": {
      const block = { ...event } as Block & { seq?: number };
      delete block.seq;
      const next = withLive(state, now, (blocks) =>
        blocks.some((b) => b.type === "question" && b.question_id === event.question_id) ? blocks : [...blocks, block],
      );
      return event.answers ? next : { ...next, pendingQuestionId: event.question_id };
    }
    case "answers_applied":
      return setAnswers(state, event.question_id, event.answers);
    case "queue_changed": {
      const pending = pendingOf(event.pending);
      return { ...state, pending: notDropped(pending, state.dropped), localQueue: withoutCids(state.localQueue, pending) };
    }
    case "queued_turn_starting": {
      let next = state.live && state.live.run_id !== event.run_id ? promote(state, "completed") : state;
      for (const message of event.messages) next = upsertUser(next, message);
      const cids = new Set(event.messages.map((m) => m.cid).filter(Boolean));
      const live = next.live?.run_id === event.run_id ? next.live : emptyLive(event.run_id, now);
      return {
        ...next,
        pending: next.pending.filter((p) => !cids.has(p.cid)),
        localQueue: next.localQueue.filter((p) => !cids.has(p.cid)),
        running: true,
        runId: event.run_id,
        live,
        lastRun: null,
      };
    }
    case "steered_into_turn": {
      const cid = event.message.cid;
      // The owner's row moves to its place after the sealed part, wherever it showed before.
      const counted = cid ? state.messages.some((m) => m.cid === cid && !m.sending) : false;
      let next: ChatState = cid
        ? {
            ...state,
            messages: state.messages.filter((m) => m.cid !== cid),
            steering: state.steering.filter((m) => m.cid !== cid),
            pending: state.pending.filter((p) => p.cid !== cid),
            localQueue: state.localQueue.filter((p) => p.cid !== cid),
          }
        : state;
      if (next.live && next.live.run_id !== event.run_id) next = promote(next, "completed");
      else if (next.live && event.sealed) next = appendSealed(next, sealed(next.live, "completed"));
      next = { ...next, messages: [...next.messages, { ...event.message }], total: next.total + (counted ? 0 : 1) };
      return { ...next, running: true, runId: event.run_id, live: emptyLive(event.run_id, event.message.ts ?? now), lastRun: null };
    }
    case "done": {
      if (state.live?.run_id && state.live.run_id !== event.run_id) {
        // A `done` for an older run (its live row was already replaced): only record it.
        return state;
      }
      let next = state;
      if (event.status === "failed" && event.error) {
        const error = event.error;
        next = withLive(next, now, (blocks) =>
          blocks.some((b) => b.type === "error") ? blocks : [...blocks, { type: "error", message: error }],
        );
      }
      next = promote(next, event.status, usageOf(event.usage, event.cost_usd));
      return {
        ...next,
        running: false,
        runId: null,
        pendingQuestionId: null,
        lastRun: { runId: event.run_id, status: event.status, error: event.error ?? null },
      };
    }
    case "chat_renamed":
      return { ...state, title: event.title };
    case "goal_changed":
      // Set by a `/goal` turn, moved on by the agent's plan, unpinned when done or dismissed.
      return { ...state, goal: event.goal };
    case "chat_deleted":
      return { ...state, deleted: true };
    case "app_updated":
      // The shell opens the preview; the transcript does not change.
      return state;
    case "retrying":
    case "waiting":
      // Shown on the live row's activity line (see `applyEvent`); not part of the transcript.
      return state;
    case "error": {
      const block: Block = { type: "error", message: event.message };
      if (event.resumable !== undefined) block.resumable = event.resumable;
      if (event.fix) block.fix = event.fix;
      // A new error replaces a trailing one (as the server's fold does).
      if (state.live) return withLive(state, now, (blocks) => [...(blocks.at(-1)?.type === "error" ? blocks.slice(0, -1) : blocks), block]);
      const last = state.messages[state.messages.length - 1];
      if (last?.role === "assistant") {
        const messages = [...state.messages];
        messages[messages.length - 1] = { ...last, blocks: [...(last.blocks ?? []), block] };
        return { ...state, messages };
      }
      return { ...state, messages: [...state.messages, { role: "assistant", content: "", ts: now, blocks: [block] }] };
    }
  }
}

/** The live message as a finished row: running tools end (stopped by a stop, else done), the
 * non-empty texts become its content. */
function sealed(live: ChatMessage, status: RunStatus): ChatMessage {
  const toolStatus: ToolBlock["status"] = status === "stopped" ? "stopped" : "done";
  const blocks = (live.blocks ?? []).map((b) => (b.type === "tool" && b.status === "running" ? { ...b, status: toolStatus } : b));
  const content = blocks
    .flatMap((b) => (b.type === "text" && b.content !== "" ? [b.content] : []))
    .join("\n\n");
  const row: ChatMessage = { ...live, blocks, content };
  delete row.live;
  return row;
}

function appendSealed(state: ChatState, row: ChatMessage): ChatState {
  return { ...state, messages: [...state.messages, row], total: state.total + 1 };
}

/** What a `done` says the turn used, as stored on its reply (`undefined` when nothing). */
export function usageOf(counts: TokenCounts | undefined, cost: number | null | undefined): RunUsage | undefined {
  const usage: RunUsage = {};
  if (typeof counts?.input_tokens === "number") usage.input_tokens = counts.input_tokens;
  if (typeof counts?.output_tokens === "number") usage.output_tokens = counts.output_tokens;
  if (typeof counts?.cache_read_tokens === "number") usage.cache_read_tokens = counts.cache_read_tokens;
  if (typeof counts?.cache_write_tokens === "number") usage.cache_write_tokens = counts.cache_write_tokens;
  if (typeof cost === "number") usage.cost_usd = cost;
  return Object.keys(usage).length > 0 ? usage : undefined;
}

/** Moves the live message into history: same row, same run_id, so the view keeps its DOM. */
function promote(state: ChatState, status: RunStatus, usage?: RunUsage): ChatState {
  const live = state.live;
  if (!live) return state;
  const final = usage ? { ...sealed(live, status), usage } : sealed(live, status);
  // Only the run's row since the last user row is this live message; earlier rows of the same
  // run are parts sealed by steering and stay.
  let existing = -1;
  for (let i = state.messages.length - 1; i >= 0; i--) {
    const m = state.messages[i];
    if (!m || m.role !== "assistant") break;
    if (m.run_id && m.run_id === live.run_id) {
      existing = i;
      break;
    }
  }
  if (existing < 0) return { ...appendSealed(state, final), live: null };
  const messages = [...state.messages];
  messages[existing] = final;
  return { ...state, messages, live: null };
}

function withLive(state: ChatState, now: number, change: (blocks: Block[]) => Block[]): ChatState {
  const live = state.live ?? emptyLive(state.runId ?? `local-${state.seq}`, now);
  const blocks = live.blocks ?? [];
  const changed = change(blocks);
  if (changed === blocks && state.live) return state;
  return { ...state, live: { ...live, blocks: changed } };
}

function appendText(blocks: Block[], kind: "text" | "thinking", itemId: string, content: string, replace: boolean): Block[] {
  const index = blocks.findLastIndex((b) => b.type === kind && b.item_id === itemId);
  // An empty final text starts nothing.
  if (index < 0) return replace && content === "" ? blocks : [...blocks, { type: kind, item_id: itemId, content }];
  const block = blocks[index] as { type: "text" | "thinking"; item_id: string; content: string };
  const next = [...blocks];
  next[index] = { ...block, content: replace ? content : block.content + content };
  return next;
}

function updateTool(state: ChatState, now: number, toolUseId: string, change: (tool: ToolBlock) => ToolBlock): ChatState {
  return withLive(state, now, (blocks) => {
    const index = blocks.findLastIndex((b) => b.type === "tool" && b.tool_use_id === toolUseId);
    if (index < 0) return blocks;
    const next = [...blocks];
    next[index] = change(blocks[index] as ToolBlock);
    return next;
  });
}

function setAnswers(state: ChatState, questionId: string, answers: QuestionAnswers | ApprovalAnswers | null): ChatState {
  const patch = (message: ChatMessage): ChatMessage => {
    const blocks = message.blocks;
    if (!blocks?.some((b) => b.type === "question" && b.question_id === questionId)) return message;
    return {
      ...message,
      blocks: blocks.map((b) => (b.type === "question" && b.question_id === questionId ? ({ ...b, answers } as Block) : b)),
    };
  };
  const live = state.live ? patch(state.live) : null;
  const messages = state.messages.some((m) => m.blocks?.some((b) => b.type === "question" && b.question_id === questionId))
    ? state.messages.map(patch)
    : state.messages;
  // An answer closes the card; withdrawing a failed optimistic answer opens it again.
  const pendingQuestionId = answers ? (state.pendingQuestionId === questionId ? null : state.pendingQuestionId) : questionId;
  return { ...state, live, messages, pendingQuestionId };
}

/** The rows the view renders, oldest first, with stable keys. */
export interface Row {
  key: string;
  message: ChatMessage;
  live: boolean;
  /** The message's index in the transcript, for rows of the durable history. */
  idx?: number;
}

/**
 * A row's identity: an assistant turn by run_id (its `part`-th row when steering split it), a
 * user row by cid, else its index.
 */
export function rowKey(message: Message, index: number, part = 0): string {
  if (message.role === "assistant" && message.run_id) return part === 0 ? `run:${message.run_id}` : `run:${message.run_id}:${part}`;
  if (message.cid) return `cid:${message.cid}`;
  return `at:${index}`;
}

/** No text, thinking, tool, card or error to show. */
function isBlank(message: Message): boolean {
  const blocks = message.blocks ?? [];
  if (blocks.length === 0) return message.content.trim() === "";
  return blocks.every((b) => b.type === "text" && b.content.trim() === "");
}

export function rowsOf(state: ChatState): Row[] {
  const rows: Row[] = [];
  const seen = new Set<string>();
  // Parts of one run count from its first row, so a part keeps its key when steering seals it.
  const parts = new Map<string, number>();
  const lastPart = new Map<string, number>();
  state.messages.forEach((m, i) => {
    if (m.role === "assistant" && m.run_id) lastPart.set(m.run_id, i);
  });
  const partOf = (message: Message): number => {
    if (message.role !== "assistant" || !message.run_id) return 0;
    const part = parts.get(message.run_id) ?? 0;
    parts.set(message.run_id, part + 1);
    return part;
  };
  state.messages.forEach((message, i) => {
    const part = partOf(message);
    if (message.hidden) return;
    // A blank part sealed by steering says nothing ("Stopped before replying" would be wrong).
    const superseded = !!message.run_id && (lastPart.get(message.run_id) !== i || state.live?.run_id === message.run_id);
    if (message.role === "assistant" && superseded && isBlank(message)) return;
    let key = rowKey(message, state.offset + i, part);
    if (seen.has(key)) key = `${key}#${state.offset + i}`;
    seen.add(key);
    rows.push({ key, message, live: false, idx: state.offset + i });
  });
  if (state.live) {
    const live = state.live;
    rows.push({ key: rowKey(live, state.offset + state.messages.length, partOf(live)), message: live, live: true });
  }
  for (const message of state.steering) {
    const key = message.cid ? `cid:${message.cid}` : `steer:${message.ts}`;
    if (seen.has(key)) continue;
    seen.add(key);
    rows.push({ key, message, live: false });
  }
  return rows;
}

/** The tray: the server's queue plus sends still in flight, in order, without duplicates. */
export function queueOf(state: ChatState): (PendingMessage & { confirmed: boolean })[] {
  const cids = new Set(state.pending.map((p) => p.cid));
  return [
    ...state.pending.map((p) => ({ ...p, confirmed: true })),
    ...state.localQueue.filter((p) => !cids.has(p.cid)).map((p) => ({ ...p, confirmed: false })),
  ];
}

/** Back to a detail shape, so a chat left mid-way reopens from the query cache instantly. */
export function toDetail(state: ChatState): ChatPage {
  const messages: Message[] = state.messages
    .filter((m) => !m.sending)
    .map((m) => {
      const copy: ChatMessage = { ...m };
      delete copy.sending;
      return copy;
    });
  if (state.live) messages.push({ ...state.live, live: true });
  return {
    id: state.id,
    title: state.title,
    provider: state.provider,
    model: state.model,
    effort: state.effort,
    messages,
    offset: state.offset,
    total: state.total,
    has_more: state.hasMore,
    running: state.running,
    run_id: state.runId,
    waiting: state.waiting,
    pending_question_id: state.pendingQuestionId,
    pending_messages: state.pending,
    goal: state.goal,
    seq: state.seq,
  };
}
