//! The `/api/storage/...` routes: who may touch which tree, and how bodies and answers look.

use axum::body::Body;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_LENGTH, CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::Value;

use super::disk::TEXT_PLAIN;
use super::etag::Preconditions;
use super::etag::quoted;
use super::files::{Ctx, ListOptions, Payload, Read};
use super::path::StoragePath;
use super::tree::Tree;
use super::{LIST_DEFAULT, LIST_MAX, MAX_BODY_BYTES, MAX_OBJECT_BYTES};
use crate::api::ApiJson;
use crate::auth::Principal;
use crate::error::{Domain, Error, Result};
use crate::state::AppState;

/// The storage routes (mounted under `/api`).
///
/// `folder/…` and `move` share their level with app file paths: a file may be named `move`
/// or live under `folder/`, so those routes also read and write files; only `DELETE
/// folder/…` (folder removal) and `POST move` differ, as the contract fixes them.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/storage/apps/{id}/{*path}", get(read_app).put(write_app).delete(delete_app))
        .route("/storage/apps/{id}/folder/{*path}", get(read_in_folder).put(write_in_folder).delete(delete_folder))
        .route("/storage/apps/{id}/move", post(move_in_app).get(read_move).put(write_move).delete(delete_move))
        .route("/storage/apps-list/{id}", get(list_app_root))
        .route("/storage/apps-list/{id}/", get(list_app_root))
        .route("/storage/apps-list/{id}/{*prefix}", get(list_app))
        .route("/storage/shared/{*path}", get(read_shared).put(write_shared).delete(delete_shared))
        .route("/storage/shared-list", get(list_shared_root))
        .route("/storage/shared-list/", get(list_shared_root))
        .route("/storage/shared-list/{*prefix}", get(list_shared))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
}

/// How much one app grants or may use of another app's storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Access {
    None,
    Read,
    Write,
}

impl Access {
    fn parse(level: &str) -> Self {
        match level {
            "read" => Access::Read,
            "write" => Access::Write,
            _ => Access::None,
        }
    }
}

fn app_not_found() -> Error {
    Domain::AppNotFound.into()
}

/// The tree `tree` of the server's data directory.
fn ctx(state: &AppState, tree: Tree) -> Ctx {
    Ctx::new(state.storage.clone(), &state.config.data_dir, tree)
}

/// Checks that `principal` may use app `raw_id`'s tree with `need`, reading both apps fresh.
async fn authorize(state: &AppState, principal: &Principal, raw_id: &str, need: Access) -> Result<Tree> {
    let id: i64 = raw_id.parse().ok().filter(|id| *id > 0).ok_or_else(app_not_found)?;
    let target = match principal {
        Principal::App(caller) if caller.id == id => caller.clone(),
        _ => state.app_rows.get(&state.db.read, state.hub.data_version(), id).await?.ok_or_else(app_not_found)?,
    };
    if target.deleted_at.is_some() {
        return Err(app_not_found());
    }
    if let Principal::App(caller) = principal
        && caller.id != id
    {
        let granted = Access::parse(&caller.cross_app_access).min(Access::parse(&target.share_with_apps));
        if granted < need {
            let verb = if need == Access::Write { "change" } else { "read" };
            return Err(Error::forbidden("forbidden", format!("This app may not {verb} another app's storage.")));
        }
    }
    Ok(Tree::App(id))
}

/// Reading the shared tree: the owner, or an app whose manifest asks for it
/// (`permissions.shared_memory` of `read` or `write`).
fn may_read_shared(principal: &Principal) -> Result<()> {
    let Principal::App(app) = principal else { return Ok(()) };
    match app.permissions.shared_memory.as_deref() {
        Some("read" | "write") => Ok(()),
        _ => Err(Error::forbidden(
            "forbidden",
            "This app may not read shared files: its mobius.json must ask for `permissions.shared_memory`.",
        )),
    }
}

fn owner_only(principal: &Principal) -> Result<()> {
    match principal {
        Principal::Owner(_) => Ok(()),
        Principal::App(_) => Err(Error::forbidden("forbidden", "Only the owner can change shared files.")),
    }
}

