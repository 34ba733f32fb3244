//! SQL for chat files (`chat_files`, migration `0015`): the owner's uploads and the images the
//! agent published, their sizes (the uploads quota) and dimensions.

use sqlx::{FromRow, SqliteConnection, SqlitePool};

use crate::error::Result;

/// One stored chat file.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct ChatFile {
    pub chat_id: String,
    /// `upload` (the owner's) or `media` (published by the agent).
    pub kind: String,
    /// The server-chosen file name (unique per chat and kind).
    pub name: String,
    /// Sniffed from the bytes, never taken from the client.
    pub mime_type: String,
    pub size: i64,
    pub width: Option<i64>,
    pub height: Option<i64>,
    /// A small JPEG preview exists next to it.
    pub preview: bool,
    pub created_at: i64,
}

const COLUMNS: &str = "chat_id, kind, name, mime_type, size, width, height, preview, created_at";

/// The files of one kind of a chat, oldest first.
pub async fn list(pool: &SqlitePool, chat_id: &str, kind: &str) -> Result<Vec<ChatFile>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM chat_files WHERE chat_id = ? AND kind = ? ORDER BY created_at, name"
    ))
    .bind(chat_id)
    .bind(kind)
    .fetch_all(pool)
    .await?)
}

/// One file, if it exists.
pub async fn get<'e, E: sqlx::SqliteExecutor<'e>>(
    executor: E,
    chat_id: &str,
    kind: &str,
    name: &str,
) -> Result<Option<ChatFile>> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM chat_files WHERE chat_id = ? AND kind = ? AND name = ?"))
        .bind(chat_id)
        .bind(kind)
        .bind(name)
        .fetch_optional(executor)
        .await?)
}

/// Bytes stored in all chats (what counts against the quota).
pub async fn total_size<'e, E: sqlx::SqliteExecutor<'e>>(executor: E) -> Result<u64> {
    let total: i64 = sqlx::query_scalar("SELECT COALESCE(SUM(size), 0) FROM chat_files").fetch_one(executor).await?;
    Ok(u64::try_from(total).unwrap_or(0))
}

/// Stores a file's row.
pub async fn insert(conn: &mut SqliteConnection, file: &ChatFile) -> Result<()> {
    sqlx::query(&format!("INSERT INTO chat_files ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"))
        .bind(&file.chat_id)
        .bind(&file.kind)
        .bind(&file.name)
        .bind(&file.mime_type)
        .bind(file.size)
        .bind(file.width)
        .bind(file.height)
        .bind(file.preview)
        .bind(file.created_at)
        .execute(conn)
        .await?;
    Ok(())
}

/// Removes a file's row; answers whether there was one.
pub async fn delete(conn: &mut SqliteConnection, chat_id: &str, kind: &str, name: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM chat_files WHERE chat_id = ? AND kind = ? AND name = ?")
        .bind(chat_id)
        .bind(kind)
        .bind(name)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() > 0)
}
