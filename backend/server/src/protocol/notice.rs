//! Notifications on the wire: their kinds, the JSON a push delivers to the service worker
//! ([`PushPayload`]) and a stored notification as the centre lists it ([`NotificationItem`]).

use serde::{Deserialize, Serialize};

use super::ids::{ChatId, QuestionId};

/// What kind of thing happened; each kind but `test` has its own switch in Settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum NotificationKind {
    /// A turn finished while nobody watched its chat.
    TurnDone,
    /// A turn failed while nobody watched its chat.
    TurnFailed,
    /// The agent waits on a question or an approval (always pushed, even while watched).
    Question,
    /// The agent called `mobius notify`.
    Agent,
    /// A mini-app sent one (`POST /api/notifications/send` with its token).
    App,
    /// A scheduled run.
    Schedule,
    /// The owner's test from Settings (no switch).
    Test,
}

impl NotificationKind {
    /// Every kind with a switch, in the order Settings shows them.
    pub const SWITCHABLE: [NotificationKind; 6] = [
        NotificationKind::TurnDone,
        NotificationKind::TurnFailed,
        NotificationKind::Question,
        NotificationKind::Agent,
        NotificationKind::App,
        NotificationKind::Schedule,
    ];

    /// The stored (and wire) name.
    pub fn as_str(self) -> &'static str {
        match self {
            NotificationKind::TurnDone => "turn_done",
            NotificationKind::TurnFailed => "turn_failed",
            NotificationKind::Question => "question",
            NotificationKind::Agent => "agent",
            NotificationKind::App => "app",
            NotificationKind::Schedule => "schedule",
            NotificationKind::Test => "test",
        }
    }

    /// Parses a stored name.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::SWITCHABLE.into_iter().chain([NotificationKind::Test]).find(|k| k.as_str() == raw)
    }
}

impl TryFrom<String> for NotificationKind {
    type Error = String;
    fn try_from(raw: String) -> Result<Self, String> {
        Self::parse(&raw).ok_or_else(|| format!("unknown notification kind {raw:?}"))
    }
}

/// A button on a notification: answers the question it came with, or opens `target`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct NotificationAction {
    pub action: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// Exactly what a device receives (decrypted) in a push.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PushPayload {
    /// The stored notification's id.
    pub id: String,
    pub title: String,
    pub body: Option<String>,
    pub icon: Option<String>,
    /// The deep link a tap opens (`/shell/?chat=…`, `/shell/?app=…`, `/`).
    pub target: Option<String>,
    pub actions: Vec<NotificationAction>,
    pub kind: NotificationKind,
    /// A newer notification with the same tag replaces an older one on the device.
    pub tag: Option<String>,
    /// The question the buttons answer (all three set, or none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<ChatId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question_id: Option<QuestionId>,
    /// Single-use, short-lived, good for this question only (`POST /api/push/action`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_token: Option<String>,
}

/// A stored notification, as `GET /api/notifications` lists it (times are ISO 8601 UTC).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct NotificationItem {
    pub id: String,
    pub kind: NotificationKind,
    pub source_type: String,
    pub source_id: Option<String>,
    pub title: String,
    pub body: Option<String>,
    pub icon: Option<String>,
    pub target: Option<String>,
    pub actions: Option<Vec<NotificationAction>>,
    pub sent_at: String,
    pub clicked_at: Option<String>,
    pub read_at: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn kinds_round_trip() {
        for kind in NotificationKind::SWITCHABLE {
            assert_eq!(NotificationKind::parse(kind.as_str()), Some(kind));
            assert_eq!(serde_json::to_value(kind).expect("json"), json!(kind.as_str()));
        }
        assert_eq!(NotificationKind::parse("nope"), None);
    }

    #[test]
    fn only_a_question_carries_a_token() {
        let mut payload = PushPayload {
            id: "n1".into(),
            title: "t".into(),
            body: None,
            icon: None,
            target: None,
            actions: Vec::new(),
            kind: NotificationKind::Question,
            tag: None,
            chat_id: None,
            question_id: None,
            action_token: None,
        };
        let plain = serde_json::to_value(&payload).expect("json");
        assert!(plain.get("action_token").is_none() && plain.get("question_id").is_none());
        payload.chat_id = Some("c".into());
        payload.action_token = Some("tok".into());
        let value = serde_json::to_value(&payload).expect("json");
        assert_eq!((value["chat_id"].clone(), value["action_token"].clone()), (json!("c"), json!("tok")));
    }
}
