//! Published pages (issue 35 item 5): a read-only copy of an app at `/sites/<token>/`, for
//! anyone with the link. What is published is the app's built module as it was, and either a
//! copy of its stored data at that moment (`storage::snapshot`, bounded) or — when the owner
//! chooses `live` — its data as it is now, read only. One page per app; publishing again keeps
//! the link and replaces the copy (the original's "token stable per project"); unpublishing
//! revokes the link at once.
//!
//! The token (256 random bits, base64url) is the whole capability: it is looked up by its
//! SHA-256 (so the comparison never runs over the secret itself), and stored only sealed under
//! the data key, for the owner's "Copy link". The page's routes (`site.rs`) read no cookie and
//! no bearer: nothing of the owner's reaches them, and they answer nothing but that page.

pub mod routes;
pub mod site;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};
use sqlx::SqlitePool;

use crate::auth::jwt::Keys;
use crate::db::apps::AppRow;
use crate::db::published::{NewSite, SiteRow};
use crate::error::{Domain, Error, Result};
use crate::storage::{self, Store};
use crate::writer::{WriteCommand, WriterHandle};

/// Most pages published at once.
pub const MAX_SITES: i64 = 20;
/// Random bytes in a token (256 bits).
const TOKEN_BYTES: usize = 32;
/// Characters of a token as it appears in a URL (base64url, no padding).
pub const TOKEN_CHARS: usize = 43;
/// The folder under `DATA_DIR` holding every page's copies.
pub const PUBLISHED_DIR: &str = "published";
/// A folder younger than this is never swept (its publish may still be writing its row).
const SWEEP_GRACE: std::time::Duration = std::time::Duration::from_secs(600);
/// The copied bundle's name in a page's folder.
const MODULE_FILE: &str = "module.js";

/// What publishing needs: the server's folders, database, writer, keys and storage.
pub struct Publisher<'a> {
    pub data_dir: &'a Path,
    /// Where the served bundles are (`compiled/`).
    pub compiled_dir: PathBuf,
    pub read: &'a SqlitePool,
    pub writer: &'a WriterHandle,
    pub keys: &'a Keys,
    pub store: &'a Arc<Store>,
}

