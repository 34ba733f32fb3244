//! The activity log (`app_activity`): entries apps, their jobs and the owner emit.

use serde::Serialize;
use sqlx::{SqliteConnection, SqlitePool};

use crate::error::Result;

/// One stored entry.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct ActivityRow {
    pub id: i64,
    pub app_id: Option<i64>,
    pub ev: String,
    /// The emitted JSON object, as stored.
    pub data: String,
    pub created_at: i64,
}

/// Appends an entry and trims the log of `app_id` (NULL: the owner's) to its newest `keep`
/// entries; the new entry's id.
pub async fn append(
    conn: &mut SqliteConnection,
    app_id: Option<i64>,
    ev: &str,
    data: &str,
    keep: i64,
    now: i64,
) -> Result<i64> {
    let id: i64 =
        sqlx::query_scalar("INSERT INTO app_activity (app_id, ev, data, created_at) VALUES (?, ?, ?, ?) RETURNING id")
            .bind(app_id)
            .bind(ev)
            .bind(data)
            .bind(now)
            .fetch_one(&mut *conn)
            .await?;
    sqlx::query(
        "DELETE FROM app_activity WHERE app_id IS ?1 AND id <= \
         (SELECT id FROM app_activity WHERE app_id IS ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)",
    )
    .bind(app_id)
    .bind(keep.max(1))
    .execute(&mut *conn)
    .await?;
    Ok(id)
}

/// Entries newest first, older than `before` when given, of one app when given.
pub async fn list(pool: &SqlitePool, app_id: Option<i64>, before: Option<i64>, limit: i64) -> Result<Vec<ActivityRow>> {
    Ok(sqlx::query_as(
        "SELECT id, app_id, ev, data, created_at FROM app_activity \
         WHERE (?1 IS NULL OR app_id = ?1) AND (?2 IS NULL OR id < ?2) ORDER BY id DESC LIMIT ?3",
    )
    .bind(app_id)
    .bind(before)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}
