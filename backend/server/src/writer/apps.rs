//! App-registry command logic applied inside the writer's transaction.

use sqlx::SqliteConnection;

use super::batch::Batch;
use crate::db::{self, now_ms};
use crate::error::{Domain, Result};
use crate::protocol::{ChatEvent, ChatId, SystemEvent};

/// Records an apply; announces `app_created`/`app_updated` and, when a chat built it, the
/// preview for that chat (in its durable journal too).
pub(super) async fn record_apply(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    id: i64,
    applied: &db::apps::Applied,
    created: bool,
) -> Result<()> {
    db::apps::record_apply(conn, id, applied, now_ms()).await?;
    let chat_id = applied.chat_id.clone().map(ChatId::from);
    let sha = applied.bundle_sha.clone();
    batch.system(if created {
        SystemEvent::AppCreated { app_id: id, chat_id: chat_id.clone(), sha }
    } else {
        SystemEvent::AppUpdated { app_id: id, chat_id: chat_id.clone(), sha }
    });
    if let Some(chat_id) = chat_id {
        batch.system(SystemEvent::AppPreviewReady { app_id: id, chat_id: chat_id.clone() });
        if db::journal::head_seq(conn, &chat_id).await?.is_some() {
            let event = ChatEvent::AppUpdated {
                app_id: id,
                slug: applied.manifest_slug(),
                name: applied.name.clone(),
                created,
            };
            batch.emit(conn, &chat_id, event).await?;
        }
    }
    Ok(())
}

/// Applies an owner edit and announces what changed.
pub(super) async fn patch(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    id: i64,
    p: &db::apps::AppPatch,
) -> Result<bool> {
    if !db::apps::patch(conn, id, p).await? {
        return Err(Domain::AppNotFound.into());
    }
    batch.system(match p.deleted_at {
        Some(Some(_)) => SystemEvent::AppDeleted { app_id: id },
        Some(None) => SystemEvent::AppRecovered { app_id: id },
        None => SystemEvent::AppChanged { app_id: id },
    });
    Ok(true)
}
