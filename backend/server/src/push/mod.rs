//! Notifications: what the owner is told, stored in the notification centre and pushed to
//! every subscribed device with Web Push (RFC 8030/8291/8292).
//!
//! Anyone who wants to tell the owner something builds a [`Notice`] and calls
//! [`Push::notify`]. That never waits: the notice goes into a bounded queue and one worker
//! task ([`worker`]) stores it (through the writer), decides whether to push (per-kind
//! switches, presence), encrypts it per device and sends it. A turn's commit path pays only
//! for the enqueue.
//!
//! - [`crypto`]: the VAPID key and `aes128gcm` encryption, on `ring`.
//! - [`presence`]: which chats a device has open and visible right now.
//! - [`actions`]: single-use tokens that let the service worker answer one question.
//! - [`routes`]: `/api/push/*` and `/api/notifications/*`.

pub mod actions;
pub mod crypto;
pub mod presence;
pub mod routes;
mod worker;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::warn;

pub use routes::router;

use crate::config::Config;
use crate::db::Db;
use crate::error::Result;
use crate::writer::WriterHandle;

/// Notices waiting for the worker; beyond this, new ones are dropped (and logged).
pub const MAX_QUEUED_NOTICES: usize = 64;
/// Notifications one sender (an app, an agent run, the owner) may send per [`SEND_WINDOW`].
pub const MAX_SENDS_PER_WINDOW: usize = 10;
/// The rate limit's window.
pub const SEND_WINDOW: Duration = Duration::from_secs(60);
/// Senders tracked by the rate limiter at once (the oldest are forgotten first).
const MAX_RATE_KEYS: usize = 256;
/// Longest title and body kept (characters); longer ones are cut with an ellipsis.
pub const MAX_TITLE_CHARS: usize = 120;
pub const MAX_BODY_CHARS: usize = 600;

/// What kind of thing happened; each kind has its own switch in Settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
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
    /// A scheduled run (issue 19: failed runs).
    Schedule,
    /// The owner's test from Settings (no switch).
    Test,
}

impl Kind {
    /// Every kind with a switch, in the order Settings shows them.
    pub const SWITCHABLE: [Kind; 6] =
        [Kind::TurnDone, Kind::TurnFailed, Kind::Question, Kind::Agent, Kind::App, Kind::Schedule];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::TurnDone => "turn_done",
            Kind::TurnFailed => "turn_failed",
            Kind::Question => "question",
            Kind::Agent => "agent",
            Kind::App => "app",
            Kind::Schedule => "schedule",
            Kind::Test => "test",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::SWITCHABLE.into_iter().chain([Kind::Test]).find(|k| k.as_str() == raw)
    }

    /// Only news about a chat the owner is not looking at is worth a push.
    fn suppressed_while_watched(self) -> bool {
        matches!(self, Kind::TurnDone | Kind::TurnFailed | Kind::Agent)
    }

    /// The push service's `Urgency` (RFC 8030 §5.3).
    fn urgency(self) -> &'static str {
        match self {
            Kind::Question => "high",
            Kind::TurnFailed | Kind::TurnDone | Kind::Test => "normal",
            Kind::Agent | Kind::App | Kind::Schedule => "normal",
        }
    }

    /// How long the push service keeps an undelivered push (`TTL`, RFC 8030 §5.2).
    fn ttl_secs(self) -> u32 {
        match self {
            // A question is only answerable while its action token lives.
            Kind::Question => actions::ACTION_TOKEN_TTL.as_secs() as u32,
            Kind::Test => 300,
            _ => 24 * 3600,
        }
    }
}

/// Who a notification is about: decides its deep link, its push `Topic` and its attribution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A chat (turns, questions, the agent's own notices).
    Chat(String),
    /// A mini-app (its id).
    App(i64),
    /// A schedule (its id), optionally of an app.
    Schedule { id: String, app_id: Option<i64> },
    /// The owner, or a caller that named no source.
    Owner { source_type: String, source_id: Option<String> },
}

