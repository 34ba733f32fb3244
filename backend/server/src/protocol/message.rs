//! Transcript rows and their blocks: what `chat_messages` stores, the chat detail serves and
//! the live message is made of.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::ids::{Cid, QuestionId, RunId};

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

/// A transcript row. User rows carry `cid`; assistant rows carry `blocks` and the `run_id`
/// that produced them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Message {
    pub role: Role,
    #[serde(default)]
    pub content: String,
    /// Unix milliseconds.
    pub ts: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cid: Option<Cid>,
    /// Sent to the agent but not shown (answers delivered after a restart).
    #[serde(default, skip_serializing_if = "is_false")]
    pub hidden: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<Vec<Block>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<RunId>,
    /// The owner's time zone when they sent it (IANA name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// The files sent with it, as the server recorded them (read with [`attachments_of`]).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "read_attachments")]
    #[cfg_attr(test, ts(optional))]
    pub attachments: Option<Vec<Attachment>>,
    /// Text for the agent only, not shown as the message (an embedding app's `<app_state>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_context: Option<String>,
    /// Only on the chat detail: the running turn's assistant message, still being written.
    #[serde(default, skip_serializing_if = "is_false")]
    pub live: bool,
    /// What the turn used (on a turn's last assistant message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<super::RunUsage>>,
    /// A regenerated reply: this row starts attempt `version` (2, 3, …) at the owner's message
    /// before it; the rows after it, up to the next visible owner message, belong to the same
    /// attempt. Absent on a first attempt (and on the later rows of any attempt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
}

/// One piece of an assistant message, in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        #[serde(default)]
        content: String,
        #[serde(default)]
        item_id: String,
    },
    Thinking {
        #[serde(default)]
        content: String,
        #[serde(default)]
        item_id: String,
    },
    Tool(ToolBlock),
    /// A question or approval card.
    Question(QuestionCard),
    Error {
        #[serde(default)]
        message: String,
        /// Sending a message continues where the turn left off.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resumable: Option<bool>,
        /// What the owner must do first (a retry cannot work until then).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fix: Option<ErrorFix>,
        /// The turn is paused and continues by itself (a usage limit, a restart).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pause: Option<super::Pause>,
    },
    /// The marker of a provider switch or a compaction: the conversation so far, summarised,
    /// seeds the next session.
    Handoff(HandoffCard),
    /// The agent's own plan (Claude's task tools or TodoWrite, Codex's plan updates): one card per message,
    /// updated in place as the agent works through it.
    Plan(PlanCard),
}

/// A plan the agent keeps: its steps and how far each got.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PlanCard {
    pub steps: Vec<PlanStep>,
    /// Why the plan is as it is (Codex says so with an update).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The steps of a plan longer than the server keeps that `steps` leaves out, counted by
    /// how far they got (absent when none is left out).
    #[serde(default, skip_serializing_if = "PlanCounts::is_empty")]
    pub omitted: PlanCounts,
}

impl PlanCard {
    /// Some step, shown or left out, is not completed yet.
    pub fn is_open(&self) -> bool {
        self.steps.iter().any(|s| s.status != PlanStatus::Completed) || self.omitted.open() > 0
    }

    /// The plan has steps and every one of them, shown or left out, is completed.
    pub fn is_done(&self) -> bool {
        !self.steps.is_empty() && !self.is_open()
    }
}

/// How many steps of a plan are at each status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PlanCounts {
    pub pending: u32,
    pub in_progress: u32,
    pub completed: u32,
}

impl PlanCounts {
    /// Counts one more step at `status` (saturating: a count is never wrong by wrapping).
    pub fn add(&mut self, status: PlanStatus) {
        let count = match status {
            PlanStatus::Pending => &mut self.pending,
            PlanStatus::InProgress => &mut self.in_progress,
            PlanStatus::Completed => &mut self.completed,
        };
        *count = count.saturating_add(1);
    }

    /// Steps not completed yet.
    pub fn open(&self) -> u32 {
        self.pending.saturating_add(self.in_progress)
    }

    /// No step counted.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A goal the owner set with `/goal <words>`: pinned at the top of the chat with the agent's
/// plan for it, until every step is done or the owner dismisses it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct GoalPin {
    /// What the owner asked for (the words after `/goal`).
    pub objective: String,
    /// The agent's plan for it as it stands (absent until the agent made one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanCard>,
    /// When the goal was set (unix ms).
    pub started_at: i64,
}

