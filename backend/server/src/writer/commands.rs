//! The messages the writer actor accepts. Strict commands carry an [`Ack`] resolved after
//! commit; [`WriteCommand::SnapshotLive`] is fire-and-forget and coalesced.

use std::sync::atomic::AtomicU64;

use tokio::sync::oneshot;

use crate::db::chats::ChatSettings;
use crate::db::runs::RunEnd;
use crate::error::Result;
use crate::protocol::{
    Answers, ChatEvent, ChatId, Cid, HandoffCard, Message, ProviderKind, QuestionCard, QuestionId, RunId, RunStatus,
    UserInput,
};

/// The reply a strict command carries. It answers once: with the command's result after the
/// commit (`Batch::complete`), or, dropped unanswered (its batch's transaction broke before the
/// command ran, or the actor stopped), with "the transaction could not be committed". So the
/// actor never needs to know which commands carry one.
pub struct Ack<T>(Option<oneshot::Sender<Result<T>>>);

impl<T> Ack<T> {
    /// A reply and the receiver the caller waits on.
    pub(super) fn channel() -> (Self, oneshot::Receiver<Result<T>>) {
        let (tx, rx) = oneshot::channel();
        (Self(Some(tx)), rx)
    }

    /// Answers the caller (who may have stopped waiting).
    pub(super) fn send(mut self, result: Result<T>) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(result);
        }
    }
}

impl<T> Drop for Ack<T> {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(Err(uncommitted()));
        }
    }
}

impl<T> std::fmt::Debug for Ack<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Ack(waiting)" } else { "Ack(answered)" })
    }
}

/// What a caller hears when its command's transaction did not commit.
pub(super) fn uncommitted() -> crate::error::Error {
    crate::error::Error::Internal("the transaction could not be committed".into())
}

/// Counters for diagnostics, tests and the benchmark.
#[derive(Debug, Default)]
pub struct WriterStats {
    /// Transactions committed.
    pub commits: AtomicU64,
    /// Commands applied (including failed ones).
    pub commands: AtomicU64,
    /// Live snapshots received.
    pub snapshots_received: AtomicU64,
    /// Live snapshots actually written.
    pub snapshot_writes: AtomicU64,
    /// Idle checkpoints that truncated the WAL.
    pub checkpoints: AtomicU64,
    /// The last writes failed because the disk is full (cleared by the next clean commit).
    pub disk_full: std::sync::atomic::AtomicBool,
}

/// The latest state of a running turn's assistant message.
#[derive(Debug)]
pub struct LiveSnapshot {
    pub chat_id: ChatId,
    pub run_id: RunId,
    /// The live assistant message JSON.
    pub body: String,
}

/// A new chat, optionally with an imported (already validated) transcript.
#[derive(Debug)]
pub struct NewChat {
    pub id: ChatId,
    pub title: Option<String>,
    /// Appended in order.
    pub messages: Vec<Message>,
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
    pub provider: Option<ProviderKind>,
    /// The chat's agent settings JSON (`system_prompt`, `model`, `project_id`, …).
    pub agent_settings: Option<String>,
}

