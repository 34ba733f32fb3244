//! Provider setup: CLI detection, API keys, Claude OAuth (PKCE) against a local token
//! endpoint, Codex device login and API key through fake CLIs, default provider.

use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::routing::post;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, eventually, script};
use mobius::locks::Unpoisoned;

/// A fake `codex`: `--version`, `login --with-api-key` (stdin) and `login --device-auth`.
const FAKE_CODEX: &str = r#"case "$1 $2" in
  "--version ") echo "codex-cli 0.171.0" ;;
  "login --with-api-key") read -r key; printf '{"OPENAI_API_KEY":"%s"}' "$key" > "$CODEX_HOME/auth.json" ;;
  "login --device-auth")
    printf '\033[1mOpen\033[0m https://auth.example.com/codex/device in your browser\n'
    printf 'and enter this one-time code: \033[94mWXYZ-9876\033[0m\n'
    sleep 1
    printf '{"tokens":{"access_token":"t"}}' > "$CODEX_HOME/auth.json" ;;
  *) exit 2 ;;
esac"#;

async fn app_with_fakes() -> (TestApp, String) {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let claude = script(dir.path(), "claude", "[ \"$1\" = --version ] && echo '2.1.332 (Claude Code)'");
    let codex = script(dir.path(), "codex", FAKE_CODEX);
    let app = TestApp::spawn_in(dir, |c| {
        c.claude_bin = claude;
        c.codex_bin = codex;
    })
    .await;
    let token = app.setup_owner().await;
    (app, token)
}

async fn status(app: &TestApp, token: &str) -> Value {
    app.get("/api/auth/providers/status", Some(token)).await.json().await.expect("json")
}

#[tokio::test]
async fn installed_clis_and_their_versions_are_listed() {
    let (app, token) = app_with_fakes().await;
    let list: Value = app.get("/api/auth/providers", Some(&token)).await.json().await.expect("json");
    assert_eq!(list[0]["id"], "claude");
    assert_eq!(list[0]["available"], true);
    assert_eq!(list[0]["version"], "2.1.332");
    assert_eq!(list[1]["version"], "0.171.0");
    let bare = TestApp::spawn().await;
    let t = bare.setup_owner().await;
    let list: Value = bare.get("/api/auth/providers", Some(&t)).await.json().await.expect("json");
    assert_eq!(list[0]["available"], false, "a missing CLI is reported, not an error");
    let settings: Value = bare.get("/api/settings", Some(&t)).await.json().await.expect("json");
    assert_eq!(settings["default_provider"], Value::Null);
}

#[tokio::test]
async fn a_claude_api_key_is_stored_privately_never_echoed_and_can_be_removed() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_process(dir, &[]).await;
    let token = app.setup_owner().await;
    let secret = "sk-ant-very-secret-1234";
    let bad = app.post("/api/providers/claude/api-key", json!({ "api_key": "two words" }), Some(&token)).await;
    assert_error(bad, StatusCode::BAD_REQUEST, "invalid_api_key").await;
    let r = app.post("/api/providers/claude/api-key", json!({ "api_key": secret }), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let s = status(&app, &token).await;
    assert_eq!(s["providers"]["claude"]["connected"], true);
    assert_eq!(s["providers"]["claude"]["method"], "api_key");
    assert_eq!(s["default_provider"], "claude", "the only connected provider is the default");
    assert!(!s.to_string().contains(secret));
    // Kept where the agent's sandbox grants nothing, never in the CLI's folder (the agent's).
    let masters = app.data_dir().join("credentials");
    assert_eq!(std::fs::metadata(&masters).expect("dir").permissions().mode() & 0o777, 0o700);
    let key_file = masters.join("claude-api-key");
    assert_eq!(std::fs::metadata(&key_file).expect("key").permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::read_to_string(&key_file).expect("key"), secret);
    let cli = app.data_dir().join("cli-auth/claude");
    let in_cli: Vec<_> =
        std::fs::read_dir(&cli).map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    assert!(in_cli.is_empty(), "nothing of the key in the CLI's folder: {in_cli:?}");
    let r = app.client.delete(app.url("/api/providers/claude")).bearer_auth(&token).send().await.expect("delete");
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(status(&app, &token).await["providers"]["claude"]["connected"], false);
    assert!(!key_file.exists());
    let dir = app.stop().await;
    let log = std::fs::read_to_string(dir.path().join("server.log")).expect("log");
    assert!(!log.contains(secret), "the key reached the log");
    let unknown = TestApp::spawn().await;
    let t = unknown.setup_owner().await;
    let r = unknown.post("/api/providers/gemini/api-key", json!({ "api_key": "x" }), Some(&t)).await;
    assert_error(r, StatusCode::NOT_FOUND, "unknown_provider").await;
}

