//! Health, readiness (including before migrations can run) and version.

use reqwest::StatusCode;
use serde_json::Value;
use sqlx::Connection;

use crate::helpers::TestApp;

#[tokio::test]
async fn health_and_version_answer_without_caching() {
    let app = TestApp::spawn().await;
    let r = app.get("/api/health", None).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["cache-control"], "no-store");
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["status"], "ok");
    let version: Value = app.get("/api/version", None).await.json().await.expect("json");
    assert!(version["sha"].is_string() && version["build_date"].is_string());
}

#[tokio::test]
async fn ready_is_503_until_migrations_can_run_then_200() {
    let dir = std::sync::Arc::new(tempfile::tempdir().expect("tmp"));
    // Another process holds the database's write lock, so migrations cannot run yet.
    let db_path = dir.path().join("db");
    std::fs::create_dir_all(&db_path).expect("db dir");
    let url = format!("sqlite://{}?mode=rwc", db_path.join("mobius.sqlite3").display());
    let mut blocker = sqlx::SqliteConnection::connect(&url).await.expect("connect");
    sqlx::query("PRAGMA journal_mode=WAL").execute(&mut blocker).await.expect("wal");
    sqlx::query("BEGIN EXCLUSIVE").execute(&mut blocker).await.expect("lock");

    let app = TestApp::start(dir, |_| {}).await;
    let health = app.get("/api/health", None).await;
    assert_eq!(health.status(), StatusCode::OK, "health answers while start-up is blocked");
    let r = app.get("/api/ready", None).await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["ready"], false);
    assert!(body["reason"].as_str().is_some_and(|s| !s.is_empty()), "{body}");
    let other = app.get("/api/auth/setup/status", None).await;
    assert_eq!(other.status(), StatusCode::SERVICE_UNAVAILABLE);

    sqlx::query("COMMIT").execute(&mut blocker).await.expect("unlock");
    blocker.close().await.expect("close");
    app.wait_ready().await;
    assert_eq!(app.get("/api/auth/setup/status", None).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn the_data_dir_gets_a_private_key_and_a_wal_database() {
    let app = TestApp::spawn().await;
    use std::os::unix::fs::PermissionsExt;
    let key = std::fs::metadata(app.data_dir().join("secret.key")).expect("key");
    assert_eq!(key.permissions().mode() & 0o777, 0o600);
    let url = format!("sqlite://{}", app.data_dir().join("db/mobius.sqlite3").display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("connect");
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode").fetch_one(&mut conn).await.expect("mode");
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn sigterm_stops_the_binary_promptly_even_with_a_stream_open() {
    let dir = std::sync::Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_process(dir, &[]).await;
    let token = app.setup_owner().await;
    app.chat(&token, "open").await;
    let _stream = app.stream(&token, "open", None).await;
    let dir = app.stop().await;
    let log = std::fs::read_to_string(dir.path().join("server.log")).expect("log");
    assert!(log.contains("stopped"), "{log}");
    // Promptly: the open stream ended with the shutdown, not after the grace period.
    assert!(!log.contains("still open after the grace period"), "{log}");
    assert!(!log.contains(&token), "tokens never reach the logs");
}
