//! What to tell the owner ([`Notice`]): its kind, what it is about ([`Source`]), its text and
//! buttons, and how a push service should treat it.

use std::time::Duration;

use crate::protocol::{
    Answers, ApprovalAnswers, Card, ChatId, Choice, Choices, Decision as Verdict, NotificationAction,
    NotificationKind as Kind, QuestionCard, QuestionId, RunStatus,
};

/// Longest title and body kept (characters); longer ones are cut with an ellipsis.
pub const MAX_TITLE_CHARS: usize = 120;
pub const MAX_BODY_CHARS: usize = 600;
/// Buttons a notification can show (the platforms show two).
pub const MAX_NOTIFICATION_ACTIONS: usize = 2;
/// Longest button title (characters).
pub const MAX_ACTION_TITLE_CHARS: usize = 40;
/// How long a test notification waits at the push service for an offline device.
const TEST_TTL: Duration = Duration::from_secs(300);
/// How long other news waits at the push service for an offline device.
const NEWS_TTL: Duration = Duration::from_secs(24 * 3600);

/// Who a notification is about: decides its deep link, its push `Topic` and its attribution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A chat (turns, questions, the agent's own notices).
    Chat(ChatId),
    /// A mini-app (its id).
    App(i64),
    /// A schedule (its id), optionally of an app.
    Schedule { id: String, app_id: Option<i64> },
    /// The owner, or a caller that named no source.
    Owner { source_type: String, source_id: Option<String> },
}

impl Source {
    /// `(source_type, source_id)` as stored and listed.
    pub fn attribution(&self) -> (String, Option<String>) {
        match self {
            Source::Chat(id) => ("chat".into(), Some(id.to_string())),
            Source::App(id) => ("app".into(), Some(id.to_string())),
            Source::Schedule { id, .. } => ("schedule".into(), Some(id.clone())),
            Source::Owner { source_type, source_id } => (source_type.clone(), source_id.clone()),
        }
    }

    /// The canonical deep link (`/shell/?chat=…` or `/shell/?app=…`).
    pub fn default_target(&self) -> Option<String> {
        match self {
            Source::Chat(id) => Some(format!("/shell/?chat={id}")),
            Source::App(id) | Source::Schedule { app_id: Some(id), .. } => Some(format!("/shell/?app={id}")),
            Source::Schedule { app_id: None, .. } | Source::Owner { .. } => None,
        }
    }

    /// The push `Topic` key: a newer push about the same chat or app replaces an older one
    /// the device has not shown yet.
    pub fn topic_key(&self) -> Option<String> {
        match self {
            Source::Chat(id) => Some(format!("chat:{id}")),
            Source::App(id) => Some(format!("app:{id}")),
            Source::Schedule { id, .. } => Some(format!("schedule:{id}")),
            Source::Owner { .. } => None,
        }
    }

    /// The app this is about.
    pub fn app(&self) -> Option<i64> {
        match self {
            Source::App(id) | Source::Schedule { app_id: Some(id), .. } => Some(*id),
            _ => None,
        }
    }

    /// The chat this is about, for presence and the title.
    pub fn chat(&self) -> Option<&str> {
        match self {
            Source::Chat(id) => Some(id),
            Source::Owner { source_id: Some(id), .. } => Some(id),
            _ => None,
        }
    }
}

/// A question the notification can answer: the answers each of its buttons gives.
#[derive(Clone, Debug)]
pub struct Decision {
    pub chat_id: ChatId,
    pub question_id: QuestionId,
    /// `(button, answers)`, in order (at most [`MAX_NOTIFICATION_ACTIONS`]).
    pub choices: Vec<(NotificationAction, Answers)>,
}

/// Something to tell the owner. Build one and hand it to `Push::notify`.
#[derive(Clone, Debug)]
pub struct Notice {
    pub kind: Kind,
    /// Empty: the chat's title (or "Möbius") is used.
    pub title: String,
    pub body: Option<String>,
    pub source: Source,
    /// Where a tap leads; defaults to the source's deep link.
    pub target: Option<String>,
    pub icon: Option<String>,
    /// Buttons that only open a place (from `POST /api/notifications/send`).
    pub actions: Vec<NotificationAction>,
    /// A question the buttons answer from the notification itself.
    pub decision: Option<Decision>,
    /// The id, when the notification is already stored (the send route stores it in-request).
    pub stored_id: Option<String>,
    /// The card a question notice is about (it is kept read, and not pushed, once answered).
    pub question: Option<QuestionId>,
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
            question: None,
        }
    }

    /// A turn of `chat` ended on its own: "done" with the reply's last paragraph, or "failed"
    /// with the error. `None` for a stop or an interruption (the owner knows, or nobody can act).
    pub fn turn_ended(chat: &ChatId, status: RunStatus, reply: &str, error: Option<&str>) -> Option<Self> {
        let (kind, body) = match status {
            RunStatus::Completed => {
                let last = reply
                    .rsplit("\n\n")
                    .map(plain_text)
                    .find(|p| !p.is_empty())
                    .unwrap_or_else(|| "The agent finished.".to_owned());
                (Kind::TurnDone, last)
            }
            RunStatus::Failed => (Kind::TurnFailed, format!("Failed: {}", error.unwrap_or("the turn did not finish"))),
            RunStatus::Stopped | RunStatus::Interrupted => return None,
        };
        Some(Self::new(kind, Source::Chat(chat.clone()), "", Some(body)))
    }

    /// A question or approval card waits in `chat`. Its buttons can answer it when it is an
    /// approval or one single-choice question with at most two options.
    pub fn question(chat: &ChatId, card: &QuestionCard) -> Self {
        let (body, choices) = decision_of(&card.card);
        let mut notice = Self::new(Kind::Question, Source::Chat(chat.clone()), "", Some(body));
        notice.target = Some(format!("/shell/?chat={chat}&question={}", card.question_id));
        notice.question = Some(card.question_id.clone());
        if !choices.is_empty() {
            notice.decision = Some(Decision { chat_id: chat.clone(), question_id: card.question_id.clone(), choices });
        }
        notice
    }
}

