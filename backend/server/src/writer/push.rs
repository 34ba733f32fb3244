//! Push subscriptions, the notification centre and its switches, applied inside the writer's
//! transaction. Each change is announced on the system stream after commit, so every open
//! shell refreshes its bell.

use serde_json::json;
use sqlx::SqliteConnection;

use super::actor::Batch;
use crate::db::{self, now_ms};
use crate::error::{Error, Result};

/// Stored notifications kept; older ones are dropped as new ones arrive.
pub const MAX_STORED_NOTIFICATIONS: i64 = 5_000;
/// Devices (push endpoints) one server serves.
pub const MAX_SUBSCRIPTIONS: i64 = 50;

/// One write of the push module. Each answers a count (rows changed, or 1/0).
#[derive(Debug)]
pub enum PushWrite {
    /// Adds a device or renews its keys.
    Subscribe(db::push::NewSubscription),
    /// Removes the device with this endpoint (`Some(app)`: only if that app subscribed it).
    Unsubscribe(String, Option<i64>),
    /// Removes the device with this id (Settings).
    UnsubscribeId(i64),
    /// The push service accepted a push for this device.
    Delivered(i64),
    /// Stores a notification and announces `notification_created`.
    Store(Box<db::push::Notification>),
    /// Marks every unread notification read.
    ReadAll,
    /// Deletes one notification, or all.
    Delete(Option<String>),
    /// Turns one kind of notification on or off.
    SetPref { kind: String, enabled: bool },
}

pub(super) async fn apply(conn: &mut SqliteConnection, batch: &mut Batch, op: PushWrite) -> Result<u64> {
    match op {
        PushWrite::Subscribe(s) => {
            match db::push::upsert_subscription(conn, &s, MAX_SUBSCRIPTIONS, now_ms()).await? {
                db::push::Upserted::Stored => {}
                db::push::Upserted::Full => {
                    return Err(Error::too_large(
                        "too_many_devices",
                        format!("At most {MAX_SUBSCRIPTIONS} devices receive notifications; remove one in Settings."),
                    ));
                }
                db::push::Upserted::NotYours => {
                    return Err(Error::forbidden("forbidden", "This push endpoint was not subscribed by this app."));
                }
            }
            batch.system("push_devices_changed", json!({}));
            Ok(1)
        }
        PushWrite::Unsubscribe(endpoint, app) => {
            let removed = db::push::delete_subscription(conn, &endpoint, app).await?;
            if removed {
                batch.system("push_devices_changed", json!({}));
            }
            Ok(u64::from(removed))
        }
        PushWrite::UnsubscribeId(id) => {
            let removed = db::push::delete_subscription_id(conn, id).await?;
            if removed {
                batch.system("push_devices_changed", json!({}));
            }
            Ok(u64::from(removed))
        }
        PushWrite::Delivered(id) => {
            db::push::mark_delivered(conn, id, now_ms()).await?;
            Ok(1)
        }
        PushWrite::Store(n) => {
            db::push::insert_notification(conn, &n, MAX_STORED_NOTIFICATIONS).await?;
            batch.system("notification_created", json!({ "id": n.id, "kind": n.kind }));
            Ok(1)
        }
        PushWrite::ReadAll => {
            let updated = db::push::mark_all_read(conn, now_ms()).await?;
            batch.system("notifications_changed", json!({}));
            Ok(updated)
        }
        PushWrite::Delete(id) => {
            let deleted = db::push::delete_notifications(conn, id.as_deref()).await?;
            batch.system("notifications_changed", json!({}));
            Ok(deleted)
        }
        PushWrite::SetPref { kind, enabled } => {
            db::push::set_pref(conn, &kind, enabled).await?;
            batch.system("notification_prefs_changed", json!({}));
            Ok(1)
        }
    }
}
