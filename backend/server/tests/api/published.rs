//! Published pages: `POST/GET/DELETE /api/apps/{id}/publish`, `/api/published-sites`, and the
//! page itself at `/sites/<token>/` — served signed out, reading only its own data, revoked at once.

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{TestApp, assert_error, fake_dist};

/// A registered app with a (fake) served bundle, and its app token.
async fn app_with_bundle(app: &TestApp, slug: &str) -> (i64, String) {
    let (id, token) = app.register_app(slug).await;
    let compiled = app.data_dir().join("compiled");
    std::fs::create_dir_all(&compiled).expect("compiled");
    std::fs::write(compiled.join(format!("app-{id}-sha.js")), format!("export default 1; // bundle of {slug}"))
        .expect("bundle");
    (id, token)
}

async fn publish(app: &TestApp, owner: &str, id: i64, body: Value) -> Value {
    let r = app.post(&format!("/api/apps/{id}/publish"), body, Some(owner)).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap_or_default());
    r.json().await.expect("json")
}

/// A GET with no credentials at all (a visitor).
async fn visit(app: &TestApp, path: &str) -> reqwest::Response {
    reqwest::Client::new().get(app.url(path)).send().await.expect("GET")
}

/// Sends `target` verbatim (no client-side `..` normalisation); the status.
async fn raw_get(app: &TestApp, target: &str) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(app.addr).await.expect("connect");
    let head = format!("GET {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", app.addr);
    stream.write_all(head.as_bytes()).await.expect("write");
    let mut out = Vec::new();
    stream.read_to_end(&mut out).await.expect("read");
    String::from_utf8_lossy(&out).split(' ').nth(1).and_then(|s| s.parse().ok()).expect("status line")
}

