//! Chats API and turns driven by fake agent CLIs (shell scripts selected by configuration):
//! CRUD, send/queue/duplicate, stop, questions and approvals, SSE replay, concurrency.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, eventually, fold_transcript, journal, script, transcript, types};

/// A stream-json Claude imitation: answers each turn with `reply for <chat>` after `delay`
/// seconds, streaming `parts` text deltas first.
pub fn fake_claude(dir: &Path, delay: &str, parts: usize) -> PathBuf {
    let deltas: String = (0..parts)
        .map(|i| {
            format!(
                "printf '{{\"type\":\"stream_event\",\"event\":{{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"p{i} \"}}}},\"session_id\":\"%s\"}}\\n' \"$sid\"\n"
            )
        })
        .collect();
    script(
        dir,
        "fake-claude",
        &format!(
            r#"IFS= read -r init
IFS= read -r user
sid="s-$MOBIUS_CHAT_ID"
printf '{{"type":"system","subtype":"init","session_id":"%s"}}\n' "$sid"
sleep {delay}
printf '{{"type":"stream_event","event":{{"type":"message_start","message":{{"id":"m1"}}}},"session_id":"%s"}}\n' "$sid"
{deltas}printf '{{"type":"assistant","message":{{"id":"m1","content":[{{"type":"text","text":"reply for %s"}}]}},"session_id":"%s"}}\n' "$MOBIUS_CHAT_ID" "$sid"
printf '{{"type":"result","subtype":"success","is_error":false,"session_id":"%s","total_cost_usd":0.01,"usage":{{"input_tokens":5,"output_tokens":7}}}}\n' "$sid"
cat >/dev/null"#
        ),
    )
}

async fn app_with(bin: impl FnOnce(&Path) -> PathBuf) -> (TestApp, String) {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let bin = bin(dir.path());
    let app = TestApp::spawn_in(dir, |c| {
        c.claude_bin = bin;
        c.agent_start_timeout = Duration::from_secs(10); // 50 fake CLIs starting at once on a loaded machine; `hangs` waits this out
    })
    .await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    (app, token)
}

#[tokio::test]
async fn chats_are_created_idempotently_listed_renamed_pinned_deleted_and_recovered() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let first = app.post("/api/chats", json!({ "id": "a1", "title": "First" }), Some(&token)).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let again = app.post("/api/chats", json!({ "id": "a1", "title": "Ignored" }), Some(&token)).await;
    assert_eq!(again.status(), StatusCode::OK);
    app.chat(&token, "b2").await;
    let bad = app.post("/api/chats", json!({ "id": "../etc" }), Some(&token)).await;
    assert_error(bad, StatusCode::BAD_REQUEST, "invalid_chat_id").await;
    // Read pages are cached between writer commits: every write below must show at once.
    for _ in 0..2 {
        let detail = app.detail(&token, "b2").await;
        assert!(detail["pinned_at"].is_null() && detail["title"] != "Pinned one");
        assert_eq!(app.detail(&token, "a1").await["title"], "First");
    }

    let r = app
        .client
        .patch(app.url("/api/chats/b2"))
        .bearer_auth(&token)
        .json(&json!({ "pinned": true, "title": "Pinned one" }))
        .send()
        .await
        .expect("patch");
    assert_eq!(r.status(), StatusCode::OK);
    let list: Value = app.get("/api/chats", Some(&token)).await.json().await.expect("json");
    let ids: Vec<&str> = list.as_array().expect("list").iter().map(|c| c["id"].as_str().expect("id")).collect();
    assert_eq!(ids, vec!["b2", "a1"], "pinned first");
    assert_eq!(list[0]["title"], "Pinned one");
    assert_eq!(list[1]["title"], "First");
    let detail = app.detail(&token, "b2").await;
    assert_eq!(detail["title"], "Pinned one");
    assert!(detail["pinned_at"].is_i64());

    let del = app.client.delete(app.url("/api/chats/a1")).bearer_auth(&token).send().await.expect("delete");
    assert_eq!(del.status(), StatusCode::NO_CONTENT);
    assert_error(app.get("/api/chats/a1", Some(&token)).await, StatusCode::NOT_FOUND, "chat_not_found").await;
    let reuse = app.post("/api/chats", json!({ "id": "a1" }), Some(&token)).await;
    assert_error(reuse, StatusCode::CONFLICT, "chat_deleted").await;
    let rec = app.post("/api/chats/a1/recover", json!({}), Some(&token)).await;
    assert_eq!(rec.status(), StatusCode::OK);
    assert_eq!(app.detail(&token, "a1").await["title"], "First");
}

#[tokio::test]
async fn a_send_without_a_connected_provider_is_a_clear_409_and_stores_nothing() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    app.chat(&token, "c").await;
    let r = app.post("/api/chats/c/messages", json!({ "content": "hi", "cid": "x1" }), Some(&token)).await;
    assert_error(r, StatusCode::CONFLICT, "provider_not_connected").await;
    let detail = app.detail(&token, "c").await;
    assert_eq!(detail["total"], 0);
    let empty = app.post("/api/chats/c/messages", json!({ "content": "   " }), Some(&token)).await;
    assert_error(empty, StatusCode::BAD_REQUEST, "empty_message").await;
    let missing = app.post("/api/chats/nope/messages", json!({ "content": "x" }), Some(&token)).await;
    assert_error(missing, StatusCode::NOT_FOUND, "chat_not_found").await;
}

