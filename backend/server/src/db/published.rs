//! Published pages (`published_sites`): one read-only copy of an app at `/sites/<token>/`.

use sqlx::{SqliteConnection, SqlitePool};

use crate::error::Result;

/// A published page as stored (its token only hashed and sealed).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SiteRow {
    pub id: i64,
    pub app_id: i64,
    pub token_sealed: Vec<u8>,
    /// Reads the app's storage as it is now (read-only) instead of the copy made at publish.
    pub live: bool,
    /// The folder `DATA_DIR/published/<generation>/` its copies are in.
    pub generation: i64,
    pub bundle_sha: String,
    pub bytes: i64,
    pub files: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A page as the owner's list shows it: the row and its app's name and slug.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ListedSite {
    #[sqlx(flatten)]
    pub site: SiteRow,
    pub app_slug: String,
    pub app_name: String,
}

/// What a publish stores.
#[derive(Debug, Clone)]
pub struct NewSite {
    pub app_id: i64,
    pub token_hash: String,
    pub token_sealed: Vec<u8>,
    pub live: bool,
    pub generation: i64,
    pub bundle_sha: String,
    pub bytes: i64,
    pub files: i64,
}

const COLUMNS: &str = "s.id, s.app_id, s.token_sealed, s.live, s.generation, s.bundle_sha, s.bytes, s.files, \
                       s.created_at, s.updated_at";

/// The page whose token hashes to `token_hash`, if its app is live (a deleted app's page is gone).
pub async fn by_token_hash(pool: &SqlitePool, token_hash: &str) -> Result<Option<SiteRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM published_sites s JOIN apps a ON a.id = s.app_id \
         WHERE s.token_hash = ? AND a.deleted_at IS NULL"
    ))
    .bind(token_hash)
    .fetch_optional(pool)
    .await?)
}

/// App `app_id`'s page, if it has one.
pub async fn by_app(pool: &SqlitePool, app_id: i64) -> Result<Option<SiteRow>> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM published_sites s WHERE s.app_id = ?"))
        .bind(app_id)
        .fetch_optional(pool)
        .await?)
}

/// Page `id`.
pub async fn get(pool: &SqlitePool, id: i64) -> Result<Option<SiteRow>> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM published_sites s WHERE s.id = ?"))
        .bind(id)
        .fetch_optional(pool)
        .await?)
}

/// Every page of a live app, newest first.
pub async fn list(pool: &SqlitePool) -> Result<Vec<ListedSite>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS}, a.slug AS app_slug, a.name AS app_name FROM published_sites s \
         JOIN apps a ON a.id = s.app_id WHERE a.deleted_at IS NULL ORDER BY s.created_at DESC, s.id DESC"
    ))
    .fetch_all(pool)
    .await?)
}

/// The generations every row names (the folders to keep).
pub async fn generations(pool: &SqlitePool) -> Result<Vec<i64>> {
    Ok(sqlx::query_scalar("SELECT generation FROM published_sites").fetch_all(pool).await?)
}

/// What [`put`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Put {
    /// A new page.
    Created,
    /// The app's page got a new copy and mode (its token and creation time kept); the
    /// generation it replaced, whose folder is the caller's to remove.
    Replaced(i64),
    /// `max` pages exist already: nothing stored.
    Full,
}

/// Stores `site`: a new page, or app `site.app_id`'s page with a new copy and mode.
pub async fn put(conn: &mut SqliteConnection, site: &NewSite, max: i64, now: i64) -> Result<Put> {
    let previous: Option<i64> = sqlx::query_scalar("SELECT generation FROM published_sites WHERE app_id = ?")
        .bind(site.app_id)
        .fetch_optional(&mut *conn)
        .await?;
    if let Some(previous) = previous {
        sqlx::query(
            "UPDATE published_sites SET live = ?, generation = ?, bundle_sha = ?, bytes = ?, files = ?, updated_at = ? \
             WHERE app_id = ?",
        )
        .bind(site.live)
        .bind(site.generation)
        .bind(&site.bundle_sha)
        .bind(site.bytes)
        .bind(site.files)
        .bind(now)
        .bind(site.app_id)
        .execute(&mut *conn)
        .await?;
        return Ok(Put::Replaced(previous));
    }
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM published_sites").fetch_one(&mut *conn).await?;
    if count >= max {
        return Ok(Put::Full);
    }
    sqlx::query(
        "INSERT INTO published_sites (app_id, token_hash, token_sealed, live, generation, bundle_sha, bytes, files, \
         created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(site.app_id)
    .bind(&site.token_hash)
    .bind(&site.token_sealed)
    .bind(site.live)
    .bind(site.generation)
    .bind(&site.bundle_sha)
    .bind(site.bytes)
    .bind(site.files)
    .bind(now)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(Put::Created)
}

/// Removes app `app_id`'s page; answers its generation (`None`: it had none).
pub async fn delete(conn: &mut SqliteConnection, app_id: i64) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar("DELETE FROM published_sites WHERE app_id = ? RETURNING generation")
        .bind(app_id)
        .fetch_optional(&mut *conn)
        .await?)
}