#[tokio::test]
async fn claude_oauth_exchanges_the_pasted_code_with_pkce_and_writes_credentials() {
    // A stand-in for Anthropic's token endpoint, selected through configuration.
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let record = seen.clone();
    let token_server = axum::Router::new().route(
        "/v1/oauth/token",
        post(move |Json(body): Json<Value>| {
            let record = record.clone();
            async move {
                record.locked().push(body.clone());
                if body["code"] == "good-code" {
                    (StatusCode::OK, Json(json!({ "access_token": "at-1", "refresh_token": "rt-1", "expires_in": 3600, "scope": "user:inference" })))
                } else {
                    (StatusCode::BAD_REQUEST, Json(json!({ "error": "invalid_grant", "error_description": "bad code" })))
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let token_url = format!("http://{}/v1/oauth/token", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, token_server).await });

    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| c.claude_oauth_token_url = token_url).await;
    let token = app.setup_owner().await;
    let started: Value =
        app.post("/api/auth/provider/login", json!({}), Some(&token)).await.json().await.expect("json");
    let url = started["auth_url"].as_str().expect("auth_url");
    let state = url.split("state=").nth(1).expect("state").split('&').next().expect("state").to_owned();
    assert!(url.contains("code_challenge="));

    let wrong_state =
        app.post("/api/auth/provider/code", json!({ "code": "good-code#not-the-state" }), Some(&token)).await;
    assert_error(wrong_state, StatusCode::BAD_REQUEST, "oauth_state_mismatch").await;
    let rejected =
        app.post("/api/auth/provider/code", json!({ "code": format!("bad-code#{state}") }), Some(&token)).await;
    assert_error(rejected, StatusCode::BAD_REQUEST, "oauth_code_rejected").await;
    let ok = app.post("/api/auth/provider/code", json!({ "code": format!("good-code#{state}") }), Some(&token)).await;
    assert_eq!(ok.status(), StatusCode::OK);

    let grants = seen.locked().clone();
    let grant = grants.last().expect("a token request");
    assert_eq!(grant["grant_type"], "authorization_code");
    assert!(grant["code_verifier"].as_str().is_some_and(|v| v.len() >= 43), "PKCE verifier sent");
    // The server's copy, and the CLI's (which the CLI refreshes; the server reads it back).
    for creds_path in
        [app.data_dir().join("credentials/claude-oauth.json"), app.data_dir().join("cli-auth/claude/.credentials.json")]
    {
        let creds: Value = serde_json::from_str(&std::fs::read_to_string(&creds_path).expect("creds")).expect("json");
        assert_eq!(creds["claudeAiOauth"]["accessToken"], "at-1");
        assert_eq!(std::fs::metadata(&creds_path).expect("meta").permissions().mode() & 0o777, 0o600);
    }
    let s = status(&app, &token).await;
    assert_eq!(s["providers"]["claude"]["method"], "oauth");
    // The finished flow cannot be replayed.
    let replay =
        app.post("/api/auth/provider/code", json!({ "code": format!("good-code#{state}") }), Some(&token)).await;
    assert_error(replay, StatusCode::GONE, "oauth_flow_expired").await;
}

#[tokio::test]
async fn codex_device_login_shows_the_url_and_code_then_completes() {
    let (app, token) = app_with_fakes().await;
    let none: Value = app.get("/api/auth/provider/codex/status", Some(&token)).await.json().await.expect("json");
    assert_eq!(none["status"], "none");
    let login: Value =
        app.post("/api/auth/provider/codex/login", json!({}), Some(&token)).await.json().await.expect("json");
    assert_eq!(login["url"], "https://auth.example.com/codex/device");
    assert_eq!(login["code"], "WXYZ-9876");
    let last: Value = eventually("the device login ends", || async {
        let last: Value = app.get("/api/auth/provider/codex/status", Some(&token)).await.json().await.expect("json");
        (last["status"] != "pending").then_some(last)
    })
    .await;
    assert_eq!(last["status"], "complete", "{last}");
    let s = status(&app, &token).await;
    assert_eq!(s["providers"]["codex"]["connected"], true);
    assert_eq!(s["providers"]["codex"]["method"], "login");
}

#[tokio::test]
async fn a_codex_api_key_goes_through_the_cli_and_the_default_provider_can_be_chosen() {
    let (app, token) = app_with_fakes().await;
    let r = app.post("/api/providers/codex/api-key", json!({ "api_key": "sk-proj-abc" }), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    // `codex login` ran in the server's own CODEX_HOME; its login is kept and handed to the CLI.
    for file in ["credentials/codex-auth.json", "cli-auth/codex/auth.json"] {
        let auth = std::fs::read_to_string(app.data_dir().join(file)).expect("auth.json");
        assert!(auth.contains("sk-proj-abc"), "{file}");
    }
    let r = app.post("/api/providers/claude/api-key", json!({ "api_key": "sk-ant-x" }), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    for choice in ["codex", "claude"] {
        let r = app.post("/api/settings", json!({ "default_provider": choice }), Some(&token)).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(status(&app, &token).await["default_provider"], choice);
    }
    let bad = app.post("/api/settings", json!({ "default_provider": "gpt" }), Some(&token)).await;
    assert_error(bad, StatusCode::NOT_FOUND, "unknown_provider").await;
    let models: Value = app.get("/api/models", Some(&token)).await.json().await.expect("json");
    assert!(models["providers"]["claude"].as_array().is_some_and(|m| m.len() > 1));
}

#[tokio::test]
async fn a_chat_keeps_the_exact_system_prompt_of_its_first_turn() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let skills = dir.path().join("skill");
    std::fs::create_dir_all(skills.join("skills")).expect("skills");
    std::fs::write(skills.join("core.md"), "# Core v1\n").expect("core");
    // The fake CLI records the system prompt it was given.
    let claude = script(
        dir.path(),
        "claude",
        r#"prev=""; for a in "$@"; do [ "$prev" = --append-system-prompt ] && printf '%s' "$a" > "$MOBIUS_DATA_DIR/prompt-$(date +%s%N)"; prev="$a"; done
IFS= read -r init; IFS= read -r user
printf '{"type":"result","subtype":"success","is_error":false,"session_id":"s","usage":{}}\n'
cat >/dev/null"#,
    );
    let skill_dir = skills.clone();
    let app = TestApp::spawn_in(dir, |c| {
        c.claude_bin = claude;
        c.skill_dir = skill_dir;
    })
    .await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    app.chat(&token, "p").await;
    let mut stream = app.stream(&token, "p", None).await;
    app.send(&token, "p", "one", "c1").await;
    stream.until("done", 10).await;
    std::fs::write(skills.join("core.md"), "# Core v2, edited later\n").expect("edit");
    app.send(&token, "p", "two", "c2").await;
    stream.until("done", 10).await;
    app.chat(&token, "fresh").await;
    let mut other = app.stream(&token, "fresh", None).await;
    app.send(&token, "fresh", "three", "c3").await;
    other.until("done", 10).await;
    let mut prompts: Vec<(String, String)> = std::fs::read_dir(app.data_dir())
        .expect("dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("prompt-"))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read_to_string(e.path()).expect("prompt")))
        .collect();
    prompts.sort();
    assert_eq!(prompts.len(), 3);
    assert!(prompts[0].1.starts_with("# Core v1"));
    assert_eq!(prompts[0].1, prompts[1].1, "the second turn reused the first turn's bytes");
    assert!(prompts[2].1.starts_with("# Core v2"), "a new chat gets the current constitution");
}

/// A stand-in for both providers' `GET …/models`: `good` is accepted, anything else refused
/// with the provider's error shape, `busy` answers 503.
async fn key_checker() -> String {
    use axum::http::HeaderMap;
    use axum::routing::get;
    let verdict = |key: Option<String>| match key.as_deref() {
        Some("good") => (StatusCode::OK, Json(json!({ "data": [] }))),
        Some("busy") => (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "error": { "message": "overloaded" } }))),
        _ => (
            StatusCode::UNAUTHORIZED,
            Json(
                json!({ "type": "error", "error": { "type": "authentication_error", "message": "invalid x-api-key" } }),
            ),
        ),
    };
    let server = axum::Router::new()
        .route(
            "/v1/models",
            get(move |headers: HeaderMap| async move {
                verdict(headers.get("x-api-key").and_then(|v| v.to_str().ok()).map(str::to_owned))
            }),
        )
        .route(
            "/openai/models",
            get(move |headers: HeaderMap| async move {
                let key =
                    headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
                verdict(key.map(str::to_owned))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, server).await });
    url
}

#[tokio::test]
async fn a_wrong_key_is_refused_with_the_providers_reason_and_not_saved() {
    let url = key_checker().await;
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let codex = script(dir.path(), "codex", FAKE_CODEX);
    let (anthropic, openai) = (url.clone(), format!("{url}/openai"));
    let app = TestApp::spawn_in(dir, |c| {
        c.anthropic_api_url = anthropic;
        c.openai_api_url = openai;
        c.codex_bin = codex;
    })
    .await;
    let token = app.setup_owner().await;
    for id in ["claude", "codex"] {
        let r = app.post(&format!("/api/providers/{id}/api-key"), json!({ "api_key": "sk-wrong" }), Some(&token)).await;
        let body = assert_error(r, StatusCode::BAD_REQUEST, "api_key_rejected").await;
        let name = if id == "claude" { "Anthropic" } else { "OpenAI" };
        assert_eq!(body["message"], format!("{name} refused this key: invalid x-api-key"), "{body}");
        assert_eq!(status(&app, &token).await["providers"][id]["connected"], false, "{id}");
        // A provider that cannot answer now keeps the key, and says it is unchecked.
        let r = app.post(&format!("/api/providers/{id}/api-key"), json!({ "api_key": "busy" }), Some(&token)).await;
        let body: Value = r.json().await.expect("json");
        assert_eq!(body["checked"], false, "{body}");
        assert!(body["warning"].as_str().is_some_and(|w| w.contains("HTTP 503")), "{body}");
        let r = app.post(&format!("/api/providers/{id}/api-key"), json!({ "api_key": "good" }), Some(&token)).await;
        let body: Value = r.json().await.expect("json");
        assert_eq!(body, json!({ "ok": true, "checked": true }), "{id}");
        assert_eq!(status(&app, &token).await["providers"][id]["connected"], true, "{id}");
    }
}
