//! SQL for the drawer list: one chat's summary, and pages of summaries in the drawer's order
//! (pinned first, oldest pin first; then newest activity; ties by id) after a keyset cursor.
//! Each page is a range scan of one of the two partial indexes of migration `0014`, so a page
//! costs the same at 200 chats and at 100,000.

use sqlx::SqlitePool;

use crate::error::Result;

/// One row of the drawer list.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow, serde::Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ChatSummary {
    pub id: String,
    pub title: String,
    pub provider: Option<crate::protocol::ProviderKind>,
    pub created_at: i64,
    pub updated_at: i64,
    pub activity_at: i64,
    pub pinned_at: Option<i64>,
    pub has_messages: bool,
    pub running: bool,
    pub pending_question_id: Option<String>,
    pub queued: i64,
}

/// The summary columns of `chats c` (read through `$index` when named), then the rest of the
/// statement. The visibility terms (`deleted_at`, `app_id`, `owner_visible`) are written exactly
/// as in the partial indexes of migration `0014`, so they can serve the page queries, which name
/// them with `INDEXED BY`: without statistics the planner preferred `chats_by_activity` and a
/// sort of the whole section (and SQLite refuses a query whose named index cannot serve it).
macro_rules! summaries {
    ($rest:literal) => {
        summaries!("", $rest)
    };
    ($index:literal, $rest:literal) => {
        concat!(
            "SELECT c.id, c.title, c.provider, c.created_at, c.updated_at, c.activity_at, c.pinned_at,
                    c.message_count > 0 AS has_messages,
                    EXISTS (SELECT 1 FROM chat_runs r WHERE r.chat_id = c.id AND r.status = 'running') AS running,
                    c.pending_question_id,
                    (SELECT count(*) FROM chat_pending p WHERE p.chat_id = c.id) AS queued
             FROM chats c ",
            $index,
            " ",
            $rest
        )
    };
}

/// Pinned chats after `(pinned_at ?1, activity_at ?2, id ?3)`, at most ?4. `>=` on the first
/// key lets the scan start at the cursor; the rest breaks the tie.
const PINNED_PAGE: &str = summaries!(
    "INDEXED BY chats_drawer_pinned",
    "WHERE c.deleted_at IS NULL AND c.pinned_at IS NOT NULL AND (c.app_id IS NULL OR c.owner_visible = 1)
       AND c.pinned_at >= ?1
       AND (c.pinned_at > ?1 OR c.activity_at < ?2 OR (c.activity_at = ?2 AND c.id > ?3))
     ORDER BY c.pinned_at, c.activity_at DESC, c.id
     LIMIT ?4"
);

/// Unpinned chats after `(activity_at ?1, id ?2)`, at most ?3.
const RECENT_PAGE: &str = summaries!(
    "INDEXED BY chats_drawer_recent",
    "WHERE c.deleted_at IS NULL AND c.pinned_at IS NULL AND (c.app_id IS NULL OR c.owner_visible = 1)
       AND c.activity_at <= ?1
       AND (c.activity_at < ?1 OR c.id > ?2)
     ORDER BY c.activity_at DESC, c.id
     LIMIT ?3"
);

/// Where a page of the list ends: the sort key of its last row. The next page starts right
/// after it, whatever happened to that row since (renamed, deleted, moved), and rows inserted
/// or moved before it never shift the pages after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListCursor {
    /// After a pinned chat.
    Pinned { pinned_at: i64, activity_at: i64, id: String },
    /// After an unpinned chat.
    Recent { activity_at: i64, id: String },
}

/// Longest chat id a cursor may name (ids are at most 64 characters).
const MAX_CURSOR_ID_CHARS: usize = 64;

impl ListCursor {
    /// The cursor just after `chat`.
    pub fn after(chat: &ChatSummary) -> Self {
        match chat.pinned_at {
            Some(pinned_at) => Self::Pinned { pinned_at, activity_at: chat.activity_at, id: chat.id.clone() },
            None => Self::Recent { activity_at: chat.activity_at, id: chat.id.clone() },
        }
    }

    /// The text form (`p.<pinned_at>.<activity_at>.<id>` or `r.<activity_at>.<id>`).
    pub fn encode(&self) -> String {
        match self {
            Self::Pinned { pinned_at, activity_at, id } => format!("p.{pinned_at}.{activity_at}.{id}"),
            Self::Recent { activity_at, id } => format!("r.{activity_at}.{id}"),
        }
    }

