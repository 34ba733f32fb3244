//! `static_assets`: files an app names in its manifest, copied out of the applied commit at
//! apply time into `DATA_DIR/app-assets/<id>/` and served publicly (GET/HEAD) at
//! `/app-assets/<slug>/<path>`, `/app-assets/by-id/<id>/<path>` and, sandboxed and frameable,
//! `/app-embeds/by-id/<id>/<path>`. A release that drops an asset drops its file.

pub mod files;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use self::files::{assets_dir, contained};
use super::manifest;
use crate::db;
use crate::error::{Error, Result};
use crate::state::AppState;

/// The public asset routes (outside `/api`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/app-assets/by-id/{id}/{*path}", get(by_id))
        .route("/app-embeds/by-id/{id}/{*path}", get(embed_by_id))
        .route("/app-assets/{slug}/{*path}", get(by_slug))
}

async fn live_id(state: &AppState, id: i64) -> Result<i64> {
    match db::apps::get(&state.db.read, id).await? {
        Some(app) if app.deleted_at.is_none() && app.bundle_sha.is_some() => Ok(app.id),
        _ => Err(Error::not_found("asset_not_found", "No such asset.")),
    }
}

#[tracing::instrument(level = "debug", skip_all)]
async fn by_id(
    State(state): State<AppState>,
    method: Method,
    UrlPath((id, path)): UrlPath<(i64, String)>,
) -> Result<Response> {
    let id = live_id(&state, id).await?;
    serve(&state, id, &path, method, false).await
}

#[tracing::instrument(level = "debug", skip_all)]
async fn embed_by_id(
    State(state): State<AppState>,
    method: Method,
    UrlPath((id, path)): UrlPath<(i64, String)>,
) -> Result<Response> {
    let id = live_id(&state, id).await?;
    serve(&state, id, &path, method, true).await
}

#[tracing::instrument(level = "debug", skip_all)]
async fn by_slug(
    State(state): State<AppState>,
    method: Method,
    UrlPath((slug, path)): UrlPath<(String, String)>,
) -> Result<Response> {
    if !manifest::valid_id(&slug) {
        return Err(Error::not_found("asset_not_found", "No such asset."));
    }
    let app = db::apps::by_slug(&state.db.read, &slug).await?;
    let id = live_id(&state, app.map_or(0, |a| a.id)).await?;
    serve(&state, id, &path, method, false).await
}

/// Content type by extension (fonts and the types storage knows).
fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).as_deref() {
        Some("woff2") => "font/woff2",
        Some("woff") => "font/woff",
        Some("ttf") => "font/ttf",
        Some("otf") => "font/otf",
        _ => crate::storage::guess_type(path, b"\0"),
    }
}

async fn serve(state: &AppState, id: i64, path: &str, method: Method, embed: bool) -> Result<Response> {
    let missing = || Error::not_found("asset_not_found", "No such asset.");
    let file = contained(&assets_dir(&state.config.data_dir, id), path).ok_or_else(missing)?;
    let bytes = tokio::fs::read(&file).await.map_err(|_| missing())?;
    let length = bytes.len();
    let mut response =
        if method == Method::HEAD { StatusCode::OK.into_response() } else { Body::from(bytes).into_response() };
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type(path)));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=300"));
    // App frames are opaque origins: they fetch assets cross-origin.
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    let csp = if embed {
        "sandbox allow-scripts allow-forms allow-popups; default-src 'self' data: blob:; script-src 'self' 'unsafe-inline'; \
         style-src 'self' 'unsafe-inline'; frame-ancestors 'self'"
    } else {
        "sandbox; default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'"
    };
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(csp));
    if embed {
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("SAMEORIGIN"));
    }
    Ok(response)
}
