//! The shell's own source: seeded as a git repository, rebuilt with vite into a numbered build
//! served at once (and announced), a broken edit or a link refused while the current shell
//! stays, one rebuild at a time, back to stock, and a build that never reports ready rolled
//! back.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{SseReader, TestApp, assert_error, eventually, fake_dist};

/// A tiny vite project standing in for the stock shell (vite resolves in the repository's
/// `frontend/node_modules`, the toolchain tests use).
fn stock_source(dir: &Path) -> PathBuf {
    let stock = dir.join("stock-shell");
    std::fs::create_dir_all(stock.join("src")).expect("mkdir");
    std::fs::write(stock.join("package.json"), r#"{"name":"shell","private":true,"type":"module"}"#).expect("write");
    std::fs::write(
        stock.join("index.html"),
        "<!doctype html><html><head><title>shell</title></head><body><div id=\"root\"></div>\
         <script type=\"module\" src=\"/src/main.js\"></script></body></html>",
    )
    .expect("write");
    std::fs::write(stock.join("src/main.js"), label_js("Stock label")).expect("write");
    stock
}

fn label_js(label: &str) -> String {
    format!("document.getElementById(\"root\").textContent = {label:?};\n")
}

async fn spawn() -> (TestApp, String) {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    fake_dist(dir.path());
    let stock = stock_source(dir.path());
    let app = TestApp::spawn_in(dir, move |config| {
        config.shell_source = Some(stock);
        config.shell_ready_timeout = Duration::from_secs(2);
    })
    .await;
    let token = app.setup_owner().await;
    // The source is seeded after the server is ready, off the boot path.
    let head = source(&app).join(".git/HEAD");
    eventually("the shell's source is seeded", || async { head.is_file().then_some(()) }).await;
    (app, token)
}

fn source(app: &TestApp) -> PathBuf {
    app.data_dir().join("platform/shell")
}

/// The served index and the text of the script it loads.
async fn served(app: &TestApp) -> (String, String) {
    let index = app.get("/", None).await.text().await.expect("index");
    let script = index
        .split("src=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .find(|s| s.starts_with("/assets/") && s.ends_with(".js"));
    let code = match script {
        Some(path) => app.get(path, None).await.text().await.expect("script"),
        None => String::new(),
    };
    (index, code)
}

#[tokio::test]
async fn the_seeded_source_is_rebuilt_into_a_new_build_served_at_once_and_announced() {
    let (app, token) = spawn().await;
    assert!(source(&app).join("src/main.js").is_file(), "the source is seeded");
    assert!(source(&app).join(".git/HEAD").is_file(), "as a git repository");
    let (index, _) = served(&app).await;
    assert!(index.contains("<title>shell</title>") && !index.contains("mobius-shell-build"), "stock first: {index}");

    let mut system = SseReader::connect(&app.client, &app.url("/api/events/system"), &token, None).await;
    assert_eq!(system.next(5).await.data["type"], "system_stream_open");
    std::fs::write(source(&app).join("src/main.js"), label_js("Edited label")).expect("edit");
    let r = app.post("/api/shell/rebuild", json!({}), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let rebuilt: Value = r.json().await.expect("json");
    assert_eq!(rebuilt["build"]["n"], 1);
    assert_eq!(rebuilt["build"]["commit"].as_str().map(str::len), Some(40), "the source's commit: {rebuilt}");
    assert_eq!(system.next(5).await.data, json!({"type": "shell_updated", "build": 1}));

    let (index, code) = served(&app).await;
    assert!(index.contains("<meta name=\"mobius-shell-build\" content=\"1\">"), "{index}");
    assert!(code.contains("Edited label"), "the new build is served: {code}");
    let status: Value = app.get("/api/shell", Some(&token)).await.json().await.expect("json");
    assert_eq!((status["serving"].clone(), status["editable"].clone()), (json!(1), json!(true)));

    // The device reports it mounted: confirmed, never rolled back.
    let r = app.post("/api/shell/ready", json!({"build": 1}), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let status: Value = app.get("/api/shell", Some(&token)).await.json().await.expect("json");
    assert_eq!(status["builds"][0]["confirmed"], true);

    // Back to stock, then to the build again: each switch is what the next request gets.
    let r = app.post("/api/shell/use", json!({"build": null}), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(system.next(5).await.data, json!({"type": "shell_updated", "build": null}));
    assert!(!served(&app).await.0.contains("mobius-shell-build"));
    assert_error(
        app.post("/api/shell/use", json!({"build": 9}), Some(&token)).await,
        StatusCode::NOT_FOUND,
        "shell_build_not_found",
    )
    .await;
    assert_eq!(app.post("/api/shell/use", json!({"build": 1}), Some(&token)).await.status(), StatusCode::OK);
    assert!(served(&app).await.1.contains("Edited label"));

    // What is served survives a restart.
    let dir = app.stop().await;
    let stock = dir.path().join("stock-shell");
    let app = TestApp::spawn_in(dir, move |config| config.shell_source = Some(stock)).await;
    assert!(served(&app).await.1.contains("Edited label"));

    // The build deleted by hand: the stock shell answers, and /recovery still works.
    std::fs::remove_dir_all(app.data_dir().join("platform/shell-builds/1")).expect("delete the build");
    let (index, _) = served(&app).await;
    assert!(index.contains("<title>shell</title>") && !index.contains("mobius-shell-build"), "{index}");
    let page = app.get("/recovery", None).await;
    assert_eq!(page.status(), StatusCode::OK);
    let script = app.get("/recovery/recovery.js", None).await.text().await.expect("script");
    assert!(script.contains("/api/shell/use"), "recovery switches the shell");
    let token = crate::helpers::token_of(
        app.post(
            "/api/auth/token",
            json!({"username": crate::helpers::USERNAME, "password": crate::helpers::PASSWORD}),
            None,
        )
        .await,
    )
    .await;
    assert_eq!(app.post("/api/shell/use", json!({"build": null}), Some(&token)).await.status(), StatusCode::OK);
    let status: Value = app.get("/api/shell", Some(&token)).await.json().await.expect("json");
    assert_eq!(status["serving"], Value::Null);
}

#[tokio::test]
async fn a_broken_edit_or_a_link_is_refused_with_its_errors_and_the_current_shell_stays() {
    let (app, token) = spawn().await;
    std::fs::write(source(&app).join("src/main.js"), "document.getElementById(\"root\".textContent = ;\n")
        .expect("edit");
    let r = app.post("/api/shell/rebuild", json!({}), Some(&token)).await;
    let body = assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "shell_build_failed").await;
    let message = body["message"].as_str().expect("message");
    assert!(message.contains("main.js") && message.contains("current shell stays"), "{message}");
    assert!(!served(&app).await.0.contains("mobius-shell-build"), "stock still served");

    std::fs::write(source(&app).join("src/main.js"), label_js("Fine")).expect("edit");
    std::os::unix::fs::symlink("../../../secret.key", source(&app).join("src/key.js")).expect("link");
    let r = app.post("/api/shell/rebuild", json!({}), Some(&token)).await;
    let body = assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "shell_source_refused").await;
    assert!(body["message"].as_str().is_some_and(|m| m.contains("src/key.js")), "{body}");
    let status: Value = app.get("/api/shell", Some(&token)).await.json().await.expect("json");
    assert_eq!((status["serving"].clone(), status["builds"].clone()), (Value::Null, json!([])));
}

#[tokio::test]
async fn a_second_rebuild_while_one_runs_is_refused() {
    let (app, token) = spawn().await;
    let (a, b) = tokio::join!(
        app.post("/api/shell/rebuild", json!({}), Some(&token)),
        app.post("/api/shell/rebuild", json!({}), Some(&token)),
    );
    let mut statuses = [a.status().as_u16(), b.status().as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409], "one builds, the other is refused");
    let refused = if a.status() == StatusCode::CONFLICT { a } else { b };
    assert_error(refused, StatusCode::CONFLICT, "shell_build_running").await;
}

#[tokio::test]
async fn a_build_loaded_but_never_reported_ready_is_rolled_back_and_the_owner_told_why() {
    let (app, token) = spawn().await;
    std::fs::write(source(&app).join("src/main.js"), label_js("First")).expect("edit");
    assert_eq!(app.post("/api/shell/rebuild", json!({}), Some(&token)).await.status(), StatusCode::OK);
    assert_eq!(app.post("/api/shell/ready", json!({"build": 1}), Some(&token)).await.status(), StatusCode::NO_CONTENT);
    std::fs::write(source(&app).join("src/main.js"), "throw new Error(\"boom at start\");\n").expect("edit");
    let mut system = SseReader::connect(&app.client, &app.url("/api/events/system"), &token, None).await;
    assert_eq!(system.next(5).await.data["type"], "system_stream_open");
    assert_eq!(app.post("/api/shell/rebuild", json!({}), Some(&token)).await.status(), StatusCode::OK);
    assert_eq!(system.next(5).await.data["build"], 2);
    // A device loads it; it throws, so it never reports ready.
    assert!(served(&app).await.1.contains("boom at start"));
    let event = system.next(10).await.data;
    assert_eq!((event["type"].clone(), event["build"].clone()), (json!("shell_updated"), json!(1)), "{event}");
    assert!(event["reason"].as_str().is_some_and(|r| r.contains("did not start")), "{event}");
    assert!(served(&app).await.1.contains("First"), "the previous build is served again");
    let status: Value = app.get("/api/shell", Some(&token)).await.json().await.expect("json");
    assert!(status["builds"][0]["failed"].as_str().is_some(), "{status}");
    eventually("the owner is told", || async {
        let list: Value = app.get("/api/notifications", Some(&token)).await.json().await.ok()?;
        list.to_string().contains("rolled back").then_some(())
    })
    .await;
}