fn bad_params(_: PathRejection) -> Error {
    Error::bad_request("invalid_path", "The storage path could not be decoded (it must be UTF-8).")
}

// ---- responses ----

fn header(value: &str) -> HeaderValue {
    HeaderValue::from_str(value).unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"))
}

fn read_response(read: Read) -> Response {
    let (status, tag, content_type, body, length) = match read {
        Read::NotModified { tag } => (StatusCode::NOT_MODIFIED, tag, None, Body::empty(), None),
        Read::Inline { tag, content_type, bytes } => (StatusCode::OK, tag, Some(content_type), Body::from(bytes), None),
        Read::Stream { tag, content_type, file, size } => {
            let stream = tokio_util::io::ReaderStream::new(tokio::fs::File::from_std(file));
            (StatusCode::OK, tag, Some(content_type), Body::from_stream(stream), Some(size))
        }
    };
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(ETAG, header(&quoted(&tag)));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("private, no-cache"));
    // Stored bytes are app-controlled: never let a browser run them on this origin.
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox; default-src 'none'"));
    if let Some(content_type) = content_type {
        headers.insert(CONTENT_TYPE, header(&content_type));
    }
    if let Some(size) = length {
        headers.insert(CONTENT_LENGTH, HeaderValue::from(size));
    }
    response
}

fn written(tag: &str) -> Response {
    let mut response = crate::api::no_content();
    response.headers_mut().insert(ETAG, header(&quoted(tag)));
    response
}

// ---- request bodies ----

/// Receives a whole body of at most `limit` bytes.
async fn collect(body: Body, limit: u64) -> Result<Bytes> {
    let mut buf = BytesMut::new();
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| Error::bad_request("body_incomplete", "The request body was cut off."))?;
        if (buf.len() + chunk.len()) as u64 > limit {
            return Err(Error::from(Domain::FileTooLarge));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

/// A recordable `Content-Type`: printable ASCII of sane length, else `None`.
fn clean_type(raw: &str) -> Option<String> {
    let t = raw.trim();
    (t.len() <= 200 && t.contains('/') && t.bytes().all(|b| (0x20..0x7f).contains(&b))).then(|| t.to_owned())
}

/// Turns a PUT body into what gets stored (the four shapes of the contract).
async fn payload(rel: &StoragePath, headers: &HeaderMap, body: Body) -> Result<Payload> {
    let declared = headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(Error::from(Domain::FileTooLarge));
    }
    let raw_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).and_then(clean_type);
    let essence = raw_type.as_deref().and_then(|t| t.split(';').next()).unwrap_or("").trim().to_ascii_lowercase();
    if essence == "application/json" {
        let bytes = collect(body, MAX_BODY_BYTES as u64).await?;
        let invalid = || Error::bad_request("invalid_json", "The body is not valid JSON.");
        if rel.is_json() {
            serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).map_err(|_| invalid())?;
            return Ok(Payload::Bytes { bytes, content_type: "application/json".into() });
        }
        let value: Value = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
        if let Value::Object(map) = &value
            && map.len() == 1
            && let Some(Value::String(text)) = map.get("content")
        {
            return Ok(Payload::Bytes { bytes: Bytes::from(text.clone()), content_type: TEXT_PLAIN.into() });
        }
        // Any other JSON to a non-JSON name is stored as the document it is.
        return Ok(Payload::Bytes { bytes, content_type: "application/json".into() });
    }
    if essence.starts_with("text/") {
        if rel.is_json() {
            return Err(Error::bad_request(
                "invalid_body",
                "A `.json` path takes a JSON document sent as `application/json`, not text.",
            ));
        }
        let bytes = collect(body, MAX_OBJECT_BYTES).await?;
        if std::str::from_utf8(&bytes).is_err() {
            return Err(Error::bad_request("invalid_text", "Text bodies must be UTF-8."));
        }
        let sent = raw_type.unwrap_or_else(|| TEXT_PLAIN.into());
        let content_type =
            if sent.to_ascii_lowercase().contains("charset=") { sent } else { format!("{sent}; charset=utf-8") };
        return Ok(Payload::Bytes { bytes, content_type });
    }
    Ok(Payload::Stream { body, content_type: raw_type.unwrap_or_else(|| "application/octet-stream".into()) })
}

