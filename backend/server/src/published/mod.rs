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
/// The owner's theme as the page is painted with (absent: the frame's stock palettes).
const THEME_FILE: &str = "theme.css";
/// The original platform's theme variables a page may be given (app-platform-contract §2.9).
const THEME_NAMES: &[&str] = &[
    "bg",
    "surface",
    "surface2",
    "border",
    "border-light",
    "text",
    "muted",
    "accent",
    "accent-hover",
    "accent-dim",
    "accent-fg",
    "danger",
    "green",
    "font",
    "mono",
];
/// Longest theme value (a font stack is the longest the shell sends).
const MAX_THEME_VALUE: usize = 200;

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

/// The theme the owner's device was painted with when publishing, one set of the original's
/// variables per scheme (`{"light": {"bg": "#f0eeeb", …}, "dark": {…}}`): the page shows the app
/// as the owner saw it, following the visitor's scheme.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageTheme {
    #[serde(default)]
    pub light: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    pub dark: std::collections::BTreeMap<String, String>,
}

impl PageTheme {
    /// The stylesheet the page applies: each scheme's variables under the original's names and
    /// as `--mobius-*`, the dark ones inside `prefers-color-scheme: dark`. Only the original's
    /// names, and values that cannot leave a declaration or load anything, are accepted.
    pub fn css(&self) -> Result<String> {
        let block = |scheme: &str, vars: &std::collections::BTreeMap<String, String>| -> Result<String> {
            let mut out = format!(":root {{ color-scheme: {scheme};");
            for (name, value) in vars {
                if !THEME_NAMES.contains(&name.as_str()) {
                    return Err(Error::bad_request(
                        "invalid_request",
                        format!("theme.{scheme}.{name} is not a theme variable (one of {}).", THEME_NAMES.join(", ")),
                    ));
                }
                let v = value.trim();
                let lower = v.to_ascii_lowercase();
                let safe = !v.is_empty()
                    && v.len() <= MAX_THEME_VALUE
                    && v.chars().all(|c| c.is_ascii_alphanumeric() || " #%.,()'\"-_+/".contains(c))
                    && !lower.contains("url(")
                    && !lower.contains("expression(")
                    && !v.contains("/*")
                    // A quote left open would swallow the declarations after it.
                    && v.matches('\'').count() % 2 == 0
                    && v.matches('"').count() % 2 == 0;
                if !safe {
                    return Err(Error::bad_request(
                        "invalid_request",
                        format!(
                            "theme.{scheme}.{name} is not a plain colour or font value (at most {MAX_THEME_VALUE} characters, no url())."
                        ),
                    ));
                }
                out.push_str(&format!(" --{name}: {v}; --mobius-{name}: {v};"));
            }
            out.push_str(" }");
            Ok(out)
        };
        let light = block("light", &self.light)?;
        let dark = block("dark", &self.dark)?;
        Ok(format!("{light}\n@media (prefers-color-scheme: dark) {{ {dark} }}\n"))
    }
}

/// The theme stylesheet of copies `generation`, if it was published with one.
pub async fn theme_css(data_dir: &Path, generation: i64) -> Option<String> {
    let path = generation_dir(data_dir, generation).join(THEME_FILE);
    let text = tokio::fs::read_to_string(path).await.ok()?;
    (text.len() <= 16 * 1024).then_some(text)
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
    pub async fn publish(&self, app: &AppRow, live: bool, theme: Option<&PageTheme>) -> Result<(SiteRow, String)> {
        let theme = theme.map(PageTheme::css).transpose()?;
        let sha = app.bundle_sha.clone().ok_or(Domain::AppNotFound)?;
        let existing = crate::db::published::by_app(self.read, app.id).await?;
        let token = match &existing {
            Some(site) => self.token(site)?,
            None => new_token(),
        };
        let generation = new_generation();
        let made = self.copy(app.id, &sha, generation, live, theme.as_deref()).await;
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

    /// The module, the theme if any, and the data unless `live`, copied into the folder of
    /// `generation`.
    async fn copy(
        &self,
        app_id: i64,
        sha: &str,
        generation: i64,
        live: bool,
        theme: Option<&str>,
    ) -> Result<storage::snapshot::Copied> {
        let dir = generation_dir(self.data_dir, generation);
        tokio::fs::create_dir_all(&dir).await?;
        if let Some(css) = theme {
            tokio::fs::write(dir.join(THEME_FILE), css).await?;
        }
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

    fn theme(light: &[(&str, &str)]) -> PageTheme {
        PageTheme {
            light: light.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            dark: [("accent".to_string(), "#22c55e".to_string())].into(),
        }
    }

    #[test]
    fn a_page_theme_is_plain_custom_properties_per_scheme() {
        let css = theme(&[
            ("accent", "#15803d"),
            ("accent-dim", "rgba(21,128,61,0.08)"),
            ("font", "'Inter', system-ui, sans-serif"),
        ])
        .css()
        .expect("valid");
        assert!(css.starts_with(":root { color-scheme: light; --accent: #15803d; --mobius-accent: #15803d;"), "{css}");
        assert!(css.contains("--accent-dim: rgba(21,128,61,0.08);"), "{css}");
        assert!(
            css.contains("@media (prefers-color-scheme: dark) { :root { color-scheme: dark; --accent: #22c55e;"),
            "{css}"
        );
    }

    #[test]
    fn a_page_theme_refuses_what_could_leave_a_declaration_or_load_anything() {
        for bad in [
            ("accent", "red; } body { display: none"),
            ("accent", "url(https://evil.example/x.png)"),
            ("accent", "URL(x)"),
            ("accent", "</style><script>alert(1)</script>"),
            ("accent", "expression(alert(1))"),
            ("accent", "red /* comment"),
            ("font", "'Inter, sans-serif"),
            ("accent", "\\72 ed"),
            ("accent", ""),
            ("position", "fixed"),
        ] {
            let e = theme(&[bad]).css().expect_err(&format!("{bad:?} refused"));
            assert!(e.to_string().contains("theme.light."), "{e}");
        }
        let long = "a".repeat(MAX_THEME_VALUE + 1);
        assert!(theme(&[("font", &long)]).css().is_err());
    }
}
