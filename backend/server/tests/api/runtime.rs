//! The agent runtime around a turn, with fake CLIs: models and effort (the list, the owner's
//! default per provider, a chat's own pick, what the CLI is started with).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, script};

/// A one-turn Claude imitation that appends its arguments, one per line, to
/// `DATA_DIR/agent-args.txt` (a blank line ends each run).
fn recording_claude(dir: &Path) -> PathBuf {
    script(
        dir,
        "fake-claude",
        r#"for a in "$@"; do printf '%s\n' "$a" >> "$MOBIUS_DATA_DIR/agent-args.txt"; done
printf '\n' >> "$MOBIUS_DATA_DIR/agent-args.txt"
IFS= read -r init
IFS= read -r user
printf '{"type":"system","subtype":"init","session_id":"s1"}\n'
printf '{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"ok"}]},"session_id":"s1"}\n'
printf '{"type":"result","subtype":"success","is_error":false,"session_id":"s1","total_cost_usd":0.02,"usage":{"input_tokens":11,"output_tokens":13,"cache_read_input_tokens":3,"cache_creation_input_tokens":2}}\n'
cat >/dev/null"#,
    )
}

async fn app_recording() -> (TestApp, String) {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let bin = recording_claude(dir.path());
    let app = TestApp::spawn_in(dir, |c| c.claude_bin = bin).await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    (app, token)
}

/// The arguments of each CLI run so far.
fn runs(app: &TestApp) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(app.data_dir().join("agent-args.txt")).unwrap_or_default();
    text.split("\n\n").filter(|r| !r.trim().is_empty()).map(|r| r.lines().map(str::to_owned).collect()).collect()
}

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).map(|i| args[i + 1].clone())
}

async fn completed_turn(app: &TestApp, token: &str, chat: &str, cid: &str) {
    let mut stream = app.stream(token, chat, None).await;
    assert_eq!(app.send(token, chat, "hello", cid).await["status"], "started");
    let done = stream.until("done", 30).await;
    assert_eq!(done.last().expect("done").data["status"], "completed");
}

#[tokio::test]
async fn models_come_with_their_effort_levels_and_a_missing_cli_gives_the_fallback_list() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let models: Value = app.get("/api/models", Some(&token)).await.json().await.expect("json");
    let claude = models["providers"]["claude"].as_array().expect("claude");
    let ids: Vec<&str> = claude.iter().filter_map(|m| m["id"].as_str()).collect();
    assert_eq!(ids, vec!["opus", "sonnet", "haiku"]);
    assert_eq!(claude[0]["effort_levels"], json!(["low", "medium", "high", "xhigh", "max"]));
    assert_eq!(claude[0]["provider"], "claude");
    let codex = models["providers"]["codex"].as_array().expect("codex");
    assert!(!codex.is_empty());
    assert_eq!(codex[0]["available"], false, "no codex CLI here: the maintained list, marked so");
}

#[tokio::test]
async fn a_chats_model_and_effort_win_over_the_owners_default_and_reach_the_cli() {
    let (app, token) = app_recording().await;
    // No pick anywhere: the CLI's own defaults.
    app.chat(&token, "a").await;
    completed_turn(&app, &token, "a", "m1").await;
    let first = runs(&app).pop().expect("a run");
    assert_eq!((flag(&first, "--model"), flag(&first, "--effort")), (None, None));

    // The owner's default for Claude.
    let defaults = json!({ "agent_defaults": { "claude": { "model": "sonnet", "effort": "high" }, "codex": {} } });
    assert_eq!(app.post("/api/settings", defaults, Some(&token)).await.status(), StatusCode::OK);
    let settings: Value = app.get("/api/settings", Some(&token)).await.json().await.expect("json");
    assert_eq!(settings["agent_defaults"]["claude"], json!({ "model": "sonnet", "effort": "high" }));
    completed_turn(&app, &token, "a", "m2").await;
    let second = runs(&app).pop().expect("a run");
    assert_eq!(
        (flag(&second, "--model").as_deref(), flag(&second, "--effort").as_deref()),
        (Some("sonnet"), Some("high"))
    );

    // The chat's own pick (the effort only: the model stays the default's).
    let r =
        app.client.patch(app.url("/api/chats/a")).bearer_auth(&token).json(&json!({ "effort": "low" })).send().await;
    assert_eq!(r.expect("patch").status(), StatusCode::OK);
    let detail = app.detail(&token, "a").await;
    assert_eq!((detail["model"].clone(), detail["effort"].clone()), (Value::Null, json!("low")));
    completed_turn(&app, &token, "a", "m3").await;
    let third = runs(&app).pop().expect("a run");
    assert_eq!(
        (flag(&third, "--model").as_deref(), flag(&third, "--effort").as_deref()),
        (Some("sonnet"), Some("low"))
    );

    // Bad picks are refused with their code; nothing is stored.
    let bad =
        app.client.patch(app.url("/api/chats/a")).bearer_auth(&token).json(&json!({ "effort": "--yolo" })).send().await;
    assert_error(bad.expect("patch"), StatusCode::BAD_REQUEST, "invalid_effort").await;
    let bad = json!({ "agent_defaults": { "claude": { "model": "two words" } } });
    assert_error(app.post("/api/settings", bad, Some(&token)).await, StatusCode::BAD_REQUEST, "invalid_model").await;
    assert_eq!(app.detail(&token, "a").await["effort"], "low");
    // `null` clears the chat's pick.
    let r = app.client.patch(app.url("/api/chats/a")).bearer_auth(&token).json(&json!({ "effort": null })).send().await;
    assert_eq!(r.expect("patch").status(), StatusCode::OK);
    assert_eq!(app.detail(&token, "a").await["effort"], Value::Null);
}

