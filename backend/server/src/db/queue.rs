//! SQL for the queue (`chat_pending`): messages sent while a turn runs, in order.

use sqlx::SqliteConnection;

use crate::error::Result;

/// The queued messages of a chat: `(cid, body)` in order.
pub async fn pending_list(conn: &mut SqliteConnection, chat_id: &str) -> Result<Vec<(String, String)>> {
    Ok(sqlx::query_as("SELECT cid, body FROM chat_pending WHERE chat_id = ? ORDER BY position")
        .bind(chat_id)
        .fetch_all(conn)
        .await?)
}

/// Queues a message at the end; returns its 1-based position.
pub async fn push_pending(conn: &mut SqliteConnection, chat_id: &str, cid: &str, body: &str, now: i64) -> Result<i64> {
    let position: i64 = sqlx::query_scalar("SELECT coalesce(max(position), 0) + 1 FROM chat_pending WHERE chat_id = ?")
        .bind(chat_id)
        .fetch_one(&mut *conn)
        .await?;
    sqlx::query("INSERT INTO chat_pending (chat_id, cid, position, body, created_at) VALUES (?, ?, ?, ?, ?)")
        .bind(chat_id)
        .bind(cid)
        .bind(position)
        .bind(body)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    let count: i64 =
        sqlx::query_scalar("SELECT count(*) FROM chat_pending WHERE chat_id = ?").bind(chat_id).fetch_one(conn).await?;
    Ok(count)
}

/// Replaces a queued message's body; false if it is no longer queued.
pub async fn update_pending(conn: &mut SqliteConnection, chat_id: &str, cid: &str, body: &str) -> Result<bool> {
    let done = sqlx::query("UPDATE chat_pending SET body = ? WHERE chat_id = ? AND cid = ?")
        .bind(body)
        .bind(chat_id)
        .bind(cid)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Removes a queued message; false if it was not queued.
pub async fn delete_pending(conn: &mut SqliteConnection, chat_id: &str, cid: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM chat_pending WHERE chat_id = ? AND cid = ?")
        .bind(chat_id)
        .bind(cid)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Empties the queue; returns the removed messages `(cid, body)` in order.
pub async fn take_pending(conn: &mut SqliteConnection, chat_id: &str) -> Result<Vec<(String, String)>> {
    let rows = pending_list(conn, chat_id).await?;
    sqlx::query("DELETE FROM chat_pending WHERE chat_id = ?").bind(chat_id).execute(conn).await?;
    Ok(rows)
}
