// Generated from backend/server/src/protocol by `MOBIUS_WRITE_PROTOCOL=1 cargo test -p mobius --lib protocol::typescript`.
// Do not edit: change the Rust types and regenerate.

/** Question text → the chosen label (a list for multi-select questions). */
export type Choices = Record<string, Choice>;

/** A journal event with its position: what the stream sends and the journal stores. */
export type JournalEntry = { seq: number } & ChatEvent;

export type ChatId = string;

export type RunId = string;

export type Cid = string;

export type QuestionId = string;

export type ProviderKind = "claude" | "codex";

export type ApprovalPolicy = "full" | "workspace" | "ask";

export type Role = "user" | "assistant";

export type Message = { role: Role, content: string, /** Unix milliseconds. */ ts: number, cid?: Cid | null, /** Sent to the agent but not shown (answers delivered after a restart). */ hidden?: boolean, blocks?: Array<Block> | null, run_id?: RunId | null, /** The owner's time zone when they sent it (IANA name). */ timezone?: string | null, /** The files sent with it, as the server recorded them (read with [`attachments_of`]). */ attachments?: Array<Attachment>, /** Text for the agent only, not shown as the message (an embedding app's `<app_state>`). */ agent_context?: string | null, /** Only on the chat detail: the running turn's assistant message, still being written. */ live?: boolean, /** What the turn used (on a turn's last assistant message). */ usage?: RunUsage | null, /** A regenerated reply: this row starts attempt `version` (2, 3, …) at the owner's message before it; the rows after it, up to the next visible owner message, belong to the same attempt. Absent on a first attempt (and on the later rows of any attempt). */ version?: number | null, };

export type Block = { "type": "text", content: string, item_id: string, } | { "type": "thinking", content: string, item_id: string, } | { "type": "tool" } & ToolBlock | { "type": "question" } & QuestionCard | { "type": "error", message: string, /** Sending a message continues where the turn left off. */ resumable?: boolean | null, /** What the owner must do first (a retry cannot work until then). */ fix?: ErrorFix | null, /** The turn is paused and continues by itself (a usage limit, a restart). */ pause?: Pause | null, } | { "type": "handoff" } & HandoffCard | { "type": "plan" } & PlanCard;

export type ToolStatus = "running" | "done" | "error" | "stopped";

export type ErrorFix = "provider_settings";

export type HandoffCard = { /** The client's id of the switch (a retry with it is answered from the stored one). */ switch_id: string, from_provider: ProviderKind | null, to_provider: ProviderKind, /** `switch` (another provider) or `compact` (the same one, a fresh session). */ reason: HandoffReason, /** The summary the next session starts from. */ summary: string, /** Who wrote it: the old provider, or the server from the transcript. */ summarized_by: HandoffSource, };

export type HandoffReason = "switch" | "compact";

export type HandoffSource = "provider" | "transcript";

export type ToolBlock = { tool: string, tool_use_id: string, /** A one-line summary of the tool's input. */ input: string, output: string, status: ToolStatus, /** The inline output is head + tail; the whole text is at `/tool-output/{tool_use_id}`. */ output_truncated?: boolean, output_full_len?: number, output_exit_code?: number | null, /** Images the tool returned, as chat media URLs (at most [`super::live::MAX_TOOL_IMAGES`]). */ images?: Array<string>, /** The files the call changes, as diffs computed from its input (an edit tool only). */ files?: Array<FileDiff>, /** The web pages a search or fetch brought back (http(s) only, bounded). */ sources?: Array<WebSource>, /** How long the call ran, in milliseconds (absent before it ended, and in older rows). */ elapsed_ms?: number, /** The subagent call (Claude's Task/Agent tool) this call was made by: it belongs under that call's chip, not in the reply's own steps. */ parent_tool_use_id?: string | null, /** On a subagent call: which kind of agent it started (`general-purpose`, `Explore`…). */ subagent_type?: string | null, };

export type FileChange = "add" | "update" | "delete" | "write";

export type FileDiff = { path: string, change: FileChange, /** Lines added and removed, counted over the whole diff (also when `diff` was cut). */ added: number, removed: number, /** The unified diff, possibly cut at a line end (see `full_len`). */ diff: string, /** The content is not text: no diff lines, "binary changed". */ binary?: boolean, /** Set when `diff` was cut: the whole diff's length in bytes; the whole diff is at `/tool-output/{stash_id}`. */ full_len?: number, stash_id?: string | null, };

