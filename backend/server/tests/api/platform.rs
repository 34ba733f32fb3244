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
    for needle in ["mobius.json › theme_color", "mobius.json › permissions.github_access", "mobius.json › requires[0]"]
    {
        assert!(warnings.contains(needle), "missing {needle:?} in:\n{warnings}");
    }
    // The schedule and the chat-log tier have their effect here: no warning.
    assert!(!warnings.contains("schedule"), "{warnings}");
    assert!(!warnings.contains("chat_log_access"), "{warnings}");
    let schedules: Value = app.get("/api/apps/schedules", Some(&token)).await.json().await.expect("json");
    assert_eq!(schedules[0]["slug"], "journal");
    assert_eq!(schedules[0]["cron"], "0 7 * * *");
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

/// The original treats static assets as install-managed, outside the app's history: an app
/// whose own `.gitignore` keeps its assets out of the commit still applies and serves them
/// (from its folder, never through a link).
#[tokio::test]
async fn static_assets_the_apps_gitignore_keeps_out_of_its_history_are_applied_and_served() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let extra = json!({ "static_assets": { "logo.svg": "assets/logo.svg", "data.json": "assets/data.json" } });
    write_files(
        app.data_dir(),
        "ignored",
        &[
            ("mobius.json", &manifest("ignored", extra.clone())),
            ("index.jsx", INDEX),
            (".gitignore", "assets/\n"),
            ("assets/logo.svg", "<svg xmlns='http://www.w3.org/2000/svg'/>"),
            ("assets/data.json", "{\"n\":1}"),
        ],
    );
    let r = apply(&app, &token, "ignored").await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap_or_default());
    let r = app.get("/app-assets/ignored/logo.svg", None).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.text().await.expect("svg").contains("<svg"));
    assert_eq!(app.get("/app-assets/ignored/data.json", None).await.text().await.expect("json"), "{\"n\":1}");
    // A link in its place is not followed: the apply says the file is missing.
    let data = app.data_dir().join("apps/ignored/assets/data.json");
    std::fs::remove_file(&data).expect("rm");
    std::os::unix::fs::symlink(app.data_dir().join("secret.key"), &data).expect("link");
    std::fs::write(app.data_dir().join("apps/ignored/index.jsx"), INDEX.replace("Hello", "Hello again")).expect("edit");
    let err =
        assert_error(apply(&app, &token, "ignored").await, StatusCode::UNPROCESSABLE_ENTITY, "manifest_invalid").await;
    assert!(err["message"].as_str().expect("m").contains("static_assets.data.json"), "{err}");
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

