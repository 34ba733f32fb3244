//! The server's shapes. Chat protocol types come from `protocol.gen.ts`, generated from the
//! Rust types in `backend/server/src/protocol`; the names the PWA reads them by are below.
//! Settings and provider shapes (not part of the chat protocol) are written here.

import type { Block, Card, ChatDetail, Choices, Cid, Message, ProviderKind, QuestionId } from "./protocol.gen";

export type {
  AnswerTurn,
  Answers,
  ApprovalAnswers,
  Attachment,
  Block,
  ChatDetail,
  ChatEvent,
  ChatId,
  ChatSummary,
  Choice,
  Cid,
  Decision,
  FileChange,
  FileDiff,
  GoalPin,
  JournalEntry,
  Message,
  Pause,
  PlanCard,
  PlanCounts,
  PlanWindow,
  QuestionItem,
  QuestionOption,
  RunId,
  RunStatus,
  RunUsage,
  TokenCounts,
  RegenerateResult,
  SendResult,
  StopResult,
  StreamControl,
  StreamEvent,
  SystemEvent,
  ToolStatus,
  Waiting,
  WebSource,
} from "./protocol.gen";

export type ProviderId = ProviderKind;

export type TextBlock = Extract<Block, { type: "text" }>;
export type ThinkingBlock = Extract<Block, { type: "thinking" }>;
export type ToolBlock = Extract<Block, { type: "tool" }>;
export type ErrorBlock = Extract<Block, { type: "error" }>;
export type HandoffBlock = Extract<Block, { type: "handoff" }>;
export type PlanBlock = Extract<Block, { type: "plan" }>;
/** A card of clarifying questions. */
export type QuestionBlock = { type: "question"; question_id: QuestionId } & Extract<Card, { kind: "question" }>;
/** A card asking permission to use a tool. */
export type ApprovalBlock = { type: "question"; question_id: QuestionId } & Extract<Card, { kind: "approval" }>;
/** A plan-mode turn's proposed plan, to approve (as written or edited) or reject. */
export type PlanApprovalBlock = { type: "question"; question_id: QuestionId } & Extract<Card, { kind: "plan" }>;
/** A card where the owner types a secret the agent asked for (never shown back). */
export type SecureInputBlock = { type: "question"; question_id: QuestionId } & Extract<Card, { kind: "secure_input" }>;

/** Answers to a question card: question text → chosen label (a list for multi-select). */
export type QuestionAnswers = Choices;

/** The part of a chat detail the chat view folds (and caches back): `GET /api/chats/{id}` sends
 * the whole [`ChatDetail`]; settings the view does not show are optional here. */
export type ChatPage = Omit<ChatDetail, ChatSettingsKey> & Partial<Pick<ChatDetail, ChatSettingsKey>>;
type ChatSettingsKey = "goal" | "approval_policy" | "model" | "effort" | "plan_mode" | "auto_resume" | "resume_at" | "session_id" | "pinned_at" | "created_at" | "updated_at" | "waiting";

/** A queued message: the owner's, so it always has its cid. */
export type PendingMessage = Message & { cid: Cid };

/** The queue rows of a list of messages (every queued message has a cid). */
export function pendingOf(messages: readonly Message[]): PendingMessage[] {
  return messages.filter((m): m is PendingMessage => typeof m.cid === "string");
}

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

/** One model a provider offers (`GET /api/models`). */
export interface ModelInfo {
  id: string;
  label: string;
  provider: ProviderId;
  /** False when the CLI could not be asked (a maintained fallback entry). */
  available: boolean;
  /** Effort levels the model takes, lowest first (empty: none). */
  effort_levels: string[];
  default_effort: string | null;
  /** The model the CLI runs when none is picked. */
  is_default: boolean;
}

/** `GET /api/models`. */
export interface ModelsList {
  providers: Partial<Record<ProviderId, ModelInfo[]>>;
}

/** A model and effort; absent fields fall back (owner default, then the CLI's own). */
export interface AgentPick {
  model?: string | null;
  effort?: string | null;
}

/** `GET /api/version`. */
export interface VersionInfo {
  sha: string;
  build_date: string;
  version: string;
}
