//! The runtime around a turn with the real CLIs: the model list and a chat's model and effort,
//! the plan's windows, parking on a usage limit and continuing at the reset, and a provider
//! switch (and `/compact`) whose next turn starts from the handoff summary.

use serde_json::{Value, json};

use super::helpers::TestApp;
use super::{Cli, Mock, Rig, cli_bin, pick_codex_model, server_env};

pub async fn a_chats_model_and_effort_reach_the_cli_and_codex_lists_its_models(cli: Cli) {
    let rig = Rig::start(cli, json!({ "steps": [{ "text": "picked" }] })).await;
    let Rig { app, token, mock, .. } = &rig;
    let models: Value = app.get("/api/models", Some(token)).await.json().await.expect("json");
    let (model, effort) = match cli {
        Cli::Claude => ("sonnet", "high"),
        Cli::Codex => {
            let codex = models["providers"]["codex"].as_array().expect("codex models");
            let listed = codex.iter().find(|m| m["id"] == "gpt-5.5").expect("gpt-5.5 is listed");
            assert_eq!(listed["available"], true, "the list comes from the CLI: {listed}");
            assert!(listed["effort_levels"].as_array().is_some_and(|l| l.contains(&json!("high"))), "{listed}");
            ("gpt-5.5", "high")
        }
    };
    app.chat(token, "p").await;
    let r = app
        .client
        .patch(app.url("/api/chats/p"))
        .bearer_auth(token)
        .json(&json!({ "model": model, "effort": effort }))
        .send()
        .await
        .expect("patch");
    assert_eq!(r.status(), 200);
    let mut stream = app.stream(token, "p", None).await;
    app.send(token, "p", "hello", "m1").await;
    let events = stream.until("done", 90).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{cli:?}: {:?}", events.last());
    let body = mock.last_body();
    match cli {
        // The alias reaches the API as the model's full name.
        Cli::Claude => assert!(body.contains("sonnet"), "{body}"),
        Cli::Codex => {
            let sent: Value = serde_json::from_str(&body).expect("a JSON request");
            let sent = &sent["body"];
            assert_eq!(sent["model"], "gpt-5.5");
            assert_eq!(sent["reasoning"]["effort"], "high", "the effort reached the model: {}", sent["reasoning"]);
        }
    }
}

/// The plan's window headers a model server sends with every reply (Claude's unified windows,
/// Codex's primary and secondary).
fn plan_headers(cli: Cli, used: &str, reset_in: u32) -> Value {
    match cli {
        Cli::Claude => json!({
            "anthropic-ratelimit-unified-status": if used == "1.0" { "rejected" } else { "allowed" },
            "anthropic-ratelimit-unified-reset": format!("{{now+{reset_in}}}"),
            "anthropic-ratelimit-unified-representative-claim": "five_hour",
            "anthropic-ratelimit-unified-5h-utilization": used,
            "anthropic-ratelimit-unified-5h-reset": format!("{{now+{reset_in}}}"),
            "anthropic-ratelimit-unified-7d-utilization": "0.42",
            "anthropic-ratelimit-unified-7d-reset": "{now+86400}",
        }),
        Cli::Codex => {
            let percent = if used == "1.0" {
                "100".to_owned()
            } else {
                format!("{:.0}", used.parse::<f64>().unwrap_or(0.0) * 100.0)
            };
            json!({
                "x-codex-primary-used-percent": percent,
                "x-codex-primary-window-minutes": "300",
                "x-codex-primary-reset-at": format!("{{now+{reset_in}}}"),
                "x-codex-secondary-used-percent": "42",
                "x-codex-secondary-window-minutes": "10080",
                "x-codex-secondary-reset-at": "{now+86400}",
            })
        }
    }
}

