//! The shell's own source: seeded as a git repository, rebuilt with vite into a numbered build
//! served at once (and announced), a broken edit or a link refused while the current shell
//! stays, one rebuild at a time, back to stock, and a build that never reports ready rolled
//! back. A new image's stock source is merged under the owner's edits at boot: an untouched
//! copy fast-forwards, a clean merge rebuilds the served build, a conflict keeps it and opens
//! the chat that resolves it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{SseReader, TestApp, assert_error, eventually, eventually_within, fake_dist, script};

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
    spawn_watching(None).await
}

/// With `watch`, the watcher rebuilds after that quiet spell.
async fn spawn_watching(watch: Option<Duration>) -> (TestApp, String) {
    spawn_watching_with(watch, |_| {}).await
}

async fn spawn_watching_with(
    watch: Option<Duration>,
    tweak: impl FnOnce(&mut mobius::config::Config) + Send + 'static,
) -> (TestApp, String) {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    fake_dist(dir.path());
    let stock = stock_source(dir.path());
    let app = TestApp::spawn_in(dir, move |config| {
        config.shell_source = Some(stock);
        config.shell_ready_timeout = Duration::from_secs(2);
        config.shell_watch = watch;
        tweak(config);
    })
    .await;
    let token = app.setup_owner().await;
    prepared(&app, &token).await;
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

/// Stops `app`, lets `change` edit the stock source (a new image), starts it again.
async fn restart_with_new_stock(app: TestApp, change: impl FnOnce(&Path)) -> (TestApp, String) {
    let dir = app.stop().await;
    let stock = dir.path().join("stock-shell");
    change(&stock);
    let app = TestApp::spawn_in(dir, move |config| {
        config.shell_source = Some(stock);
        config.shell_ready_timeout = Duration::from_secs(2);
    })
    .await;
    let token = crate::helpers::token_of(
        app.post(
            "/api/auth/token",
            json!({"username": crate::helpers::USERNAME, "password": crate::helpers::PASSWORD}),
            None,
        )
        .await,
    )
    .await;
    prepared(&app, &token).await;
    (app, token)
}

/// Waits for what follows a boot (seed, stock merge, watcher), which runs off the boot path.
async fn prepared(app: &TestApp, token: &str) {
    eventually("the shell is prepared after the boot", || async {
        (status(app, token).await["prepared"] == json!(true)).then_some(())
    })
    .await;
}

async fn status(app: &TestApp, token: &str) -> Value {
    app.get("/api/shell", Some(token)).await.json().await.expect("json")
}

async fn chats(app: &TestApp, token: &str) -> Vec<Value> {
    app.get("/api/chats", Some(token)).await.json().await.expect("json")
}

/// Edits the source, rebuilds it and confirms the build as a device would.
async fn build_confirmed(app: &TestApp, token: &str, file: &str, text: &str) -> u64 {
    std::fs::write(source(app).join(file), text).expect("edit");
    let r = app.post("/api/shell/rebuild", json!({}), Some(token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let n = r.json::<Value>().await.expect("json")["build"]["n"].as_u64().expect("n");
    assert_eq!(app.post("/api/shell/ready", json!({"build": n}), Some(token)).await.status(), StatusCode::NO_CONTENT);
    n
}

#[tokio::test]
async fn a_new_stock_fast_forwards_an_untouched_source_and_builds_nothing() {
    let (app, _) = spawn().await;
    let (app, token) = restart_with_new_stock(app, |stock| {
        std::fs::write(stock.join("src/main.js"), label_js("Stock two")).expect("new stock");
        std::fs::write(stock.join("src/added.js"), "export const added = 1;\n").expect("new file");
    })
    .await;
    assert_eq!(std::fs::read_to_string(source(&app).join("src/main.js")).expect("read"), label_js("Stock two"));
    assert!(source(&app).join("src/added.js").is_file(), "the stock's new file is there");
    let status = status(&app, &token).await;
    assert_eq!((status["serving"].clone(), status["builds"].clone()), (Value::Null, json!([])), "{status}");
    assert_eq!(status["resolving"], Value::Null);
    assert!(chats(&app, &token).await.is_empty(), "nothing to ask the agent");
}

#[tokio::test]
async fn an_edit_apart_from_the_stock_change_is_merged_and_the_served_build_rebuilt() {
    let (app, token) = spawn().await;
    let index = std::fs::read_to_string(source(&app).join("index.html")).expect("index");
    assert_eq!(build_confirmed(&app, &token, "index.html", &index.replace("<title>shell", "<title>mine")).await, 1);
    let (app, token) = restart_with_new_stock(app, |stock| {
        std::fs::write(stock.join("src/main.js"), label_js("Stock two")).expect("new stock");
    })
    .await;
    // A whole vite build: longer than most waits.
    eventually_within(Duration::from_secs(300), "the merged source is built and served", || async {
        (status(&app, &token).await["serving"] == 2).then_some(())
    })
    .await;
    assert_eq!(app.post("/api/shell/ready", json!({"build": 2}), Some(&token)).await.status(), StatusCode::NO_CONTENT);
    let (index, code) = served(&app).await;
    assert!(index.contains("<title>mine</title>"), "the owner's edit stays: {index}");
    assert!(code.contains("Stock two"), "the new stock is in: {code}");
    assert_eq!(status(&app, &token).await["resolving"], Value::Null);
    assert!(chats(&app, &token).await.is_empty(), "nothing to ask the agent");
}

#[tokio::test]
async fn a_conflicting_edit_keeps_the_build_and_opens_the_resolver_chat_until_a_rebuild_resolves_it() {
    let (app, token) = spawn().await;
    app.connect_claude(&token).await;
    assert_eq!(build_confirmed(&app, &token, "src/main.js", &label_js("Mine")).await, 1);
    let (app, token) = restart_with_new_stock(app, |stock| {
        std::fs::write(stock.join("src/main.js"), label_js("Stock two")).expect("new stock");
    })
    .await;
    let chat = eventually("the resolver chat opens", || async {
        let status = status(&app, &token).await;
        status["resolving"]["chat"].as_str().map(str::to_owned)
    })
    .await;
    let listed = chats(&app, &token).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["title"], "Resolve platform update conflicts");
    let opened: Value = app.get(&format!("/api/chats/{chat}"), Some(&token)).await.json().await.expect("json");
    let first = &opened["messages"][0];
    assert!(first["content"].as_str().expect("content").contains("src/main.js"), "{first}");
    let context = first["agent_context"].as_str().expect("agent_context");
    assert!(
        context.contains("<<<<<<< your edits") && context.contains("Mine") && context.contains("Stock two"),
        "{context}"
    );
    assert!(context.contains("\"$MOBIUS_BIN\" shell rebuild"), "how to finish: {context}");

    // The previous build keeps serving; the source holds the markers; a rebuild is refused.
    assert_eq!(status(&app, &token).await["serving"], 1);
    assert_eq!(app.post("/api/shell/ready", json!({"build": 1}), Some(&token)).await.status(), StatusCode::NO_CONTENT);
    assert!(served(&app).await.1.contains("Mine"));
    let text = std::fs::read_to_string(source(&app).join("src/main.js")).expect("read");
    assert!(text.contains("<<<<<<< your edits") && text.contains(">>>>>>> new stock"), "{text}");
    let r = app.post("/api/shell/rebuild", json!({}), Some(&token)).await;
    let body = assert_error(r, StatusCode::CONFLICT, "shell_conflict_unresolved").await;
    assert!(body["message"].as_str().is_some_and(|m| m.contains("src/main.js")), "{body}");

    // Resolved: the rebuild goes through and the conflict is over.
    std::fs::write(source(&app).join("src/main.js"), label_js("Mine, on stock two")).expect("resolve");
    assert_eq!(app.post("/api/shell/rebuild", json!({}), Some(&token)).await.status(), StatusCode::OK);
    let status = status(&app, &token).await;
    assert_eq!((status["serving"].clone(), status["resolving"].clone()), (json!(2), Value::Null), "{status}");

    // Taken once: the next start opens no second chat.
    let (app, token) = restart_with_new_stock(app, |_| {}).await;
    assert_eq!(chats(&app, &token).await.len(), 1);
}

/// Waits for build `n` to be served (a whole vite build), confirms it as a device would, and
/// answers the served script.
async fn served_build(app: &TestApp, token: &str, n: u64) -> String {
    eventually_within(Duration::from_secs(300), "the watcher's build is served", || async {
        (status(app, token).await["serving"] == n).then_some(())
    })
    .await;
    assert_eq!(app.post("/api/shell/ready", json!({"build": n}), Some(token)).await.status(), StatusCode::NO_CONTENT);
    served(app).await.1
}

#[tokio::test]
async fn edits_outside_a_turn_are_rebuilt_once_after_they_settle_and_new_folders_are_watched() {
    let (app, token) = spawn_watching(Some(Duration::from_millis(700))).await;
    // A burst of edits (and git's own writes, which are not edits): one build.
    for i in 0..3 {
        std::fs::write(source(&app).join("src/main.js"), label_js(&format!("Edit {i}"))).expect("edit");
        std::fs::write(source(&app).join(".git/scratch"), format!("{i}")).expect("git");
    }
    assert!(served_build(&app, &token, 1).await.contains("Edit 2"));

    // A new folder and a file in it: watched from the next quiet spell on.
    std::fs::create_dir(source(&app).join("src/later")).expect("mkdir");
    std::fs::write(source(&app).join("src/later/label.js"), "export const label = \"Later one\";\n").expect("add");
    std::fs::write(
        source(&app).join("src/main.js"),
        "import { label } from \"./later/label.js\";\ndocument.getElementById(\"root\").textContent = label;\n",
    )
    .expect("edit");
    assert!(served_build(&app, &token, 2).await.contains("Later one"));
    std::fs::write(source(&app).join("src/later/label.js"), "export const label = \"Later two\";\n").expect("edit");
    assert!(served_build(&app, &token, 3).await.contains("Later two"));
    let status = status(&app, &token).await;
    let numbers: Vec<u64> =
        status["builds"].as_array().expect("builds").iter().filter_map(|b| b["n"].as_u64()).collect();
    assert_eq!(numbers, [3, 2, 1], "one build per burst of edits: {status}");
}

#[tokio::test]
async fn a_watcher_build_that_fails_after_a_turn_is_told_from_that_turns_chat() {
    // A Claude imitation whose turn lasts until the test writes a line into `go` (a FIFO).
    let tmp = tempfile::tempdir().expect("tmp");
    let go = tmp.path().join("go");
    nix::unistd::mkfifo(&go, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let bin = script(
        tmp.path(),
        "fake-claude",
        &format!(
            r#"IFS= read -r init
IFS= read -r user
sid="s-$MOBIUS_CHAT_ID"
printf '{{"type":"system","subtype":"init","session_id":"%s"}}\n' "$sid"
IFS= read -r line < {go}
printf '{{"type":"assistant","message":{{"id":"m1","content":[{{"type":"text","text":"edited"}}]}},"session_id":"%s"}}\n' "$sid"
printf '{{"type":"result","subtype":"success","is_error":false,"session_id":"%s","usage":{{"input_tokens":5,"output_tokens":7}}}}\n' "$sid"
cat >/dev/null"#,
            go = go.display()
        ),
    );
    let (app, token) = spawn_watching_with(Some(Duration::from_millis(300)), move |c| c.claude_bin = bin).await;
    app.connect_claude(&token).await;
    app.chat(&token, "edits").await;
    app.send(&token, "edits", "Break the shell", "c1").await;
    eventually("the turn runs", || async { (app.detail(&token, "edits").await["running"] == true).then_some(()) })
        .await;

    // The turn's edit breaks the build; the watcher waits for the turn's end to build it.
    std::fs::write(source(&app).join("src/main.js"), "document.getElementById(\"root\".textContent = ;\n")
        .expect("edit");
    let fifo = go.clone();
    tokio::task::spawn_blocking(move || std::fs::write(fifo, "go\n")).await.expect("join").expect("go");
    let notice = eventually_within(Duration::from_secs(60), "the owner is told the rebuild failed", || async {
        let list: Value = app.get("/api/notifications", Some(&token)).await.json().await.ok()?;
        list.as_array()?.iter().find(|n| n["title"].as_str().is_some_and(|t| t.contains("rebuild failed"))).cloned()
    })
    .await;
    assert_eq!(
        (notice["source_type"].clone(), notice["source_id"].clone()),
        (json!("chat"), json!("edits")),
        "{notice}"
    );
    assert!(notice["body"].as_str().is_some_and(|b| b.contains("main.js")), "the errors: {notice}");
    assert!(!served(&app).await.0.contains("mobius-shell-build"), "the stock shell stays");
}
