//! Owner setup, login, throttling, token checks and the cross-site guard.

use mobius::auth::{Claims, Keys, Scope};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{PASSWORD, TestApp, USERNAME, assert_error, token_of};

#[tokio::test]
async fn setup_happens_once_then_answers_409() {
    let app = TestApp::spawn().await;
    let status: Value = app.get("/api/auth/setup/status", None).await.json().await.expect("json");
    assert_eq!(status["configured"], false);
    let token = app.setup_owner().await;
    assert!(!token.is_empty());
    let status: Value = app.get("/api/auth/setup/status", None).await.json().await.expect("json");
    assert_eq!(status["configured"], true);
    let again =
        app.post("/api/auth/setup", json!({ "username": "intruder", "password": "another-password" }), None).await;
    assert_error(again, StatusCode::CONFLICT, "already_configured").await;
    // The original owner still logs in; the intruder does not exist.
    let ok = app.post("/api/auth/token", json!({ "username": USERNAME, "password": PASSWORD }), None).await;
    assert_eq!(ok.status(), StatusCode::OK);
}

#[tokio::test]
async fn setup_validates_its_input_and_stores_nothing_on_error() {
    let app = TestApp::spawn().await;
    let weak = app.post("/api/auth/setup", json!({ "username": "owner", "password": "short" }), None).await;
    assert_error(weak, StatusCode::BAD_REQUEST, "weak_password").await;
    let blank = app.post("/api/auth/setup", json!({ "username": "   ", "password": "long enough pw" }), None).await;
    assert_error(blank, StatusCode::BAD_REQUEST, "invalid_username").await;
    let long =
        app.post("/api/auth/setup", json!({ "username": "x".repeat(65), "password": "long enough pw" }), None).await;
    assert_error(long, StatusCode::BAD_REQUEST, "invalid_username").await;
    let status: Value = app.get("/api/auth/setup/status", None).await.json().await.expect("json");
    assert_eq!(status["configured"], false);
}

#[tokio::test]
async fn login_accepts_the_right_password_as_json_or_form_and_refuses_a_wrong_one() {
    let app = TestApp::spawn().await;
    app.setup_owner().await;
    let json_login = app.post("/api/auth/token", json!({ "username": USERNAME, "password": PASSWORD }), None).await;
    let token = token_of(json_login).await;
    let session: Value = app.get("/api/auth/session", Some(&token)).await.json().await.expect("json");
    assert_eq!(session["username"], USERNAME);

    let form = app
        .client
        .post(app.url("/api/auth/token"))
        .form(&[("username", USERNAME), ("password", PASSWORD)])
        .send()
        .await
        .expect("form");
    assert_eq!(form.status(), StatusCode::OK);

    let wrong =
        app.post("/api/auth/token", json!({ "username": USERNAME, "password": "not the password" }), None).await;
    assert_error(wrong, StatusCode::UNAUTHORIZED, "invalid_credentials").await;
    let nobody = app.post("/api/auth/token", json!({ "username": "nobody", "password": PASSWORD }), None).await;
    assert_error(nobody, StatusCode::UNAUTHORIZED, "invalid_credentials").await;
}

#[tokio::test]
async fn repeated_failures_make_an_address_back_off_even_for_the_right_password() {
    let app = TestApp::spawn().await;
    app.setup_owner().await;
    for _ in 0..mobius::auth::limits::LoginPolicy::default().free_failures {
        let r = app.post("/api/auth/token", json!({ "username": USERNAME, "password": "guess-guess" }), None).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    }
    let r = app.post("/api/auth/token", json!({ "username": USERNAME, "password": PASSWORD }), None).await;
    let retry_after: u64 = r.headers()["retry-after"].to_str().expect("header").parse().expect("secs");
    assert!(retry_after >= 1);
    assert_error(r, StatusCode::TOO_MANY_REQUESTS, "too_many_attempts").await;
}

fn keys_of(app: &TestApp) -> Keys {
    app.keys()
}

#[tokio::test]
async fn bad_tokens_get_401_with_a_stable_code() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    assert_eq!(app.get("/api/auth/session", Some(&token)).await.status(), StatusCode::OK);

    assert_error(app.get("/api/auth/session", None).await, StatusCode::UNAUTHORIZED, "missing_token").await;
    let basic =
        app.client.get(app.url("/api/auth/session")).header("authorization", "Basic abc").send().await.expect("req");
    assert_error(basic, StatusCode::UNAUTHORIZED, "malformed_token").await;
    assert_error(app.get("/api/auth/session", Some("abc.def")).await, StatusCode::UNAUTHORIZED, "malformed_token")
        .await;

    let keys = keys_of(&app);
    let expired = keys.issue(&Claims::new(USERNAME, Scope::Owner, 0, -3600)).expect("issue");
    assert_error(app.get("/api/auth/session", Some(&expired)).await, StatusCode::UNAUTHORIZED, "token_expired").await;

    let forger = Keys::from_secret(b"an attacker who does not know the key!!");
    let forged = forger.issue(&Claims::new(USERNAME, Scope::Owner, 0, 3600)).expect("issue");
    assert_error(app.get("/api/auth/session", Some(&forged)).await, StatusCode::UNAUTHORIZED, "invalid_token").await;

    let stranger = keys.issue(&Claims::new("someone-else", Scope::Owner, 0, 3600)).expect("issue");
    assert_error(app.get("/api/auth/session", Some(&stranger)).await, StatusCode::UNAUTHORIZED, "invalid_token").await;

    // A genuine token of another scope is authenticated but not allowed here.
    let app_token = keys.issue(&Claims::new(USERNAME, Scope::App, 0, 3600)).expect("issue");
    assert_error(app.get("/api/auth/session", Some(&app_token)).await, StatusCode::FORBIDDEN, "wrong_scope").await;

    // An agent token is owner-derived but only while its run is running; here it never ran.
    let mut agent = Claims::new(USERNAME, Scope::Agent, 0, 3600);
    agent.run_id = Some("rt-none".into());
    let agent = keys.issue(&agent).expect("issue");
    assert_error(app.get("/api/apps", Some(&agent)).await, StatusCode::UNAUTHORIZED, "token_revoked").await;
    // Outside its route table an agent token is refused before anything else.
    assert_error(app.get("/api/auth/session", Some(&agent)).await, StatusCode::FORBIDDEN, "agent_not_allowed").await;
}