/// An upstream on `127.0.0.1` for the proxy tests: `(base URL, server task)`.
async fn upstream() -> String {
    use axum::Router;
    use axum::http::{HeaderMap, StatusCode as S, header};
    use axum::response::IntoResponse;
    use axum::routing::{get, post};
    let app = Router::new()
        .route(
            "/json",
            get(|| async {
                (
                    [
                        (header::CONTENT_TYPE, "application/json"),
                        (header::HeaderName::from_static("x-ratelimit-remaining"), "41"),
                        (header::HeaderName::from_static("x-internal"), "hidden"),
                        (header::SET_COOKIE, "a=b"),
                    ],
                    "{\"ok\":true}",
                )
            }),
        )
        .route(
            "/echo",
            post(|headers: HeaderMap, body: String| async move {
                let names: Vec<String> = headers.keys().map(|k| k.as_str().to_owned()).collect();
                let ct = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
                let ua = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
                axum::Json(json!({ "headers": names, "content_type": ct, "user_agent": ua, "body": body }))
            })
            .get(|headers: HeaderMap| async move {
                let names: Vec<String> = headers.keys().map(|k| k.as_str().to_owned()).collect();
                axum::Json(json!({ "headers": names }))
            }),
        )
        .route("/teapot", get(|| async { (S::IM_A_TEAPOT, [(header::RETRY_AFTER, "7")], "short and stout") }))
        .route("/redirect", get(|| async { (S::FOUND, [(header::LOCATION, "http://10.0.0.1/")], "").into_response() }))
        .route("/big", get(|| async { vec![b'x'; 3 * 1024 * 1024] }))
        .route("/slow", get(std::future::pending::<()>));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

#[tokio::test]
async fn the_proxy_fetches_for_apps_with_the_originals_header_rules_and_limits() {
    let dir = std::sync::Arc::new(tempfile::tempdir().expect("dir"));
    let app = TestApp::spawn_in(dir, |c| {
        c.proxy_allow_loopback = true;
        c.proxy_timeout = std::time::Duration::from_millis(700);
    })
    .await;
    let token = app.setup_owner().await;
    let (_, app_token) = applied_app(&app, &token, "fetcher", json!({})).await;
    let base = upstream().await;
    let proxied = |url: String| format!("/api/proxy?url={}", url.replace(':', "%3A").replace('/', "%2F"));

    let r = app
        .client
        .get(app.url(&proxied(format!("{base}/json"))))
        .bearer_auth(&app_token)
        .header("origin", "null")
        .header("x-custom", "not forwarded")
        .send()
        .await
        .expect("get");
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "application/json");
    assert_eq!(r.headers()["x-ratelimit-remaining"], "41");
    assert!(r.headers().get("x-internal").is_none() && r.headers().get("set-cookie").is_none());
    assert_eq!(r.headers()["access-control-allow-origin"], "*", "the opaque frame may read it");
    assert_eq!(r.json::<Value>().await.expect("json")["ok"], true);

    // No client header goes upstream: not the app's token, not its own headers.
    let seen: Value = app
        .client
        .get(app.url(&proxied(format!("{base}/echo"))))
        .bearer_auth(&app_token)
        .header("x-custom", "nope")
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    let names = seen["headers"].to_string();
    assert!(!names.contains("authorization") && !names.contains("x-custom"), "{names}");

    // POST sends the body with its content type and the proxy's user agent.
    let r = app
        .client
        .post(app.url("/api/proxy"))
        .bearer_auth(&app_token)
        .header("origin", "null")
        .json(&json!({ "url": format!("{base}/echo"), "body": "a=1&b=2" }))
        .send()
        .await
        .expect("post");
    assert_eq!(r.status(), StatusCode::OK);
    let echoed: Value = r.json().await.expect("json");
    assert_eq!(echoed["body"], "a=1&b=2");
    assert_eq!(echoed["content_type"], "application/x-www-form-urlencoded");
    assert!(echoed["user_agent"].as_str().expect("ua").starts_with("Mobius/1.0 (app proxy"));
    let r = app
        .post(
            "/api/proxy",
            json!({ "url": format!("{base}/echo"), "body": "{}", "content_type": "application/json" }),
            Some(&app_token),
        )
        .await;
    assert_eq!(r.json::<Value>().await.expect("json")["content_type"], "application/json");

    // Upstream status and Retry-After come back; redirects are not followed and lose Location.
    let r = app.get(&proxied(format!("{base}/teapot")), Some(&app_token)).await;
    assert_eq!(r.status(), StatusCode::IM_A_TEAPOT);
    assert_eq!(r.headers()["retry-after"], "7");
    let r = app.get(&proxied(format!("{base}/redirect")), Some(&app_token)).await;
    assert_eq!(r.status(), StatusCode::FOUND);
    assert!(r.headers().get("location").is_none());

    // Bounded: an oversized answer, a slow upstream, an oversized request body.
    assert_error(
        app.get(&proxied(format!("{base}/big")), Some(&app_token)).await,
        StatusCode::BAD_GATEWAY,
        "proxy_response_too_large",
    )
    .await;
    assert_error(
        app.get(&proxied(format!("{base}/slow")), Some(&app_token)).await,
        StatusCode::GATEWAY_TIMEOUT,
        "proxy_timeout",
    )
    .await;
    let huge = "x".repeat(600 * 1024);
    let r = app.post("/api/proxy", json!({ "url": format!("{base}/echo"), "body": huge }), Some(&app_token)).await;
    assert_error(r, StatusCode::PAYLOAD_TOO_LARGE, "proxy_body_too_large").await;

    // Bad input.
    for (url, code) in [
        ("ftp://example.com/x", "invalid_url"),
        ("file:///etc/passwd", "invalid_url"),
        ("http://user:pw@example.com/", "invalid_url"),
        ("not a url", "invalid_url"),
        ("http://10.1.2.3/", "proxy_not_allowed"),
        ("http://[::ffff:192.168.0.1]/", "proxy_not_allowed"),
        ("http://169.254.169.254/latest/meta-data", "proxy_not_allowed"),
    ] {
        let r = app.get(&proxied(url.to_owned()), Some(&app_token)).await;
        assert_error(r, StatusCode::BAD_REQUEST, code).await;
    }
    assert_error(app.get("/api/proxy", Some(&app_token)).await, StatusCode::BAD_REQUEST, "invalid_url").await;
    assert_error(app.get(&proxied(format!("{base}/json")), None).await, StatusCode::UNAUTHORIZED, "missing_token")
        .await;
}

