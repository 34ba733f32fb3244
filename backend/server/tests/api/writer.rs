//! The single-writer actor against a real SQLite file: ordering, durability, coalescing, drain.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use mobius::events::Hub;
use mobius::protocol::{ChatEvent, ProviderKind};
use mobius::writer::{NewChat, NewRun, WriteCommand, WriterHandle};
use serde_json::json;
use sqlx::Connection;

struct Fixture {
    _dir: tempfile::TempDir,
    path: PathBuf,
    writer: WriterHandle,
    hub: Arc<Hub>,
    task: tokio::task::JoinHandle<()>,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("db/mobius.sqlite3");
    let mut conn = mobius::db::open_writer(&path).await.expect("open");
    mobius::db::migrate(&mut conn).await.expect("migrate");
    let hub = Arc::new(Hub::default());
    let (writer, task) = WriterHandle::spawn(conn, hub.clone());
    Fixture { _dir: dir, path, writer, hub, task }
}

/// A journal event with `title` in it.
fn note(title: &str) -> ChatEvent {
    ChatEvent::ChatRenamed { title: title.to_owned() }
}

/// A separate connection, as another process would open it.
async fn other_connection(path: &std::path::Path) -> sqlx::SqliteConnection {
    sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display())).await.expect("connect")
}

async fn create_chat(writer: &WriterHandle, id: &str) {
    writer
        .call(|ack| WriteCommand::CreateChat {
            chat: NewChat { id: id.into(), title: None, messages: Vec::new(), app: None },
            ack,
        })
        .await
        .expect("create chat");
}

#[tokio::test]
async fn a_thousand_concurrent_commands_lose_nothing_and_seqs_strictly_increase() {
    let f = fixture().await;
    let chats: Vec<String> = (0..50).map(|i| format!("chat-{i:02}")).collect();
    for id in &chats {
        create_chat(&f.writer, id).await;
    }
    let mut tasks = Vec::new();
    for t in 0..50usize {
        let writer = f.writer.clone();
        let chats = chats.clone();
        tasks.push(tokio::spawn(async move {
            let mut seen: Vec<(String, i64)> = Vec::new();
            for i in 0..20usize {
                let chat = chats[(t * 7 + i * 13) % chats.len()].clone();
                let body = note(&format!("task {t} #{i}"));
                let seq = writer
                    .call(|ack| WriteCommand::Emit {
                        chat_id: chat.as_str().into(),
                        run_id: None,
                        events: vec![body],
                        ack: Some(ack),
                    })
                    .await
                    .expect("emit");
                seen.push((chat, seq));
            }
            seen
        }));
    }
    let mut per_chat: HashMap<String, Vec<i64>> = HashMap::new();
    for task in tasks {
        let seen = task.await.expect("task");
        // Within one task, later acks for the same chat always carry a larger seq.
        let mut last: HashMap<&str, i64> = HashMap::new();
        for (chat, seq) in &seen {
            if let Some(prev) = last.insert(chat, *seq) {
                assert!(*seq > prev, "seq went backwards for {chat}");
            }
        }
        for (chat, seq) in seen {
            per_chat.entry(chat).or_default().push(seq);
        }
    }
    let total: usize = per_chat.values().map(Vec::len).sum();
    assert_eq!(total, 1000);
    let mut db = other_connection(&f.path).await;
    for (chat, mut seqs) in per_chat {
        seqs.sort_unstable();
        let expected: Vec<i64> = (1..=seqs.len() as i64).collect();
        assert_eq!(seqs, expected, "seqs of {chat} are not exactly 1..=n");
        let stored: Vec<i64> = sqlx::query_scalar("SELECT seq FROM chat_events WHERE chat_id = ? ORDER BY seq")
            .bind(&chat)
            .fetch_all(&mut db)
            .await
            .expect("events");
        assert_eq!(stored, expected, "journal of {chat}");
        let head: i64 = sqlx::query_scalar("SELECT last_seq FROM chats WHERE id = ?")
            .bind(&chat)
            .fetch_one(&mut db)
            .await
            .expect("head");
        assert_eq!(head, expected.len() as i64);
    }
}

#[tokio::test]
async fn a_strict_ack_means_another_connection_can_already_read_the_row() {
    let f = fixture().await;
    let mut reader = other_connection(&f.path).await;
    for i in 0..50 {
        let id = format!("visible-{i}");
        create_chat(&f.writer, &id).await;
        let found: Option<String> = sqlx::query_scalar("SELECT id FROM chats WHERE id = ?")
            .bind(&id)
            .fetch_optional(&mut reader)
            .await
            .expect("read");
        assert_eq!(found.as_deref(), Some(id.as_str()));
    }
}

