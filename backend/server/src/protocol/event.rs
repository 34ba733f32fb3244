//! Events: the chat journal (numbered, durable, replayed by `GET /api/chats/{id}/stream`), the
//! stream's own control events, and the shell-wide system events (`GET /api/events/system`).

use serde::{Deserialize, Serialize};

use super::ids::{ChatId, QuestionId, RunId};
use super::message::{Answers, ErrorFix, FileDiff, GoalPin, Message, PlanCard, QuestionCard, WebSource, is_false};
use super::notice::NotificationKind;

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Completed,
    Failed,
    /// The owner stopped it.
    Stopped,
    /// It ended without finishing: the provider cut it, or the server restarted.
    Interrupted,
}

impl RunStatus {
    /// The stored (and wire) name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Stopped => "stopped",
            RunStatus::Interrupted => "interrupted",
        }
    }
}

/// Token counts of a run, where the provider reported them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TokenCounts {
    #[serde(default)]
    pub input_tokens: Option<i64>,
    #[serde(default)]
    pub output_tokens: Option<i64>,
    #[serde(default)]
    pub cache_read_tokens: Option<i64>,
    #[serde(default)]
    pub cache_write_tokens: Option<i64>,
}

/// One event of a chat's journal. The writer gives it the chat's next `seq` when it commits
/// ([`JournalEntry`]); clients fold the events after their snapshot's `seq` into it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatEvent {
    /// A user row was added (dedupe by `cid`).
    UserMessage {
        message: Message,
    },
    /// A turn began: an empty live assistant message starts, dated `ts` (absent in rows
    /// written before it was added).
    RunStarted {
        run_id: RunId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ts: Option<i64>,
        /// The turn regenerates the reply to the owner's last message: its live message starts
        /// attempt `version` ([`Message::version`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<u32>,
    },
    /// Append to the text block with this `item_id` (else start one).
    Text {
        content: String,
        item_id: String,
    },
    /// The authoritative text of the block: replaces what the deltas built.
    TextFinal {
        content: String,
        item_id: String,
    },
    /// Append to the thinking block with this `item_id`.
    Thinking {
        content: String,
        item_id: String,
    },
    /// A tool call began.
    ToolStart {
        tool_use_id: String,
        tool: String,
        input: String,
        /// The subagent call (Claude's Task/Agent tool) this call was made by.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_use_id: Option<String>,
        /// On a subagent call: which kind of agent it started (`general-purpose`, `Explore`…).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subagent_type: Option<String>,
    },
    /// A started call's input summary, known only later (a Codex web search says what it
    /// searched or opened when it ends): replaces the block's `input`.
    ToolInput {
        tool_use_id: String,
        input: String,
    },
    /// The files a tool call changes (diffs from its input), set once per call.
    ToolFiles {
        tool_use_id: String,
        files: Vec<FileDiff>,
    },
    /// The agent's plan as it stands now: the message's plan card is replaced by it.
    Plan(PlanCard),
    /// The chat's pinned goal changed: set, its plan moved on, or unpinned (`None`: its plan
    /// was done or the owner dismissed it). Not part of the transcript.
    GoalChanged {
        goal: Option<GoalPin>,
    },
    /// The web pages a tool call brought back, set once per call.
    ToolSources {
        tool_use_id: String,
        sources: Vec<WebSource>,
    },
    /// The tool's output (or, with `append`, the next piece of it).
    ToolOutput {
        tool_use_id: String,
        content: String,
        #[serde(default, skip_serializing_if = "is_false")]
        append: bool,
        #[serde(default, skip_serializing_if = "is_false")]
        output_truncated: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(test, ts(type = "number"))]
        output_full_len: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_exit_code: Option<i64>,
    },
    /// The tool returned an image (a file it viewed, a screenshot), stored as chat media at
    /// `url` (`/api/chats/<id>/media/<file>`).
    ToolImage {
        tool_use_id: String,
        url: String,
    },
    /// A tool call ended; `interrupted` when our interrupt (a steer) cut it short.
    ToolEnd {
        tool_use_id: String,
        is_error: bool,
        #[serde(default, skip_serializing_if = "is_false")]
        interrupted: bool,
        /// How long the call ran, in milliseconds (as the server saw it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(test, ts(type = "number"))]
        elapsed_ms: Option<u64>,
    },
    /// A question or approval card (durable before it is shown).
    Question(QuestionCard),
    /// The card is answered.
    AnswersApplied {
        question_id: QuestionId,
        answers: Answers,
    },
    /// The whole queue, as it is now.
    QueueChanged {
        pending: Vec<Message>,
    },
    /// Queued messages became the next turn's user rows.
    QueuedTurnStarting {
        run_id: RunId,
        messages: Vec<Message>,
    },
    /// The live message so far became a finished row (when `sealed`), the owner's `message`
    /// follows, and a new live message starts for the same run.
    SteeredIntoTurn {
        run_id: RunId,
        message: Message,
        sealed: bool,
    },
    /// The chat's session was handed off (a provider switch, a compaction): `message` (one
    /// `handoff` block) joins the transcript.
    Handoff {
        message: Message,
    },
    /// The run ended: the live message is now history.
    Done {
        run_id: RunId,
        status: RunStatus,
        #[serde(default)]
        usage: TokenCounts,
        #[serde(default, deserialize_with = "decimal")]
        cost_usd: Option<f64>,
        #[serde(default)]
        error: Option<String>,
    },
    ChatRenamed {
        title: String,
    },
    ChatDeleted,
    /// An app was built (or rebuilt) from this chat.
    AppUpdated {
        app_id: i64,
        slug: String,
        name: String,
        created: bool,
    },
    /// A trailing error block (it replaces a trailing error block).
    Error {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resumable: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fix: Option<ErrorFix>,
        /// The turn is paused and continues by itself (a usage limit, a restart).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pause: Option<super::Pause>,
    },
    /// The turn waits for a free agent: as many run as the server allows (not part of the
    /// transcript; the next event of the turn ends it).
    Waiting(Waiting),
    /// The CLI is retrying a failed model request (not part of the transcript).
    Retrying {
        attempt: u32,
        max_retries: u32,
        /// The provider's short reason (`overloaded`, `rate_limit`, HTTP 529).
        reason: String,
    },
}

