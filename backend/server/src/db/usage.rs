//! SQL for what turns used: a chat's totals (from its runs) and each provider's plan windows
//! as its CLI last reported them (`provider_limits`).

use sqlx::{SqliteConnection, SqlitePool};

use crate::error::Result;

/// A chat's usage over all its runs.
#[derive(Debug, Default, sqlx::FromRow, serde::Serialize)]
pub struct ChatUsage {
    pub turns: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    /// What the turns that reported a cost cost.
    pub cost_usd: f64,
}

/// The totals of `chat_id`'s runs.
pub async fn chat_usage(pool: &SqlitePool, chat_id: &str) -> Result<ChatUsage> {
    Ok(sqlx::query_as(
        "SELECT count(*) AS turns, coalesce(sum(input_tokens), 0) AS input_tokens,
                coalesce(sum(output_tokens), 0) AS output_tokens,
                coalesce(sum(cache_read_tokens), 0) AS cache_read_tokens,
                coalesce(sum(cache_write_tokens), 0) AS cache_write_tokens,
                coalesce(sum(cost_usd), 0.0) AS cost_usd
         FROM chat_runs WHERE chat_id = ? AND status != 'running'",
    )
    .bind(chat_id)
    .fetch_one(pool)
    .await?)
}

/// Stores the windows `provider` reported (JSON list).
pub async fn set_limits(conn: &mut SqliteConnection, provider: &str, windows: &str, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO provider_limits (provider, windows, updated_at) VALUES (?, ?, ?)
         ON CONFLICT (provider) DO UPDATE SET windows = excluded.windows, updated_at = excluded.updated_at",
    )
    .bind(provider)
    .bind(windows)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// The windows `provider` last reported: `(windows JSON, updated_at)`.
pub async fn limits(pool: &SqlitePool, provider: &str) -> Result<Option<(String, i64)>> {
    Ok(sqlx::query_as("SELECT windows, updated_at FROM provider_limits WHERE provider = ?")
        .bind(provider)
        .fetch_optional(pool)
        .await?)
}
