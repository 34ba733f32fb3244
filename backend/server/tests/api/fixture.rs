//! The shared fixture of real turns (`tests/fixtures/chat-turns.jsonl`, recorded from the
//! real CLIs by `tests/agents/fixtures.rs`): every recorded chat's journal, folded with the
//! server's live-message fold, gives exactly the transcript the server stored. The PWA's
//! reducer folds the same file in `frontend/src/chat/fixture.test.ts`.

use std::collections::BTreeMap;

use mobius::protocol::{ChatEvent, JournalEntry, Message};
use serde_json::Value;

use crate::helpers::fold_transcript;

/// Each chat's recorded journal and stored transcript, by chat id.
pub fn recorded() -> BTreeMap<String, (Vec<JournalEntry>, Vec<Message>)> {
    let path = mobius::config::checkout_root().join("tests/fixtures/chat-turns.jsonl");
    let text = std::fs::read_to_string(&path).expect("the recorded fixture");
    let mut chats: BTreeMap<String, (Vec<JournalEntry>, Vec<Message>)> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let row: Value = serde_json::from_str(line).expect("a JSON line");
        let chat = chats.entry(row["chat"].as_str().expect("chat").to_owned()).or_default();
        if let Some(event) = row.get("event") {
            chat.0.push(serde_json::from_value(event.clone()).unwrap_or_else(|e| panic!("{e}: {event}")));
        } else {
            chat.1 = serde_json::from_value(row["transcript"].clone()).expect("a transcript");
        }
    }
    chats
}

#[test]
fn recorded_turns_fold_into_the_stored_transcripts() {
    let chats = recorded();
    assert!(chats.len() >= 8, "both CLIs, four scenarios: {:?}", chats.keys());
    for (chat, (events, stored)) in &chats {
        assert_eq!(&fold_transcript(events), stored, "{chat}");
    }
}

#[test]
fn the_fixture_covers_what_a_turn_can_do() {
    let chats = recorded();
    for cli in ["claude", "codex"] {
        let kinds: Vec<&str> = chats
            .iter()
            .filter(|(chat, _)| chat.ends_with(cli))
            .flat_map(|(_, (events, _))| events.iter())
            .map(|e| match &e.event {
                ChatEvent::Thinking { .. } => "thinking",
                ChatEvent::Text { .. } | ChatEvent::TextFinal { .. } => "text",
                ChatEvent::ToolStart { .. } => "tool",
                ChatEvent::Question(_) => "question",
                ChatEvent::AnswersApplied { .. } => "answer",
                ChatEvent::SteeredIntoTurn { .. } => "steer",
                ChatEvent::Done { status, .. } => status.as_str(),
                _ => "other",
            })
            .collect();
        for needed in ["thinking", "text", "tool", "question", "answer", "steer", "completed", "stopped"] {
            assert!(kinds.contains(&needed), "{cli}: no {needed} in the fixture");
        }
    }
}
