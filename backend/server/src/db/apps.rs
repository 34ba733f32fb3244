//! SQL for the app registry.

use sqlx::{SqliteConnection, SqlitePool};

use crate::apps::app_manifest::{AppManifest, Permissions};
use crate::error::Result;
use crate::locks::Unpoisoned;

/// An app as stored.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct AppRow {
    pub id: i64,
    pub slug: String,
    pub name: String,
    pub description: String,
    pub version: String,
    /// `mobius.json` as applied (the column holds the document as written).
    #[serde(skip)]
    #[sqlx(try_from = "String")]
    pub manifest: AppManifest,
    #[serde(skip)]
    pub token_nonce: String,
    pub bundle_sha: Option<String>,
    pub source_commit: Option<String>,
    pub upstream_commit: Option<String>,
    pub source_url: Option<String>,
    pub chat_id: Option<String>,
    pub theme_color: Option<String>,
    pub background_color: Option<String>,
    pub display: Option<String>,
    pub offline_capable: bool,
    pub cross_app_access: String,
    pub share_with_apps: String,
    /// The manifest's `permissions` as applied (what storage checks).
    #[serde(skip)]
    #[sqlx(try_from = "String")]
    pub permissions: Permissions,
    pub pinned_at: Option<i64>,
    pub last_opened_at: Option<i64>,
    pub seen_sha: Option<String>,
    /// The runtime the bundle was built with (see `apps::apply::runtime_fingerprint`).
    #[serde(skip)]
    pub runtime_sha: Option<String>,
    /// The newest release the last update check saw (a commit id, or a plain folder's tree id).
    pub update_commit: Option<String>,
    pub update_checked_at: Option<i64>,
    /// Why the last update check could not reach the source.
    pub update_error: Option<String>,
    /// The chat resolving a conflicting update, and the release it resolves.
    pub resolver_chat_id: Option<String>,
    pub resolver_commit: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub deleted_at: Option<i64>,
}

const COLUMNS: &str = "id, slug, name, description, version, manifest, token_nonce, bundle_sha, source_commit, \
    upstream_commit, source_url, chat_id, theme_color, background_color, display, offline_capable, cross_app_access, \
    share_with_apps, permissions, pinned_at, last_opened_at, seen_sha, runtime_sha, update_commit, update_checked_at, \
    update_error, resolver_chat_id, resolver_commit, created_at, updated_at, deleted_at";

/// App rows read between writer commits, so a token check and a storage authorisation on the
/// hot path cost no query. Every write of the registry goes through the writer, which bumps
/// the hub's data version after it commits; a row is only reused at the version it was read
/// at, so a hit is exactly as fresh as a query.
#[derive(Debug, Default)]
pub struct RowCache(std::sync::Mutex<(u64, std::collections::HashMap<i64, std::sync::Arc<AppRow>>)>);

/// Rows kept per version (a one-owner registry is small; this only bounds a hostile caller).
const CACHED_ROWS: usize = 256;

impl RowCache {
    /// App `id` (deleted or not) as of `version`, which the caller reads *before* calling.
    pub async fn get(&self, pool: &SqlitePool, version: u64, id: i64) -> Result<Option<std::sync::Arc<AppRow>>> {
        {
            let cached = self.0.locked();
            if cached.0 == version
                && let Some(row) = cached.1.get(&id)
            {
                return Ok(Some(row.clone()));
            }
        }
        let Some(row) = get(pool, id).await?.map(std::sync::Arc::new) else { return Ok(None) };
        let mut cached = self.0.locked();
        if cached.0 < version || cached.1.len() >= CACHED_ROWS {
            cached.1.clear();
            cached.0 = cached.0.max(version);
        }
        if cached.0 == version {
            cached.1.insert(id, row.clone());
        }
        Ok(Some(row))
    }
}

/// An app by id (deleted or not).
pub async fn get<'e, E: sqlx::SqliteExecutor<'e>>(executor: E, id: i64) -> Result<Option<AppRow>> {
    let sql = format!("SELECT {COLUMNS} FROM apps WHERE id = ?");
    Ok(sqlx::query_as(&sql).bind(id).fetch_optional(executor).await?)
}

/// An app by slug (deleted or not).
pub async fn by_slug<'e, E: sqlx::SqliteExecutor<'e>>(executor: E, slug: &str) -> Result<Option<AppRow>> {
    let sql = format!("SELECT {COLUMNS} FROM apps WHERE slug = ?");
    Ok(sqlx::query_as(&sql).bind(slug).fetch_optional(executor).await?)
}

