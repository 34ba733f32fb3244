//! The runtime around a turn with the real CLIs: the model list and a chat's model and effort.

use serde_json::{Value, json};

use super::{Cli, Rig};

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
            let percent = if used == "1.0" { "100".to_owned() } else { format!("{:.0}", used.parse::<f64>().unwrap_or(0.0) * 100.0) };
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
    let usage: Value = app.get(&format!("/api/settings/provider-usage/{provider}"), Some(token)).await.json().await.expect("json");
    let windows = usage["windows"].as_array().expect("windows");
    let five = windows.iter().find(|w| w["label"] == "5-hour").unwrap_or_else(|| panic!("{cli:?}: {usage}"));
    assert!((five["used_percent"].as_f64().expect("used") - 91.0).abs() < 1.0, "{five}");
    assert!(five["resets_at"].as_i64().is_some(), "{five}");
    assert!(windows.iter().any(|w| w["label"] == "Weekly"), "{usage}");
    // The reply carries what its turn used.
    let detail = app.detail(token, "w").await;
    assert!(detail["messages"][1]["usage"]["input_tokens"].as_i64().is_some_and(|n| n > 0), "{}", detail["messages"][1]);
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