pub async fn the_plans_windows_are_recorded_from_the_clis_reports(cli: Cli) {
    let script = json!({ "headers": plan_headers(cli, "0.91", 3600), "steps": [{ "text": "close to the limit" }] });
    let rig = Rig::start_on_plan(cli, script, &[]).await;
    let Rig { app, token, .. } = &rig;
    app.chat(token, "w").await;
    let mut stream = app.stream(token, "w", None).await;
    app.send(token, "w", "hello", "m1").await;
    let events = stream.until("done", 90).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{cli:?}: {:?}", events.last());
    let provider = match cli {
        Cli::Claude => "claude",
        Cli::Codex => "codex",
    };
    let usage: Value =
        app.get(&format!("/api/settings/provider-usage/{provider}"), Some(token)).await.json().await.expect("json");
    let windows = usage["windows"].as_array().expect("windows");
    let five = windows.iter().find(|w| w["label"] == "5-hour").unwrap_or_else(|| panic!("{cli:?}: {usage}"));
    assert!((five["used_percent"].as_f64().expect("used") - 91.0).abs() < 1.0, "{five}");
    assert!(five["resets_at"].as_i64().is_some(), "{five}");
    assert!(windows.iter().any(|w| w["label"] == "Weekly"), "{usage}");
    // The reply carries what its turn used.
    let detail = app.detail(token, "w").await;
    assert!(
        detail["messages"][1]["usage"]["input_tokens"].as_i64().is_some_and(|n| n > 0),
        "{}",
        detail["messages"][1]
    );
}

/// The model server's answer when the plan's limit is reached, resetting in `secs` seconds;
/// served once (the limit has reset by the next request).
fn limit_step(cli: Cli, secs: u32) -> Value {
    let reset = format!("{{now+{secs}}}");
    match cli {
        Cli::Claude => json!({ "once": true, "headers": plan_headers(cli, "1.0", secs),
            "error": { "status": 429, "type": "rate_limit_error", "message": "Usage limit reached." } }),
        Cli::Codex => json!({ "once": true, "headers": plan_headers(cli, "1.0", secs),
            "error": { "status": 429, "type": "usage_limit_reached", "message": "You've hit your usage limit.",
                "plan_type": "plus", "resets_at": reset } }),
    }
}

pub async fn a_usage_limit_parks_the_chat_until_the_reset_and_it_continues_by_itself(cli: Cli) {
    let script = json!({ "steps": [limit_step(cli, 6)], "default": { "text": "continued after the reset" } });
    let rig = Rig::start_on_plan(cli, script, &[]).await;
    let Rig { app, token, .. } = &rig;
    app.chat(token, "p").await;
    let mut stream = app.stream(token, "p", None).await;
    app.send(token, "p", "do the long thing", "m1").await;
    let events = stream.until("done", 90).await;
    assert_eq!(events.last().expect("done").data["status"], "failed", "{cli:?}: {:?}", events.last());
    let error = events.iter().find(|e| e.data["type"] == "error").unwrap_or_else(|| panic!("{cli:?}: no error card"));
    assert_eq!(error.data["pause"]["kind"], "usage_limit", "{cli:?}: {}", error.data);
    let resumes_at = error.data["pause"]["resumes_at"].as_i64().expect("a time to continue at");
    let detail = app.detail(token, "p").await;
    assert_eq!(detail["resume_at"], resumes_at, "the park is stored with the chat");
    assert_eq!(detail["auto_resume"], true);

    // Nobody sends anything: at the reset the chat continues by itself.
    let started = stream.until("run_started", 120).await;
    let ts = started.last().expect("run_started").data["ts"].as_i64().expect("ts");
    assert!(ts >= resumes_at, "{cli:?}: it continued at {ts}, before the reset {resumes_at}");
    let events = stream.until("done", 90).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{cli:?}: {:?}", events.last());
    let detail = app.detail(token, "p").await;
    assert_eq!(detail["resume_at"], Value::Null);
    let messages = detail["messages"].as_array().expect("messages");
    let hidden = messages.iter().find(|m| m["hidden"] == true).expect("the continuation message");
    assert!(hidden["cid"].as_str().is_some_and(|c| c.starts_with("resume-limit-")), "{hidden}");
    let last = messages.last().expect("reply");
    assert!(last["content"].as_str().unwrap_or_default().contains("continued after the reset"), "{last}");
}

/// A server with both CLIs connected, each with its scripted model server.
struct Both {
    _dir: std::sync::Arc<tempfile::TempDir>,
    claude: Mock,
    codex: Mock,
    app: TestApp,
    token: String,
}

