//! `/api/chats/{id}/uploads…`, `/media…` and `/media-token`: attach files to a chat (multipart,
//! streamed to disk), list and remove them, publish the agent's images, and serve both with a
//! short-lived media token that only opens that chat's files; and what the agent made in the
//! chat's workspace (`/workspace…`), listed and downloaded the same way.

use axum::body::Body;
use axum::extract::multipart::{Multipart, MultipartError, MultipartRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::json;

use super::media::{media_url, raster_of, too_large};
use super::names;
use super::sniff::{self, Raster, SNIFF_BYTES, Sniffed};
use super::{FileInfo, Kind, MAX_FILES_PER_MESSAGE, Staged, Uploads};
use crate::auth::{Claims, Scope, bearer_of, verify_owner_token};
use crate::chats::access::{ChatCaller, EMBED_INSTANCE_HEADER, Op, verify_embed};
use crate::db;
use crate::error::{Domain, Error, Result};
use crate::protocol::ChatId;
use crate::state::AppState;

/// Media tokens live this long.
pub const MEDIA_TOKEN_TTL_SECS: i64 = 15 * 60;
/// A form field that is not a file (ignored) may hold at most this much.
const MAX_OTHER_FIELD_BYTES: usize = 64 * 1024;
/// Form fields that are not files, at most, per request.
const MAX_OTHER_FIELDS: usize = 16;

/// The routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/chats/{id}/uploads", post(upload).get(list).layer(DefaultBodyLimit::disable()))
        .route("/chats/{id}/uploads/{name}", get(serve_upload).delete(remove))
        .route("/chats/{id}/media", post(publish))
        .route("/chats/{id}/media/{name}", get(serve_media))
        .route("/chats/{id}/media-token", post(media_token))
        .route("/chats/{id}/workspace", get(workspace_list))
        .route("/chats/{id}/workspace/{*path}", get(workspace_file))
}

fn checked_id(id: &str) -> Result<ChatId> {
    ChatId::parse(id).ok_or_else(|| Domain::ChatNotFound.into())
}

/// The chat exists and is not deleted.
async fn live_chat(state: &AppState, id: &ChatId) -> Result<()> {
    match db::chats::get(&state.db.read, id).await? {
        Some(chat) if chat.deleted_at.is_none() => Ok(()),
        _ => Err(Domain::ChatNotFound.into()),
    }
}

fn multipart_error(e: &MultipartError) -> Error {
    match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => Error::too_large("body_too_large", "The upload is too large."),
        _ => Error::bad_request("invalid_multipart", format!("The upload could not be read: {}", e.body_text())),
    }
}

/// Files stored by a request that has not finished: removed unless it succeeds, also when the
/// request is dropped half-way (the client went away).
struct Undo<'a> {
    uploads: &'a std::sync::Arc<Uploads>,
    chat_id: String,
    names: Vec<String>,
}

impl Undo<'_> {
    /// Removes the stored files now (a request that failed answers after its files are gone).
    async fn now(&mut self) {
        for name in std::mem::take(&mut self.names) {
            if let Err(e) = self.uploads.remove(&self.chat_id, Kind::Upload, &name).await {
                tracing::warn!(error = %e, "a failed upload's file could not be removed");
            }
        }
    }
}

impl Drop for Undo<'_> {
    fn drop(&mut self) {
        if self.names.is_empty() {
            return;
        }
        let (uploads, chat_id, names) = (self.uploads.clone(), self.chat_id.clone(), std::mem::take(&mut self.names));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                for name in names {
                    let _ = uploads.remove(&chat_id, Kind::Upload, &name).await;
                }
            });
        }
    }
}

#[tracing::instrument(level = "debug", skip_all)]
async fn upload(
    State(state): State<AppState>,
    who: ChatCaller,
    Path(id): Path<String>,
    multipart: std::result::Result<Multipart, MultipartRejection>,
) -> Result<Json<Vec<FileInfo>>> {
    let id = checked_id(&id)?;
    if matches!(who, ChatCaller::App(_)) {
        return Err(Error::forbidden("wrong_scope", "Apps cannot attach files to a chat."));
    }
    who.allow(&state, &id, Op::Uploads).await?;
    live_chat(&state, &id).await?;
    let multipart = multipart.map_err(|e| {
        Error::bad_request("invalid_multipart", format!("Send the files as multipart/form-data: {}", e.body_text()))
    })?;
    let mut undo = Undo { uploads: &state.uploads, chat_id: id.to_string(), names: Vec::new() };
    match receive(&state, &id, multipart, &mut undo).await {
        Ok(stored) => {
            undo.names.clear();
            Ok(Json(stored))
        }
        Err(e) => {
            undo.now().await;
            Err(e)
        }
    }
}

