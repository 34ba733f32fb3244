//! Chat logs for apps, `/api/chat-logs[/{chat_id}]`: the owner's chats as an app granted
//! `permissions.chat_log_access` may read them. The tiers: `none` (the default) → 403;
//! `summary` → live chats: titles, dates, and each shown message's role, time and text —
//! structurally redacted: no tool calls or outputs, no thinking, no attachments, no hidden or
//! agent-only text, and secret-looking words replaced; `summary_with_deleted` → also chats in
//! the bin (tombstoned, until their purge). The owner reads at the widest tier. Bounded: a page
//! of chats, the newest [`MAX_MESSAGES`] messages of a chat, [`MAX_TEXT_BYTES`] of each.

use axum::extract::{Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::apps::app_manifest::Permissions;
use crate::auth::Principal;
use crate::error::{Domain, Error, Result};
use crate::protocol::{Block, Message};
use crate::redact::redact_words;
use crate::state::AppState;

/// Most chats one list page holds.
const MAX_PAGE: i64 = 200;
const DEFAULT_PAGE: i64 = 50;
/// Newest messages of a chat a log returns.
pub const MAX_MESSAGES: i64 = 500;
/// Longest message text a log returns, in bytes (cut at a character boundary).
pub const MAX_TEXT_BYTES: usize = 16 * 1024;

/// The chat-log routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new().route("/chat-logs", get(list)).route("/chat-logs/{chat_id}", get(detail))
}

/// Whether the caller may see deleted chats; 403 for an app without the grant.
fn tier(who: &Principal) -> Result<bool> {
    match who {
        Principal::Owner(_) => Ok(true),
        Principal::App(app) => match Permissions::level(&app.permissions.chat_log_access) {
            "summary" => Ok(false),
            "summary_with_deleted" => Ok(true),
            _ => Err(Error::forbidden(
                "chat_log_access_denied",
                "This app may not read chat logs: its manifest asks for no permissions.chat_log_access.",
            )),
        },
    }
}

#[derive(Deserialize)]
struct ListQuery {
    limit: Option<i64>,
    /// `updated_at` (ms) of the last chat of the previous page.
    before: Option<i64>,
}

/// `GET ?limit=&before=` → `{chats:[{id, title, created_at, updated_at, deleted_at, message_count}], next_before}`.
#[tracing::instrument(level = "debug", skip_all)]
async fn list(
    State(state): State<AppState>,
    who: Principal,
    query: std::result::Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>> {
    let with_deleted = tier(&who)?;
    let Ok(Query(query)) = query else {
        return Err(Error::bad_request("invalid_query", "limit and before are integers."));
    };
    let limit = query.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE);
    let rows: Vec<(String, String, i64, i64, Option<i64>, i64)> = sqlx::query_as(
        "SELECT id, title, created_at, updated_at, deleted_at, message_count FROM chats \
         WHERE owner_visible = 1 AND (?1 OR deleted_at IS NULL) AND (?2 IS NULL OR updated_at < ?2) \
         ORDER BY updated_at DESC LIMIT ?3",
    )
    .bind(with_deleted)
    .bind(query.before)
    .bind(limit)
    .fetch_all(&state.db.read)
    .await?;
    let next_before = if rows.len() as i64 == limit { rows.last().map(|r| r.3) } else { None };
    let iso = crate::chats::apps::iso;
    let chats: Vec<Value> = rows
        .into_iter()
        .map(|(id, title, created, updated, deleted, count)| {
            json!({
                "id": id,
                "title": redact_words(&title),
                "created_at": iso(created),
                "updated_at": iso(updated),
                "deleted_at": deleted.map(iso),
                "message_count": count,
            })
        })
        .collect();
    Ok(Json(json!({ "chats": chats, "next_before": next_before })))
}

/// `GET` → `{id, title, created_at, updated_at, deleted_at, truncated, messages:[{role, ts, text}]}`.
#[tracing::instrument(level = "debug", skip_all)]
async fn detail(State(state): State<AppState>, who: Principal, Path(chat_id): Path<String>) -> Result<Json<Value>> {
    let with_deleted = tier(&who)?;
    let chat: Option<(String, i64, i64, Option<i64>, i64)> = sqlx::query_as(
        "SELECT title, created_at, updated_at, deleted_at, message_count FROM chats \
         WHERE id = ?1 AND owner_visible = 1 AND (?2 OR deleted_at IS NULL)",
    )
    .bind(&chat_id)
    .bind(with_deleted)
    .fetch_optional(&state.db.read)
    .await?;
    let Some((title, created, updated, deleted, count)) = chat else {
        return Err(Domain::ChatNotFound.into());
    };
    let bodies: Vec<String> =
        sqlx::query_scalar("SELECT body FROM chat_messages WHERE chat_id = ? ORDER BY idx DESC LIMIT ?")
            .bind(&chat_id)
            .bind(MAX_MESSAGES)
            .fetch_all(&state.db.read)
            .await?;
    let messages: Vec<Value> = bodies
        .iter()
        .rev()
        .filter_map(|body| serde_json::from_str::<Message>(body).ok())
        .filter(|m| !m.hidden)
        .filter_map(|m| {
            let text = shown_text(&m);
            (!text.trim().is_empty()).then(|| json!({ "role": m.role, "ts": m.ts, "text": redact_words(&cut(&text)) }))
        })
        .collect();
    let iso = crate::chats::apps::iso;
    Ok(Json(json!({
        "id": chat_id,
        "title": redact_words(&title),
        "created_at": iso(created),
        "updated_at": iso(updated),
        "deleted_at": deleted.map(iso),
        "truncated": count > MAX_MESSAGES,
        "messages": messages,
    })))
}

/// What the owner saw of a message as prose: its text, or an assistant's text blocks — never
/// tool calls, their outputs, thinking, question cards or attachments.
fn shown_text(m: &Message) -> String {
    if !m.content.trim().is_empty() {
        return m.content.clone();
    }
    let texts: Vec<&str> = m
        .blocks
        .iter()
        .flatten()
        .filter_map(|b| match b {
            Block::Text { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n\n")
}

fn cut(text: &str) -> String {
    if text.len() <= MAX_TEXT_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
