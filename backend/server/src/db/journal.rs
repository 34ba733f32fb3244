//! SQL for the chat journal (`chat_events`): numbered events, kept for replay.

use sqlx::{SqliteConnection, SqlitePool};

use crate::error::{Domain, Result};

/// Events kept per chat in the journal; older gaps are answered with a resync.
pub const JOURNAL_RETAIN_EVENTS: i64 = 2_000;

/// How often (in seqs) the journal of a chat is trimmed.
pub const JOURNAL_TRIM_EVERY: i64 = 256;

/// The journal head of a live (not deleted) chat.
pub async fn head_seq(conn: &mut SqliteConnection, chat_id: &str) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar("SELECT last_seq FROM chats WHERE id = ? AND deleted_at IS NULL")
        .bind(chat_id)
        .fetch_optional(conn)
        .await?)
}

/// Takes the next seq of a live chat's journal.
pub async fn next_seq(conn: &mut SqliteConnection, chat_id: &str) -> Result<i64> {
    let seq: Option<i64> = sqlx::query_scalar(
        "UPDATE chats SET last_seq = last_seq + 1 WHERE id = ? AND deleted_at IS NULL RETURNING last_seq",
    )
    .bind(chat_id)
    .fetch_optional(&mut *conn)
    .await?;
    seq.ok_or_else(|| Domain::ChatNotFound.into())
}

/// Stores the event text `data` at `seq` (from [`next_seq`]), trimming the journal now and then.
pub async fn insert(conn: &mut SqliteConnection, chat_id: &str, seq: i64, data: &str, now: i64) -> Result<()> {
    sqlx::query("INSERT INTO chat_events (chat_id, seq, data, created_at) VALUES (?, ?, ?, ?)")
        .bind(chat_id)
        .bind(seq)
        .bind(data)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    if seq % JOURNAL_TRIM_EVERY == 0 {
        sqlx::query("DELETE FROM chat_events WHERE chat_id = ? AND seq <= ?")
            .bind(chat_id)
            .bind(seq - JOURNAL_RETAIN_EVENTS)
            .execute(conn)
            .await?;
    }
    Ok(())
}

/// Journal events after `after`, oldest first, at most `limit`.
pub async fn events_after(pool: &SqlitePool, chat_id: &str, after: i64, limit: i64) -> Result<Vec<(i64, String)>> {
    Ok(sqlx::query_as("SELECT seq, data FROM chat_events WHERE chat_id = ? AND seq > ? ORDER BY seq LIMIT ?")
        .bind(chat_id)
        .bind(after)
        .bind(limit)
        .fetch_all(pool)
        .await?)
}

/// The oldest journal seq still stored for a chat (None when the journal is empty).
pub async fn oldest_event_seq(pool: &SqlitePool, chat_id: &str) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar("SELECT min(seq) FROM chat_events WHERE chat_id = ?").bind(chat_id).fetch_one(pool).await?)
}
