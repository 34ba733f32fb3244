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

/// One row of the drawer list.
#[derive(Debug, sqlx::FromRow, serde::Serialize)]
pub struct ChatSummary {
    pub id: String,
    pub title: String,
    pub provider: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub activity_at: i64,
    pub pinned_at: Option<i64>,
    pub has_messages: bool,
    pub running: bool,
    pub pending_question_id: Option<String>,
    pub queued: i64,
}

/// Live chats: pinned first (oldest pin first), then by latest activity.
pub async fn list(pool: &SqlitePool) -> Result<Vec<ChatSummary>> {
    Ok(sqlx::query_as(
        "SELECT c.id, c.title, c.provider, c.created_at, c.updated_at, c.activity_at, c.pinned_at,
                c.message_count > 0 AS has_messages,
                EXISTS (SELECT 1 FROM chat_runs r WHERE r.chat_id = c.id AND r.status = 'running') AS running,
                c.pending_question_id,
                (SELECT count(*) FROM chat_pending p WHERE p.chat_id = c.id) AS queued
         FROM chats c
         WHERE c.deleted_at IS NULL AND (c.app_id IS NULL OR c.owner_visible = 1)
         ORDER BY c.pinned_at IS NULL, c.pinned_at, c.activity_at DESC, c.id",
    )
    .fetch_all(pool)
    .await?)
}

/// The chat row fields the detail view and the turn runner need.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ChatRow {
    pub id: String,
    pub title: String,
    pub title_locked: bool,
    pub provider: Option<String>,
    pub session_id: Option<String>,
    pub agent_settings: Option<String>,
    pub approval_policy: String,
    pub system_prompt_id: Option<String>,
    pub allowed_tools: Option<String>,
    pub pending_question_id: Option<String>,
    pub last_seq: i64,
    pub message_count: i64,
    pub pinned_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    pub activity_at: i64,
    pub deleted_at: Option<i64>,
}

/// A chat row (deleted or not).
pub async fn get<'e, E: sqlx::SqliteExecutor<'e>>(executor: E, id: &str) -> Result<Option<ChatRow>> {
    Ok(sqlx::query_as(
        "SELECT id, title, title_locked, provider, session_id, agent_settings, approval_policy, system_prompt_id,
                allowed_tools, pending_question_id, last_seq, message_count, pinned_at, created_at, updated_at,
                activity_at, deleted_at
         FROM chats WHERE id = ?",
    )
    .bind(id)
    .fetch_optional(executor)
    .await?)
}

/// One page of a chat, read in a single snapshot.
#[derive(Debug)]
pub struct Page {
    pub chat: ChatRow,
    /// The page's message bodies, oldest first, already joined with commas (a JSON array
    /// without its brackets).
    pub messages: String,
    /// Index of the first message of the page.
    pub offset: i64,
    /// `(run_id, body, upto_seq)` of the running turn's live message.
    pub live: Option<(String, String, i64)>,
    /// Queued message bodies in order, joined with commas.
    pub pending: String,
    pub running_run: Option<String>,
}

#[derive(sqlx::FromRow)]
struct PageRow {
    #[sqlx(flatten)]
    chat: ChatRow,
    running_run: Option<String>,
    live_run: Option<String>,
    live_body: Option<String>,
    live_seq: Option<i64>,
    pending: Option<String>,
    messages: Option<String>,
}

