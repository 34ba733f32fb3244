//! SQL for chat notes (`chat_notes`, migration `0013`), the transcript text a note turn reads,
//! the digests new chats are primed with, and the owner's memory switch.

use sqlx::{FromRow, SqliteConnection, SqlitePool};

use crate::db;
use crate::error::Result;

/// A chat's note as stored.
#[derive(Debug, Clone, FromRow, serde::Serialize)]
pub struct Note {
    pub digest: String,
    pub summary: String,
    /// Transcript messages the note covers.
    pub source_count: i64,
    /// Last written by the owner (from the info sheet) rather than by a note turn.
    pub by_owner: bool,
    pub updated_at: i64,
}

/// A chat's note, if it has one.
pub async fn get<'e, E: sqlx::SqliteExecutor<'e>>(executor: E, chat_id: &str) -> Result<Option<Note>> {
    Ok(sqlx::query_as("SELECT digest, summary, source_count, by_owner, updated_at FROM chat_notes WHERE chat_id = ?")
        .bind(chat_id)
        .fetch_optional(executor)
        .await?)
}

/// Writes a chat's note.
pub async fn put(conn: &mut SqliteConnection, chat_id: &str, note: &Note) -> Result<()> {
    sqlx::query(
        "INSERT INTO chat_notes (chat_id, digest, summary, source_count, by_owner, updated_at)
         VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (chat_id) DO UPDATE SET digest = excluded.digest, summary = excluded.summary,
             source_count = excluded.source_count, by_owner = excluded.by_owner, updated_at = excluded.updated_at",
    )
    .bind(chat_id)
    .bind(&note.digest)
    .bind(&note.summary)
    .bind(note.source_count)
    .bind(note.by_owner)
    .bind(note.updated_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// One line of the transcript a note turn reads: the searchable words of a message.
#[derive(Debug, Clone, FromRow)]
pub struct Line {
    pub idx: i64,
    pub role: String,
    pub text: String,
}

/// The words of messages `from..` of a chat (the owner's unhidden words and the agent's text,
/// the same documents search indexes), oldest first, at most `limit`. Messages an import stored
/// moments ago may still wait for their documents (`db::search::index_backlog`): their words
/// are read from the messages themselves, in the same snapshot.
pub async fn transcript_since(pool: &SqlitePool, chat_id: &str, from: i64, limit: i64) -> Result<Vec<Line>> {
    let mut tx = pool.begin().await?;
    let mut lines: Vec<Line> = sqlx::query_as(
        "SELECT d.idx, m.role, d.text FROM chat_search_docs d
         JOIN chat_messages m ON m.chat_id = d.chat_id AND m.idx = d.idx
         WHERE d.chat_id = ? AND d.idx >= ? ORDER BY d.idx LIMIT ?",
    )
    .bind(chat_id)
    .bind(from)
    .bind(limit)
    .fetch_all(&mut *tx)
    .await?;
    let Some((next, end)) = db::search::backlog_of(&mut tx, chat_id).await? else {
        return Ok(lines);
    };
    let wanted = usize::try_from(limit).unwrap_or(0);
    // Only a gap line that comes before the `limit`-th document can be part of the answer.
    let end = match lines.get(wanted.saturating_sub(1)) {
        Some(last) if lines.len() >= wanted => end.min(last.idx),
        _ => end,
    };
    let mut at = from.max(next);
    let mut gap = Vec::new();
    while at < end && gap.len() < wanted {
        let rows: Vec<(i64, String, String)> = sqlx::query_as(
            "SELECT idx, role, body FROM chat_messages WHERE chat_id = ? AND idx >= ? AND idx < ? ORDER BY idx LIMIT ?",
        )
        .bind(chat_id)
        .bind(at)
        .bind(end)
        .bind(limit)
        .fetch_all(&mut *tx)
        .await?;
        let Some((last, _, _)) = rows.last() else { break };
        at = last + 1;
        gap.extend(rows.into_iter().filter_map(|(idx, role, body)| {
            let message = serde_json::from_str(&body).ok()?;
            let text = db::search::document_text(&message)?.into_owned();
            Some(Line { idx, role, text })
        }));
    }
    lines.extend(gap);
    lines.sort_by_key(|l| l.idx);
    lines.dedup_by_key(|l| l.idx);
    lines.truncate(wanted);
    Ok(lines)
}

/// What a note turn needs to know about a chat right before it starts.
#[derive(Debug, Clone, FromRow)]
pub struct NoteState {
    pub message_count: i64,
    pub provider: Option<crate::protocol::ProviderKind>,
    pub title_locked: bool,
    pub running: bool,
    pub deleted: bool,
}

/// The chat's transcript length, provider and whether a run is going, in one read.
pub async fn state(pool: &SqlitePool, chat_id: &str) -> Result<Option<NoteState>> {
    Ok(sqlx::query_as(
        "SELECT c.message_count, c.provider, c.title_locked,
                EXISTS (SELECT 1 FROM chat_runs r WHERE r.chat_id = c.id AND r.status = 'running') AS running,
                c.deleted_at IS NOT NULL AS deleted
         FROM chats c WHERE c.id = ?",
    )
    .bind(chat_id)
    .fetch_optional(pool)
    .await?)
}

/// The same, inside the writer's transaction (the compare-and-swap of a note turn's result).
pub async fn state_in(conn: &mut SqliteConnection, chat_id: &str) -> Result<Option<NoteState>> {
    Ok(sqlx::query_as(
        "SELECT c.message_count, c.provider, c.title_locked,
                EXISTS (SELECT 1 FROM chat_runs r WHERE r.chat_id = c.id AND r.status = 'running') AS running,
                c.deleted_at IS NOT NULL AS deleted
         FROM chats c WHERE c.id = ?",
    )
    .bind(chat_id)
    .fetch_optional(conn)
    .await?)
}

/// A recent chat's digest, for a new chat's prompt.
#[derive(Debug, Clone, FromRow)]
pub struct Recent {
    pub chat_id: String,
    pub title: String,
    pub digest: String,
}

/// The digests of the `limit` most recently active chats other than `except` (deleted chats
/// left out), newest first.
pub async fn recent_digests(pool: &SqlitePool, except: &str, limit: i64) -> Result<Vec<Recent>> {
    Ok(sqlx::query_as(
        "SELECT n.chat_id, c.title, n.digest FROM chat_notes n JOIN chats c ON c.id = n.chat_id
         WHERE c.deleted_at IS NULL AND n.chat_id <> ? AND n.digest <> ''
         ORDER BY c.activity_at DESC, c.id DESC LIMIT ?",
    )
    .bind(except)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

/// Whether new chats are primed with memory (on unless the owner turned it off).
pub async fn memory_enabled(pool: &SqlitePool) -> Result<bool> {
    let on: Option<bool> =
        sqlx::query_scalar("SELECT memory_enabled FROM owner WHERE id = 1").fetch_optional(pool).await?;
    Ok(on.unwrap_or(true))
}

/// Turns memory in new chats on or off.
pub async fn set_memory_enabled(conn: &mut SqliteConnection, on: bool, now: i64) -> Result<()> {
    sqlx::query("UPDATE owner SET memory_enabled = ?, updated_at = ? WHERE id = 1")
        .bind(on)
        .bind(now)
        .execute(conn)
        .await?;
    Ok(())
}
