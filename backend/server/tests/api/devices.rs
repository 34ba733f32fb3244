//! Signed-in devices: listed with where and when, each signed out on its own at once; pairing a
//! new device with a short code instead of the password (single use, rate-limited).

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{PASSWORD, TestApp, USERNAME, assert_error, token_of};

async fn devices(app: &TestApp, token: &str) -> Vec<Value> {
    let r = app.get("/api/auth/devices", Some(token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json::<Value>().await.expect("json")["devices"].as_array().cloned().unwrap_or_default()
}

async fn sign_in_as(app: &TestApp, agent: &str) -> String {
    let r = app
        .client
        .post(app.url("/api/auth/token"))
        .header("user-agent", agent)
        .json(&json!({ "username": USERNAME, "password": PASSWORD }))
        .send()
        .await
        .expect("request");
    token_of(r).await
}

#[tokio::test]
async fn devices_are_listed_and_a_revoked_one_is_signed_out_at_once() {
    let app = TestApp::spawn().await;
    let laptop = app.setup_owner().await;
    let phone = sign_in_as(&app, "Mozilla/5.0 (iPhone) Phone").await;
    let list = devices(&app, &laptop).await;
    assert_eq!(list.len(), 2, "{list:?}");
    let current: Vec<_> = list.iter().filter(|d| d["current"] == true).collect();
    assert_eq!(current.len(), 1, "exactly the caller's is current: {list:?}");
    let phone_row = list.iter().find(|d| d["label"].as_str().is_some_and(|l| l.contains("iPhone"))).expect("phone");
    assert_eq!(phone_row["address"], "127.0.0.1");
    assert!(phone_row["last_seen_at"].as_i64().unwrap_or(0) > 0);
    assert_eq!(app.get("/api/auth/session", Some(&phone)).await.status(), StatusCode::OK);

    let path = format!("/api/auth/devices/{}", phone_row["id"]);
    assert_eq!(app.delete_with(&path, &laptop).await.status(), StatusCode::NO_CONTENT);
    assert_error(app.get("/api/auth/session", Some(&phone)).await, StatusCode::UNAUTHORIZED, "token_revoked").await;
    assert_eq!(app.get("/api/auth/session", Some(&laptop)).await.status(), StatusCode::OK, "the others stay");
    assert_error(app.delete_with(&path, &laptop).await, StatusCode::NOT_FOUND, "device_not_found").await;
    assert_error(app.delete_with("/api/auth/devices/abc", &laptop).await, StatusCode::NOT_FOUND, "device_not_found")
        .await;
    assert_eq!(devices(&app, &laptop).await.len(), 1);

    // Still revoked after a restart (the session set is read from the database).
    let dir = app.stop().await;
    let app = TestApp::spawn_in(dir, |_| {}).await;
    assert_error(app.get("/api/auth/session", Some(&phone)).await, StatusCode::UNAUTHORIZED, "token_revoked").await;
    assert_eq!(app.get("/api/auth/session", Some(&laptop)).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_pairing_code_signs_a_new_device_in_once_and_guesses_are_limited() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    assert_error(
        app.post("/api/auth/pair", json!({ "code": "ABCD-EFGH" }), None).await,
        StatusCode::UNAUTHORIZED,
        "invalid_pairing_code",
    )
    .await;
    let r = app.post("/api/auth/pairing", json!({}), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let made: Value = r.json().await.expect("json");
    let code = made["code"].as_str().expect("code").to_owned();
    assert!(made["url"].as_str().expect("url").ends_with(&format!("/pair?code={code}")));
    let status: Value = app.get("/api/auth/pairing", Some(&token)).await.json().await.expect("json");
    assert_eq!(status["status"], "pending");

    let paired = app
        .client
        .post(app.url("/api/auth/pair"))
        .header("user-agent", "Paired Tablet")
        .json(&json!({ "code": code.to_lowercase() }))
        .send()
        .await
        .expect("pair");
    assert_eq!(paired.status(), StatusCode::OK);
    assert!(paired.headers().get("set-cookie").is_some(), "the new device gets its credential");
    let tablet = token_of(paired).await;
    assert_eq!(app.get("/api/auth/session", Some(&tablet)).await.status(), StatusCode::OK);
    let again = app.post("/api/auth/pair", json!({ "code": code }), None).await;
    assert_error(again, StatusCode::UNAUTHORIZED, "invalid_pairing_code").await;
    let status: Value = app.get("/api/auth/pairing", Some(&token)).await.json().await.expect("json");
    assert_eq!(status["status"], "paired");
    assert_eq!(status["label"], "Paired Tablet");
    assert!(devices(&app, &token).await.iter().any(|d| d["label"] == "Paired Tablet"));

    // Guesses count against the sign-in limits of their address.
    app.post("/api/auth/pairing", json!({}), Some(&token)).await;
    let mut limited = false;
    for _ in 0..30 {
        let r = app.post("/api/auth/pair", json!({ "code": "ZZZZ-ZZZZ" }), None).await;
        if r.status() == StatusCode::TOO_MANY_REQUESTS {
            limited = true;
            break;
        }
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    }
    assert!(limited, "wrong codes are rate-limited");
    assert_error(
        app.post("/api/auth/pair", json!({ "code": "" }), None).await,
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await;
    // An agent's token manages no devices.
    let r = app.delete_with("/api/auth/pairing", &token).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn sign_out_everywhere_ends_every_device_session() {
    let app = TestApp::spawn().await;
    let laptop = app.setup_owner().await;
    let phone = sign_in_as(&app, "Phone").await;
    let r = app.post("/api/auth/logout-all", json!({}), Some(&laptop)).await;
    assert_eq!(r.status(), StatusCode::OK);
    for t in [&laptop, &phone] {
        assert_eq!(app.get("/api/auth/session", Some(t)).await.status(), StatusCode::UNAUTHORIZED);
    }
    let fresh = sign_in_as(&app, "Laptop").await;
    assert_eq!(devices(&app, &fresh).await.len(), 1);
}

#[tokio::test]
async fn the_streams_a_device_opened_end_when_it_is_signed_out() {
    let app = TestApp::spawn().await;
    let laptop = app.setup_owner().await;
    let phone = sign_in_as(&app, "Phone").await;
    let chat = "00000000-0000-4000-8000-0000000000d1";
    let r = app.post("/api/chats", json!({ "id": chat, "title": "t", "messages": [] }), Some(&laptop)).await;
    assert!(r.status().is_success());
    let mut system =
        crate::helpers::SseReader::connect(&app.client, &app.url("/api/events/system"), &phone, None).await;
    assert_eq!(system.next(5).await.data["type"], "system_stream_open");
    let mut chat_stream =
        crate::helpers::SseReader::connect(&app.client, &app.url(&format!("/api/chats/{chat}/stream")), &phone, None)
            .await;
    chat_stream.until("catch_up_done", 5).await;
    let mut kept = crate::helpers::SseReader::connect(&app.client, &app.url("/api/events/system"), &laptop, None).await;
    assert_eq!(kept.next(5).await.data["type"], "system_stream_open");

    let phone_row = devices(&app, &laptop).await.into_iter().find(|d| d["label"] == "Phone").expect("phone");
    let r = app.delete_with(&format!("/api/auth/devices/{}", phone_row["id"]), &laptop).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    for stream in [&mut system, &mut chat_stream] {
        let end = tokio::time::timeout(std::time::Duration::from_secs(5), stream.rx.recv()).await;
        assert!(matches!(end, Ok(None)), "the signed-out device's stream ends");
    }
    // The other device's stream goes on: it still hears events.
    app.post("/api/notify", json!({ "type": "theme_updated" }), Some(&laptop)).await;
    assert_eq!(kept.next(5).await.data["type"], "theme_updated");
}
