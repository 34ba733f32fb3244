//! The server's chat, stream and provider shapes, as `backend/server/API.md` describes them.

export type ProviderId = "claude" | "codex";

/** One row of `GET /api/chats`. */
export interface ChatSummary {
  id: string;
  title: string;
  provider: string | null;
  created_at: number;
  updated_at: number;
  activity_at: number;
  pinned_at: number | null;
  has_messages: boolean;
  running: boolean;
  pending_question_id: string | null;
  queued: number;
}

export interface TextBlock {
  type: "text";
  content: string;
  item_id: string;
}

export interface ThinkingBlock {
  type: "thinking";
  content: string;
  item_id: string;
}

export type ToolStatus = "running" | "done" | "error" | "stopped";

export interface ToolBlock {
  type: "tool";
  tool: string;
  tool_use_id: string;
  input: string;
  output: string;
  status: ToolStatus;
  output_truncated?: boolean;
  output_full_len?: number;
  output_exit_code?: number | null;
}

export interface QuestionOption {
  label: string;
  description?: string;
}

export interface QuestionItem {
  question: string;
  header?: string;
  options: QuestionOption[];
  multiSelect?: boolean;
}

/** Answers to a question card: question text → chosen label (a list for multiSelect). */
export type QuestionAnswers = Record<string, string | string[]>;

export type ApprovalDecision = "allow" | "allow_chat" | "deny";

export interface ApprovalAnswers {
  decision: ApprovalDecision;
  reason?: string;
}

export interface QuestionBlock {
  type: "question";
  question_id: string;
  kind: "question";
  questions: QuestionItem[];
  answers?: QuestionAnswers | null;
}

export interface ApprovalBlock {
  type: "question";
  question_id: string;
  kind: "approval";
  tool: string;
  input: string;
  reason?: string | null;
  answers?: ApprovalAnswers | null;
}

export interface ErrorBlock {
  type: "error";
  message: string;
  resumable?: boolean;
}

export type Block = TextBlock | ThinkingBlock | ToolBlock | QuestionBlock | ApprovalBlock | ErrorBlock;

/** A transcript row. */
export interface Message {
  role: "user" | "assistant";
  content: string;
  ts: number;
  cid?: string | null;
  hidden?: boolean;
  blocks?: Block[];
  run_id?: string | null;
  /** The running turn's live assistant message (only on the newest page). */
  live?: boolean;
}

/** A queued message waiting for the running turn to end. */
export interface PendingMessage {
  cid: string;
  content: string;
  ts?: number;
}

/** `GET /api/chats/{id}`. */
export interface ChatDetail {
  id: string;
  title: string;
  provider: string | null;
  approval_policy?: string | null;
  model?: string | null;
  session_id?: string | null;
  messages: Message[];
  offset: number;
  total: number;
  has_more: boolean;
  running: boolean;
  run_id: string | null;
  pending_question_id: string | null;
  pending_messages: PendingMessage[];
  seq: number;
}

export type RunStatus = "completed" | "failed" | "stopped" | "interrupted";

/** One event of `GET /api/chats/{id}/stream`. Numbered events carry `seq`. */
export type StreamEvent =
  | { type: "user_message"; seq: number; message: Message }
  | { type: "run_started"; seq: number; run_id: string; ts?: number }
  | { type: "text"; seq: number; content: string; item_id: string }
  | { type: "text_final"; seq: number; content: string; item_id: string }
  | { type: "thinking"; seq: number; content: string; item_id: string }
  | { type: "tool_start"; seq: number; tool_use_id: string; tool: string; input: string }
  | {
      type: "tool_output";
      seq: number;
      tool_use_id: string;
      content: string;
      append?: boolean;
      output_truncated?: boolean;
      output_full_len?: number;
      output_exit_code?: number | null;
    }
  | { type: "tool_end"; seq: number; tool_use_id: string; is_error?: boolean; interrupted?: boolean }
  | ({ type: "question"; seq: number } & (Omit<QuestionBlock, "type"> | Omit<ApprovalBlock, "type">))
  | { type: "answers_applied"; seq: number; question_id: string; answers: QuestionAnswers | ApprovalAnswers }
  | { type: "queue_changed"; seq: number; pending: PendingMessage[] }
  | { type: "queued_turn_starting"; seq: number; run_id: string; messages: Message[] }
  | { type: "steered_into_turn"; seq: number; run_id: string; message: Message; sealed: boolean }
  | {
      type: "done";
      seq: number;
      run_id: string;
      status: RunStatus;
      usage?: unknown;
      cost_usd?: number | null;
      error?: string | null;
    }
  | { type: "chat_renamed"; seq: number; title: string }
  | { type: "chat_deleted"; seq: number }
  | { type: "app_updated"; seq: number; app_id: number; slug?: string; name?: string; created?: boolean }
  | { type: "error"; seq: number; message: string; resumable?: boolean }
  | { type: "catch_up_done"; seq: number; ts?: number }
  | { type: "resync"; seq?: number };

/** `POST /api/chats/{id}/messages` answers. */
export type SendResult =
  | { status: "started"; run_id: string; messages?: Message[]; answer_turn?: "new" }
  | { status: "queued"; position: number; message: PendingMessage; pending_messages: PendingMessage[] }
  | { status: "steered"; message: Message }
  | { status: "duplicate"; message: Message | PendingMessage; running: boolean }
  | { status: "answer_delivered" };

/** `GET /api/auth/providers`. */
export interface ProviderInfo {
  id: ProviderId;
  name: string;
  available: boolean;
  version: string | null;
}

/** `GET /api/auth/providers/status`. */
export interface ProvidersStatus {
  default_provider: ProviderId | null;
  providers: Partial<Record<ProviderId, { connected: boolean; method?: string | null }>>;
}

/** `GET /api/models`. */
export interface ModelsList {
  providers: Partial<Record<ProviderId, { id: string | null; label: string }[]>>;
}

/** `GET /api/version`. */
export interface VersionInfo {
  sha: string;
  build_date: string;
  version: string;
}
