//! The providers' credentials. The server's own copies live in `DATA_DIR/credentials/`, which
//! the agent's sandbox never opens: `claude-api-key`, `claude-oauth.json` (Claude Code's
//! `.credentials.json`), `codex-auth.json` (Codex's `auth.json`). A CLI's config folder
//! (`cli-auth/<provider>/`, `CLAUDE_CONFIG_DIR` / `CODEX_HOME`) is the agent's to write, so
//! nothing there is trusted: just before a CLI process starts, what it needs is written into
//! it (temporary file renamed over whatever is there: a planted link is replaced, never
//! followed), and what the CLI refreshed there (OAuth tokens) is read back — no link followed,
//! a regular file, at most [`MAX_CREDENTIAL_BYTES`], parsed — and kept when it is newer than
//! the server's copy. The API key never enters a folder the agent can write: it reaches Claude
//! through its environment. Blocking: small files, called from request and turn paths.

use std::ffi::OsStr;
use std::hash::{Hash, Hasher};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Method;
use crate::agent::ProviderKind;
use crate::error::{Error, Result};
use crate::safe_fs::{self, Dir};

/// The server's credentials folder under `DATA_DIR`.
pub const CREDENTIALS_DIR: &str = "credentials";
/// The CLIs' config folders under `DATA_DIR` (one per provider).
pub const CLI_AUTH_DIR: &str = "cli-auth";
/// Largest credential file read, in bytes.
pub const MAX_CREDENTIAL_BYTES: u64 = 64 * 1024;

const CLAUDE_API_KEY: &str = "claude-api-key";
const CLAUDE_OAUTH: &str = "claude-oauth.json";
const CODEX_AUTH: &str = "codex-auth.json";
/// Where each CLI reads its login in its config folder.
const CLAUDE_CLI_FILE: &str = ".credentials.json";
const CODEX_CLI_FILE: &str = "auth.json";
/// The API key file of the old layout (in `cli-auth/claude/`, where the agent could write).
const LEGACY_CLAUDE_KEY: &str = "mobius-api-key";
/// The server's own `CODEX_HOME` (under `credentials/`) for the Codex commands it runs itself
/// outside any turn: `codex login`, the model list.
const SERVER_CODEX_HOME: &str = "codex-home";

fn os(name: &str) -> &OsStr {
    OsStr::new(name)
}

fn master_name(kind: ProviderKind, method: Method) -> Option<&'static str> {
    match (kind, method) {
        (ProviderKind::Claude, Method::ApiKey) => Some(CLAUDE_API_KEY),
        (ProviderKind::Claude, Method::Oauth) => Some(CLAUDE_OAUTH),
        (ProviderKind::Codex, Method::ApiKey | Method::Login) => Some(CODEX_AUTH),
        _ => None,
    }
}

/// The masters of `kind`, in the order [`Credentials::method`] prefers them.
fn master_names(kind: ProviderKind) -> &'static [&'static str] {
    match kind {
        ProviderKind::Claude => &[CLAUDE_API_KEY, CLAUDE_OAUTH],
        ProviderKind::Codex => &[CODEX_AUTH],
    }
}

/// Claude Code's OAuth credentials when `bytes` are them: the access token's expiry (unix ms).
fn claude_oauth_expiry(bytes: &[u8]) -> Option<i64> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    let oauth = v.get("claudeAiOauth")?;
    oauth.get("accessToken").and_then(Value::as_str).filter(|t| !t.is_empty())?;
    Some(oauth.get("expiresAt").and_then(Value::as_i64).unwrap_or(0))
}

/// What a Codex `auth.json` holds: an API key, or a login with its last refresh (RFC 3339).
#[derive(Debug, PartialEq, Eq)]
enum CodexAuth {
    ApiKey,
    Login { last_refresh: String },
}

