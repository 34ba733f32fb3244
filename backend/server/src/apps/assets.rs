//! `static_assets`: files an app names in its manifest, copied out of the applied commit at
//! apply time into `DATA_DIR/app-assets/<id>/` and served publicly (GET/HEAD) at
//! `/app-assets/<slug>/<path>`, `/app-assets/by-id/<id>/<path>` and, sandboxed and frameable,
//! `/app-embeds/by-id/<id>/<path>`. A release that drops an asset drops its file.

use std::path::{Path, PathBuf};

use axum::Router;
use axum::body::Body;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::manifest::{self, MAX_STATIC_ASSETS};
use crate::app::AppState;
use crate::db;
use crate::error::{Error, Result};

/// Largest single static asset.
pub const MAX_ASSET_BYTES: u64 = 16 * 1024 * 1024;
/// Largest total of one app's static assets.
pub const MAX_ASSETS_TOTAL_BYTES: u64 = 64 * 1024 * 1024;

/// Where app `id`'s published assets live.
fn assets_dir(state: &AppState, id: i64) -> PathBuf {
    state.config.data_dir.join("app-assets").join(id.to_string())
}

/// Assets copied out of a build, waiting to replace the published set.
pub struct Staged(Option<tempfile::TempDir>);

fn invalid(dest: &str, why: impl std::fmt::Display) -> Error {
    Error::unprocessable("manifest_invalid", format!("mobius.json › static_assets.{dest}: {why}"))
}

/// Copies each `(destination, source)` from the exported commit `tree` into a staging folder,
/// refusing links, folders, missing files and anything over the limits.
pub async fn stage(state: &AppState, tree: &Path, pairs: &[(String, String)]) -> Result<Staged> {
    if pairs.is_empty() {
        return Ok(Staged(None));
    }
    let build_root = state.config.data_dir.join("run").join("build");
    let (tree, pairs) = (tree.to_path_buf(), pairs.to_vec());
    tokio::task::spawn_blocking(move || -> Result<Staged> {
        std::fs::create_dir_all(&build_root)?;
        let staging = tempfile::Builder::new().prefix("assets-").tempdir_in(&build_root)?;
        let mut total = 0u64;
        for (dest, src) in pairs.iter().take(MAX_STATIC_ASSETS) {
            let file =
                contained(&tree, src).ok_or_else(|| invalid(dest, format!("{src:?} is not a file of the app")))?;
            let len = std::fs::metadata(&file)?.len();
            if len > MAX_ASSET_BYTES {
                return Err(invalid(dest, format!("{src:?} is larger than {} MiB", MAX_ASSET_BYTES >> 20)));
            }
            total += len;
            if total > MAX_ASSETS_TOTAL_BYTES {
                return Err(invalid(
                    dest,
                    format!("the assets add up to more than {} MiB", MAX_ASSETS_TOTAL_BYTES >> 20),
                ));
            }
            let target = staging.path().join(dest);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::copy(&file, &target)?;
        }
        Ok(Staged(Some(staging)))
    })
    .await
    .map_err(|e| Error::Internal(format!("asset task: {e}")))?
}

/// Replaces app `id`'s published assets with `staged` (an empty set removes them).
pub async fn publish(state: &AppState, id: i64, staged: Staged) -> Result<()> {
    let dir = assets_dir(state, id);
    tokio::task::spawn_blocking(move || -> Result<()> {
        let old = dir.with_extension("old");
        let _ = std::fs::remove_dir_all(&old);
        if dir.exists() {
            std::fs::rename(&dir, &old)?;
        }
        if let Some(staging) = staged.0 {
            if let Some(parent) = dir.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::rename(staging.keep(), &dir)?;
        }
        let _ = std::fs::remove_dir_all(&old);
        Ok(())
    })
    .await
    .map_err(|e| Error::Internal(format!("asset task: {e}")))?
}

/// Removes a purged app's assets.
pub async fn remove(state: &AppState, id: i64) {
    let _ = tokio::fs::remove_dir_all(assets_dir(state, id)).await;
}

/// A regular file at `rel` under `root`, reached without following links.
fn contained(root: &Path, rel: &str) -> Option<PathBuf> {
    if manifest::repo_path_problem(rel).is_some() {
        return None;
    }
    let mut path = root.to_path_buf();
    for segment in rel.split('/') {
        path.push(segment);
        if std::fs::symlink_metadata(&path).ok()?.file_type().is_symlink() {
            return None;
        }
    }
    std::fs::symlink_metadata(&path).ok()?.is_file().then_some(path)
}

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

async fn by_id(
    State(state): State<AppState>,
    method: Method,
    UrlPath((id, path)): UrlPath<(i64, String)>,
) -> Result<Response> {
    let id = live_id(&state, id).await?;
    serve(&state, id, &path, method, false).await
}

async fn embed_by_id(
    State(state): State<AppState>,
    method: Method,
    UrlPath((id, path)): UrlPath<(i64, String)>,
) -> Result<Response> {
    let id = live_id(&state, id).await?;
    serve(&state, id, &path, method, true).await
}

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
    let file = contained(&assets_dir(state, id), path).ok_or_else(missing)?;
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
