//! Push subscriptions, the notification centre and its switches, applied inside the writer's
//! transaction. Each change is announced on the system stream after commit, so every open
//! shell refreshes its bell.

use sqlx::SqliteConnection;

use super::batch::Batch;
use super::commands::PushWrite;
use crate::db::{self, now_ms};
use crate::error::{Domain, Result};
use crate::protocol::SystemEvent;

/// Stored notifications kept; older ones are dropped as new ones arrive.
pub const MAX_STORED_NOTIFICATIONS: i64 = 5_000;
/// Devices (push endpoints) one server serves.
pub const MAX_SUBSCRIPTIONS: i64 = 50;

/// A chat's question was answered (or its turn ended): its question notifications are read.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat_id))]
pub(super) async fn questions_settled(conn: &mut SqliteConnection, batch: &mut Batch, chat_id: &str) -> Result<()> {
    if db::push::mark_chat_questions_read(conn, chat_id, now_ms()).await? > 0 {
        batch.system(SystemEvent::NotificationsChanged);
    }
    Ok(())
}

#[tracing::instrument(level = "debug", skip_all)]
pub(super) async fn apply(conn: &mut SqliteConnection, batch: &mut Batch, op: PushWrite) -> Result<u64> {
    match op {
        PushWrite::Subscribe(s) => {
            match db::push::upsert_subscription(conn, &s, MAX_SUBSCRIPTIONS, now_ms()).await? {
                db::push::Upserted::Stored => {}
                db::push::Upserted::Full => return Err(Domain::TooManyDevices(MAX_SUBSCRIPTIONS).into()),
                db::push::Upserted::NotYours => return Err(Domain::PushEndpointNotYours.into()),
            }
            batch.system(SystemEvent::PushDevicesChanged);
            Ok(1)
        }
        PushWrite::Unsubscribe(endpoint, app) => {
            let removed = db::push::delete_subscription(conn, &endpoint, app).await?;
            if removed {
                batch.system(SystemEvent::PushDevicesChanged);
            }
            Ok(u64::from(removed))
        }
        PushWrite::UnsubscribeId(id) => {
            let removed = db::push::delete_subscription_id(conn, id).await?;
            if removed {
                batch.system(SystemEvent::PushDevicesChanged);
            }
            Ok(u64::from(removed))
        }
        PushWrite::Delivered(id) => {
            db::push::mark_delivered(conn, id, now_ms()).await?;
            Ok(1)
        }
        PushWrite::Store(n) => {
            db::push::insert_notification(conn, &n, MAX_STORED_NOTIFICATIONS).await?;
            batch.system(SystemEvent::NotificationCreated { id: n.id.clone(), kind: n.kind });
            Ok(1)
        }
        PushWrite::ReadAll => {
            let updated = db::push::mark_all_read(conn, now_ms()).await?;
            batch.system(SystemEvent::NotificationsChanged);
            Ok(updated)
        }
        PushWrite::Delete(id) => {
            let deleted = db::push::delete_notifications(conn, id.as_deref()).await?;
            batch.system(SystemEvent::NotificationsChanged);
            Ok(deleted)
        }
        PushWrite::SetPref { kind, enabled } => {
            db::push::set_pref(conn, kind.as_str(), enabled).await?;
            batch.system(SystemEvent::NotificationPrefsChanged);
            Ok(1)
        }
    }
}
