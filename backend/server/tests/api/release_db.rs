//! A database made by the release before the typed protocol (`tests/fixtures/release-db.sql`,
//! recorded by `tests/agents/fixtures.rs` with that build: real Claude and Codex turns, and a
//! turn killed mid-tool with a message queued) opens, migrates and replays on this build.

use std::sync::Arc;

use mobius::protocol::{ChatEvent, JournalEntry, Message, RunStatus, StreamEvent};
use serde_json::{Value, json};
use sqlx::Connection;

use crate::helpers::{PASSWORD, TestApp, USERNAME, fold_transcript, journal, token_of, transcript};

/// A data dir holding the recorded database, and the server over it.
async fn release_server() -> (TestApp, String) {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let db = dir.path().join("db");
    std::fs::create_dir_all(&db).expect("db dir");
    let url = format!("sqlite://{}?mode=rwc", db.join("mobius.sqlite3").display());
    let dump =
        std::fs::read_to_string(mobius::config::checkout_root().join("tests/fixtures/release-db.sql")).expect("dump");
    let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("create");
    sqlx::raw_sql(&dump).execute(&mut conn).await.expect("load the dump");
    conn.close().await.expect("close");
    let bin = crate::chats::fake_claude(dir.path(), "0", 2);
    let app = TestApp::spawn_in(dir, |c| c.claude_bin = bin).await;
    let r = app.post("/api/auth/token", json!({ "username": USERNAME, "password": PASSWORD }), None).await;
    let token = token_of(r).await;
    (app, token)
}

const CHATS: [&str; 8] = [
    "tools-claude",
    "tools-codex",
    "question-claude",
    "question-codex",
    "steer-claude",
    "steer-codex",
    "stop-claude",
    "stop-codex",
];

/// Assistant rows without their dates and usage: rows written before `run_started` carried its
/// `ts` cannot be dated from the journal, and rows written before replies carried their usage
/// have none (their `done` events do).
fn undated(messages: Vec<Message>) -> Vec<Message> {
    messages
        .into_iter()
        .map(|m| if m.role == mobius::protocol::Role::Assistant { Message { ts: 0, usage: None, ..m } } else { m })
        .collect()
}

#[tokio::test]
async fn old_rows_are_migrated_to_one_casing_and_every_one_reads_as_a_protocol_type() {
    let (app, token) = release_server().await;
    let url = format!("sqlite://{}", app.data_dir().join("db/mobius.sqlite3").display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("open");
    let rows: Vec<String> =
        sqlx::query_scalar("SELECT data FROM chat_events").fetch_all(&mut conn).await.expect("events");
    assert!(rows.len() > 90, "{} events", rows.len());
    for row in &rows {
        serde_json::from_str::<JournalEntry>(row).unwrap_or_else(|e| panic!("{e}: {row}"));
        // As a key (text that merely mentions it, like a tool's input, keeps its words).
        assert!(!row.contains("\"multiSelect\":"), "{row}");
    }
    let bodies: Vec<String> =
        sqlx::query_scalar("SELECT body FROM chat_messages").fetch_all(&mut conn).await.expect("messages");
    for body in &bodies {
        serde_json::from_str::<Message>(body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert!(!body.contains("\"multiSelect\":"), "{body}");
    }
    let cards: i64 = sqlx::query_scalar("SELECT count(*) FROM chat_messages WHERE body LIKE '%\"multi_select\":%'")
        .fetch_one(&mut conn)
        .await
        .expect("count");
    assert!(cards >= 2, "the question cards kept their multi_select");
    for chat in CHATS {
        // The stream replays every old row, and each parses as what the PWA is generated from.
        let mut stream = app.stream(&token, chat, Some(0)).await;
        for event in stream.until("catch_up_done", 10).await {
            serde_json::from_value::<StreamEvent>(event.data.clone()).unwrap_or_else(|e| panic!("{e}: {}", event.data));
        }
        let stored = transcript(&app, &token, chat).await;
        assert!(stored.len() >= 2, "{chat}");
        assert_eq!(undated(fold_transcript(&journal(&app, &token, chat).await)), undated(stored), "{chat}");
    }
}

#[tokio::test]
async fn the_turn_the_old_server_left_running_is_closed_with_its_queue_kept_and_old_chats_go_on() {
    let (app, token) = release_server().await;
    let detail = app.detail(&token, "killed-claude").await;
    assert_eq!(detail["running"], false);
    let messages: Vec<Message> = serde_json::from_value(detail["messages"].clone()).expect("typed");
    let interrupted = messages.last().expect("the interrupted reply");
    let text = serde_json::to_string(interrupted).expect("json");
    assert!(text.contains("Working on it.") && text.contains("interrupted when Möbius restarted"), "{text}");
    assert_eq!(detail["pending_messages"][0]["cid"], "m2");
    let events = journal(&app, &token, "killed-claude").await;
    assert!(matches!(events.last().map(|e| &e.event), Some(ChatEvent::Done { status: RunStatus::Interrupted, .. })));

    // An old chat takes a new turn on the provider it was started with.
    app.connect_claude(&token).await;
    let mut stream = app.stream(&token, "tools-claude", None).await;
    assert_eq!(app.send(&token, "tools-claude", "and once more", "m9").await["status"], "started");
    let done = stream.until("done", 20).await;
    assert_eq!(done.last().expect("done").data["status"], "completed");
    let detail = app.detail(&token, "tools-claude").await;
    let last: Value = detail["messages"].as_array().and_then(|m| m.last().cloned()).expect("reply");
    assert_eq!(last["content"], "reply for tools-claude");
}

#[tokio::test]
async fn the_old_database_gets_the_list_indexes_and_pages_through_every_chat_in_order() {
    let (app, token) = release_server().await;
    let url = format!("sqlite://{}", app.data_dir().join("db/mobius.sqlite3").display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("open");
    let indexes: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'chats_drawer_%' ORDER BY name",
    )
    .fetch_all(&mut conn)
    .await
    .expect("indexes");
    assert_eq!(indexes, ["chats_drawer_pinned", "chats_drawer_recent"]);
    let all: Vec<Value> = app.get("/api/chats", Some(&token)).await.json().await.expect("list");
    assert!(all.len() >= CHATS.len(), "{} chats", all.len());
    let mut paged: Vec<Value> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/chats?limit=3&cursor={c}"),
            None => "/api/chats?limit=3".to_owned(),
        };
        let page: Value = app.get(&path, Some(&token)).await.json().await.expect("page");
        paged.extend(page["chats"].as_array().expect("chats").iter().cloned());
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(paged, all);
}
