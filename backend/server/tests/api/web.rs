//! The PWA host: SPA fallback, cache policy, JSON 404s under /api, security headers.

use reqwest::StatusCode;

use crate::helpers::{TestApp, assert_error, fake_dist};

#[tokio::test]
async fn client_routes_get_the_shell_and_unknown_api_routes_get_json_404() {
    let app = TestApp::spawn().await;
    fake_dist(app.data_dir());
    for path in ["/", "/shell/", "/chat/some-id"] {
        let r = app.get(path, None).await;
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        assert_eq!(r.headers()["cache-control"], "no-cache", "{path}");
        assert!(r.headers()["content-security-policy"].to_str().expect("csp").contains("default-src 'self'"));
        assert!(r.text().await.expect("body").contains("<title>shell</title>"), "{path}");
    }
    assert_error(app.get("/api/x", None).await, StatusCode::NOT_FOUND, "not_found").await;
    assert_error(app.get("/api/chats/nope/deeper", None).await, StatusCode::NOT_FOUND, "not_found").await;
    let wrong_method = app.client.delete(app.url("/api/health")).send().await.expect("req");
    assert_error(wrong_method, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed").await;
}

#[tokio::test]
async fn hashed_assets_are_immutable_and_missing_files_are_404_not_the_shell() {
    let app = TestApp::spawn().await;
    fake_dist(app.data_dir());
    let asset = app.get("/assets/index-3f9a1c.js", None).await;
    assert_eq!(asset.status(), StatusCode::OK);
    assert_eq!(asset.headers()["cache-control"], "public, max-age=31536000, immutable");
    assert_eq!(asset.headers()["x-content-type-options"], "nosniff");
    let manifest = app.get("/manifest.webmanifest", None).await;
    assert_eq!(manifest.headers()["cache-control"], "no-cache");
    let missing = app.get("/assets/gone-123.js", None).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(!missing.text().await.expect("body").contains("<title>shell</title>"));
    let traversal = app.get("/assets/..%2F..%2Fsecret.key", None).await;
    assert_ne!(traversal.status(), StatusCode::OK);
}

#[tokio::test]
async fn responses_are_compressed_when_the_client_asks() {
    let app = TestApp::spawn().await;
    fake_dist(app.data_dir());
    let r =
        app.client.get(app.url("/assets/index-3f9a1c.js")).header("accept-encoding", "gzip").send().await.expect("req");
    assert_eq!(r.headers()["content-encoding"], "gzip");
}

#[tokio::test]
async fn without_a_built_frontend_a_page_says_how_to_build_it() {
    let app = TestApp::spawn().await;
    let r = app.get("/", None).await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(r.text().await.expect("body").contains("npm run build"));
}

#[tokio::test]
async fn https_origins_get_hsts() {
    let dir = std::sync::Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| {
        c.public_origin = mobius::config::PublicOrigin::parse("https://mobius.example.com").expect("origin");
    })
    .await;
    let r = app.get("/api/health", None).await;
    assert!(r.headers()["strict-transport-security"].to_str().expect("hsts").contains("max-age="));
}

#[tokio::test]
async fn pinned_library_assets_are_served_under_vendor_for_the_opaque_frames() {
    let modules = tempfile::tempdir().expect("tmp");
    let katex = modules.path().join("katex/dist");
    std::fs::create_dir_all(katex.join("fonts")).expect("mkdir");
    std::fs::write(katex.join("katex.min.css"), ".katex{font:1em KaTeX_Main}").expect("css");
    std::fs::write(katex.join("fonts/KaTeX_Main-Regular.woff2"), b"wOF2font").expect("font");
    std::fs::write(modules.path().join("secret.txt"), "not served").expect("secret");
    let dir = std::sync::Arc::new(tempfile::tempdir().expect("tmp"));
    let root = modules.path().to_path_buf();
    let app = TestApp::spawn_in(dir, move |c| c.app_node_modules = root.clone()).await;
    let css = app.get("/vendor/katex/katex.min.css", None).await;
    assert_eq!(css.status(), StatusCode::OK);
    assert_eq!(css.headers()["content-type"], "text/css");
    // Fonts are fetched in CORS mode from an opaque origin: they need `*`.
    assert_eq!(css.headers()["access-control-allow-origin"], "*");
    assert_eq!(css.headers()["cache-control"], "public, max-age=86400");
    let font = app
        .client
        .get(app.url("/vendor/katex/fonts/KaTeX_Main-Regular.woff2"))
        .header("origin", "null")
        .send()
        .await
        .expect("req");
    assert_eq!(font.status(), StatusCode::OK);
    assert_eq!(font.headers()["access-control-allow-origin"], "*");
    assert_eq!(font.bytes().await.expect("body").as_ref(), b"wOF2font");
    for path in [
        "/vendor/katex/missing.css",
        "/vendor/other/x.js",
        "/vendor/katex/..%2F..%2Fsecret.txt",
        "/vendor/katex/%2E%2E/secret.txt",
    ] {
        let r = app.get(path, None).await;
        assert_ne!(r.status(), StatusCode::OK, "{path}");
        assert!(!r.text().await.expect("body").contains("not served"), "{path}");
    }
}