export type WebSource = { url: string, title?: string | null, };

export type PlanCard = { steps: Array<PlanStep>, /** Why the plan is as it is (Codex says so with an update). */ explanation?: string | null, /** The steps of a plan longer than the server keeps that `steps` leaves out, counted by how far they got (absent when none is left out). */ omitted?: PlanCounts, };

export type PlanStep = { text: string, status: PlanStatus, };

export type PlanCounts = { pending: number, in_progress: number, completed: number, };

export type PlanStatus = "pending" | "in_progress" | "completed";

export type GoalPin = { /** What the owner asked for (the words after `/goal`). */ objective: string, /** The agent's plan for it as it stands (absent until the agent made one). */ plan?: PlanCard | null, /** When the goal was set (unix ms). */ started_at: number, };

export type Attachment = { name: string, mime_type: string, size: number, width?: number, height?: number, /** A preview exists (`?preview=true`). */ preview: boolean, };

export type QuestionCard = { question_id: QuestionId, } & ({ "kind": "question", questions: Array<QuestionItem>, answers?: { [key in string]: Choice } | null, } | { "kind": "approval", tool: string, /** A one-line summary of the tool's input. */ input: string, reason?: string | null, answers?: ApprovalAnswers | null, } | { "kind": "plan", plan: string, answers?: ApprovalAnswers | null, } | { "kind": "secure_input", name: string, app_id?: number | null, connector_id?: number | null, /** The app's or the connector's name, as the owner knows it. */ target_name: string, reason?: string | null, answers?: SecretAnswers | null, });

export type Card = { "kind": "question", questions: Array<QuestionItem>, answers?: { [key in string]: Choice } | null, } | { "kind": "approval", tool: string, /** A one-line summary of the tool's input. */ input: string, reason?: string | null, answers?: ApprovalAnswers | null, } | { "kind": "plan", plan: string, answers?: ApprovalAnswers | null, } | { "kind": "secure_input", name: string, app_id?: number | null, connector_id?: number | null, /** The app's or the connector's name, as the owner knows it. */ target_name: string, reason?: string | null, answers?: SecretAnswers | null, };

export type QuestionItem = { /** The provider's id for the question (Codex), if it has one. */ id?: string | null, question: string, header?: string | null, options: Array<QuestionOption>, /** Rows stored before the casing fix say `multiSelect`. */ multi_select: boolean, };

export type QuestionOption = { label: string, description?: string | null, };

export type Choice = string | Array<string>;

export type ApprovalAnswers = { decision: Decision, reason?: string | null, /** A plan card approved with edits: the plan as the owner rewrote it. */ plan?: string | null, };

export type SecretAnswers = { secret: SecretStatus, };

export type SecretStatus = "stored" | "declined";

export type Decision = "allow" | "allow_chat" | "deny";

export type Answers = ApprovalAnswers | SecretAnswers | { [key in string]: Choice };

export type RunStatus = "completed" | "failed" | "stopped" | "interrupted";

export type TokenCounts = { input_tokens: number | null, output_tokens: number | null, cache_read_tokens: number | null, cache_write_tokens: number | null, };

export type RunUsage = { input_tokens?: number | null, output_tokens?: number | null, cache_read_tokens?: number | null, cache_write_tokens?: number | null, /** What the provider said the turn cost (Claude Code reports it; Codex does not). */ cost_usd?: number | null, };

export type PlanWindow = { /** `five_hour`, `seven_day`, … (Claude) or `primary`, `secondary` (Codex). */ id: string, /** "5-hour", "Weekly", … */ label: string, /** Share of the window used, 0–100. */ used_percent?: number | null, /** When the window resets (unix ms). */ resets_at?: number | null, /** `allowed`, `allowed_warning` or `rejected` where the provider says. */ status?: string | null, };

export type PauseKind = "usage_limit" | "restart";

export type Pause = { kind: PauseKind, /** When the chat continues by itself (unix ms); `None`: it waits for the owner. */ resumes_at?: number | null, };

export type Waiting = { busy: number, limit: number, };

