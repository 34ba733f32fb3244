//! Response bodies of the chat routes that carry protocol types.

use serde::ser::SerializeSeq;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

use super::ids::{Cid, RunId};
use super::message::Message;

/// Message rows as stored (raw JSON, never re-parsed), then optionally one typed row.
#[derive(Debug, Default)]
pub struct Rows<'a> {
    pub stored: Vec<&'a RawValue>,
    pub last: Option<Message>,
}

impl Serialize for Rows<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.stored.len() + usize::from(self.last.is_some())))?;
        for row in &self.stored {
            seq.serialize_element(row)?;
        }
        if let Some(last) = &self.last {
            seq.serialize_element(last)?;
        }
        seq.end()
    }
}

/// `GET /api/chats/{id}`: one page of the transcript, the queue and the run state, read in one
/// snapshot; `seq` is the stream cursor that matches it.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ChatDetail<'a> {
    pub id: &'a str,
    pub title: &'a str,
    #[cfg_attr(test, ts(as = "Option<super::ProviderKind>"))]
    pub provider: Option<&'a str>,
    #[cfg_attr(test, ts(as = "super::ApprovalPolicy"))]
    pub approval_policy: &'a str,
    /// The chat's own model (`None`: the owner's default for its provider, else the CLI's).
    pub model: Option<String>,
    /// The chat's own effort level (`None`: as for `model`).
    pub effort: Option<String>,
    /// Every turn plans first: the agent proposes a plan the owner approves before it acts.
    pub plan_mode: bool,
    /// Continues by itself after a usage limit (the per-chat switch).
    pub auto_resume: bool,
    /// When the parked chat continues by itself (unix ms).
    pub resume_at: Option<i64>,
    pub session_id: Option<&'a str>,
    /// Oldest first; on the newest page the running turn's live message is last (`live`).
    #[cfg_attr(test, ts(as = "Vec<Message>"))]
    pub messages: Rows<'a>,
    /// Index of `messages[0]` in the transcript.
    pub offset: i64,
    pub total: i64,
    pub has_more: bool,
    pub running: bool,
    #[cfg_attr(test, ts(as = "Option<RunId>"))]
    pub run_id: Option<&'a str>,
    /// The running turn has not started yet: it waits for a free agent.
    pub waiting: Option<super::Waiting>,
    #[cfg_attr(test, ts(as = "Option<super::QuestionId>"))]
    pub pending_question_id: Option<&'a str>,
    /// The queue, in order.
    #[cfg_attr(test, ts(as = "Vec<Message>"))]
    pub pending_messages: Rows<'a>,
    /// The goal pinned at the top of the chat (`/goal`), as stored.
    #[cfg_attr(test, ts(as = "Option<super::GoalPin>"))]
    pub goal: Option<&'a RawValue>,
    pub pinned_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    pub seq: i64,
}

/// How an answer reached the agent: the waiting turn took it, or (after a restart) it
/// started a new turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum AnswerTurn {
    Same,
    New,
}

/// `POST /api/chats/{id}/messages`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum SendResult {
    /// A turn started with these user rows (queued ones first, then the new one).
    Started {
        run_id: RunId,
        messages: Vec<Message>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer_turn: Option<AnswerTurn>,
    },
    /// A turn is running: the message waits in the queue at `position` (1-based).
    Queued { position: i64, message: Message, pending_messages: Vec<Message> },
    /// The running turn took the words.
    Steered { message: Message },
    /// This cid was already accepted; nothing new happened.
    Duplicate { message: Message, running: bool },
    /// The waiting turn took the answers.
    AnswerDelivered { answer_turn: AnswerTurn },
}

/// `POST /api/chats/{id}/regenerate`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RegenerateResult {
    /// A turn started; its reply becomes version `version` of the last reply (absent: there
    /// was no reply to keep, so this one is the first).
    Started {
        run_id: RunId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<u32>,
    },
    /// This regenerate was already accepted: the reply has `versions` versions now.
    Duplicate { versions: u32, running: bool },
}

/// `POST /api/chat/stop`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct StopResult {
    pub stopped: bool,
    /// The queued messages that were dropped (re-send them, as one message, to keep them).
    pub cleared_pending_cids: Vec<Cid>,
}
