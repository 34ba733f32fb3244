//! App-registry command logic applied inside the writer's transaction.

use sqlx::SqliteConnection;

use super::batch::Batch;
use crate::db::{self, now_ms};
use crate::error::{Domain, Error, Result};
use crate::protocol::{ChatEvent, ChatId, SystemEvent};

/// Records an apply; announces `app_created`/`app_updated` and, when a chat built it, the
/// preview for that chat (in its durable journal too).
#[tracing::instrument(level = "debug", skip_all, fields(app.id = id))]
pub(super) async fn record_apply(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    id: i64,
    applied: &db::apps::Applied,
    created: bool,
) -> Result<()> {
    db::apps::record_apply(conn, id, applied, now_ms()).await?;
    super::schedules::sync_app(conn, batch, id, &applied.name, applied.schedule.as_ref()).await?;
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
            let event =
                ChatEvent::AppUpdated { app_id: id, slug: applied.slug.clone(), name: applied.name.clone(), created };
            batch.emit(conn, &chat_id, event).await?;
        }
    }
    Ok(())
}

/// Grants older than this past their expiry are purged when a new one is minted.
const GRANT_RETENTION_MS: i64 = 24 * 3600 * 1000;

/// Stores a new grant (and drops long-dead ones).
#[tracing::instrument(level = "debug", skip_all)]
pub(super) async fn mint_grant(conn: &mut SqliteConnection, grant: &db::embeds::Grant) -> Result<()> {
    db::embeds::insert_grant(conn, grant, now_ms() - GRANT_RETENTION_MS).await
}

/// Consumes a grant atomically: unknown, consumed, revoked, expired, for another instance or
/// superseded by a newer consumed grant of the instance → 401.
#[tracing::instrument(level = "debug", skip_all)]
pub(super) async fn exchange_grant(
    conn: &mut SqliteConnection,
    id: &str,
    instance_id: &str,
    session_expires_at: i64,
) -> Result<db::embeds::Grant> {
    let refused = || Error::from(Domain::InvalidGrant);
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
#[tracing::instrument(level = "debug", skip_all, fields(app.id = id))]
pub(super) async fn adopt(conn: &mut SqliteConnection, batch: &mut Batch, id: i64, slug: &str) -> Result<()> {
    match db::apps::set_slug(conn, id, slug).await {
        Ok(true) => {}
        Ok(false) => return Err(Domain::AppNotFound.into()),
        Err(e) if e.is_unique_violation() => return Err(Domain::AppIdTaken(slug.to_owned()).into()),
        Err(e) => return Err(e),
    }
    batch.system(SystemEvent::AppChanged { app_id: id });
    Ok(())
}

/// Applies an owner edit and announces what changed.
#[tracing::instrument(level = "debug", skip_all, fields(app.id = id))]
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