/// Streams each file of the form to disk and stores it; what it stored is in `undo`.
async fn receive(
    state: &AppState,
    id: &ChatId,
    mut multipart: Multipart,
    undo: &mut Undo<'_>,
) -> Result<Vec<FileInfo>> {
    let uploads = &state.uploads;
    let stored_before = db::uploads::total_size(&state.db.read).await?;
    let mut stored = Vec::new();
    let mut others = 0;
    while let Some(mut field) = multipart.next_field().await.map_err(|e| multipart_error(&e))? {
        let Some(client_name) = field.file_name().map(str::to_owned) else {
            // Not a file: read and ignore it, within bounds.
            others += 1;
            if others > MAX_OTHER_FIELDS {
                return Err(Error::bad_request("invalid_multipart", "Send only files (field `files`)."));
            }
            let mut seen = 0;
            while let Some(chunk) = field.chunk().await.map_err(|e| multipart_error(&e))? {
                seen += chunk.len();
                if seen > MAX_OTHER_FIELD_BYTES {
                    return Err(Error::bad_request("invalid_multipart", "Send only files (field `files`)."));
                }
            }
            continue;
        };
        if !matches!(field.name(), Some("files" | "file")) {
            return Err(Error::bad_request("invalid_multipart", "Files go in the field `files`."));
        }
        if stored.len() >= MAX_FILES_PER_MESSAGE {
            return Err(Error::bad_request(
                "too_many_files",
                format!("At most {MAX_FILES_PER_MESSAGE} files go with one message."),
            ));
        }
        names::safe_name(&client_name, None).map_err(|bad| Error::bad_request("invalid_file_name", bad.message()))?;
        let mut staged = uploads.stage().await?;
        let mut verdict = None;
        while let Some(chunk) = field.chunk().await.map_err(|e| multipart_error(&e))? {
            check_room(uploads, &staged, chunk.len(), stored_before, &client_name)?;
            staged.write(&chunk).await?;
            if verdict.is_none() && staged.head.len() >= SNIFF_BYTES {
                verdict = Some(refuse_early(sniff::sniff(&staged.head, &client_name))?);
            }
        }
        if staged.size == 0 {
            return Err(Error::bad_request("empty_file", format!("{client_name} is empty.")));
        }
        let verdict = match verdict {
            Some(v) => v,
            None => refuse_early(sniff::sniff(&staged.head, &client_name))?,
        };
        let (mime, raster) = match verdict {
            Sniffed::Image(raster) => (raster.mime(), Some(raster)),
            Sniffed::File(mime) => (mime, None),
            Sniffed::Refused(_) => return Err(Error::Internal("a refused file reached storage".into())),
        };
        let row = uploads.store(id, Kind::Upload, staged, &client_name, mime, raster).await?;
        undo.names.push(row.name.clone());
        stored.push(uploads.info(&row));
    }
    if stored.is_empty() {
        return Err(Error::bad_request("no_files", "Attach at least one file (the form field `files`)."));
    }
    Ok(stored)
}

/// 415 for a refused type, else the verdict.
fn refuse_early(verdict: Sniffed) -> Result<Sniffed> {
    match verdict {
        Sniffed::Refused(why) => Err(Domain::UnsupportedType(why).into()),
        other => Ok(other),
    }
}

/// 413 when `more` bytes would pass the file limit or the quota.
fn check_room(uploads: &Uploads, staged: &Staged, more: usize, stored: u64, name: &str) -> Result<()> {
    let more = more as u64;
    if staged.size + more > uploads.max_file_bytes {
        return Err(too_large(name, uploads.max_file_bytes));
    }
    if stored + uploads.in_flight() + more > uploads.quota_bytes {
        return Err(Domain::UploadQuotaExceeded.into());
    }
    Ok(())
}

