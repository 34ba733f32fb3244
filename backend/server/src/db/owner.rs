//! SQL for the single `owner` row.

use sqlx::{SqliteConnection, SqlitePool};

use crate::error::Result;

/// The owner account as stored.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct OwnerRow {
    pub username: String,
    pub password_hash: String,
    pub token_epoch: i64,
}

/// The owner, if setup has happened.
pub async fn get<'e>(db: impl sqlx::SqliteExecutor<'e>) -> Result<Option<OwnerRow>> {
    Ok(sqlx::query_as::<_, OwnerRow>("SELECT username, password_hash, token_epoch FROM owner WHERE id = 1")
        .fetch_optional(db)
        .await?)
}

/// Inserts the owner; fails with a UNIQUE/PRIMARY KEY violation if one exists.
pub async fn insert(conn: &mut SqliteConnection, username: &str, password_hash: &str, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO owner (id, username, password_hash, token_epoch, created_at, updated_at)
         VALUES (1, ?, ?, 0, ?, ?)",
    )
    .bind(username)
    .bind(password_hash)
    .bind(now)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Increments the token epoch, revoking every token issued before; returns the new epoch.
pub async fn bump_token_epoch(conn: &mut SqliteConnection, now: i64) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar(
        "UPDATE owner SET token_epoch = token_epoch + 1, updated_at = ? WHERE id = 1 RETURNING token_epoch",
    )
    .bind(now)
    .fetch_optional(conn)
    .await?)
}

/// Replaces the owner's password hash.
pub async fn set_password(conn: &mut SqliteConnection, password_hash: &str, now: i64) -> Result<()> {
    sqlx::query("UPDATE owner SET password_hash = ?, updated_at = ? WHERE id = 1")
        .bind(password_hash)
        .bind(now)
        .execute(conn)
        .await?;
    Ok(())
}

/// Sets (or clears) the provider new chats use.
pub async fn set_default_provider(conn: &mut SqliteConnection, provider: Option<&str>, now: i64) -> Result<()> {
    sqlx::query("UPDATE owner SET default_provider = ?, updated_at = ? WHERE id = 1")
        .bind(provider)
        .bind(now)
        .execute(conn)
        .await?;
    Ok(())
}

/// The owner's default model and effort per provider (JSON, `agent::models::AgentDefaults`).
pub async fn agent_defaults(pool: &SqlitePool) -> Result<Option<String>> {
    Ok(sqlx::query_scalar("SELECT agent_defaults FROM owner WHERE id = 1").fetch_optional(pool).await?.flatten())
}

/// Sets the owner's default model and effort per provider.
pub async fn set_agent_defaults(conn: &mut SqliteConnection, defaults: &str, now: i64) -> Result<()> {
    sqlx::query("UPDATE owner SET agent_defaults = ?, updated_at = ? WHERE id = 1")
        .bind(defaults)
        .bind(now)
        .execute(conn)
        .await?;
    Ok(())
}

/// The owner's default provider for new chats.
pub async fn default_provider(pool: &SqlitePool) -> Result<Option<crate::protocol::ProviderKind>> {
    Ok(sqlx::query_scalar("SELECT default_provider FROM owner WHERE id = 1").fetch_optional(pool).await?.flatten())
}

/// True when a device with credential hash `token_hash` is known and was used after `since`.
pub async fn device_known(pool: &SqlitePool, token_hash: &str, since: i64) -> Result<bool> {
    let found: Option<i64> =
        sqlx::query_scalar("SELECT 1 FROM owner_devices WHERE token_hash = ? AND last_used_at >= ?")
            .bind(token_hash)
            .bind(since)
            .fetch_optional(pool)
            .await?;
    Ok(found.is_some())
}

/// The credential hashes of every device used after `since`.
pub async fn device_hashes<'e>(db: impl sqlx::SqliteExecutor<'e>, since: i64) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar("SELECT token_hash FROM owner_devices WHERE last_used_at >= ?")
        .bind(since)
        .fetch_all(db)
        .await?)
}

