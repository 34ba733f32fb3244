//! The messages the writer actor accepts. Strict commands carry an [`Ack`] resolved after
//! commit; [`WriteCommand::SnapshotLive`] is fire-and-forget and coalesced.

use serde_json::{Map, Value};
use tokio::sync::oneshot;

use super::Ack;

/// A journal event before it has a seq: a JSON object with at least `"type"`.
pub type EventBody = Map<String, Value>;

/// Builds an event body `{"type": kind, ...fields}`.
pub fn event(kind: &str, fields: Value) -> EventBody {
    let mut map = Map::new();
    map.insert("type".into(), Value::String(kind.to_owned()));
    if let Value::Object(extra) = fields {
        map.extend(extra);
    }
    map
}

/// The latest state of a running turn's assistant message.
#[derive(Debug)]
pub struct LiveSnapshot {
    pub chat_id: String,
    pub run_id: String,
    /// The live assistant message JSON.
    pub body: String,
}

/// A new chat, optionally with an imported transcript.
#[derive(Debug, Default)]
pub struct NewChat {
    /// Client-supplied id (idempotent) or a fresh UUID.
    pub id: String,
    pub title: Option<String>,
    /// Messages as JSON objects (`role`, `content`, `ts`, …), appended in order.
    pub messages: Vec<Map<String, Value>>,
    /// Set when an app creates the chat (`/api/app-chats`).
    pub app: Option<NewAppChat>,
}

/// What makes a new chat an app's.
#[derive(Debug, Default, Clone)]
pub struct NewAppChat {
    pub app_id: i64,
    /// Shown in the owner's drawer (else only the app sees it).
    pub owner_visible: bool,
    pub scope: Option<String>,
    pub scope_label: Option<String>,
    pub provider: Option<String>,
    /// The chat's agent settings JSON (`system_prompt`, `model`, `project_id`, …).
    pub agent_settings: Option<String>,
}

/// What [`WriteCommand::CreateChat`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatCreated {
    /// A new row was inserted.
    Created,
    /// A live chat with this id already existed; nothing changed.
    Existing,
}

/// Opening a run row and the empty live message for a turn.
#[derive(Debug)]
pub struct NewRun {
    pub chat_id: String,
    pub run_id: String,
    pub provider: Option<String>,
}

/// A message from the owner (or the server on the owner's behalf).
#[derive(Debug, Clone)]
pub struct UserMessage {
    pub cid: String,
    pub content: String,
    /// Hidden messages (e.g. answers after a restart) are sent to the agent but not shown.
    pub hidden: bool,
    /// Extra fields kept on the message (`timezone`, `attachments`, …).
    pub extra: Map<String, Value>,
}

impl UserMessage {
    /// The stored JSON body of this message at `ts`.
    pub fn body(&self, ts: i64) -> Map<String, Value> {
        let mut body = self.extra.clone();
        body.insert("role".into(), "user".into());
        body.insert("content".into(), self.content.clone().into());
        body.insert("cid".into(), self.cid.clone().into());
        body.insert("ts".into(), ts.into());
        if self.hidden {
            body.insert("hidden".into(), true.into());
        }
        body
    }
}

/// What a send did.
#[derive(Debug, Clone)]
pub enum SendOutcome {
    /// A turn started with these user messages (queued ones first, then the new one).
    Started { run_id: String, messages: Vec<Value> },
    /// The chat is busy; the message waits in the queue.
    Queued { position: i64, message: Value, pending: Vec<Value> },
    /// This cid was already accepted; nothing changed.
    Duplicate { message: Value, running: bool },
}

/// Sending a message: starts a turn when idle, else queues.
#[derive(Debug)]
pub struct Send {
    pub chat_id: String,
    pub message: UserMessage,
    /// The run id to use if a turn starts.
    pub run_id: String,
    pub provider: String,
    /// Answers a pending question first (after a restart) instead of refusing the send.
    pub answering: Option<String>,
}

/// How a run ends, as recorded.
#[derive(Debug, Clone)]
pub struct FinishRun {
    pub chat_id: String,
    pub run_id: String,
    /// `completed`, `failed`, `stopped` or `interrupted`.
    pub status: &'static str,
    /// The final assistant message; `None` uses the last stored snapshot.
    pub body: Option<Value>,
    pub end: crate::db::chats::RunEnd,
    /// The run id for a queued follow-up turn, if the queue is promoted.
    pub next_run_id: String,
}

/// What ending a run led to.
#[derive(Debug, Clone, Default)]
pub struct FinishOutcome {
    /// A queued turn that starts now: `(run_id, user messages)`.
    pub next: Option<(String, Vec<Value>)>,
    /// Queued messages removed because the run was stopped.
    pub cleared: Vec<String>,
}

/// Owner-editable chat fields.
#[derive(Debug, Default, Clone)]
pub struct ChatPatch {
    pub title: Option<String>,
    pub settings: crate::db::chats::ChatSettings,
    /// An app chat's `(scope, scope_label)`; `None` inside leaves that one alone.
    pub scope: Option<(Option<String>, Option<String>)>,
}