#[tracing::instrument(level = "debug", skip_all)]
async fn list(State(state): State<AppState>, who: ChatCaller, Path(id): Path<String>) -> Result<Json<Vec<FileInfo>>> {
    let id = checked_id(&id)?;
    if matches!(who, ChatCaller::App(_)) {
        return Err(Error::forbidden("wrong_scope", "Apps cannot read a chat's files."));
    }
    who.allow(&state, &id, Op::Uploads).await?;
    live_chat(&state, &id).await?;
    let rows = state.uploads.list(&id, Kind::Upload).await?;
    Ok(Json(rows.iter().map(|r| state.uploads.info(r)).collect()))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn remove(
    State(state): State<AppState>,
    who: ChatCaller,
    Path((id, name)): Path<(String, String)>,
) -> Result<Response> {
    let id = checked_id(&id)?;
    if matches!(who, ChatCaller::App(_)) {
        return Err(Error::forbidden("wrong_scope", "Apps cannot remove a chat's files."));
    }
    who.allow(&state, &id, Op::Uploads).await?;
    if names::is_stored_name(&name) {
        state.uploads.remove(&id, Kind::Upload, &name).await?;
    }
    Ok(crate::api::no_content())
}

#[derive(Deserialize)]
struct FileQuery {
    token: Option<String>,
    preview: Option<String>,
}

/// Who may load a chat's files: a media token for this chat (in the query or the header),
/// the owner's token in the header, or an embedded chat's session granted `chat:media`.
async fn file_access(state: &AppState, headers: &HeaderMap, query_token: Option<&str>, chat_id: &str) -> Result<()> {
    if let Some(token) = query_token {
        let claims = state.keys.verify(token)?;
        if claims.scope != Scope::Media {
            return Err(Error::forbidden(
                "wrong_scope",
                "Only a media token may go in a URL; get one from POST /api/chats/{id}/media-token.",
            ));
        }
        return check_media_token(state, &claims, chat_id).await;
    }
    let Some(token) = bearer_of(headers) else {
        return Err(Error::unauthorized("missing_token", "Loading a chat's files needs a media token (?token=)."));
    };
    let claims = state.keys.verify(token)?;
    match claims.scope {
        Scope::Media => check_media_token(state, &claims, chat_id).await,
        Scope::ChatEmbed => {
            let header = headers.get(EMBED_INSTANCE_HEADER).and_then(|v| v.to_str().ok());
            let session = verify_embed(state, &claims, header).await?;
            ChatCaller::Embed(session).allow(state, chat_id, Op::Media).await
        }
        Scope::App => Err(Error::forbidden("wrong_scope", "Apps cannot read a chat's files.")),
        Scope::Owner | Scope::Agent => {
            let claims = verify_owner_token(state, token).await?;
            if claims.scope == Scope::Agent && claims.chat_id.as_deref() != Some(chat_id) {
                return Err(Error::forbidden("agent_not_allowed", "The agent's token opens only its own chat."));
            }
            Ok(())
        }
    }
}

/// A media token opens only its own chat, only while the owner's sessions stand (and, for an
/// embedded chat's, while its session is live).
async fn check_media_token(state: &AppState, claims: &Claims, chat_id: &str) -> Result<()> {
    let Some((username, epoch)) = state.owner.get() else {
        return Err(Error::unauthorized("invalid_token", "No owner account exists."));
    };
    if claims.sub != username || claims.epoch != epoch {
        return Err(Error::unauthorized("token_revoked", "This media token was signed out; get a new one."));
    }
    if claims.chat_id.as_deref() != Some(chat_id) {
        return Err(Error::forbidden("media_token_wrong_chat", "This media token belongs to another chat."));
    }
    if let Some(session) = claims.embed_session.as_deref() {
        let live = db::embeds::grant(&state.db.read, session).await?.is_some_and(|g| {
            g.revoked_at.is_none() && g.session_expires_at.is_some_and(|t| t > db::now_ms()) && g.chat_id == chat_id
        });
        if !live {
            return Err(Error::unauthorized("token_revoked", "The embedded chat's session has ended."));
        }
    }
    Ok(())
}

#[tracing::instrument(level = "debug", skip_all)]
async fn serve_upload(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((id, name)): Path<(String, String)>,
    Query(q): Query<FileQuery>,
) -> Result<Response> {
    serve(&state, &headers, &id, Kind::Upload, &name, &q).await
}

#[tracing::instrument(level = "debug", skip_all)]
async fn serve_media(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((id, name)): Path<(String, String)>,
    Query(q): Query<FileQuery>,
) -> Result<Response> {
    serve(&state, &headers, &id, Kind::Media, &name, &q).await
}

async fn serve(
    state: &AppState,
    headers: &HeaderMap,
    id: &str,
    kind: Kind,
    name: &str,
    q: &FileQuery,
) -> Result<Response> {
    let id = checked_id(id)?;
    file_access(state, headers, q.token.as_deref(), &id).await?;
    let not_found = || match kind {
        Kind::Upload => Error::not_found("file_not_found", "This chat has no file of that name."),
        Kind::Media => Error::not_found("file_not_found", "Image not found."),
    };
    // A name the server could not have chosen (`..`, a slash, …) names nothing.
    if !names::is_stored_name(name) {
        return Err(not_found());
    }
    live_chat(state, &id).await?;
    let row = state.uploads.get(&id, kind, name).await?.ok_or_else(not_found)?;
    let preview = row.preview && q.preview.as_deref().is_some_and(|p| p == "true" || p == "1");
    let (path, mime) = if preview {
        (state.uploads.preview_path(&id, kind, name), "image/jpeg")
    } else {
        (state.uploads.path(&id, kind, name), row.mime_type.as_str())
    };
    let etag = format!("\"{}-{}{}\"", row.created_at, row.size, if preview { "-p" } else { "" });
    if headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) == Some(etag.as_str()) {
        let mut response = StatusCode::NOT_MODIFIED.into_response();
        response
            .headers_mut()
            .insert(header::ETAG, HeaderValue::from_str(&etag).map_err(|e| Error::Internal(e.to_string()))?);
        return Ok(response);
    }
    let file = tokio::fs::File::open(&path).await.map_err(|_| not_found())?;
    let length = file.metadata().await?.len();
    let body = Body::from_stream(tokio_util::io::ReaderStream::new(file));
    let mut response = body.into_response();
    let h = response.headers_mut();
    let inline = Raster::of_mime(mime).is_some();
    let served_mime = if inline || mime.starts_with("text/") { mime } else { "application/octet-stream" };
    h.insert(header::CONTENT_TYPE, HeaderValue::from_str(served_mime).map_err(|e| Error::Internal(e.to_string()))?);
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    h.insert(header::ETAG, HeaderValue::from_str(&etag).map_err(|e| Error::Internal(e.to_string()))?);
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-cache"));
    // Nothing served from here ever runs: not an SVG, not an HTML file.
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("default-src 'none'; sandbox"));
    if !inline {
        let disposition = format!("attachment; filename=\"{name}\"");
        h.insert(
            header::CONTENT_DISPOSITION,
            HeaderValue::from_str(&disposition).map_err(|e| Error::Internal(e.to_string()))?,
        );
    }
    Ok(response)
}

