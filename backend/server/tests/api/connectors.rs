//! Connectors (issue 36): the registry, the SSRF rules at connect, and the broker — a turn's
//! CLI reaches the owner's MCP server through the server, which adds the credential the CLI
//! never holds — against the scripted MCP server `tests/fake-providers/mock_mcp.py`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{McpMock, TestApp, assert_error, eventually, files_containing, script};

/// The connector's credential: it must reach the MCP server and nothing the agent sees.
const SECRET: &str = "mcp-secret-6f1d2c";

/// A Claude imitation that saves its agent token, its command line and its environment in its
/// HOME, says hello, and keeps the turn running until stopped.
fn recorder(dir: &Path) -> PathBuf {
    script(
        dir,
        "fake-claude-recorder",
        r#"IFS= read -r init
IFS= read -r user
for a in "$@"; do printf '%s\n' "$a"; done > "$HOME/argv.txt"
env > "$HOME/env.txt"
printf '%s' "$MOBIUS_AGENT_TOKEN" > "$HOME/agent-token.tmp" && mv "$HOME/agent-token.tmp" "$HOME/agent-token"
printf '{"type":"system","subtype":"init","session_id":"s1"}\n'
exec sleep 300"#,
    )
}

async fn app_with(loopback: bool) -> (TestApp, String) {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let bin = recorder(dir.path());
    let app = TestApp::spawn_in(dir, |c| {
        c.claude_bin = bin;
        c.agent_start_timeout = Duration::from_secs(10);
        c.connectors_allow_loopback = loopback;
    })
    .await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    (app, token)
}

async fn add(app: &TestApp, token: &str, body: Value) -> reqwest::Response {
    app.post("/api/connectors", body, Some(token)).await
}

async fn wait_for_file(path: &Path) -> String {
    eventually(&format!("{} appears", path.display()), || async {
        std::fs::read_to_string(path).ok().filter(|text| !text.is_empty())
    })
    .await
}

async fn rpc(app: &TestApp, path: &str, token: &str, body: Value) -> reqwest::Response {
    app.client
        .post(app.url(path))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .expect("broker call")
}

#[tokio::test]
async fn a_connector_lists_its_tools_at_connect_and_settings_never_sees_its_secret() {
    let (app, token) = app_with(true).await;
    let mock = McpMock::start(app.data_dir(), &["--bearer", SECRET, "--sse"]).await;
    let r = add(&app, &token, json!({ "name": "notes", "url": mock.url(), "auth": "bearer", "secret": SECRET })).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let created: Value = r.json().await.expect("json");
    assert_eq!(created["status"], "connected", "{created}");
    let tools: Vec<&str> =
        created["tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(tools, ["echo", "save", "big", "hang", "garbage"]);
    assert_eq!(created["tools"][0]["read_only"], true);
    assert_eq!(created["has_secret"], true);
    let listed = app.get("/api/connectors", Some(&token)).await.text().await.expect("text");
    assert!(!listed.contains(SECRET), "the list never carries the secret");
    assert!(!created.to_string().contains(SECRET));

    // A wrong secret is an error the owner sees, not a crash; the name is taken once.
    let wrong =
        add(&app, &token, json!({ "name": "wrong", "url": mock.url(), "auth": "bearer", "secret": "nope" })).await;
    let wrong: Value = wrong.json().await.expect("json");
    assert_eq!(wrong["status"], "error");
    assert!(wrong["last_error"].as_str().unwrap_or_default().contains("refused the credential"), "{wrong}");
    let again = add(&app, &token, json!({ "name": "notes", "url": mock.url() })).await;
    assert_error(again, StatusCode::CONFLICT, "connector_name_taken").await;
    let bad = add(&app, &token, json!({ "name": "Bad Name", "url": mock.url() })).await;
    assert_error(bad, StatusCode::BAD_REQUEST, "invalid_connector_name").await;

    // Disconnect, refresh, delete.
    let id = created["id"].as_i64().expect("id");
    let off = app.post(&format!("/api/connectors/{id}/disconnect"), json!({}), Some(&token)).await;
    assert_eq!(off.json::<Value>().await.expect("json")["status"], "disconnected");
    let on = app.post(&format!("/api/connectors/{id}/refresh"), json!({}), Some(&token)).await;
    assert_eq!(on.json::<Value>().await.expect("json")["status"], "connected");
    assert_eq!(app.delete_with(&format!("/api/connectors/{id}"), &token).await.status(), StatusCode::NO_CONTENT);
    assert_error(
        app.get(&format!("/api/connectors/{id}"), Some(&token)).await,
        StatusCode::NOT_FOUND,
        "connector_not_found",
    )
    .await;
}

#[tokio::test]
async fn private_loopback_and_metadata_addresses_are_refused_and_the_33rd_connector_too() {
    let (app, token) = app_with(false).await;
    for url in [
        "http://127.0.0.1:9/mcp",
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.7/mcp",
        "http://[::1]/mcp",
        "https://user:pw@example.com/mcp",
        "ftp://example.com/mcp",
    ] {
        let r = add(&app, &token, json!({ "name": "x", "url": url })).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{url}");
    }
    // A name that resolves to loopback is refused as it resolves (the address connected to).
    let r = add(&app, &token, json!({ "name": "named", "url": "http://localhost:9/mcp" })).await;
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["status"], "error");
    assert!(body["last_error"].as_str().unwrap_or_default().contains("may not be reached"), "{body}");

    // 32 at most (one exists already).
    for i in 1..32 {
        let r = add(&app, &token, json!({ "name": format!("c{i}"), "url": "http://localhost:9/mcp" })).await;
        assert_eq!(r.status(), StatusCode::CREATED, "connector {i}");
    }
    let r = add(&app, &token, json!({ "name": "c33", "url": "http://localhost:9/mcp" })).await;
    assert_error(r, StatusCode::PAYLOAD_TOO_LARGE, "too_many_connectors").await;
}

