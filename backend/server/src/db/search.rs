//! SQL for chat search: the documents the writer keeps (`chat_search_docs`, mirrored into the
//! FTS5 table `chat_search` by triggers, migration `0010`) and the one search query.

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

/// Indexes many transcript messages, `(idx, ts, text)` each, in a few multi-row statements
/// (call in the transaction that stores them).
pub async fn index_messages(conn: &mut SqliteConnection, chat_id: &str, docs: &[(i64, i64, String)]) -> Result<()> {
    use crate::db::messages::{INSERT_CHUNK_ROWS, multi_row_sql};
    for chunk in docs.chunks(INSERT_CHUNK_ROWS) {
        let sql = multi_row_sql(
            "INSERT INTO chat_search_docs (chat_id, idx, ts, text) VALUES",
            4,
            chunk.len(),
            " ON CONFLICT (chat_id, idx) DO UPDATE SET ts = excluded.ts, text = excluded.text",
        );
        let mut query = sqlx::query(&sql).persistent(chunk.len() == INSERT_CHUNK_ROWS);
        for (idx, ts, text) in chunk {
            query = query.bind(chat_id).bind(idx).bind(ts).bind(text);
        }
        query.execute(&mut *conn).await?;
    }
    Ok(())
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
pub fn document_text(message: &Message) -> Option<String> {
    let text = match message.role {
        Role::User if message.hidden => return None,
        Role::User => message.content.clone(),
        Role::Assistant => {
            let texts: Vec<&str> = message
                .blocks
                .iter()
                .flatten()
                .filter_map(|b| match b {
                    Block::Text { content, .. } if !content.is_empty() => Some(content.as_str()),
                    _ => None,
                })
                .collect();
            texts.join("\n")
        }
    };
    // Most texts are short and hold no marker: kept as they are, not rebuilt char by char
    // (a byte length within the cap is a char count within it).
    let clean = text.len() <= MAX_DOCUMENT_CHARS && !text.contains([MATCH_START, MATCH_END]);
    let text: String = if clean {
        text
    } else {
        text.chars().filter(|c| *c != MATCH_START && *c != MATCH_END).take(MAX_DOCUMENT_CHARS).collect()
    };
    (!text.trim().is_empty()).then_some(text)
}

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
        let kept = document_text(&user(&long)).expect("text");
        assert_eq!(kept.chars().count(), MAX_DOCUMENT_CHARS, "the cap counts chars, not bytes");
        assert_eq!(document_text(&user("   ")), None);
    }
}