#[tokio::test]
async fn events_are_published_only_after_commit_with_their_seq() {
    let f = fixture().await;
    create_chat(&f.writer, "c").await;
    let mut rx = f.hub.subscribe("c");
    let seq = f
        .writer
        .call(|ack| WriteCommand::Emit {
            chat_id: "c".into(),
            run_id: None,
            events: vec![note("hello")],
            ack: Some(ack),
        })
        .await
        .expect("emit");
    let got = rx.recv().await.expect("event");
    assert_eq!(got.seq, seq);
    assert!(got.data.contains("\"type\":\"chat_renamed\""), "{}", got.data);
    // By the time a subscriber sees it, it is durable.
    let mut db = other_connection(&f.path).await;
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM chat_events WHERE chat_id = 'c' AND seq = ?")
        .bind(seq)
        .fetch_one(&mut db)
        .await
        .expect("count");
    assert_eq!(n, 1);
}

#[tokio::test]
async fn a_failing_command_does_not_take_its_batch_neighbours_down() {
    let f = fixture().await;
    create_chat(&f.writer, "real").await;
    let (bad, good) = tokio::join!(
        f.writer.call(|ack| WriteCommand::Emit {
            chat_id: "missing".into(),
            run_id: None,
            events: vec![note("x")],
            ack: Some(ack)
        }),
        f.writer.call(|ack| WriteCommand::Emit {
            chat_id: "real".into(),
            run_id: None,
            events: vec![note("x")],
            ack: Some(ack)
        }),
    );
    assert_eq!(bad.expect_err("missing chat").code(), "chat_not_found");
    assert_eq!(good.expect("real chat"), 1);
    // A run fence refuses events for a run that is not running.
    let fenced = f
        .writer
        .call(|ack| WriteCommand::Emit {
            chat_id: "real".into(),
            run_id: Some("rt-gone".into()),
            events: vec![note("x")],
            ack: Some(ack),
        })
        .await;
    assert_eq!(fenced.expect_err("fenced").code(), "run_not_running");
}

#[tokio::test]
async fn a_lone_command_that_fails_halfway_leaves_nothing_behind() {
    // A command alone in its batch runs without a savepoint: its failure rolls the whole
    // transaction back. An import whose second message repeats the first's cid fails after the
    // chat row and the first message are written.
    let f = fixture().await;
    let message = |text: &str| -> mobius::protocol::Message {
        serde_json::from_value(json!({"role": "user", "content": text, "ts": 1, "cid": "same-cid"})).expect("a message")
    };
    let failed = f
        .writer
        .call(|ack| WriteCommand::CreateChat {
            chat: NewChat {
                id: "half".into(),
                title: Some("Half".into()),
                messages: vec![message("one"), message("two")],
                app: None,
            },
            ack,
        })
        .await;
    assert_eq!(failed.expect_err("a repeated cid").code(), "duplicate_cid");
    let mut other = other_connection(&f.path).await;
    for table in ["chats", "chat_messages", "chat_search_docs", "chat_search_backlog", "chat_events"] {
        let left: i64 = sqlx::query_scalar(&format!(
            "SELECT count(*) FROM {table} WHERE {} = 'half'",
            if table == "chats" { "id" } else { "chat_id" }
        ))
        .fetch_one(&mut other)
        .await
        .expect("count");
        assert_eq!(left, 0, "{table} keeps nothing of the failed import");
    }
    // The writer goes on: the same chat imports whole afterwards.
    let created = f
        .writer
        .call(|ack| WriteCommand::CreateChat {
            chat: NewChat { id: "half".into(), title: Some("Half".into()), messages: vec![message("one")], app: None },
            ack,
        })
        .await;
    assert_eq!(created.expect("created"), mobius::writer::ChatCreated::Created);
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM chat_messages WHERE chat_id = 'half'")
        .fetch_one(&mut other)
        .await
        .expect("count");
    assert_eq!(count, 1);
}