fn codex_auth(bytes: &[u8]) -> Option<CodexAuth> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    if v.get("OPENAI_API_KEY").and_then(Value::as_str).is_some_and(|k| !k.is_empty()) {
        return Some(CodexAuth::ApiKey);
    }
    v.get("tokens").filter(|t| t.is_object())?;
    Some(CodexAuth::Login {
        last_refresh: v.get("last_refresh").and_then(Value::as_str).unwrap_or_default().to_owned(),
    })
}

/// True when a copy the CLI refreshed (`candidate`) should replace the master.
fn newer(kind: ProviderKind, master: &[u8], candidate: &[u8]) -> bool {
    if master == candidate {
        return false;
    }
    match kind {
        ProviderKind::Claude => match (claude_oauth_expiry(master), claude_oauth_expiry(candidate)) {
            (Some(old), Some(new)) => new > old,
            _ => false,
        },
        ProviderKind::Codex => match (codex_auth(master), codex_auth(candidate)) {
            (Some(CodexAuth::Login { last_refresh: old }), Some(CodexAuth::Login { last_refresh: new })) => new > old,
            _ => false,
        },
    }
}

/// A credential file that cannot be used as it is.
fn refused(what: &str, e: &io::Error) -> Error {
    tracing::warn!(error = %e, "{what}");
    Error::Internal(format!("{what}: {e}"))
}

/// The providers' credentials under one data folder.
#[derive(Debug, Clone)]
pub struct Credentials {
    data_dir: PathBuf,
}

impl Credentials {
    pub fn new(data_dir: &Path) -> Self {
        Self { data_dir: data_dir.to_path_buf() }
    }

    /// The server's credentials folder (created `0700`).
    fn masters(&self) -> io::Result<Dir> {
        let dir = Dir::create_under(&self.data_dir, Path::new(CREDENTIALS_DIR))?;
        dir.set_mode(0o700)?;
        Ok(dir)
    }

    /// The config folder of `kind`'s CLI (created `0700`, as is `cli-auth/`).
    pub fn cli_dir(&self, kind: ProviderKind) -> io::Result<Dir> {
        let parent = Dir::create_under(&self.data_dir, Path::new(CLI_AUTH_DIR))?;
        parent.set_mode(0o700)?;
        let dir = parent.sub_or_create(Path::new(kind.id()))?;
        dir.set_mode(0o700)?;
        Ok(dir)
    }

    /// The path of `kind`'s CLI config folder (`CLAUDE_CONFIG_DIR` / `CODEX_HOME`), created.
    pub fn cli_path(&self, kind: ProviderKind) -> Result<PathBuf> {
        self.cli_dir(kind)?;
        Ok(self.data_dir.join(CLI_AUTH_DIR).join(kind.id()))
    }

    /// The `CODEX_HOME` of the Codex commands the server runs itself (login, the model list):
    /// in the server's credentials folder, out of the agent's reach. Its login is the master's.
    pub fn server_codex_home(&self) -> Result<(Dir, PathBuf)> {
        let dir = self.masters()?.sub_or_create(Path::new(SERVER_CODEX_HOME))?;
        Ok((dir, self.data_dir.join(CREDENTIALS_DIR).join(SERVER_CODEX_HOME)))
    }

