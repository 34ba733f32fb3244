//! `POST /api/screenshots` refusals: what is rendered is named exactly once, is an installed
//! app or a page of this server, and a server without a browser says so. (The screenshots
//! themselves, with a real Chromium and the real CLIs, are in `tests/agents/eyes.rs`.)

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{TestApp, assert_error};

#[tokio::test]
async fn a_screenshot_names_an_installed_app_or_a_page_of_this_server() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let (_, app_token) = app.register_app("shown").await;
    let shot = |body| app.post("/api/screenshots", body, Some(&token));
    assert_error(shot(json!({})).await, StatusCode::UNPROCESSABLE_ENTITY, "screenshot_target").await;
    assert_error(
        shot(json!({ "app": "shown", "url": "/" })).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "screenshot_target",
    )
    .await;
    assert_error(
        shot(json!({ "url": "/", "path": "/x" })).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "screenshot_target",
    )
    .await;
    let missing = assert_error(shot(json!({ "app": "nope" })).await, StatusCode::NOT_FOUND, "app_not_found").await;
    assert!(missing["message"].as_str().unwrap_or_default().contains("mobius app apply nope"), "{missing}");
    for off in ["https://example.com/", "//example.com/", "file:///etc/passwd", "http://127.0.0.1:1/"] {
        assert_error(shot(json!({ "url": off })).await, StatusCode::UNPROCESSABLE_ENTITY, "url_off_server").await;
    }
    assert_error(
        shot(json!({ "app": "shown", "path": "items" })).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_path",
    )
    .await;
    let r = shot(json!({ "url": "/", "size": "tablet" })).await;
    assert!(r.status().is_client_error(), "an unknown size is refused: {}", r.status());
    // Valid, but this server has no browser: said plainly, nothing started.
    assert_error(shot(json!({ "app": "shown" })).await, StatusCode::SERVICE_UNAVAILABLE, "browser_missing").await;
    assert_error(
        shot(json!({ "url": "/settings", "size": "desktop" })).await,
        StatusCode::SERVICE_UNAVAILABLE,
        "browser_missing",
    )
    .await;
    // An app's own token cannot drive the owner's browser.
    let r = app.post("/api/screenshots", json!({ "app": "shown" }), Some(&app_token)).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
}