#[tokio::test]
async fn the_broker_adds_the_credential_only_for_the_live_turn_of_its_chat() {
    let (app, token) = app_with(true).await;
    let mock = McpMock::start(app.data_dir(), &["--header", &format!("X-Api-Key={SECRET}")]).await;
    let r = add(
        &app,
        &token,
        json!({ "name": "notes", "url": mock.url(), "auth": "header", "header_name": "X-Api-Key", "secret": SECRET }),
    )
    .await;
    let created: Value = r.json().await.expect("json");
    assert_eq!(created["status"], "connected", "{created}");
    let id = created["id"].as_i64().expect("id");
    // A second connector limited to chosen chats: "mine" gets it, "other" does not.
    let r = add(
        &app,
        &token,
        json!({ "name": "chosen", "url": mock.url(), "auth": "header", "header_name": "X-Api-Key", "secret": SECRET,
                "chats": "chosen" }),
    )
    .await;
    let chosen_id = r.json::<Value>().await.expect("json")["id"].as_i64().expect("id");
    app.chat(&token, "mine").await;
    app.chat(&token, "other").await;
    let r = app.put_json("/api/chats/mine/connectors", json!({ "ids": [chosen_id] }), &token).await;
    assert_eq!(r.json::<Value>().await.expect("json")["chosen"], json!([chosen_id]));
    let usable = app.get("/api/chats/other/connectors", Some(&token)).await.json::<Value>().await.expect("json");
    assert_eq!(usable["usable"], json!([id]), "a chat that did not choose it never gets it");

    app.send(&token, "mine", "hello", "m1").await;
    let home = app.data_dir().join("agent-home");
    let agent = wait_for_file(&home.join("agent-token")).await;
    // The CLI is told about the broker, never about the connector or its secret.
    let argv = wait_for_file(&home.join("argv.txt")).await;
    let config = argv.lines().skip_while(|l| *l != "--mcp-config").nth(1).expect("an --mcp-config");
    let config: Value = serde_json::from_str(config).expect("json config");
    let base = format!("http://127.0.0.1:{}/api/mcp/mine", app.addr.port());
    assert_eq!(config["mcpServers"]["notes"]["url"], format!("{base}/{id}"));
    assert_eq!(config["mcpServers"]["chosen"]["url"], format!("{base}/{chosen_id}"));
    assert_eq!(config["mcpServers"]["notes"]["headers"]["Authorization"], "Bearer ${MOBIUS_AGENT_TOKEN}");
    assert!(argv.contains("--strict-mcp-config"));
    let env = wait_for_file(&home.join("env.txt")).await;
    for (what, text) in [("arguments", &argv), ("environment", &env)] {
        assert!(!text.contains(SECRET), "the CLI's {what} hold the connector's secret");
        assert!(!text.contains(mock.url().as_str()), "the CLI's {what} name the real server");
    }
    assert!(files_containing(app.data_dir(), SECRET.as_bytes()).is_empty(), "no file in DATA_DIR holds the secret");

    // Through the broker: the call reaches the server with the credential, not the agent token.
    let path = format!("/api/mcp/mine/{id}");
    let init = rpc(&app, &path, &agent, json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})).await;
    assert_eq!(init.status(), StatusCode::OK);
    let session = init.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).expect("session").to_owned();
    let call = app
        .client
        .post(app.url(&path))
        .bearer_auth(&agent)
        .header("mcp-session-id", &session)
        .json(&json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}))
        .send()
        .await
        .expect("call");
    assert_eq!(call.status(), StatusCode::OK);
    let answer: Value = call.json().await.expect("json");
    assert_eq!(answer["result"]["content"][0]["text"], "echo: hi");
    let seen = mock.requests().await;
    let calls: Vec<&Value> = seen.iter().filter(|r| r["body"]["method"] == "tools/call").collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["headers"]["x-api-key"], SECRET);
    assert_eq!(calls[0]["headers"]["mcp-session-id"], session.as_str());
    assert!(seen.iter().all(|r| !r.to_string().contains(&agent)), "the agent token never leaves the server");
    // A server that answers garbage or nothing ends that call with an error; the next goes on.
    let garbage =
        rpc(&app, &path, &agent, json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"garbage"}}))
            .await;
    assert!(serde_json::from_slice::<Value>(&garbage.bytes().await.expect("body")).is_err());
    let ok = rpc(
        &app,
        &path,
        &agent,
        json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"again"}}}),
    )
    .await;
    assert_eq!(ok.json::<Value>().await.expect("json")["result"]["content"][0]["text"], "echo: again");

    // Another chat's path, another chat's connector, no token: refused.
    let other =
        rpc(&app, &format!("/api/mcp/other/{id}"), &agent, json!({"jsonrpc":"2.0","id":5,"method":"ping"})).await;
    assert_error(other, StatusCode::UNAUTHORIZED, "capability_refused").await;
    let none = app.client.post(app.url(&path)).json(&json!({})).send().await.expect("call");
    assert_error(none, StatusCode::UNAUTHORIZED, "capability_refused").await;
    let owner = rpc(&app, &path, &token, json!({"jsonrpc":"2.0","id":6,"method":"ping"})).await;
    assert_error(owner, StatusCode::UNAUTHORIZED, "capability_refused").await;
    let unknown = rpc(&app, "/api/mcp/mine/999", &agent, json!({"jsonrpc":"2.0","id":7,"method":"ping"})).await;
    assert_error(unknown, StatusCode::NOT_FOUND, "connector_not_found").await;
    // A disconnected connector is gone at once, even for the running turn.
    app.post(&format!("/api/connectors/{chosen_id}/disconnect"), json!({}), Some(&token)).await;
    let gone =
        rpc(&app, &format!("/api/mcp/mine/{chosen_id}"), &agent, json!({"jsonrpc":"2.0","id":8,"method":"ping"})).await;
    assert_error(gone, StatusCode::NOT_FOUND, "connector_not_found").await;

    // The turn ends: its capability dies with it.
    let stop = app.post("/api/chat/stop", json!({ "chat_id": "mine" }), Some(&token)).await;
    assert!(stop.status().is_success());
    eventually("the turn ends", || async { (app.detail(&token, "mine").await["running"] == false).then_some(()) })
        .await;
    let late = rpc(&app, &path, &agent, json!({"jsonrpc":"2.0","id":9,"method":"ping"})).await;
    assert_error(late, StatusCode::UNAUTHORIZED, "capability_refused").await;
}