    fn read_master(&self, name: &str) -> Option<Vec<u8>> {
        let dir = self.masters().ok()?;
        match dir.read_optional(Path::new(name), MAX_CREDENTIAL_BYTES) {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::warn!(file = name, error = %e, "a stored credential cannot be read");
                None
            }
        }
    }

    /// How `kind` is connected (the server's own copies only; no network).
    pub fn method(&self, kind: ProviderKind) -> Option<Method> {
        match kind {
            ProviderKind::Claude => {
                if self.claude_api_key().is_some() {
                    Some(Method::ApiKey)
                } else {
                    let oauth = self.read_master(CLAUDE_OAUTH)?;
                    claude_oauth_expiry(&oauth).map(|_| Method::Oauth)
                }
            }
            ProviderKind::Codex => match codex_auth(&self.read_master(CODEX_AUTH)?)? {
                CodexAuth::ApiKey => Some(Method::ApiKey),
                CodexAuth::Login { .. } => Some(Method::Login),
            },
        }
    }

    /// Claude's API key, if one is stored.
    pub fn claude_api_key(&self) -> Option<String> {
        let bytes = self.read_master(CLAUDE_API_KEY)?;
        let key = String::from_utf8(bytes).ok()?.trim().to_owned();
        (!key.is_empty()).then_some(key)
    }

    /// The server's copies of `kind` as they are now (size, modification time, inode): a
    /// change retires the processes kept with the old ones (`agent/warm.rs`).
    pub fn stamp(&self, kind: ProviderKind) -> u64 {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        let dir = self.masters().ok();
        for name in master_names(kind) {
            let meta = dir.as_ref().and_then(|d| d.open_file(Path::new(name)).ok()).map(|(_, m)| m);
            meta.as_ref().map(|m| (m.len(), m.mtime(), m.mtime_nsec(), m.ino())).hash(&mut hasher);
        }
        hasher.finish()
    }

    /// Stores a login of `kind` made with `method` (the only one kept: another one of the
    /// provider is forgotten) and hands it to the CLI's folder.
    pub fn save(&self, kind: ProviderKind, method: Method, bytes: &[u8]) -> Result<()> {
        let name = master_name(kind, method).ok_or_else(|| Error::Internal("no such login".into()))?;
        let masters = self.masters()?;
        masters.write(os(name), bytes, 0o600)?;
        for other in master_names(kind).iter().filter(|n| **n != name) {
            masters.remove_file(os(other))?;
        }
        self.sync_cli(kind)
    }

    /// Forgets `kind`'s credentials: the server's copies and the CLI's.
    pub fn forget(&self, kind: ProviderKind) -> Result<()> {
        let masters = self.masters()?;
        for name in master_names(kind) {
            masters.remove_file(os(name))?;
        }
        let cli = self.cli_dir(kind)?;
        for name in [CLAUDE_CLI_FILE, CODEX_CLI_FILE, LEGACY_CLAUDE_KEY] {
            cli.remove_file(os(name))?;
        }
        Ok(())
    }

    /// Reads back what the CLI refreshed in `dir` and keeps it when newer; then writes the
    /// server's copy into `dir` when the two differ (the CLI finds its login there).
    fn sync_into(&self, kind: ProviderKind, dir: &Dir) -> Result<()> {
        let (master_name, cli_name) = match (kind, self.method(kind)) {
            (ProviderKind::Claude, Some(Method::Oauth)) => (CLAUDE_OAUTH, CLAUDE_CLI_FILE),
            (ProviderKind::Codex, Some(_)) => (CODEX_AUTH, CODEX_CLI_FILE),
            (ProviderKind::Claude, _) => {
                // An API key goes by the environment; a login file of an earlier one goes.
                dir.remove_file(os(CLAUDE_CLI_FILE))?;
                return Ok(());
            }
            (ProviderKind::Codex, None) => return Ok(()),
        };
        let Some(mut master) = self.read_master(master_name) else { return Ok(()) };
        let current = match dir.read_optional(Path::new(cli_name), MAX_CREDENTIAL_BYTES) {
            Ok(current) => current,
            Err(e) => {
                // A link, a FIFO, something huge: replaced below, never read.
                tracing::warn!(error = %e, provider = kind.id(), "the CLI's login file was not a plain file; it is replaced");
                None
            }
        };
        if let Some(current) = &current
            && newer(kind, &master, current)
        {
            self.masters()?.write(os(master_name), current, 0o600)?;
            tracing::info!(provider = kind.id(), "kept the login the CLI refreshed");
            master.clone_from(current);
        }
        if current.as_deref() != Some(master.as_slice()) {
            dir.write(os(cli_name), &master, 0o600)?;
        }
        Ok(())
    }

    /// Brings `kind`'s CLI folder up to date before a process starts (see [`sync_into`]).
    pub fn sync_cli(&self, kind: ProviderKind) -> Result<()> {
        let dir = self.cli_dir(kind)?;
        self.sync_into(kind, &dir)
    }

    /// Brings the server's own `CODEX_HOME` up to date (and keeps a refresh made there).
    pub fn sync_server_codex_home(&self) -> Result<PathBuf> {
        let (dir, path) = self.server_codex_home()?;
        self.sync_into(ProviderKind::Codex, &dir)?;
        Ok(path)
    }

    /// Takes the `auth.json` a `codex login` wrote into the server's `CODEX_HOME` as the
    /// Codex login; `false` when there is none that parses.
    pub fn adopt_codex_login(&self) -> Result<bool> {
        let (dir, _) = self.server_codex_home()?;
        let Some(bytes) = dir.read_optional(Path::new(CODEX_CLI_FILE), MAX_CREDENTIAL_BYTES)? else {
            return Ok(false);
        };
        let method = match codex_auth(&bytes) {
            Some(CodexAuth::ApiKey) => Method::ApiKey,
            Some(CodexAuth::Login { .. }) => Method::Login,
            None => return Ok(false),
        };
        self.save(ProviderKind::Codex, method, &bytes)?;
        Ok(true)
    }

    /// Removes the login of the server's `CODEX_HOME` (before a new `codex login` there).
    pub fn clear_server_codex_login(&self) -> Result<()> {
        let (dir, _) = self.server_codex_home()?;
        dir.remove_file(os(CODEX_CLI_FILE))?;
        Ok(())
    }

    /// Moves the credentials of the old layout (kept in the CLIs' folders, where the agent
    /// could write) into the server's folder, once, at start-up. A file that is not a plain
    /// file (a planted link, a FIFO) is never followed: it is left out and logged, and the
    /// provider shows as not connected until the owner connects it again.
    pub fn migrate(&self) -> Result<()> {
        let masters = self.masters()?;
        let legacy = [
            (ProviderKind::Claude, LEGACY_CLAUDE_KEY, CLAUDE_API_KEY, true),
            (ProviderKind::Claude, CLAUDE_CLI_FILE, CLAUDE_OAUTH, false),
            (ProviderKind::Codex, CODEX_CLI_FILE, CODEX_AUTH, false),
        ];
        for (kind, old, new, remove) in legacy {
            if masters.kind(os(new))?.is_some() {
                continue;
            }
            let cli = self.cli_dir(kind)?;
            let bytes = match cli.read_optional(Path::new(old), MAX_CREDENTIAL_BYTES) {
                Ok(Some(bytes)) => bytes,
                Ok(None) => continue,
                Err(e) => {
                    let _ = refused("a credential file of the old layout was not used", &e);
                    if safe_fs::refusal(&e).is_some() {
                        cli.remove_file(os(old))?;
                    }
                    continue;
                }
            };
            let usable = match new {
                CLAUDE_API_KEY => std::str::from_utf8(&bytes).is_ok_and(|k| !k.trim().is_empty()),
                CLAUDE_OAUTH => claude_oauth_expiry(&bytes).is_some(),
                _ => codex_auth(&bytes).is_some(),
            };
            if usable {
                masters.write(os(new), &bytes, 0o600)?;
                tracing::info!(provider = kind.id(), "credentials moved out of the agent's reach");
            }
            if remove {
                cli.remove_file(os(old))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn oauth(token: &str, expires: i64) -> Vec<u8> {
        serde_json::json!({ "claudeAiOauth": { "accessToken": token, "refreshToken": "r", "expiresAt": expires } })
            .to_string()
            .into_bytes()
    }

    #[test]
    fn a_refreshed_login_is_kept_and_a_planted_link_is_replaced_not_followed() {
        let tmp = tempfile::tempdir().expect("tmp");
        let data = tmp.path();
        std::fs::write(data.join("secret.key"), b"signing key").expect("secret");
        let creds = Credentials::new(data);
        creds.save(ProviderKind::Claude, Method::Oauth, &oauth("old", 1_000)).expect("save");
        let cli = data.join("cli-auth/claude/.credentials.json");
        assert_eq!(std::fs::read(&cli).expect("copy"), oauth("old", 1_000), "handed to the CLI");
        // The CLI refreshes its token: the server keeps the newer one.
        std::fs::write(&cli, oauth("new", 2_000)).expect("refresh");
        creds.sync_cli(ProviderKind::Claude).expect("sync");
        assert_eq!(creds.read_master(CLAUDE_OAUTH).expect("master"), oauth("new", 2_000));
        // An older one is not taken, and is put right.
        std::fs::write(&cli, oauth("stale", 10)).expect("stale");
        creds.sync_cli(ProviderKind::Claude).expect("sync");
        assert_eq!(std::fs::read(&cli).expect("copy"), oauth("new", 2_000));
        // The agent swaps the file for a link to the signing key: never read, replaced.
        std::fs::remove_file(&cli).expect("rm");
        symlink(data.join("secret.key"), &cli).expect("link");
        let stamp = creds.stamp(ProviderKind::Claude);
        creds.sync_cli(ProviderKind::Claude).expect("sync");
        assert_eq!(std::fs::read(data.join("secret.key")).expect("secret"), b"signing key");
        assert!(std::fs::symlink_metadata(&cli).expect("meta").is_file());
        assert_eq!(creds.read_master(CLAUDE_OAUTH).expect("master"), oauth("new", 2_000));
        assert_eq!(creds.stamp(ProviderKind::Claude), stamp, "the server's copy did not change");
        // An API key replaces the login and never goes into the CLI's folder.
        creds.save(ProviderKind::Claude, Method::ApiKey, b"sk-ant-1").expect("key");
        assert_eq!(creds.method(ProviderKind::Claude), Some(Method::ApiKey));
        assert!(!cli.exists() && !data.join("cli-auth/claude/mobius-api-key").exists());
        assert_ne!(creds.stamp(ProviderKind::Claude), stamp);
    }

    #[test]
    fn the_old_layout_moves_out_and_planted_links_in_it_are_dropped() {
        let tmp = tempfile::tempdir().expect("tmp");
        let data = tmp.path();
        std::fs::write(data.join("secret.key"), b"signing key").expect("secret");
        std::fs::create_dir_all(data.join("cli-auth/claude")).expect("claude");
        std::fs::create_dir_all(data.join("cli-auth/codex")).expect("codex");
        symlink(data.join("secret.key"), data.join("cli-auth/claude/mobius-api-key")).expect("planted");
        std::fs::write(data.join("cli-auth/claude/.credentials.json"), oauth("t", 5)).expect("oauth");
        std::fs::write(data.join("cli-auth/codex/auth.json"), br#"{"OPENAI_API_KEY":"sk-x"}"#).expect("codex");
        let creds = Credentials::new(data);
        creds.migrate().expect("migrate");
        assert_eq!(creds.claude_api_key(), None, "the planted key was not read");
        assert!(std::fs::symlink_metadata(data.join("cli-auth/claude/mobius-api-key")).is_err(), "and is gone");
        assert_eq!(creds.method(ProviderKind::Claude), Some(Method::Oauth));
        assert_eq!(creds.method(ProviderKind::Codex), Some(Method::ApiKey));
        assert_eq!(std::fs::read(data.join("secret.key")).expect("secret"), b"signing key");
        // A plain key of the old layout moves, and leaves the agent's folder.
        std::fs::remove_dir_all(data.join("credentials")).expect("reset");
        std::fs::write(data.join("cli-auth/claude/mobius-api-key"), b"sk-ant-2\n").expect("key");
        creds.migrate().expect("migrate");
        assert_eq!(creds.claude_api_key().as_deref(), Some("sk-ant-2"));
        assert!(!data.join("cli-auth/claude/mobius-api-key").exists());
    }
}