#[tokio::test]
async fn a_hundred_rapid_snapshots_become_a_handful_of_writes_and_the_last_wins() {
    let f = fixture().await;
    create_chat(&f.writer, "snap").await;
    f.writer
        .call(|ack| WriteCommand::StartRun {
            run: NewRun { chat_id: "snap".into(), run_id: "rt-1".into(), provider: ProviderKind::Claude },
            ack,
        })
        .await
        .expect("start run");
    for i in 0..100 {
        let body = json!({ "role": "assistant", "content": format!("version {i}"), "blocks": [] }).to_string();
        assert!(f.writer.snapshot_live(&"snap".into(), &"rt-1".into(), body));
    }
    f.writer.barrier().await.expect("barrier");
    let stats = f.writer.stats();
    assert_eq!(stats.snapshots_received.load(std::sync::atomic::Ordering::Relaxed), 100);
    f.writer.shutdown().await;
    f.task.await.expect("writer task");
    let writes = f.writer.stats().snapshot_writes.load(std::sync::atomic::Ordering::Relaxed);
    assert!((1..=3).contains(&writes), "{writes} snapshot writes for 100 snapshots");
    let mut db = other_connection(&f.path).await;
    let body: String =
        sqlx::query_scalar("SELECT body FROM chat_live WHERE chat_id = 'snap'").fetch_one(&mut db).await.expect("live");
    assert!(body.contains("version 99"), "{body}");
}

#[tokio::test]
async fn a_stale_snapshot_never_overwrites_a_newer_run() {
    let f = fixture().await;
    create_chat(&f.writer, "c").await;
    f.writer
        .call(|ack| WriteCommand::StartRun {
            run: NewRun { chat_id: "c".into(), run_id: "rt-new".into(), provider: ProviderKind::Claude },
            ack,
        })
        .await
        .expect("start");
    f.writer.snapshot_live(&"c".into(), &"rt-old".into(), "{\"content\":\"stale\"}".into());
    f.writer.shutdown().await;
    let mut db = other_connection(&f.path).await;
    let body: String =
        sqlx::query_scalar("SELECT body FROM chat_live WHERE chat_id = 'c'").fetch_one(&mut db).await.expect("live");
    assert!(!body.contains("stale"));
}

#[tokio::test]
async fn shutdown_drains_everything_queued_before_it() {
    let f = fixture().await;
    create_chat(&f.writer, "drain").await;
    let mut acks = Vec::new();
    for i in 0..300 {
        let writer = f.writer.clone();
        acks.push(tokio::spawn(async move {
            writer
                .call(|ack| WriteCommand::Emit {
                    chat_id: "drain".into(),
                    run_id: None,
                    events: vec![note(&format!("n {i}"))],
                    ack: Some(ack),
                })
                .await
        }));
    }
    for i in 0..200 {
        assert!(f.writer.submit(WriteCommand::Emit {
            chat_id: "drain".into(),
            run_id: None,
            events: vec![note(&format!("fire {i}"))],
            ack: None,
        }));
    }
    f.writer.shutdown().await;
    f.task.await.expect("writer task");
    assert!(!f.writer.is_alive());
    let mut acked = 0;
    for a in acks {
        if a.await.expect("task").is_ok() {
            acked += 1;
        }
    }
    let mut db = other_connection(&f.path).await;
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM chat_events WHERE chat_id = 'drain'")
        .fetch_one(&mut db)
        .await
        .expect("count");
    assert!(acked >= 1, "some commands were acknowledged");
    assert!(stored >= acked + 200, "stored {stored} < acked {acked} + 200 fire-and-forget");
    // After shutdown the writer refuses new work with a clear error.
    let late = f.writer.call(WriteCommand::Barrier).await;
    assert_eq!(late.expect_err("closed").code(), "unavailable");
}

#[tokio::test]
async fn an_interrupted_turn_keeps_what_streamed_after_its_last_snapshot() {
    let f = fixture().await;
    create_chat(&f.writer, "k").await;
    f.writer
        .call(|ack| WriteCommand::StartRun {
            run: NewRun { chat_id: "k".into(), run_id: "rt-k".into(), provider: ProviderKind::Claude },
            ack,
        })
        .await
        .expect("start run");
    let emit = |events: Vec<ChatEvent>| {
        f.writer.call(|ack| WriteCommand::Emit {
            chat_id: "k".into(),
            run_id: Some("rt-k".into()),
            events,
            ack: Some(ack),
        })
    };
    emit(vec![text("Hello, ")]).await.expect("emit");
    let snapshot = json!({ "role": "assistant", "content": "Hello, ", "ts": 1,
        "blocks": [{ "type": "text", "content": "Hello, ", "item_id": "a" }] });
    assert!(f.writer.snapshot_live(&"k".into(), &"rt-k".into(), snapshot.to_string()));
    f.writer.barrier().await.expect("barrier");
    // Streamed (and journaled, and seen by clients) after the snapshot; then the process dies.
    emit(vec![
        text("world"),
        ChatEvent::ToolStart {
            tool_use_id: "t1".into(),
            tool: "Bash".into(),
            input: "ls".into(),
            parent_tool_use_id: None,
            subagent_type: None,
        },
    ])
    .await
    .expect("emit");
    let interrupted =
        f.writer.call(|ack| WriteCommand::ReconcileStartup { resume: Vec::new(), ack }).await.expect("reconcile");
    assert_eq!(interrupted, vec![mobius::protocol::ChatId::from("k")]);
    f.writer.shutdown().await;
    let mut db = other_connection(&f.path).await;
    let body: String =
        sqlx::query_scalar("SELECT body FROM chat_messages WHERE chat_id = 'k' ORDER BY idx DESC LIMIT 1")
            .fetch_one(&mut db)
            .await
            .expect("message");
    let message: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(message["content"], "Hello, world", "{message}");
    let blocks = message["blocks"].as_array().expect("blocks");
    assert!(blocks.iter().any(|b| b["type"] == "tool" && b["tool_use_id"] == "t1"), "{message}");
    assert!(blocks.iter().any(|b| b["type"] == "error" && b["resumable"] == true), "{message}");
}