async fn both(claude: Value, codex: Value) -> Both {
    let dir = std::sync::Arc::new(tempfile::tempdir().expect("tmp"));
    let claude_dir = dir.path().join("mock-claude");
    let codex_dir = dir.path().join("mock-codex");
    std::fs::create_dir_all(&claude_dir).expect("dir");
    std::fs::create_dir_all(&codex_dir).expect("dir");
    let claude = Mock::start(Cli::Claude, &claude_dir, &claude).await;
    let codex = Mock::start(Cli::Codex, &codex_dir, &codex).await;
    let mut env = server_env(Cli::Claude, claude.port);
    env.push(("MOBIUS_CODEX_BIN", cli_bin(Cli::Codex).display().to_string()));
    env.push(("MOBIUS_OPENAI_API_URL", format!("http://127.0.0.1:{}/v1", codex.port)));
    env.push(("MOBIUS_CODEX_BASE_URL", format!("http://127.0.0.1:{}/v1", codex.port)));
    let app = TestApp::spawn_process(dir.clone(), &env).await;
    let token = app.setup_owner().await;
    for id in ["claude", "codex"] {
        let r =
            app.post(&format!("/api/providers/{id}/api-key"), json!({ "api_key": "sk-mock-key" }), Some(&token)).await;
        assert_eq!(r.status(), 200, "connecting {id}");
    }
    pick_codex_model(&app, &token).await;
    Both { _dir: dir, claude, codex, app, token }
}

async fn turn_in(app: &TestApp, token: &str, chat: &str, content: &str, cid: &str) {
    let mut stream = app.stream(token, chat, None).await;
    assert_eq!(app.send(token, chat, content, cid).await["status"], "started");
    let events = stream.until("done", 120).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{:?}", events.last());
}

/// A chat moves from Claude to Codex mid-conversation: Claude summarises it, the marker card
/// joins the transcript, and Codex's first turn starts from the summary. `/compact` then does
/// the same on Codex itself.
#[tokio::test]
#[ignore = "needs the agent CLIs; scripts/test runs it"]
async fn a_chat_switched_to_the_other_provider_continues_there_from_the_handoff_summary() {
    let claude =
        json!({ "side_text": "HANDOFF: the owner's code word is PINEAPPLE.", "steps": [{ "text": "Noted." }] });
    let codex = json!({ "default": { "text": "Codex here." } });
    let Both { claude: claude_mock, codex: codex_mock, app, token, .. } = both(claude, codex).await;
    app.chat(&token, "sw").await;
    let r = app
        .client
        .patch(app.url("/api/chats/sw"))
        .bearer_auth(&token)
        .json(&json!({ "provider": "claude" }))
        .send()
        .await;
    assert_eq!(r.expect("patch").status(), 200);
    turn_in(&app, &token, "sw", "remember the code word PINEAPPLE", "m1").await;

    let body = json!({ "provider": "codex", "agent_settings_json": { "model": "gpt-5.5" }, "switch_id": "sw-1" });
    let r = app.post("/api/chats/sw/provider-switch", body.clone(), Some(&token)).await;
    assert_eq!(r.status(), 200);
    let switched: Value = r.json().await.expect("json");
    assert_eq!((switched["stored"].clone(), switched["provider"].clone()), (json!(true), json!("codex")));
    assert!(switched["summary"].as_str().is_some_and(|s| s.contains("PINEAPPLE")), "Claude wrote it: {switched}");
    assert!(claude_mock.bodies().iter().any(|b| b.contains("mobius-handoff")), "the summary was asked of Claude");
    // The same switch again is answered from the first.
    let again: Value = app.post("/api/chats/sw/provider-switch", body, Some(&token)).await.json().await.expect("json");
    assert_eq!((again["stored"].clone(), again["summary"].clone()), (json!(false), switched["summary"].clone()));
    let detail = app.detail(&token, "sw").await;
    assert_eq!((detail["provider"].clone(), detail["session_id"].clone()), (json!("codex"), Value::Null));
    let marker = detail["messages"].as_array().and_then(|m| m.last()).expect("marker")["blocks"][0].clone();
    assert_eq!(marker["type"], "handoff", "{marker}");
    assert_eq!((marker["from_provider"].as_str(), marker["to_provider"].as_str()), (Some("claude"), Some("codex")));
    assert_eq!(marker["summarized_by"], "provider");

    turn_in(&app, &token, "sw", "what is the code word?", "m2").await;
    let seen = codex_mock.last_body();
    assert!(seen.contains("PINEAPPLE") && seen.contains("compacted_chat"), "Codex's first turn saw the summary");
    assert!(seen.contains("what is the code word?"));
    let detail = app.detail(&token, "sw").await;
    assert!(detail["session_id"].as_str().is_some(), "Codex's session");
    assert!(detail["messages"].to_string().contains("Codex here."));

    // `/compact` on Codex: a fresh Codex session from a summary.
    let r = app.post("/api/chats/sw/compact", json!({}), Some(&token)).await;
    assert_eq!(r.status(), 200);
    let compacted: Value = r.json().await.expect("json");
    assert_eq!(compacted["provider"], "codex");
    let detail = app.detail(&token, "sw").await;
    let marker = detail["messages"].as_array().and_then(|m| m.last()).expect("marker")["blocks"][0].clone();
    assert_eq!((marker["reason"].as_str(), marker["to_provider"].as_str()), (Some("compact"), Some("codex")));
    assert_eq!(detail["session_id"], Value::Null);
    turn_in(&app, &token, "sw", "carry on", "m3").await;
    assert!(codex_mock.last_body().contains("compacted_chat"), "the next Codex session starts from it");
}

