//! A data dir made by the previous release (`tests/fixtures/previous-release/`: its database as
//! SQL, its keys, an app's source and bundle, an upload, the owner's memory) opens under this
//! build with everything readable: chats and messages, the app and its module, the schedule,
//! the chat's note, the upload, the memory, and a session signed in before device sessions
//! existed (listed as one device, and signed out like one).
//!
//! The fixture is recorded by `write_previous_release_fixture` (ignored) with that release's
//! binary: `MOBIUS_E2E_SERVER_BIN=<old mobius> MOBIUS_WRITE_FIXTURE=1 cargo test -p mobius
//! --test api -- --ignored write_previous_release_fixture`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Connection;

use crate::helpers::{PASSWORD, TestApp, USERNAME, token_of};

const CHAT_A: &str = "00000000-0000-4000-8000-00000000f001";
const CHAT_B: &str = "00000000-0000-4000-8000-00000000f002";
/// Files of the data dir kept in the fixture besides the database.
const KEPT: &[&str] = &["secret.key", "data.key", "memory", "uploads", "compiled", "apps"];

fn fixture_dir() -> PathBuf {
    mobius::config::checkout_root().join("tests/fixtures/previous-release")
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read") {
        let entry = entry.expect("entry");
        let name = entry.file_name();
        if name == ".git" || name == ".storage-meta" {
            continue;
        }
        let (src, dest) = (entry.path(), to.join(&name));
        if entry.file_type().expect("type").is_dir() {
            std::fs::create_dir_all(&dest).expect("mkdir");
            copy_tree(&src, &dest);
        } else {
            std::fs::copy(&src, &dest).expect("copy");
        }
    }
}

#[tokio::test]
#[ignore = "records tests/fixtures/previous-release with the release named by MOBIUS_E2E_SERVER_BIN"]
async fn write_previous_release_fixture() {
    assert!(std::env::var_os("MOBIUS_WRITE_FIXTURE").is_some(), "set MOBIUS_WRITE_FIXTURE=1 to overwrite the fixture");
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let root = mobius::config::checkout_root();
    let app = TestApp::spawn_process(
        dir.clone(),
        &[
            ("MOBIUS_APP_NODE_MODULES", root.join("frontend/node_modules").display().to_string()),
            ("MOBIUS_APP_RUNTIME_DIR", root.join("frontend/public").display().to_string()),
            ("TZ", "UTC".into()),
        ],
    )
    .await;
    let token = app.setup_owner().await;
    for (id, title, words) in [
        (CHAT_A, "Trip to Lisbon", ["Plan three days in Lisbon", "Day 1: Alfama and the castle."]),
        (CHAT_B, "Groceries", ["Make a shopping list", "Milk, eggs, bread."]),
    ] {
        let messages = json!([{ "role": "user", "content": words[0] }, { "role": "assistant", "content": words[1] }]);
        let r = app.post("/api/chats", json!({ "id": id, "title": title, "messages": messages }), Some(&token)).await;
        assert!(r.status().is_success(), "{}", r.status());
    }
    let r = app
        .put_json(
            &format!("/api/chats/{CHAT_A}/note"),
            json!({ "digest": "Lisbon trip, 3 days", "summary": "Alfama, castle, Belém." }),
            &token,
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let r = app.put_json("/api/memory/owner", json!({ "content": "# Memory\n\nPrefers trains.\n" }), &token).await;
    assert_eq!(r.status(), StatusCode::OK);
    let r = app.post("/api/schedules", json!({ "prompt": "Check the weather in Lisbon", "cron": "0 7 * * *", "chat_id": CHAT_A, "name": "Weather" }), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::CREATED, "{:?}", r.text().await);
    let r = crate::uploads::upload(
        &app,
        &token,
        CHAT_A,
        &[("files", &b"notes.txt"[..], &b"Passport number: none of your business\n"[..])],
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK, "{:?}", r.text().await);
    let source = dir.path().join("apps/counter");
    std::fs::create_dir_all(&source).expect("app dir");
    std::fs::write(
        source.join("mobius.json"),
        r#"{"id":"counter","name":"Counter","version":"1.0.0","description":"Counts taps.","entry":"index.jsx"}"#,
    )
    .expect("manifest");
    std::fs::write(
        source.join("index.jsx"),
        "import { useState } from 'react';\nexport default function App() {\n  const [n, setN] = useState(0);\n  return <button onClick={() => setN(n + 1)}>{n}</button>;\n}\n",
    )
    .expect("source");
    let r = app.post("/api/apps/apply", json!({ "slug": "counter" }), Some(&token)).await;
    assert!(r.status().is_success(), "{:?}", r.text().await);
    let dir = app.stop().await;

    let out = fixture_dir();
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("fixture dir");
    let dump = std::process::Command::new("sqlite3")
        .arg(dir.path().join("db/mobius.sqlite3"))
        .arg(".dump")
        .output()
        .expect("sqlite3 .dump (the sqlite3 CLI records the fixture)");
    assert!(dump.status.success());
    std::fs::write(out.join("db.sql"), dump.stdout).expect("db.sql");
    for name in KEPT {
        let src = dir.path().join(name);
        if src.is_dir() {
            std::fs::create_dir_all(out.join(name)).expect("mkdir");
            copy_tree(&src, &out.join(name));
        } else if src.is_file() {
            std::fs::copy(&src, out.join(name)).expect("copy");
        }
    }
}

/// A data dir holding the fixture, and the server over it.
async fn previous_release() -> TestApp {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let fixture = fixture_dir();
    for name in KEPT {
        let src = fixture.join(name);
        if src.is_dir() {
            std::fs::create_dir_all(dir.path().join(name)).expect("mkdir");
            copy_tree(&src, &dir.path().join(name));
        } else if src.is_file() {
            std::fs::copy(&src, dir.path().join(name)).expect("copy");
        }
    }
    std::fs::create_dir_all(dir.path().join("db")).expect("db dir");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("db/mobius.sqlite3").display());
    let dump = std::fs::read_to_string(fixture.join("db.sql")).expect("db.sql");
    let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("create");
    sqlx::raw_sql(&dump).execute(&mut conn).await.expect("load the dump");
    conn.close().await.expect("close");
    TestApp::spawn_in(dir, |_| {}).await
}