/// The OAuth counters and live tokens of the scripted server.
async fn oauth_state(mock: &McpMock) -> Value {
    reqwest::get(format!("http://127.0.0.1:{}/_mock/oauth", mock.port))
        .await
        .expect("mock oauth")
        .json()
        .await
        .expect("json")
}

/// Plays the owner's browser: opens the authorization URL (the scripted server consents at
/// once and redirects back) and follows the redirect to this server's callback.
async fn sign_in(app: &TestApp, authorization_url: &str) -> reqwest::Response {
    let consent = app.client.get(authorization_url).send().await.expect("authorize");
    assert_eq!(consent.status(), StatusCode::FOUND, "the authorization server redirects back");
    let back = consent.headers()["location"].to_str().expect("location").to_owned();
    let callback = reqwest::Url::parse(&back).expect("callback URL");
    assert_eq!(callback.path(), "/api/connectors/oauth/callback");
    app.get(&format!("{}?{}", callback.path(), callback.query().unwrap_or_default()), None).await
}

#[tokio::test]
async fn an_oauth_connector_signs_in_with_pkce_renews_its_token_and_never_shows_it() {
    let (app, token) = app_with(true).await;
    // Access tokens live 30 s: inside the renewal margin, so every use renews first.
    let mock = McpMock::start(app.data_dir(), &["--oauth", "--expires-in", "30"]).await;
    let r = add(&app, &token, json!({ "name": "calendar", "url": mock.url(), "auth": "oauth" })).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let created: Value = r.json().await.expect("json");
    assert_eq!(created["status"], "needs_auth", "{created}");
    let id = created["id"].as_i64().expect("id");

    // Discovery from the 401's resource metadata, dynamic registration, PKCE, one-time state.
    let start = app.post(&format!("/api/connectors/{id}/oauth/start"), json!({}), Some(&token)).await;
    assert_eq!(start.status(), StatusCode::OK);
    let url = start.json::<Value>().await.expect("json")["authorization_url"].as_str().expect("url").to_owned();
    let query: std::collections::HashMap<String, String> =
        reqwest::Url::parse(&url).expect("url").query_pairs().into_owned().collect();
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["resource"], mock.url());
    assert_eq!(query["scope"], "tools");
    assert!(query["redirect_uri"].ends_with("/api/connectors/oauth/callback"));
    let done = sign_in(&app, &url).await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    assert_eq!(done.headers()["location"], format!("/settings/connectors?connector={id}&oauth=connected").as_str());
    let oauth = oauth_state(&mock).await;
    assert_eq!((oauth["registrations"].as_i64(), oauth["exchanges"].as_i64()), (Some(1), Some(1)), "{oauth}");

    // The same state again (a replayed callback) and a forged one are refused.
    let replay = reqwest::Url::parse(&url).expect("url");
    let state = replay.query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned()).expect("state");
    for forged in [state.as_str(), "forged"] {
        let again = app.get(&format!("/api/connectors/oauth/callback?code=x&state={forged}"), None).await;
        assert_error(again, StatusCode::BAD_REQUEST, "invalid_oauth_state").await;
    }

    // Connected (the tools were listed with the access token, renewed first since it was near
    // its end); a second reconnect renews again with the rotated refresh token.
    let connector: Value = app.get(&format!("/api/connectors/{id}"), Some(&token)).await.json().await.expect("json");
    assert_eq!(connector["status"], "connected", "{connector}");
    assert_eq!(connector["tools"].as_array().map(Vec::len), Some(5));
    let again: Value =
        app.post(&format!("/api/connectors/{id}/refresh"), json!({}), Some(&token)).await.json().await.expect("json");
    assert_eq!(again["status"], "connected", "{again}");
    let oauth = oauth_state(&mock).await;
    assert!(oauth["refreshes"].as_i64().unwrap_or_default() >= 2, "renewed with each rotated refresh token: {oauth}");
    assert_eq!(oauth["refused"], 0, "no spent refresh token was sent twice: {oauth}");

    // Settings never sees a token; the database holds them sealed.
    let listed = app.get("/api/connectors", Some(&token)).await.text().await.expect("text");
    let live: Vec<String> = oauth["access"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(oauth["refresh"].as_array().into_iter().flatten())
        .filter_map(|t| t.as_str().map(str::to_owned))
        .collect();
    assert!(!live.is_empty());
    for secret in &live {
        assert!(!listed.contains(secret.as_str()), "the list never carries a token");
    }
    assert!(
        !files_containing(app.data_dir(), b"at-").iter().any(|p| {
            let text = std::fs::read(p).unwrap_or_default();
            live.iter().any(|t| text.windows(t.len()).any(|w| w == t.as_bytes()))
        }),
        "no token in the clear anywhere in the data directory"
    );

    // Signing out forgets the tokens: the connector waits for a new sign-in.
    let out: Value = app
        .post(&format!("/api/connectors/{id}/oauth/disconnect"), json!({}), Some(&token))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(out["status"], "needs_auth");
    let refreshed: Value =
        app.post(&format!("/api/connectors/{id}/refresh"), json!({}), Some(&token)).await.json().await.expect("json");
    assert_eq!(refreshed["status"], "needs_auth", "no sign-in, no connection");
    // Only an OAuth connector has these routes; an unknown one is not found.
    let plain: Value =
        add(&app, &token, json!({ "name": "plain", "url": mock.url() })).await.json().await.expect("json");
    let plain_id = plain["id"].as_i64().expect("id");
    let refused = app.post(&format!("/api/connectors/{plain_id}/oauth/start"), json!({}), Some(&token)).await;
    assert_error(refused, StatusCode::BAD_REQUEST, "connector_not_oauth").await;
    let missing = app.post("/api/connectors/999/oauth/start", json!({}), Some(&token)).await;
    assert_error(missing, StatusCode::NOT_FOUND, "connector_not_found").await;
}