#[tokio::test]
async fn logout_all_revokes_every_issued_token() {
    let app = TestApp::spawn().await;
    let first = app.setup_owner().await;
    let second =
        token_of(app.post("/api/auth/token", json!({ "username": USERNAME, "password": PASSWORD }), None).await).await;
    let r = app.post("/api/auth/logout-all", json!({}), Some(&first)).await;
    assert_eq!(r.status(), StatusCode::OK);
    for token in [&first, &second] {
        assert_error(app.get("/api/auth/session", Some(token)).await, StatusCode::UNAUTHORIZED, "token_revoked").await;
    }
    let fresh =
        token_of(app.post("/api/auth/token", json!({ "username": USERNAME, "password": PASSWORD }), None).await).await;
    assert_eq!(app.get("/api/auth/session", Some(&fresh)).await.status(), StatusCode::OK);

    // The revocation is durable.
    let dir = app.stop().await;
    let app = TestApp::spawn_in(dir, |_| {}).await;
    // After a restart the rotated-away key is forgotten: the old token is simply not ours.
    assert_error(app.get("/api/auth/session", Some(&first)).await, StatusCode::UNAUTHORIZED, "invalid_token").await;
    assert_eq!(app.get("/api/auth/session", Some(&fresh)).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn malformed_oversized_and_mistyped_bodies_get_clear_errors() {
    let app = TestApp::spawn().await;
    let bad = app
        .client
        .post(app.url("/api/auth/setup"))
        .header("content-type", "application/json")
        .body("{\"username\": \"owner\", ")
        .send()
        .await
        .expect("req");
    assert_error(bad, StatusCode::BAD_REQUEST, "invalid_json").await;

    let wrong_shape = app.post("/api/auth/setup", json!({ "username": 42, "password": "long enough pw" }), None).await;
    assert_error(wrong_shape, StatusCode::BAD_REQUEST, "invalid_request").await;

    let huge = json!({ "username": "owner", "password": "x".repeat(2 * 1024 * 1024) });
    assert_error(app.post("/api/auth/setup", huge, None).await, StatusCode::PAYLOAD_TOO_LARGE, "body_too_large").await;

    let text = app
        .client
        .post(app.url("/api/auth/setup"))
        .header("content-type", "text/plain")
        .body("hi")
        .send()
        .await
        .expect("req");
    assert_error(text, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;

    // Nothing was stored by any of them.
    let status: Value = app.get("/api/auth/setup/status", None).await.json().await.expect("json");
    assert_eq!(status["configured"], false);
}

#[tokio::test]
async fn cross_site_state_changes_are_refused() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let cross = app
        .client
        .post(app.url("/api/auth/logout-all"))
        .bearer_auth(&token)
        .header("sec-fetch-site", "cross-site")
        .header("origin", "https://evil.example")
        .send()
        .await
        .expect("req");
    assert_error(cross, StatusCode::FORBIDDEN, "cross_site_request").await;
    let foreign_origin = app
        .client
        .post(app.url("/api/auth/token"))
        .header("origin", "https://evil.example")
        .json(&json!({ "username": USERNAME, "password": PASSWORD }))
        .send()
        .await
        .expect("req");
    assert_error(foreign_origin, StatusCode::FORBIDDEN, "cross_site_request").await;
    // The token still works: the refused request changed nothing.
    assert_eq!(app.get("/api/auth/session", Some(&token)).await.status(), StatusCode::OK);
    // Same-origin browser requests pass.
    let same = app
        .client
        .post(app.url("/api/auth/token"))
        .header("sec-fetch-site", "same-origin")
        .header("origin", format!("http://{}", app.addr))
        .json(&json!({ "username": USERNAME, "password": PASSWORD }))
        .send()
        .await
        .expect("req");
    assert_eq!(same.status(), StatusCode::OK);
}

#[tokio::test]
async fn the_owner_survives_a_restart() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let dir = app.stop().await;
    let app = TestApp::spawn_in(dir, |_| {}).await;
    assert_eq!(app.get("/api/auth/session", Some(&token)).await.status(), StatusCode::OK);
    let login = app.post("/api/auth/token", json!({ "username": USERNAME, "password": PASSWORD }), None).await;
    assert_eq!(login.status(), StatusCode::OK);
    let again = app.post("/api/auth/setup", json!({ "username": "x", "password": "long enough pw" }), None).await;
    assert_error(again, StatusCode::CONFLICT, "already_configured").await;
}