export type ChatEvent = { "type": "user_message", message: Message, } | { "type": "run_started", run_id: RunId, ts?: number | null, /** The turn regenerates the reply to the owner's last message: its live message starts attempt `version` ([`Message::version`]). */ version?: number | null, } | { "type": "text", content: string, item_id: string, } | { "type": "text_final", content: string, item_id: string, } | { "type": "thinking", content: string, item_id: string, } | { "type": "tool_start", tool_use_id: string, tool: string, input: string, /** The subagent call (Claude's Task/Agent tool) this call was made by. */ parent_tool_use_id?: string | null, /** On a subagent call: which kind of agent it started (`general-purpose`, `Explore`…). */ subagent_type?: string | null, } | { "type": "tool_input", tool_use_id: string, input: string, } | { "type": "tool_files", tool_use_id: string, files: Array<FileDiff>, } | { "type": "plan" } & PlanCard | { "type": "goal_changed", goal: GoalPin | null, } | { "type": "tool_sources", tool_use_id: string, sources: Array<WebSource>, } | { "type": "tool_output", tool_use_id: string, content: string, append?: boolean, output_truncated?: boolean, output_full_len?: number, output_exit_code?: number | null, } | { "type": "tool_image", tool_use_id: string, url: string, } | { "type": "tool_end", tool_use_id: string, is_error: boolean, interrupted?: boolean, /** How long the call ran, in milliseconds (as the server saw it). */ elapsed_ms?: number, } | { "type": "question" } & QuestionCard | { "type": "answers_applied", question_id: QuestionId, answers: Answers, } | { "type": "queue_changed", pending: Array<Message>, } | { "type": "queued_turn_starting", run_id: RunId, messages: Array<Message>, } | { "type": "steered_into_turn", run_id: RunId, message: Message, sealed: boolean, } | { "type": "handoff", message: Message, } | { "type": "done", run_id: RunId, status: RunStatus, usage: TokenCounts, cost_usd: number | null, error: string | null, } | { "type": "chat_renamed", title: string, } | { "type": "chat_deleted" } | { "type": "app_updated", app_id: number, slug: string, name: string, created: boolean, } | { "type": "error", message: string, resumable?: boolean | null, fix?: ErrorFix | null, /** The turn is paused and continues by itself (a usage limit, a restart). */ pause?: Pause | null, } | { "type": "waiting" } & Waiting | { "type": "retrying", attempt: number, max_retries: number, /** The provider's short reason (`overloaded`, `rate_limit`, HTTP 529). */ reason: string, };

export type StreamControl = { "type": "catch_up_done", seq: number, ts: number, } | { "type": "resync", seq: number, ts: number, };

export type StreamEvent = JournalEntry | StreamControl;

export type NotificationKind = "turn_done" | "turn_failed" | "question" | "agent" | "app" | "schedule" | "test";

export type NotificationAction = { action: string, title: string, target?: string | null, };

export type PushPayload = { /** The stored notification's id. */ id: string, title: string, body: string | null, icon: string | null, /** The deep link a tap opens (`/shell/?chat=…`, `/shell/?app=…`, `/`). */ target: string | null, actions: Array<NotificationAction>, kind: NotificationKind, /** A newer notification with the same tag replaces an older one on the device. */ tag: string | null, /** The question the buttons answer (all three set, or none). */ chat_id?: ChatId | null, question_id?: QuestionId | null, /** Single-use, short-lived, good for this question only (`POST /api/push/action`). */ action_token?: string | null, };

export type NotificationItem = { id: string, kind: NotificationKind, source_type: string, source_id: string | null, title: string, body: string | null, icon: string | null, target: string | null, actions: Array<NotificationAction> | null, sent_at: string, clicked_at: string | null, read_at: string | null, };

export type SystemEvent = { "type": "system_stream_open", boot_id: string, } | { "type": "resync" } | { "type": "chat_created", chat_id: ChatId, } | { "type": "chat_renamed", chat_id: ChatId, title: string, } | { "type": "chat_updated", chat_id: ChatId, } | { "type": "chat_deleted", chat_id: ChatId, } | { "type": "chat_recovered", chat_id: ChatId, } | { "type": "chat_run_started", chat_id: ChatId, } | { "type": "chat_run_finished", chat_id: ChatId, status: RunStatus, } | { "type": "chat_owner_input_changed", chat_id: ChatId, pending_question_id: QuestionId | null, } | { "type": "app_created", app_id: number, chat_id: ChatId | null, sha: string, } | { "type": "app_updated", app_id: number, chat_id: ChatId | null, sha: string, } | { "type": "app_preview_ready", app_id: number, chat_id: ChatId, } | { "type": "app_changed", app_id: number, } | { "type": "app_deleted", app_id: number, } | { "type": "app_recovered", app_id: number, } | { "type": "notification_created", id: string, kind: NotificationKind, } | { "type": "notifications_changed" } | { "type": "notification_prefs_changed" } | { "type": "push_devices_changed" } | { "type": "schedules_changed" } | { "type": "theme_updated", version: string, } | { "type": "shell_updated", build: number | null, reason?: string, };

