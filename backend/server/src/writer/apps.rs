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

/// Grants older than this past their expiry are purged when a new one is minted.
const GRANT_RETENTION_MS: i64 = 24 * 3600 * 1000;

/// Stores a new grant (and drops long-dead ones).
pub(super) async fn mint_grant(conn: &mut SqliteConnection, grant: &db::embeds::Grant) -> Result<()> {
    db::embeds::insert_grant(conn, grant, now_ms() - GRANT_RETENTION_MS).await
}

/// Consumes a grant atomically: unknown, consumed, revoked, expired, for another instance or
/// superseded by a newer consumed grant of the instance → 401.
pub(super) async fn exchange_grant(
    conn: &mut SqliteConnection,
    id: &str,
    instance_id: &str,
    session_expires_at: i64,
) -> Result<db::embeds::Grant> {
    let refused =
        || Error::unauthorized("invalid_grant", "This chat grant is not valid (anymore); ask the app for a new one.");
    let now = now_ms();
    let grant = db::embeds::grant(&mut *conn, id).await?.ok_or_else(refused)?;
    if grant.consumed_at.is_some()
        || grant.revoked_at.is_some()
        || grant.expires_at <= now
        || grant.instance_id != instance_id
    {
        return Err(refused());
    }
    if db::embeds::newest_consumed(conn, grant.app_id, instance_id)
        .await?
        .is_some_and(|newest| newest > grant.created_at)
    {
        return Err(refused());
    }
    if !db::embeds::consume(conn, &grant, now, session_expires_at).await? {
        return Err(refused());
    }
    Ok(db::embeds::Grant { consumed_at: Some(now), session_expires_at: Some(session_expires_at), ..grant })
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
