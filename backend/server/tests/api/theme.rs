//! The platform's theme: the agent's file applied (checked, versioned, announced, served with
//! an ETag), refused with where and why while the last good theme stays, reset, restored, and
//! kept across a restart; the web manifest's colours follow.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{PASSWORD, SseReader, TestApp, USERNAME, assert_error, eventually, fake_dist, token_of};

const SUNSET: &str = ":root {\n  --light-bg: #fff7ed;\n  --light-accent: #ea580c;\n  --dark-accent: #fb923c;\n}\n";
const OCEAN: &str = ":root { --light-accent: #0369a1; }\n";

fn write_theme(app: &TestApp, text: &str) {
    std::fs::write(app.data_dir().join("theme/theme.css"), text).expect("theme file");
}

async fn theme(app: &TestApp, token: &str) -> Value {
    let r = app.get("/api/theme", Some(token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.expect("json")
}

async fn apply(app: &TestApp, token: &str) -> reqwest::Response {
    app.post("/api/theme/apply", json!({}), Some(token)).await
}

#[tokio::test]
async fn a_theme_in_the_agents_file_is_applied_announced_and_served_with_an_etag() {
    let app = TestApp::spawn().await;
    fake_dist(app.data_dir());
    let token = app.setup_owner().await;

    let stock = theme(&app, &token).await;
    assert_eq!((stock["stock"].clone(), stock["version"].clone()), (json!(true), Value::Null));
    // Seeded once the server is ready (off the boot path).
    let file = eventually("the agent's file is seeded", || async {
        std::fs::read_to_string(app.data_dir().join("theme/theme.css")).ok()
    })
    .await;
    assert!(file.contains("mobius theme apply"), "{file}");

    let mut system = SseReader::connect(&app.client, &app.url("/api/events/system"), &token, None).await;
    assert_eq!(system.next(5).await.data["type"], "system_stream_open");
    write_theme(&app, SUNSET);
    let r = apply(&app, &token).await;
    assert_eq!(r.status(), StatusCode::OK);
    let applied: Value = r.json().await.expect("json");
    assert_eq!(applied["changed"], true);
    let version = applied["version"].as_str().expect("a version").to_owned();
    // Start-up's deferred work may announce something of its own (its schedules pass) first.
    let event = system.until("theme_updated", 5).await.pop().expect("an event").data;
    assert_eq!(event, json!({"type": "theme_updated", "version": version}));

    let r = app.get("/api/theme", Some(&token)).await;
    let etag = r.headers()["etag"].to_str().expect("etag").to_owned();
    let served: Value = r.json().await.expect("json");
    assert_eq!(served["css"], SUNSET);
    assert_eq!((served["stock"].clone(), served["light_bg"].clone()), (json!(false), json!("#fff7ed")));
    let again = app.client.get(app.url("/api/theme")).bearer_auth(&token).header("if-none-match", &etag).send().await;
    assert_eq!(again.expect("request").status(), StatusCode::NOT_MODIFIED);

    // Applying the same text again changes nothing and announces nothing new.
    let same: Value = apply(&app, &token).await.json().await.expect("json");
    assert_eq!((same["changed"].clone(), same["version"].clone()), (json!(false), json!(version)));

    let manifest: Value = app.get("/manifest.webmanifest", None).await.json().await.expect("manifest");
    assert_eq!((manifest["theme_color"].clone(), manifest["name"].clone()), (json!("#fff7ed"), json!("Möbius")));

    // It is the platform's theme after a restart too.
    let dir = app.stop().await;
    let app = TestApp::spawn_in(dir, |_| {}).await;
    let token =
        token_of(app.post("/api/auth/token", json!({ "username": USERNAME, "password": PASSWORD }), None).await).await;
    assert_eq!(theme(&app, &token).await["version"], json!(version));
}

#[tokio::test]
async fn a_bad_theme_is_refused_with_where_and_why_and_the_last_good_one_stays() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    write_theme(&app, SUNSET);
    assert_eq!(apply(&app, &token).await.status(), StatusCode::OK);

    let refusals = [
        ("@import url(https://evil.example/x.css);\n", "@import is not allowed"),
        (":root {\n  --light-bg: url(https://evil.example/a.png);\n}\n", "line 2"),
        (":root { color: red }", "not a custom property"),
        (":root { --light-bg: #fff", "not closed"),
        (":root { --x: expression(alert(1)) }", "expression() is not allowed"),
    ];
    for (text, why) in refusals {
        write_theme(&app, text);
        let body = assert_error(apply(&app, &token).await, StatusCode::UNPROCESSABLE_ENTITY, "theme_invalid").await;
        let message = body["message"].as_str().unwrap_or_default();
        assert!(message.contains(why) && message.contains("last good theme stays"), "{text:?}: {message}");
        assert_eq!(theme(&app, &token).await["css"], SUNSET, "{text:?} left the good theme serving");
    }
    write_theme(&app, &format!(":root {{ --a: 1 }}\n/*{}*/", "x".repeat(70 * 1024)));
    assert_error(apply(&app, &token).await, StatusCode::UNPROCESSABLE_ENTITY, "theme_invalid").await;
    // A link in place of the file is never followed.
    let file = app.data_dir().join("theme/theme.css");
    std::fs::remove_file(&file).expect("remove");
    std::os::unix::fs::symlink(app.data_dir().join("secret.key"), &file).expect("symlink");
    let body = assert_error(apply(&app, &token).await, StatusCode::UNPROCESSABLE_ENTITY, "theme_invalid").await;
    assert!(!body["message"].as_str().unwrap_or_default().contains("BEGIN"), "{body}");
    assert_eq!(theme(&app, &token).await["css"], SUNSET);
}

#[tokio::test]
async fn the_owner_resets_to_stock_and_goes_back_to_an_earlier_version() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    write_theme(&app, SUNSET);
    let sunset: Value = apply(&app, &token).await.json().await.expect("json");
    write_theme(&app, OCEAN);
    assert_eq!(apply(&app, &token).await.status(), StatusCode::OK);

    let reset: Value = app.post("/api/theme/reset", json!({}), Some(&token)).await.json().await.expect("json");
    assert_eq!(reset["stock"], true);
    let file = std::fs::read_to_string(app.data_dir().join("theme/theme.css")).expect("file");
    assert!(!file.contains("#0369a1"), "the agent's file is the stock one again: {file}");

    let listed: Value = app.get("/api/theme/versions", Some(&token)).await.json().await.expect("json");
    let sources: Vec<&str> =
        listed["versions"].as_array().expect("list").iter().filter_map(|v| v["source"].as_str()).collect();
    assert_eq!(sources, ["owner reset", "agent", "agent"], "newest first");
    assert_eq!(listed["current"], reset["version"]);

    let id = sunset["version"].as_str().expect("id");
    let restored: Value = app
        .post(&format!("/api/theme/versions/{id}/restore"), json!({}), Some(&token))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!((restored["css"].clone(), restored["changed"].clone()), (json!(SUNSET), json!(true)));
    assert_eq!(std::fs::read_to_string(app.data_dir().join("theme/theme.css")).expect("file"), SUNSET);

    let unknown = app.post("/api/theme/versions/0123456789abcdef/restore", json!({}), Some(&token)).await;
    assert_error(unknown, StatusCode::NOT_FOUND, "theme_version_not_found").await;
    // Not for anyone else.
    assert_eq!(app.get("/api/theme", None).await.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(app.post("/api/theme/reset", json!({}), None).await.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_recovery_page_is_served_by_the_server_itself_without_a_built_shell() {
    // No frontend build at all (the test server's dist folder does not exist).
    let app = TestApp::spawn().await;
    let r = app.get("/recovery", None).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.headers()["content-type"].to_str().unwrap_or_default().starts_with("text/html"));
    let csp = r.headers()["content-security-policy"].to_str().unwrap_or_default().to_owned();
    assert!(
        csp.starts_with("default-src 'none'; script-src 'self';") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    let page = r.text().await.expect("page");
    assert!(page.contains("Möbius recovery") && page.contains("/recovery/recovery.js"));
    let script = app.get("/recovery/recovery.js", None).await;
    assert_eq!(script.status(), StatusCode::OK);
    assert!(script.text().await.expect("script").contains("/api/theme/reset"));
    assert_eq!(
        app.get("/", None).await.status(),
        StatusCode::SERVICE_UNAVAILABLE,
        "while the shell itself is not built"
    );
}