/// Live, built apps: pinned first (oldest pin first), then most recently updated.
pub async fn list(pool: &SqlitePool) -> Result<Vec<AppRow>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM apps WHERE deleted_at IS NULL AND bundle_sha IS NOT NULL
         ORDER BY pinned_at IS NULL, pinned_at, updated_at DESC, id"
    );
    Ok(sqlx::query_as(&sql).fetch_all(pool).await?)
}

/// Reserves an id for a new app (not listed until it has a bundle).
pub async fn insert(conn: &mut SqliteConnection, slug: &str, name: &str, nonce: &str, now: i64) -> Result<i64> {
    Ok(sqlx::query_scalar(
        "INSERT INTO apps (slug, name, token_nonce, created_at, updated_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(slug)
    .bind(name)
    .bind(nonce)
    .bind(now)
    .bind(now)
    .fetch_one(conn)
    .await?)
}

/// Fields an apply records.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    /// The app's slug (the manifest's `id`).
    pub slug: String,
    pub name: String,
    pub description: String,
    pub version: String,
    pub manifest: String,
    pub bundle_sha: String,
    pub source_commit: String,
    pub upstream_commit: Option<String>,
    pub source_url: Option<String>,
    pub chat_id: Option<String>,
    pub theme_color: Option<String>,
    pub background_color: Option<String>,
    pub display: Option<String>,
    pub offline_capable: bool,
    pub cross_app_access: String,
    pub share_with_apps: String,
    pub permissions: String,
    pub runtime_sha: String,
    /// Set when this apply brings a deleted app back (a new install of the same id): its new
    /// install nonce.
    pub revive_nonce: Option<String>,
    /// The manifest's `schedule` (registered with the apply, in the same transaction).
    pub schedule: Option<super::schedules::AppJobSpec>,
}

