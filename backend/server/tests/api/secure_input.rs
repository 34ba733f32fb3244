//! Secure input (issue 36): the agent asks for a secret, the owner types it into the card, it
//! is stored sealed as the app's secret, and neither the agent nor anything it can read ever
//! holds the value. Settings lists the names and replaces or deletes values.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{McpMock, TestApp, assert_error, eventually, files_containing, script};

/// What the owner types: it must reach the app's secret and nothing else.
const VALUE: &str = "sk-live-9f3a7c21e0d4b";

/// A Claude imitation that saves its agent token in its HOME and keeps the turn running.
fn holder(dir: &Path) -> PathBuf {
    script(
        dir,
        "fake-claude-holder",
        r#"IFS= read -r init
IFS= read -r user
printf '%s' "$MOBIUS_AGENT_TOKEN" > "$HOME/agent-token.tmp" && mv "$HOME/agent-token.tmp" "$HOME/agent-token"
printf '{"type":"system","subtype":"init","session_id":"s1"}\n'
exec sleep 300"#,
    )
}

async fn wait(app: &TestApp, agent: &str, chat: &str, id: &str) -> Value {
    let r = app
        .client
        .get(app.url(&format!("/api/secure-inputs/{chat}/{id}/wait")))
        .bearer_auth(agent)
        .timeout(Duration::from_secs(90))
        .send()
        .await
        .expect("wait");
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.expect("json")
}