/// `GET /api/chats/{id}/workspace`: the files the agent made in the chat's workspace, newest
/// first (the owner and the chat's own agent).
#[tracing::instrument(level = "debug", skip_all)]
async fn workspace_list(
    State(state): State<AppState>,
    who: ChatCaller,
    Path(id): Path<String>,
) -> Result<Json<super::workspace::WorkspaceList>> {
    let id = checked_id(&id)?;
    match &who {
        ChatCaller::Owner(claims) if claims.scope != Scope::Agent || claims.chat_id.as_deref() == Some(id.as_str()) => {
        }
        _ => return Err(Error::forbidden("wrong_scope", "Only the owner and the chat's agent see its workspace.")),
    }
    live_chat(&state, &id).await?;
    let data_dir = state.config.data_dir.clone();
    let listed = tokio::task::spawn_blocking(move || super::workspace::list(&data_dir, id.as_str()))
        .await
        .map_err(|e| Error::Internal(e.to_string()))??;
    Ok(Json(listed))
}

/// `GET /api/chats/{id}/workspace/{path}`: one file of the workspace, as a download. The same
/// credentials as the chat's files (a media token in the query, or the bearer header).
#[tracing::instrument(level = "debug", skip_all)]
async fn workspace_file(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((id, path)): Path<(String, String)>,
    Query(q): Query<FileQuery>,
) -> Result<Response> {
    let id = checked_id(&id)?;
    file_access(&state, &headers, q.token.as_deref(), &id).await?;
    live_chat(&state, &id).await?;
    let not_found = || Error::not_found("file_not_found", "The workspace has no file at that path.");
    let data_dir = state.config.data_dir.clone();
    let (chat, rel) = (id.as_str().to_owned(), std::path::PathBuf::from(&path));
    let (file, meta) = tokio::task::spawn_blocking(move || super::workspace::open(&data_dir, &chat, &rel))
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
        .map_err(|_| not_found())?;
    let name = path.rsplit('/').next().unwrap_or("file");
    let body = Body::from_stream(tokio_util::io::ReaderStream::new(tokio::fs::File::from_std(file)));
    let mut response = body.into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(meta.len()));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("default-src 'none'; sandbox"));
    h.insert(header::CONTENT_DISPOSITION, attachment(name)?);
    Ok(response)
}