/// Records a successful apply (the app becomes visible if it was new).
pub async fn record_apply(conn: &mut SqliteConnection, id: i64, a: &Applied, now: i64) -> Result<()> {
    sqlx::query(
        "UPDATE apps SET name = ?, description = ?, version = ?, manifest = ?, bundle_sha = ?, source_commit = ?,
                upstream_commit = coalesce(?, upstream_commit), source_url = coalesce(?, source_url),
                chat_id = coalesce(?, chat_id), theme_color = ?, background_color = ?, display = ?,
                offline_capable = ?, cross_app_access = ?, share_with_apps = ?, permissions = ?,
                runtime_sha = ?, updated_at = max(updated_at + 1, ?),
                deleted_at = CASE WHEN ? IS NULL THEN deleted_at ELSE NULL END,
                token_nonce = coalesce(?, token_nonce)
         WHERE id = ?",
    )
    .bind(&a.name)
    .bind(&a.description)
    .bind(&a.version)
    .bind(&a.manifest)
    .bind(&a.bundle_sha)
    .bind(&a.source_commit)
    .bind(&a.upstream_commit)
    .bind(&a.source_url)
    .bind(&a.chat_id)
    .bind(&a.theme_color)
    .bind(&a.background_color)
    .bind(&a.display)
    .bind(a.offline_capable)
    .bind(&a.cross_app_access)
    .bind(&a.share_with_apps)
    .bind(&a.permissions)
    .bind(&a.runtime_sha)
    .bind(now)
    .bind(&a.revive_nonce)
    .bind(&a.revive_nonce)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Changes an app's slug; false if the app does not exist.
pub async fn set_slug(conn: &mut SqliteConnection, id: i64, slug: &str) -> Result<bool> {
    let done = sqlx::query("UPDATE apps SET slug = ?, updated_at = max(updated_at + 1, ?) WHERE id = ?")
        .bind(slug)
        .bind(crate::db::now_ms())
        .bind(id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Removes a reserved app that never got a bundle.
pub async fn forget_unbuilt(conn: &mut SqliteConnection, id: i64) -> Result<()> {
    sqlx::query("DELETE FROM apps WHERE id = ? AND bundle_sha IS NULL").bind(id).execute(conn).await?;
    Ok(())
}

/// Owner-editable fields; `None` leaves a field alone.
#[derive(Debug, Clone, Default)]
pub struct AppPatch {
    pub name: Option<String>,
    pub pinned_at: Option<Option<i64>>,
    pub last_opened_at: Option<i64>,
    pub seen_sha: Option<String>,
    pub deleted_at: Option<Option<i64>>,
    pub cross_app_access: Option<String>,
    pub share_with_apps: Option<String>,
    /// The outcome of an update check: `(newest release or None, error or None, when)`.
    pub update_check: Option<(Option<String>, Option<String>, i64)>,
    /// The chat resolving a conflicting update and the release it resolves (`None` clears both).
    pub resolver: Option<Option<(String, String)>>,
    /// A new install nonce: every token of the earlier install stops working.
    pub token_nonce: Option<String>,
}

/// Applies an [`AppPatch`]; false if the app does not exist.
pub async fn patch(conn: &mut SqliteConnection, id: i64, p: &AppPatch) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE apps SET
            name = coalesce(?, name),
            pinned_at = CASE WHEN ? THEN ? ELSE pinned_at END,
            last_opened_at = coalesce(?, last_opened_at),
            seen_sha = coalesce(?, seen_sha),
            deleted_at = CASE WHEN ? THEN ? ELSE deleted_at END,
            cross_app_access = coalesce(?, cross_app_access),
            share_with_apps = coalesce(?, share_with_apps),
            update_commit = CASE WHEN ? THEN ? ELSE update_commit END,
            update_error = CASE WHEN ? THEN ? ELSE update_error END,
            update_checked_at = coalesce(?, update_checked_at),
            resolver_chat_id = CASE WHEN ? THEN ? ELSE resolver_chat_id END,
            resolver_commit = CASE WHEN ? THEN ? ELSE resolver_commit END,
            token_nonce = coalesce(?, token_nonce)
         WHERE id = ?",
    )
    .bind(&p.name)
    .bind(p.pinned_at.is_some())
    .bind(p.pinned_at.flatten())
    .bind(p.last_opened_at)
    .bind(&p.seen_sha)
    .bind(p.deleted_at.is_some())
    .bind(p.deleted_at.flatten())
    .bind(&p.cross_app_access)
    .bind(&p.share_with_apps)
    .bind(p.update_check.is_some())
    .bind(p.update_check.as_ref().and_then(|c| c.0.clone()))
    .bind(p.update_check.is_some())
    .bind(p.update_check.as_ref().and_then(|c| c.1.clone()))
    .bind(p.update_check.as_ref().map(|c| c.2))
    .bind(p.resolver.is_some())
    .bind(p.resolver.as_ref().and_then(|r| r.as_ref().map(|r| r.0.clone())))
    .bind(p.resolver.is_some())
    .bind(p.resolver.as_ref().and_then(|r| r.as_ref().map(|r| r.1.clone())))
    .bind(&p.token_nonce)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Apps deleted before `cutoff` that still have a build: `(id, slug)` of each.
pub async fn expired(pool: &SqlitePool, cutoff: i64) -> Result<Vec<(i64, String)>> {
    Ok(sqlx::query_as(
        "SELECT id, slug FROM apps WHERE deleted_at IS NOT NULL AND deleted_at < ? AND bundle_sha IS NOT NULL",
    )
    .bind(cutoff)
    .fetch_all(pool)
    .await?)
}

/// Ends apps deleted before `cutoff`: those in `keep` (their data was kept) lose their build but
/// keep their row, so installing the same app again brings the data back; the others are
/// removed. Returns `(id, slug)` of each app whose build went.
pub async fn purge_deleted(conn: &mut SqliteConnection, cutoff: i64, keep: &[i64]) -> Result<Vec<(i64, String)>> {
    let kept = serde_json::to_string(keep).unwrap_or_else(|_| "[]".into());
    let mut gone: Vec<(i64, String)> = sqlx::query_as(
        "UPDATE apps SET bundle_sha = NULL, source_commit = NULL, upstream_commit = NULL, update_commit = NULL,
                resolver_chat_id = NULL, resolver_commit = NULL
         WHERE deleted_at IS NOT NULL AND deleted_at < ? AND bundle_sha IS NOT NULL
           AND id IN (SELECT value FROM json_each(?))
         RETURNING id, slug",
    )
    .bind(cutoff)
    .bind(&kept)
    .fetch_all(&mut *conn)
    .await?;
    let removed: Vec<(i64, String, Option<String>)> = sqlx::query_as(
        "DELETE FROM apps WHERE deleted_at IS NOT NULL AND deleted_at < ?
           AND id NOT IN (SELECT value FROM json_each(?))
         RETURNING id, slug, bundle_sha",
    )
    .bind(cutoff)
    .bind(&kept)
    .fetch_all(conn)
    .await?;
    gone.extend(removed.into_iter().filter(|r| r.2.is_some()).map(|(id, slug, _)| (id, slug)));
    Ok(gone)
}

/// Removes every secret of app `app_id`; how many there were.
pub async fn delete_secrets(conn: &mut SqliteConnection, app_id: i64) -> Result<u64> {
    Ok(sqlx::query("DELETE FROM app_secrets WHERE app_id = ?").bind(app_id).execute(conn).await?.rows_affected())
}

/// A one-use install pass as stored (`id` is the SHA-256 of the pass).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct InstallPass {
    pub id: String,
    pub app_id: i64,
    pub epoch: i64,
    pub created_at: i64,
    pub expires_at: i64,
    pub consumed_at: Option<i64>,
}

/// Stores a new install pass and drops the long-dead ones (expired before `purge_before`).
pub async fn insert_install_pass(conn: &mut SqliteConnection, pass: &InstallPass, purge_before: i64) -> Result<()> {
    sqlx::query("DELETE FROM install_passes WHERE expires_at < ?").bind(purge_before).execute(&mut *conn).await?;
    sqlx::query("INSERT INTO install_passes (id, app_id, epoch, created_at, expires_at) VALUES (?, ?, ?, ?, ?)")
        .bind(&pass.id)
        .bind(pass.app_id)
        .bind(pass.epoch)
        .bind(pass.created_at)
        .bind(pass.expires_at)
        .execute(conn)
        .await?;
    Ok(())
}

/// Consumes pass `id` if it is unused and unexpired at `now`; answers it when it was.
pub async fn consume_install_pass(conn: &mut SqliteConnection, id: &str, now: i64) -> Result<Option<InstallPass>> {
    Ok(sqlx::query_as(
        "UPDATE install_passes SET consumed_at = ?1 WHERE id = ?2 AND consumed_at IS NULL AND expires_at > ?1
         RETURNING id, app_id, epoch, created_at, expires_at, consumed_at",
    )
    .bind(now)
    .bind(id)
    .fetch_optional(conn)
    .await?)
}

/// Every stored secret: app, name and sealed value.
pub async fn all_secrets<'e>(db: impl sqlx::SqliteExecutor<'e>) -> Result<Vec<(i64, String, Vec<u8>)>> {
    Ok(sqlx::query_as("SELECT app_id, name, sealed FROM app_secrets ORDER BY app_id, name").fetch_all(db).await?)
}

