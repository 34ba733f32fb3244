//! SQL for push subscriptions, stored notifications and the per-kind switches.

use sqlx::{SqliteConnection, SqlitePool};

use crate::error::Result;
use crate::protocol::NotificationKind;

/// A device that receives pushes.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Subscription {
    pub id: i64,
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
    pub label: String,
    pub app_id: Option<i64>,
    pub created_at: i64,
    pub last_ok_at: Option<i64>,
}

/// A new or renewed subscription.
#[derive(Debug, Clone)]
pub struct NewSubscription {
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
    pub label: String,
    pub app_id: Option<i64>,
}

/// Every subscription, oldest first.
pub async fn subscriptions(pool: &SqlitePool) -> Result<Vec<Subscription>> {
    Ok(sqlx::query_as(
        "SELECT id, endpoint, p256dh, auth, label, app_id, created_at, last_ok_at FROM push_subscriptions ORDER BY id",
    )
    .fetch_all(pool)
    .await?)
}

/// What [`upsert_subscription`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upserted {
    Stored,
    /// The table already holds `max` other endpoints.
    Full,
    /// An app tried to renew an endpoint it did not subscribe.
    NotYours,
}

/// Inserts a subscription or replaces the keys (and label, when given) of the same endpoint.
/// An app may only renew its own endpoints.
pub async fn upsert_subscription(
    conn: &mut SqliteConnection,
    s: &NewSubscription,
    max: i64,
    now: i64,
) -> Result<Upserted> {
    let exists: Option<Option<i64>> = sqlx::query_scalar("SELECT app_id FROM push_subscriptions WHERE endpoint = ?")
        .bind(&s.endpoint)
        .fetch_optional(&mut *conn)
        .await?;
    if let (Some(owner_of_row), Some(_)) = (exists, s.app_id)
        && owner_of_row != s.app_id
    {
        return Ok(Upserted::NotYours);
    }
    if exists.is_none() {
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM push_subscriptions").fetch_one(&mut *conn).await?;
        if count >= max {
            return Ok(Upserted::Full);
        }
    }
    sqlx::query(
        "INSERT INTO push_subscriptions (endpoint, p256dh, auth, label, app_id, created_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (endpoint) DO UPDATE SET p256dh = excluded.p256dh, auth = excluded.auth,
             label = CASE WHEN excluded.label = '' THEN label ELSE excluded.label END",
    )
    .bind(&s.endpoint)
    .bind(&s.p256dh)
    .bind(&s.auth)
    .bind(&s.label)
    .bind(s.app_id)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(Upserted::Stored)
}

/// Deletes a subscription by endpoint (`app`: only one that app subscribed); `true` when one
/// was there.
pub async fn delete_subscription(conn: &mut SqliteConnection, endpoint: &str, app: Option<i64>) -> Result<bool> {
    Ok(sqlx::query("DELETE FROM push_subscriptions WHERE endpoint = ? AND (?2 IS NULL OR app_id = ?2)")
        .bind(endpoint)
        .bind(app)
        .execute(conn)
        .await?
        .rows_affected()
        > 0)
}

/// Deletes a subscription by id; `true` when one was there.
pub async fn delete_subscription_id(conn: &mut SqliteConnection, id: i64) -> Result<bool> {
    Ok(sqlx::query("DELETE FROM push_subscriptions WHERE id = ?").bind(id).execute(conn).await?.rows_affected() > 0)
}

/// Records a push the service accepted.
pub async fn mark_delivered(conn: &mut SqliteConnection, id: i64, now: i64) -> Result<()> {
    sqlx::query("UPDATE push_subscriptions SET last_ok_at = ? WHERE id = ?").bind(now).bind(id).execute(conn).await?;
    Ok(())
}

/// A stored notification, as the centre lists it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Notification {
    pub id: String,
    #[sqlx(try_from = "String")]
    pub kind: NotificationKind,
    pub source_type: String,
    pub source_id: Option<String>,
    pub title: String,
    pub body: Option<String>,
    pub icon: Option<String>,
    pub target: Option<String>,
    /// JSON text.
    pub actions: Option<String>,
    pub sent_at: i64,
    pub clicked_at: Option<i64>,
    pub read_at: Option<i64>,
}

/// Stores a notification and drops the oldest beyond `keep`.
pub async fn insert_notification(conn: &mut SqliteConnection, n: &Notification, keep: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO notifications (id, kind, source_type, source_id, title, body, icon, target, actions, sent_at, read_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&n.id)
    .bind(n.kind.as_str())
    .bind(&n.source_type)
    .bind(&n.source_id)
    .bind(&n.title)
    .bind(&n.body)
    .bind(&n.icon)
    .bind(&n.target)
    .bind(&n.actions)
    .bind(n.sent_at)
    .bind(n.read_at)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "DELETE FROM notifications WHERE id IN (
             SELECT id FROM notifications ORDER BY sent_at DESC, id DESC LIMIT -1 OFFSET ?)",
    )
    .bind(keep)
    .execute(conn)
    .await?;
    Ok(())
}

