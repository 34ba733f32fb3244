//! Browser reports: `POST /api/client-error` and `POST /api/client-signal` reach the log,
//! de-duplicated, clipped and with tokens redacted; bad reports get clear errors.

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error};

async fn report(app: &TestApp, path: &str, token: Option<&str>, body: Value) -> reqwest::Response {
    let mut req = app.client.post(app.url(path)).json(&body);
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    req.send().await.expect("POST")
}

async fn logged(r: reqwest::Response) -> bool {
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    r.json::<Value>().await.expect("json")["logged"].as_bool().expect("logged")
}

#[tokio::test]
async fn app_errors_reach_the_log_once_per_minute_without_their_tokens() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_process(dir.clone(), &[]).await;
    let owner = app.setup_owner().await;
    let (id, token) = app.register_app("crashy").await;
    let crash = json!({
        "message": "TypeError: x is undefined\u{1b}[2J",
        "stack": "at render (app.js:1:2)",
        "source": "frame",
        "url": "http://host/api/apps/1/frame?v=2&token=eyJ.secret.part",
    });
    assert!(logged(report(&app, "/api/client-error", Some(&token), crash.clone()).await).await);
    // The same crash again within a minute is counted, not logged.
    assert!(!logged(report(&app, "/api/client-error", Some(&token), crash.clone()).await).await);
    // The owner's shell may report about an app; an app may not report as another app.
    let about = json!({ "message": "frame never mounted", "app_id": id, "source": "shell" });
    assert!(logged(report(&app, "/api/client-error", Some(&owner), about).await).await);
    let forged = json!({ "message": "not mine", "app_id": id + 1 });
    assert_error(report(&app, "/api/client-error", Some(&token), forged).await, StatusCode::FORBIDDEN, "forbidden")
        .await;
    // Huge messages are clipped, not refused.
    let long = json!({ "message": "y".repeat(50_000) });
    assert!(logged(report(&app, "/api/client-error", Some(&token), long).await).await);

    let dir = app.stop().await;
    let log = std::fs::read_to_string(dir.path().join("server.log")).expect("log");
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("client error: TypeError")).collect();
    assert_eq!(lines.len(), 1, "the repeated crash was logged again: {lines:?}");
    assert!(lines[0].contains(&format!("app_id={id}")), "{}", lines[0]);
    assert!(lines[0].contains("token=[redacted]") && !lines[0].contains("eyJ.secret"), "{}", lines[0]);
    assert!(!log.contains('\u{1b}'), "a control character reached the log");
    assert!(log.contains("client error: frame never mounted"));
    assert!(log.contains(&format!("{} […]", "y".repeat(40))), "the long message was not clipped");
    assert!(!log.contains(&"y".repeat(2_001)));
}

#[tokio::test]
async fn a_reported_message_is_redacted_of_tokens_like_the_url() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_process(dir.clone(), &[]).await;
    let owner = app.setup_owner().await;
    let leak = json!({
        "message": format!("fetch /api/apps/1/module?token={owner} failed; Authorization: Bearer {owner}"),
        "stack": format!("at load (frame?app_token={owner}:1:2)"),
        "source": "frame",
    });
    assert!(logged(report(&app, "/api/client-error", Some(&owner), leak).await).await);
    let dir = app.stop().await;
    let log = std::fs::read_to_string(dir.path().join("server.log")).expect("log");
    let line = log.lines().find(|l| l.contains("client error: fetch")).expect("the report was logged");
    assert!(!line.contains(&owner), "a token reached the log: {line}");
    assert!(line.contains("token=[redacted]") && line.contains("Bearer [redacted]"), "{line}");
}

#[tokio::test]
async fn bad_reports_get_clear_errors() {
    let app = TestApp::spawn().await;
    let owner = app.setup_owner().await;
    let r = report(&app, "/api/client-error", None, json!({ "message": "x" })).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = report(&app, "/api/client-error", Some("not.a.token"), json!({ "message": "x" })).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_error(
        report(&app, "/api/client-error", Some(&owner), json!({ "message": "  " })).await,
        StatusCode::BAD_REQUEST,
        "invalid_report",
    )
    .await;
    let r = report(&app, "/api/client-error", Some(&owner), json!({ "stack": "no message" })).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let raw = app
        .client
        .post(app.url("/api/client-error"))
        .bearer_auth(&owner)
        .header("content-type", "application/json")
        .body("{\"message\": ")
        .send()
        .await
        .expect("POST");
    assert_eq!(raw.status(), StatusCode::BAD_REQUEST);
    assert!(raw.json::<Value>().await.expect("json")["code"].is_string());
}

#[tokio::test]
async fn signals_are_accepted_singly_or_in_batches_within_bounds() {
    let app = TestApp::spawn().await;
    let owner = app.setup_owner().await;
    let (_, token) = app.register_app("counter").await;
    let accepted = |r: reqwest::Response| async move {
        assert_eq!(r.status(), StatusCode::ACCEPTED);
        r.json::<Value>().await.expect("json")["accepted"].as_u64().expect("accepted")
    };
    let one = json!({ "name": "opened", "payload": { "tab": 2 } });
    assert_eq!(accepted(report(&app, "/api/client-signal", Some(&token), one).await).await, 1);
    // The app runtime's queued events carry their id, time and installation.
    let queued = json!({ "signals": [{
        "id": "6f1c2a4e-0b7d-4c1e-9a51-3f3f2f9d0c11", "occurred_at": "2026-01-01T00:00:00.000Z",
        "name": "opened", "payload": { "tab": 2 }, "app_instance_id": "nonce-1",
    }] });
    assert_eq!(accepted(report(&app, "/api/client-signal", Some(&token), queued).await).await, 1);
    assert_error(
        report(&app, "/api/client-signal", Some(&token), json!({ "name": "x", "id": "a\nb" })).await,
        StatusCode::BAD_REQUEST,
        "invalid_signal",
    )
    .await;
    let batch: Vec<Value> = (0..30).map(|i| json!({ "name": "tap", "payload": i })).collect();
    assert_eq!(accepted(report(&app, "/api/client-signal", Some(&token), json!({ "signals": batch })).await).await, 30);
    let too_many: Vec<Value> = (0..101).map(|_| json!({ "name": "tap" })).collect();
    assert_error(
        report(&app, "/api/client-signal", Some(&token), json!({ "signals": too_many })).await,
        StatusCode::BAD_REQUEST,
        "too_many_signals",
    )
    .await;
    let big = json!({ "name": "dump", "payload": "z".repeat(5_000) });
    assert_error(
        report(&app, "/api/client-signal", Some(&token), big).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "signal_too_large",
    )
    .await;
    assert_error(
        report(&app, "/api/client-signal", Some(&token), json!({ "name": "" })).await,
        StatusCode::BAD_REQUEST,
        "invalid_signal",
    )
    .await;
    let forged = json!({ "signals": [{ "name": "tap", "app_id": 999 }] });
    assert_error(report(&app, "/api/client-signal", Some(&token), forged).await, StatusCode::FORBIDDEN, "forbidden")
        .await;
    let forwarded = json!({ "signals": [{ "name": "tap", "app_id": 1 }] });
    assert_eq!(accepted(report(&app, "/api/client-signal", Some(&owner), forwarded).await).await, 1);
    let r = report(&app, "/api/client-signal", None, json!({ "name": "x" })).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}