pub async fn the_memory_ceiling_stops_a_runaway_command(cli: Cli) {
    let command = "/usr/bin/python3 -c 'x = bytearray(3 * 1024**3); print(\"ALLOCATED\")'; echo EXIT=$?";
    let step = match cli {
        Cli::Claude => {
            json!({ "text": "Allocating.", "tool_use": { "name": "Bash", "input": { "command": command, "description": "allocate" } } })
        }
        Cli::Codex => json!({ "text": "Allocating.", "shell": command }),
    };
    let script = json!({ "steps": [step], "default": { "text": "after the allocation" } });
    let rig = Rig::start_with(cli, script, &[("MOBIUS_AGENT_MEMORY_MAX_MB", "1024")]).await;
    let Rig { app, token, .. } = &rig;
    let settings: Value = app.get("/api/settings", Some(token)).await.json().await.expect("settings");
    let memory = settings["agent_limits"]["memory"].clone();
    assert_eq!(memory["max_bytes"], 1u64 << 30, "{memory}");
    app.chat(token, "m").await;
    let mut stream = app.stream(token, "m", None).await;
    app.send(token, "m", "use a lot of memory", "m1").await;
    let events = stream.until("done", 180).await;
    let done = events.last().expect("done").data.clone();
    let detail = app.detail(token, "m").await;
    let transcript = detail["messages"].to_string();
    let outputs: String = detail["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["blocks"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool")
        .map(|b| b["output"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(!outputs.contains("ALLOCATED"), "{cli:?}: the allocation went through: {outputs}");
    match memory["mode"].as_str() {
        // The whole tree is held: the kill ends the turn with a card that says why.
        Some("cgroup") => {
            assert_eq!(done["status"], "failed", "{cli:?}: {done}");
            let error = events.iter().find(|e| e.data["type"] == "error").expect("error card");
            assert!(error.data["message"].as_str().is_some_and(|m| m.contains("1024 MiB of memory")), "{}", error.data);
        }
        // Each process is held: the runaway command fails its allocation and the turn goes on.
        Some("rlimit") => {
            assert_eq!(done["status"], "completed", "{cli:?}: {done}");
            assert!(outputs.contains("MemoryError") && outputs.contains("EXIT=1"), "{cli:?}: {outputs}");
            assert!(transcript.contains("after the allocation"), "{cli:?}: {transcript}");
        }
        other => panic!("no memory ceiling in force: {other:?}"),
    }
    // The server is fine: it answers and takes the next turn.
    assert_eq!(app.get("/api/health", None).await.status(), 200);
}