/// A text delta of block `a`.
fn text(content: &str) -> ChatEvent {
    ChatEvent::Text { content: content.into(), item_id: "a".into() }
}

#[tokio::test]
async fn the_journal_keeps_its_retention_however_long_a_chat_runs() {
    let f = fixture().await;
    create_chat(&f.writer, "long").await;
    let retain = mobius::db::journal::JOURNAL_RETAIN_EVENTS;
    // Far past the retention, in batches of events as a busy turn writes them.
    for batch in 0..30 {
        let events: Vec<ChatEvent> = (0..100).map(|i| note(&format!("{batch}-{i}"))).collect();
        f.writer
            .call(|ack| WriteCommand::Emit { chat_id: "long".into(), run_id: None, events, ack: Some(ack) })
            .await
            .expect("emit");
    }
    let mut conn = other_connection(&f.path).await;
    let (count, oldest, newest): (i64, i64, i64) =
        sqlx::query_as("SELECT count(*), min(seq), max(seq) FROM chat_events WHERE chat_id = 'long'")
            .fetch_one(&mut conn)
            .await
            .expect("count");
    assert!(newest >= 3_000, "{newest}");
    assert!(count <= retain + mobius::db::journal::JOURNAL_TRIM_EVERY, "{count} events kept");
    assert!(count >= retain, "the newest {retain} stay for replay: {count}");
    assert_eq!(newest - oldest + 1, count, "what is kept has no gap");
}

#[tokio::test]
async fn a_full_disk_fails_the_writes_says_so_and_keeps_what_was_committed() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("db/mobius.sqlite3");
    let mut conn = mobius::db::open_writer(&path).await.expect("open");
    mobius::db::migrate(&mut conn).await.expect("migrate");
    // The database may not grow past what it holds now plus a little: a full disk, to SQLite.
    let pages: i64 = sqlx::query_scalar("PRAGMA page_count").fetch_one(&mut conn).await.expect("pages");
    sqlx::query(&format!("PRAGMA max_page_count = {}", pages + 64)).execute(&mut conn).await.expect("limit");
    let hub = Arc::new(Hub::default());
    let (writer, _task) = WriterHandle::spawn(conn, hub);
    create_chat(&writer, "kept").await;
    assert!(!writer.disk_full());
    let big = "x".repeat(16 * 1024);
    let mut failed = None;
    for i in 0..64 {
        let emit = WriteCommand::Emit {
            chat_id: "kept".into(),
            run_id: None,
            events: vec![note(&format!("{i}{big}"))],
            ack: None,
        };
        writer.enqueue(emit).await;
        // The batch holding the write that did not fit is not committed: its barrier says so.
        let _ = writer.call(WriteCommand::Barrier).await;
        if writer.disk_full() {
            failed = Some(i);
            break;
        }
    }
    assert!(failed.is_some_and(|i| i > 0), "the writer says the disk is full once it is: {failed:?}");
    // An acknowledged write gets the error.
    let r = writer
        .call(|ack| WriteCommand::Emit {
            chat_id: "kept".into(),
            run_id: None,
            events: vec![note(&big)],
            ack: Some(ack),
        })
        .await;
    assert!(r.as_ref().is_err_and(mobius::error::Error::is_disk_full), "{r:?}");
    // What was committed before is all there.
    let mut other = other_connection(&path).await;
    let chats: i64 =
        sqlx::query_scalar("SELECT count(*) FROM chats WHERE id = 'kept'").fetch_one(&mut other).await.expect("n");
    assert_eq!(chats, 1);
    let check: String = sqlx::query_scalar("PRAGMA quick_check").fetch_one(&mut other).await.expect("check");
    assert_eq!(check, "ok");
}
