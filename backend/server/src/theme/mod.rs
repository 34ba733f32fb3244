//! The platform's theme as data: custom properties over the stock palette
//! (`frontend/src/styles/palette.css`), which the agent writes in `DATA_DIR/theme/theme.css`
//! and applies (`mobius theme apply`). The server checks it (`css.rs`), keeps every accepted
//! version (`history.rs`), serves the current one from memory with an ETag, and tells every
//! open shell (`theme_updated`), which restyles itself and its app frames. A refused theme
//! leaves the last good one serving.

pub mod css;
pub mod history;
pub mod routes;

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use sha2::{Digest, Sha256};

use crate::error::{Domain, Error, Result};
use crate::events::Hub;
use crate::locks::UnpoisonedRw;
use crate::safe_fs::Dir;

/// The agent's folder in `DATA_DIR` and the file in it.
pub const THEME_DIR: &str = "theme";
const THEME_FILE: &str = "theme.css";
/// Versions listed in Settings and restorable.
pub const KEPT_VERSIONS: usize = 20;

/// What the agent's file holds when the theme is the stock one.
pub const STOCK_TEXT: &str = "/* The Möbius theme. Empty means the stock colours. Set any variable of the stock palette\n   inside :root { … }, e.g.  :root { --light-accent: #0f766e; --dark-accent: #2dd4bf; }\n   then run: mobius theme apply   (the skill `theming` lists the variables). */\n";

/// The theme being served.
#[derive(Debug)]
pub struct Current {
    /// The accepted text (checked; may be only comments).
    pub css: Arc<str>,
    /// Its version (commit id), `None` while the stock theme was never replaced.
    pub version: Option<String>,
    /// A strong validator of `css`.
    pub etag: String,
    /// What the check read from it.
    pub checked: css::Checked,
}

impl Current {
    fn new(css: String, version: Option<String>, checked: css::Checked) -> Current {
        let etag = format!("\"t-{}\"", &hex::encode(Sha256::digest(css.as_bytes()))[..20]);
        Current { css: css.into(), version, etag, checked }
    }
}

/// The theme: the current one in memory, its history, one change at a time.
pub struct Theme {
    data_dir: PathBuf,
    history: history::History,
    current: RwLock<Arc<Current>>,
    changing: tokio::sync::Mutex<()>,
    hub: Arc<Hub>,
}

impl Theme {
    /// Reads the current theme from its history (a version that no longer passes the check —
    /// the rules got stricter — serves the stock theme) and gives the agent its file when it
    /// has none. Blocking.
    pub fn load(data_dir: &Path, hub: Arc<Hub>) -> Result<Theme> {
        let history = history::History::new(data_dir.join("platform").join("theme.git"));
        let current = match history.head()? {
            Some((id, text)) => match css::check(&text) {
                Ok(checked) => Current::new(text, Some(id), checked),
                Err(refusal) => {
                    tracing::warn!(%refusal, "the saved theme no longer passes the check; serving the stock theme");
                    Current::new(String::new(), None, css::Checked::default())
                }
            },
            None => Current::new(String::new(), None, css::Checked::default()),
        };
        // The agent's folder (in its sandbox's list, so it must be there before any turn); its
        // file is seeded once the server is ready (`seed_file`).
        Dir::create_under(data_dir, Path::new(THEME_DIR))?;
        Ok(Theme {
            data_dir: data_dir.to_path_buf(),
            history,
            current: RwLock::new(Arc::new(current)),
            changing: tokio::sync::Mutex::new(()),
            hub,
        })
    }

    /// Gives the agent its file, `DATA_DIR/theme/theme.css`, when there is none: the served
    /// theme's text (the stock one's comment when stock). Run once the server is ready — nothing
    /// served reads it, and its two fsyncs were most of a first boot's theme step. Created
    /// exclusively, so a file the agent (or anyone) wrote meanwhile is never replaced.
    pub fn seed_file(&self) -> std::io::Result<()> {
        let dir = Dir::create_under(&self.data_dir, Path::new(THEME_DIR))?;
        if dir.kind(THEME_FILE.as_ref())?.is_some() {
            return Ok(());
        }
        let current = self.current();
        let text = if current.css.trim().is_empty() { STOCK_TEXT } else { &current.css };
        // Linked into place whole: the agent (or anything) reading it never sees it empty.
        dir.write_new(THEME_FILE.as_ref(), text.as_bytes(), 0o600).map(|_| ())
    }

