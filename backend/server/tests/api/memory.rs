//! Memory: the owner's memory file and the switch (`/api/memory`), chat notes
//! (`/api/chats/{id}/note`), what a new chat's pinned prompt carries, and the skills index
//! following the agent's skills folder (`/api/skills`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::chats::fake_claude;
use crate::helpers::{TestApp, assert_error, eventually, script};

async fn send_json(app: &TestApp, method: reqwest::Method, path: &str, body: Value, token: &str) -> reqwest::Response {
    app.client.request(method, app.url(path)).bearer_auth(token).json(&body).send().await.expect("request")
}

#[tokio::test]
async fn the_owner_memory_file_is_read_and_written_within_its_limit() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    assert_error(app.get("/api/memory", None).await, StatusCode::UNAUTHORIZED, "missing_token").await;
    let memory: Value = app.get("/api/memory", Some(&token)).await.json().await.expect("json");
    assert_eq!(memory, json!({ "enabled": true, "owner_md": "", "truncated": false, "max_bytes": 16384 }));

    let r =
        send_json(&app, reqwest::Method::PUT, "/api/memory/owner", json!({ "content": "- likes tea\n" }), &token).await;
    assert_eq!(r.status(), StatusCode::OK);
    let on_disk = std::fs::read_to_string(app.data_dir().join("memory/owner.md")).expect("owner.md");
    assert_eq!(on_disk, "- likes tea\n");
    // The agent edits the file directly; Settings reads what is there.
    std::fs::write(app.data_dir().join("memory/owner.md"), "- likes green tea\n").expect("agent edit");
    let memory: Value = app.get("/api/memory", Some(&token)).await.json().await.expect("json");
    assert_eq!(memory["owner_md"], "- likes green tea\n");

    let big = "x".repeat(16 * 1024 + 1);
    let r = send_json(&app, reqwest::Method::PUT, "/api/memory/owner", json!({ "content": big }), &token).await;
    assert_error(r, StatusCode::PAYLOAD_TOO_LARGE, "memory_too_large").await;
    assert_eq!(std::fs::read_to_string(app.data_dir().join("memory/owner.md")).expect("kept"), "- likes green tea\n");
    let r = send_json(&app, reqwest::Method::PUT, "/api/memory/owner", json!({ "text": "wrong field" }), &token).await;
    assert!(r.status().is_client_error());
    let body: Value = r.json().await.expect("json");
    assert!(body["code"].is_string() && body["message"].is_string(), "{body}");

    let r = send_json(&app, reqwest::Method::PATCH, "/api/memory", json!({ "enabled": false }), &token).await;
    assert_eq!(r.status(), StatusCode::OK);
    let memory: Value = app.get("/api/memory", Some(&token)).await.json().await.expect("json");
    assert_eq!(memory["enabled"], false);
    let r = send_json(&app, reqwest::Method::PATCH, "/api/memory", json!({ "enabled": "no" }), &token).await;
    assert!(r.status().is_client_error());

    // A file grown past the limit by hand is shown cut, and says so.
    std::fs::write(app.data_dir().join("memory/owner.md"), "y".repeat(20_000)).expect("big file");
    let memory: Value = app.get("/api/memory", Some(&token)).await.json().await.expect("json");
    assert_eq!((memory["truncated"].as_bool(), memory["owner_md"].as_str().map(str::len)), (Some(true), Some(16384)));
}

#[tokio::test]
async fn the_owner_reads_and_edits_a_chat_note() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    assert_error(app.get("/api/chats/nope/note", Some(&token)).await, StatusCode::NOT_FOUND, "chat_not_found").await;
    app.chat(&token, "a").await;
    let empty: Value = app.get("/api/chats/a/note", Some(&token)).await.json().await.expect("json");
    assert_eq!(empty["note"], Value::Null);

    let note = json!({ "digest": "Built the tea timer app.", "summary": "Timer with three presets." });
    let r = send_json(&app, reqwest::Method::PUT, "/api/chats/a/note", note, &token).await;
    assert_eq!(r.status(), StatusCode::OK);
    let saved: Value = r.json().await.expect("json");
    assert_eq!(saved["note"]["digest"], "Built the tea timer app.");
    assert_eq!(saved["note"]["by_owner"], true);
    let again: Value = app.get("/api/chats/a/note", Some(&token)).await.json().await.expect("json");
    assert_eq!(again["note"]["summary"], "Timer with three presets.");
    // An owner's note never renames the chat.
    assert_eq!(app.detail(&token, "a").await["title"], "New chat");

    let long = json!({ "digest": "d".repeat(601), "summary": "" });
    let r = send_json(&app, reqwest::Method::PUT, "/api/chats/a/note", long, &token).await;
    assert_error(r, StatusCode::PAYLOAD_TOO_LARGE, "digest_too_long").await;
    let long = json!({ "digest": "ok", "summary": "s".repeat(8001) });
    let r = send_json(&app, reqwest::Method::PUT, "/api/chats/a/note", long, &token).await;
    assert_error(r, StatusCode::PAYLOAD_TOO_LARGE, "summary_too_long").await;
    let kept: Value = app.get("/api/chats/a/note", Some(&token)).await.json().await.expect("json");
    assert_eq!(kept["note"]["digest"], "Built the tea timer app.", "a refused edit changes nothing");
    let r = send_json(&app, reqwest::Method::PUT, "/api/chats/a/note", json!({ "digest": 5 }), &token).await;
    assert!(r.status().is_client_error());

    // A deleted chat's note is gone with it (until it is recovered).
    let r = app.client.delete(app.url("/api/chats/a")).bearer_auth(&token).send().await.expect("delete");
    assert!(r.status().is_success());
    assert_error(app.get("/api/chats/a/note", Some(&token)).await, StatusCode::NOT_FOUND, "chat_not_found").await;
}