/// A chat note to store ([`WriteCommand::SetNote`]).
#[derive(Debug, Clone)]
pub struct NoteWrite {
    pub digest: String,
    pub summary: String,
    /// A title for the chat (ignored once the owner renamed it).
    pub title: Option<String>,
    /// A note turn's: the transcript length it summarised (the write is refused when the chat
    /// changed since). `None`: the owner's own edit.
    pub expect_count: Option<i64>,
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
#[derive(Debug, Clone)]
pub struct NewRun {
    pub chat_id: ChatId,
    pub run_id: RunId,
    pub provider: ProviderKind,
}

/// A turn that starts: its run, the provider decided at send, when it began (the live
/// message's `ts`) and the user rows it answers.
#[derive(Debug, Clone)]
pub struct Started {
    pub run_id: RunId,
    pub provider: ProviderKind,
    pub ts: i64,
    pub messages: Vec<Message>,
    /// A regenerating turn: the attempt its reply is ([`Message::version`]).
    pub version: Option<u32>,
}

/// What a send did.
#[derive(Debug, Clone)]
pub enum SendOutcome {
    /// A turn started with these user messages (queued ones first, then the new one).
    Started(Started),
    /// The chat is busy; the message waits in the queue.
    Queued { position: i64, message: Message, pending: Vec<Message> },
    /// This cid was already accepted; nothing changed.
    Duplicate { message: Message, running: bool },
}

/// Sending a message: starts a turn when idle, else queues.
#[derive(Debug)]
pub struct Send {
    pub chat_id: ChatId,
    pub message: UserInput,
    /// The run id to use if a turn starts.
    pub run_id: RunId,
    /// Decided by the route and stored on the chat: every later turn of this send uses it.
    pub provider: ProviderKind,
    /// Answers a pending question first (after a restart) instead of refusing the send.
    pub answering: Option<QuestionId>,
}

/// Regenerate: a new reply to the owner's last message, kept beside the earlier ones as a
/// version of it (no new owner message).
#[derive(Debug)]
pub struct Regenerate {
    pub chat_id: ChatId,
    /// The owner's message whose reply is regenerated (must be the last visible one).
    pub message_idx: Option<i64>,
    /// The versions the client shows: a retry of an accepted regenerate (more exist now) is a
    /// duplicate, not a third version.
    pub versions: Option<u32>,
    pub run_id: RunId,
    pub provider: ProviderKind,
}

/// What a regenerate did.
#[derive(Debug, Clone)]
pub enum RegenerateOutcome {
    /// A turn started: `started.messages` holds what the agent is sent (not stored).
    Started(Started),
    /// That regenerate was already accepted: the reply has `versions` versions now.
    Duplicate { versions: u32, running: bool },
}

/// How a run ends, as recorded.
#[derive(Debug, Clone)]
pub struct FinishRun {
    pub chat_id: ChatId,
    pub run_id: RunId,
    pub status: RunStatus,
    /// The final assistant message; `None` uses the last stored snapshot.
    pub body: Option<Message>,
    pub end: RunEnd,
    /// The provider a queued follow-up runs on (the finishing run's); `None` when the run
    /// cannot be followed (a stop).
    pub provider: Option<ProviderKind>,
    /// The run id for a queued follow-up turn, if the queue is promoted.
    pub next_run_id: RunId,
    /// What the owner must fix before a retry can work (shown with the run's error).
    pub fix: Option<crate::protocol::ErrorFix>,
    /// The run ended on a usage limit: the queue waits, and with `resumes_at` the chat is
    /// parked until then (shown with the run's error).
    pub pause: Option<crate::protocol::Pause>,
}

/// What ending a run led to.
#[derive(Debug, Clone, Default)]
pub struct FinishOutcome {
    /// A queued turn that starts now.
    pub next: Option<Started>,
    /// Queued messages removed because the run was stopped.
    pub cleared: Vec<Cid>,
}

/// Owner-editable chat fields.
#[derive(Debug, Default, Clone)]
pub struct ChatPatch {
    pub title: Option<String>,
    pub settings: ChatSettings,
    /// An app chat's `(scope, scope_label)`; `None` inside leaves that one alone.
    pub scope: Option<(Option<String>, Option<String>)>,
    /// Continue by itself after a usage limit (off also drops a pending usage-limit park).
    pub auto_resume: Option<bool>,
}

/// One write of the push module. Each answers a count (rows changed, or 1/0).
#[derive(Debug)]
pub enum PushWrite {
    /// Adds a device or renews its keys.
    Subscribe(crate::db::push::NewSubscription),
    /// Removes the device with this endpoint (`Some(app)`: only if that app subscribed it).
    Unsubscribe(String, Option<i64>),
    /// Removes the device with this id (Settings).
    UnsubscribeId(i64),
    /// The push service accepted a push for this device.
    Delivered(i64),
    /// Stores a notification and announces `notification_created`.
    Store(Box<crate::db::push::Notification>),
    /// Marks every unread notification read.
    ReadAll,
    /// Deletes one notification, or all.
    Delete(Option<String>),
    /// Turns one kind of notification on or off.
    SetPref { kind: crate::protocol::NotificationKind, enabled: bool },
}

/// Owner and agent edits of a schedule (`None`: unchanged). Cadence, zone and pause changes
/// make the scheduler plan the schedule again.
#[derive(Debug, Default, Clone)]
pub struct ScheduleChange {
    pub name: Option<String>,
    pub cron: Option<String>,
    pub run_at: Option<i64>,
    pub timezone: Option<Option<String>>,
    pub prompt: Option<String>,
    pub missed: Option<String>,
    pub timeout_secs: Option<Option<i64>>,
    pub paused: Option<bool>,
}

/// One write of the scheduler or the schedule routes (`writer/schedules.rs`). Each answers an
/// id (the schedule's, or the run's) or a count.
#[derive(Debug)]
pub enum ScheduleWrite {
    /// Adds a schedule (413 beyond `MAX_SCHEDULES`): its id.
    Create(crate::db::schedules::NewSchedule),
    /// Edits a schedule.
    Update { id: i64, change: ScheduleChange },
    /// Removes a schedule and its runs.
    Delete(i64),
    /// An app's own job schedule (`POST /api/apps/{id}/schedule`, or the row a first
    /// `run-job` needs): created or changed.
    SetAppJob {
        app_id: i64,
        name: String,
        cron: Option<String>,
        job: Option<String>,
        timezone: Option<String>,
        created_by: String,
    },
    /// The scheduler's plan: the next due time, unless the row changed since `updated_at`
    /// (`None`: the cadence never comes round; the schedule is paused saying so).
    Plan { id: i64, updated_at: i64, next: Option<i64> },
    /// A due schedule fired (or was skipped): records the run and moves the due time on
    /// (unless the schedule changed since `updated_at`: then it is planned again).
    Fire { run: crate::db::schedules::NewRun, updated_at: i64, next: Option<i64>, one_off: bool },
    /// A run started by hand (or at install): the run's id.
    Start(crate::db::schedules::NewRun),
    /// A scheduled agent turn became this chat's run.
    Link { run_id: i64, chat_id: String, turn: Option<String> },
    /// A running run waits for a free agent since `since`, or (`None`) has started.
    Waiting { run_id: i64, since: Option<i64> },
    /// Boot: runs left running by the last process become `interrupted`.
    Reconcile { at: i64 },
    /// Sets the owner's time zone (`None`: the server's).
    SetTimezone(Option<String>),
}

/// A run that ended, and what it did to its schedule.
#[derive(Debug, Clone)]
pub struct FinishedRun {
    pub schedule: crate::db::schedules::ScheduleRow,
    /// Failed runs in a row, this one included.
    pub failures: i64,
    /// This failure paused the schedule.
    pub paused: bool,
}

/// Every mutation the writer knows how to apply.
#[derive(Debug)]
pub enum WriteCommand {
    /// Creates the owner row (fails with 409 if it exists).
    CreateOwner { username: String, password_hash: String, ack: Ack<()> },
    /// Bumps the token epoch, revoking every issued token and device credential, and sets the
    /// owner's new password hash when given; answers the new epoch.
    BumpTokenEpoch { password_hash: Option<String>, ack: Ack<i64> },
    /// Records a sign-in from a device (its credential's hash, label, new session, address),
    /// keeping the `keep` most recently used devices.
    RememberDevice { sign_in: crate::db::owner::DeviceSignIn, keep: i64, ack: Ack<()> },
    /// Forgets one device and its session; answers the session id.
    ForgetDevice { id: i64, ack: Ack<Option<String>> },
    /// Stores sessions' last-seen times.
    TouchSessions { seen: Vec<(String, i64)>, ack: Ack<()> },
    /// Creates a chat (idempotent on id).
    CreateChat { chat: NewChat, ack: Ack<ChatCreated> },
    /// Appends events to a chat's journal. With `run_id`, only while that run is running:
    /// a stopped turn can no longer write. Answers the seq of the last event.
    Emit { chat_id: ChatId, run_id: Option<RunId>, events: Vec<ChatEvent>, ack: Option<Ack<i64>> },
    /// Opens a running run with an empty live message.
    StartRun { run: NewRun, ack: Ack<()> },
    /// Sends a message (start or queue).
    Send { send: Send, ack: Ack<SendOutcome> },
    /// Starts a turn that writes a new version of the last reply (409 while a turn runs).
    Regenerate { regenerate: Regenerate, ack: Ack<RegenerateOutcome> },
    /// Edits a queued message: `(updated, pending)`.
    UpdatePending { chat_id: ChatId, cid: Cid, content: String, ack: Ack<(bool, Vec<Message>)> },
    /// Empties the queue of an idle chat; answers the removed cids.
    ClearQueue { chat_id: ChatId, ack: Ack<Vec<Cid>> },
    /// Removes a queued message: `(removed, pending)`.
    CancelPending { chat_id: ChatId, cid: Cid, ack: Ack<(bool, Vec<Message>)> },
    /// Makes a card durable before it is shown: journal event, marker and live message.
    QuestionCommit { chat_id: ChatId, run_id: RunId, card: QuestionCard, live: Message, ack: Ack<()> },
    /// Records the owner's answers (410 when the question is no longer pending).
    AnswerQuestion { chat_id: ChatId, question_id: QuestionId, answers: Answers, ack: Ack<()> },
    /// Ends a run: merges its message, records usage, then promotes or clears the queue.
    FinishRun { finish: FinishRun, ack: Ack<FinishOutcome> },
    /// Steering: seals the live message so far, appends the owner's message, and restarts the
    /// live message of the same run. Answers the stored user message.
    SteerCommit { chat_id: ChatId, run_id: RunId, message: UserInput, sealed: Message, ack: Ack<Message> },
    /// Records the provider session id as soon as it is known.
    RecordSession { chat_id: ChatId, run_id: RunId, session_id: String },
    /// Stores the full text of a large tool output.
    StashToolOutput { chat_id: ChatId, tool_use_id: String, content: String },
    /// Renames, pins or changes settings.
    UpdateChat { chat_id: ChatId, patch: ChatPatch, ack: Ack<()> },
    /// Soft-deletes a chat (its turn must already be stopped).
    DeleteChat { chat_id: ChatId, ack: Ack<()> },
    /// Undeletes a chat within the recovery window.
    RecoverChat { chat_id: ChatId, cutoff: i64, ack: Ack<()> },
    /// Purges chats deleted before `cutoff`; answers their ids (their files go next).
    PurgeDeleted { cutoff: i64, ack: Ack<Vec<ChatId>> },
    /// Records a chat file complete on disk (413 past `quota` bytes in all chats).
    FileAdd { file: crate::db::uploads::ChatFile, quota: u64, ack: Ack<()> },
    /// Forgets a chat file: whether there was one.
    FileRemove { chat_id: ChatId, kind: &'static str, name: String, ack: Ack<bool> },
    /// Hands the chat's session off (a provider switch, a compaction): the marker message,
    /// the provider, no session, the summary that seeds the next one, the agent settings (JSON,
    /// replacing the chat's). Refused while a turn runs or a question waits.
    Handoff { chat_id: ChatId, card: HandoffCard, agent_settings: Option<String>, ack: Ack<Message> },
    /// Starts the continuation of a parked chat whose time has come (a hidden message): the
    /// run, or `None` when there is nothing to continue (not due, running, deleted).
    /// With `start` false the park is only cleared (the provider went away meanwhile).
    Resume { chat_id: ChatId, run_id: RunId, now: i64, start: bool, ack: Ack<Option<Started>> },
    /// Boot: runs still `running` become `interrupted`, their live messages merged; those of
    /// chats on a provider in `resume` are parked to continue at once.
    ReconcileStartup { resume: Vec<ProviderKind>, ack: Ack<Vec<ChatId>> },
    /// Stores a system prompt and pins it on the chat if it has none: `(id, content)`.
    PinPrompt { chat_id: ChatId, id: String, content: String, ack: Ack<(String, String)> },
    /// Pins a goal on the chat (a `/goal` turn started), replacing the one it had.
    SetGoal { chat_id: ChatId, objective: String, ack: Ack<()> },
    /// Unpins the chat's goal (the owner dismissed it).
    DismissGoal { chat_id: ChatId, ack: Ack<()> },
    /// Stores a chat's note (and titles the chat from it): whether it was written.
    SetNote { chat_id: ChatId, note: NoteWrite, ack: Ack<bool> },
    /// Turns memory in new chats on or off.
    SetMemoryEnabled { on: bool, ack: Ack<()> },
    /// Sets the owner's default provider.
    SetDefaultProvider { provider: Option<ProviderKind>, ack: Ack<()> },
    /// Stores the plan windows a provider's CLI reported (a JSON list of `PlanWindow`).
    RecordLimits { provider: ProviderKind, windows: String },
    /// Sets the owner's default model and effort per provider (`AgentDefaults` as JSON).
    SetAgentDefaults { defaults: String, ack: Ack<()> },
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
    /// Appends an activity entry (`app_id` None: the owner's), keeping that log's newest
    /// `keep`; the entry's id.
    ActivityAppend { app_id: Option<i64>, ev: String, data: String, keep: i64, ack: Ack<i64> },
    /// Removes a secret; answers whether there was one.
    AppSecretDelete { app_id: i64, name: String, ack: Ack<bool> },
    /// Stores a new connector: its id; 413 past `max`, 409 when its name is taken.
    ConnectorCreate { connector: crate::db::connectors::NewConnector, max: i64, ack: Ack<i64> },
    /// Changes a connector's chats, approval switch or connect state; whether there was one.
    ConnectorUpdate { id: i64, patch: crate::db::connectors::ConnectorPatch, ack: Ack<bool> },
    /// Removes a connector; whether there was one.
    ConnectorDelete { id: i64, ack: Ack<bool> },
    /// Publishes an app's page, or replaces its copy (token kept); answers the
    /// generation replaced (its folder is the caller's to remove); 413 past `max` pages.
    SitePut { site: crate::db::published::NewSite, max: i64, ack: Ack<Option<i64>> },
    /// Unpublishes app `app_id`'s page; answers its generation (`None`: there was none).
    SiteDelete { app_id: i64, ack: Ack<Option<i64>> },
    /// Replaces the connectors chosen for a chat.
    ChatConnectorsSet { chat_id: String, ids: Vec<i64>, ack: Ack<()> },
    /// Stores (or replaces) the owner's GitHub connection: the sealed token and its account.
    GithubConnect { token: Vec<u8>, login: String, ack: Ack<()> },
    /// Forgets the GitHub connection; whether there was one.
    GithubDisconnect { ack: Ack<bool> },
    /// Replaces the repositories the agent may use on GitHub.
    GithubReposSet { repos: Vec<String>, ack: Ack<()> },
    /// Logs one of the agent's GitHub credential requests, keeping the newest `keep`.
    GithubRequestLog { request: crate::db::github::NewRequest, keep: i64, ack: Ack<()> },
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
    Push { op: PushWrite, ack: Ack<u64> },
    /// Schedules (`writer/schedules.rs`).
    Schedule { op: ScheduleWrite, ack: Ack<i64> },
    /// Closes a schedule run; `failed` says whether it counts as a failure (`None`: neither
    /// counts nor clears). `None` back when it was already closed.
    ScheduleFinish {
        run_id: i64,
        end: crate::db::schedules::RunEnd,
        failed: Option<bool>,
        ack: Ack<Option<FinishedRun>>,
    },
    /// Coalesced live-message snapshot.
    SnapshotLive(LiveSnapshot),
    /// Resolves after everything queued before it is committed.
    Barrier(Ack<()>),
    /// Drains the queue, flushes snapshots, stops the actor.
    Shutdown(oneshot::Sender<()>),
}