#[tokio::test]
async fn imported_transcripts_page_backwards_and_the_journal_replays_from_any_seq() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let messages: Vec<Value> = (0..45)
        .map(|i| json!({ "role": if i % 2 == 0 { "user" } else { "assistant" }, "content": format!("m{i}"), "ts": 1_700_000_000_000i64 + i }))
        .collect();
    let r = app.post("/api/chats", json!({ "id": "big", "messages": messages }), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let page: Value = app.get("/api/chats/big?limit=20", Some(&token)).await.json().await.expect("json");
    assert_eq!(page["total"], 45);
    assert_eq!(page["offset"], 25);
    assert_eq!(page["messages"][0]["content"], "m25");
    assert_eq!(page["messages"][19]["content"], "m44");
    let older: Value = app.get("/api/chats/big?limit=20&before=25", Some(&token)).await.json().await.expect("json");
    assert_eq!(older["offset"], 5);
    assert_eq!(older["messages"][0]["content"], "m5");
    let oldest: Value = app.get("/api/chats/big?limit=20&before=5", Some(&token)).await.json().await.expect("json");
    assert_eq!(oldest["messages"].as_array().map(Vec::len), Some(5));
    assert_eq!(oldest["has_more"], false);
    let bad = app.post("/api/chats", json!({ "messages": [{ "role": "robot" }] }), Some(&token)).await;
    assert_error(bad, StatusCode::BAD_REQUEST, "invalid_message").await;
}