#[tokio::test]
async fn a_data_dir_of_the_previous_release_opens_with_everything_readable() {
    let app = previous_release().await;
    // A session from before device sessions: its token names none and still works.
    let secret = std::fs::read_to_string(app.data_dir().join("secret.key")).expect("secret.key");
    let keys = mobius::auth::Keys::from_secret(secret.trim().as_bytes());
    let old = keys.issue(&mobius::auth::Claims::new(USERNAME, mobius::auth::Scope::Owner, 0, 3600)).expect("old token");
    assert_eq!(app.get("/api/auth/session", Some(&old)).await.status(), StatusCode::OK);

    let token =
        token_of(app.post("/api/auth/token", json!({ "username": USERNAME, "password": PASSWORD }), None).await).await;
    let chats: Value = app.get("/api/chats", Some(&token)).await.json().await.expect("chats");
    let titles: Vec<&str> = chats.as_array().expect("list").iter().filter_map(|c| c["title"].as_str()).collect();
    assert!(titles.contains(&"Trip to Lisbon") && titles.contains(&"Groceries"), "{titles:?}");
    let detail: Value = app.get(&format!("/api/chats/{CHAT_A}"), Some(&token)).await.json().await.expect("detail");
    let messages = detail["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2, "{detail}");
    assert_eq!(messages[0]["content"], "Plan three days in Lisbon");
    let found: Value = app.get("/api/chats/search?q=Lisbon", Some(&token)).await.json().await.expect("search");
    assert!(found.to_string().contains(CHAT_A), "the search index came along: {found}");

    let note: Value = app.get(&format!("/api/chats/{CHAT_A}/note"), Some(&token)).await.json().await.expect("note");
    assert_eq!(note["note"]["digest"], "Lisbon trip, 3 days", "{note}");
    let memory: Value = app.get("/api/memory", Some(&token)).await.json().await.expect("memory");
    assert!(memory["owner_md"].as_str().unwrap_or_default().contains("Prefers trains"), "{memory}");
    let schedules: Value = app.get("/api/schedules", Some(&token)).await.json().await.expect("schedules");
    assert!(schedules["schedules"].as_array().expect("list").iter().any(|s| s["name"] == "Weather"), "{schedules}");

    let uploads: Value =
        app.get(&format!("/api/chats/{CHAT_A}/uploads"), Some(&token)).await.json().await.expect("uploads");
    let name = uploads[0]["name"].as_str().expect("an upload").to_owned();
    let file = app.get(&format!("/api/chats/{CHAT_A}/uploads/{name}"), Some(&token)).await;
    assert_eq!(file.status(), StatusCode::OK);
    assert!(file.text().await.expect("text").starts_with("Passport number"));

    let apps: Value = app.get("/api/apps", Some(&token)).await.json().await.expect("apps");
    let counter = apps.as_array().expect("apps").iter().find(|a| a["slug"] == "counter").expect("the app").clone();
    let module = app.get(&format!("/api/apps/{}/module", counter["id"]), Some(&token)).await;
    assert_eq!(module.status(), StatusCode::OK);
    assert!(module.text().await.expect("module").len() > 100, "the bundle is served");

    // The old sessions are one device; signing it out ends the old token at once.
    let devices: Value = app.get("/api/auth/devices", Some(&token)).await.json().await.expect("devices");
    let legacy =
        devices["devices"].as_array().expect("devices").iter().find(|d| d["legacy"] == true).expect("legacy").clone();
    assert_eq!(
        app.delete_with(&format!("/api/auth/devices/{}", legacy["id"]), &token).await.status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(app.get("/api/auth/session", Some(&old)).await.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(app.get("/api/auth/session", Some(&token)).await.status(), StatusCode::OK);
}