export type ChatDetail = { id: string, title: string, provider: ProviderKind | null, approval_policy: ApprovalPolicy, /** The chat's own model (`None`: the owner's default for its provider, else the CLI's). */ model: string | null, /** The chat's own effort level (`None`: as for `model`). */ effort: string | null, /** Every turn plans first: the agent proposes a plan the owner approves before it acts. */ plan_mode: boolean, /** Continues by itself after a usage limit (the per-chat switch). */ auto_resume: boolean, /** When the parked chat continues by itself (unix ms). */ resume_at: number | null, session_id: string | null, /** Oldest first; on the newest page the running turn's live message is last (`live`). */ messages: Array<Message>, /** Index of `messages[0]` in the transcript. */ offset: number, total: number, has_more: boolean, running: boolean, run_id: RunId | null, /** The running turn has not started yet: it waits for a free agent. */ waiting: Waiting | null, pending_question_id: QuestionId | null, /** The queue, in order. */ pending_messages: Array<Message>, /** The goal pinned at the top of the chat (`/goal`), as stored. */ goal: GoalPin | null, pinned_at: number | null, created_at: number, updated_at: number, seq: number, };

export type AnswerTurn = "same" | "new";

export type SendResult = { "status": "started", run_id: RunId, messages: Array<Message>, answer_turn?: AnswerTurn | null, } | { "status": "queued", position: number, message: Message, pending_messages: Array<Message>, } | { "status": "steered", message: Message, } | { "status": "duplicate", message: Message, running: boolean, } | { "status": "answer_delivered", answer_turn: AnswerTurn, };

export type RegenerateResult = { "status": "started", run_id: RunId, version?: number | null, } | { "status": "duplicate", versions: number, running: boolean, };

export type StopResult = { stopped: boolean, /** The queued messages that were dropped (re-send them, as one message, to keep them). */ cleared_pending_cids: Array<Cid>, };

export type ChatSummary = { id: string, title: string, provider: ProviderKind | null, created_at: number, updated_at: number, activity_at: number, pinned_at: number | null, has_messages: boolean, running: boolean, pending_question_id: string | null, queued: number, };

export type SandboxState = { "mode": "landlock", abi: number, /** Whether each agent process tree may signal only itself. */ signals: Signals, } | { "mode": "off", reason: string, };

export type Signals = { "mode": "scoped" } | { "mode": "open", reason: string, };

export type ContextText = { text: string, /** Characters of the whole text (before any cut). */ chars: number, /** The text was longer than [`MAX_CONTEXT_TEXT_CHARS`]: `text` is its beginning. */ cut: boolean, };

export type ContextConnector = { id: number, name: string, auto_approved: Array<string>, };

export type AgentContext = { chat_id: string, /** The chat's provider, else the owner's default (`None`: no provider is set up). */ provider: ProviderKind | null, /** The model the next turn asks for: the chat's pick, else the owner's default for the provider; `None`: the CLI's own default. */ model: string | null, effort: string | null, /** The system prompt: the chat's pinned snapshot (`pinned`), or, before the first turn, the one it would be pinned with now. */ system_prompt: ContextText, pinned: boolean, /** The `<app_context>` block, when an app opened the chat. */ app_context: string | null, /** The memory block as injected (the owner's memory file and recent chats' digests); `None` when memory was off. */ memory: ContextText | null, /** The summary a new session starts from (after a compaction or a provider switch). */ handoff: ContextText | null, /** The summary has not been given yet: the next turn starts from it. */ handoff_pending: boolean, connectors: Array<ContextConnector>, /** The server's sandbox, as Settings shows it. */ sandbox: SandboxState, /** Folders of the data directory a turn of this chat may read and write, relative to it. */ read_write: Array<string>, /** Folders of the data directory it may only read. */ read: Array<string>, };