#[tokio::test]
async fn an_import_s_bad_bodies_get_their_errors_and_store_nothing() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let raw = |content_type: &'static str, body: String| {
        app.client
            .post(app.url("/api/chats"))
            .bearer_auth(&token)
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    let cut = raw("application/json", r#"{"id": "x", "messages": [{"role": "user"#.to_owned()).await.expect("req");
    assert_error(cut, StatusCode::BAD_REQUEST, "invalid_json").await;
    let text = raw("text/plain", r#"{"id": "x"}"#.to_owned()).await.expect("req");
    assert_error(text, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
    for shape in
        [json!({"id": "x", "messages": ["not a message"]}), json!({"id": "x", "messages": {}}), json!({"id": 5})]
    {
        let r = app.post("/api/chats", shape, Some(&token)).await;
        assert_error(r, StatusCode::BAD_REQUEST, "invalid_request").await;
    }
    let dup = raw("application/json", r#"{"id": "x", "messages": [{"role": "user", "role": "assistant"}]}"#.to_owned())
        .await
        .expect("req");
    assert_error(dup, StatusCode::BAD_REQUEST, "invalid_request").await;
    let late = json!({"id": "x", "messages": [{"role": "user", "content": "fine"}, {"role": "user", "ts": "soon"}]});
    let r = app.post("/api/chats", late, Some(&token)).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_message").await;
    // A charset parameter and a +json type are JSON too.
    let ok = raw(
        "application/vnd.mobius+json; charset=utf-8",
        json!({"id": "y", "messages": [{"role": "user", "content": "é"}]}).to_string(),
    )
    .await
    .expect("req");
    assert_eq!(ok.status(), StatusCode::CREATED);
    assert_eq!(app.get("/api/chats/x", Some(&token)).await.status(), StatusCode::NOT_FOUND);
    let y: Value = app.get("/api/chats/y", Some(&token)).await.json().await.expect("json");
    assert_eq!(y["messages"][0]["content"], "é");
}

#[tokio::test]
async fn a_turn_streams_to_every_subscriber_and_lands_in_the_transcript() {
    let (app, token) = app_with(|d| fake_claude(d, "0", 20)).await;
    app.chat(&token, "t").await;
    let mut readers = Vec::new();
    for _ in 0..3 {
        readers.push(app.stream(&token, "t", None).await);
    }
    let sent = app.send(&token, "t", "hello there", "cid-1").await;
    assert_eq!(sent["status"], "started");
    let mut sequences = Vec::new();
    for reader in &mut readers {
        let events = reader.until("done", 20).await;
        let seqs: Vec<i64> = events.iter().filter_map(|e| e.id).collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "gapless: {seqs:?}");
        sequences.push(events.iter().filter(|e| e.id.is_some()).map(|e| e.data.to_string()).collect::<Vec<_>>());
        let kinds = types(&events);
        for kind in ["user_message", "run_started", "text", "text_final", "done"] {
            assert!(kinds.iter().any(|k| k == kind), "missing {kind} in {kinds:?}");
        }
    }
    assert_eq!(sequences[0], sequences[1]);
    assert_eq!(sequences[1], sequences[2]);
    let detail = app.detail(&token, "t").await;
    assert_eq!(detail["running"], false);
    assert_eq!(detail["title"], "hello there");
    let messages = detail["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1]["content"], "reply for t");
    assert_eq!(detail["session_id"], "s-t");
    // The journal folds into exactly the stored transcript.
    assert_eq!(fold_transcript(&journal(&app, &token, "t").await), transcript(&app, &token, "t").await);
    // Same cid again: acknowledged, never a second turn.
    let dup = app.send(&token, "t", "hello there", "cid-1").await;
    assert_eq!(dup["status"], "duplicate");
    assert_eq!(app.detail(&token, "t").await["total"], 2);
}

#[tokio::test]
async fn a_reconnect_replays_exactly_the_gap_also_after_a_restart() {
    let (app, token) = app_with(|d| fake_claude(d, "0", 30)).await;
    app.chat(&token, "r").await;
    let mut full = app.stream(&token, "r", None).await;
    app.send(&token, "r", "go", "c1").await;
    let all = full.until("done", 20).await;
    let seqs: Vec<i64> = all.iter().filter_map(|e| e.id).collect();
    let middle = seqs[seqs.len() / 2];
    let mut resumed = app.stream(&token, "r", Some(middle)).await;
    let replay = resumed.until("catch_up_done", 10).await;
    let replayed: Vec<i64> = replay.iter().filter_map(|e| e.id).collect();
    assert_eq!(replayed, seqs.iter().copied().filter(|s| *s > middle).collect::<Vec<_>>());
    drop(resumed);

    let dir = app.stop().await;
    let app = TestApp::spawn_in(dir, |_| {}).await;
    let mut after_restart = app.stream(&token, "r", Some(middle)).await;
    let replay = after_restart.until("catch_up_done", 10).await;
    let replayed_again: Vec<i64> = replay.iter().filter_map(|e| e.id).collect();
    assert_eq!(replayed_again, replayed, "the journal is durable");
    // The data is byte-identical too.
    let texts: Vec<String> = replay.iter().filter(|e| e.id.is_some()).map(|e| e.data.to_string()).collect();
    let original: Vec<String> =
        all.iter().filter(|e| e.id.is_some_and(|s| s > middle)).map(|e| e.data.to_string()).collect();
    assert_eq!(texts, original);
    // A cursor from the future (e.g. a restored backup) is told to resync.
    let mut future = app.stream(&token, "r", Some(10_000)).await;
    assert_eq!(future.next(5).await.data["type"], "resync");
}

#[tokio::test]
async fn a_stalled_reader_does_not_delay_the_others() {
    let (app, token) = app_with(|d| fake_claude(d, "0", 1500)).await;
    app.chat(&token, "s").await;
    // This client never reads: its socket buffers fill and the server must not wait for it.
    let stalled = app.client.get(app.url("/api/chats/s/stream")).bearer_auth(&token).send().await.expect("stalled");
    let mut live = app.stream(&token, "s", None).await;
    app.send(&token, "s", "go", "c1").await;
    let events = live.until("done", 30).await;
    assert!(events.len() > 1500, "{} events", events.len());
    drop(stalled);
}

#[tokio::test]
async fn a_message_sent_while_running_is_queued_and_runs_next() {
    let (app, token) = app_with(|d| fake_claude(d, "1", 2)).await;
    app.chat(&token, "q").await;
    let mut stream = app.stream(&token, "q", None).await;
    assert_eq!(app.send(&token, "q", "first", "c1").await["status"], "started");
    let queued = app.send(&token, "q", "second", "c2").await;
    assert_eq!(queued["status"], "queued");
    assert_eq!(queued["position"], 1);
    let edit = app
        .client
        .patch(app.url("/api/chats/q/pending/c2"))
        .bearer_auth(&token)
        .json(&json!({ "content": "second, edited" }))
        .send()
        .await
        .expect("edit");
    let edit: Value = edit.json().await.expect("json");
    assert_eq!(edit["updated"], true);
    let events = stream.until("queued_turn_starting", 20).await;
    assert!(types(&events).contains(&"queue_changed".to_owned()));
    stream.until("done", 20).await;
    let detail = app.detail(&token, "q").await;
    let contents: Vec<&str> =
        detail["messages"].as_array().expect("m").iter().map(|m| m["content"].as_str().unwrap_or("")).collect();
    assert_eq!(contents, vec!["first", "reply for q", "second, edited", "reply for q"]);
    assert_eq!(detail["pending_messages"], json!([]));
    assert_eq!(fold_transcript(&journal(&app, &token, "q").await), transcript(&app, &token, "q").await);
}

#[tokio::test]
async fn two_devices_sending_at_once_get_one_turn_and_one_queued_message() {
    let (app, token) = app_with(|d| fake_claude(d, "1", 1)).await;
    app.chat(&token, "race").await;
    let (a, b) =
        tokio::join!(app.send(&token, "race", "from phone", "p1"), app.send(&token, "race", "from laptop", "l1"));
    let mut statuses =
        vec![a["status"].as_str().unwrap_or("").to_owned(), b["status"].as_str().unwrap_or("").to_owned()];
    statuses.sort();
    assert_eq!(statuses, vec!["queued", "started"]);
}

#[tokio::test]
async fn stop_returns_fast_leaves_the_chat_idle_and_hands_back_the_queue() {
    // As a process, so its log shows whether the turn itself answered the stop.
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let bin = fake_claude(dir.path(), "30", 1);
    // The fake CLI lives in the data dir, which the sandbox closes.
    let env = [("MOBIUS_CLAUDE_BIN", bin.display().to_string()), ("MOBIUS_AGENT_SANDBOX", "off".to_owned())];
    let app = TestApp::spawn_process(dir, &env).await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    app.chat(&token, "st").await;
    let mut stream = app.stream(&token, "st", None).await;
    app.send(&token, "st", "slow one", "c1").await;
    stream.until("run_started", 10).await;
    app.send(&token, "st", "waiting", "c2").await;
    let r = app.post("/api/chat/stop", json!({ "chat_id": "st" }), Some(&token)).await;
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["stopped"], true);
    assert_eq!(body["cleared_pending_cids"], json!(["c2"]));
    let done = stream.until("done", 5).await;
    assert_eq!(done.last().expect("done").data["status"], "stopped");
    let detail = app.detail(&token, "st").await;
    assert_eq!(detail["running"], false);
    assert_eq!(detail["pending_messages"], json!([]));
    // The turn stopped before it wrote anything: its row stays in the transcript (a reload shows
    // "Stopped before replying", never two owner messages in a row).
    assert_eq!(detail["total"], 2, "{detail}");
    assert_eq!(detail["messages"][1]["role"], "assistant", "{detail}");
    assert_eq!(detail["messages"][1]["blocks"], json!([]), "{detail}");
    // Stopping an idle chat is harmless.
    let again: Value =
        app.post("/api/chat/stop", json!({ "chat_id": "st" }), Some(&token)).await.json().await.expect("json");
    assert_eq!(again["stopped"], false);
    // And a new message runs normally afterwards (the fake is slow, so stop it again).
    assert_eq!(app.send(&token, "st", "again", "c3").await["status"], "started");
    // Fast: the turn answered the stop itself (the route's fallback after STOP_WAIT never ran).
    let log = std::fs::read_to_string(app.data_dir().join("server.log")).expect("log");
    assert!(!log.contains("did not answer the stop in time"), "{log}");
}

#[tokio::test]
async fn fifty_chats_running_at_once_never_cross_talk() {
    let (app, token) = app_with(|d| fake_claude(d, "0.2", 3)).await;
    let ids: Vec<String> = (0..50).map(|i| format!("chat-{i}")).collect();
    for id in &ids {
        app.chat(&token, id).await;
    }
    let sends = ids.iter().map(|id| app.send(&token, id, "who are you", "c1"));
    for answer in futures_util::future::join_all(sends).await {
        assert_eq!(answer["status"], "started");
    }
    for id in &ids {
        let detail = eventually(&format!("{id} finishes"), || async {
            let detail = app.detail(&token, id).await;
            (detail["running"] == false && detail["total"] == 2).then_some(detail)
        })
        .await;
        assert_eq!(detail["messages"][1]["content"], format!("reply for {id}"), "{detail}");
        assert_eq!(detail["session_id"], format!("s-{id}"), "{detail}");
    }
}

#[tokio::test]
async fn broken_clis_fail_the_turn_with_a_readable_error() {
    let cases: Vec<(&str, String, &str)> = vec![
        ("missing", String::new(), "could not be started"),
        ("exits", "echo 'boom: no credentials' >&2\nexit 3".into(), "exited with status 3"),
        ("hangs", "sleep 30".into(), "did not respond"),
        (
            "garbage",
            "IFS= read -r a\nIFS= read -r b\necho 'not json'\nhead -c 11000000 /dev/zero | tr '\\0' 'x'; echo\nprintf '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"session_id\":\"s\",\"usage\":{}}\\n'\ncat >/dev/null".into(),
            "",
        ),
    ];
    for (name, body, expected) in cases {
        let (app, token) =
            app_with(|d| if name == "missing" { d.join("no-such-cli") } else { script(d, name, &body) }).await;
        app.chat(&token, name).await;
        let mut stream = app.stream(&token, name, None).await;
        app.send(&token, name, "hi", "c1").await;
        let events = stream.until("done", 20).await;
        let done = &events.last().expect("done").data;
        let detail = app.detail(&token, name).await;
        if expected.is_empty() {
            assert_eq!(done["status"], "completed", "{name}: malformed and oversized lines are skipped");
        } else {
            assert_eq!(done["status"], "failed", "{name}");
            let error = done["error"].as_str().unwrap_or_default();
            assert!(error.contains(expected), "{name}: {error}");
            let last = &detail["messages"][1]["blocks"];
            assert!(last.to_string().contains(expected), "{name}: error block {last}");
        }
        assert_eq!(detail["running"], false, "{name}");
    }
}

/// A fake CLI that asks a question (or for a permission) and reports the answer it got.
pub fn asking_claude(dir: &Path, tool: &str, input: &str) -> PathBuf {
    script(
        dir,
        "asking-claude",
        &format!(
            r#"IFS= read -r init
IFS= read -r user
printf '{{"type":"control_request","request_id":"r1","request":{{"subtype":"can_use_tool","tool_name":"{tool}","input":{input},"tool_use_id":"t1"}}}}\n'
IFS= read -r reply
answer=$(printf '%s' "$reply" | tr -d '\n' | sed 's/"/\x27/g')
printf '{{"type":"assistant","message":{{"id":"m9","content":[{{"type":"text","text":"got: %s"}}]}},"session_id":"s1"}}\n' "$answer"
printf '{{"type":"result","subtype":"success","is_error":false,"session_id":"s1","usage":{{}}}}\n'
cat >/dev/null"#
        ),
    )
}

#[tokio::test]
async fn a_question_is_durable_before_it_is_shown_and_its_answer_reaches_the_cli() {
    let questions = r#"{"questions":[{"question":"Which color?","header":"Color","multiSelect":false,"options":[{"label":"Blue","description":""},{"label":"Red","description":""}]}]}"#;
    let (app, token) = app_with(|d| asking_claude(d, "AskUserQuestion", questions)).await;
    app.chat(&token, "ask").await;
    let mut stream = app.stream(&token, "ask", None).await;
    app.send(&token, "ask", "pick a color", "c1").await;
    let events = stream.until("question", 10).await;
    let question = &events.last().expect("question").data;
    let qid = question["question_id"].as_str().expect("qid").to_owned();
    // Durable: the detail (a separate read) already shows the card and the marker.
    let detail = app.detail(&token, "ask").await;
    assert_eq!(detail["pending_question_id"], qid);
    assert!(detail["messages"].to_string().contains("Which color?"));
    // A plain send while the question waits is refused; a stale id is 410.
    let blocked = app.post("/api/chats/ask/messages", json!({ "content": "hello?", "cid": "c2" }), Some(&token)).await;
    assert_error(blocked, StatusCode::CONFLICT, "pending_question_open").await;
    let stale = app
        .post(
            "/api/chats/ask/messages",
            json!({ "answers": { "Which color?": "Red" }, "question_id": "q-old" }),
            Some(&token),
        )
        .await;
    assert_error(stale, StatusCode::GONE, "question_stale").await;
    let ok = app
        .post(
            "/api/chats/ask/messages",
            json!({ "answers": { "Which color?": "Blue" }, "question_id": qid }),
            Some(&token),
        )
        .await;
    assert_eq!(ok.status(), StatusCode::ACCEPTED);
    let events = stream.until("done", 10).await;
    assert!(types(&events).contains(&"answers_applied".to_owned()));
    let detail = app.detail(&token, "ask").await;
    let reply = detail["messages"][1].to_string();
    assert!(reply.contains("Which color?") && reply.contains("Blue"), "{reply}");
    assert!(
        reply.contains("got: {") && reply.contains("'type':'control_response'"),
        "the CLI got a control response: {reply}"
    );
    assert!(reply.contains("'behavior':'allow'") && reply.contains("'Which color?':'Blue'"), "{reply}");
    assert!(detail["messages"][1]["blocks"][0]["answers"]["Which color?"] == "Blue");
    assert_eq!(fold_transcript(&journal(&app, &token, "ask").await), transcript(&app, &token, "ask").await);
}

#[tokio::test]
async fn under_the_ask_policy_a_tool_waits_for_the_owner_and_a_denial_reaches_the_cli() {
    let (app, token) = app_with(|d| asking_claude(d, "Bash", r#"{"command":"rm -rf /tmp/x"}"#)).await;
    app.chat(&token, "pol").await;
    let r = app
        .client
        .patch(app.url("/api/chats/pol"))
        .bearer_auth(&token)
        .json(&json!({ "approval_policy": "ask" }))
        .send()
        .await
        .expect("patch");
    assert_eq!(r.status(), StatusCode::OK);
    let mut stream = app.stream(&token, "pol", None).await;
    app.send(&token, "pol", "clean up", "c1").await;
    let events = stream.until("question", 10).await;
    let card = &events.last().expect("card").data;
    assert_eq!(card["kind"], "approval");
    assert_eq!(card["tool"], "Bash");
    let qid = card["question_id"].as_str().expect("qid");
    let r = app
        .post(
            "/api/chats/pol/messages",
            json!({ "answers": { "decision": "deny", "reason": "not today" }, "question_id": qid }),
            Some(&token),
        )
        .await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    stream.until("done", 10).await;
    let detail = app.detail(&token, "pol").await;
    let reply = detail["messages"][1].to_string();
    assert!(reply.contains("deny") && reply.contains("not today"), "{reply}");

    // Under the default policy the same request is allowed without a card.
    let r = app
        .client
        .patch(app.url("/api/chats/pol"))
        .bearer_auth(&token)
        .json(&json!({ "approval_policy": "full" }))
        .send()
        .await
        .expect("patch");
    assert_eq!(r.status(), StatusCode::OK);
    app.send(&token, "pol", "again", "c2").await;
    let events = stream.until("done", 10).await;
    assert!(!types(&events).contains(&"question".to_owned()));
    let detail = app.detail(&token, "pol").await;
    assert!(detail["messages"][3].to_string().contains("allow"));
}

/// A Claude imitation that answers like [`fake_claude`] but holds its turn while
/// `DATA_DIR/hold` exists.
fn holding_claude(dir: &Path) -> PathBuf {
    script(
        dir,
        "holding-claude",
        r#"IFS= read -r init
IFS= read -r user
printf '{"type":"system","subtype":"init","session_id":"s-hold"}\n'
printf '{"type":"assistant","message":{"id":"m0","content":[{"type":"text","text":"Working on it."}]},"session_id":"s-hold"}\n'
while [ -f "$MOBIUS_DATA_DIR/hold" ]; do sleep 0.1; done
printf '{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"finished"}]},"session_id":"s-hold"}\n'
printf '{"type":"result","subtype":"success","is_error":false,"session_id":"s-hold","usage":{}}\n'
cat >/dev/null"#,
    )
}

/// Polls the chat's detail until `done` holds for it.
async fn detail_when(app: &TestApp, token: &str, chat: &str, done: impl Fn(&Value) -> bool) -> Value {
    eventually("the chat gets there", || async {
        let detail = app.detail(token, chat).await;
        done(&detail).then_some(detail)
    })
    .await
}

#[tokio::test]
async fn a_turn_cut_by_a_restart_continues_once_by_itself_with_its_queue() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let bin = holding_claude(dir.path());
    let env = [("MOBIUS_CLAUDE_BIN", bin.display().to_string()), ("MOBIUS_AGENT_SANDBOX", "off".to_owned())];
    let app = TestApp::spawn_process(dir, &env).await;
    std::fs::write(app.data_dir().join("hold"), b"").expect("hold");
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    app.chat(&token, "k").await;
    let mut stream = app.stream(&token, "k", None).await;
    app.send(&token, "k", "long job", "c1").await;
    stream.until("text_final", 10).await;
    assert_eq!(app.send(&token, "k", "next", "c2").await["status"], "queued");
    drop(stream);
    let first_group = std::fs::read_dir(app.data_dir().join("run/agents")).expect("groups").count();
    assert_eq!(first_group, 1);

    // After the restart the cut turn is closed with a note and continues by itself, the
    // queued message going first (its CLI holds again).
    let dir = app.kill9();
    let app = TestApp::spawn_process(dir, &env).await;
    let detail = detail_when(&app, &token, "k", |d| d["running"] == true).await;
    let interrupted = detail["messages"][1].to_string();
    assert!(interrupted.contains("continues by itself") && interrupted.contains("restart"), "{interrupted}");
    assert_eq!(detail["pending_messages"], json!([]));
    let users: Vec<&Value> = detail["messages"].as_array().expect("m").iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users.len(), 3, "{detail}");
    assert_eq!(users[1]["cid"], "c2");
    assert_eq!(users[2]["hidden"], true, "the continuation is a hidden message: {}", users[2]);
    let runs: Value = app.get("/api/chats/k/runs", Some(&token)).await.json().await.expect("runs");
    assert_eq!((runs[0]["status"].as_str(), runs[1]["status"].as_str()), (Some("running"), Some("interrupted")));
    // The dead server's CLI is gone: one group, the continuation's (once its CLI started).
    let groups = || std::fs::read_dir(app.data_dir().join("run/agents")).map(|d| d.count()).unwrap_or(0);
    eventually("one process group is left", || async { (groups() == 1).then_some(()) }).await;

    // Cut again: it continued once already, so now it waits for the owner.
    let dir = app.kill9();
    let app = TestApp::spawn_process(dir, &env).await;
    let detail = app.detail(&token, "k").await;
    assert_eq!(detail["running"], false);
    assert_eq!(detail["resume_at"], Value::Null);
    let last = detail["messages"].as_array().and_then(|m| m.last()).expect("last").to_string();
    assert!(last.contains("interrupted when Möbius restarted"), "{last}");
    std::fs::remove_file(app.data_dir().join("hold")).expect("release");
    let mut stream = app.stream(&token, "k", None).await;
    assert_eq!(app.send(&token, "k", "carry on", "c3").await["status"], "started");
    let done = stream.until("done", 10).await;
    assert_eq!(done.last().expect("done").data["status"], "completed");
}

#[tokio::test]
async fn a_large_tool_output_is_sent_truncated_with_a_marker_and_stored_whole() {
    let (app, token) = app_with(|d| {
        script(
            d,
            "verbose-claude",
            r#"IFS= read -r init; IFS= read -r user
big=$(seq 1 3000 | tr '\n' ' ')
printf '{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t-big","name":"Bash","input":{"command":"seq 1 3000"}}]},"session_id":"s"}\n'
printf '{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t-big","content":"%s END"}]},"session_id":"s"}\n' "$big"
printf '{"type":"result","subtype":"success","is_error":false,"session_id":"s","usage":{}}\n'
cat >/dev/null"#,
        )
    })
    .await;
    app.chat(&token, "big").await;
    let mut stream = app.stream(&token, "big", None).await;
    app.send(&token, "big", "count", "c1").await;
    let events = stream.until("done", 10).await;
    let output = events.iter().find(|e| e.data["type"] == "tool_output").expect("tool_output").data.clone();
    assert_eq!(output["output_truncated"], true);
    let full_len = output["output_full_len"].as_u64().expect("full length");
    assert!(full_len > 10_000);
    let inline = output["content"].as_str().expect("content");
    assert!(inline.len() < 5_000 && inline.contains("characters omitted") && inline.ends_with("END"));
    let full = app.get("/api/chats/big/tool-output/t-big", Some(&token)).await;
    assert_eq!(full.status(), StatusCode::OK);
    let text = full.text().await.expect("text");
    assert_eq!(text.chars().count() as u64, full_len);
    assert!(text.contains(" 1500 ") && text.ends_with("END"));
    // The stored transcript carries the truncated form, not the megabytes.
    let detail = app.detail(&token, "big").await;
    assert_eq!(detail["messages"][1]["blocks"][0]["output_truncated"], true);
    assert_error(
        app.get("/api/chats/big/tool-output/unknown", Some(&token)).await,
        StatusCode::NOT_FOUND,
        "output_not_found",
    )
    .await;
}

/// A Claude imitation that answers "reply <n>" (the n-th turn of its chat) and appends each
/// prompt it was given, one JSON line each, to `prompts-<chat>` in `dir`.
fn numbering_claude(dir: &Path) -> PathBuf {
    script(
        dir,
        "fake-claude",
        &format!(
            r#"IFS= read -r init
IFS= read -r user
log="{}/prompts-$MOBIUS_CHAT_ID"
printf '%s\n' "$user" >> "$log"
n=$(wc -l < "$log" | tr -d ' ')
sid="s-$MOBIUS_CHAT_ID"
printf '{{"type":"system","subtype":"init","session_id":"%s"}}\n' "$sid"
printf '{{"type":"assistant","message":{{"id":"m1","content":[{{"type":"text","text":"reply %s"}}]}},"session_id":"%s"}}\n' "$n" "$sid"
printf '{{"type":"result","subtype":"success","is_error":false,"session_id":"%s","total_cost_usd":0.01,"usage":{{"input_tokens":5,"output_tokens":7}}}}\n' "$sid"
cat >/dev/null"#,
            dir.display()
        ),
    )
}

/// `POST /api/chats/{chat}/regenerate` with `body`.
async fn regenerate(app: &TestApp, token: &str, chat: &str, body: Value) -> reqwest::Response {
    app.post(&format!("/api/chats/{chat}/regenerate"), body, Some(token)).await
}

#[tokio::test]
async fn regenerate_keeps_the_reply_as_a_version_and_never_sends_the_owner_message_twice() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let bin = numbering_claude(dir.path());
    let app = TestApp::spawn_in(dir.clone(), |c| c.claude_bin = bin).await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    app.chat(&token, "g").await;
    let mut stream = app.stream(&token, "g", None).await;
    app.send(&token, "g", "Tell me a joke", "c1").await;
    stream.until("done", 20).await;

    let r = regenerate(&app, &token, "g", json!({ "message_idx": 0, "versions": 1 })).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    let started: Value = r.json().await.expect("json");
    assert_eq!((started["status"].as_str(), started["version"].as_i64()), (Some("started"), Some(2)));
    let events = stream.until("done", 20).await;
    let kinds = types(&events);
    assert!(!kinds.iter().any(|k| k == "user_message"), "no owner message is added: {kinds:?}");
    let run_started = events.iter().find(|e| e.data["type"] == "run_started").expect("run_started");
    assert_eq!(run_started.data["version"], 2);

    // One owner message; the first reply stays as version 1, the new one is version 2.
    let rows = transcript(&app, &token, "g").await;
    let shape: Vec<(String, String, Option<u32>)> =
        rows.iter().map(|m| (format!("{:?}", m.role), m.content.clone(), m.version)).collect();
    assert_eq!(
        shape,
        vec![
            ("User".into(), "Tell me a joke".into(), None),
            ("Assistant".into(), "reply 1".into(), None),
            ("Assistant".into(), "reply 2".into(), Some(2)),
        ]
    );
    // The journal folds to the same transcript (versions included).
    assert_eq!(fold_transcript(&journal(&app, &token, "g").await), rows);
    // The agent was sent the owner's words again, and told why.
    let prompts = std::fs::read_to_string(dir.path().join("prompts-g")).expect("prompts");
    let second = prompts.lines().nth(1).expect("a second prompt");
    assert!(second.contains("Regenerate") && second.contains("Tell me a joke"), "{second}");

    // A repeat of the same request (its answer was lost) is not a third version.
    let again = regenerate(&app, &token, "g", json!({ "message_idx": 0, "versions": 1 })).await;
    assert_eq!(again.status(), StatusCode::OK);
    let again: Value = again.json().await.expect("json");
    assert_eq!((again["status"].as_str(), again["versions"].as_i64()), (Some("duplicate"), Some(2)));
    // A message that is not the last one, or more versions than exist: refused, nothing stored.
    let stale = regenerate(&app, &token, "g", json!({ "message_idx": 1, "versions": 2 })).await;
    assert_error(stale, StatusCode::CONFLICT, "not_regenerable").await;
    let ahead = regenerate(&app, &token, "g", json!({ "message_idx": 0, "versions": 5 })).await;
    assert_error(ahead, StatusCode::CONFLICT, "not_regenerable").await;
    assert_eq!(app.detail(&token, "g").await["total"], 3);

    // The third version (a bodiless request is the original's shape: no checks).
    let third = regenerate(&app, &token, "g", json!({})).await;
    assert_eq!(third.status(), StatusCode::ACCEPTED);
    stream.until("done", 20).await;
    let versions: Vec<Option<u32>> = transcript(&app, &token, "g").await.iter().map(|m| m.version).collect();
    assert_eq!(versions, vec![None, None, Some(2), Some(3)]);
    let detail = app.detail(&token, "g").await;
    assert_eq!(detail["messages"][3]["version"], 3, "the detail serves the version");
}

#[tokio::test]
async fn regenerate_is_refused_without_a_message_while_a_turn_runs_and_for_a_bad_body() {
    let (app, token) = app_with(|d| fake_claude(d, "30", 1)).await;
    app.chat(&token, "n").await;
    let empty = regenerate(&app, &token, "n", json!({})).await;
    assert_error(empty, StatusCode::CONFLICT, "not_regenerable").await;
    let missing = regenerate(&app, &token, "nope", json!({})).await;
    assert_error(missing, StatusCode::NOT_FOUND, "chat_not_found").await;
    let bad = app
        .client
        .post(app.url("/api/chats/n/regenerate"))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body("{\"versions\": \"two\"}")
        .send()
        .await
        .expect("post");
    assert_error(bad, StatusCode::BAD_REQUEST, "invalid_request").await;
    app.send(&token, "n", "slowly", "s1").await;
    let busy = regenerate(&app, &token, "n", json!({ "message_idx": 0 })).await;
    assert_error(busy, StatusCode::CONFLICT, "chat_busy").await;
    let stop = app.post("/api/chat/stop", json!({ "chat_id": "n" }), Some(&token)).await;
    assert_eq!(stop.status(), StatusCode::OK);
    assert_eq!(app.detail(&token, "n").await["total"], 2, "the owner's message and the stopped reply");
}

/// A Claude imitation that keeps the user line it was sent in `seen` and answers "ok".
fn recording_claude(dir: &Path, seen: &Path) -> PathBuf {
    script(
        dir,
        "recording-claude",
        &format!(
            r#"IFS= read -r init
IFS= read -r user
printf '%s' "$user" > '{}'
printf '{{"type":"system","subtype":"init","session_id":"s1"}}\n'
printf '{{"type":"assistant","message":{{"id":"m1","content":[{{"type":"text","text":"ok"}}]}},"session_id":"s1"}}\n'
printf '{{"type":"result","subtype":"success","is_error":false,"session_id":"s1","usage":{{}}}}\n'
cat >/dev/null"#,
            seen.display()
        ),
    )
}

#[tokio::test]
async fn each_turn_is_told_the_owners_local_time_in_the_zone_they_sent_from() {
    let seen_dir = tempfile::tempdir().expect("tmp");
    let seen = seen_dir.path().join("user.json");
    let (app, token) = app_with(|d| recording_claude(d, &seen)).await;
    app.chat(&token, "tz1").await;
    let bad = app
        .post(
            "/api/chats/tz1/messages",
            json!({ "content": "hi", "cid": "c0", "timezone": "Europe/Paris; rm" }),
            Some(&token),
        )
        .await;
    assert_error(bad, StatusCode::BAD_REQUEST, "invalid_timezone").await;
    let sent = app
        .post(
            "/api/chats/tz1/messages",
            json!({ "content": "what day is it?", "cid": "c1", "timezone": "Asia/Tokyo" }),
            Some(&token),
        )
        .await;
    assert_eq!(sent.status(), StatusCode::ACCEPTED);
    let line = eventually("the CLI got the message", || async {
        std::fs::read_to_string(&seen).ok().filter(|s| !s.is_empty())
    })
    .await;
    let message: Value = serde_json::from_str(&line).expect("json");
    let text = message.to_string();
    assert!(text.contains("what day is it?"), "{text}");
    assert!(text.contains("[The owner's local time: ") && text.contains("(Asia/Tokyo, UTC+09:00)]"), "{text}");
    // The transcript shows the owner's words only.
    let detail = app.detail(&token, "tz1").await;
    assert_eq!(detail["messages"][0]["content"], "what day is it?");
    assert_eq!(detail["messages"][0]["timezone"], "Asia/Tokyo");
}

#[tokio::test]
async fn every_approval_policy_is_kept_and_an_unknown_one_is_refused() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    app.chat(&token, "policies").await;
    for policy in ["workspace", "ask", "full"] {
        let r = app
            .client
            .patch(app.url("/api/chats/policies"))
            .bearer_auth(&token)
            .json(&json!({ "approval_policy": policy }))
            .send()
            .await
            .expect("patch");
        assert_eq!(r.status(), StatusCode::OK, "{policy}");
        assert_eq!(app.detail(&token, "policies").await["approval_policy"], policy);
    }
    let r = app
        .client
        .patch(app.url("/api/chats/policies"))
        .bearer_auth(&token)
        .json(&json!({ "approval_policy": "yolo" }))
        .send()
        .await
        .expect("patch");
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_approval_policy").await;
}