/// Every mutation the writer knows how to apply.
#[derive(Debug)]
pub enum WriteCommand {
    /// Creates the owner row (fails with 409 if it exists).
    CreateOwner { username: String, password_hash: String, ack: Ack<()> },
    /// Bumps the token epoch, revoking every issued token; answers the new epoch.
    BumpTokenEpoch { ack: Ack<i64> },
    /// Creates a chat (idempotent on id).
    CreateChat { chat: NewChat, ack: Ack<ChatCreated> },
    /// Appends events to a chat's journal. With `run_id`, only while that run is running:
    /// a stopped turn can no longer write. Answers the seq of the last event.
    Emit { chat_id: String, run_id: Option<String>, events: Vec<EventBody>, ack: Option<Ack<i64>> },
    /// Opens a running run with an empty live message.
    StartRun { run: NewRun, ack: Ack<()> },
    /// Sends a message (start or queue).
    Send { send: Send, ack: Ack<SendOutcome> },
    /// Edits a queued message: `(updated, pending)`.
    UpdatePending { chat_id: String, cid: String, content: String, ack: Ack<(bool, Vec<Value>)> },
    /// Empties the queue of an idle chat; answers the removed cids.
    ClearQueue { chat_id: String, ack: Ack<Vec<String>> },
    /// Removes a queued message: `(removed, pending)`.
    CancelPending { chat_id: String, cid: String, ack: Ack<(bool, Vec<Value>)> },
    /// Makes a question durable before it is shown: journal event, marker and live message.
    QuestionCommit { chat_id: String, run_id: String, question_id: String, event: EventBody, live: Value, ack: Ack<()> },
    /// Records the owner's answers (410 when the question is no longer pending).
    AnswerQuestion { chat_id: String, question_id: String, answers: Value, ack: Ack<()> },
    /// Ends a run: merges its message, records usage, then promotes or clears the queue.
    FinishRun { finish: FinishRun, ack: Ack<FinishOutcome> },
    /// Steering: seals the live message so far, appends the owner's message, and restarts the
    /// live message of the same run. Answers the stored user message.
    SteerCommit { chat_id: String, run_id: String, message: UserMessage, sealed: Value, ack: Ack<Value> },
    /// Records the provider session id as soon as it is known.
    RecordSession { chat_id: String, run_id: String, session_id: String },
    /// Stores the full text of a large tool output.
    StashToolOutput { chat_id: String, tool_use_id: String, content: String },
    /// Renames, pins or changes settings.
    UpdateChat { chat_id: String, patch: ChatPatch, ack: Ack<()> },
    /// Soft-deletes a chat (its turn must already be stopped).
    DeleteChat { chat_id: String, ack: Ack<()> },
    /// Undeletes a chat within the recovery window.
    RecoverChat { chat_id: String, cutoff: i64, ack: Ack<()> },
    /// Purges chats deleted before `cutoff`.
    PurgeDeleted { cutoff: i64, ack: Ack<u64> },
    /// Boot: runs still `running` become `interrupted`, their live messages merged.
    ReconcileStartup { ack: Ack<Vec<String>> },
    /// Stores a system prompt and pins it on the chat if it has none: `(id, content)`.
    PinPrompt { chat_id: String, id: String, content: String, ack: Ack<(String, String)> },
    /// Sets the owner's default provider.
    SetDefaultProvider { provider: Option<String>, ack: Ack<()> },
    /// Reserves an id for a new app (hidden until it has a bundle).
    AppReserve { slug: String, name: String, nonce: String, ack: Ack<i64> },
    /// Records a successful apply and announces it (`created` for a first build).
    AppRecordApply { id: i64, applied: crate::db::apps::Applied, created: bool, ack: Ack<()> },
    /// Drops a reserved app whose first build failed.
    AppForgetUnbuilt { id: i64, ack: Ack<()> },
    /// Renames, pins, marks seen/opened, deletes or recovers an app.
    AppPatch { id: i64, patch: crate::db::apps::AppPatch, ack: Ack<bool> },
    /// Stores app `app_id`'s sealed secret `name`; 413 when it would be more than `max`.
    AppSecretPut { app_id: i64, name: String, sealed: Vec<u8>, max: i64, ack: Ack<()> },
    /// Removes a secret; answers whether there was one.
    AppSecretDelete { app_id: i64, name: String, ack: Ack<bool> },
    /// Stores a new embedded-chat grant.
    EmbedGrantMint { grant: crate::db::embeds::Grant, ack: Ack<()> },
    /// Trades grant `id` (for `instance_id`) for a session until `session_expires_at`.
    EmbedGrantExchange { id: String, instance_id: String, session_expires_at: i64, ack: Ack<crate::db::embeds::Grant> },
    /// Revokes an embed instance's grants and sessions: how many.
    EmbedRevoke { app_id: i64, chat_id: String, instance_id: String, ack: Ack<u64> },
    /// Gives app `id` a new slug (a release renamed it with `previous_id`).
    AppAdopt { id: i64, slug: String, ack: Ack<()> },
    /// Ends apps deleted before `cutoff` (those in `keep` keep their row and data): `(id, slug)`
    /// of each app whose build went.
    AppPurge { cutoff: i64, keep: Vec<i64>, ack: Ack<Vec<(i64, String)>> },
    /// Removes every secret of an app: how many.
    AppDeleteSecrets { app_id: i64, ack: Ack<u64> },
    /// Stores a new one-use install pass.
    InstallPassMint { pass: crate::db::apps::InstallPass, ack: Ack<()> },
    /// Consumes install pass `id` (by its hash) when it is unused and unexpired.
    InstallPassRedeem { id: String, ack: Ack<Option<crate::db::apps::InstallPass>> },
    /// Sets the store's catalog indexes (a JSON list; `None`: the default catalog).
    SetCatalogIndexes { indexes: Option<String>, ack: Ack<()> },
    /// Push subscriptions and the notification centre (`writer/push.rs`).
    Push { op: super::push::PushWrite, ack: Ack<u64> },
    /// Coalesced live-message snapshot.
    SnapshotLive(LiveSnapshot),
    /// Resolves after everything queued before it is committed.
    Barrier(Ack<()>),
    /// Drains the queue, flushes snapshots, stops the actor.
    Shutdown(oneshot::Sender<()>),
}
