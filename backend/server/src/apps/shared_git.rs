//! `GET /api/storage/shared-git/{repo}?revision=&file=`: one file of a commit on an app
//! repository's `main`, as the original served its shared git repositories (an immutable blob,
//! at most 8 MiB). The repositories are the apps' own (`app-repos/<slug>`, the server's; `repo`
//! is the app's slug or id), so libgit2 never opens a folder the agent writes. Who may read one
//! is who may read that app's storage: the owner, the app itself, another app when its
//! `cross_app_access` and the repository app's `share_with_apps` both allow reading.

use axum::Router;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::auth::Principal;
use crate::error::{Error, Result};
use crate::state::AppState;

/// The largest file this route reads (the original's limit).
pub const MAX_SHARED_GIT_BLOB_BYTES: usize = 8 * 1024 * 1024;
/// The longest `file` path accepted.
const MAX_FILE_PATH_BYTES: usize = 1024;

pub fn router() -> Router<AppState> {
    Router::new().route("/storage/shared-git/{repo}", get(read))
}

#[derive(serde::Deserialize)]
struct BlobQuery {
    revision: Option<String>,
    file: Option<String>,
}

/// A repository path: relative, plain names, no `..`, no empty part.
fn valid_file(file: &str) -> bool {
    !file.is_empty()
        && file.len() <= MAX_FILE_PATH_BYTES
        && !file.contains('\0')
        && file.split('/').all(|part| !part.is_empty() && part != "." && part != "..")
}

#[tracing::instrument(level = "debug", skip_all)]
async fn read(
    State(state): State<AppState>,
    principal: Principal,
    repo: std::result::Result<Path<String>, PathRejection>,
    query: std::result::Result<Query<BlobQuery>, QueryRejection>,
) -> Result<Response> {
    let bad = |m: &str| Error::bad_request("invalid_request", m.to_owned());
    let Path(repo) = repo.map_err(|_| bad("The repository name is not valid."))?;
    let Query(query) = query.map_err(|_| bad("Expected ?file=<path>[&revision=<commit>]."))?;
    let file = query.file.unwrap_or_default();
    if !valid_file(&file) {
        return Err(bad("`file` must be a path in the repository (no leading `/`, no `..`)."));
    }
    let revision = query.revision.filter(|r| !r.is_empty());
    if let Some(rev) = &revision
        && !(rev.len() == 40 && rev.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Err(bad("`revision` must be a full commit id (40 hex digits)."));
    }
    let app = match repo.parse::<i64>() {
        Ok(id) => crate::db::apps::get(&state.db.read, id).await?,
        Err(_) => crate::db::apps::by_slug(&state.db.read, &repo).await?,
    }
    .filter(|a| a.deleted_at.is_none())
    .ok_or_else(|| Error::not_found("repo_not_found", "There is no such repository."))?;
    if let Principal::App(caller) = &principal
        && caller.id != app.id
    {
        let reads = |v: &str| matches!(v, "read" | "write");
        if !(reads(&caller.cross_app_access) && reads(&app.share_with_apps)) {
            return Err(Error::forbidden("forbidden", "This app may not read another app's repository."));
        }
    }
    let pinned = revision.is_some();
    let dir = state.config.data_dir.join(crate::apps::worktree::REPOS_DIR).join(&app.slug);
    let blob = tokio::task::spawn_blocking(move || {
        crate::apps::git::main_blob(&dir, revision.as_deref(), &file, MAX_SHARED_GIT_BLOB_BYTES)
    })
    .await
    .map_err(|e| Error::Internal(format!("reading a repository: {e}")))??
    .ok_or_else(|| Error::not_found("not_found", "No such file at that revision of the repository's main branch."))?;
    let mut response = blob.bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    if let Ok(etag) = HeaderValue::from_str(&format!("\"{}\"", blob.blob)) {
        headers.insert(header::ETAG, etag);
    }
    if let Ok(commit) = HeaderValue::from_str(&blob.commit) {
        headers.insert("x-mobius-revision", commit);
    }
    // A commit's file never changes; `main`'s tip does.
    let cache = if pinned { "private, max-age=31536000, immutable" } else { "no-cache" };
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_paths_stay_in_the_repository() {
        for ok in ["index.jsx", "lib/util.js", "a.b/c"] {
            assert!(valid_file(ok), "{ok}");
        }
        for bad in ["", "/etc/passwd", "../x", "a/../b", "a//b", "./a", "a/", "a\0b"] {
            assert!(!valid_file(bad), "{bad:?}");
        }
        assert!(!valid_file(&"a".repeat(MAX_FILE_PATH_BYTES + 1)));
    }
}