#[tokio::test]
async fn each_reply_carries_what_its_turn_used_and_the_chat_adds_them_up() {
    let (app, token) = app_recording().await;
    app.chat(&token, "u").await;
    completed_turn(&app, &token, "u", "m1").await;
    completed_turn(&app, &token, "u", "m2").await;
    let detail = app.detail(&token, "u").await;
    let reply = &detail["messages"][1];
    assert_eq!(reply["role"], "assistant");
    assert_eq!(
        reply["usage"],
        json!({ "input_tokens": 11, "output_tokens": 13, "cache_read_tokens": 3, "cache_write_tokens": 2, "cost_usd": 0.02 })
    );
    let total: Value = app.get("/api/chats/u/usage", Some(&token)).await.json().await.expect("json");
    assert_eq!(total["turns"], 2);
    assert_eq!((total["input_tokens"].clone(), total["output_tokens"].clone()), (json!(22), json!(26)));
    assert!((total["cost_usd"].as_f64().expect("cost") - 0.04).abs() < 1e-9, "{total}");
    // No turn reported plan windows yet.
    let windows: Value = app.get("/api/settings/provider-usage/claude", Some(&token)).await.json().await.expect("json");
    assert_eq!(windows["windows"], json!([]));
    let unknown = app.get("/api/settings/provider-usage/gemini", Some(&token)).await;
    assert_error(unknown, StatusCode::NOT_FOUND, "unknown_provider").await;
}

/// A Claude imitation whose plan is out: a refusal that resets in an hour.
fn limited_claude(dir: &Path) -> PathBuf {
    script(
        dir,
        "limited-claude",
        r#"IFS= read -r init
IFS= read -r user
reset=$(( $(date +%s) + 3600 ))
printf '{"type":"system","subtype":"init","session_id":"s1"}\n'
printf '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":%s,"rateLimitType":"five_hour","unifiedWindows":{"five_hour":{"utilization":1,"resetsAt":%s,"status":"rejected"}}},"session_id":"s1"}\n' "$reset" "$reset"
printf '{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"You have hit your 5-hour limit","session_id":"s1"}\n'
cat >/dev/null"#,
    )
}

#[tokio::test]
async fn a_usage_limit_parks_the_chat_at_its_reset_unless_its_switch_is_off() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let bin = limited_claude(dir.path());
    let app = TestApp::spawn_in(dir, |c| c.claude_bin = bin).await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    app.chat(&token, "l").await;
    let mut stream = app.stream(&token, "l", None).await;
    let before = mobius::db::now_ms();
    app.send(&token, "l", "hello", "m1").await;
    let events = stream.until("done", 30).await;
    let error = events.iter().find(|e| e.data["type"] == "error").expect("error card").data.clone();
    assert_eq!(error["pause"]["kind"], "usage_limit");
    let at = error["pause"]["resumes_at"].as_i64().expect("continues at");
    assert!(at > before + 3_590_000 && at < before + 3_700_000, "the reset plus a little: {at}");
    let detail = app.detail(&token, "l").await;
    assert_eq!(detail["resume_at"], at);
    let windows: Value = app.get("/api/settings/provider-usage/claude", Some(&token)).await.json().await.expect("json");
    assert_eq!(windows["windows"][0]["status"], "rejected", "{windows}");

    // The switch off drops the park; a limit then only says so.
    let r = app
        .client
        .patch(app.url("/api/chats/l"))
        .bearer_auth(&token)
        .json(&json!({ "auto_resume": false }))
        .send()
        .await;
    assert_eq!(r.expect("patch").status(), StatusCode::OK);
    let detail = app.detail(&token, "l").await;
    assert_eq!((detail["auto_resume"].clone(), detail["resume_at"].clone()), (json!(false), Value::Null));
    app.send(&token, "l", "again", "m2").await;
    let events = stream.until("done", 30).await;
    let error = events.iter().find(|e| e.data["type"] == "error").expect("error card").data.clone();
    assert_eq!(error["pause"]["kind"], "usage_limit");
    assert_eq!(error["pause"].get("resumes_at"), None, "{error}");
    assert_eq!(app.detail(&token, "l").await["resume_at"], Value::Null);
}

