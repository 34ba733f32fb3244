//! SQL for chat search: the documents the writer keeps (`chat_search_docs`, mirrored into the
//! FTS5 table `chat_search` by triggers, migration `0010`) and the one search query.

use std::borrow::Cow;

use sqlx::{FromRow, SqliteConnection, SqlitePool};

use crate::error::Result;
use crate::protocol::{Block, Message, Role};

/// The `idx` of a chat's title document.
pub const TITLE_IDX: i64 = -1;
/// Marks around each match in a snippet (control characters never stored in a document).
pub const MATCH_START: char = '\u{2}';
/// See [`MATCH_START`].
pub const MATCH_END: char = '\u{3}';
/// Words of context a snippet shows around its matches (SQLite allows at most 64).
const SNIPPET_TOKENS: i64 = 24;

/// Indexes one transcript message (call in the transaction that stores it).
pub async fn index_message(conn: &mut SqliteConnection, chat_id: &str, idx: i64, ts: i64, text: &str) -> Result<()> {
    sqlx::query(
        "INSERT INTO chat_search_docs (chat_id, idx, ts, text) VALUES (?, ?, ?, ?)
         ON CONFLICT (chat_id, idx) DO UPDATE SET ts = excluded.ts, text = excluded.text",
    )
    .bind(chat_id)
    .bind(idx)
    .bind(ts)
    .bind(text)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records that messages `from..to` of a chat, just stored by an import, wait for their search
/// documents (call in the transaction that stores them). The writer builds the documents from the
/// stored messages after the commit ([`index_backlog`]), so a large import writes each message's
/// words once, not twice, and never waits for tokenizing or the index's merges.
pub async fn queue_backlog(conn: &mut SqliteConnection, chat_id: &str, from: i64, to: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO chat_search_backlog (chat_id, next_idx, end_idx) VALUES (?, ?, ?)
         ON CONFLICT (chat_id) DO UPDATE
         SET next_idx = min(next_idx, excluded.next_idx), end_idx = max(end_idx, excluded.end_idx)",
    )
    .bind(chat_id)
    .bind(from)
    .bind(to)
    .execute(conn)
    .await?;
    Ok(())
}

/// A chat's messages waiting for their search documents: `(next_idx, end_idx)`.
pub async fn backlog_of(conn: &mut SqliteConnection, chat_id: &str) -> Result<Option<(i64, i64)>> {
    Ok(sqlx::query_as("SELECT next_idx, end_idx FROM chat_search_backlog WHERE chat_id = ?")
        .bind(chat_id)
        .fetch_optional(conn)
        .await?)
}

