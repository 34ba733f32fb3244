//! The owner's GitHub connection (one row), the repositories the agent may use, and the log of
//! the agent's credential requests.

use serde::Serialize;
use sqlx::{SqliteConnection, SqlitePool};

use crate::error::Result;

/// The connection as stored (its token sealed).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AccountRow {
    pub token: Vec<u8>,
    pub login: String,
    pub connected_at: i64,
}

/// What the token is sealed to.
pub const SEALED_CONTEXT: &str = "github-token";

/// One credential request of the agent's.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct RequestRow {
    pub id: i64,
    pub chat_id: Option<String>,
    pub host: String,
    pub repo: String,
    /// `get` or `erase` (git saying the credential it was given was refused).
    pub operation: String,
    /// `granted`, `not_allowed`, `not_connected`, `wrong_host` or `rejected`.
    pub outcome: String,
    pub created_at: i64,
}

/// A request to log.
#[derive(Debug, Clone)]
pub struct NewRequest {
    pub chat_id: Option<String>,
    pub host: String,
    pub repo: String,
    pub operation: String,
    pub outcome: String,
}

/// The connection, if any.
pub async fn account(pool: &SqlitePool) -> Result<Option<AccountRow>> {
    Ok(sqlx::query_as("SELECT token, login, connected_at FROM github_account WHERE id = 1")
        .fetch_optional(pool)
        .await?)
}

/// The allowed repositories (`owner/name` or `owner/*`), in the order they were added.
pub async fn repos(pool: &SqlitePool) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar("SELECT pattern FROM github_repos ORDER BY added_at, pattern").fetch_all(pool).await?)
}

/// The newest `limit` requests, newest first.
pub async fn requests(pool: &SqlitePool, limit: i64) -> Result<Vec<RequestRow>> {
    Ok(sqlx::query_as(
        "SELECT id, chat_id, host, repo, operation, outcome, created_at FROM github_requests \
         ORDER BY id DESC LIMIT ?",
    )
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

/// Stores (or replaces) the connection.
pub async fn connect(conn: &mut SqliteConnection, token: &[u8], login: &str, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO github_account (id, token, login, connected_at) VALUES (1, ?, ?, ?) \
         ON CONFLICT (id) DO UPDATE SET token = excluded.token, login = excluded.login, \
         connected_at = excluded.connected_at",
    )
    .bind(token)
    .bind(login)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Forgets the connection (the allowed repositories stay); whether there was one.
pub async fn disconnect(conn: &mut SqliteConnection) -> Result<bool> {
    Ok(sqlx::query("DELETE FROM github_account WHERE id = 1").execute(conn).await?.rows_affected() == 1)
}

/// Replaces the allowed repositories (kept in the order given).
pub async fn set_repos(conn: &mut SqliteConnection, repos: &[String], now: i64) -> Result<()> {
    sqlx::query("DELETE FROM github_repos").execute(&mut *conn).await?;
    for (i, pattern) in repos.iter().enumerate() {
        sqlx::query("INSERT OR IGNORE INTO github_repos (pattern, added_at) VALUES (?, ?)")
            .bind(pattern)
            .bind(now + i64::try_from(i).unwrap_or_default())
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// Logs a request and keeps the newest `keep`.
pub async fn log_request(conn: &mut SqliteConnection, request: &NewRequest, keep: i64, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO github_requests (chat_id, host, repo, operation, outcome, created_at) VALUES (?, ?, ?, ?, ?, ?)",
    )
    .bind(&request.chat_id)
    .bind(&request.host)
    .bind(&request.repo)
    .bind(&request.operation)
    .bind(&request.outcome)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "DELETE FROM github_requests WHERE id <= (SELECT id FROM github_requests ORDER BY id DESC LIMIT 1 OFFSET ?)",
    )
    .bind(keep.max(1))
    .execute(conn)
    .await?;
    Ok(())
}
