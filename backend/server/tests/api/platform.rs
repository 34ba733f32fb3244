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
}
