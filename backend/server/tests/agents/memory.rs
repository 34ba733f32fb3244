//! Chat notes and memory with the real CLIs: a note is written once a chat has been idle (the
//! server's idle delay is set to one second), it titles the chat unless the owner named it,
//! and new chats' prompts carry it and the owner's memory file unless memory is off; an
//! owner's turn that starts during a note turn is not held up by it.

use serde_json::{Value, json};

use super::helpers::{TestApp, eventually_within};
use super::{Cli, REAL_CLI_WAIT, Rig};

const NOTE: &str = "TITLE: Garden planner\nDIGEST: Planned four raised garden beds.\nSUMMARY:\nThe owner plans a vegetable garden with four beds.";
const IDLE: [(&str, &str); 1] = [("MOBIUS_NOTE_IDLE_SECS", "1")];

/// Polls the chat's note until `done` holds for it.
async fn note_when(app: &TestApp, token: &str, chat: &str, done: impl Fn(&Value) -> bool) -> Value {
    eventually_within(REAL_CLI_WAIT, &format!("the note of {chat} gets there"), || async {
        let r = app.get(&format!("/api/chats/{chat}/note"), Some(token)).await;
        assert_eq!(r.status(), 200);
        let body: Value = r.json().await.expect("json");
        done(&body["note"]).then(|| body["note"].clone())
    })
    .await
}

/// A completed turn in `chat`.
async fn turn(app: &TestApp, token: &str, chat: &str, content: &str, cid: &str) {
    app.chat(token, chat).await;
    let mut stream = app.stream(token, chat, None).await;
    assert_eq!(app.send(token, chat, content, cid).await["status"], "started");
    let events = stream.until("done", 90).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{chat}");
}

/// The body of the model request that carried `words` as the owner's message.
fn body_with(rig: &Rig, words: &str) -> String {
    rig.mock
        .bodies()
        .into_iter()
        .find(|b| b.contains(words) && !b.contains("mobius-chat-note"))
        .unwrap_or_else(|| panic!("no model request carried {words:?}"))
}

pub async fn a_note_is_written_after_idle_titles_the_chat_and_primes_new_chats(cli: Cli) {
    let script = json!({ "steps": [{ "text": "Here is a plan for four beds." }], "default": { "text": "ok" }, "note_text": NOTE });
    let rig = Rig::start_with(cli, script, &IDLE).await;
    let Rig { app, token, mock, .. } = &rig;
    let r = reqwest::Client::new()
        .put(app.url("/api/memory/owner"))
        .bearer_auth(token)
        .json(&json!({ "content": "- The owner's cat is called Miso.\n" }))
        .send()
        .await
        .expect("put");
    assert_eq!(r.status(), 200);

    turn(app, token, "g", "help me plan my garden", "m1").await;
    let note = note_when(app, token, "g", |n| !n.is_null()).await;
    assert_eq!(note["digest"], "Planned four raised garden beds.");
    assert!(note["summary"].as_str().expect("summary").contains("four beds"), "{note}");
    assert_eq!((note["source_count"].as_i64(), note["by_owner"].as_bool()), (Some(2), Some(false)));
    assert_eq!(app.detail(token, "g").await["title"], "Garden planner", "the first note titles the chat");
    let requests = mock.requests().await;
    let asked = requests.iter().find(|r| r["kind"] == "note").expect("a note turn reached the model");
    if cli == Cli::Claude {
        assert_eq!(asked["tools"], json!([]), "a note turn offers no tools: {asked}");
        assert!(asked["model"].as_str().unwrap_or_default().contains("haiku"), "the cheapest model: {asked}");
    }

    // A chat the owner named keeps its name when its note comes.
    app.chat(token, "r").await;
    let r = reqwest::Client::new()
        .patch(app.url("/api/chats/r"))
        .bearer_auth(token)
        .json(&json!({ "title": "My own name" }))
        .send()
        .await
        .expect("rename");
    assert!(r.status().is_success(), "{}", r.status());
    turn(app, token, "r", "a renamed chat", "m1").await;
    note_when(app, token, "r", |n| !n.is_null()).await;
    assert_eq!(app.detail(token, "r").await["title"], "My own name");

    // A new chat's (pinned) prompt carries the digests and the owner's memory file.
    turn(app, token, "n", "what should we do next?", "m1").await;
    let body = body_with(&rig, "what should we do next?");
    assert!(body.contains("Planned four raised garden beds."), "{cli:?}: the digest is not in the new chat's prompt");
    assert!(body.contains("Miso"), "{cli:?}: the owner's memory is not in the new chat's prompt");

    // Memory off: the next new chat starts without it.
    let r = reqwest::Client::new()
        .patch(app.url("/api/memory"))
        .bearer_auth(token)
        .json(&json!({ "enabled": false }))
        .send()
        .await
        .expect("patch");
    assert_eq!(r.status(), 200);
    turn(app, token, "o", "a fresh start please", "m1").await;
    let body = body_with(&rig, "a fresh start please");
    assert!(!body.contains("Planned four raised garden beds.") && !body.contains("Miso"), "{cli:?}: memory was off");
}

pub async fn an_owner_turn_during_a_note_turn_is_not_held_up_by_it(cli: Cli) {
    let script = json!({
        "steps": [{ "text": "first answer" }, { "text": "second answer" }],
        "default": { "text": "ok" },
        "note_text": NOTE,
        "note_delay_s": 30,
    });
    let rig = Rig::start_with(cli, script, &IDLE).await;
    let Rig { app, token, mock, .. } = &rig;
    turn(app, token, "w", "first", "m1").await;
    // The note turn is in its (slow) model call.
    eventually_within(REAL_CLI_WAIT, "the note turn starts", || async {
        mock.requests().await.iter().any(|r| r["kind"] == "note").then_some(())
    })
    .await;
    let mut stream = app.stream(token, "w", None).await;
    assert_eq!(app.send(token, "w", "second", "m2").await["status"], "started");
    let events = stream.until("done", 90).await;
    assert_eq!(events.last().expect("done").data["status"], "completed");
    // The owner's turn ended while the note's model call was still waiting to answer.
    assert!(
        !mock.requests().await.iter().any(|r| r["kind"] == "note_replied"),
        "{cli:?}: the owner's turn waited for the note turn"
    );
    let log = std::fs::read_to_string(app.data_dir().join("server.log")).expect("log");
    assert!(log.contains("the note turn gave way"), "{cli:?}: the note turn was not ended by the owner's turn");
    // The next idle spell writes the note over the whole conversation.
    let note = note_when(app, token, "w", |n| n["source_count"] == 4).await;
    assert_eq!(note["digest"], "Planned four raised garden beds.");
}
