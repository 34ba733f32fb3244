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