// ---- app trees ----

async fn app_read(
    state: &AppState,
    principal: &Principal,
    id: &str,
    raw: &str,
    headers: &HeaderMap,
) -> Result<Response> {
    let tree = authorize(state, principal, id, Access::Read).await?;
    let rel = StoragePath::parse(raw)?;
    let inm = headers.get(IF_NONE_MATCH).and_then(|v| v.to_str().ok()).map(str::to_owned);
    Ok(read_response(ctx(state, tree).read(rel, inm).await?))
}

async fn app_write(
    state: &AppState,
    principal: &Principal,
    id: &str,
    raw: &str,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response> {
    let tree = authorize(state, principal, id, Access::Write).await?;
    let rel = StoragePath::parse(raw)?;
    let payload = payload(&rel, headers, body).await?;
    let tag = ctx(state, tree).write(rel, payload, Preconditions::from_headers(headers)).await?;
    Ok(written(&tag))
}

async fn app_delete(
    state: &AppState,
    principal: &Principal,
    id: &str,
    raw: &str,
    headers: &HeaderMap,
) -> Result<Response> {
    let tree = authorize(state, principal, id, Access::Write).await?;
    let rel = StoragePath::parse(raw)?;
    ctx(state, tree).delete(rel, Preconditions::from_headers(headers)).await?;
    Ok(crate::api::no_content())
}

type IdAndPath = std::result::Result<Path<(String, String)>, PathRejection>;
type IdOnly = std::result::Result<Path<String>, PathRejection>;

#[tracing::instrument(level = "debug", skip_all)]
async fn read_app(State(s): State<AppState>, p: Principal, path: IdAndPath, h: HeaderMap) -> Result<Response> {
    let Path((id, rel)) = path.map_err(bad_params)?;
    app_read(&s, &p, &id, &rel, &h).await
}

#[tracing::instrument(level = "debug", skip_all)]
async fn write_app(
    State(s): State<AppState>,
    p: Principal,
    path: IdAndPath,
    h: HeaderMap,
    body: Body,
) -> Result<Response> {
    let Path((id, rel)) = path.map_err(bad_params)?;
    app_write(&s, &p, &id, &rel, &h, body).await
}

#[tracing::instrument(level = "debug", skip_all)]
async fn delete_app(State(s): State<AppState>, p: Principal, path: IdAndPath, h: HeaderMap) -> Result<Response> {
    let Path((id, rel)) = path.map_err(bad_params)?;
    app_delete(&s, &p, &id, &rel, &h).await
}

#[tracing::instrument(level = "debug", skip_all)]
async fn read_in_folder(State(s): State<AppState>, p: Principal, path: IdAndPath, h: HeaderMap) -> Result<Response> {
    let Path((id, rel)) = path.map_err(bad_params)?;
    app_read(&s, &p, &id, &format!("folder/{rel}"), &h).await
}

#[tracing::instrument(level = "debug", skip_all)]
async fn write_in_folder(
    State(s): State<AppState>,
    p: Principal,
    path: IdAndPath,
    h: HeaderMap,
    body: Body,
) -> Result<Response> {
    let Path((id, rel)) = path.map_err(bad_params)?;
    app_write(&s, &p, &id, &format!("folder/{rel}"), &h, body).await
}

#[tracing::instrument(level = "debug", skip_all)]
async fn delete_folder(State(s): State<AppState>, p: Principal, path: IdAndPath) -> Result<Response> {
    let Path((id, rel)) = path.map_err(bad_params)?;
    let tree = authorize(&s, &p, &id, Access::Write).await?;
    let rel = StoragePath::parse(&rel)?;
    ctx(&s, tree).delete_folder(rel).await?;
    Ok(crate::api::no_content())
}

#[tracing::instrument(level = "debug", skip_all)]
async fn read_move(State(s): State<AppState>, p: Principal, id: IdOnly, h: HeaderMap) -> Result<Response> {
    let Path(id) = id.map_err(bad_params)?;
    app_read(&s, &p, &id, "move", &h).await
}

#[tracing::instrument(level = "debug", skip_all)]
async fn write_move(State(s): State<AppState>, p: Principal, id: IdOnly, h: HeaderMap, body: Body) -> Result<Response> {
    let Path(id) = id.map_err(bad_params)?;
    app_write(&s, &p, &id, "move", &h, body).await
}

#[tracing::instrument(level = "debug", skip_all)]
async fn delete_move(State(s): State<AppState>, p: Principal, id: IdOnly, h: HeaderMap) -> Result<Response> {
    let Path(id) = id.map_err(bad_params)?;
    app_delete(&s, &p, &id, "move", &h).await
}

/// `POST /storage/apps/{id}/move` body.
#[derive(Debug, Deserialize)]
struct MoveBody {
    from: String,
    to: String,
}

#[tracing::instrument(level = "debug", skip_all)]
async fn move_in_app(
    State(s): State<AppState>,
    p: Principal,
    id: IdOnly,
    ApiJson(body): ApiJson<MoveBody>,
) -> Result<Response> {
    let Path(id) = id.map_err(bad_params)?;
    let tree = authorize(&s, &p, &id, Access::Write).await?;
    let (from, to) = (StoragePath::parse(&body.from)?, StoragePath::parse(&body.to)?);
    ctx(&s, tree).rename(from, to).await?;
    Ok(crate::api::no_content())
}

// ---- listings ----

/// Listing query: `?limit=&cursor=&include_content=`.
#[derive(Debug, Deserialize)]
pub struct ListQuery {
    limit: Option<String>,
    cursor: Option<String>,
    include_content: Option<String>,
}

fn list_options(query: std::result::Result<Query<ListQuery>, QueryRejection>) -> Result<ListOptions> {
    let Query(q) = query.map_err(|_| Error::bad_request("invalid_query", "The listing query is malformed."))?;
    let limit = match q.limit.as_deref().filter(|l| !l.is_empty()) {
        None => LIST_DEFAULT,
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| Error::bad_request("invalid_limit", "`limit` must be a positive whole number."))?
            .min(LIST_MAX),
    };
    let include_content = matches!(q.include_content.as_deref(), Some("1" | "true" | "yes"));
    Ok(ListOptions { limit, cursor: q.cursor.filter(|c| !c.is_empty()), include_content })
}