/// Writes the documents of up to `limit` waiting messages (the oldest range first) and indexes
/// them; returns false when nothing waits. A stored body that no longer
/// reads as a message is skipped: search misses it, nothing else does.
pub async fn index_backlog(conn: &mut SqliteConnection, limit: i64) -> Result<bool> {
    let Some((id, chat_id, next, end)): Option<(i64, String, i64, i64)> =
        sqlx::query_as("SELECT id, chat_id, next_idx, end_idx FROM chat_search_backlog ORDER BY id LIMIT 1")
            .fetch_optional(&mut *conn)
            .await?
    else {
        return Ok(false);
    };
    let rows: Vec<(i64, i64, String)> = sqlx::query_as(
        "SELECT idx, ts, body FROM chat_messages WHERE chat_id = ? AND idx >= ? AND idx < ? ORDER BY idx LIMIT ?",
    )
    .bind(&chat_id)
    .bind(next)
    .bind(end)
    .bind(limit)
    .fetch_all(&mut *conn)
    .await?;
    let messages: Vec<(i64, i64, Message)> =
        rows.iter().filter_map(|(idx, ts, body)| Some((*idx, *ts, serde_json::from_str(body).ok()?))).collect();
    let docs: Vec<(i64, i64, Cow<'_, str>)> =
        messages.iter().filter_map(|(idx, ts, m)| Some((*idx, *ts, document_text(m)?))).collect();
    insert_documents(conn, &chat_id, &docs).await?;
    let reached = rows.last().map_or(end, |(idx, _, _)| idx + 1);
    if i64::try_from(rows.len()).unwrap_or(i64::MAX) < limit || reached >= end {
        sqlx::query("DELETE FROM chat_search_backlog WHERE id = ?").bind(id).execute(&mut *conn).await?;
    } else {
        sqlx::query("UPDATE chat_search_backlog SET next_idx = ? WHERE id = ?")
            .bind(reached)
            .bind(id)
            .execute(&mut *conn)
            .await?;
    }
    Ok(true)
}

/// Stores and indexes the documents of many messages, `(idx, ts, text)` each, in a few
/// multi-row statements.
async fn insert_documents(conn: &mut SqliteConnection, chat_id: &str, docs: &[(i64, i64, Cow<'_, str>)]) -> Result<()> {
    use crate::db::messages::INSERT_CHUNK_ROWS;
    for chunk in docs.chunks(INSERT_CHUNK_ROWS) {
        let sql = format!(
            "INSERT INTO chat_search_docs (chat_id, idx, ts, text) VALUES {}
             ON CONFLICT (chat_id, idx) DO UPDATE SET ts = excluded.ts, text = excluded.text",
            vec!["(?, ?, ?, ?)"; chunk.len()].join(", ")
        );
        let mut query = sqlx::query(&sql).persistent(chunk.len() == INSERT_CHUNK_ROWS);
        for (idx, ts, text) in chunk {
            query = query.bind(chat_id).bind(idx).bind(ts).bind(text.as_ref());
        }
        query.execute(&mut *conn).await?;
    }
    Ok(())
}

/// True while imported messages still wait for their search documents (search may miss them).
/// A read of the small backlog table: no statement that compiles the index's triggers (the
/// full-text table is not even opened).
pub async fn indexing<'e>(db: impl sqlx::SqliteExecutor<'e>) -> Result<bool> {
    Ok(sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM chat_search_backlog)").fetch_one(db).await?)
}

/// Indexes a chat's current title (call in the transaction that sets it); the default title
/// of an unnamed chat is not indexed.
pub async fn index_title(conn: &mut SqliteConnection, chat_id: &str) -> Result<()> {
    sqlx::query(
        "INSERT INTO chat_search_docs (chat_id, idx, ts, text)
         SELECT id, ?, updated_at, title FROM chats
         WHERE id = ? AND NOT (title = 'New chat' AND title_locked = 0)
         ON CONFLICT (chat_id, idx) DO UPDATE SET ts = excluded.ts, text = excluded.text",
    )
    .bind(TITLE_IDX)
    .bind(chat_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// One matching document.
#[derive(Debug, FromRow)]
pub struct Hit {
    /// The document id: the cursor of the next page.
    pub id: i64,
    pub chat_id: String,
    pub title: String,
    /// [`TITLE_IDX`] for a title.
    pub idx: i64,
    pub ts: i64,
    pub snippet: String,
}

/// Documents matching an FTS5 query, newest document first, in chats the owner's drawer
/// shows; `before` is the id of the last hit of the previous page.
pub async fn search(pool: &SqlitePool, fts_query: &str, before: Option<i64>, limit: i64) -> Result<Vec<Hit>> {
    Ok(sqlx::query_as(
        "SELECT d.id, d.chat_id, c.title, d.idx,
                CASE WHEN d.idx < 0 THEN c.activity_at ELSE d.ts END AS ts,
                snippet(chat_search, 0, ?, ?, '…', ?) AS snippet
         FROM chat_search
         JOIN chat_search_docs AS d ON d.id = chat_search.rowid
         JOIN chats AS c ON c.id = d.chat_id
         WHERE chat_search MATCH ? AND chat_search.rowid < ?
           AND c.deleted_at IS NULL AND (c.app_id IS NULL OR c.owner_visible = 1)
         ORDER BY chat_search.rowid DESC
         LIMIT ?",
    )
    .bind(MATCH_START.to_string())
    .bind(MATCH_END.to_string())
    .bind(SNIPPET_TOKENS)
    .bind(fts_query)
    .bind(before.unwrap_or(i64::MAX))
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

/// Longest text indexed per document, in characters (the rest of a message is not searched).
pub const MAX_DOCUMENT_CHARS: usize = 20_000;

/// The words of a transcript message that search indexes, if any: the owner's words unless
/// hidden, the agent's text blocks joined by a newline. Tool calls and outputs, thinking,
/// questions and errors are left out. Migration `0010` back-fills with the same rules.
pub fn document_text(message: &Message) -> Option<Cow<'_, str>> {
    let text: Cow<'_, str> = match message.role {
        Role::User if message.hidden => return None,
        Role::User => Cow::Borrowed(&message.content),
        Role::Assistant => {
            let mut texts = message.blocks.iter().flatten().filter_map(|b| match b {
                Block::Text { content, .. } if !content.is_empty() => Some(content.as_str()),
                _ => None,
            });
            match (texts.next(), texts.next()) {
                (None, _) => return None,
                // One text block (the usual reply) is borrowed, not copied.
                (Some(one), None) => Cow::Borrowed(one),
                (Some(first), Some(second)) => {
                    let mut all = vec![first, second];
                    all.extend(texts);
                    Cow::Owned(all.join("\n"))
                }
            }
        }
    };
    // Most texts are short and hold no marker: kept as they are, not rebuilt char by char
    // (a byte length within the cap is a char count within it; the markers are single bytes).
    let clean = text.len() <= MAX_DOCUMENT_CHARS && !text.bytes().any(|b| b == MATCH_START_BYTE || b == MATCH_END_BYTE);
    let text = if clean {
        text
    } else {
        Cow::Owned(text.chars().filter(|c| *c != MATCH_START && *c != MATCH_END).take(MAX_DOCUMENT_CHARS).collect())
    };
    (!text.trim().is_empty()).then_some(text)
}

/// [`MATCH_START`] and [`MATCH_END`] as the bytes they are in UTF-8.
const MATCH_START_BYTE: u8 = 2;
const MATCH_END_BYTE: u8 = 3;

#[cfg(test)]
mod tests {
    use super::*;

    fn user(content: &str) -> Message {
        let text = serde_json::json!({ "role": "user", "content": content }).to_string();
        Message::import(serde_json::from_str(&text).expect("fields"), 1_000, 0).expect("message")
    }

    #[test]
    fn a_document_is_the_text_without_markers_and_within_the_cap() {
        assert_eq!(document_text(&user("plain words")).as_deref(), Some("plain words"));
        let marked = format!("a{MATCH_START}b{MATCH_END}c");
        assert_eq!(document_text(&user(&marked)).as_deref(), Some("abc"));
        let long = "é".repeat(MAX_DOCUMENT_CHARS + 5);
        let message = user(&long);
        let kept = document_text(&message).expect("text");
        assert_eq!(kept.chars().count(), MAX_DOCUMENT_CHARS, "the cap counts chars, not bytes");
        assert_eq!(document_text(&user("   ")), None);
    }
}