/// A fake Claude that records its command line (one file per chat, turns separated).
fn recording_claude(dir: &Path) -> PathBuf {
    let inner = fake_claude(dir, "0", 1);
    script(
        dir,
        "recording-claude",
        &format!(
            "{{ printf '%s\\n' \"$@\"; echo '=== end of turn'; }} >> \"$MOBIUS_DATA_DIR/args-$MOBIUS_CHAT_ID\"\nexec {} \"$@\"",
            inner.display()
        ),
    )
}

async fn finished_turn(app: &TestApp, token: &str, chat: &str, content: &str, cid: &str) {
    app.chat(token, chat).await;
    let mut stream = app.stream(token, chat, None).await;
    app.send(token, chat, content, cid).await;
    stream.until("done", 30).await;
}

fn turns(app: &TestApp, chat: &str) -> Vec<String> {
    let text = std::fs::read_to_string(app.data_dir().join(format!("args-{chat}"))).expect("args");
    text.split("=== end of turn\n").filter(|t| !t.is_empty()).map(str::to_owned).collect()
}

#[tokio::test]
async fn a_new_chat_prompt_carries_memory_pinned_and_not_when_it_is_off() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let bin = recording_claude(dir.path());
    let app = TestApp::spawn_in(dir, |c| {
        c.claude_bin = bin;
        c.agent_start_timeout = Duration::from_secs(5);
    })
    .await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    send_json(&app, reqwest::Method::PUT, "/api/memory/owner", json!({ "content": "- likes <b>tea</b>\n" }), &token)
        .await;
    app.chat(&token, "a").await;
    let note = json!({ "digest": "Built the tea timer app.", "summary": "never injected" });
    send_json(&app, reqwest::Method::PUT, "/api/chats/a/note", note, &token).await;

    finished_turn(&app, &token, "b", "hello", "m1").await;
    let first = &turns(&app, "b")[0];
    assert!(first.contains("likes &lt;b&gt;tea&lt;/b&gt;"), "the owner's memory, escaped: {first}");
    assert!(first.contains("Digest: Built the tea timer app.") && first.contains("Chat: a"), "{first}");
    assert!(!first.contains("never injected"), "summaries are not injected");

    // The prompt is pinned: a later turn sends the same bytes although memory changed.
    send_json(&app, reqwest::Method::PUT, "/api/memory/owner", json!({ "content": "- likes coffee\n" }), &token).await;
    finished_turn(&app, &token, "b", "again", "m2").await;
    let both = turns(&app, "b");
    let prompt = |t: &str| t.split("--append-system-prompt\n").nth(1).map(|p| p.to_owned()).unwrap_or_default();
    assert_eq!(both.len(), 2);
    assert!(!prompt(&both[0]).is_empty());
    let head = |t: &str| prompt(t).split("\n--").next().map(|p| p.trim_end().to_owned());
    assert_eq!(head(&both[0]), head(&both[1]));
    assert!(!both[1].contains("coffee"));

    send_json(&app, reqwest::Method::PATCH, "/api/memory", json!({ "enabled": false }), &token).await;
    finished_turn(&app, &token, "c", "hi", "m1").await;
    let off = &turns(&app, "c")[0];
    assert!(!off.contains("coffee") && !off.contains("Built the tea timer app."), "memory is off: {off}");
    assert!(!off.contains("## Memory"));
}

async fn skills(app: &TestApp, token: &str) -> Vec<Value> {
    let body: Value = app.get("/api/skills", Some(token)).await.json().await.expect("json");
    body["skills"].as_array().cloned().unwrap_or_default()
}

async fn skills_until(app: &TestApp, token: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    eventually("the skills index gets there", || async {
        let list = skills(app, token).await;
        done(&list).then_some(list)
    })
    .await
}

fn named<'a>(list: &'a [Value], name: &str) -> Option<&'a Value> {
    list.iter().find(|s| s["name"] == name)
}

#[tokio::test]
async fn the_skills_index_follows_the_agents_skills_folder() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let list = skills(&app, &token).await;
    let built_in = named(&list, "build-an-app").expect("the built-in skill is listed");
    assert_eq!(built_in["origin"], "built_in");
    let folder = app.data_dir().join("skills");
    assert!(folder.is_dir(), "the agent's skills folder exists");

    std::fs::write(folder.join("charts.md"), "---\ndescription: Draw charts\n---\n# Charts\n").expect("write");
    let list = skills_until(&app, &token, |l| named(l, "charts").is_some()).await;
    let charts = named(&list, "charts").expect("charts");
    assert_eq!((charts["origin"].as_str(), charts["description"].as_str()), (Some("agent"), Some("Draw charts")));

    std::fs::write(folder.join("charts.md"), "---\ndescription: Draw better charts\n---\n").expect("change");
    skills_until(&app, &token, |l| named(l, "charts").is_some_and(|s| s["description"] == "Draw better charts")).await;

    std::fs::create_dir_all(folder.join("deploy")).expect("dir");
    std::fs::write(folder.join("deploy/SKILL.md"), "---\ndescription: unclosed\n").expect("broken");
    let list = skills_until(&app, &token, |l| named(l, "deploy").is_some()).await;
    assert!(named(&list, "deploy").expect("deploy")["error"].as_str().is_some_and(|e| e.contains("never closed")));
    assert!(named(&list, "charts").is_some(), "a malformed skill does not take the others down");

    std::fs::remove_file(folder.join("charts.md")).expect("remove");
    skills_until(&app, &token, |l| named(l, "charts").is_none()).await;
}