#[tokio::test]
async fn a_provider_switch_is_refused_while_it_cannot_happen_and_summarises_from_the_transcript_without_the_old_provider()
 {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let bin = crate::chats::fake_claude(dir.path(), "2", 0);
    let app = TestApp::spawn_in(dir, |c| c.claude_bin = bin).await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    app.chat(&token, "s").await;
    let mut stream = app.stream(&token, "s", None).await;
    app.send(&token, "s", "plan the garden", "m1").await;
    stream.until("run_started", 10).await;
    let switch = |provider: &str, id: &str| json!({ "provider": provider, "switch_id": id });
    let busy = app.post("/api/chats/s/provider-switch", switch("codex", "a"), Some(&token)).await;
    assert_error(busy, StatusCode::CONFLICT, "chat_busy").await;
    stream.until("done", 30).await;
    let unknown = app.post("/api/chats/s/provider-switch", switch("gemini", "a"), Some(&token)).await;
    assert_error(unknown, StatusCode::BAD_REQUEST, "unknown_provider").await;
    let offline = app.post("/api/chats/s/provider-switch", switch("codex", "a"), Some(&token)).await;
    assert_error(offline, StatusCode::CONFLICT, "provider_not_connected").await;
    let missing = app.post("/api/chats/nope/provider-switch", switch("claude", "a"), Some(&token)).await;
    assert_error(missing, StatusCode::NOT_FOUND, "chat_not_found").await;
    let bad = app
        .post(
            "/api/chats/s/provider-switch",
            json!({ "provider": "codex", "agent_settings_json": { "effort": "x y" } }),
            Some(&token),
        )
        .await;
    assert_error(bad, StatusCode::BAD_REQUEST, "invalid_effort").await;

    // Codex is signed in, Claude no longer is: the summary comes from the transcript.
    let masters = app.data_dir().join("credentials");
    std::fs::create_dir_all(&masters).expect("credentials dir");
    std::fs::write(masters.join("codex-auth.json"), r#"{"OPENAI_API_KEY": "sk-x"}"#).expect("auth.json");
    let r = app.client.delete(app.url("/api/providers/claude")).bearer_auth(&token).send().await.expect("delete");
    assert_eq!(r.status(), StatusCode::OK);
    let r = app.post("/api/chats/s/provider-switch", switch("codex", "b"), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let switched: Value = r.json().await.expect("json");
    let summary = switched["summary"].as_str().expect("summary");
    assert!(summary.contains("Owner: plan the garden") && summary.contains("reply for s"), "{summary}");
    let detail = app.detail(&token, "s").await;
    let marker = &detail["messages"][2]["blocks"][0];
    assert_eq!((marker["type"].as_str(), marker["summarized_by"].as_str()), (Some("handoff"), Some("transcript")));
    assert_eq!(detail["provider"], "codex");
    // The reply before a handoff marker is history: it cannot be regenerated.
    let regenerate = app.post("/api/chats/s/regenerate", json!({ "message_idx": 0 }), Some(&token)).await;
    assert_error(regenerate, StatusCode::CONFLICT, "not_regenerable").await;
}

#[tokio::test]
async fn a_turn_past_its_output_ceiling_is_ended_with_a_card_that_says_so() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let bin = script(
        dir.path(),
        "flooding-claude",
        r#"IFS= read -r init
IFS= read -r user
chunk=$(printf '%01000d' 0)
printf '{"type":"system","subtype":"init","session_id":"s1"}\n'
printf '{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}},"session_id":"s1"}\n'
i=0
while [ $i -lt 3000 ]; do
  printf '{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"%s"}},"session_id":"s1"}\n' "$chunk"
  i=$((i+1))
done
printf '{"type":"result","subtype":"success","is_error":false,"session_id":"s1"}\n'
cat >/dev/null"#,
    );
    let app = TestApp::spawn_in(dir, |c| {
        c.claude_bin = bin;
        c.agent_output_max = 1 << 20;
    })
    .await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    let settings: Value = app.get("/api/settings", Some(&token)).await.json().await.expect("json");
    assert_eq!(settings["agent_limits"]["output_max_bytes"], 1 << 20);
    assert!(
        ["cgroup", "rlimit"].contains(&settings["agent_limits"]["memory"]["mode"].as_str().unwrap_or_default()),
        "{settings}"
    );
    app.chat(&token, "f").await;
    let mut stream = app.stream(&token, "f", None).await;
    app.send(&token, "f", "say a lot", "m1").await;
    let events = stream.until("done", 60).await;
    assert_eq!(events.last().expect("done").data["status"], "failed");
    let error = events.iter().find(|e| e.data["type"] == "error").expect("error card");
    assert!(error.data["message"].as_str().is_some_and(|m| m.contains("more than 1 MiB")), "{}", error.data);
    // The server goes on: the next turn starts.
    assert_eq!(app.send(&token, "f", "again", "m2").await["status"], "started");
}
