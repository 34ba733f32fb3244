//! SQL for a chat's pinned goal (`chat_goals`): one row a chat, its body the `GoalPin` JSON the
//! detail serves as it is.

use sqlx::SqliteConnection;

use crate::error::Result;
use crate::protocol::GoalPin;

/// The chat's pinned goal, if it has one.
pub async fn get(conn: &mut SqliteConnection, chat_id: &str) -> Result<Option<GoalPin>> {
    let body: Option<String> =
        sqlx::query_scalar("SELECT body FROM chat_goals WHERE chat_id = ?").bind(chat_id).fetch_optional(conn).await?;
    // A body that no longer reads (never written by this code) counts as no goal.
    Ok(body.and_then(|b| serde_json::from_str(&b).ok()))
}

/// Pins `goal` on the chat (replacing the one it had).
pub async fn put(conn: &mut SqliteConnection, chat_id: &str, goal: &GoalPin, now: i64) -> Result<()> {
    let body = serde_json::to_string(goal).map_err(|e| crate::error::Error::Internal(e.to_string()))?;
    sqlx::query(
        "INSERT INTO chat_goals (chat_id, body, updated_at) VALUES (?, ?, ?)
         ON CONFLICT (chat_id) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
    )
    .bind(chat_id)
    .bind(body)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Unpins the chat's goal; answers whether it had one.
pub async fn remove(conn: &mut SqliteConnection, chat_id: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM chat_goals WHERE chat_id = ?").bind(chat_id).execute(conn).await?;
    Ok(done.rows_affected() > 0)
}