/// Why a turn has not started yet: `busy` of the `limit` agents that work of its kind may run
/// at once are running (the owner's turns: all of them; scheduled turns, continuations and app
/// jobs: their share).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Waiting {
    pub busy: u32,
    pub limit: u32,
}

/// A number read through serde's buffering (tagged enums, `flatten`): with serde_json's
/// `arbitrary_precision` (which the bundler's crates turn on) it arrives as a map only
/// `serde_json::Value` understands.
fn decimal<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Ok(Option::<serde_json::Value>::deserialize(d)?.and_then(|v| v.as_f64()))
}

/// A journal event with its position: exactly what is stored and streamed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct JournalEntry {
    pub seq: i64,
    #[serde(flatten)]
    pub event: ChatEvent,
}

/// The chat stream's own, unnumbered events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamControl {
    /// The replay is over; live events follow.
    CatchUpDone { seq: i64, ts: i64 },
    /// The gap cannot be replayed: refetch the detail and reconnect from its `seq`.
    Resync { seq: i64, ts: i64 },
}

/// Everything `GET /api/chats/{id}/stream` sends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(untagged)]
pub enum StreamEvent {
    Journal(Box<JournalEntry>),
    Control(StreamControl),
}

/// Shell-wide events: the drawer refreshes its lists on them (no replay).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SystemEvent {
    /// First event of every connection.
    SystemStreamOpen {
        boot_id: String,
    },
    /// Events were missed: refetch.
    Resync,
    ChatCreated {
        chat_id: ChatId,
    },
    ChatRenamed {
        chat_id: ChatId,
        title: String,
    },
    ChatUpdated {
        chat_id: ChatId,
    },
    ChatDeleted {
        chat_id: ChatId,
    },
    ChatRecovered {
        chat_id: ChatId,
    },
    ChatRunStarted {
        chat_id: ChatId,
    },
    ChatRunFinished {
        chat_id: ChatId,
        status: RunStatus,
    },
    /// A question waits for the owner (or no longer does).
    ChatOwnerInputChanged {
        chat_id: ChatId,
        pending_question_id: Option<QuestionId>,
    },
    AppCreated {
        app_id: i64,
        chat_id: Option<ChatId>,
        sha: String,
    },
    AppUpdated {
        app_id: i64,
        chat_id: Option<ChatId>,
        sha: String,
    },
    /// A chat built an app: it may open the preview.
    AppPreviewReady {
        app_id: i64,
        chat_id: ChatId,
    },
    AppChanged {
        app_id: i64,
    },
    AppDeleted {
        app_id: i64,
    },
    AppRecovered {
        app_id: i64,
    },
    /// A notification was stored: the bell and the badge recount.
    NotificationCreated {
        id: String,
        kind: NotificationKind,
    },
    /// Notifications were read or deleted.
    NotificationsChanged,
    /// A notification switch was turned on or off.
    NotificationPrefsChanged,
    /// A device was subscribed to pushes, or removed.
    PushDevicesChanged,
    /// A schedule was added, changed or removed, or one of its runs started or ended.
    SchedulesChanged,
    /// The platform's theme changed (`GET /api/theme` has the new one): restyle.
    ThemeUpdated {
        version: String,
    },
    /// The server now serves another build of the shell (`build`: its number, `null` for the
    /// stock one): open devices offer a reload when idle. `reason` says why when it was not
    /// the owner's choice (a rollback).
    ShellUpdated {
        build: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[cfg_attr(test, ts(optional))]
        reason: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn journal_entries_are_flat_snake_case_objects() {
        let entry = JournalEntry {
            seq: 7,
            event: ChatEvent::ToolEnd {
                tool_use_id: "t1".into(),
                is_error: false,
                interrupted: false,
                elapsed_ms: None,
            },
        };
        let value = serde_json::to_value(&entry).expect("json");
        assert_eq!(value, json!({"seq": 7, "type": "tool_end", "tool_use_id": "t1", "is_error": false}));
        assert_eq!(serde_json::from_value::<JournalEntry>(value).expect("back"), entry);
        let deleted = serde_json::to_value(JournalEntry { seq: 8, event: ChatEvent::ChatDeleted }).expect("json");
        assert_eq!(deleted, json!({"seq": 8, "type": "chat_deleted"}));
        let system =
            serde_json::to_value(SystemEvent::ChatOwnerInputChanged { chat_id: "c".into(), pending_question_id: None })
                .expect("json");
        assert_eq!(system, json!({"type": "chat_owner_input_changed", "chat_id": "c", "pending_question_id": null}));
    }

    #[test]
    fn a_cost_reads_back_from_text() {
        let text = r#"{"seq":3,"type":"done","run_id":"rt-1","status":"completed","cost_usd":0.118976}"#;
        let entry: JournalEntry = serde_json::from_str(text).expect("a done with a cost");
        assert!(matches!(entry.event, ChatEvent::Done { cost_usd: Some(c), .. } if (c - 0.118976).abs() < 1e-12));
    }

    #[test]
    fn a_done_written_by_the_previous_release_still_reads() {
        let old = json!({"seq": 9, "type": "done", "run_id": "rt-1", "status": "interrupted"});
        let entry: JournalEntry = serde_json::from_value(old).expect("old done");
        assert!(matches!(entry.event, ChatEvent::Done { status: RunStatus::Interrupted, cost_usd: None, .. }));
    }
}
