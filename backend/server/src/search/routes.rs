//! `GET /api/chats/search?q=&limit=&cursor=` (owner only).

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::{MAX_QUERY_CHARS, fts_query};
use crate::auth::Owner;
use crate::db;
use crate::error::{Error, Result};
use crate::state::AppState;

/// Hits per page unless asked.
const DEFAULT_HITS: i64 = 20;
/// Most hits per page.
const MAX_HITS: i64 = 50;

/// The search route (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new().route("/chats/search", get(search))
}

#[derive(Deserialize)]
struct SearchIn {
    q: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

/// One matching title or message.
#[derive(Serialize)]
struct SearchHit {
    chat_id: String,
    /// The chat's current title.
    title: String,
    /// The message's index in the transcript; `null` when the title matched.
    message_idx: Option<i64>,
    /// When the message was sent (for a title: the chat's last activity), unix milliseconds.
    ts: i64,
    /// The matching text around the matches, each match between U+0002 and U+0003, `…` where
    /// the text was cut. Plain text: render it as text, never as HTML.
    snippet: String,
}

#[derive(Serialize)]
struct SearchOut {
    hits: Vec<SearchHit>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    next_cursor: Option<String>,
    /// Imported messages are still entering the index: some may not be found yet.
    indexing: bool,
}

#[tracing::instrument(level = "debug", skip_all)]
async fn search(
    State(state): State<AppState>,
    _owner: Owner,
    input: std::result::Result<Query<SearchIn>, QueryRejection>,
) -> Result<Json<SearchOut>> {
    let Query(input) =
        input.map_err(|_| Error::bad_request("invalid_query", "The search takes q, limit and cursor, once each."))?;
    let typed = input.q.unwrap_or_default();
    if typed.chars().count() > MAX_QUERY_CHARS {
        return Err(Error::bad_request("query_too_long", format!("Search for at most {MAX_QUERY_CHARS} characters.")));
    }
    let limit = match input.limit.as_deref().map(str::trim).filter(|l| !l.is_empty()) {
        None => DEFAULT_HITS,
        Some(l) => l
            .parse::<i64>()
            .ok()
            .filter(|l| *l >= 1)
            .ok_or_else(|| Error::bad_request("invalid_limit", "The limit is a whole number of at least 1."))?
            .min(MAX_HITS),
    };
    let before = match input.cursor.as_deref().filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => Some(
            c.parse::<i64>()
                .ok()
                .filter(|c| *c > 0)
                .ok_or_else(|| Error::bad_request("invalid_cursor", "That cursor came from no search."))?,
        ),
    };
    let indexing = db::search::indexing(&state.db.read).await?;
    let Some(query) = fts_query(&typed) else {
        return Ok(Json(SearchOut { hits: Vec::new(), next_cursor: None, indexing }));
    };
    // One extra row tells whether there is a next page.
    let mut rows = db::search::search(&state.db.read, &query, before, limit + 1).await?;
    let more = rows.len() > usize::try_from(limit).unwrap_or(usize::MAX);
    rows.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    let next_cursor = if more { rows.last().map(|r| r.id.to_string()) } else { None };
    let hits = rows
        .into_iter()
        .map(|r| SearchHit {
            chat_id: r.chat_id,
            title: r.title,
            message_idx: (r.idx != db::search::TITLE_IDX).then_some(r.idx),
            ts: r.ts,
            snippet: r.snippet,
        })
        .collect();
    Ok(Json(SearchOut { hits, next_cursor, indexing }))
}