impl Source {
    /// `(source_type, source_id)` as stored and listed.
    fn attribution(&self) -> (String, Option<String>) {
        match self {
            Source::Chat(id) => ("chat".into(), Some(id.clone())),
            Source::App(id) => ("app".into(), Some(id.to_string())),
            Source::Schedule { id, .. } => ("schedule".into(), Some(id.clone())),
            Source::Owner { source_type, source_id } => (source_type.clone(), source_id.clone()),
        }
    }

    /// The canonical deep link (`/shell/?chat=…` or `/shell/?app=…`).
    fn default_target(&self) -> Option<String> {
        match self {
            Source::Chat(id) => Some(format!("/shell/?chat={id}")),
            Source::App(id) | Source::Schedule { app_id: Some(id), .. } => Some(format!("/shell/?app={id}")),
            Source::Schedule { app_id: None, .. } | Source::Owner { .. } => None,
        }
    }

    /// The push `Topic` key: a newer push about the same chat or app replaces an older one
    /// the device has not shown yet.
    fn topic_key(&self) -> Option<String> {
        match self {
            Source::Chat(id) => Some(format!("chat:{id}")),
            Source::App(id) => Some(format!("app:{id}")),
            Source::Schedule { id, .. } => Some(format!("schedule:{id}")),
            Source::Owner { .. } => None,
        }
    }

    /// The app this is about.
    fn app(&self) -> Option<i64> {
        match self {
            Source::App(id) | Source::Schedule { app_id: Some(id), .. } => Some(*id),
            _ => None,
        }
    }

    /// The chat this is about, for presence.
    fn chat(&self) -> Option<&str> {
        match self {
            Source::Chat(id) => Some(id),
            Source::Owner { source_id: Some(id), .. } => Some(id),
            _ => None,
        }
    }
}

/// A button on the notification (`{action, title}`, plus where it leads).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NoticeAction {
    pub action: String,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// A question the notification can answer: the answers each of its buttons gives.
#[derive(Clone, Debug)]
pub struct Decision {
    pub chat_id: String,
    pub question_id: String,
    /// `(action, answers)` per button, in order (at most two).
    pub choices: Vec<(NoticeAction, Value)>,
}

/// Something to tell the owner. Build one and hand it to [`Push::notify`].
#[derive(Clone, Debug)]
pub struct Notice {
    pub kind: Kind,
    pub title: String,
    pub body: Option<String>,
    pub source: Source,
    /// Where a tap leads; defaults to the source's deep link.
    pub target: Option<String>,
    pub icon: Option<String>,
    /// Buttons that only open a place (from `POST /api/notifications/send`).
    pub actions: Vec<NoticeAction>,
    /// A question the buttons answer from the notification itself.
    pub decision: Option<Decision>,
    /// The id, when the notification is already stored (the send route stores it in-request).
    pub stored_id: Option<String>,
}

impl Notice {
    /// A notice of `kind` about `source`.
    pub fn new(kind: Kind, source: Source, title: impl Into<String>, body: Option<String>) -> Self {
        Self {
            kind,
            title: clip(&title.into(), MAX_TITLE_CHARS),
            body: body.map(|b| clip(&b, MAX_BODY_CHARS)),
            source,
            target: None,
            icon: None,
            actions: Vec::new(),
            decision: None,
            stored_id: None,
        }
    }
}

/// Cuts `text` to `max` characters, ending with an ellipsis when cut.
pub fn clip(text: &str, max: usize) -> String {
    let text = text.trim();
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}…", text[..cut].trim_end()),
    }
}

/// The push module's shared state (one per server, in `AppState::push`).
pub struct Push {
    shared: Arc<Shared>,
    queue: mpsc::Sender<Notice>,
    limits: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl std::fmt::Debug for Push {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Push").finish_non_exhaustive()
    }
}

/// What routes and the worker share.
pub(crate) struct Shared {
    pub vapid: crypto::Vapid,
    /// The VAPID `sub` claim: `mailto:admin@<public host>`.
    pub subject: String,
    pub presence: presence::Presence,
    pub actions: actions::ActionTokens,
    /// Test configurations may push to `http://127.0.0.1` (the tests' push service):
    /// `Config::push_allow_loopback`.
    pub allow_loopback: bool,
}

