//! The chat protocol: every event, message and block the server stores, streams and serves,
//! as Rust types, plus the fold of events into the live message ([`LiveMessage`]).
//!
//! One casing on the wire: snake_case for every type tag, field and enum value (rows stored
//! before that rule read both). The PWA's `frontend/src/api/protocol.gen.ts` is generated
//! from these types (`typescript.rs`); a unit test fails when it is stale. Adding an event
//! kind or a block type is one edit here: the generated file, the journal and the live fold
//! follow from it (the compiler lists every `match` that must learn it).
//!
//! This module depends on nothing else in the crate.

mod detail;
mod event;
mod ids;
mod live;
mod message;
mod notice;
#[cfg(test)]
mod typescript;
mod usage;

use serde::{Deserialize, Serialize};

pub use detail::{AnswerTurn, ChatDetail, RegenerateResult, Rows, SendResult, StopResult};
pub use event::{ChatEvent, JournalEntry, RunStatus, StreamControl, StreamEvent, SystemEvent, TokenCounts, Waiting};
pub use ids::{ChatId, Cid, MAX_CHAT_ID_BYTES, MAX_CID_CHARS, QuestionId, RunId};
pub use live::LiveMessage;
pub use message::{
    Answers, ApprovalAnswers, Attachment, Block, Card, Choice, Choices, Decision, ErrorFix, FileChange, FileDiff,
    GoalPin, HandoffCard, HandoffReason, HandoffSource, ImportedMessage, InvalidMessage, Message, PlanCard, PlanCounts,
    PlanStatus, PlanStep, QuestionCard, QuestionItem, QuestionOption, Role, SecretAnswers, SecretStatus, ToolBlock,
    ToolStatus, UserInput, WebSource,
};
pub use notice::{NotificationAction, NotificationItem, NotificationKind, PushPayload};
pub use usage::{Pause, PauseKind, PlanWindow, RunUsage};

/// Which CLI runs a chat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Claude,
    Codex,
}

impl ProviderKind {
    /// Every provider, in display order.
    pub const ALL: [ProviderKind; 2] = [ProviderKind::Claude, ProviderKind::Codex];

    /// The lowercase id used in the API and the database.
    pub fn id(self) -> &'static str {
        match self {
            ProviderKind::Claude => "claude",
            ProviderKind::Codex => "codex",
        }
    }

    /// Human name.
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::Claude => "Claude Code",
            ProviderKind::Codex => "Codex",
        }
    }

    /// Parses an id.
    pub fn parse(id: &str) -> Option<Self> {
        match id {
            "claude" => Some(ProviderKind::Claude),
            "codex" => Some(ProviderKind::Codex),
            _ => None,
        }
    }
}

/// How permission requests from the agent are answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum ApprovalPolicy {
    /// Allow everything (the owner trusts their agent); the sandbox still applies.
    #[default]
    Full,
    /// Edits inside the workspace go ahead; anything else (other commands, the network,
    /// files outside the workspace) becomes a card the owner answers. Claude Code runs with
    /// `--permission-mode acceptEdits`; Codex with its `workspace-write` sandbox and
    /// `on-request` approvals.
    Workspace,
    /// Each request becomes a card the owner answers.
    Ask,
}

impl ApprovalPolicy {
    /// Parses the stored value.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "full" => Some(Self::Full),
            "workspace" => Some(Self::Workspace),
            "ask" => Some(Self::Ask),
            _ => None,
        }
    }

    /// The stored value.
    pub fn id(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Workspace => "workspace",
            Self::Ask => "ask",
        }
    }
}