#[tokio::test]
async fn a_server_without_registration_needs_a_pasted_client_and_a_refused_sign_in_says_so() {
    let (app, token) = app_with(true).await;
    let mock = McpMock::start(app.data_dir(), &["--oauth", "--no-registration"]).await;
    let created: Value = add(&app, &token, json!({ "name": "mail", "url": mock.url(), "auth": "oauth" }))
        .await
        .json()
        .await
        .expect("json");
    let id = created["id"].as_i64().expect("id");
    let start = app.post(&format!("/api/connectors/{id}/oauth/start"), json!({}), Some(&token)).await;
    let body = assert_error(start, StatusCode::BAD_GATEWAY, "connector_oauth_failed").await;
    assert!(body["message"].as_str().unwrap_or_default().contains("paste a client"), "{body}");

    // A pasted client the authorization server does not know: the sign-in is refused there.
    let bad = app.post(&format!("/api/connectors/{id}/oauth/client"), json!({ "client_id": "" }), Some(&token)).await;
    assert_error(bad, StatusCode::BAD_REQUEST, "invalid_client").await;
    let pasted = app
        .post(&format!("/api/connectors/{id}/oauth/client"), json!({ "client_id": "unknown-client" }), Some(&token))
        .await;
    assert_eq!(pasted.status(), StatusCode::OK);
    let start = app.post(&format!("/api/connectors/{id}/oauth/start"), json!({}), Some(&token)).await;
    let url = start.json::<Value>().await.expect("json")["authorization_url"].as_str().expect("url").to_owned();
    assert!(url.contains("client_id=unknown-client"), "{url}");
    let refused = app.client.get(&url).send().await.expect("authorize");
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST, "the scripted server refuses an unknown client");

    // The owner's browser comes back with an error instead of a code: the connector says so.
    let state = reqwest::Url::parse(&url)
        .expect("url")
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
        .expect("state");
    let back = app.get(&format!("/api/connectors/oauth/callback?error=access_denied&state={state}"), None).await;
    assert_eq!(back.status(), StatusCode::SEE_OTHER);
    assert!(back.headers()["location"].to_str().unwrap_or_default().ends_with("oauth=failed"));
    let connector: Value = app.get(&format!("/api/connectors/{id}"), Some(&token)).await.json().await.expect("json");
    assert_eq!(connector["status"], "needs_auth");
    assert!(connector["last_error"].as_str().unwrap_or_default().contains("access_denied"), "{connector}");
}