#[tokio::test]
async fn without_the_test_allowance_the_proxy_refuses_loopback_at_connect_time() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let base = upstream().await;
    let port = base.rsplit(':').next().expect("port");
    for url in [format!("{base}/json"), format!("http://localhost:{port}/json")] {
        let r = app.get(&format!("/api/proxy?url={url}"), Some(&token)).await;
        let err = assert_error(r, StatusCode::BAD_REQUEST, "proxy_not_allowed").await;
        assert!(err["message"].as_str().expect("m").contains("private or local address"), "{err}");
    }
}

#[tokio::test]
async fn app_secrets_are_set_by_the_owner_checked_by_their_app_and_never_read_back_by_it() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let (id, app_token) = applied_app(&app, &token, "keys", json!({})).await;
    let (other, other_token) = applied_app(&app, &token, "other", json!({})).await;
    let url = |id: i64, name: &str| app.url(&format!("/api/apps/{id}/secrets/{name}"));
    const VALUE: &str = "sk-very-secret-value-123";

    let put = app
        .client
        .put(url(id, "API_KEY"))
        .bearer_auth(&token)
        .json(&json!({ "value": VALUE }))
        .send()
        .await
        .expect("put");
    assert_eq!(put.status(), StatusCode::NO_CONTENT);
    let got = app.client.get(url(id, "API_KEY")).bearer_auth(&token).send().await.expect("get");
    assert_eq!(got.headers()["cache-control"], "no-store");
    assert_eq!(got.text().await.expect("text"), VALUE);
    // The app checks and replaces, never reads back, and never touches another app's.
    let head = app.client.head(url(id, "API_KEY")).bearer_auth(&app_token).send().await.expect("head");
    assert_eq!(head.status(), StatusCode::NO_CONTENT);
    assert_error(
        app.client.get(url(id, "API_KEY")).bearer_auth(&app_token).send().await.expect("get"),
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    let replaced = app
        .client
        .put(url(id, "API_KEY"))
        .bearer_auth(&app_token)
        .header("origin", "null")
        .json(&json!({ "value": "sk-new" }))
        .send()
        .await
        .expect("put");
    assert_eq!(replaced.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        app.client.get(url(id, "API_KEY")).bearer_auth(&token).send().await.expect("get").text().await.expect("t"),
        "sk-new"
    );
    let peek = app.client.head(url(id, "API_KEY")).bearer_auth(&other_token).send().await.expect("head");
    assert_eq!(peek.status(), StatusCode::FORBIDDEN);
    let foreign = app
        .client
        .put(url(id, "X"))
        .bearer_auth(&other_token)
        .json(&json!({ "value": "v" }))
        .send()
        .await
        .expect("put");
    assert_error(foreign, StatusCode::FORBIDDEN, "forbidden").await;
    assert_eq!(
        app.client.head(url(other, "API_KEY")).bearer_auth(&other_token).send().await.expect("h").status(),
        StatusCode::NOT_FOUND
    );

    // Bad names and values are refused, and the value never shows in an answer.
    for name in ["a%2Fb", "a..b", "%2E%2E%2Fx", "%0Aname", "-x", ".hidden"] {
        let r =
            app.client.put(url(id, name)).bearer_auth(&token).json(&json!({ "value": "v" })).send().await.expect("put");
        assert_error(r, StatusCode::BAD_REQUEST, "invalid_secret_name").await;
    }
    let too_long = "v".repeat(8193);
    let r = app
        .client
        .put(url(id, "LONG"))
        .bearer_auth(&token)
        .json(&json!({ "value": too_long }))
        .send()
        .await
        .expect("put");
    let err = assert_error(r, StatusCode::BAD_REQUEST, "invalid_secret_value").await;
    assert!(!err.to_string().contains("vvvv"), "{err}");
    let r = app
        .client
        .put(url(id, "BAD"))
        .bearer_auth(&token)
        .body(format!("{{\"value\": \"{VALUE}\", oops"))
        .header("content-type", "application/json")
        .send()
        .await
        .expect("put");
    let err = assert_error(r, StatusCode::BAD_REQUEST, "invalid_request").await;
    assert!(!err.to_string().contains(VALUE), "{err}");

    // At most 16 per app.
    for i in 1..16 {
        let r = app
            .client
            .put(url(id, &format!("K{i}")))
            .bearer_auth(&token)
            .json(&json!({ "value": "v" }))
            .send()
            .await
            .expect("put");
        assert_eq!(r.status(), StatusCode::NO_CONTENT, "secret {i}");
    }
    let r =
        app.client.put(url(id, "K16")).bearer_auth(&token).json(&json!({ "value": "v" })).send().await.expect("put");
    assert_error(r, StatusCode::PAYLOAD_TOO_LARGE, "too_many_secrets").await;
    let del = app.client.delete(url(id, "K1")).bearer_auth(&token).send().await.expect("delete");
    assert_eq!(del.status(), StatusCode::NO_CONTENT);
    assert_error(
        app.client.delete(url(id, "K1")).bearer_auth(&token).send().await.expect("d"),
        StatusCode::NOT_FOUND,
        "secret_not_found",
    )
    .await;

    // Sealed at rest: the database holds no plain value.
    let db = std::fs::read(app.data_dir().join("db/mobius.sqlite3")).expect("db");
    let wal = std::fs::read(app.data_dir().join("db/mobius.sqlite3-wal")).unwrap_or_default();
    for bytes in [db, wal] {
        assert!(!bytes.windows(6).any(|w| w == b"sk-new"), "a secret is stored in the clear");
    }
    assert_error(
        app.client.get(url(999, "API_KEY")).bearer_auth(&token).send().await.expect("g"),
        StatusCode::NOT_FOUND,
        "app_not_found",
    )
    .await;

    // Backups carry them (sealed as they are at rest).
    let dest = app.data_dir().join("backup-out");
    mobius::backup::backup(app.data_dir(), &dest).await.expect("backup");
    use sqlx::Connection;
    let url = format!("sqlite://{}?mode=ro", dest.join("db/mobius.sqlite3").display());
    let mut copy = sqlx::SqliteConnection::connect(&url).await.expect("open the backup");
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM app_secrets WHERE app_id = ?")
        .bind(id)
        .fetch_one(&mut copy)
        .await
        .expect("count");
    assert_eq!(kept, 15, "every secret is in the backup");
}