/// Only news about a chat the owner is not looking at is worth a push.
pub fn suppressed_while_watched(kind: Kind) -> bool {
    matches!(kind, Kind::TurnDone | Kind::TurnFailed | Kind::Agent)
}

/// The push service's `Urgency` (RFC 8030 §5.3).
pub fn urgency(kind: Kind) -> &'static str {
    match kind {
        Kind::Question => "high",
        Kind::TurnDone | Kind::TurnFailed | Kind::Test | Kind::Agent | Kind::App | Kind::Schedule => "normal",
    }
}

/// How long the push service keeps an undelivered push (`TTL`, RFC 8030 §5.2).
pub fn ttl(kind: Kind) -> Duration {
    match kind {
        // A question is only answerable while its action token lives.
        Kind::Question => super::actions::ACTION_TOKEN_TTL,
        Kind::Test => TEST_TTL,
        Kind::TurnDone | Kind::TurnFailed | Kind::Agent | Kind::App | Kind::Schedule => NEWS_TTL,
    }
}

/// A paragraph of Markdown as a notification shows it: the words without the marks (emphasis,
/// inline code, fences, headings, list and quote markers; a link or an image becomes its text),
/// on one line.
pub fn plain_text(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    for line in markdown.lines() {
        let line = line.trim();
        if line.starts_with("```") || line.starts_with("~~~") {
            continue;
        }
        let line = line.trim_start_matches('#').trim_start_matches('>').trim_start();
        let line = line
            .strip_prefix("- ")
            .or_else(|| line.strip_prefix("* "))
            .or_else(|| line.strip_prefix("+ "))
            .or_else(|| {
                let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                (digits > 0).then(|| line[digits..].strip_prefix(". ")).flatten()
            })
            .unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        inline_plain(line, &mut out);
    }
    out.trim().to_owned()
}