/// Reads the newest `limit` messages before index `before` (or the newest overall) with the
/// live message, queue and run state — one statement, so one consistent snapshot.
pub async fn page(pool: &SqlitePool, id: &str, limit: i64, before: Option<i64>) -> Result<Option<Page>> {
    let before = before.unwrap_or(i64::MAX);
    let row: Option<PageRow> = sqlx::query_as(
        "SELECT c.id, c.title, c.title_locked, c.provider, c.session_id, c.agent_settings, c.approval_policy,
                c.system_prompt_id, c.allowed_tools, c.pending_question_id, c.last_seq, c.message_count,
                c.pinned_at, c.created_at, c.updated_at, c.activity_at, c.deleted_at,
                (SELECT r.id FROM chat_runs r WHERE r.chat_id = ?1 AND r.status = 'running') AS running_run,
                l.run_id AS live_run, l.body AS live_body, l.upto_seq AS live_seq,
                (SELECT group_concat(p.body, ',' ORDER BY p.position) FROM chat_pending p WHERE p.chat_id = ?1) AS pending,
                (SELECT group_concat(m.body, ',' ORDER BY m.idx)
                   FROM (SELECT idx, body FROM chat_messages WHERE chat_id = ?1 AND idx < ?2 ORDER BY idx DESC LIMIT ?3) m
                ) AS messages
         FROM chats c LEFT JOIN chat_live l ON l.chat_id = c.id
         WHERE c.id = ?1",
    )
    .bind(id)
    .bind(before)
    .bind(limit)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| {
        // Transcript indexes are contiguous from 0, so the page start follows from the count.
        let end = r.chat.message_count.min(before);
        let offset = (end - limit).max(0);
        let live = match (r.live_run, r.live_body, r.live_seq) {
            (Some(run), Some(body), Some(seq)) => Some((run, body, seq)),
            _ => None,
        };
        Page {
            chat: r.chat,
            messages: r.messages.unwrap_or_default(),
            offset,
            live,
            pending: r.pending.unwrap_or_default(),
            running_run: r.running_run,
        }
    }))
}

/// The stored full text of a reduced tool output.
pub async fn tool_output(pool: &SqlitePool, chat_id: &str, tool_use_id: &str) -> Result<Option<String>> {
    Ok(sqlx::query_scalar("SELECT content FROM tool_outputs WHERE chat_id = ? AND tool_use_id = ?")
        .bind(chat_id)
        .bind(tool_use_id)
        .fetch_optional(pool)
        .await?)
}

/// The oldest journal seq still stored for a chat (None when the journal is empty).
pub async fn oldest_event_seq(pool: &SqlitePool, chat_id: &str) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar("SELECT min(seq) FROM chat_events WHERE chat_id = ?").bind(chat_id).fetch_one(pool).await?)
}

/// A stored system prompt by id.
pub async fn prompt(pool: &SqlitePool, id: &str) -> Result<Option<String>> {
    Ok(sqlx::query_scalar("SELECT content FROM system_prompts WHERE id = ?").bind(id).fetch_optional(pool).await?)
}

