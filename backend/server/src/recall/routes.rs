//! Owner routes of memory: a chat's note (`GET`/`PUT /api/chats/{id}/note`), and the memory
//! of new chats (`GET`/`PATCH /api/memory`, `PUT /api/memory/owner`: the owner's memory file).

use axum::extract::{Path, State};
use axum::routing::{get, put};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::{MAX_DIGEST_CHARS, MAX_OWNER_MEMORY_BYTES, MAX_SUMMARY_CHARS};
use crate::api::ApiJson;
use crate::auth::Owner;
use crate::db;
use crate::error::{Domain, Error, Result};
use crate::protocol::ChatId;
use crate::state::AppState;
use crate::writer::{NoteWrite, WriteCommand};

/// The memory routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/chats/{id}/note", get(note).put(put_note))
        .route("/memory", get(memory).patch(patch_memory))
        .route("/memory/owner", put(put_owner_memory))
}

#[derive(Serialize)]
struct NoteOut {
    /// `null` until the chat has a note.
    note: Option<db::notes::Note>,
    max_digest_chars: usize,
    max_summary_chars: usize,
}

async fn live_chat(state: &AppState, id: &str) -> Result<ChatId> {
    let id = ChatId::parse(id).ok_or(Domain::ChatNotFound)?;
    match db::chats::get(&state.db.read, &id).await? {
        Some(chat) if chat.deleted_at.is_none() => Ok(id),
        _ => Err(Domain::ChatNotFound.into()),
    }
}

async fn note_out(state: &AppState, id: &ChatId) -> Result<Json<NoteOut>> {
    Ok(Json(NoteOut {
        note: db::notes::get(&state.db.read, id).await?,
        max_digest_chars: MAX_DIGEST_CHARS,
        max_summary_chars: MAX_SUMMARY_CHARS,
    }))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn note(State(state): State<AppState>, _owner: Owner, Path(id): Path<String>) -> Result<Json<NoteOut>> {
    let id = live_chat(&state, &id).await?;
    note_out(&state, &id).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoteIn {
    digest: String,
    summary: String,
}

/// The owner's own note: kept as written (the next note turn builds on it).
#[tracing::instrument(level = "debug", skip_all)]
async fn put_note(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<NoteIn>,
) -> Result<Json<NoteOut>> {
    let id = live_chat(&state, &id).await?;
    if body.digest.chars().count() > MAX_DIGEST_CHARS {
        return Err(Error::too_large(
            "digest_too_long",
            format!("A digest holds at most {MAX_DIGEST_CHARS} characters."),
        ));
    }
    if body.summary.chars().count() > MAX_SUMMARY_CHARS {
        return Err(Error::too_large(
            "summary_too_long",
            format!("A summary holds at most {MAX_SUMMARY_CHARS} characters."),
        ));
    }
    let note = NoteWrite {
        digest: body.digest.trim().to_owned(),
        summary: body.summary.trim().to_owned(),
        title: None,
        expect_count: None,
    };
    state.writer.call(|ack| WriteCommand::SetNote { chat_id: id.clone(), note, ack }).await?;
    note_out(&state, &id).await
}

#[derive(Serialize)]
struct MemoryOut {
    /// New chats start with recent digests and the owner's memory file.
    enabled: bool,
    /// The owner's memory file (`DATA_DIR/memory/owner.md`), which the agent may edit too.
    owner_md: String,
    /// The file is longer than [`MAX_OWNER_MEMORY_BYTES`]: `owner_md` is its beginning.
    truncated: bool,
    max_bytes: usize,
}

async fn memory_out(state: &AppState) -> Result<Json<MemoryOut>> {
    let (owner_md, truncated) = super::read_owner_memory(&state.config.data_dir).await?;
    Ok(Json(MemoryOut {
        enabled: db::notes::memory_enabled(&state.db.read).await?,
        owner_md,
        truncated,
        max_bytes: MAX_OWNER_MEMORY_BYTES,
    }))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn memory(State(state): State<AppState>, _owner: Owner) -> Result<Json<MemoryOut>> {
    memory_out(&state).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemoryPatch {
    enabled: bool,
}

#[tracing::instrument(level = "debug", skip_all)]
async fn patch_memory(
    State(state): State<AppState>,
    _owner: Owner,
    ApiJson(body): ApiJson<MemoryPatch>,
) -> Result<Json<MemoryOut>> {
    state.writer.call(|ack| WriteCommand::SetMemoryEnabled { on: body.enabled, ack }).await?;
    memory_out(&state).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OwnerMemoryIn {
    content: String,
}

#[tracing::instrument(level = "debug", skip_all)]
async fn put_owner_memory(
    State(state): State<AppState>,
    _owner: Owner,
    ApiJson(body): ApiJson<OwnerMemoryIn>,
) -> Result<Json<MemoryOut>> {
    if body.content.len() > MAX_OWNER_MEMORY_BYTES {
        return Err(Error::too_large(
            "memory_too_large",
            format!("The memory file holds at most {} KiB.", MAX_OWNER_MEMORY_BYTES / 1024),
        ));
    }
    super::write_owner_memory(&state.config.data_dir, &body.content).await?;
    memory_out(&state).await
}