impl GoalPin {
    /// Every step of a non-empty plan, including those the card leaves out, is completed: the
    /// goal is done.
    pub fn done(&self) -> bool {
        self.plan.as_ref().is_some_and(PlanCard::is_done)
    }
}

/// One step of a plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PlanStep {
    pub text: String,
    pub status: PlanStatus,
}

/// How far a plan's step got.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    #[default]
    Pending,
    InProgress,
    Completed,
}

/// A provider switch or a compaction, as the transcript shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct HandoffCard {
    /// The client's id of the switch (a retry with it is answered from the stored one).
    pub switch_id: String,
    pub from_provider: Option<super::ProviderKind>,
    pub to_provider: super::ProviderKind,
    /// `switch` (another provider) or `compact` (the same one, a fresh session).
    pub reason: HandoffReason,
    /// The summary the next session starts from.
    pub summary: String,
    /// Who wrote it: the old provider, or the server from the transcript.
    pub summarized_by: HandoffSource,
}

/// Why a chat's session was handed off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum HandoffReason {
    Switch,
    Compact,
}

/// Who wrote a handoff summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum HandoffSource {
    /// The provider the chat ran on.
    Provider,
    /// The server, from the transcript (the provider could not be asked).
    Transcript,
}

/// What an error asks of the owner before anything can work again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum ErrorFix {
    /// The provider refused the credentials or the account is out of quota: open its settings.
    ProviderSettings,
}

/// How far a tool call got.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Running,
    #[default]
    Done,
    Error,
    /// Cut short by our interrupt (a stop or a steer), not failed.
    Stopped,
}

/// A tool call and its (possibly truncated) output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ToolBlock {
    #[serde(default)]
    pub tool: String,
    #[serde(default)]
    pub tool_use_id: String,
    /// A one-line summary of the tool's input.
    #[serde(default, deserialize_with = "text_or_json")]
    pub input: String,
    #[serde(default)]
    pub output: String,
    #[serde(default)]
    pub status: ToolStatus,
    /// The inline output is head + tail; the whole text is at `/tool-output/{tool_use_id}`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub output_truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(type = "number"))]
    pub output_full_len: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_exit_code: Option<i64>,
    /// Images the tool returned, as chat media URLs (at most [`super::live::MAX_TOOL_IMAGES`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
    /// The files the call changes, as diffs computed from its input (an edit tool only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileDiff>,
    /// The web pages a search or fetch brought back (http(s) only, bounded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<WebSource>,
    /// How long the call ran, in milliseconds (absent before it ended, and in older rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(type = "number"))]
    pub elapsed_ms: Option<u64>,
    /// The subagent call (Claude's Task/Agent tool) this call was made by: it belongs under
    /// that call's chip, not in the reply's own steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_use_id: Option<String>,
    /// On a subagent call: which kind of agent it started (`general-purpose`, `Explore`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_type: Option<String>,
}

/// A web page the agent looked at (a search result or a fetched page).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct WebSource {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// How a tool call changes one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum FileChange {
    /// A new file.
    Add,
    /// Part of the file replaced.
    Update,
    /// The file removed.
    Delete,
    /// The whole file written (new or replaced: the input does not say which).
    Write,
}

/// One file's change as a unified diff: every line of `diff` starts with `+` (added), `-`
/// (removed), ` ` (unchanged) or `@@` (a hunk's start). Computed from the tool's input, never
/// by reading the file afterwards.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct FileDiff {
    pub path: String,
    pub change: FileChange,
    /// Lines added and removed, counted over the whole diff (also when `diff` was cut).
    pub added: u32,
    pub removed: u32,
    /// The unified diff, possibly cut at a line end (see `full_len`).
    #[serde(default)]
    pub diff: String,
    /// The content is not text: no diff lines, "binary changed".
    #[serde(default, skip_serializing_if = "is_false")]
    pub binary: bool,
    /// Set when `diff` was cut: the whole diff's length in bytes; the whole diff is at
    /// `/tool-output/{stash_id}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(type = "number"))]
    pub full_len: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stash_id: Option<String>,
}