/// Runs of a chat, newest first (usage view).
#[derive(Debug, sqlx::FromRow, serde::Serialize)]
pub struct RunRow {
    pub id: String,
    pub status: String,
    pub provider: Option<String>,
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

// ---- writes (called only from the writer actor) ----

/// The body of a transcript message with this cid.
pub async fn message_by_cid(conn: &mut SqliteConnection, chat_id: &str, cid: &str) -> Result<Option<String>> {
    Ok(sqlx::query_scalar("SELECT body FROM chat_messages WHERE chat_id = ? AND cid = ?")
        .bind(chat_id)
        .bind(cid)
        .fetch_optional(conn)
        .await?)
}

/// The queued messages of a chat: `(cid, body)` in order.
pub async fn pending_list(conn: &mut SqliteConnection, chat_id: &str) -> Result<Vec<(String, String)>> {
    Ok(sqlx::query_as("SELECT cid, body FROM chat_pending WHERE chat_id = ? ORDER BY position")
        .bind(chat_id)
        .fetch_all(conn)
        .await?)
}

/// Queues a message at the end; returns its 1-based position.
pub async fn push_pending(conn: &mut SqliteConnection, chat_id: &str, cid: &str, body: &str, now: i64) -> Result<i64> {
    let position: i64 = sqlx::query_scalar("SELECT coalesce(max(position), 0) + 1 FROM chat_pending WHERE chat_id = ?")
        .bind(chat_id)
        .fetch_one(&mut *conn)
        .await?;
    sqlx::query("INSERT INTO chat_pending (chat_id, cid, position, body, created_at) VALUES (?, ?, ?, ?, ?)")
        .bind(chat_id)
        .bind(cid)
        .bind(position)
        .bind(body)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    let count: i64 =
        sqlx::query_scalar("SELECT count(*) FROM chat_pending WHERE chat_id = ?").bind(chat_id).fetch_one(conn).await?;
    Ok(count)
}

/// Replaces a queued message's body; false if it is no longer queued.
pub async fn update_pending(conn: &mut SqliteConnection, chat_id: &str, cid: &str, body: &str) -> Result<bool> {
    let done = sqlx::query("UPDATE chat_pending SET body = ? WHERE chat_id = ? AND cid = ?")
        .bind(body)
        .bind(chat_id)
        .bind(cid)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Removes a queued message; false if it was not queued.
pub async fn delete_pending(conn: &mut SqliteConnection, chat_id: &str, cid: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM chat_pending WHERE chat_id = ? AND cid = ?")
        .bind(chat_id)
        .bind(cid)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Empties the queue; returns the removed messages `(cid, body)` in order.
pub async fn take_pending(conn: &mut SqliteConnection, chat_id: &str) -> Result<Vec<(String, String)>> {
    let rows = pending_list(conn, chat_id).await?;
    sqlx::query("DELETE FROM chat_pending WHERE chat_id = ?").bind(chat_id).execute(conn).await?;
    Ok(rows)
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

/// Sets the title; `locked` marks it as chosen by the owner.
pub async fn set_title(conn: &mut SqliteConnection, chat_id: &str, title: &str, locked: bool, now: i64) -> Result<()> {
    let title: String = title.chars().take(MAX_TITLE_CHARS).collect();
    sqlx::query("UPDATE chats SET title = ?, title_locked = title_locked OR ?, updated_at = ? WHERE id = ?")
        .bind(title)
        .bind(locked)
        .bind(now)
        .bind(chat_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Sets or clears the "waiting on a question" marker.
pub async fn set_pending_question(conn: &mut SqliteConnection, chat_id: &str, question_id: Option<&str>) -> Result<()> {
    sqlx::query("UPDATE chats SET pending_question_id = ? WHERE id = ?")
        .bind(question_id)
        .bind(chat_id)
        .execute(conn)
        .await?;
    Ok(())
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

/// Records the provider session of a chat (and of its run).
pub async fn set_session(conn: &mut SqliteConnection, chat_id: &str, run_id: &str, session_id: &str) -> Result<()> {
    sqlx::query("UPDATE chats SET session_id = ? WHERE id = ?")
        .bind(session_id)
        .bind(chat_id)
        .execute(&mut *conn)
        .await?;
    sqlx::query("UPDATE chat_runs SET provider_session_id = ? WHERE id = ?")
        .bind(session_id)
        .bind(run_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Stores the full text of a large tool output.
pub async fn stash_tool_output(
    conn: &mut SqliteConnection,
    chat_id: &str,
    tool_use_id: &str,
    content: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO tool_outputs (chat_id, tool_use_id, content, created_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (chat_id, tool_use_id) DO UPDATE SET content = excluded.content",
    )
    .bind(chat_id)
    .bind(tool_use_id)
    .bind(content)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks a chat deleted.
pub async fn soft_delete(conn: &mut SqliteConnection, chat_id: &str, now: i64) -> Result<bool> {
    let done = sqlx::query("UPDATE chats SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL")
        .bind(now)
        .bind(chat_id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Undeletes a chat deleted after `cutoff`; false if it is not deleted or too old.
pub async fn recover(conn: &mut SqliteConnection, chat_id: &str, cutoff: i64) -> Result<bool> {
    let done =
        sqlx::query("UPDATE chats SET deleted_at = NULL WHERE id = ? AND deleted_at IS NOT NULL AND deleted_at >= ?")
            .bind(chat_id)
            .bind(cutoff)
            .execute(conn)
            .await?;
    Ok(done.rows_affected() == 1)
}

/// Permanently removes chats deleted before `cutoff` (cascades to everything they own).
pub async fn purge_deleted(conn: &mut SqliteConnection, cutoff: i64) -> Result<u64> {
    let done = sqlx::query("DELETE FROM chats WHERE deleted_at IS NOT NULL AND deleted_at < ?")
        .bind(cutoff)
        .execute(conn)
        .await?;
    Ok(done.rows_affected())
}

/// Stores a prompt (content-addressed) and pins it on the chat if the chat has none yet;
/// returns the chat's prompt `(id, content)`.
pub async fn pin_prompt(
    conn: &mut SqliteConnection,
    chat_id: &str,
    id: &str,
    content: &str,
    now: i64,
) -> Result<(String, String)> {
    sqlx::query("INSERT INTO system_prompts (id, content, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING")
        .bind(id)
        .bind(content)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    sqlx::query("UPDATE chats SET system_prompt_id = ? WHERE id = ? AND system_prompt_id IS NULL")
        .bind(id)
        .bind(chat_id)
        .execute(&mut *conn)
        .await?;
    Ok(sqlx::query_as(
        "SELECT p.id, p.content FROM chats c JOIN system_prompts p ON p.id = c.system_prompt_id WHERE c.id = ?",
    )
    .bind(chat_id)
    .fetch_one(conn)
    .await?)
}

/// Settings a PATCH may change; `None` leaves a field alone.
#[derive(Debug, Default, Clone)]
pub struct ChatSettings {
    pub provider: Option<String>,
    pub approval_policy: Option<String>,
    pub agent_settings: Option<Option<String>>,
    pub allowed_tools: Option<String>,
    pub pinned_at: Option<Option<i64>>,
}

/// Applies [`ChatSettings`].
pub async fn update_settings(conn: &mut SqliteConnection, chat_id: &str, s: &ChatSettings, now: i64) -> Result<()> {
    sqlx::query(
        "UPDATE chats SET
            provider = coalesce(?, provider),
            approval_policy = coalesce(?, approval_policy),
            agent_settings = CASE WHEN ? THEN ? ELSE agent_settings END,
            allowed_tools = coalesce(?, allowed_tools),
            pinned_at = CASE WHEN ? THEN ? ELSE pinned_at END,
            updated_at = ?
         WHERE id = ?",
    )
    .bind(&s.provider)
    .bind(&s.approval_policy)
    .bind(s.agent_settings.is_some())
    .bind(s.agent_settings.clone().flatten())
    .bind(&s.allowed_tools)
    .bind(s.pinned_at.is_some())
    .bind(s.pinned_at.flatten())
    .bind(now)
    .bind(chat_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// The newest transcript message containing the question `question_id`: `(idx, body)`.
pub async fn message_with_question(
    conn: &mut SqliteConnection,
    chat_id: &str,
    question_id: &str,
) -> Result<Option<(i64, String)>> {
    let pattern = format!("%\"question_id\":\"{}\"%", question_id.replace(['%', '_', '\\'], ""));
    Ok(sqlx::query_as(
        "SELECT idx, body FROM chat_messages WHERE chat_id = ? AND role = 'assistant' AND body LIKE ?
         ORDER BY idx DESC LIMIT 1",
    )
    .bind(chat_id)
    .bind(pattern)
    .fetch_optional(conn)
    .await?)
}

/// Rewrites one transcript message.
pub async fn replace_message(conn: &mut SqliteConnection, chat_id: &str, idx: i64, body: &str) -> Result<()> {
    sqlx::query("UPDATE chat_messages SET body = ? WHERE chat_id = ? AND idx = ?")
        .bind(body)
        .bind(chat_id)
        .bind(idx)
        .execute(conn)
        .await?;
    Ok(())
}