#[tokio::test]
async fn an_oauth_connector_that_refuses_its_token_mid_call_is_renewed_once_then_needs_a_sign_in() {
    let (app, token) = app_with(true).await;
    // Tokens live an hour: nothing is renewed before a call, only after a refusal.
    let mock = McpMock::start(app.data_dir(), &["--oauth"]).await;
    let created: Value = add(&app, &token, json!({ "name": "calendar", "url": mock.url(), "auth": "oauth" }))
        .await
        .json()
        .await
        .expect("json");
    let id = created["id"].as_i64().expect("id");
    let start = app.post(&format!("/api/connectors/{id}/oauth/start"), json!({}), Some(&token)).await;
    let url = start.json::<Value>().await.expect("json")["authorization_url"].as_str().expect("url").to_owned();
    assert_eq!(sign_in(&app, &url).await.status(), StatusCode::SEE_OTHER);
    let connector: Value = app.get(&format!("/api/connectors/{id}"), Some(&token)).await.json().await.expect("json");
    assert_eq!(connector["status"], "connected", "{connector}");
    app.chat(&token, "mine").await;
    app.send(&token, "mine", "hello", "m1").await;
    let agent = wait_for_file(&app.data_dir().join("agent-home/agent-token")).await;
    let path = format!("/api/mcp/mine/{id}");
    let echo = |n: i64| json!({"jsonrpc":"2.0","id":n,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}});
    let calls = |seen: &[Value]| seen.iter().filter(|r| r["body"]["method"] == "tools/call").count();
    let ok = rpc(&app, &path, &agent, echo(1)).await;
    assert_eq!(ok.json::<Value>().await.expect("json")["result"]["content"][0]["text"], "echo: hi");
    assert_eq!(oauth_state(&mock).await["refreshes"], 0, "a live token is not renewed");

    // The server forgets the access token: the call is refused, renewed once, sent again.
    mock.post_control("/_mock/revoke").await;
    let before = calls(&mock.requests().await);
    let renewed = rpc(&app, &path, &agent, echo(2)).await;
    assert_eq!(renewed.status(), StatusCode::OK);
    assert_eq!(renewed.json::<Value>().await.expect("json")["result"]["content"][0]["text"], "echo: hi");
    assert_eq!(oauth_state(&mock).await["refreshes"], 1);
    assert_eq!(calls(&mock.requests().await) - before, 2, "the refused call and its one retry");
    let connector: Value = app.get(&format!("/api/connectors/{id}"), Some(&token)).await.json().await.expect("json");
    assert_eq!(connector["status"], "connected");

    // It refuses the renewed token too: one renewal, one retry, then the owner must sign in.
    mock.post_control("/_mock/revoke?deny=1").await;
    let before = calls(&mock.requests().await);
    let refused = rpc(&app, &path, &agent, echo(3)).await;
    let body = assert_error(refused, StatusCode::BAD_GATEWAY, "connector_needs_sign_in").await;
    assert!(body["message"].as_str().unwrap_or_default().contains("sign in to it again"), "{body}");
    assert_eq!(oauth_state(&mock).await["refreshes"], 2, "renewed once, not in a loop");
    assert_eq!(calls(&mock.requests().await) - before, 2);
    let connector: Value = app.get(&format!("/api/connectors/{id}"), Some(&token)).await.json().await.expect("json");
    assert_eq!(connector["status"], "needs_auth", "{connector}");
    assert!(connector["last_error"].as_str().unwrap_or_default().contains("sign in again"), "{connector}");
    // Gone from the chat until the owner signs in again.
    let gone = rpc(&app, &path, &agent, echo(4)).await;
    assert_error(gone, StatusCode::NOT_FOUND, "connector_not_found").await;
}