impl Push {
    /// Loads (or creates) the VAPID key under `DATA_DIR/push/` and starts the worker.
    pub fn start(config: &Config, db: Db, writer: WriterHandle) -> Result<Self> {
        let vapid = crypto::Vapid::load_or_create(&config.data_dir.join("push").join("vapid.pem"))?;
        let host = config.public_origin.authority().split(':').next().unwrap_or("localhost").to_owned();
        let shared = Arc::new(Shared {
            vapid,
            subject: format!("mailto:admin@{host}"),
            presence: presence::Presence::default(),
            actions: actions::ActionTokens::default(),
            allow_loopback: config.push_allow_loopback,
        });
        if config.push_allow_loopback {
            warn!("MOBIUS_PUSH_ALLOW_LOOPBACK is set: pushes may go to plain-http loopback endpoints (tests only)");
        }
        let (queue, rx) = mpsc::channel(MAX_QUEUED_NOTICES);
        tokio::spawn(worker::run(rx, shared.clone(), db, writer));
        Ok(Self { shared, queue, limits: Mutex::new(HashMap::new()) })
    }

    /// Tells the owner: stores and pushes `notice` off the caller's path. Never waits;
    /// `false` when the queue is full (the notice is dropped and logged).
    pub fn notify(&self, notice: Notice) -> bool {
        match self.queue.try_send(notice) {
            Ok(()) => true,
            Err(e) => {
                warn!(error = %e, "notification queue full; a notification was dropped");
                false
            }
        }
    }

    /// A turn ended on its own (not stopped) and nothing queued follows it: "done" with the
    /// reply's last paragraph, or "failed" with the error. Pushed only while no device
    /// watches the chat.
    pub fn turn_ended(&self, chat_id: &str, failed: bool, reply: &str, error: Option<&str>) -> bool {
        let (kind, body) = if failed {
            (Kind::TurnFailed, format!("Failed: {}", error.unwrap_or("the turn did not finish")))
        } else {
            let last = reply.rsplit("\n\n").map(str::trim).find(|p| !p.is_empty()).unwrap_or("The agent finished.");
            (Kind::TurnDone, last.to_owned())
        };
        self.notify(Notice::new(kind, Source::Chat(chat_id.to_owned()), "", Some(body)))
    }

    /// A question or approval card (`fields` as journaled: `kind`, `questions` or `tool`,
    /// `input`) waits for the owner. Always pushed; its buttons can answer it when it is an
    /// approval or one question with at most two options.
    pub fn question_waiting(&self, chat_id: &str, question_id: &str, fields: &Value) -> bool {
        let (body, choices) = decision_of(fields);
        let mut notice = Notice::new(Kind::Question, Source::Chat(chat_id.to_owned()), "", Some(body));
        notice.target = Some(format!("/shell/?chat={chat_id}&question={question_id}"));
        if !choices.is_empty() {
            notice.decision =
                Some(Decision { chat_id: chat_id.to_owned(), question_id: question_id.to_owned(), choices });
        }
        self.notify(notice)
    }

