//! App-registry command logic applied inside the writer's transaction.

use serde_json::json;
use sqlx::SqliteConnection;

use super::actor::Batch;
use crate::db::{self, now_ms};
use crate::error::{Error, Result};

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
    let kind = if created { "app_created" } else { "app_updated" };
    batch.system(kind, json!({ "appId": id, "chatId": applied.chat_id, "sha": applied.bundle_sha }));
    if let Some(chat_id) = &applied.chat_id {
        batch.system("app_preview_ready", json!({ "appId": id, "chatId": chat_id }));
        if db::chats::head_seq(conn, chat_id).await?.is_some() {
            let event = super::event(
                "app_updated",
                json!({ "app_id": id, "slug": applied.manifest_slug(), "name": applied.name, "created": created }),
            );
            batch.emit(conn, chat_id, event).await?;
        }
    }
    Ok(())
}

/// Renames app `id` to `slug` (adoption by a release with `previous_id`).
pub(super) async fn adopt(conn: &mut SqliteConnection, batch: &mut Batch, id: i64, slug: &str) -> Result<()> {
    match db::apps::set_slug(conn, id, slug).await {
        Ok(true) => {}
        Ok(false) => return Err(Error::not_found("app_not_found", "No such app.")),
        Err(e) if e.is_unique_violation() => {
            return Err(Error::conflict("app_id_taken", format!("An app with the id {slug:?} already exists.")));
        }
        Err(e) => return Err(e),
    }
    batch.system("app_changed", json!({ "appId": id }));
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
        return Err(Error::not_found("app_not_found", "No such app."));
    }
    let kind = match p.deleted_at {
        Some(Some(_)) => "app_deleted",
        Some(None) => "app_recovered",
        None => "app_changed",
    };
    batch.system(kind, json!({ "appId": id }));
    Ok(true)
}