/// How many legacy event streams the scripted server has open.
async fn streams_open(mock: &McpMock) -> i64 {
    reqwest::get(format!("http://127.0.0.1:{}/_mock/streams", mock.port))
        .await
        .expect("mock streams")
        .json::<Value>()
        .await
        .expect("json")["open"]
        .as_i64()
        .unwrap_or(-1)
}

#[tokio::test]
async fn a_legacy_sse_connector_is_found_at_connect_and_bridged_for_the_turn_that_uses_it() {
    let (app, token) = app_with(true).await;
    let mock = McpMock::start(app.data_dir(), &["--legacy", "--bearer", SECRET]).await;
    let url = format!("http://127.0.0.1:{}/sse", mock.port);
    let created: Value = add(&app, &token, json!({ "name": "old", "url": url, "auth": "bearer", "secret": SECRET }))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        (created["status"].as_str(), created["transport"].as_str()),
        (Some("connected"), Some("sse")),
        "{created}"
    );
    assert_eq!(created["tools"].as_array().map(Vec::len), Some(5));
    let id = created["id"].as_i64().expect("id");
    eventually("the connect's stream is closed", || async { (streams_open(&mock).await == 0).then_some(()) }).await;

    // The CLI speaks streamable HTTP to the broker; the broker holds the stream.
    app.chat(&token, "mine").await;
    app.send(&token, "mine", "hello", "m1").await;
    let agent = wait_for_file(&app.data_dir().join("agent-home/agent-token")).await;
    let path = format!("/api/mcp/mine/{id}");
    let init = rpc(
        &app,
        &path,
        &agent,
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05"}}),
    )
    .await;
    assert_eq!(init.status(), StatusCode::OK);
    assert!(init.headers()["content-type"].to_str().unwrap_or_default().starts_with("application/json"));
    assert_eq!(init.json::<Value>().await.expect("json")["result"]["serverInfo"]["name"], "mock-mcp");
    let note = rpc(&app, &path, &agent, json!({"jsonrpc":"2.0","method":"notifications/initialized"})).await;
    assert_eq!(note.status(), StatusCode::ACCEPTED);
    let list: Value = rpc(&app, &path, &agent, json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(list["result"]["tools"].as_array().map(Vec::len), Some(5), "{list}");
    let call: Value = rpc(
        &app,
        &path,
        &agent,
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"old times"}}}),
    )
    .await
    .json()
    .await
    .expect("json");
    assert_eq!(call["result"]["content"][0]["text"], "echo: old times", "{call}");
    assert_eq!(streams_open(&mock).await, 1, "one stream for the turn");

    // Upstream, the credential rode every request; the agent token none.
    let seen = mock.requests().await;
    let opened: Vec<&Value> = seen.iter().filter(|r| r["method"] == "GET" && r["path"] == "/sse").collect();
    assert_eq!(opened.len(), 2, "one stream at connect, one for the turn");
    let probes = seen.iter().filter(|r| r["method"] == "POST" && r["path"] == "/sse").count();
    assert_eq!(probes, 1, "streamable HTTP was tried once, at connect");
    let posts: Vec<&Value> = seen.iter().filter(|r| r["method"] == "POST" && r["path"] != "/sse").collect();
    assert!(posts.len() >= 4, "{posts:?}");
    assert!(
        posts.iter().all(|r| r["path"].as_str().is_some_and(|p| p.starts_with("/messages?session_id="))),
        "{posts:?}"
    );
    assert!(opened.iter().chain(posts.iter()).all(|r| r["headers"]["authorization"] == format!("Bearer {SECRET}")));
    assert!(seen.iter().all(|r| !r.to_string().contains(&agent)), "the agent token never leaves the server");

    // The turn ends: so does its stream.
    let stop = app.post("/api/chat/stop", json!({ "chat_id": "mine" }), Some(&token)).await;
    assert!(stop.status().is_success());
    eventually("the turn's stream is closed", || async { (streams_open(&mock).await == 0).then_some(()) }).await;
    let late = rpc(&app, &path, &agent, json!({"jsonrpc":"2.0","id":4,"method":"ping"})).await;
    assert_error(late, StatusCode::UNAUTHORIZED, "capability_refused").await;

    // A CLI that goes on without a new `initialize` gets a stream whose session the broker
    // started itself.
    eventually("the turn ends", || async { (app.detail(&token, "mine").await["running"] == false).then_some(()) })
        .await;
    std::fs::remove_file(app.data_dir().join("agent-home/agent-token")).expect("forget the old token");
    app.send(&token, "mine", "again", "m2").await;
    let next = wait_for_file(&app.data_dir().join("agent-home/agent-token")).await;
    assert_ne!(next, agent);
    let call: Value = rpc(
        &app,
        &path,
        &next,
        json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}),
    )
    .await
    .json()
    .await
    .expect("json");
    assert_eq!(call["result"]["content"][0]["text"], "echo: still here", "{call}");
    let seen = mock.requests().await;
    assert!(seen.iter().any(|r| r["body"]["id"] == "mobius-initialize"), "the broker said hello itself");
}