/// `attachment; filename="…"; filename*=UTF-8''…` for any name (quotes and non-ASCII escaped).
fn attachment(name: &str) -> Result<HeaderValue> {
    let ascii: String = name
        .chars()
        .map(|c| if (c.is_ascii_graphic() && c != '"' && c != '\\') || c == ' ' { c } else { '_' })
        .collect();
    let encoded: String = name
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    HeaderValue::from_str(&format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}"))
        .map_err(|e| Error::Internal(e.to_string()))
}

#[derive(Deserialize)]
struct PublishQuery {
    name: Option<String>,
    alt: Option<String>,
}

/// `POST /api/chats/{id}/media?name=&alt=`: the body is an image the agent shows in its chat
/// (what `mobius media publish` sends). Answers its URL and the Markdown to put in a reply.
#[tracing::instrument(level = "debug", skip_all)]
async fn publish(
    State(state): State<AppState>,
    who: ChatCaller,
    Path(id): Path<String>,
    Query(q): Query<PublishQuery>,
    body: Body,
) -> Result<Response> {
    let id = checked_id(&id)?;
    if !who.is_owner() {
        return Err(Error::forbidden("wrong_scope", "Only the owner and the chat's agent publish images."));
    }
    live_chat(&state, &id).await?;
    let uploads = &state.uploads;
    let stored_before = db::uploads::total_size(&state.db.read).await?;
    let name = q.name.as_deref().filter(|n| !n.is_empty()).unwrap_or("image");
    let mut staged = uploads.stage_hashed().await?;
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| Error::bad_request("invalid_body", "The image did not arrive whole."))?;
        check_room(uploads, &staged, chunk.len(), stored_before, name)?;
        staged.write(&chunk).await?;
    }
    if staged.size == 0 {
        return Err(Error::bad_request("empty_file", "The image is empty."));
    }
    let raster = raster_of(&staged.head)?;
    let stored_name = super::media::media_name(name, &staged.sha256());
    let row = uploads.store(&id, Kind::Media, staged, &stored_name, raster.mime(), Some(raster)).await?;
    let url = media_url(&id, &row.name);
    let alt = q.alt.as_deref().unwrap_or("image").replace(['[', ']', '\n'], " ");
    let body = json!({
        "media_path": state.uploads.path(&id, Kind::Media, &row.name).display().to_string(),
        "media_url": url,
        "embed": format!("![{alt}]({url})"),
        "width": row.width,
        "height": row.height,
    });
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// `POST /api/chats/{id}/media-token`: `{token, expires_in}` for image and file URLs of this
/// chat. The owner gets a media token; an embedded chat's session one chained to it.
#[tracing::instrument(level = "debug", skip_all)]
async fn media_token(
    State(state): State<AppState>,
    who: ChatCaller,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>> {
    let id = checked_id(&id)?;
    let Some((username, epoch)) = state.owner.get() else {
        return Err(Error::unauthorized("invalid_token", "No owner account exists."));
    };
    let mut claims = Claims::new(&username, Scope::Media, epoch, MEDIA_TOKEN_TTL_SECS);
    claims.chat_id = Some(id.to_string());
    match &who {
        ChatCaller::Owner(_) => {}
        ChatCaller::App(_) => return Err(Error::forbidden("wrong_scope", "Apps cannot load a chat's files.")),
        ChatCaller::Embed(session) => {
            who.allow(&state, &id, Op::Media).await?;
            claims.app_id = Some(session.app_id);
            claims.embed_session = Some(session.session.clone());
        }
    }
    live_chat(&state, &id).await?;
    let token = state.keys.issue(&claims)?;
    Ok(Json(json!({ "token": token, "expires_in": MEDIA_TOKEN_TTL_SECS })))
}