    /// The VAPID public key browsers subscribe with.
    pub fn public_key(&self) -> &str {
        self.shared.vapid.public_key()
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Counts a send by `key`; `Err(retry after secs)` once it sent [`MAX_SENDS_PER_WINDOW`]
    /// within [`SEND_WINDOW`].
    pub fn admit_send(&self, key: &str) -> std::result::Result<(), u64> {
        admit(&self.limits, key)
    }
}

fn admit(limits: &Mutex<HashMap<String, VecDeque<Instant>>>, key: &str) -> std::result::Result<(), u64> {
    {
        let now = Instant::now();
        let mut limits = limits.lock().unwrap_or_else(|p| p.into_inner());
        if !limits.contains_key(key) && limits.len() >= MAX_RATE_KEYS {
            limits.retain(|_, sent| sent.back().is_some_and(|t| now.duration_since(*t) < SEND_WINDOW));
            if limits.len() >= MAX_RATE_KEYS {
                return Err(SEND_WINDOW.as_secs());
            }
        }
        let sent = limits.entry(key.to_owned()).or_default();
        while sent.front().is_some_and(|t| now.duration_since(*t) >= SEND_WINDOW) {
            sent.pop_front();
        }
        if sent.len() >= MAX_SENDS_PER_WINDOW {
            let oldest = sent.front().copied().unwrap_or(now);
            return Err(SEND_WINDOW.saturating_sub(now.duration_since(oldest)).as_secs().max(1));
        }
        sent.push_back(now);
        Ok(())
    }
}

/// Buttons a notification can show (the platforms show two).
pub const MAX_NOTIFICATION_ACTIONS: usize = 2;

/// The text and the buttons (with the answers each gives) of a question or approval card.
fn decision_of(fields: &Value) -> (String, Vec<(NoticeAction, Value)>) {
    let button =
        |action: &str, title: &str| NoticeAction { action: action.into(), title: clip(title, 40), target: None };
    if fields.get("kind").and_then(Value::as_str) == Some("approval") {
        let tool = fields.get("tool").and_then(Value::as_str).unwrap_or("a tool");
        let input = fields.get("input").map(|i| match i {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        let body = match input.filter(|i| !i.is_empty() && i != "null") {
            Some(input) => format!("Allow {tool}? {input}"),
            None => format!("Allow {tool}?"),
        };
        let choices = vec![
            (button("allow", "Allow"), serde_json::json!({ "decision": "allow" })),
            (button("deny", "Deny"), serde_json::json!({ "decision": "deny" })),
        ];
        return (body, choices);
    }
    let questions = fields.get("questions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let text = |q: &Value| q.get("question").and_then(Value::as_str).unwrap_or_default().to_owned();
    let body =
        questions.first().map(text).filter(|t| !t.is_empty()).unwrap_or_else(|| "The agent asks you something.".into());
    let [question] = questions else { return (body, Vec::new()) };
    let options = question.get("options").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let multi = question.get("multiSelect").and_then(Value::as_bool).unwrap_or(false);
    if multi || options.is_empty() || options.len() > MAX_NOTIFICATION_ACTIONS {
        return (body, Vec::new());
    }
    let choices = options
        .iter()
        .enumerate()
        .filter_map(|(i, o)| {
            let label = o.get("label").and_then(Value::as_str)?;
            let mut answers = serde_json::Map::new();
            answers.insert(text(question), Value::String(label.to_owned()));
            Some((button(&format!("option-{i}"), label), Value::Object(answers)))
        })
        .collect();
    (body, choices)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_counts_characters_and_marks_the_cut() {
        assert_eq!(clip("  short ", 10), "short");
        assert_eq!(clip("ééééé", 3), "ééé…");
    }

    #[test]
    fn approvals_and_small_questions_get_buttons() {
        use serde_json::json;
        let (body, choices) = decision_of(&json!({"kind": "approval", "tool": "Bash", "input": "rm -rf build"}));
        assert_eq!(body, "Allow Bash? rm -rf build");
        assert_eq!(choices[1].1, json!({"decision": "deny"}));
        let q = json!({"kind": "question", "questions": [{"question": "Ship it?", "options": [{"label": "Yes"}, {"label": "No"}]}]});
        let (body, choices) = decision_of(&q);
        assert_eq!((body.as_str(), choices.len()), ("Ship it?", 2));
        assert_eq!(choices[1].0.action, "option-1");
        assert_eq!(choices[1].1, json!({"Ship it?": "No"}));
        let three = json!({"kind": "question", "questions": [{"question": "Pick", "options": [{"label": "a"}, {"label": "b"}, {"label": "c"}]}]});
        assert!(decision_of(&three).1.is_empty(), "three options: the tap opens the card");
        let multi = json!({"kind": "question", "questions": [{"question": "Pick", "multiSelect": true, "options": [{"label": "a"}]}]});
        assert!(decision_of(&multi).1.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn each_sender_gets_ten_a_minute() {
        let limits = Mutex::new(HashMap::new());
        let push_limits = |key: &str| admit(&limits, key);
        for _ in 0..MAX_SENDS_PER_WINDOW {
            assert!(push_limits("app:1").is_ok());
        }
        assert!(push_limits("app:1").is_err());
        assert!(push_limits("app:2").is_ok(), "another app has its own budget");
        tokio::time::advance(SEND_WINDOW).await;
        assert!(push_limits("app:1").is_ok());
    }

    #[test]
    fn kinds_round_trip() {
        for kind in Kind::SWITCHABLE {
            assert_eq!(Kind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(Kind::parse("nope"), None);
    }
}
