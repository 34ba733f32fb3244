//! `/api/theme…`: the current theme (ETag, 304), applying the agent's file, reset to stock,
//! the last versions and going back to one; and `/manifest.webmanifest` with the theme's
//! colours.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;

use super::{Current, history::Version};
use crate::auth::Owner;
use crate::error::Result;
use crate::state::AppState;

/// The largest web manifest the server rewrites.
const MAX_MANIFEST_BYTES: u64 = 64 * 1024;

/// The routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/theme", get(theme))
        .route("/theme/apply", post(apply))
        .route("/theme/reset", post(reset))
        .route("/theme/versions", get(versions))
        .route("/theme/versions/{id}/restore", post(restore))
}

/// The web manifest route (outside `/api`).
pub fn manifest_router() -> Router<AppState> {
    Router::new().route("/manifest.webmanifest", get(manifest))
}

#[derive(Serialize)]
struct ThemeOut<'a> {
    /// The theme's CSS: custom properties over the stock palette (empty or comments: stock).
    css: &'a str,
    /// Its version (`null`: the stock theme was never replaced).
    version: Option<&'a str>,
    /// No custom property is set.
    stock: bool,
    /// The page backgrounds it sets (`#rrggbb`), for the browser chrome.
    light_bg: Option<&'a str>,
    dark_bg: Option<&'a str>,
    /// Whether the last call changed it (apply, reset, restore).
    #[serde(skip_serializing_if = "Option::is_none")]
    changed: Option<bool>,
}

fn out(current: &Current, changed: Option<bool>) -> Response {
    let body = ThemeOut {
        css: &current.css,
        version: current.version.as_deref(),
        stock: current.checked.properties == 0,
        light_bg: current.checked.light_bg.as_deref(),
        dark_bg: current.checked.dark_bg.as_deref(),
        changed,
    };
    let mut response = Json(body).into_response();
    let headers = response.headers_mut();
    if let Ok(etag) = HeaderValue::from_str(&current.etag) {
        headers.insert(header::ETAG, etag);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// `GET /api/theme`: from memory; `If-None-Match` with the current ETag → 304.
#[tracing::instrument(level = "debug", skip_all)]
async fn theme(State(state): State<AppState>, _owner: Owner, headers: HeaderMap) -> Response {
    let current = state.theme.current();
    let hit = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|tag| tag.trim() == current.etag || tag.trim() == "*"));
    if hit {
        let mut response = StatusCode::NOT_MODIFIED.into_response();
        if let Ok(etag) = HeaderValue::from_str(&current.etag) {
            response.headers_mut().insert(header::ETAG, etag);
        }
        return response;
    }
    out(&current, None)
}

/// `POST /api/theme/apply`: the agent's `DATA_DIR/theme/theme.css`, checked and served (422
/// `theme_invalid` saying where and why otherwise; the last good theme stays).
#[tracing::instrument(level = "debug", skip_all)]
async fn apply(State(state): State<AppState>, _owner: Owner) -> Result<Response> {
    let (current, changed) = state.theme.apply_file().await?;
    Ok(out(&current, Some(changed)))
}

/// `POST /api/theme/reset`: the stock theme.
#[tracing::instrument(level = "debug", skip_all)]
async fn reset(State(state): State<AppState>, _owner: Owner) -> Result<Response> {
    let (current, changed) = state.theme.reset().await?;
    Ok(out(&current, Some(changed)))
}

#[derive(Serialize)]
struct VersionsOut {
    versions: Vec<Version>,
    /// The version being served.
    current: Option<String>,
}

/// `GET /api/theme/versions`: the last 20, newest first.
#[tracing::instrument(level = "debug", skip_all)]
async fn versions(State(state): State<AppState>, _owner: Owner) -> Result<Json<VersionsOut>> {
    let versions = state.theme.versions().await?;
    Ok(Json(VersionsOut { versions, current: state.theme.current().version.clone() }))
}

/// `POST /api/theme/versions/{id}/restore`: that version again (a new version on top).
#[tracing::instrument(level = "debug", skip_all)]
async fn restore(State(state): State<AppState>, _owner: Owner, Path(id): Path<String>) -> Result<Response> {
    let (current, changed) = state.theme.restore(&id).await?;
    Ok(out(&current, Some(changed)))
}

/// `GET /manifest.webmanifest`: the built one, its `theme_color` and `background_color` the
/// theme's light background when it sets one (a manifest has one colour; the light scheme is
/// the stock manifest's too).
#[tracing::instrument(level = "debug", skip_all)]
async fn manifest(State(state): State<AppState>) -> Response {
    let path = state.shell.served().dir.join("manifest.webmanifest");
    let colour = state.theme.current().checked.light_bg.clone();
    let built = tokio::task::spawn_blocking(move || read_manifest(&path)).await.ok().flatten();
    let Some(mut manifest) = built else {
        return (StatusCode::NOT_FOUND, "Not found").into_response();
    };
    if let (Some(colour), Some(fields)) = (colour, manifest.as_object_mut()) {
        fields.insert("theme_color".into(), colour.clone().into());
        fields.insert("background_color".into(), colour.into());
    }
    let mut response = Json(manifest).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/manifest+json"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

fn read_manifest(path: &std::path::Path) -> Option<serde_json::Value> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path).ok()?.take(MAX_MANIFEST_BYTES).read_to_end(&mut bytes).ok()?;
    serde_json::from_slice(&bytes).ok()
}