/// A listing's query as the routes extract it (a malformed one is the listing's own 400).
pub type ListQ = std::result::Result<Query<ListQuery>, QueryRejection>;

#[tracing::instrument(level = "debug", skip_all)]
async fn list_app_root(State(s): State<AppState>, p: Principal, id: IdOnly, q: ListQ) -> Result<Json<Value>> {
    let Path(id) = id.map_err(bad_params)?;
    list_app_at(&s, &p, &id, "", q).await
}

#[tracing::instrument(level = "debug", skip_all)]
async fn list_app(State(s): State<AppState>, p: Principal, path: IdAndPath, q: ListQ) -> Result<Json<Value>> {
    let Path((id, prefix)) = path.map_err(bad_params)?;
    list_app_at(&s, &p, &id, &prefix, q).await
}

async fn list_app_at(state: &AppState, principal: &Principal, id: &str, prefix: &str, q: ListQ) -> Result<Json<Value>> {
    let tree = authorize(state, principal, id, Access::Read).await?;
    let options = list_options(q)?;
    let prefix = StoragePath::parse_prefix(prefix)?;
    let page = ctx(state, tree).list(prefix, options).await?;
    Ok(Json(serde_json::to_value(page).map_err(|e| Error::Internal(format!("listing encoding: {e}")))?))
}

// ---- the shared tree ----

