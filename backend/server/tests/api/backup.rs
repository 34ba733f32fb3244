//! `mobius backup` / `mobius restore` / `mobius healthcheck`: a backup of a running server
//! restores into a server where the owner, their chats and their provider login are intact.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use mobius::backup::{self, BackupError, MANIFEST_FILE};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Connection;

use crate::helpers::{PASSWORD, TestApp, USERNAME, eventually, token_of};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("metadata").permissions().mode() & 0o777
}

async fn chat_titles(app: &TestApp, token: &str) -> Vec<String> {
    let r = app.get("/api/chats", Some(token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let chats: Vec<Value> = r.json().await.expect("json");
    let mut titles: Vec<String> = chats.iter().map(|c| c["title"].as_str().unwrap_or("").to_owned()).collect();
    titles.sort();
    titles
}

async fn create_chat(app: &TestApp, token: &str, id: &str, title: &str) {
    let messages = json!([{ "role": "user", "content": format!("hello from {title}") }]);
    let r = app.post("/api/chats", json!({ "id": id, "title": title, "messages": messages }), Some(token)).await;
    assert!(r.status().is_success(), "create chat: {}", r.status());
}

#[tokio::test]
async fn a_backup_of_a_running_server_restores_the_owner_chats_and_provider_login() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    create_chat(&app, &token, "00000000-0000-4000-8000-000000000001", "groceries").await;
    create_chat(&app, &token, "00000000-0000-4000-8000-000000000002", "workout plan").await;
    app.connect_claude(&token).await;
    std::fs::create_dir_all(app.data_dir().join("run/agents")).expect("run dir");
    std::fs::write(app.data_dir().join("run/agents/4242"), b"").expect("pid marker");
    std::fs::create_dir_all(app.data_dir().join("apps/notes")).expect("app dir");
    std::fs::write(app.data_dir().join("apps/notes/index.jsx"), "export default () => null;\n").expect("app file");
    std::os::unix::fs::symlink("index.jsx", app.data_dir().join("apps/notes/entry.jsx")).expect("symlink");
    let titles = chat_titles(&app, &token).await;
    let vapid: Value = app.get("/api/push/vapid-key", None).await.json().await.expect("json");

    let backups = tempfile::tempdir().expect("tmp");
    let dest = backups.path().join("b1");
    let manifest = backup::backup(app.data_dir(), &dest).await.expect("backup while running");
    assert_eq!(manifest.databases, vec!["db/mobius.sqlite3".to_owned()]);
    assert!(dest.join(MANIFEST_FILE).is_file());
    assert_eq!(mode(&dest), 0o700, "a backup holds secrets");
    assert_eq!(mode(&dest.join("secret.key")), 0o600);
    assert_eq!(mode(&dest.join("push/vapid.pem")), 0o600, "the push key is backed up, private");
    assert!(!dest.join("db/mobius.sqlite3-wal").exists() && !dest.join("db/mobius.sqlite3-shm").exists());
    assert!(!dest.join("run").exists(), "transient process markers are not backed up");
    assert_eq!(std::fs::read_link(dest.join("apps/notes/entry.jsx")).expect("link"), Path::new("index.jsx"));
    app.stop().await;

    let restored = Arc::new(tempfile::tempdir().expect("tmp"));
    backup::restore(&dest, restored.path(), false).await.expect("restore into an empty dir");
    assert!(!restored.path().join(MANIFEST_FILE).exists());
    assert_eq!(mode(&restored.path().join("secret.key")), 0o600);
    assert_eq!(mode(&restored.path().join("cli-auth")), 0o700);
    assert_eq!(
        std::fs::read_to_string(restored.path().join("apps/notes/index.jsx")).expect("app file"),
        "export default () => null;\n"
    );

    let again = TestApp::spawn_in(restored, |_| {}).await;
    assert_eq!(again.get("/api/auth/session", Some(&token)).await.status(), StatusCode::OK, "same signing key");
    let restored_vapid: Value = again.get("/api/push/vapid-key", None).await.json().await.expect("json");
    assert_eq!(restored_vapid, vapid, "devices stay subscribed: same VAPID key");
    let r = again.post("/api/auth/token", json!({ "username": USERNAME, "password": PASSWORD }), None).await;
    assert_eq!(r.status(), StatusCode::OK, "the owner can sign in");
    let fresh = token_of(r).await;
    assert_eq!(chat_titles(&again, &fresh).await, titles);
    let detail = again.detail(&fresh, "00000000-0000-4000-8000-000000000001").await;
    assert_eq!(detail["messages"][0]["content"], "hello from groceries", "{detail}");
    let status: Value = again.get("/api/auth/providers/status", Some(&fresh)).await.json().await.expect("json");
    assert_eq!(status["providers"]["claude"]["connected"], true, "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_during_a_backup_leave_a_sound_database_in_it() {
    let app = Arc::new(TestApp::spawn().await);
    let token = app.setup_owner().await;
    // Chats are created for as long as the backup runs (bounded), so the two overlap.
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (app, token, done) = (app.clone(), token.clone(), done.clone());
        tokio::spawn(async move {
            let mut created = 0;
            while created < 2000 && (created < 5 || !done.load(std::sync::atomic::Ordering::Relaxed)) {
                create_chat(&app, &token, &format!("00000000-0000-4000-8000-{created:012}"), "busy").await;
                created += 1;
            }
            created
        })
    };
    eventually("the writing task has made a chat", || async {
        let chats = app.get("/api/chats", Some(&token)).await.json::<Vec<Value>>().await.expect("json");
        (!chats.is_empty()).then_some(())
    })
    .await;
    let backups = tempfile::tempdir().expect("tmp");
    let dest = backups.path().join("during");
    backup::backup(app.data_dir(), &dest).await.expect("backup");
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let created: i64 = writer.await.expect("writer");

    let url = format!("sqlite://{}?mode=ro", dest.join("db/mobius.sqlite3").display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("open the snapshot");
    let check: String = sqlx::query_scalar("PRAGMA integrity_check").fetch_one(&mut conn).await.expect("check");
    assert_eq!(check, "ok");
    let owners: i64 = sqlx::query_scalar("SELECT count(*) FROM owner").fetch_one(&mut conn).await.expect("owner");
    assert_eq!(owners, 1);
    let chats: i64 = sqlx::query_scalar("SELECT count(*) FROM chats").fetch_one(&mut conn).await.expect("chats");
    assert!((1..=created).contains(&chats), "{chats} chats in the snapshot, {created} created");
}

#[tokio::test]
async fn restore_refuses_a_non_empty_target_unless_forced() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    create_chat(&app, &token, "00000000-0000-4000-8000-00000000000a", "kept").await;
    let backups = tempfile::tempdir().expect("tmp");
    let dest = backups.path().join("b");
    backup::backup(app.data_dir(), &dest).await.expect("backup");
    app.stop().await;

    let target = Arc::new(tempfile::tempdir().expect("tmp"));
    std::fs::write(target.path().join("precious.txt"), b"do not lose me").expect("file");
    let err = backup::restore(&dest, target.path(), false).await.expect_err("must refuse");
    assert!(matches!(err, BackupError::Refused(_)), "{err}");
    assert!(err.to_string().contains("--force"), "{err}");
    assert!(target.path().join("precious.txt").is_file(), "nothing was touched");

    // A stale WAL beside the restored database would corrupt it: --force clears everything.
    std::fs::create_dir_all(target.path().join("db")).expect("db dir");
    std::fs::write(target.path().join("db/mobius.sqlite3-wal"), b"stale").expect("stale wal");
    backup::restore(&dest, target.path(), true).await.expect("forced restore");
    assert!(!target.path().join("precious.txt").exists());
    assert!(!target.path().join("db/mobius.sqlite3-wal").exists());
    let again = TestApp::spawn_in(target, |_| {}).await;
    assert_eq!(chat_titles(&again, &token).await, vec!["kept".to_owned()]);
}

#[tokio::test]
async fn restore_rejects_a_directory_that_is_not_a_complete_backup() {
    let app = TestApp::spawn().await;
    let not_a_backup = tempfile::tempdir().expect("tmp");
    std::fs::write(not_a_backup.path().join("secret.key"), b"x").expect("file");
    let target = tempfile::tempdir().expect("tmp");
    let err = backup::restore(not_a_backup.path(), &target.path().join("data"), false).await.expect_err("refused");
    assert!(err.to_string().contains(MANIFEST_FILE), "{err}");
    assert!(!target.path().join("data").exists(), "nothing was created");

    let backups = tempfile::tempdir().expect("tmp");
    let dest = backups.path().join("b");
    backup::backup(app.data_dir(), &dest).await.expect("backup");
    std::fs::write(dest.join("db/mobius.sqlite3"), b"SQLite format 3\0 but then garbage").expect("damage");
    let err = backup::restore(&dest, &target.path().join("data"), false).await.expect_err("damaged database");
    assert!(!target.path().join("data/db/mobius.sqlite3").exists(), "{err}");
}

#[tokio::test]
async fn backup_refuses_a_data_dir_without_a_database_and_a_non_empty_destination() {
    let empty = tempfile::tempdir().expect("tmp");
    let out = tempfile::tempdir().expect("tmp");
    let err = backup::backup(empty.path(), &out.path().join("b")).await.expect_err("no database");
    assert!(err.to_string().contains("DATA_DIR"), "{err}");

    let app = TestApp::spawn().await;
    std::fs::write(out.path().join("old.txt"), b"x").expect("file");
    let err = backup::backup(app.data_dir(), out.path()).await.expect_err("destination not empty");
    assert!(err.to_string().contains("not empty"), "{err}");
}

#[tokio::test]
async fn a_backup_inside_the_data_dir_does_not_copy_itself() {
    let app = TestApp::spawn().await;
    let dest = app.data_dir().join("backups/first");
    backup::backup(app.data_dir(), &dest).await.expect("backup");
    assert!(!dest.join("backups/first").exists());
    assert!(dest.join("backups").is_dir(), "the folder around it is kept");
}

// The probe blocks its thread; the server needs another one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_healthcheck_probe_answers_with_the_body_of_ready_and_version() {
    let app = TestApp::spawn().await;
    let ready = backup::probe(app.addr, "/api/ready").expect("ready");
    assert_eq!(serde_json::from_str::<Value>(&ready).expect("json")["ready"], true);
    let version = backup::probe(app.addr, "/api/version").expect("version");
    assert!(serde_json::from_str::<Value>(&version).expect("json")["sha"].is_string());
    let err = backup::probe(app.addr, "/api/no-such-route").expect_err("404");
    assert!(err.contains("404"), "{err}");
}