/// A file attached to a user message, as the server recorded it (the upload's name in the
/// chat, its sniffed type, size and picture size).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Attachment {
    pub name: String,
    pub mime_type: String,
    #[cfg_attr(test, ts(type = "number"))]
    pub size: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(type = "number"))]
    pub width: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(type = "number"))]
    pub height: Option<i64>,
    /// A preview exists (`?preview=true`).
    #[serde(default)]
    pub preview: bool,
}

/// The type written when an attachment's record does not say (an imported transcript's).
pub const UNKNOWN_MIME_TYPE: &str = "application/octet-stream";

/// A message's `attachments` as stored or imported: each entry an [`Attachment`]; an entry that
/// only names its file (an imported transcript's other shapes: a bare name, or an object with
/// `name` and fields of its own) keeps its name with an unknown type and size. Entries naming
/// no file, and anything but a list, are left out (they never named an upload).
pub fn attachments_of(value: Value) -> Option<Vec<Attachment>> {
    let Value::Array(items) = value else { return None };
    let read = |item: Value| -> Option<Attachment> {
        let name = match &item {
            Value::String(name) => name.clone(),
            Value::Object(map) => map.get("name").and_then(Value::as_str)?.to_owned(),
            _ => return None,
        };
        serde_json::from_value(item).ok().or(Some(Attachment {
            name,
            mime_type: UNKNOWN_MIME_TYPE.to_owned(),
            size: 0,
            width: None,
            height: None,
            preview: false,
        }))
    };
    Some(items.into_iter().filter_map(read).collect())
}

fn read_attachments<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Attachment>>, D::Error> {
    Ok(attachments_of(Value::deserialize(d)?))
}

/// A card the owner answers: clarifying questions, or permission to use a tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct QuestionCard {
    pub question_id: QuestionId,
    #[serde(flatten)]
    pub card: Card,
}

/// What a card asks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Card {
    Question {
        questions: Vec<QuestionItem>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answers: Option<Choices>,
    },
    Approval {
        tool: String,
        /// A one-line summary of the tool's input.
        #[serde(default, deserialize_with = "text_or_json")]
        input: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answers: Option<ApprovalAnswers>,
    },
    /// The plan the agent proposes in plan mode (Claude's ExitPlanMode, a Codex plan turn's
    /// answer), Markdown. Approving it (as written, or edited: `answers.plan`) lets the same
    /// turn carry it out; denying sends the reason back and the agent keeps planning.
    Plan {
        plan: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answers: Option<ApprovalAnswers>,
    },
    /// Secure input: the agent asks the owner for a secret, which the owner types into the
    /// card and the server stores sealed — as app `app_id`'s secret `name`, or as connector
    /// `connector_id`'s credential. The value is never on the card, in the transcript or in the
    /// agent's context: the turn learns only the outcome.
    SecureInput {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        app_id: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        connector_id: Option<i64>,
        /// The app's or the connector's name, as the owner knows it.
        target_name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answers: Option<SecretAnswers>,
    },
}

/// What became of a secure-input card (never the value).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(deny_unknown_fields)]
pub struct SecretAnswers {
    pub secret: SecretStatus,
}

/// The owner stored the secret, or declined to give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum SecretStatus {
    Stored,
    Declined,
}

/// One clarifying question.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct QuestionItem {
    /// The provider's id for the question (Codex), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    #[serde(default)]
    pub options: Vec<QuestionOption>,
    /// Rows stored before the casing fix say `multiSelect`.
    #[serde(default, alias = "multiSelect")]
    pub multi_select: bool,
}

/// One choice of a question.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct QuestionOption {
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Question text → the chosen label (a list for multi-select questions).
pub type Choices = BTreeMap<String, Choice>;

/// The answer to one question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(untagged)]
pub enum Choice {
    One(String),
    Many(Vec<String>),
}

/// The owner's decision on an approval card.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(deny_unknown_fields)]
pub struct ApprovalAnswers {
    pub decision: Decision,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A plan card approved with edits: the plan as the owner rewrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
}

/// Allow once, allow this tool for the rest of the chat, or deny.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allow,
    AllowChat,
    Deny,
}

/// The answers to a card, of either kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(untagged)]
pub enum Answers {
    Approval(ApprovalAnswers),
    /// Before `Choices`, which would take `{"secret": "stored"}` as a question's choice.
    Secret(SecretAnswers),
    Choices(Choices),
}