/// A fresh token.
fn new_token() -> String {
    let mut bytes = [0u8; TOKEN_BYTES];
    rand::thread_rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// What a token is looked up by.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Whether `token` could be one of ours (anything else is a 404 without a database read).
pub fn plausible_token(token: &str) -> bool {
    token.len() == TOKEN_CHARS && token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// What app `app_id`'s token is sealed to.
fn sealed_context(app_id: i64) -> String {
    format!("published-site:{app_id}")
}

/// The page's address, relative to the server.
pub fn url(token: &str) -> String {
    format!("/sites/{token}/")
}

/// The folder of copies `generation`.
pub fn generation_dir(data_dir: &Path, generation: i64) -> PathBuf {
    data_dir.join(PUBLISHED_DIR).join(generation.to_string())
}

/// The copied module of copies `generation`.
pub fn module_path(data_dir: &Path, generation: i64) -> PathBuf {
    generation_dir(data_dir, generation).join(MODULE_FILE)
}

/// A new generation's number: random, so a folder name says nothing about the page or its order.
fn new_generation() -> i64 {
    let mut bytes = [0u8; 8];
    rand::thread_rng().fill_bytes(&mut bytes);
    i64::from_le_bytes(bytes) & i64::MAX
}

async fn remove_generation(data_dir: &Path, generation: i64) {
    let dir = generation_dir(data_dir, generation);
    if let Err(e) = tokio::fs::remove_dir_all(&dir).await
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(generation, error = %e, "a published page's old copy could not be removed");
    }
}

impl Publisher<'_> {
    /// The token of `site` (opened from its seal).
    pub fn token(&self, site: &SiteRow) -> Result<String> {
        let plain = self.keys.open(&sealed_context(site.app_id), &site.token_sealed)?;
        String::from_utf8(plain).map_err(|_| Error::Internal("a published page's token is not text".into()))
    }

    /// Publishes `app` (live, built), or replaces its page's copy and mode: the page's row and
    /// its token.
    pub async fn publish(&self, app: &AppRow, live: bool) -> Result<(SiteRow, String)> {
        let sha = app.bundle_sha.clone().ok_or(Domain::AppNotFound)?;
        let existing = crate::db::published::by_app(self.read, app.id).await?;
        let token = match &existing {
            Some(site) => self.token(site)?,
            None => new_token(),
        };
        let generation = new_generation();
        let made = self.copy(app.id, &sha, generation, live).await;
        let copied = match made {
            Ok(copied) => copied,
            Err(e) => {
                remove_generation(self.data_dir, generation).await;
                return Err(e);
            }
        };
        let site = NewSite {
            app_id: app.id,
            token_hash: token_hash(&token),
            token_sealed: self.keys.seal(&sealed_context(app.id), token.as_bytes())?,
            live,
            generation,
            bundle_sha: sha,
            bytes: i64::try_from(copied.bytes).unwrap_or(i64::MAX),
            files: i64::try_from(copied.files).unwrap_or(i64::MAX),
        };
        match self.writer.call(|ack| WriteCommand::SitePut { site, max: MAX_SITES, ack }).await {
            Ok(Some(previous)) => remove_generation(self.data_dir, previous).await,
            Ok(None) => {}
            Err(e) => {
                remove_generation(self.data_dir, generation).await;
                return Err(e);
            }
        }
        let row = crate::db::published::by_app(self.read, app.id).await?.ok_or(Domain::SiteNotFound)?;
        Ok((row, token))
    }

    /// The module, and the data unless `live`, copied into the folder of `generation`.
    async fn copy(&self, app_id: i64, sha: &str, generation: i64, live: bool) -> Result<storage::snapshot::Copied> {
        let dir = generation_dir(self.data_dir, generation);
        tokio::fs::create_dir_all(&dir).await?;
        let bundle = self.compiled_dir.join(format!("app-{app_id}-{sha}.js"));
        tokio::fs::copy(&bundle, dir.join(MODULE_FILE))
            .await
            .map_err(|_| Error::unavailable("bundle_missing", "This app's build is missing; apply it again."))?;
        if live {
            return Ok(storage::snapshot::Copied::default());
        }
        storage::snapshot::copy_app_tree(self.store.clone(), self.data_dir, app_id, generation).await
    }

    /// Unpublishes app `app_id`'s page: its link answers 404 from now on. Whether it had one.
    pub async fn unpublish(&self, app_id: i64) -> Result<bool> {
        match self.writer.call(|ack| WriteCommand::SiteDelete { app_id, ack }).await? {
            Some(generation) => {
                remove_generation(self.data_dir, generation).await;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

/// Removes the folders under `published/` no page names (a purged app's, one a crash left
/// half-made), once they are older than [`SWEEP_GRACE`]. Runs with the tombstone purge.
pub async fn sweep(data_dir: &Path, read: &SqlitePool) {
    let Ok(keep) = crate::db::published::generations(read).await else { return };
    let Ok(mut entries) = tokio::fs::read_dir(data_dir.join(PUBLISHED_DIR)).await else { return };
    while let Ok(Some(entry)) = entries.next_entry().await {
        let name = entry.file_name();
        let named = name.to_str().and_then(|n| n.parse::<i64>().ok()).is_some_and(|g| keep.contains(&g));
        // A publish in progress has made its folder but not yet its row.
        let recent = entry
            .metadata()
            .await
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_none_or(|age| age < SWEEP_GRACE);
        if !named
            && !recent
            && let Err(e) = tokio::fs::remove_dir_all(entry.path()).await
        {
            tracing::warn!(error = %e, "a published page's leftover folder could not be removed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_random_and_url_safe() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        assert!(plausible_token(&a), "{a}");
        assert_eq!(a.len(), TOKEN_CHARS);
        assert!(!plausible_token(&a[1..]));
        assert!(!plausible_token(&format!("{}/", &a[1..])));
        assert_ne!(token_hash(&a), token_hash(&b));
        assert_eq!(token_hash(&a).len(), 64);
    }
}