#[tokio::test]
async fn a_secret_typed_into_the_card_is_stored_sealed_and_the_agent_gets_only_its_name() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let bin = holder(dir.path());
    let app = TestApp::spawn_in(dir, |c| {
        c.claude_bin = bin;
        c.agent_start_timeout = Duration::from_secs(10);
        c.connectors_allow_loopback = true;
    })
    .await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    let (app_id, app_token) = app.register_app("weather").await;
    let (other_app, other_token) = app.register_app("other").await;
    app.chat(&token, "mine").await;
    app.chat(&token, "other").await;
    app.send(&token, "mine", "set up the weather job", "m1").await;
    let home = app.data_dir().join("agent-home");
    let agent = eventually("the agent token", || async {
        std::fs::read_to_string(home.join("agent-token")).ok().filter(|t| !t.is_empty())
    })
    .await;

    // Bad requests: wrong chat, an owner token, a bad name, an unknown app, a long reason.
    let ask = |chat: &str, body: Value, who: &str| {
        app.client.post(app.url(&format!("/api/secure-inputs/{chat}"))).bearer_auth(who.to_owned()).json(&body).send()
    };
    let good = json!({ "name": "WEATHER_KEY", "app": "weather", "reason": "The forecast job calls the weather API." });
    assert_error(ask("other", good.clone(), &agent).await.expect("ask"), StatusCode::FORBIDDEN, "agent_only").await;
    assert_error(ask("mine", good.clone(), &token).await.expect("ask"), StatusCode::FORBIDDEN, "agent_only").await;
    let bad_name = json!({ "name": "../x", "app": "weather" });
    assert_error(ask("mine", bad_name, &agent).await.expect("ask"), StatusCode::BAD_REQUEST, "invalid_secret_name")
        .await;
    let no_app = json!({ "name": "K", "app": "nope" });
    assert_error(ask("mine", no_app, &agent).await.expect("ask"), StatusCode::NOT_FOUND, "app_not_found").await;
    let long = json!({ "name": "K", "app": "weather", "reason": "x".repeat(501) });
    assert_error(ask("mine", long, &agent).await.expect("ask"), StatusCode::BAD_REQUEST, "invalid_reason").await;

    // The card: in the chat, durable, naming the secret and the app.
    let r = ask("mine", good.clone(), &agent).await.expect("ask");
    assert_eq!(r.status(), StatusCode::CREATED);
    let created: Value = r.json().await.expect("json");
    let id = created["id"].as_str().expect("id").to_owned();
    assert_eq!(created["status"], "pending");
    assert_eq!(created["app_id"], app_id);
    let detail = app.detail(&token, "mine").await;
    assert_eq!(detail["pending_question_id"], id.as_str(), "{detail}");
    let text = detail.to_string();
    assert!(text.contains("\"kind\":\"secure_input\"") && text.contains("WEATHER_KEY"), "{text}");
    // One card at a time.
    assert_error(ask("mine", good.clone(), &agent).await.expect("ask"), StatusCode::CONFLICT, "pending_question_open")
        .await;

    // Only the owner answers, only through the card's route, only for this chat.
    let submit = |chat: &str, req: &str, body: Value, who: &str| {
        app.client
            .post(app.url(&format!("/api/secure-inputs/{chat}/{req}/submit")))
            .bearer_auth(who.to_owned())
            .json(&body)
            .send()
    };
    let r = submit("mine", &id, json!({ "value": VALUE }), &agent).await.expect("submit");
    assert_eq!(r.status(), StatusCode::FORBIDDEN, "the agent cannot fill its own card");
    let r = app
        .post(
            "/api/chats/mine/messages",
            json!({ "content": "", "cid": "a1", "question_id": id, "answers": { "secret": "stored" } }),
            Some(&token),
        )
        .await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_answers").await;
    let r = submit("other", &id, json!({ "value": VALUE }), &token).await.expect("submit");
    assert_error(r, StatusCode::NOT_FOUND, "secure_input_not_found").await;
    let r = submit("mine", "q-unknown", json!({ "value": VALUE }), &token).await.expect("submit");
    assert_error(r, StatusCode::NOT_FOUND, "secure_input_not_found").await;
    let bad_values = [
        (json!({ "value": "" }), "invalid_secret_value"),
        (json!({ "value": "x".repeat(8193) }), "invalid_secret_value"),
        (json!({ "value": 5 }), "invalid_secret_value"),
        (json!({}), "invalid_request"),
    ];
    for (bad, code) in bad_values {
        let r = submit("mine", &id, bad, &token).await.expect("submit");
        let body = assert_error(r, StatusCode::BAD_REQUEST, code).await;
        assert!(!body.to_string().contains("xxxx"), "an error never quotes the value: {body}");
    }

    // The agent waits; the owner types the value; the agent hears "stored" and the name.
    let waiting = {
        let (client, url, agent) =
            (app.client.clone(), app.url(&format!("/api/secure-inputs/mine/{id}/wait")), agent.clone());
        tokio::spawn(async move {
            let r = client.get(url).bearer_auth(agent).timeout(Duration::from_secs(90)).send().await.expect("wait");
            (r.status(), r.text().await.expect("body"))
        })
    };
    let r = submit("mine", &id, json!({ "value": VALUE }), &token).await.expect("submit");
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(r.headers().get("cache-control").and_then(|v| v.to_str().ok()), Some("no-store"));
    let (status, heard) = waiting.await.expect("join");
    assert_eq!(status, StatusCode::OK);
    let heard: Value = serde_json::from_str(&heard).expect("json");
    assert_eq!(heard["status"], "stored");
    assert_eq!(heard["name"], "WEATHER_KEY");
    assert!(!heard.to_string().contains(VALUE));
    // Answered once: a second submit is refused.
    let r = submit("mine", &id, json!({ "value": "again" }), &token).await.expect("submit");
    assert_eq!(r.status(), StatusCode::NOT_FOUND);

    // Stored sealed as the app's secret; the card says "stored", nowhere the value.
    let r = app.get(&format!("/api/apps/{app_id}/secrets/WEATHER_KEY"), Some(&token)).await;
    assert_eq!(r.text().await.expect("text"), VALUE);
    let detail = eventually("the card reads stored", || async {
        let detail = app.detail(&token, "mine").await;
        detail.to_string().contains("\"secret\":\"stored\"").then_some(detail)
    })
    .await;
    assert_eq!(detail["pending_question_id"], Value::Null);
    assert!(!detail.to_string().contains(VALUE));
    assert!(files_containing(app.data_dir(), VALUE.as_bytes()).is_empty(), "no file in DATA_DIR holds the value");
    // The agent's token reads no secret.
    let r = app.get(&format!("/api/apps/{app_id}/secrets/WEATHER_KEY"), Some(&agent)).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let r = app.get(&format!("/api/apps/{app_id}/secrets"), Some(&agent)).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);

    // Settings: names only; replace; delete. Another app sees none of it.
    let list: Value = app.get(&format!("/api/apps/{app_id}/secrets"), Some(&token)).await.json().await.expect("json");
    assert_eq!(list["secrets"].as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(list["secrets"][0]["name"], "WEATHER_KEY");
    assert!(!list.to_string().contains(VALUE));
    let own: Value =
        app.get(&format!("/api/apps/{app_id}/secrets"), Some(&app_token)).await.json().await.expect("json");
    assert_eq!(own["secrets"][0]["name"], "WEATHER_KEY", "an app lists its own names");
    let r = app.get(&format!("/api/apps/{app_id}/secrets"), Some(&other_token)).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let none: Value =
        app.get(&format!("/api/apps/{other_app}/secrets"), Some(&token)).await.json().await.expect("json");
    assert_eq!(none["secrets"], json!([]));
    let r =
        app.put_json(&format!("/api/apps/{app_id}/secrets/WEATHER_KEY"), json!({ "value": "replaced" }), &token).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let r = app.get(&format!("/api/apps/{app_id}/secrets/WEATHER_KEY"), Some(&token)).await;
    assert_eq!(r.text().await.expect("text"), "replaced");
    let r = app.delete_with(&format!("/api/apps/{app_id}/secrets/WEATHER_KEY"), &token).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let list: Value = app.get(&format!("/api/apps/{app_id}/secrets"), Some(&token)).await.json().await.expect("json");
    assert_eq!(list["secrets"], json!([]));
    let r = app.get("/api/apps/99999/secrets", Some(&token)).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);

    // Declined: nothing stored, the agent hears "declined".
    let r = ask("mine", json!({ "name": "PASSWORD", "app": app_id }), &agent).await.expect("ask");
    assert_eq!(r.status(), StatusCode::CREATED);
    let second = r.json::<Value>().await.expect("json")["id"].as_str().expect("id").to_owned();
    let r = app.post(&format!("/api/secure-inputs/mine/{second}/decline"), json!({}), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(wait(&app, &agent, "mine", &second).await["status"], "declined");
    let r = app.get(&format!("/api/apps/{app_id}/secrets/PASSWORD"), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);

    // A connector's key: typed into the card, sealed as its credential, and it connects with it.
    let mock = McpMock::start(app.data_dir(), &["--header", &format!("X-Api-Key={VALUE}")]).await;
    let r = app
        .post(
            "/api/connectors",
            json!({ "name": "notes", "url": mock.url(), "auth": "header", "header_name": "X-Api-Key", "secret": "stale" }),
            Some(&token),
        )
        .await;
    let connector: Value = r.json().await.expect("json");
    assert_eq!(connector["status"], "error", "the stale key is refused: {connector}");
    let connector_id = connector["id"].as_i64().expect("id");
    let both = json!({ "name": "K", "app": "weather", "connector": connector_id });
    assert_error(ask("mine", both, &agent).await.expect("ask"), StatusCode::BAD_REQUEST, "invalid_request").await;
    let unknown = json!({ "connector": "nope" });
    assert_error(ask("mine", unknown, &agent).await.expect("ask"), StatusCode::NOT_FOUND, "connector_not_found").await;
    let r = ask("mine", json!({ "connector": "notes", "reason": "Its key changed." }), &agent).await.expect("ask");
    assert_eq!(r.status(), StatusCode::CREATED);
    let created: Value = r.json().await.expect("json");
    assert_eq!(created["connector_id"], connector_id);
    assert_eq!(created["name"], "token");
    let fourth = created["id"].as_str().expect("id").to_owned();
    let r = submit("mine", &fourth, json!({ "value": VALUE }), &token).await.expect("submit");
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let heard = wait(&app, &agent, "mine", &fourth).await;
    assert_eq!(heard["status"], "stored");
    assert_eq!(heard["connector_id"], connector_id);
    let connector: Value =
        app.get(&format!("/api/connectors/{connector_id}"), Some(&token)).await.json().await.expect("json");
    assert_eq!(connector["status"], "connected", "it connected with the typed key: {connector}");
    assert!(!connector.to_string().contains(VALUE));
    assert!(files_containing(app.data_dir(), VALUE.as_bytes()).is_empty(), "no file in DATA_DIR holds the value");

    // A request whose turn ended is gone, and its token with it.
    let r = ask("mine", json!({ "name": "LATER", "app": "weather" }), &agent).await.expect("ask");
    let third = r.json::<Value>().await.expect("json")["id"].as_str().expect("id").to_owned();
    let r = app.post("/api/chat/stop", json!({ "chat_id": "mine" }), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    eventually("the turn ends", || async {
        let detail = app.detail(&token, "mine").await;
        detail["running"].as_bool().is_some_and(|r| !r).then_some(())
    })
    .await;
    let r = submit("mine", &third, json!({ "value": VALUE }), &token).await.expect("submit");
    assert!(matches!(r.status(), StatusCode::GONE | StatusCode::NOT_FOUND), "{}", r.status());
    let r = app.get(&format!("/api/apps/{app_id}/secrets/LATER"), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}