const NOTIFICATION_COLUMNS: &str =
    "id, kind, source_type, source_id, title, body, icon, target, actions, sent_at, clicked_at, read_at";

/// Newest first, `limit` of them, older than notification `before` when given. `None` when
/// `before` names no notification.
pub async fn notifications(pool: &SqlitePool, limit: i64, before: Option<&str>) -> Result<Option<Vec<Notification>>> {
    let Some(before) = before else {
        let sql = format!("SELECT {NOTIFICATION_COLUMNS} FROM notifications ORDER BY sent_at DESC, id DESC LIMIT ?");
        return Ok(Some(sqlx::query_as(&sql).bind(limit).fetch_all(pool).await?));
    };
    let cursor: Option<(i64, String)> =
        sqlx::query_as("SELECT sent_at, id FROM notifications WHERE id = ?").bind(before).fetch_optional(pool).await?;
    let Some((sent_at, id)) = cursor else { return Ok(None) };
    let sql = format!(
        "SELECT {NOTIFICATION_COLUMNS} FROM notifications WHERE (sent_at, id) < (?, ?)
         ORDER BY sent_at DESC, id DESC LIMIT ?"
    );
    Ok(Some(sqlx::query_as(&sql).bind(sent_at).bind(id).bind(limit).fetch_all(pool).await?))
}

/// How many notifications are unread.
pub async fn unread_count(pool: &SqlitePool) -> Result<i64> {
    Ok(sqlx::query_scalar("SELECT COUNT(*) FROM notifications WHERE read_at IS NULL").fetch_one(pool).await?)
}

/// Marks every unread notification read; answers how many.
pub async fn mark_all_read(conn: &mut SqliteConnection, now: i64) -> Result<u64> {
    Ok(sqlx::query("UPDATE notifications SET read_at = ? WHERE read_at IS NULL")
        .bind(now)
        .execute(conn)
        .await?
        .rows_affected())
}

/// Marks the unread question notifications of a chat read (its question was answered or
/// went away with its turn); answers how many.
pub async fn mark_chat_questions_read(conn: &mut SqliteConnection, chat_id: &str, now: i64) -> Result<u64> {
    Ok(sqlx::query(
        "UPDATE notifications SET read_at = ?
         WHERE read_at IS NULL AND kind = 'question' AND source_type = 'chat' AND source_id = ?",
    )
    .bind(now)
    .bind(chat_id)
    .execute(conn)
    .await?
    .rows_affected())
}

/// Deletes one notification (`Some(id)`) or all of them; answers how many.
pub async fn delete_notifications(conn: &mut SqliteConnection, id: Option<&str>) -> Result<u64> {
    let done = match id {
        Some(id) => sqlx::query("DELETE FROM notifications WHERE id = ?").bind(id).execute(conn).await?,
        None => sqlx::query("DELETE FROM notifications").execute(conn).await?,
    };
    Ok(done.rows_affected())
}

/// The switches that are off (a kind without a row is on).
pub async fn disabled_kinds(pool: &SqlitePool) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar("SELECT kind FROM notification_prefs WHERE enabled = 0 ORDER BY kind")
        .fetch_all(pool)
        .await?)
}

/// Sets one switch.
pub async fn set_pref(conn: &mut SqliteConnection, kind: &str, enabled: bool) -> Result<()> {
    sqlx::query("INSERT INTO notification_prefs (kind, enabled) VALUES (?, ?) ON CONFLICT (kind) DO UPDATE SET enabled = excluded.enabled")
        .bind(kind)
        .bind(enabled)
        .execute(conn)
        .await?;
    Ok(())
}

/// Chats whose question or approval waits for the owner.
pub async fn decisions_waiting(pool: &SqlitePool) -> Result<i64> {
    Ok(sqlx::query_scalar("SELECT COUNT(*) FROM chats WHERE pending_question_id IS NOT NULL AND deleted_at IS NULL")
        .fetch_one(pool)
        .await?)
}

/// A chat's title (for a notification about it).
pub async fn chat_title(pool: &SqlitePool, chat_id: &str) -> Result<Option<String>> {
    Ok(sqlx::query_scalar("SELECT title FROM chats WHERE id = ?").bind(chat_id).fetch_optional(pool).await?)
}
