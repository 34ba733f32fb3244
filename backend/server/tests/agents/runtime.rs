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