/// A fake Claude CLI that answers one turn and leaves its arguments in `args-<chat>`.
fn recording_claude(dir: &Path) -> std::path::PathBuf {
    crate::helpers::script(
        dir,
        "fake-claude",
        &format!(
            r#"printf '%s\n' "$@" > "{}/args-$MOBIUS_CHAT_ID"
IFS= read -r init
IFS= read -r user
printf '%s\n' "$user" > "{}/user-$MOBIUS_CHAT_ID"
sid="s-$MOBIUS_CHAT_ID"
printf '{{"type":"system","subtype":"init","session_id":"%s"}}\n' "$sid"
printf '{{"type":"assistant","message":{{"id":"m1","content":[{{"type":"text","text":"embedded reply"}}]}},"session_id":"%s"}}\n' "$sid"
printf '{{"type":"result","subtype":"success","is_error":false,"session_id":"%s","total_cost_usd":0.01,"usage":{{"input_tokens":5,"output_tokens":7}}}}\n' "$sid"
cat >/dev/null"#,
            dir.display(),
            dir.display()
        ),
    )
}

async fn with_claude() -> (TestApp, String) {
    let dir = std::sync::Arc::new(tempfile::tempdir().expect("tmp"));
    let bin = recording_claude(dir.path());
    let app = TestApp::spawn_in(dir, |c| {
        c.claude_bin = bin;
        c.agent_start_timeout = std::time::Duration::from_secs(5);
    })
    .await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    (app, token)
}

async fn patch(app: &TestApp, path: &str, body: Value, token: &str) -> reqwest::Response {
    app.client.patch(app.url(path)).bearer_auth(token).json(&body).send().await.expect("patch")
}