#[tokio::test]
async fn a_published_snapshot_is_served_signed_out_and_unpublishing_revokes_it_at_once() {
    let app = TestApp::spawn().await;
    let dist = fake_dist(app.data_dir());
    std::fs::write(dist.join("app-frame.js"), "window.__siteBoot = 1;").expect("bootstrap");
    let owner = app.setup_owner().await;
    let (id, app_token) = app_with_bundle(&app, "notes").await;
    let put =
        app.put_json(&format!("/api/storage/apps/{id}/notes/today.json"), json!({ "text": "hello" }), &app_token).await;
    assert_eq!(put.status(), StatusCode::NO_CONTENT);

    let site = publish(&app, &owner, id, json!({})).await;
    let url = site["url"].as_str().expect("url").to_owned();
    let token = url.trim_start_matches("/sites/").trim_end_matches('/').to_owned();
    assert_eq!(token.len(), 43, "256 random bits, base64url: {url}");
    assert_eq!(
        (site["live"].clone(), site["files"].clone(), site["app_slug"].clone()),
        (json!(false), json!(1), json!("notes"))
    );

    // The data changes after publishing: the snapshot does not.
    let put = app
        .put_json(&format!("/api/storage/apps/{id}/notes/today.json"), json!({ "text": "changed" }), &app_token)
        .await;
    assert_eq!(put.status(), StatusCode::NO_CONTENT);
    let data = visit(&app, &format!("{url}data/notes/today.json")).await;
    assert_eq!(data.status(), StatusCode::OK);
    assert_eq!(data.headers()["cache-control"], "no-store");
    assert_eq!(data.headers()["access-control-allow-origin"], "*");
    assert_eq!(data.json::<Value>().await.expect("json"), json!({ "text": "hello" }));
    let listing: Value = visit(&app, &format!("{url}list")).await.json().await.expect("json");
    assert_eq!(listing["entries"][0]["name"], "notes", "{listing}");
    let listing: Value = visit(&app, &format!("{url}list/notes")).await.json().await.expect("json");
    assert_eq!(listing["entries"][0]["path"], "notes/today.json", "{listing}");
    let module = visit(&app, &format!("{url}module.js")).await;
    assert_eq!(module.status(), StatusCode::OK);
    assert!(module.text().await.expect("module").contains("bundle of notes"));

    // The page: the frame document with its bootstrap, sandboxed, connecting to its prefix only,
    // and no token of the owner's or the app's anywhere in it.
    let page = visit(&app, &url).await;
    assert_eq!(page.status(), StatusCode::OK);
    let csp = page.headers()["content-security-policy"].to_str().expect("csp").to_owned();
    assert!(csp.starts_with("sandbox allow-scripts allow-forms allow-popups;"), "{csp}");
    assert!(!csp.contains("allow-same-origin"), "{csp}");
    assert!(csp.contains(&format!("connect-src http://{}{url};", app.addr)), "{csp}");
    assert_eq!(page.headers()["referrer-policy"], "no-referrer");
    assert_eq!(page.headers()["cache-control"], "no-store");
    let html = page.text().await.expect("html");
    assert!(html.contains("__siteBoot") && html.contains("\"site\""), "{html}");
    for secret in [&owner, &app_token] {
        assert!(!html.contains(secret.as_str()) && !csp.contains(secret.as_str()), "a token leaked into the page");
    }
    assert_eq!(visit(&app, url.trim_end_matches('/')).await.status(), StatusCode::OK, "redirected");

    // The owner's list, and publishing again: the same link, now live.
    let list: Value = app.get("/api/published-sites", Some(&owner)).await.json().await.expect("json");
    assert_eq!(list["sites"].as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(list["sites"][0]["url"], url.as_str());
    let again = publish(&app, &owner, id, json!({ "live": true })).await;
    assert_eq!((again["url"].as_str(), again["live"].clone()), (Some(url.as_str()), json!(true)));
    let data: Value = visit(&app, &format!("{url}data/notes/today.json")).await.json().await.expect("json");
    assert_eq!(data, json!({ "text": "changed" }), "a live page reads the data as it is now");
    let current: Value = app.get(&format!("/api/apps/{id}/publish"), Some(&owner)).await.json().await.expect("json");
    assert_eq!(current["url"], url.as_str());

    // Unpublished: every route of the page is a 404 at once, and its copies are gone.
    let r = app.delete_with(&format!("/api/apps/{id}/publish"), &owner).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    for path in [url.clone(), format!("{url}module.js"), format!("{url}data/notes/today.json"), format!("{url}list")] {
        let r = visit(&app, &path).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
        assert_eq!(r.headers()["cache-control"], "no-store", "{path}");
    }
    let left = std::fs::read_dir(app.data_dir().join("published")).map(Iterator::count).unwrap_or(0);
    assert_eq!(left, 0, "the page's copies were removed");
    assert_error(
        app.delete_with(&format!("/api/apps/{id}/publish"), &owner).await,
        StatusCode::NOT_FOUND,
        "site_not_found",
    )
    .await;
    assert_error(
        app.get(&format!("/api/apps/{id}/publish"), Some(&owner)).await,
        StatusCode::NOT_FOUND,
        "site_not_found",
    )
    .await;
}

#[tokio::test]
async fn a_page_reads_only_its_own_data_and_reaches_nothing_else() {
    let app = TestApp::spawn().await;
    let owner = app.setup_owner().await;
    let (a, a_token) = app_with_bundle(&app, "alpha").await;
    let (b, b_token) = app_with_bundle(&app, "beta").await;
    let put = app.put_json(&format!("/api/storage/apps/{a}/mine.json"), json!({ "a": 1 }), &a_token).await;
    assert_eq!(put.status(), StatusCode::NO_CONTENT);
    let put = app.put_json(&format!("/api/storage/apps/{b}/secret.json"), json!({ "b": 2 }), &b_token).await;
    assert_eq!(put.status(), StatusCode::NO_CONTENT);
    let url_a = publish(&app, &owner, a, json!({ "live": true })).await["url"].as_str().expect("url").to_owned();
    let url_b = publish(&app, &owner, b, json!({})).await["url"].as_str().expect("url").to_owned();
    assert_ne!(url_a, url_b);
    let token_a = url_a.trim_start_matches("/sites/").trim_end_matches('/').to_owned();

    // A's link reads A's data only, whoever asks and whatever they carry.
    assert_eq!(visit(&app, &format!("{url_a}data/mine.json")).await.status(), StatusCode::OK);
    assert_eq!(visit(&app, &format!("{url_a}data/secret.json")).await.status(), StatusCode::NOT_FOUND);
    let with_owner = app.get(&format!("{url_a}data/secret.json"), Some(&owner)).await;
    assert_eq!(with_owner.status(), StatusCode::NOT_FOUND, "an owner bearer opens nothing more");
    let listed: Value = visit(&app, &format!("{url_a}list")).await.json().await.expect("json");
    assert_eq!(listed["entries"].as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(visit(&app, &format!("{url_b}data/mine.json")).await.status(), StatusCode::NOT_FOUND);

    // Its token is no credential for the API, and nothing else answers under its prefix.
    assert_eq!(app.get("/api/apps", Some(&token_a)).await.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        app.get(&format!("/api/storage/apps/{a}/mine.json"), Some(&token_a)).await.status(),
        StatusCode::UNAUTHORIZED
    );
    for path in [
        format!("{url_a}api/apps"),
        format!("{url_a}frame"),
        format!("{url_a}data/..%2fsecret.json"),
        format!("{url_a}data/%2e%2e/%2e%2e/db/mobius.sqlite3"),
        "/sites/".to_owned(),
        "/sites/not-a-token/".to_owned(),
        format!("/sites/{}/", "A".repeat(43)),
    ] {
        let status = visit(&app, &path).await.status();
        assert!(status == StatusCode::NOT_FOUND || status == StatusCode::BAD_REQUEST, "{path}: {status}");
    }
    for target in
        [format!("{url_a}../"), format!("{url_a}../../api/apps"), format!("{url_a}data/../../../db/mobius.sqlite3")]
    {
        let status = raw_get(&app, &target).await;
        assert!(status == 404 || status == 400, "{target}: {status}");
    }
    let write = reqwest::Client::new().put(app.url(&format!("{url_a}data/mine.json"))).body("{}").send().await;
    assert_eq!(write.expect("PUT").status(), StatusCode::NOT_FOUND, "a page's data route takes no writes");

    // Only the owner publishes; bad ids are 404.
    assert_eq!(app.post(&format!("/api/apps/{a}/publish"), json!({}), None).await.status(), StatusCode::UNAUTHORIZED);
    assert_error(
        app.post(&format!("/api/apps/{a}/publish"), json!({}), Some(&a_token)).await,
        StatusCode::FORBIDDEN,
        "wrong_scope",
    )
    .await;
    assert_error(
        app.post("/api/apps/abc/publish", json!({}), Some(&owner)).await,
        StatusCode::NOT_FOUND,
        "app_not_found",
    )
    .await;
    assert_error(
        app.post("/api/apps/99999/publish", json!({}), Some(&owner)).await,
        StatusCode::NOT_FOUND,
        "app_not_found",
    )
    .await;
    assert_error(app.delete_with("/api/published-sites/xyz", &owner).await, StatusCode::NOT_FOUND, "site_not_found")
        .await;
    assert_error(
        app.post(&format!("/api/apps/{a}/publish"), json!({ "live": "yes" }), Some(&owner)).await,
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await;

    // Deleting an app takes its page down; Settings' delete takes the other one down.
    assert_eq!(app.delete_with(&format!("/api/apps/{a}"), &owner).await.status(), StatusCode::NO_CONTENT);
    assert_eq!(visit(&app, &url_a).await.status(), StatusCode::NOT_FOUND);
    let list: Value = app.get("/api/published-sites", Some(&owner)).await.json().await.expect("json");
    let id_b = list["sites"][0]["id"].as_i64().expect("site id");
    assert_eq!(list["sites"].as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(app.delete_with(&format!("/api/published-sites/{id_b}"), &owner).await.status(), StatusCode::NO_CONTENT);
    assert_eq!(visit(&app, &format!("{url_b}data/secret.json")).await.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn publishing_is_bounded_in_pages_and_in_snapshot_size() {
    let app = TestApp::spawn().await;
    let owner = app.setup_owner().await;
    let mut ids = Vec::new();
    for n in 0..=mobius::published::MAX_SITES {
        ids.push(app_with_bundle(&app, &format!("app-{n}")).await.0);
    }
    let (last, rest) = ids.split_last().expect("apps");
    for id in rest {
        publish(&app, &owner, *id, json!({ "live": true })).await;
    }
    assert_error(
        app.post(&format!("/api/apps/{last}/publish"), json!({}), Some(&owner)).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "too_many_sites",
    )
    .await;
    // Republishing one of them still works at the limit; unpublishing one frees a place.
    publish(&app, &owner, rest[0], json!({})).await;
    assert_eq!(
        app.delete_with(&format!("/api/apps/{}/publish", rest[1]), &owner).await.status(),
        StatusCode::NO_CONTENT
    );

    // A snapshot larger than the bound is refused and leaves nothing behind; live data is not copied.
    let data = app.data_dir().join(format!("app-data/{last}"));
    std::fs::create_dir_all(&data).expect("data");
    let big = std::fs::File::create(data.join("big.bin")).expect("big");
    big.set_len(mobius::storage::snapshot::MAX_SNAPSHOT_BYTES + 1).expect("sparse");
    let before = std::fs::read_dir(app.data_dir().join("published")).expect("published").count();
    assert_error(
        app.post(&format!("/api/apps/{last}/publish"), json!({}), Some(&owner)).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "snapshot_too_large",
    )
    .await;
    assert_eq!(std::fs::read_dir(app.data_dir().join("published")).expect("published").count(), before);
    let live = publish(&app, &owner, *last, json!({ "live": true })).await;
    assert_eq!(live["bytes"], 0);
}

#[tokio::test]
async fn a_page_is_painted_with_the_theme_it_was_published_with_and_a_bad_theme_publishes_nothing() {
    let app = TestApp::spawn().await;
    let dist = fake_dist(app.data_dir());
    std::fs::write(dist.join("app-frame.js"), "window.__siteBoot = 1;").expect("bootstrap");
    let owner = app.setup_owner().await;
    let (id, _) = app_with_bundle(&app, "board").await;

    // A value that would leave its declaration, and a name that is no theme variable: refused,
    // and no page is made.
    for theme in [
        json!({"light": {"accent": "red; } body { display: none"}}),
        json!({"light": {"accent": "url(https://evil.example/x.png)"}}),
        json!({"dark": {"position": "fixed"}}),
        json!({"light": {"accent": "</style><script>alert(1)</script>"}}),
        json!({"sepia": {}}),
    ] {
        let r = app.post(&format!("/api/apps/{id}/publish"), json!({ "theme": theme }), Some(&owner)).await;
        assert_error(r, StatusCode::BAD_REQUEST, "invalid_request").await;
    }
    let none = app.get(&format!("/api/apps/{id}/publish"), Some(&owner)).await;
    assert_eq!(none.status(), StatusCode::NOT_FOUND, "a refused theme publishes nothing");

    let theme = json!({
        "light": {"accent": "#15803d", "bg": "#f7f5ef", "font": "'Inter', system-ui, sans-serif"},
        "dark": {"accent": "#22c55e", "accent-dim": "rgba(34,197,94,0.14)"},
    });
    let site = publish(&app, &owner, id, json!({ "theme": theme })).await;
    let url = site["url"].as_str().expect("url").to_owned();
    let page = visit(&app, &url).await.text().await.expect("page");
    assert!(page.contains("--accent: #15803d; --mobius-accent: #15803d;"), "the light scheme: {page}");
    assert!(page.contains("@media (prefers-color-scheme: dark)"), "the dark scheme follows the visitor's: {page}");
    assert!(page.contains("--accent: #22c55e;"), "{page}");

    // Publishing again without a theme paints the page with the stock colours (the link stays).
    let again = publish(&app, &owner, id, json!({})).await;
    assert_eq!(again["url"], site["url"]);
    let page = visit(&app, &url).await.text().await.expect("page");
    assert!(!page.contains("#15803d"), "no theme this time: {page}");
}