#[tracing::instrument(level = "debug", skip_all)]
async fn read_shared(
    State(s): State<AppState>,
    p: Principal,
    path: std::result::Result<Path<String>, PathRejection>,
    h: HeaderMap,
) -> Result<Response> {
    may_read_shared(&p)?;
    let Path(raw) = path.map_err(bad_params)?;
    let rel = StoragePath::parse(&raw)?;
    let inm = h.get(IF_NONE_MATCH).and_then(|v| v.to_str().ok()).map(str::to_owned);
    Ok(read_response(ctx(&s, Tree::Shared).read(rel, inm).await?))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn write_shared(
    State(s): State<AppState>,
    p: Principal,
    path: std::result::Result<Path<String>, PathRejection>,
    h: HeaderMap,
    body: Body,
) -> Result<Response> {
    owner_only(&p)?;
    let Path(raw) = path.map_err(bad_params)?;
    let rel = StoragePath::parse(&raw)?;
    let payload = payload(&rel, &h, body).await?;
    let tag = ctx(&s, Tree::Shared).write(rel, payload, Preconditions::from_headers(&h)).await?;
    Ok(written(&tag))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn delete_shared(
    State(s): State<AppState>,
    p: Principal,
    path: std::result::Result<Path<String>, PathRejection>,
    h: HeaderMap,
) -> Result<Response> {
    owner_only(&p)?;
    let Path(raw) = path.map_err(bad_params)?;
    let rel = StoragePath::parse(&raw)?;
    ctx(&s, Tree::Shared).delete(rel, Preconditions::from_headers(&h)).await?;
    Ok(crate::api::no_content())
}

#[tracing::instrument(level = "debug", skip_all)]
async fn list_shared_root(State(s): State<AppState>, p: Principal, q: ListQ) -> Result<Json<Value>> {
    may_read_shared(&p)?;
    list_shared_at(&s, "", q).await
}

#[tracing::instrument(level = "debug", skip_all)]
async fn list_shared(
    State(s): State<AppState>,
    p: Principal,
    path: std::result::Result<Path<String>, PathRejection>,
    q: ListQ,
) -> Result<Json<Value>> {
    may_read_shared(&p)?;
    let Path(prefix) = path.map_err(bad_params)?;
    list_shared_at(&s, &prefix, q).await
}

async fn list_shared_at(state: &AppState, prefix: &str, q: ListQ) -> Result<Json<Value>> {
    let options = list_options(q)?;
    let prefix = StoragePath::parse_prefix(prefix)?;
    let page = ctx(state, Tree::Shared).list(prefix, options).await?;
    Ok(Json(serde_json::to_value(page).map_err(|e| Error::Internal(format!("listing encoding: {e}")))?))
}

// ---- published pages ----

/// Where a published page's data route (`/sites/<token>/data/…`) reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteData {
    /// The copy made when it was published (`published/<generation>/`).
    Snapshot(i64),
    /// App `id`'s own tree as it is now, read only.
    Live(i64),
}

impl SiteData {
    fn tree(self) -> Tree {
        match self {
            SiteData::Snapshot(generation) => Tree::Published(generation),
            SiteData::Live(id) => Tree::App(id),
        }
    }
}

/// A published page's read of the file `raw` (the route has no other method).
pub async fn read_site(state: &AppState, data: SiteData, raw: &str, headers: &HeaderMap) -> Result<Response> {
    let rel = StoragePath::parse(raw)?;
    let inm = headers.get(IF_NONE_MATCH).and_then(|v| v.to_str().ok()).map(str::to_owned);
    Ok(read_response(ctx(state, data.tree()).read(rel, inm).await?))
}

/// A published page's listing of the folder `prefix` (`""`: the root).
pub async fn list_site(state: &AppState, data: SiteData, prefix: &str, q: ListQ) -> Result<Json<Value>> {
    let options = list_options(q)?;
    let prefix = StoragePath::parse_prefix(prefix)?;
    let page = ctx(state, data.tree()).list(prefix, options).await?;
    Ok(Json(serde_json::to_value(page).map_err(|e| Error::Internal(format!("listing encoding: {e}")))?))
}
