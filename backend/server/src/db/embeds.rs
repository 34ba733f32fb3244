//! SQL for app-attributed chats and embedded-chat grants.

use sqlx::{SqliteConnection, SqlitePool};

use crate::error::Result;

/// An app chat as `/api/app-chats` lists it.
#[derive(Debug, sqlx::FromRow, serde::Serialize)]
pub struct AppChat {
    pub id: String,
    pub title: String,
    pub created_by_app_id: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub activity_at: i64,
    pub has_messages: bool,
    pub provider: Option<crate::protocol::ProviderKind>,
    pub scope: Option<String>,
    pub scope_label: Option<String>,
}

/// Live chats app `app_id` created, newest activity first (optionally of one scope).
pub async fn app_chats(pool: &SqlitePool, app_id: i64, scope: Option<&str>, limit: i64) -> Result<Vec<AppChat>> {
    Ok(sqlx::query_as(
        "SELECT id, title, app_id AS created_by_app_id, created_at, updated_at, activity_at,
                message_count > 0 AS has_messages, provider, scope, scope_label
         FROM chats WHERE app_id = ? AND deleted_at IS NULL AND (?2 IS NULL OR scope = ?2)
         ORDER BY activity_at DESC, id LIMIT ?3",
    )
    .bind(app_id)
    .bind(scope)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

/// The app that created live chat `chat_id`: `None` when there is no such chat, `Some(None)`
/// for the owner's own chats.
pub async fn chat_app<'e, E: sqlx::SqliteExecutor<'e>>(executor: E, chat_id: &str) -> Result<Option<Option<i64>>> {
    Ok(sqlx::query_scalar("SELECT app_id FROM chats WHERE id = ? AND deleted_at IS NULL")
        .bind(chat_id)
        .fetch_optional(executor)
        .await?)
}

/// Marks a new chat as app `app_id`'s.
pub async fn set_chat_app(
    conn: &mut SqliteConnection,
    chat_id: &str,
    app_id: i64,
    owner_visible: bool,
    scope: Option<&str>,
    scope_label: Option<&str>,
) -> Result<()> {
    sqlx::query("UPDATE chats SET app_id = ?, owner_visible = ?, scope = ?, scope_label = ? WHERE id = ?")
        .bind(app_id)
        .bind(owner_visible)
        .bind(scope)
        .bind(scope_label)
        .bind(chat_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Sets an app chat's grouping; `None` leaves a field alone (they cannot be cleared).
pub async fn set_chat_scope(
    conn: &mut SqliteConnection,
    chat_id: &str,
    scope: Option<&str>,
    scope_label: Option<&str>,
) -> Result<()> {
    sqlx::query("UPDATE chats SET scope = coalesce(?, scope), scope_label = coalesce(?, scope_label) WHERE id = ?")
        .bind(scope)
        .bind(scope_label)
        .bind(chat_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// A grant (and, once exchanged, the session it became).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Grant {
    pub id: String,
    pub app_id: i64,
    pub app_nonce: String,
    pub chat_id: String,
    pub instance_id: String,
    pub epoch: i64,
    pub created_at: i64,
    pub expires_at: i64,
    pub consumed_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub session_expires_at: Option<i64>,
}

const GRANT_COLUMNS: &str = "id, app_id, app_nonce, chat_id, instance_id, epoch, created_at, expires_at, consumed_at, \
    revoked_at, session_expires_at";

/// A grant by id.
pub async fn grant<'e, E: sqlx::SqliteExecutor<'e>>(executor: E, id: &str) -> Result<Option<Grant>> {
    Ok(sqlx::query_as(&format!("SELECT {GRANT_COLUMNS} FROM chat_embed_grants WHERE id = ?"))
        .bind(id)
        .fetch_optional(executor)
        .await?)
}

/// Stores a new grant, purging grants that expired more than `purge_before` ago.
pub async fn insert_grant(conn: &mut SqliteConnection, g: &Grant, purge_before: i64) -> Result<()> {
    sqlx::query("DELETE FROM chat_embed_grants WHERE coalesce(session_expires_at, expires_at) < ?")
        .bind(purge_before)
        .execute(&mut *conn)
        .await?;
    sqlx::query(&format!(
        "INSERT INTO chat_embed_grants ({GRANT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL)"
    ))
    .bind(&g.id)
    .bind(g.app_id)
    .bind(&g.app_nonce)
    .bind(&g.chat_id)
    .bind(&g.instance_id)
    .bind(g.epoch)
    .bind(g.created_at)
    .bind(g.expires_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// The newest consumed grant of an instance (its `created_at`).
pub async fn newest_consumed(conn: &mut SqliteConnection, app_id: i64, instance_id: &str) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar(
        "SELECT max(created_at) FROM chat_embed_grants WHERE app_id = ? AND instance_id = ? AND consumed_at IS NOT NULL",
    )
    .bind(app_id)
    .bind(instance_id)
    .fetch_one(conn)
    .await?)
}

/// Consumes grant `id` into a session until `session_expires_at`, revoking the instance's
/// other sessions; false when someone consumed it first.
pub async fn consume(conn: &mut SqliteConnection, g: &Grant, now: i64, session_expires_at: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE chat_embed_grants SET consumed_at = ?, session_expires_at = ?
         WHERE id = ? AND consumed_at IS NULL AND revoked_at IS NULL",
    )
    .bind(now)
    .bind(session_expires_at)
    .bind(&g.id)
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() != 1 {
        return Ok(false);
    }
    sqlx::query(
        "UPDATE chat_embed_grants SET revoked_at = ?
         WHERE app_id = ? AND instance_id = ? AND id != ? AND consumed_at IS NOT NULL AND revoked_at IS NULL",
    )
    .bind(now)
    .bind(g.app_id)
    .bind(&g.instance_id)
    .bind(&g.id)
    .execute(conn)
    .await?;
    Ok(true)
}

/// Revokes every grant and session of an instance of app `app_id` on `chat_id`.
pub async fn revoke(
    conn: &mut SqliteConnection,
    app_id: i64,
    chat_id: &str,
    instance_id: &str,
    now: i64,
) -> Result<u64> {
    let done = sqlx::query(
        "UPDATE chat_embed_grants SET revoked_at = ?
         WHERE app_id = ? AND chat_id = ? AND instance_id = ? AND revoked_at IS NULL",
    )
    .bind(now)
    .bind(app_id)
    .bind(chat_id)
    .bind(instance_id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}
