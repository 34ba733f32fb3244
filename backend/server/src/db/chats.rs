//! SQL for chat rows: create, one page of the detail (in one statement), settings, titles,
//! the question marker, soft delete and purge. The drawer list (`chat_list.rs`), transcripts,
//! runs, the journal and the queue have files of their own.

use sqlx::{SqliteConnection, SqlitePool};

use crate::error::Result;
use crate::protocol::ChatId;

/// Longest accepted chat title, in characters.
pub const MAX_TITLE_CHARS: usize = 256;

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

/// The chat row fields the detail view and the turn runner need.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ChatRow {
    pub id: String,
    pub title: String,
    pub title_locked: bool,
    pub provider: Option<crate::protocol::ProviderKind>,
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
    /// Continue by itself after a usage limit.
    pub auto_resume: bool,
    /// When a parked chat continues by itself (unix ms).
    pub resume_at: Option<i64>,
    /// Why it is parked: `usage_limit` or `restart`.
    pub resume_reason: Option<String>,
    /// The summary the next session starts from (after a provider switch or a compaction).
    pub handoff: Option<String>,
    /// The switch that wrote it.
    pub handoff_id: Option<String>,
}

/// A chat row (deleted or not).
pub async fn get<'e, E: sqlx::SqliteExecutor<'e>>(executor: E, id: &str) -> Result<Option<ChatRow>> {
    Ok(sqlx::query_as(
        "SELECT id, title, title_locked, provider, session_id, agent_settings, approval_policy, system_prompt_id,
                allowed_tools, pending_question_id, last_seq, message_count, pinned_at, created_at, updated_at,
                activity_at, deleted_at, auto_resume, resume_at, resume_reason, handoff, handoff_id
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
    /// The page's message bodies, oldest first, as a JSON array.
    pub messages: String,
    /// Index of the first message of the page.
    pub offset: i64,
    /// `(run_id, body, upto_seq)` of the running turn's live message.
    pub live: Option<(String, String, i64)>,
    /// Queued message bodies in order, as a JSON array.
    pub pending: String,
    pub running_run: Option<String>,
    /// The pinned goal's body (`GoalPin` JSON), if the chat has one.
    pub goal: Option<String>,
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
    goal: Option<String>,
}

/// Reads the newest `limit` messages before index `before` (or the newest overall) with the
/// live message, queue and run state — one statement, so one consistent snapshot.
pub async fn page(pool: &SqlitePool, id: &str, limit: i64, before: Option<i64>) -> Result<Option<Page>> {
    let before = before.unwrap_or(i64::MAX);
    let row: Option<PageRow> = sqlx::query_as(
        "SELECT c.id, c.title, c.title_locked, c.provider, c.session_id, c.agent_settings, c.approval_policy,
                c.system_prompt_id, c.allowed_tools, c.pending_question_id, c.last_seq, c.message_count,
                c.pinned_at, c.created_at, c.updated_at, c.activity_at, c.deleted_at, c.auto_resume, c.resume_at,
                c.resume_reason, c.handoff, c.handoff_id,
                (SELECT r.id FROM chat_runs r WHERE r.chat_id = ?1 AND r.status = 'running') AS running_run,
                l.run_id AS live_run, l.body AS live_body, l.upto_seq AS live_seq,
                (SELECT '[' || coalesce(group_concat(p.body, ',' ORDER BY p.position), '') || ']'
                   FROM chat_pending p WHERE p.chat_id = ?1) AS pending,
                (SELECT '[' || coalesce(group_concat(m.body, ',' ORDER BY m.idx), '') || ']'
                   FROM (SELECT idx, body FROM chat_messages WHERE chat_id = ?1 AND idx < ?2 ORDER BY idx DESC LIMIT ?3) m
                ) AS messages,
                (SELECT g.body FROM chat_goals g WHERE g.chat_id = ?1) AS goal
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
            messages: r.messages.unwrap_or_else(|| "[]".into()),
            offset,
            live,
            pending: r.pending.unwrap_or_else(|| "[]".into()),
            running_run: r.running_run,
            goal: r.goal,
        }
    }))
}

/// A stored system prompt by id.
pub async fn prompt(pool: &SqlitePool, id: &str) -> Result<Option<String>> {
    Ok(sqlx::query_scalar("SELECT content FROM system_prompts WHERE id = ?").bind(id).fetch_optional(pool).await?)
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
pub async fn purge_deleted(conn: &mut SqliteConnection, cutoff: i64) -> Result<Vec<ChatId>> {
    let ids: Vec<String> =
        sqlx::query_scalar("DELETE FROM chats WHERE deleted_at IS NOT NULL AND deleted_at < ? RETURNING id")
            .bind(cutoff)
            .fetch_all(conn)
            .await?;
    Ok(ids.into_iter().map(ChatId::from).collect())
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

/// The content of stored system prompt `id`.
pub async fn prompt_content(pool: &SqlitePool, id: &str) -> Result<Option<String>> {
    Ok(sqlx::query_scalar("SELECT content FROM system_prompts WHERE id = ?").bind(id).fetch_optional(pool).await?)
}

/// Settings a PATCH may change; `None` leaves a field alone.
#[derive(Debug, Default, Clone)]
pub struct ChatSettings {
    pub provider: Option<crate::protocol::ProviderKind>,
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
    .bind(s.provider)
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

/// Parks a chat until `at` (unix ms) for `reason`, or (`None`) clears its park.
pub async fn set_resume(conn: &mut SqliteConnection, chat_id: &str, park: Option<(i64, &str)>) -> Result<()> {
    sqlx::query("UPDATE chats SET resume_at = ?, resume_reason = ? WHERE id = ?")
        .bind(park.map(|(at, _)| at))
        .bind(park.map(|(_, reason)| reason))
        .bind(chat_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Turns a chat's automatic continuation after usage limits on or off (off also clears a
/// pending usage-limit park).
pub async fn set_auto_resume(conn: &mut SqliteConnection, chat_id: &str, on: bool) -> Result<()> {
    sqlx::query(
        "UPDATE chats SET auto_resume = ?1,
                resume_at = CASE WHEN ?1 = 0 AND resume_reason = 'usage_limit' THEN NULL ELSE resume_at END,
                resume_reason = CASE WHEN ?1 = 0 AND resume_reason = 'usage_limit' THEN NULL ELSE resume_reason END
         WHERE id = ?2",
    )
    .bind(on)
    .bind(chat_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// The parked chat that continues first: `(chat_id, resume_at)`.
pub async fn next_resume(pool: &SqlitePool) -> Result<Option<(String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT id, resume_at FROM chats WHERE resume_at IS NOT NULL AND deleted_at IS NULL
         ORDER BY resume_at LIMIT 1",
    )
    .fetch_optional(pool)
    .await?)
}

/// Hands the chat's session off: `provider` from now on, no session (the next turn starts a
/// new one, seeded with `summary`), the agent settings as given.
pub async fn set_handoff(
    conn: &mut SqliteConnection,
    chat_id: &str,
    provider: &str,
    summary: &str,
    switch_id: &str,
    agent_settings: Option<&str>,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "UPDATE chats SET provider = ?, session_id = NULL, handoff = ?, handoff_id = ?, agent_settings = ?,
                updated_at = ?
         WHERE id = ?",
    )
    .bind(provider)
    .bind(summary)
    .bind(switch_id)
    .bind(agent_settings)
    .bind(now)
    .bind(chat_id)
    .execute(conn)
    .await?;
    Ok(())
}