/// Records a sign-in from a device: a new one is added (only the `keep` most recently used
/// stay), a known one is marked used now; either way it holds the new session `session_id`,
/// signed in from `address`.
pub async fn remember_device(conn: &mut SqliteConnection, sign_in: &DeviceSignIn, keep: i64, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO owner_devices (token_hash, label, created_at, last_used_at, session_id, address, signed_in_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (token_hash) DO UPDATE SET last_used_at = excluded.last_used_at, label = excluded.label,
             session_id = excluded.session_id, address = excluded.address, signed_in_at = excluded.signed_in_at",
    )
    .bind(&sign_in.token_hash)
    .bind(&sign_in.label)
    .bind(now)
    .bind(now)
    .bind(&sign_in.session_id)
    .bind(&sign_in.address)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "DELETE FROM owner_devices WHERE id NOT IN (SELECT id FROM owner_devices ORDER BY last_used_at DESC, id DESC LIMIT ?)",
    )
    .bind(keep)
    .execute(conn)
    .await?;
    Ok(())
}

/// A sign-in to record: the device's credential hash, its label (from `User-Agent`), the new
/// session and where it signed in from.
#[derive(Debug, Clone)]
pub struct DeviceSignIn {
    pub token_hash: String,
    pub label: String,
    pub session_id: String,
    pub address: String,
}

/// A signed-in device as Settings lists it.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct DeviceRow {
    pub id: i64,
    pub label: String,
    pub address: String,
    pub signed_in_at: i64,
    pub last_used_at: i64,
    #[serde(skip)]
    pub session_id: String,
}

/// The devices that hold a session, most recently used first.
pub async fn devices(pool: &SqlitePool) -> Result<Vec<DeviceRow>> {
    Ok(sqlx::query_as::<_, DeviceRow>(
        "SELECT id, label, address, signed_in_at, last_used_at, session_id FROM owner_devices
         WHERE session_id IS NOT NULL ORDER BY last_used_at DESC, id DESC",
    )
    .fetch_all(pool)
    .await?)
}

/// Every live session id with its device's last use.
pub async fn sessions<'e>(db: impl sqlx::SqliteExecutor<'e>) -> Result<Vec<(String, i64)>> {
    Ok(sqlx::query_as::<_, (String, i64)>(
        "SELECT session_id, last_used_at FROM owner_devices WHERE session_id IS NOT NULL",
    )
    .fetch_all(db)
    .await?)
}

/// Forgets the device `id` (its credential and its session); answers its session id.
pub async fn forget_device(conn: &mut SqliteConnection, id: i64) -> Result<Option<String>> {
    Ok(sqlx::query_scalar::<_, Option<String>>("DELETE FROM owner_devices WHERE id = ? RETURNING session_id")
        .bind(id)
        .fetch_optional(conn)
        .await?
        .flatten())
}

/// Stores when sessions were last seen (only ever later than what is stored).
pub async fn touch_sessions(conn: &mut SqliteConnection, seen: &[(String, i64)]) -> Result<()> {
    for (sid, at) in seen {
        sqlx::query("UPDATE owner_devices SET last_used_at = ? WHERE session_id = ? AND last_used_at < ?")
            .bind(at)
            .bind(sid)
            .bind(at)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// Forgets every device (sign out everywhere).
pub async fn forget_devices(conn: &mut SqliteConnection) -> Result<()> {
    sqlx::query("DELETE FROM owner_devices").execute(conn).await?;
    Ok(())
}

/// The catalog index URLs the owner chose (a JSON list), or `None` for the default catalog.
pub async fn catalog_indexes(pool: &SqlitePool) -> Result<Option<String>> {
    Ok(sqlx::query_scalar("SELECT catalog_indexes FROM owner WHERE id = 1").fetch_optional(pool).await?.flatten())
}

/// Stores the catalog index URLs (a JSON list); `None` goes back to the default catalog.
pub async fn set_catalog_indexes(conn: &mut SqliteConnection, indexes: Option<&str>, now: i64) -> Result<()> {
    sqlx::query("UPDATE owner SET catalog_indexes = ?, updated_at = ? WHERE id = 1")
        .bind(indexes)
        .bind(now)
        .execute(conn)
        .await?;
    Ok(())
}