#[tokio::test]
async fn an_app_creates_its_own_chats_runs_turns_in_them_and_touches_no_other_chat() {
    let (app, token) = with_claude().await;
    let (app_id, app_token) = applied_app(&app, &token, "tutor", json!({ "embeds_agent": true })).await;
    let (_, other_token) = applied_app(&app, &token, "other", json!({})).await;

    assert_error(app.post("/api/app-chats", json!({}), Some(&token)).await, StatusCode::FORBIDDEN, "wrong_scope").await;
    let r = app
        .post(
            "/api/app-chats",
            json!({ "title": "Lesson 1", "system_prompt": "You are a patient tutor.", "scope": "lessons", "scope_label": "Lessons" }),
            Some(&app_token),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let created: Value = r.json().await.expect("json");
    let chat = created["id"].as_str().expect("id").to_owned();
    assert_eq!(created["created_by_app_id"], app_id);
    let visible: Value = app
        .post("/api/app-chats", json!({ "title": "Shown", "owner_visible": true }), Some(&app_token))
        .await
        .json()
        .await
        .expect("json");

    // Hidden from the owner's drawer unless owner_visible; listed for the app by scope.
    let drawer: Value = app.get("/api/chats", Some(&token)).await.json().await.expect("json");
    let ids: Vec<&str> = drawer.as_array().expect("list").iter().filter_map(|c| c["id"].as_str()).collect();
    assert!(!ids.contains(&chat.as_str()) && ids.contains(&visible["id"].as_str().expect("id")), "{drawer}");
    let mine: Value = app.get("/api/app-chats?scope=lessons", Some(&app_token)).await.json().await.expect("json");
    assert_eq!(mine.as_array().map(Vec::len), Some(1), "{mine}");
    assert_eq!(mine[0]["scope_label"], "Lessons");
    assert_eq!(app.get("/api/app-chats", Some(&other_token)).await.json::<Value>().await.expect("json"), json!([]));

    // The app sends through the ordinary route; the turn runs with the app's system prompt.
    let r = app
        .post(
            &format!("/api/chats/{chat}/messages"),
            json!({ "content": "Teach me", "cid": "c-1", "agent_context": "<app_state>\n<lesson>Fractions</lesson>\n</app_state>" }),
            Some(&app_token),
        )
        .await;
    assert_eq!(r.status(), StatusCode::ACCEPTED, "{}", r.text().await.unwrap_or_default());
    let mut stream = crate::helpers::SseReader::connect(
        &app.client,
        &app.url(&format!("/api/chats/{chat}/stream?after=0")),
        &app_token,
        None,
    )
    .await;
    stream.until("done", 20).await;
    let args = std::fs::read_to_string(app.data_dir().join(format!("args-{chat}"))).expect("args");
    assert!(args.contains("You are a patient tutor."), "{args}");
    assert!(args.contains("<app_context>") && args.contains("\"tutor\""), "{args}");
    assert!(!args.contains("Skills available on demand"), "the app's prompt replaces the platform's: {args}");
    let detail: Value = app.get(&format!("/api/chats/{chat}"), Some(&app_token)).await.json().await.expect("json");
    assert!(detail["messages"].to_string().contains("embedded reply"), "{detail}");
    // The app's state reached the agent; the visible message is what was typed.
    let user = std::fs::read_to_string(app.data_dir().join(format!("user-{chat}"))).expect("user line");
    assert!(user.contains("Teach me") && user.contains("<lesson>Fractions</lesson>"), "{user}");
    assert_eq!(detail["messages"][0]["content"], "Teach me");
    let r = app
        .post(
            &format!("/api/chats/{chat}/messages"),
            json!({ "content": "x", "cid": "c-big", "agent_context": "y".repeat(17 * 1024) }),
            Some(&app_token),
        )
        .await;
    assert_error(r, StatusCode::PAYLOAD_TOO_LARGE, "agent_context_too_large").await;

    // Once started the system prompt is fixed; scope can change.
    let r = patch(&app, &format!("/api/app-chats/{chat}"), json!({ "system_prompt": "Other" }), &app_token).await;
    assert_error(r, StatusCode::CONFLICT, "chat_started").await;
    let r = patch(
        &app,
        &format!("/api/app-chats/{chat}"),
        json!({ "scope_label": "Renamed", "model": "sonnet" }),
        &app_token,
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.expect("json");
    assert!(body["agent_settings_json"].as_str().expect("settings").contains("sonnet"), "{body}");

    // Other apps and other chats are out of reach; the owner's chats too.
    let r = app
        .post(&format!("/api/chats/{chat}/messages"), json!({ "content": "x", "cid": "c-2" }), Some(&other_token))
        .await;
    assert_error(r, StatusCode::FORBIDDEN, "forbidden").await;
    app.chat(&token, "owners-chat").await;
    assert_error(app.get("/api/chats/owners-chat", Some(&app_token)).await, StatusCode::FORBIDDEN, "forbidden").await;
    assert_error(
        patch(&app, &format!("/api/chats/{chat}"), json!({ "title": "x" }), &app_token).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    assert_error(
        patch(&app, &format!("/api/app-chats/{chat}"), json!({}), &other_token).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    assert_error(app.get("/api/chats", Some(&app_token)).await, StatusCode::FORBIDDEN, "wrong_scope").await;

    // Bad input.
    for body in [
        json!({ "provider": "gemini" }),
        json!({ "scope": "x".repeat(161) }),
        json!({ "project_id": "../x" }),
        json!({ "report_date": "yesterday" }),
        json!({ "provider": "codex", "model": "claude-sonnet-4" }),
    ] {
        assert_error(
            app.post("/api/app-chats", body, Some(&app_token)).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_app_chat",
        )
        .await;
    }
}

/// `POST /api/app-chats/{chat}/embed-capability` from the app's frame: a one-use grant.
async fn mint_embed_grant(app: &TestApp, app_token: &str, chat: &str, instance: &str) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/api/app-chats/{chat}/embed-capability")))
        .bearer_auth(app_token)
        .header("origin", "null")
        .json(&json!({ "instance_id": instance }))
        .send()
        .await
        .expect("mint")
}

/// `POST /api/app-chat-embeds/session`: the grant traded for a session token.
async fn exchange_embed_grant(app: &TestApp, capability: &str, instance: &str) -> reqwest::Response {
    app.client
        .post(app.url("/api/app-chat-embeds/session"))
        .bearer_auth(capability)
        .header("origin", "null")
        .json(&json!({ "instance_id": instance }))
        .send()
        .await
        .expect("exchange")
}

#[tokio::test]
async fn an_embedded_chat_trades_a_one_use_grant_for_a_session_scoped_to_its_chat() {
    let (app, token) = with_claude().await;
    let (app_id, app_token) = applied_app(&app, &token, "tutor", json!({ "embeds_agent": true })).await;
    let (_, plain_token) = applied_app(&app, &token, "plain", json!({})).await;
    let chat: Value = app.post("/api/app-chats", json!({}), Some(&app_token)).await.json().await.expect("json");
    let chat = chat["id"].as_str().expect("id").to_owned();
    let other: Value = app.post("/api/app-chats", json!({}), Some(&app_token)).await.json().await.expect("json");
    let other = other["id"].as_str().expect("id").to_owned();
    let instance = format!("{app_id}:1:1700000000000");

    let mint = |instance: String| {
        let (app, chat, app_token) = (&app, chat.clone(), app_token.clone());
        async move {
            let r = mint_embed_grant(app, &app_token, &chat, &instance).await;
            assert_eq!(r.status(), StatusCode::OK);
            let grant: Value = r.json().await.expect("json");
            assert_eq!(grant["role"], "participant");
            assert!(grant["expires_at"].as_str().expect("expiry").ends_with('Z'));
            grant["capability"].as_str().expect("capability").to_owned()
        }
    };
    let exchange = |capability: String, instance: String| {
        let app = &app;
        async move { exchange_embed_grant(app, &capability, &instance).await }
    };

    let grant = mint(instance.clone()).await;
    assert!(grant.len() >= 32);
    let r = exchange(grant.clone(), instance.clone()).await;
    assert_eq!(r.status(), StatusCode::OK);
    let session: Value = r.json().await.expect("json");
    assert_eq!(session["chat_id"], chat.as_str());
    assert_eq!(session["instance_id"], instance.as_str());
    assert!(session["operations"].to_string().contains("chat:send"));
    let embed = session["token"].as_str().expect("token").to_owned();
    // One use only.
    assert_error(exchange(grant, instance.clone()).await, StatusCode::UNAUTHORIZED, "invalid_grant").await;
    let wrong_instance = mint(instance.clone()).await;
    assert_error(exchange(wrong_instance, format!("{instance}-x")).await, StatusCode::UNAUTHORIZED, "invalid_grant")
        .await;
    assert_error(exchange("x".repeat(43), instance.clone()).await, StatusCode::UNAUTHORIZED, "invalid_grant").await;

    // The session reads, sends and streams its chat, with its instance header, from the frame.
    let with = |req: reqwest::RequestBuilder| {
        req.bearer_auth(&embed).header("x-mobius-embed-instance", &instance).header("origin", "null")
    };
    let r = with(app.client.get(app.url(&format!("/api/chats/{chat}")))).send().await.expect("detail");
    assert_eq!(r.status(), StatusCode::OK);
    let r = with(app.client.post(app.url(&format!("/api/chats/{chat}/messages"))))
        .json(&json!({ "content": "hello from the embed", "cid": "e-1" }))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), StatusCode::ACCEPTED, "{}", r.text().await.unwrap_or_default());
    let models = with(app.client.get(app.url("/api/models"))).send().await.expect("models");
    assert_eq!(models.status(), StatusCode::OK);
    let models = with(app.client.get(app.url("/api/auth/providers/models"))).send().await.expect("models");
    assert_eq!(models.status(), StatusCode::OK);
    // Without its header, on another chat, or on owner routes: refused.
    let r = app.client.get(app.url(&format!("/api/chats/{chat}"))).bearer_auth(&embed).send().await.expect("detail");
    assert_error(r, StatusCode::UNAUTHORIZED, "embed_instance_mismatch").await;
    let r = with(app.client.get(app.url(&format!("/api/chats/{other}")))).send().await.expect("other");
    assert_error(r, StatusCode::FORBIDDEN, "forbidden").await;
    assert_error(
        with(app.client.get(app.url("/api/chats"))).send().await.expect("list"),
        StatusCode::FORBIDDEN,
        "wrong_scope",
    )
    .await;
    assert_error(
        with(app.client.get(app.url("/api/apps"))).send().await.expect("apps"),
        StatusCode::FORBIDDEN,
        "wrong_scope",
    )
    .await;

    // A newer session of the instance replaces the older one; revoking ends them all.
    let newer = mint(instance.clone()).await;
    let second: Value = exchange(newer, instance.clone()).await.json().await.expect("json");
    let r = with(app.client.get(app.url(&format!("/api/chats/{chat}")))).send().await.expect("old session");
    assert_error(r, StatusCode::UNAUTHORIZED, "token_revoked").await;
    let second = second["token"].as_str().expect("token").to_owned();
    let r = app
        .client
        .delete(app.url(&format!("/api/app-chats/{chat}/embed-sessions/{instance}")))
        .bearer_auth(&app_token)
        .send()
        .await
        .expect("revoke");
    assert!(r.json::<Value>().await.expect("json")["revoked"].as_u64().expect("n") >= 1);
    let r = app
        .client
        .get(app.url(&format!("/api/chats/{chat}")))
        .bearer_auth(&second)
        .header("x-mobius-embed-instance", &instance)
        .send()
        .await
        .expect("revoked session");
    assert_error(r, StatusCode::UNAUTHORIZED, "token_revoked").await;

    // Only apps that declare embeds_agent may embed; instance ids are checked.
    let plain_chat: Value = app.post("/api/app-chats", json!({}), Some(&plain_token)).await.json().await.expect("json");
    let r = app
        .post(
            &format!("/api/app-chats/{}/embed-capability", plain_chat["id"].as_str().expect("id")),
            json!({ "instance_id": instance }),
            Some(&plain_token),
        )
        .await;
    assert_error(r, StatusCode::FORBIDDEN, "embeds_agent_required").await;
    let r = app
        .post(&format!("/api/app-chats/{chat}/embed-capability"), json!({ "instance_id": "short" }), Some(&app_token))
        .await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_instance_id").await;
    let r = app
        .post(
            &format!("/api/app-chats/{chat}/embed-capability"),
            json!({ "instance_id": instance }),
            Some(&plain_token),
        )
        .await;
    assert_error(r, StatusCode::FORBIDDEN, "embeds_agent_required").await;
}

/// The `data:` lines of an SSE response until it ends or `wait` passes without one.
async fn sse_lines(response: reqwest::Response, wait: std::time::Duration, until: usize) -> (Vec<String>, bool) {
    use futures_util::StreamExt;
    let mut body = response.bytes_stream();
    let (mut lines, mut buffer) = (Vec::new(), String::new());
    loop {
        match tokio::time::timeout(wait, body.next()).await {
            Err(_) => return (lines, false),
            Ok(None) => return (lines, true),
            Ok(Some(chunk)) => buffer.push_str(&String::from_utf8_lossy(&chunk.expect("chunk"))),
        }
        while let Some(end) = buffer.find('\n') {
            let line: String = buffer.drain(..=end).collect();
            if let Some(data) = line.trim_end().strip_prefix("data:") {
                lines.push(data.trim().to_owned());
            }
        }
        if lines.len() >= until {
            return (lines, false);
        }
    }
}

#[tokio::test]
async fn an_embedded_chat_hears_only_its_chat_on_the_system_stream_until_its_session_ends() {
    let (app, token) = with_claude().await;
    let (app_id, app_token) = applied_app(&app, &token, "tutor", json!({ "embeds_agent": true })).await;
    let chat: Value = app.post("/api/app-chats", json!({}), Some(&app_token)).await.json().await.expect("json");
    let chat = chat["id"].as_str().expect("id").to_owned();
    let other: Value =
        app.post("/api/chats", json!({ "title": "Not the embed's" }), Some(&token)).await.json().await.expect("json");
    let other = other["id"].as_str().expect("id").to_owned();
    let instance = format!("{app_id}:1:1700000000001");
    let grant: Value = mint_embed_grant(&app, &app_token, &chat, &instance).await.json().await.expect("json");
    let capability = grant["capability"].as_str().expect("capability");
    let session: Value = exchange_embed_grant(&app, capability, &instance).await.json().await.expect("json");
    let embed = session["token"].as_str().expect("token").to_owned();

    // An app token may not listen; the embed needs its instance header.
    let r = app.client.get(app.url("/api/events/system")).bearer_auth(&app_token).send().await.expect("app");
    assert_error(r, StatusCode::FORBIDDEN, "wrong_scope").await;
    let r = app.client.get(app.url("/api/events/system")).bearer_auth(&embed).send().await.expect("no header");
    assert_error(r, StatusCode::UNAUTHORIZED, "embed_instance_mismatch").await;
    let open = || {
        app.client
            .get(app.url("/api/events/system"))
            .bearer_auth(&embed)
            .header("x-mobius-embed-instance", &instance)
            .send()
    };

    let stream = open().await.expect("stream");
    assert_eq!(stream.status(), StatusCode::OK);
    let rename = |id: String, title: &'static str| {
        let (app, token) = (&app, token.clone());
        async move {
            let r = app.patch_json(&format!("/api/chats/{id}"), json!({ "title": title }), &token).await;
            assert!(r.status().is_success(), "{}", r.status());
        }
    };
    rename(other.clone(), "Elsewhere").await;
    rename(chat.clone(), "Fractions").await;
    let (lines, _) = sse_lines(stream, std::time::Duration::from_secs(5), 2).await;
    assert!(lines[0].contains("system_stream_open"), "{lines:?}");
    assert!(lines[1].contains(&chat) && !lines.iter().any(|l| l.contains(&other)), "{lines:?}");

    // Revoked: the stream ends at its next wake-up after a second.
    let stream = open().await.expect("stream");
    let r = app
        .client
        .delete(app.url(&format!("/api/app-chats/{chat}/embed-sessions/{instance}")))
        .bearer_auth(&app_token)
        .send()
        .await
        .expect("revoke");
    assert_eq!(r.status(), StatusCode::OK);
    // allow-sleep: a revoked session's stream is checked when it wakes, once a second; the second
    // passing is what is tested.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    rename(chat.clone(), "Wakes the stream").await;
    let (lines, ended) = sse_lines(stream, std::time::Duration::from_secs(5), usize::MAX).await;
    assert!(ended, "the stream of a revoked session ends: {lines:?}");
    assert!(!lines.iter().any(|l| l.contains("Wakes")), "{lines:?}");
}