/// Appends one line of Markdown without its inline marks.
fn inline_plain(line: &str, out: &mut String) {
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        // `[text](url)` and `![alt](url)`: the text.
        let link = rest.strip_prefix("![").or_else(|| rest.strip_prefix('['));
        if let Some(inner) = link
            && let Some(close) = inner.find("](")
            && let Some(end) = inner[close + 2..].find(')')
        {
            out.push_str(&inner[..close]);
            rest = &inner[close + 2 + end + 1..];
            continue;
        }
        if rest.starts_with("**") || rest.starts_with("__") || rest.starts_with("~~") {
            rest = &rest[2..];
            continue;
        }
        // An asterisk against a word is emphasis; one between spaces is text ("2 * 3").
        let emphasis = c == '*'
            && (rest[1..].chars().next().is_some_and(|n| !n.is_whitespace())
                || out.chars().next_back().is_some_and(|p| !p.is_whitespace()));
        if c == '`' || emphasis {
            rest = &rest[1..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
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

fn button(action: &str, title: &str) -> NotificationAction {
    NotificationAction { action: action.into(), title: clip(title, MAX_ACTION_TITLE_CHARS), target: None }
}

/// The text and the buttons (with the answers each gives) of a question or approval card.
fn decision_of(card: &Card) -> (String, Vec<(NotificationAction, Answers)>) {
    let verdict = |decision| Answers::Approval(ApprovalAnswers { decision, reason: None, plan: None });
    match card {
        Card::Approval { tool, input, .. } => {
            let body =
                if input.trim().is_empty() { format!("Allow {tool}?") } else { format!("Allow {tool}? {input}") };
            let choices = vec![
                (button("allow", "Allow"), verdict(Verdict::Allow)),
                (button("deny", "Deny"), verdict(Verdict::Deny)),
            ];
            (body, choices)
        }
        Card::Plan { plan, .. } => {
            let first = plan.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
            let first = first.trim_start_matches('#').trim();
            let body = if first.is_empty() {
                "Approve the agent's plan?".to_owned()
            } else {
                format!("Approve the plan? {first}")
            };
            let choices = vec![
                (button("allow", "Approve"), verdict(Verdict::Allow)),
                (button("deny", "Reject"), verdict(Verdict::Deny)),
            ];
            (body, choices)
        }
        // The value is typed into the card in the app, never into a notification.
        Card::SecureInput { name, target_name, .. } => {
            (format!("The agent asks for a secret: {name} (for {target_name}). Open the chat to enter it."), Vec::new())
        }
        Card::Question { questions, .. } => {
            let body = questions
                .first()
                .map(|q| q.question.clone())
                .filter(|t| !t.trim().is_empty())
                .unwrap_or_else(|| "The agent asks you something.".into());
            let [question] = questions.as_slice() else { return (body, Vec::new()) };
            if question.multi_select || question.options.is_empty() || question.options.len() > MAX_NOTIFICATION_ACTIONS
            {
                return (body, Vec::new());
            }
            let choices = question
                .options
                .iter()
                .enumerate()
                .map(|(i, option)| {
                    let mut answers = Choices::new();
                    answers.insert(question.question.clone(), Choice::One(option.label.clone()));
                    (button(&format!("option-{i}"), &option.label), Answers::Choices(answers))
                })
                .collect();
            (body, choices)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn clipping_counts_characters_and_marks_the_cut() {
        assert_eq!(clip("  short ", 10), "short");
        assert_eq!(clip("ééééé", 3), "ééé…");
    }

    #[test]
    fn a_reply_notice_shows_its_last_paragraph_without_markdown() {
        assert_eq!(
            plain_text("**Done.** See `src/app.ts` and [the docs](https://example.com)."),
            "Done. See src/app.ts and the docs."
        );
        assert_eq!(plain_text("## Summary\n- one *item*\n- two\n1. three"), "Summary one item two three");
        assert_eq!(plain_text("```js\nconsole.log(1)\n```"), "console.log(1)");
        assert_eq!(plain_text("a_snake_case name, 2 * 3 = 6 ![shot](x.png)"), "a_snake_case name, 2 * 3 = 6 shot");
        let notice = Notice::turn_ended(
            &ChatId::from("c".to_owned()),
            RunStatus::Completed,
            "Intro.\n\n> **All** tests `pass`.",
            None,
        )
        .expect("a notice");
        assert_eq!(notice.body.as_deref(), Some("All tests pass."));
    }

    fn card(value: serde_json::Value) -> Card {
        serde_json::from_value(value).expect("card")
    }

    #[test]
    fn approvals_and_small_questions_get_buttons() {
        let (body, choices) = decision_of(&card(json!({"kind": "approval", "tool": "Bash", "input": "rm -rf build"})));
        assert_eq!(body, "Allow Bash? rm -rf build");
        assert_eq!(serde_json::to_value(&choices[1].1).expect("json"), json!({"decision": "deny"}));
        let q = card(
            json!({"kind": "question", "questions": [{"question": "Ship it?", "options": [{"label": "Yes"}, {"label": "No"}]}]}),
        );
        let (body, choices) = decision_of(&q);
        assert_eq!((body.as_str(), choices.len()), ("Ship it?", 2));
        assert_eq!(choices[1].0.action, "option-1");
        assert_eq!(serde_json::to_value(&choices[1].1).expect("json"), json!({"Ship it?": "No"}));
        let three = card(
            json!({"kind": "question", "questions": [{"question": "Pick", "options": [{"label": "a"}, {"label": "b"}, {"label": "c"}]}]}),
        );
        assert!(decision_of(&three).1.is_empty(), "three options: the tap opens the card");
        let multi = card(
            json!({"kind": "question", "questions": [{"question": "Pick", "multi_select": true, "options": [{"label": "a"}]}]}),
        );
        assert!(decision_of(&multi).1.is_empty());
        let plan = card(json!({"kind": "plan", "plan": "## Dark mode\n1. Add the toggle"}));
        let (body, choices) = decision_of(&plan);
        assert_eq!(body, "Approve the plan? Dark mode");
        let titles: Vec<&str> = choices.iter().map(|(a, _)| a.title.as_str()).collect();
        assert_eq!(titles, ["Approve", "Reject"]);
        assert_eq!(serde_json::to_value(&choices[0].1).expect("json"), json!({"decision": "allow"}));
    }

    #[test]
    fn only_turns_that_ended_on_their_own_notify() {
        let chat = ChatId::from("c1");
        let done = Notice::turn_ended(&chat, RunStatus::Completed, "Working.\n\nDone: green.\n\n", None).expect("done");
        assert_eq!((done.kind, done.body.as_deref()), (Kind::TurnDone, Some("Done: green.")));
        let failed = Notice::turn_ended(&chat, RunStatus::Failed, "", Some("boom")).expect("failed");
        assert_eq!(failed.body.as_deref(), Some("Failed: boom"));
        assert!(Notice::turn_ended(&chat, RunStatus::Stopped, "", None).is_none());
        assert!(Notice::turn_ended(&chat, RunStatus::Interrupted, "", None).is_none());
    }
}