impl Block {
    /// True for a text block.
    pub fn is_text(&self) -> bool {
        matches!(self, Block::Text { .. })
    }
}

impl QuestionCard {
    /// Records the owner's answers on the card (answers of the other kind are ignored).
    pub fn set_answers(&mut self, given: &Answers) {
        match (&mut self.card, given) {
            (Card::Question { answers, .. }, Answers::Choices(choices)) => *answers = Some(choices.clone()),
            (Card::Approval { answers, .. } | Card::Plan { answers, .. }, Answers::Approval(approval)) => {
                *answers = Some(approval.clone())
            }
            (Card::SecureInput { answers, .. }, Answers::Secret(secret)) => *answers = Some(secret.clone()),
            _ => {}
        }
    }
}

impl Message {
    /// An assistant message from its blocks: `content` is the text blocks joined.
    pub fn assistant(ts: i64, blocks: Vec<Block>) -> Self {
        let content = blocks
            .iter()
            .filter_map(|b| match b {
                Block::Text { content, .. } if !content.is_empty() => Some(content.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n\n");
        Self {
            role: Role::Assistant,
            content,
            ts,
            cid: None,
            hidden: false,
            blocks: Some(blocks),
            run_id: None,
            timezone: None,
            attachments: None,
            agent_context: None,
            live: false,
            usage: None,
            version: None,
        }
    }

    /// What the agent reads of a user message: its text, plus the context an embedding app
    /// attached to it (kept out of the visible text).
    pub fn agent_text(&self) -> String {
        match self.agent_context.as_deref().filter(|c| !c.is_empty()) {
            Some(context) => format!("{}\n\n{context}", self.content),
            None => self.content.clone(),
        }
    }

    /// True when the message has blocks to show.
    pub fn has_blocks(&self) -> bool {
        self.blocks.as_ref().is_some_and(|b| !b.is_empty())
    }

    /// Validates one message of an imported transcript (`messages[idx]` of `POST /api/chats`)
    /// and fills in what may be left out: `content` (empty) and `ts` (`now + idx`). Fields the
    /// protocol does not know are dropped.
    pub fn import(message: ImportedMessage<'_>, now: i64, idx: usize) -> Result<Self, InvalidMessage> {
        let bad = |what: String| InvalidMessage(format!("messages[{idx}].{what}"));
        let role = match message.role.map(|r| (r.get(), read_str(r))) {
            Some(("\"user\"", _)) => Role::User,
            Some(("\"assistant\"", _)) => Role::Assistant,
            Some((_, Ok(Some(r)))) if r == "user" => Role::User,
            Some((_, Ok(Some(r)))) if r == "assistant" => Role::Assistant,
            _ => return Err(bad("role must be \"user\" or \"assistant\"".into())),
        };
        let content =
            read_str_field(message.content).map_err(|()| bad("content must be a string".into()))?.unwrap_or_default();
        let ts = match message.ts {
            Some(raw) => serde_json::from_str::<i64>(raw.get())
                .ok()
                .filter(|t| *t > 0)
                .ok_or_else(|| bad("ts must be a positive integer".into()))?,
            None => now + i64::try_from(idx).unwrap_or(0),
        };
        let cid_error = || bad(format!("cid must be a string of 1 to {} characters", super::ids::MAX_CID_CHARS));
        let cid = match read_str_field(message.cid).map_err(|()| cid_error())? {
            None => None,
            Some(c) => Some(Cid::parse(&c).ok_or_else(cid_error)?),
        };
        let blocks = match message.blocks.map(RawValue::get) {
            None | Some("null") => None,
            Some(raw) if raw.starts_with('[') => Some(
                serde_json::from_str::<Vec<Block>>(raw)
                    .map_err(|e| bad(format!("blocks are not valid message blocks: {e}")))?,
            ),
            Some(_) => return Err(bad("blocks must be a list".into())),
        };
        // Optional text: anything but a string is ignored.
        let text = |raw: Option<&RawValue>| read_str_field(raw).ok().flatten();
        Ok(Self {
            role,
            content,
            ts,
            cid,
            hidden: message.hidden.is_some_and(|h| h.get() == "true"),
            blocks,
            run_id: text(message.run_id).map(RunId::from),
            timezone: text(message.timezone),
            attachments: message
                .attachments
                .and_then(|a| serde_json::from_str::<Value>(a.get()).ok())
                .and_then(attachments_of),
            agent_context: text(message.agent_context),
            live: false,
            usage: None,
            version: None,
        })
    }
}

/// One message of an imported transcript as it was sent: each known field kept as its raw JSON
/// (borrowed from the request body, `null` included), read and checked by [`Message::import`].
/// Parsing straight into this costs no allocation per field; unknown fields are skipped.
#[derive(Debug, Deserialize)]
pub struct ImportedMessage<'a> {
    #[serde(borrow, default, deserialize_with = "raw_field")]
    role: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_field")]
    content: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_field")]
    ts: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_field")]
    cid: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_field")]
    hidden: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_field")]
    blocks: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_field")]
    run_id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_field")]
    timezone: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_field")]
    attachments: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_field")]
    agent_context: Option<&'a RawValue>,
}

/// A present field as its raw JSON (`null` stays `Some("null")`, unlike a plain `Option`).
fn raw_field<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// A raw JSON string's text; `Ok(None)` for `null`, `Err` for any other JSON.
fn read_str(raw: &RawValue) -> Result<Option<String>, ()> {
    match raw.get() {
        "null" => Ok(None),
        text if text.starts_with('"') => serde_json::from_str::<String>(text).map(Some).map_err(|_| ()),
        _ => Err(()),
    }
}

/// [`read_str`] of a field that may be missing.
fn read_str_field(raw: Option<&RawValue>) -> Result<Option<String>, ()> {
    raw.map_or(Ok(None), read_str)
}

/// A message of an imported transcript that cannot be stored, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidMessage(pub String);

impl std::fmt::Display for InvalidMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the owner sends; it becomes a user [`Message`] when the writer stamps its time.
#[derive(Clone, Debug, PartialEq)]
pub struct UserInput {
    pub cid: Cid,
    pub content: String,
    pub hidden: bool,
    pub timezone: Option<String>,
    pub attachments: Option<Vec<Attachment>>,
    /// Text for the agent only (an embedding app's `<app_state>`).
    pub agent_context: Option<String>,
}

impl UserInput {
    /// Plain words from the owner.
    pub fn text(cid: Cid, content: String) -> Self {
        Self { cid, content, hidden: false, timezone: None, attachments: None, agent_context: None }
    }

    /// The stored message, sent at `ts`.
    pub fn at(&self, ts: i64) -> Message {
        Message {
            role: Role::User,
            content: self.content.clone(),
            ts,
            cid: Some(self.cid.clone()),
            hidden: self.hidden,
            blocks: None,
            run_id: None,
            timezone: self.timezone.clone(),
            attachments: self.attachments.clone(),
            agent_context: self.agent_context.clone(),
            live: false,
            usage: None,
            version: None,
        }
    }
}

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

/// Tool inputs are one-line text; a stored object (an import from elsewhere) becomes its JSON.
fn text_or_json<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn import(v: Value) -> Result<Message, InvalidMessage> {
        let text = v.to_string();
        let fields: ImportedMessage<'_> = serde_json::from_str(&text).expect("an object");
        Message::import(fields, 1_000, 2)
    }

    #[test]
    fn imports_fill_defaults_and_refuse_what_cannot_be_shown() {
        let m = import(json!({"role": "user"})).expect("minimal");
        assert_eq!((m.content.as_str(), m.ts), ("", 1_002));
        let m = import(json!({"role": "assistant", "content": "hi", "ts": 5, "extra": 1,
            "blocks": [{"type": "text", "content": "hi"}, {"type": "tool", "tool": "Bash", "input": {"command": "ls"}}]}))
        .expect("lenient blocks");
        assert_eq!(m.blocks.as_ref().map(Vec::len), Some(2));
        assert_eq!(serde_json::to_value(&m).expect("json").get("extra"), None, "unknown fields are dropped");
        let m = import(
            json!({"role": "user", "content": null, "hidden": true, "cid": "c-1", "attachments": [{"name": "a"}],
            "timezone": 5, "run_id": null, "agent_context": "state", "blocks": null}),
        )
        .expect("nulls and ignored kinds");
        assert_eq!((m.content.as_str(), m.hidden, m.cid.as_deref()), ("", true, Some("c-1")));
        assert_eq!((m.timezone, m.run_id, m.agent_context.as_deref()), (None, None, Some("state")));
        let a = Attachment {
            name: "a".into(),
            mime_type: UNKNOWN_MIME_TYPE.into(),
            size: 0,
            width: None,
            height: None,
            preview: false,
        };
        assert_eq!(m.attachments, Some(vec![a]), "an imported entry that only names its file keeps its name");
        let escaped: ImportedMessage<'_> =
            serde_json::from_str(r#"{"role": "\u0075ser", "content": "caf\u00e9"}"#).expect("fields");
        let m = Message::import(escaped, 1_000, 0).expect("escapes");
        assert_eq!((m.role, m.content.as_str()), (Role::User, "café"));
        assert!(!import(json!({"role": "user", "hidden": "yes"})).expect("hidden").hidden);
        for (bad, needle) in [
            (json!({"role": "robot"}), "messages[2].role"),
            (json!({"content": "no role"}), "messages[2].role"),
            (json!({"role": "user", "ts": null}), "ts must be"),
            (json!({"role": "user", "ts": 1.5}), "ts must be"),
            (json!({"role": "user", "cid": 7}), "cid must be"),
            (json!({"role": "user", "content": 3}), "content must be a string"),
            (json!({"role": "user", "ts": -1}), "ts must be"),
            (json!({"role": "user", "cid": ""}), "cid must be"),
            (json!({"role": "user", "blocks": {}}), "blocks must be a list"),
            (json!({"role": "user", "blocks": [{"type": "hologram"}]}), "blocks are not valid"),
        ] {
            let err = import(bad).expect_err("refused");
            assert!(err.0.contains(needle), "{err}");
        }
    }

    #[test]
    fn cards_read_both_casings_and_write_snake_case() {
        let old = json!({"type": "question", "question_id": "q1", "kind": "question",
            "questions": [{"question": "Which?", "header": "H", "options": [{"label": "A"}], "multiSelect": true}]});
        let block: Block = serde_json::from_value(old).expect("old row");
        let text = serde_json::to_string(&block).expect("json");
        assert!(text.contains("\"multi_select\":true") && !text.contains("multiSelect"), "{text}");
        let approval = json!({"type": "question", "question_id": "q2", "kind": "approval", "tool": "Bash",
            "input": "rm x", "reason": null, "answers": {"decision": "allow_chat"}});
        let Block::Question(card) = serde_json::from_value::<Block>(approval).expect("approval") else {
            panic!("a card");
        };
        assert!(matches!(
            card.card,
            Card::Approval { answers: Some(ApprovalAnswers { decision: Decision::AllowChat, .. }), .. }
        ));
    }

    #[test]
    fn answers_of_each_kind_parse_and_land_on_their_card() {
        let choices: Answers = serde_json::from_value(json!({"Which?": "A", "Sizes?": ["S", "M"]})).expect("choices");
        let approval: Answers = serde_json::from_value(json!({"decision": "deny", "reason": "no"})).expect("approval");
        assert!(matches!(approval, Answers::Approval(_)));
        let mut card =
            QuestionCard { question_id: "q1".into(), card: Card::Question { questions: Vec::new(), answers: None } };
        card.set_answers(&approval);
        assert!(matches!(card.card, Card::Question { answers: None, .. }), "the wrong kind is ignored");
        card.set_answers(&choices);
        assert!(
            matches!(&card.card, Card::Question { answers: Some(a), .. } if a["Sizes?"] == Choice::Many(vec!["S".into(), "M".into()]))
        );
    }

    #[test]
    fn a_secure_input_answer_is_its_own_kind_and_never_a_question_choice() {
        let stored: Answers = serde_json::from_value(json!({"secret": "stored"})).expect("secret");
        assert_eq!(stored, Answers::Secret(SecretAnswers { secret: SecretStatus::Stored }));
        let other: Answers = serde_json::from_value(json!({"secret": "hunter2"})).expect("a question's choice");
        assert!(matches!(other, Answers::Choices(_)), "only stored/declined are a secure-input answer");
        let card =
            json!({"question_id": "q1", "kind": "secure_input", "name": "K", "app_id": 3, "target_name": "Weather"});
        let mut card: QuestionCard = serde_json::from_value(card).expect("card");
        card.set_answers(&stored);
        let text = serde_json::to_string(&card).expect("json");
        assert!(text.contains(r#""answers":{"secret":"stored"}"#), "{text}");
    }
}
