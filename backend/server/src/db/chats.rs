//! SQL for chats: rows, transcript, live message, runs and the event journal.

use serde_json::{Map, Value};
use sqlx::{SqliteConnection, SqlitePool};

use crate::error::{Error, Result};

/// Events kept per chat in the journal; older gaps are answered with a resync.
pub const JOURNAL_RETAIN_EVENTS: i64 = 2_000;
/// How often (in seqs) the journal of a chat is trimmed.
const JOURNAL_TRIM_EVERY: i64 = 256;
/// Longest accepted chat title, in characters.
pub const MAX_TITLE_CHARS: usize = 256;
/// Longest accepted client message id.
pub const MAX_CID_CHARS: usize = 128;

/// Outcome of [`insert_chat`].
pub enum Inserted {
    Yes,
    Exists { deleted: bool },
}

/// Inserts a chat row unless one with this id exists.
pub async fn insert_chat(conn: &mut SqliteConnection, id: &str, title: &str, now: i64) -> Result<Inserted> {
    let title: String = title.chars().take(MAX_TITLE_CHARS).collect();
    let done = sqlx::query(
        "INSERT INTO chats (id, title, created_at, updated_at, activity_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(id)
    .bind(&title)
    .bind(now)
    .bind(now)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() == 1 {
        return Ok(Inserted::Yes);
    }
    let deleted: Option<i64> =
        sqlx::query_scalar("SELECT deleted_at FROM chats WHERE id = ?").bind(id).fetch_one(conn).await?;
    Ok(Inserted::Exists { deleted: deleted.is_some() })
}

/// A transcript message ready to store.
#[derive(Debug, Clone)]
pub struct StoredMessage {
    pub role: String,
    pub cid: Option<String>,
    pub ts: i64,
    pub body: String,
}

impl StoredMessage {
    /// Validates an imported message object and fills `ts`/`content` defaults.
    pub fn from_import(mut message: Map<String, Value>, now: i64, idx: usize) -> Result<Self> {
        let role = match message.get("role").and_then(Value::as_str) {
            Some(r @ ("user" | "assistant")) => r.to_owned(),
            _ => {
                return Err(Error::bad_request(
                    "invalid_message",
                    format!("messages[{idx}].role must be \"user\" or \"assistant\""),
                ));
            }
        };
        match message.get("content") {
            None | Some(Value::Null) => {
                message.insert("content".into(), Value::String(String::new()));
            }
            Some(Value::String(_)) => {}
            Some(_) => {
                return Err(Error::bad_request("invalid_message", format!("messages[{idx}].content must be a string")));
            }
        }
        if let Some(blocks) = message.get("blocks")
            && !blocks.is_array()
        {
            return Err(Error::bad_request("invalid_message", format!("messages[{idx}].blocks must be a list")));
        }
        let ts = match message.get("ts") {
            Some(v) => v.as_i64().filter(|t| *t > 0).ok_or_else(|| {
                Error::bad_request("invalid_message", format!("messages[{idx}].ts must be a positive integer"))
            })?,
            None => {
                let ts = now + i64::try_from(idx).unwrap_or(0);
                message.insert("ts".into(), ts.into());
                ts
            }
        };
        let cid = match message.get("cid") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) if !c.is_empty() && c.chars().count() <= MAX_CID_CHARS => Some(c.clone()),
            Some(_) => {
                return Err(Error::bad_request(
                    "invalid_message",
                    format!("messages[{idx}].cid must be a string of 1 to {MAX_CID_CHARS} characters"),
                ));
            }
        };
        Ok(Self { role, cid, ts, body: Value::Object(message).to_string() })
    }
}

/// Appends a message to the end of a chat's transcript; returns its index.
pub async fn push_message(conn: &mut SqliteConnection, chat_id: &str, message: &StoredMessage) -> Result<i64> {
    let idx: i64 = sqlx::query_scalar(
        "UPDATE chats SET message_count = message_count + 1 WHERE id = ? RETURNING message_count - 1",
    )
    .bind(chat_id)
    .fetch_one(&mut *conn)
    .await?;
    let inserted =
        sqlx::query("INSERT INTO chat_messages (chat_id, idx, role, cid, ts, body) VALUES (?, ?, ?, ?, ?, ?)")
            .bind(chat_id)
            .bind(idx)
            .bind(&message.role)
            .bind(&message.cid)
            .bind(message.ts)
            .bind(&message.body)
            .execute(conn)
            .await;
    match inserted {
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
            Err(Error::bad_request("duplicate_cid", "Two messages share the same cid."))
        }
        other => other.map(|_| idx).map_err(Error::from),
    }
}

/// Moves a chat's activity timestamp forward (the drawer sorts on it).
pub async fn touch_activity(conn: &mut SqliteConnection, chat_id: &str, at: i64) -> Result<()> {
    sqlx::query("UPDATE chats SET activity_at = max(activity_at, ?), updated_at = max(updated_at, ?) WHERE id = ?")
        .bind(at)
        .bind(at)
        .bind(chat_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// The journal head of a live (not deleted) chat.
pub async fn head_seq(conn: &mut SqliteConnection, chat_id: &str) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar("SELECT last_seq FROM chats WHERE id = ? AND deleted_at IS NULL")
        .bind(chat_id)
        .fetch_optional(conn)
        .await?)
}

/// Assigns the next seq of the chat to `body`, stores it, and returns `(seq, json)`.
pub async fn append_event(
    conn: &mut SqliteConnection,
    chat_id: &str,
    mut body: Map<String, Value>,
) -> Result<(i64, String)> {
    let seq: i64 = sqlx::query_scalar(
        "UPDATE chats SET last_seq = last_seq + 1 WHERE id = ? AND deleted_at IS NULL RETURNING last_seq",
    )
    .bind(chat_id)
    .fetch_optional(&mut *conn)
    .await?
    .ok_or_else(|| Error::not_found("chat_not_found", "No such chat."))?;
    body.insert("seq".into(), seq.into());
    let data = Value::Object(body).to_string();
    sqlx::query("INSERT INTO chat_events (chat_id, seq, data, created_at) VALUES (?, ?, ?, ?)")
        .bind(chat_id)
        .bind(seq)
        .bind(&data)
        .bind(crate::db::now_ms())
        .execute(&mut *conn)
        .await?;
    if seq % JOURNAL_TRIM_EVERY == 0 {
        sqlx::query("DELETE FROM chat_events WHERE chat_id = ? AND seq <= ?")
            .bind(chat_id)
            .bind(seq - JOURNAL_RETAIN_EVENTS)
            .execute(conn)
            .await?;
    }
    Ok((seq, data))
}

/// Journal events after `after`, oldest first, at most `limit`.
pub async fn events_after(pool: &SqlitePool, chat_id: &str, after: i64, limit: i64) -> Result<Vec<(i64, String)>> {
    Ok(sqlx::query_as("SELECT seq, data FROM chat_events WHERE chat_id = ? AND seq > ? ORDER BY seq LIMIT ?")
        .bind(chat_id)
        .bind(after)
        .bind(limit)
        .fetch_all(pool)
        .await?)
}

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

/// True when `run_id` names a running run (read pool; used by agent-token checks).
pub async fn run_is_running_read(pool: &SqlitePool, run_id: &str) -> Result<bool> {
    let found: Option<i64> = sqlx::query_scalar("SELECT 1 FROM chat_runs WHERE id = ? AND status = 'running'")
        .bind(run_id)
        .fetch_optional(pool)
        .await?;
    Ok(found.is_some())
}