    /// The theme being served.
    pub fn current(&self) -> Arc<Current> {
        self.current.read_locked().clone()
    }

    /// Applies the agent's file: read (bounded, through `safe_fs`), checked, committed, served,
    /// announced. Returns the served theme and whether it changed.
    pub async fn apply_file(self: &Arc<Self>) -> Result<(Arc<Current>, bool)> {
        let _one = self.changing.lock().await;
        let data_dir = self.data_dir.clone();
        let text = tokio::task::spawn_blocking(move || read_file(&data_dir)).await.map_err(join_err)??;
        self.accept(text, "agent".into(), false).await
    }

    /// Back to the stock theme (the agent's file too).
    pub async fn reset(self: &Arc<Self>) -> Result<(Arc<Current>, bool)> {
        let _one = self.changing.lock().await;
        self.accept(STOCK_TEXT.to_owned(), "owner reset".into(), true).await
    }

    /// Back to version `id` (one of the last [`KEPT_VERSIONS`]; the agent's file too).
    pub async fn restore(self: &Arc<Self>, id: &str) -> Result<(Arc<Current>, bool)> {
        let _one = self.changing.lock().await;
        let this = self.clone();
        let wanted = id.to_owned();
        let text = tokio::task::spawn_blocking(move || this.history.text_of(&wanted, KEPT_VERSIONS))
            .await
            .map_err(join_err)??
            .ok_or(Domain::ThemeVersionNotFound)?;
        let short: String = id.chars().take(12).collect();
        self.accept(text, format!("restore {short}"), true).await
    }

    /// The last [`KEPT_VERSIONS`] versions, newest first.
    pub async fn versions(self: &Arc<Self>) -> Result<Vec<history::Version>> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.history.versions(KEPT_VERSIONS)).await.map_err(join_err)?
    }

    /// Checks `text`, commits it, serves it and tells every shell; `write_back` also puts it in
    /// the agent's file (a reset or restore, so the agent edits what is live).
    async fn accept(self: &Arc<Self>, text: String, source: String, write_back: bool) -> Result<(Arc<Current>, bool)> {
        let checked = css::check(&text).map_err(|refusal| Domain::ThemeInvalid(refusal.to_string()))?;
        let this = self.clone();
        let served = text.clone();
        let (version, changed) = tokio::task::spawn_blocking(move || -> Result<(String, bool)> {
            let committed = this.history.commit(&text, &source)?;
            if write_back {
                let dir = Dir::create_under(&this.data_dir, Path::new(THEME_DIR))?;
                dir.write(THEME_FILE.as_ref(), text.as_bytes(), 0o600)?;
            }
            Ok(committed)
        })
        .await
        .map_err(join_err)??;
        let current = Arc::new(Current::new(served, Some(version.clone()), checked));
        *self.current.write_locked() = current.clone();
        if changed && let Ok(data) = serde_json::to_string(&crate::protocol::SystemEvent::ThemeUpdated { version }) {
            self.hub.publish_system(data);
        }
        Ok((current, changed))
    }
}

/// The agent's theme file, as text, refused when too large or not UTF-8.
fn read_file(data_dir: &Path) -> Result<String> {
    let dir = Dir::create_under(data_dir, Path::new(THEME_DIR))?;
    let bytes = match dir.read_optional(THEME_FILE.as_ref(), css::MAX_THEME_BYTES as u64) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Err(Domain::ThemeInvalid("theme/theme.css does not exist".into()).into()),
        // A link, a folder, a FIFO, or past the size bound.
        Err(e) => {
            let Some(refused) = crate::safe_fs::refusal(&e) else {
                return Err(e.into());
            };
            let why = format!("{refused} (at most {} bytes of a regular file)", css::MAX_THEME_BYTES);
            return Err(Domain::ThemeInvalid(why).into());
        }
    };
    String::from_utf8(bytes).map_err(|_| Domain::ThemeInvalid("the theme is not UTF-8 text".into()).into())
}

fn join_err(e: tokio::task::JoinError) -> Error {
    Error::Internal(format!("theme task: {e}"))
}
