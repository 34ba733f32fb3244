//! Apps written for the original platform: the manifest's whole vocabulary, `previous_id`,
//! static assets and the offline precache list, the app proxy, app secrets, app-attributed
//! chats and embedded-chat sessions.

use std::path::Path;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error};

fn write_files(root: &Path, slug: &str, files: &[(&str, &str)]) {
    let dir = root.join("apps").join(slug);
    for (name, contents) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(path, contents).expect("write");
    }
}

const INDEX: &str = "export default function App() { return <p>Hello</p>; }\n";

/// Applies `apps/<slug>/` and returns the JSON answer.
async fn apply(app: &TestApp, token: &str, slug: &str) -> reqwest::Response {
    app.post("/api/apps/apply", json!({ "slug": slug }), Some(token)).await
}

fn manifest(slug: &str, extra: Value) -> String {
    let mut m =
        json!({ "id": slug, "name": slug, "version": "1.0.0", "description": "A test app.", "entry": "index.jsx" });
    if let (Some(m), Value::Object(extra)) = (m.as_object_mut(), extra) {
        m.extend(extra);
    }
    m.to_string()
}

/// An applied app: `(id, app token)`.
pub async fn applied_app(app: &TestApp, token: &str, slug: &str, extra: Value) -> (i64, String) {
    write_files(app.data_dir(), slug, &[("mobius.json", &manifest(slug, extra)), ("index.jsx", INDEX)]);
    let r = apply(app, token, slug).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap_or_default());
    let body: Value = r.json().await.expect("json");
    let id = body["app"]["id"].as_i64().expect("id");
    let t: Value =
        app.post("/api/auth/app-token", json!({ "app_id": id }), Some(token)).await.json().await.expect("json");
    (id, t["token"].as_str().expect("token").to_owned())
}

#[tokio::test]
async fn an_original_manifest_applies_with_warnings_for_what_has_no_effect_here() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let extra = json!({
        "theme_color": "not-a-colour", "display": "Fullscreen", "embeds_agent": true,
        "permissions": { "github_access": true, "chat_log_access": "summary", "shared_memory": "read" },
        "requires": ["github_access"],
        "schedule": { "default": "0 7 * * *", "job": "job.sh" },
        "offline": { "reads": true, "writes": "queued", "precache": ["static/logo.svg", "data/extra.json"] },
        "static_assets": ["logo.svg"],
        "author": "someone",
    });
    write_files(
        app.data_dir(),
        "journal",
        &[
            ("mobius.json", &manifest("journal", extra)),
            ("index.jsx", INDEX),
            ("logo.svg", "<svg xmlns='http://www.w3.org/2000/svg'/>"),
        ],
    );
    let r = apply(&app, &token, "journal").await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap_or_default());
    let body: Value = r.json().await.expect("json");
    let warnings =
        body["warnings"].as_array().expect("warnings").iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n");
    for needle in [
        "mobius.json › theme_color",
        "mobius.json › permissions.github_access",
        "mobius.json › permissions.chat_log_access",
        "mobius.json › requires[0]",
        "mobius.json › schedule",
    ] {
        assert!(warnings.contains(needle), "missing {needle:?} in:\n{warnings}");
    }
    assert!(!warnings.contains("author"), "decorative keys are quiet: {warnings}");
    let summary = &body["app"];
    let id = summary["id"].as_i64().expect("id");
    assert_eq!(summary["display"], "fullscreen");
    assert_eq!(summary["embeds_agent"], true);
    assert_eq!(summary["offline"]["writes"], "queued");
    let precache: Vec<&str> =
        summary["offline_precache"].as_array().expect("list").iter().filter_map(Value::as_str).collect();
    assert!(precache.contains(&format!("/app-assets/by-id/{id}/logo.svg").as_str()), "{precache:?}");
    assert!(precache.iter().any(|u| u.starts_with(&format!("/api/apps/{id}/module?v="))), "{precache:?}");
    assert!(!precache.iter().any(|u| u.contains("extra.json")), "only served files are listed: {precache:?}");

    // The static asset is served publicly, by slug and by id, and the frameable variant is sandboxed.
    for path in ["/app-assets/journal/logo.svg".to_owned(), format!("/app-assets/by-id/{id}/logo.svg")] {
        let r = app.get(&path, None).await;
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        assert_eq!(r.headers()["content-type"], "image/svg+xml");
        assert!(r.headers()["content-security-policy"].to_str().expect("csp").starts_with("sandbox"));
        assert!(r.text().await.expect("svg").contains("<svg"));
    }
    let embed = app.get(&format!("/app-embeds/by-id/{id}/logo.svg"), None).await;
    assert_eq!(embed.headers()["x-frame-options"], "SAMEORIGIN");
    for bad in ["/app-assets/journal/missing.svg", "/app-assets/journal/..%2fmobius.json", "/app-assets/nope/logo.svg"]
    {
        assert_eq!(app.get(bad, None).await.status(), StatusCode::NOT_FOUND, "{bad}");
    }
    // A release that drops the asset drops its file.
    write_files(app.data_dir(), "journal", &[("mobius.json", &manifest("journal", json!({})))]);
    assert_eq!(apply(&app, &token, "journal").await.status(), StatusCode::OK);
    assert_eq!(app.get("/app-assets/journal/logo.svg", None).await.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn malformed_fields_are_all_reported_with_their_place() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let extra = json!({
        "offline": { "precache": ["../x"] }, "requires": ["teleport"],
        "capabilities": { "media.speech": { "version": 3 } }, "static_assets": { "a.png": "/etc/passwd" },
    });
    write_files(app.data_dir(), "bad", &[("mobius.json", &manifest("bad", extra)), ("index.jsx", INDEX)]);
    let err =
        assert_error(apply(&app, &token, "bad").await, StatusCode::UNPROCESSABLE_ENTITY, "manifest_invalid").await;
    let message = err["message"].as_str().expect("message");
    for needle in [
        "mobius.json › offline.precache[0]",
        "mobius.json › requires[0]",
        "mobius.json › capabilities.media.speech.version",
        "mobius.json › static_assets.a.png",
    ] {
        assert!(message.contains(needle), "missing {needle:?} in:\n{message}");
    }
    // A static asset that is not in the app is a located error at apply time.
    write_files(
        app.data_dir(),
        "bad",
        &[("mobius.json", &manifest("bad", json!({ "static_assets": ["missing.png"] })))],
    );
    let err =
        assert_error(apply(&app, &token, "bad").await, StatusCode::UNPROCESSABLE_ENTITY, "manifest_invalid").await;
    assert!(err["message"].as_str().expect("m").contains("static_assets.missing.png"), "{err}");
}

