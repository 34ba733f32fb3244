//! SQL for runs: the rows of `chat_runs` and the live assistant message of the running one
//! (`chat_live`).

use sqlx::{SqliteConnection, SqlitePool};

use crate::error::Result;

/// Inserts a `running` run row (the partial unique index refuses a second one per chat).
pub async fn insert_run(
    conn: &mut SqliteConnection,
    run_id: &str,
    chat_id: &str,
    provider: Option<&str>,
    now: i64,
) -> Result<()> {
    sqlx::query("INSERT INTO chat_runs (id, chat_id, status, provider, started_at) VALUES (?, ?, 'running', ?, ?)")
        .bind(run_id)
        .bind(chat_id)
        .bind(provider)
        .bind(now)
        .execute(conn)
        .await?;
    Ok(())
}

/// True when `run_id` is the running run of `chat_id`.
pub async fn run_is_running(conn: &mut SqliteConnection, chat_id: &str, run_id: &str) -> Result<bool> {
    let found: Option<i64> =
        sqlx::query_scalar("SELECT 1 FROM chat_runs WHERE id = ? AND chat_id = ? AND status = 'running'")
            .bind(run_id)
            .bind(chat_id)
            .fetch_optional(conn)
            .await?;
    Ok(found.is_some())
}

/// True when `run_id` names a running run (read pool; used by agent-token checks).
pub async fn run_is_running_read(pool: &SqlitePool, run_id: &str) -> Result<bool> {
    let found: Option<i64> = sqlx::query_scalar("SELECT 1 FROM chat_runs WHERE id = ? AND status = 'running'")
        .bind(run_id)
        .fetch_optional(pool)
        .await?;
    Ok(found.is_some())
}

/// The running run of a chat (on the writer's connection or the read pool).
pub async fn running_run<'e, E: sqlx::SqliteExecutor<'e>>(executor: E, chat_id: &str) -> Result<Option<String>> {
    Ok(sqlx::query_scalar("SELECT id FROM chat_runs WHERE chat_id = ? AND status = 'running'")
        .bind(chat_id)
        .fetch_optional(executor)
        .await?)
}

/// Every running run at boot: `(run_id, chat_id)`.
pub async fn all_running_runs(conn: &mut SqliteConnection) -> Result<Vec<(String, String)>> {
    Ok(sqlx::query_as("SELECT id, chat_id FROM chat_runs WHERE status = 'running'").fetch_all(conn).await?)
}

/// What a finished run records.
#[derive(Debug, Default, Clone)]
pub struct RunEnd {
    pub status: String,
    pub cost_usd: Option<f64>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub cache_read_tokens: Option<i64>,
    pub cache_write_tokens: Option<i64>,
    pub usage: Option<String>,
    pub error: Option<String>,
    pub session_id: Option<String>,
}

/// Closes a running run; false if it was not running.
pub async fn close_run(conn: &mut SqliteConnection, run_id: &str, end: &RunEnd, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE chat_runs SET status = ?, cost_usd = ?, input_tokens = ?, output_tokens = ?, cache_read_tokens = ?,
                cache_write_tokens = ?, usage = ?, error = ?, provider_session_id = coalesce(?, provider_session_id),
                ended_at = ?
         WHERE id = ? AND status = 'running'",
    )
    .bind(&end.status)
    .bind(end.cost_usd)
    .bind(end.input_tokens)
    .bind(end.output_tokens)
    .bind(end.cache_read_tokens)
    .bind(end.cache_write_tokens)
    .bind(&end.usage)
    .bind(&end.error)
    .bind(&end.session_id)
    .bind(now)
    .bind(run_id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Runs of a chat, newest first (usage view).
#[derive(Debug, sqlx::FromRow, serde::Serialize)]
pub struct RunRow {
    pub id: String,
    pub status: String,
    pub provider: Option<crate::protocol::ProviderKind>,
    pub provider_session_id: Option<String>,
    pub cost_usd: Option<f64>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub error: Option<String>,
    pub started_at: i64,
    pub ended_at: Option<i64>,
}

/// The runs of a chat, newest first.
pub async fn runs(pool: &SqlitePool, chat_id: &str, limit: i64) -> Result<Vec<RunRow>> {
    Ok(sqlx::query_as(
        "SELECT id, status, provider, provider_session_id, cost_usd, input_tokens, output_tokens, error, started_at, ended_at
         FROM chat_runs WHERE chat_id = ? ORDER BY started_at DESC, rowid DESC LIMIT ?",
    )
    .bind(chat_id)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

/// Sets (or replaces) the live assistant message of a chat for `run_id`.
pub async fn replace_live(
    conn: &mut SqliteConnection,
    chat_id: &str,
    run_id: &str,
    body: &str,
    upto_seq: i64,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO chat_live (chat_id, run_id, body, upto_seq, updated_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (chat_id) DO UPDATE SET run_id = excluded.run_id, body = excluded.body,
             upto_seq = excluded.upto_seq, updated_at = excluded.updated_at",
    )
    .bind(chat_id)
    .bind(run_id)
    .bind(body)
    .bind(upto_seq)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Updates the live message only if it still belongs to `run_id`; false if it did not.
pub async fn update_live(
    conn: &mut SqliteConnection,
    chat_id: &str,
    run_id: &str,
    body: &str,
    upto_seq: i64,
    now: i64,
) -> Result<bool> {
    let done =
        sqlx::query("UPDATE chat_live SET body = ?, upto_seq = ?, updated_at = ? WHERE chat_id = ? AND run_id = ?")
            .bind(body)
            .bind(upto_seq)
            .bind(now)
            .bind(chat_id)
            .bind(run_id)
            .execute(conn)
            .await?;
    Ok(done.rows_affected() == 1)
}

/// The live message row of a chat: `(run_id, body, upto_seq)`.
pub async fn live(pool: &SqlitePool, chat_id: &str) -> Result<Option<(String, String, i64)>> {
    Ok(sqlx::query_as("SELECT run_id, body, upto_seq FROM chat_live WHERE chat_id = ?")
        .bind(chat_id)
        .fetch_optional(pool)
        .await?)
}

/// The live message row: `(run_id, body)`.
pub async fn live_body(conn: &mut SqliteConnection, chat_id: &str) -> Result<Option<(String, String)>> {
    Ok(sqlx::query_as("SELECT run_id, body FROM chat_live WHERE chat_id = ?")
        .bind(chat_id)
        .fetch_optional(conn)
        .await?)
}

/// Journal events committed after the live snapshot of `chat_id` was taken, oldest first, at
/// most `limit` (what clients saw stream by after the last snapshot).
pub async fn events_after_live(conn: &mut SqliteConnection, chat_id: &str, limit: i64) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar(
        "SELECT e.data FROM chat_events e JOIN chat_live l ON l.chat_id = e.chat_id
         WHERE e.chat_id = ? AND e.seq > l.upto_seq ORDER BY e.seq LIMIT ?",
    )
    .bind(chat_id)
    .bind(limit)
    .fetch_all(conn)
    .await?)
}

/// Drops the live message row.
pub async fn delete_live(conn: &mut SqliteConnection, chat_id: &str) -> Result<()> {
    sqlx::query("DELETE FROM chat_live WHERE chat_id = ?").bind(chat_id).execute(conn).await?;
    Ok(())
}