// The probe blocks its thread; the server needs another one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_backs_up_restores_and_probes() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    create_chat(&app, &token, "00000000-0000-4000-8000-0000000000b1", "from the cli").await;
    let bin = env!("CARGO_BIN_EXE_mobius");
    let work = tempfile::tempdir().expect("tmp");
    let dest = work.path().join("backup");
    let (data_dir, bind) = (app.data_dir().to_path_buf(), app.addr.to_string());
    let run = |args: &[&str]| {
        std::process::Command::new(bin)
            .args(args)
            .env("DATA_DIR", &data_dir)
            .env("MOBIUS_BIND", &bind)
            .output()
            .expect("run mobius")
    };
    let out = run(&["backup", "--to", dest.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(&["healthcheck"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"ready\":true"));
    assert_eq!(run(&["healthcheck", "/api/nope"]).status.code(), Some(1));
    assert_eq!(run(&["backup"]).status.code(), Some(2), "--to is required");
    app.stop().await;

    let target = work.path().join("data");
    let (from, to) = (dest.to_str().expect("utf-8"), target.to_str().expect("utf-8"));
    let out = run(&["restore", "--from", from, "--to", to]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(&["restore", "--from", from, "--to", to]);
    assert_eq!(out.status.code(), Some(1), "a second restore into the same dir is refused");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
    let out = run(&["restore", "--from", from, "--to", to, "--force"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(target.join("db/mobius.sqlite3").is_file());
}