    /// Reads [`Self::encode`]'s form; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let id_ok =
            |id: &str| !id.is_empty() && id.chars().count() <= MAX_CURSOR_ID_CHARS && !id.contains(char::is_control);
        match text.split_once('.')? {
            ("p", rest) => {
                let mut parts = rest.splitn(3, '.');
                let pinned_at = parts.next()?.parse().ok()?;
                let activity_at = parts.next()?.parse().ok()?;
                let id = parts.next().filter(|id| id_ok(id))?;
                Some(Self::Pinned { pinned_at, activity_at, id: id.to_owned() })
            }
            ("r", rest) => {
                let (activity_at, id) = rest.split_once('.')?;
                let activity_at = activity_at.parse().ok()?;
                id_ok(id).then(|| Self::Recent { activity_at, id: id.to_owned() })
            }
            _ => None,
        }
    }
}

/// The summary of one chat the drawer shows (live, and not an app's hidden chat).
pub async fn summary(pool: &SqlitePool, id: &str) -> Result<Option<ChatSummary>> {
    Ok(sqlx::query_as(summaries!(
        "WHERE c.id = ? AND c.deleted_at IS NULL AND (c.app_id IS NULL OR c.owner_visible = 1)"
    ))
    .bind(id)
    .fetch_optional(pool)
    .await?)
}

/// Up to `limit` chats in the drawer's order, starting after `cursor` (from the top without).
pub async fn page(pool: &SqlitePool, cursor: Option<&ListCursor>, limit: i64) -> Result<Vec<ChatSummary>> {
    let mut rows = Vec::new();
    let recent_after = match cursor {
        None => Some((i64::MAX, "")),
        Some(ListCursor::Recent { activity_at, id }) => Some((*activity_at, id.as_str())),
        Some(ListCursor::Pinned { .. }) => None,
    };
    if !matches!(cursor, Some(ListCursor::Recent { .. })) {
        let (pinned_at, activity_at, id) = match cursor {
            Some(ListCursor::Pinned { pinned_at, activity_at, id }) => (*pinned_at, *activity_at, id.as_str()),
            _ => (i64::MIN, i64::MAX, ""),
        };
        rows =
            sqlx::query_as(PINNED_PAGE).bind(pinned_at).bind(activity_at).bind(id).bind(limit).fetch_all(pool).await?;
    }
    let left = limit - i64::try_from(rows.len()).unwrap_or(limit);
    if left <= 0 {
        return Ok(rows);
    }
    let (activity_at, id) = recent_after.unwrap_or((i64::MAX, ""));
    let recent: Vec<ChatSummary> =
        sqlx::query_as(RECENT_PAGE).bind(activity_at).bind(id).bind(left).fetch_all(pool).await?;
    rows.extend(recent);
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_read_back_what_they_wrote_and_refuse_anything_else() {
        for cursor in [
            ListCursor::Pinned { pinned_at: 17, activity_at: -3, id: "a-b_c".into() },
            ListCursor::Recent { activity_at: 1_780_000_000_000, id: "id.with.dots".into() },
        ] {
            assert_eq!(ListCursor::parse(&cursor.encode()), Some(cursor));
        }
        for bad in ["", "r", "r.", "r.12", "r.12.", "r.x.id", "p.1.2", "p.1.x.id", "q.1.id", "r.1.\u{0}", "12"] {
            assert_eq!(ListCursor::parse(bad), None, "{bad:?}");
        }
        assert_eq!(ListCursor::parse(&format!("r.1.{}", "x".repeat(65))), None);
    }

    /// The flat cost rests on these plans: each page is a range scan of its partial index,
    /// never a scan of the table or a sort.
    #[tokio::test]
    async fn each_page_is_a_range_scan_of_its_index() {
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .connect("sqlite::memory:")
            .await
            .expect("memory db");
        crate::db::MIGRATOR.run(&pool).await.expect("migrate");
        for (sql, index) in [(PINNED_PAGE, "chats_drawer_pinned"), (RECENT_PAGE, "chats_drawer_recent")] {
            let plan: Vec<(i64, i64, i64, String)> =
                sqlx::query_as(&format!("EXPLAIN QUERY PLAN {sql}")).fetch_all(&pool).await.expect("plan");
            let lines: Vec<&str> = plan.iter().map(|(_, _, _, line)| line.as_str()).collect();
            let text = lines.join("\n");
            assert!(lines.iter().any(|l| l.starts_with("SEARCH c USING INDEX") && l.contains(index)), "{text}");
            assert!(!lines.iter().any(|l| l.contains("TEMP B-TREE") || *l == "SCAN c"), "{text}");
        }
    }
}