/// App `app_id`'s secret names and when each was last set (never a value).
pub async fn secret_names(pool: &SqlitePool, app_id: i64) -> Result<Vec<(String, i64)>> {
    Ok(sqlx::query_as("SELECT name, updated_at FROM app_secrets WHERE app_id = ? ORDER BY name")
        .bind(app_id)
        .fetch_all(pool)
        .await?)
}

/// The sealed value of app `app_id`'s secret `name`.
pub async fn secret(pool: &SqlitePool, app_id: i64, name: &str) -> Result<Option<Vec<u8>>> {
    Ok(sqlx::query_scalar("SELECT sealed FROM app_secrets WHERE app_id = ? AND name = ?")
        .bind(app_id)
        .bind(name)
        .fetch_optional(pool)
        .await?)
}

/// Stores a sealed secret unless that would make more than `max` for the app; false if it would.
pub async fn put_secret(
    conn: &mut SqliteConnection,
    app_id: i64,
    name: &str,
    sealed: &[u8],
    max: i64,
    now: i64,
) -> Result<bool> {
    let exists: Option<i64> = sqlx::query_scalar("SELECT 1 FROM app_secrets WHERE app_id = ? AND name = ?")
        .bind(app_id)
        .bind(name)
        .fetch_optional(&mut *conn)
        .await?;
    if exists.is_none() {
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM app_secrets WHERE app_id = ?")
            .bind(app_id)
            .fetch_one(&mut *conn)
            .await?;
        if count >= max {
            return Ok(false);
        }
    }
    sqlx::query(
        "INSERT INTO app_secrets (app_id, name, sealed, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (app_id, name) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at",
    )
    .bind(app_id)
    .bind(name)
    .bind(sealed)
    .bind(now)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(true)
}

/// Removes a secret; false if there was none.
pub async fn delete_secret(conn: &mut SqliteConnection, app_id: i64, name: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM app_secrets WHERE app_id = ? AND name = ?")
        .bind(app_id)
        .bind(name)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}
