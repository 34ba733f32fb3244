//! SQL for transcripts: the rows of `chat_messages` and the full text of reduced tool outputs.

use sqlx::{SqliteConnection, SqlitePool};

use crate::error::{Domain, Error, Result};

/// A transcript row ready to store: its JSON body and the columns indexed from it.
#[derive(Debug, Clone, Copy)]
pub struct NewMessage<'a> {
    pub role: &'a str,
    pub cid: Option<&'a str>,
    pub ts: i64,
    pub body: &'a str,
}

/// Appends a message to the end of a chat's transcript; returns its index.
pub async fn push_message(conn: &mut SqliteConnection, chat_id: &str, message: NewMessage<'_>) -> Result<i64> {
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
            .bind(message.role)
            .bind(message.cid)
            .bind(message.ts)
            .bind(message.body)
            .execute(conn)
            .await;
    match inserted {
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Err(Domain::DuplicateCid.into()),
        other => other.map(|_| idx).map_err(Error::from),
    }
}

/// Rows per multi-row `INSERT` of a bulk append (6 parameters each, far below SQLite's 32,766).
pub(crate) const INSERT_CHUNK_ROWS: usize = 128;

/// `head` followed by `rows` groups of `columns` placeholders: `(?, ?), (?, ?)`.
pub(crate) fn multi_row_sql(head: &str, columns: usize, rows: usize, tail: &str) -> String {
    let group = format!("({})", vec!["?"; columns].join(", "));
    format!("{head} {}{tail}", vec![group; rows].join(", "))
}

/// Appends `messages`, in order, to the end of a chat's transcript: one counter update and a
/// multi-row insert per [`INSERT_CHUNK_ROWS`] (an import of 2,000 messages is 17 statements,
/// not 4,000). Returns the index of the first.
pub async fn push_messages(conn: &mut SqliteConnection, chat_id: &str, messages: &[NewMessage<'_>]) -> Result<i64> {
    let n = i64::try_from(messages.len()).map_err(|_| Error::Internal("too many messages".into()))?;
    let first: i64 = sqlx::query_scalar(
        "UPDATE chats SET message_count = message_count + ?1 WHERE id = ?2 RETURNING message_count - ?1",
    )
    .bind(n)
    .bind(chat_id)
    .fetch_one(&mut *conn)
    .await?;
    let mut idx = first;
    for chunk in messages.chunks(INSERT_CHUNK_ROWS) {
        let sql =
            multi_row_sql("INSERT INTO chat_messages (chat_id, idx, role, cid, ts, body) VALUES", 6, chunk.len(), "");
        // Full chunks share one prepared statement; the last, shorter one is used once.
        let mut query = sqlx::query(&sql).persistent(chunk.len() == INSERT_CHUNK_ROWS);
        for m in chunk {
            query = query.bind(chat_id).bind(idx).bind(m.role).bind(m.cid).bind(m.ts).bind(m.body);
            idx += 1;
        }
        match query.execute(&mut *conn).await {
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => return Err(Domain::DuplicateCid.into()),
            other => other.map_err(Error::from)?,
        };
    }
    Ok(first)
}

/// The body of a transcript message with this cid.
pub async fn message_by_cid(conn: &mut SqliteConnection, chat_id: &str, cid: &str) -> Result<Option<String>> {
    Ok(sqlx::query_scalar("SELECT body FROM chat_messages WHERE chat_id = ? AND cid = ?")
        .bind(chat_id)
        .bind(cid)
        .fetch_optional(conn)
        .await?)
}

/// The cid of the chat's newest user message.
pub async fn last_user_cid(conn: &mut SqliteConnection, chat_id: &str) -> Result<Option<String>> {
    Ok(sqlx::query_scalar(
        "SELECT cid FROM chat_messages WHERE chat_id = ? AND role = 'user' ORDER BY idx DESC LIMIT 1",
    )
    .bind(chat_id)
    .fetch_optional(conn)
    .await?
    .flatten())
}

/// The owner's last visible message and what follows it: what Regenerate works on.
#[derive(Debug, Clone)]
pub struct LastExchange {
    /// The owner's message: its index and stored body.
    pub user_idx: i64,
    pub user_body: String,
    /// Rows after it (replies, hidden continuations).
    pub rows_after: i64,
    /// The highest `version` among them (`None`: no regenerated attempt yet).
    pub max_version: Option<i64>,
    /// A handoff marker (a provider switch, a compaction) follows it.
    pub handoff_after: bool,
}

/// The chat's [`LastExchange`], or `None` when the owner has sent nothing visible.
pub async fn last_exchange(conn: &mut SqliteConnection, chat_id: &str) -> Result<Option<LastExchange>> {
    // Read from the newest row back (the primary key's order): the owner's last message is
    // normally a few rows from the end.
    let user: Option<(i64, String)> = sqlx::query_as(
        "SELECT idx, body FROM chat_messages
         WHERE chat_id = ? AND role = 'user' AND coalesce(json_extract(body, '$.hidden'), 0) = 0
         ORDER BY idx DESC LIMIT 1",
    )
    .bind(chat_id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some((user_idx, user_body)) = user else { return Ok(None) };
    let (rows_after, max_version, handoff_after): (i64, Option<i64>, Option<bool>) = sqlx::query_as(
        "SELECT count(*), max(json_extract(body, '$.version')),
                max(coalesce(json_extract(body, '$.blocks[0].type') = 'handoff', 0))
         FROM chat_messages WHERE chat_id = ? AND idx > ?",
    )
    .bind(chat_id)
    .bind(user_idx)
    .fetch_one(conn)
    .await?;
    Ok(Some(LastExchange { user_idx, user_body, rows_after, max_version, handoff_after: handoff_after == Some(true) }))
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

/// The stored full text of a reduced tool output.
pub async fn tool_output(pool: &SqlitePool, chat_id: &str, tool_use_id: &str) -> Result<Option<String>> {
    Ok(sqlx::query_scalar("SELECT content FROM tool_outputs WHERE chat_id = ? AND tool_use_id = ?")
        .bind(chat_id)
        .bind(tool_use_id)
        .fetch_optional(pool)
        .await?)
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