#[tokio::test]
async fn previous_id_adopts_the_earlier_apps_row_and_data() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let (id, app_token) = applied_app(&app, &token, "diary", json!({})).await;
    let put = app
        .client
        .put(app.url(&format!("/api/storage/apps/{id}/notes.json")))
        .bearer_auth(&app_token)
        .json(&json!({ "kept": true }))
        .send()
        .await
        .expect("put");
    assert!(put.status().is_success(), "{}", put.status());

    write_files(
        app.data_dir(),
        "journal",
        &[("mobius.json", &manifest("journal", json!({ "previous_id": "diary" }))), ("index.jsx", INDEX)],
    );
    let r = apply(&app, &token, "journal").await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap_or_default());
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["mode"], "updated", "the earlier app continues: {body}");
    assert_eq!(body["app"]["id"], id);
    assert_eq!(body["app"]["slug"], "journal");
    assert!(body["warnings"].to_string().contains("previous_id"), "{body}");
    // Same row, same data, same tokens.
    let read = app.get(&format!("/api/storage/apps/{id}/notes.json"), Some(&app_token)).await;
    assert_eq!(read.status(), StatusCode::OK);
    assert_eq!(read.json::<Value>().await.expect("json")["kept"], true);
    let list: Value = app.get("/api/apps", Some(&token)).await.json().await.expect("json");
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");

    // Naming an app that does not exist adopts nothing and says so.
    write_files(
        app.data_dir(),
        "fresh",
        &[("mobius.json", &manifest("fresh", json!({ "previous_id": "ghost" }))), ("index.jsx", INDEX)],
    );
    let body: Value = apply(&app, &token, "fresh").await.json().await.expect("json");
    assert_eq!(body["mode"], "created");
    assert!(body["warnings"].to_string().contains("no app \\\"ghost\\\""), "{body}");
}
