//! Connector rows (remote MCP servers) and which chats may use them.

use sqlx::{SqliteConnection, SqlitePool};

use crate::error::Result;

/// A connector as stored (its secret sealed).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ConnectorRow {
    pub id: i64,
    pub name: String,
    pub url: String,
    /// `none`, `bearer`, `header` or `oauth`.
    pub auth: String,
    /// The header a `header` secret goes in.
    pub header_name: Option<String>,
    /// The sealed secret (`bearer`/`header`), or the sealed OAuth grant (`oauth`).
    pub secret: Option<Vec<u8>>,
    /// `all` or `chosen` (only the chats in `chat_connectors`).
    pub chats: String,
    pub read_only_auto: bool,
    /// `pending`, `connected`, `error`, `disconnected` or `needs_auth` (OAuth: sign in).
    pub status: String,
    pub last_error: Option<String>,
    /// JSON list of the tools read at connect.
    pub tools: String,
    /// `streamable` or `sse` (the legacy transport), as found at the last connect.
    pub transport: String,
    pub created_at: i64,
    pub updated_at: i64,
}

/// What a connector's secret is sealed to (its name is unique and never changes).
pub fn sealed_context(name: &str) -> String {
    format!("connector-secret:{name}")
}

/// A new connector, as the writer stores it.
#[derive(Debug, Clone)]
pub struct NewConnector {
    pub name: String,
    pub url: String,
    pub auth: String,
    pub header_name: Option<String>,
    pub secret: Option<Vec<u8>>,
    pub chats: String,
    pub read_only_auto: bool,
}

/// What an update changes (`None`: left as it is).
#[derive(Debug, Clone, Default)]
pub struct ConnectorPatch {
    pub chats: Option<String>,
    pub read_only_auto: Option<bool>,
    /// `(status, last_error, tools JSON)`: what the last connect found.
    pub state: Option<(String, Option<String>, Option<String>)>,
    /// A new sealed secret (`Some(None)`: none).
    pub secret: Option<Option<Vec<u8>>>,
    /// The transport the last connect found.
    pub transport: Option<&'static str>,
}

const COLUMNS: &str = "id, name, url, auth, header_name, secret, chats, read_only_auto, status, last_error, tools, \
                       transport, created_at, updated_at";

/// Every connector, oldest first.
pub async fn list(pool: &SqlitePool) -> Result<Vec<ConnectorRow>> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM connectors ORDER BY id")).fetch_all(pool).await?)
}

/// One connector.
pub async fn get(pool: &SqlitePool, id: i64) -> Result<Option<ConnectorRow>> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM connectors WHERE id = ?")).bind(id).fetch_optional(pool).await?)
}

/// The connected connectors chat `chat_id` may use (all-chats ones and those chosen for it).
pub async fn for_chat(pool: &SqlitePool, chat_id: &str) -> Result<Vec<ConnectorRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM connectors WHERE status = 'connected' AND (chats = 'all' OR id IN \
         (SELECT connector_id FROM chat_connectors WHERE chat_id = ?)) ORDER BY id"
    ))
    .bind(chat_id)
    .fetch_all(pool)
    .await?)
}

/// The connectors chosen for chat `chat_id` (whatever their status).
pub async fn chosen(pool: &SqlitePool, chat_id: &str) -> Result<Vec<i64>> {
    Ok(sqlx::query_scalar("SELECT connector_id FROM chat_connectors WHERE chat_id = ? ORDER BY connector_id")
        .bind(chat_id)
        .fetch_all(pool)
        .await?)
}

/// Stores a new connector unless there are `max` already (`None`) or its name is taken (`Err`).
pub async fn insert(conn: &mut SqliteConnection, new: &NewConnector, max: i64, now: i64) -> Result<Option<i64>> {
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM connectors").fetch_one(&mut *conn).await?;
    if count >= max {
        return Ok(None);
    }
    let id = sqlx::query(
        "INSERT INTO connectors (name, url, auth, header_name, secret, chats, read_only_auto, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&new.name)
    .bind(&new.url)
    .bind(&new.auth)
    .bind(&new.header_name)
    .bind(&new.secret)
    .bind(&new.chats)
    .bind(new.read_only_auto)
    .bind(now)
    .bind(now)
    .execute(conn)
    .await?
    .last_insert_rowid();
    Ok(Some(id))
}

/// Applies `patch`; false when there is no such connector.
pub async fn update(conn: &mut SqliteConnection, id: i64, patch: &ConnectorPatch, now: i64) -> Result<bool> {
    let (status, last_error, tools) = match &patch.state {
        Some((status, error, tools)) => (Some(status.as_str()), Some(error.as_deref()), tools.as_deref()),
        None => (None, None, None),
    };
    let done = sqlx::query(
        "UPDATE connectors SET chats = coalesce(?, chats), read_only_auto = coalesce(?, read_only_auto), \
         status = coalesce(?, status), last_error = CASE WHEN ? THEN ? ELSE last_error END, \
         tools = coalesce(?, tools), secret = CASE WHEN ? THEN ? ELSE secret END, \
         transport = coalesce(?, transport), updated_at = ? WHERE id = ?",
    )
    .bind(&patch.chats)
    .bind(patch.read_only_auto)
    .bind(status)
    .bind(last_error.is_some())
    .bind(last_error.flatten())
    .bind(tools)
    .bind(patch.secret.is_some())
    .bind(patch.secret.clone().flatten())
    .bind(patch.transport)
    .bind(now)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Removes a connector (its chat choices go by cascade); whether there was one.
pub async fn delete(conn: &mut SqliteConnection, id: i64) -> Result<bool> {
    Ok(sqlx::query("DELETE FROM connectors WHERE id = ?").bind(id).execute(conn).await?.rows_affected() == 1)
}

/// Replaces the connectors chosen for chat `chat_id` (ids that name no connector are skipped).
pub async fn set_chosen(conn: &mut SqliteConnection, chat_id: &str, ids: &[i64]) -> Result<()> {
    sqlx::query("DELETE FROM chat_connectors WHERE chat_id = ?").bind(chat_id).execute(&mut *conn).await?;
    for id in ids {
        sqlx::query(
            "INSERT OR IGNORE INTO chat_connectors (chat_id, connector_id) SELECT ?, id FROM connectors WHERE id = ?",
        )
        .bind(chat_id)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}
