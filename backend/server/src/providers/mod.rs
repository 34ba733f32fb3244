//! Provider setup: which CLIs are installed, their credentials under `DATA_DIR/cli-auth/`,
//! connecting (API key, Claude OAuth with PKCE, Codex device code), and the environment a
//! turn's CLI process gets.

pub mod check;
pub mod credentials;
mod oauth;
mod routes;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use sqlx::SqlitePool;
use tokio::io::AsyncWriteExt;

pub use credentials::Credentials;
pub use routes::router;

use crate::agent::claude::Claude;
use crate::agent::codex::Codex;
use crate::agent::models::ModelInfo;
use crate::agent::{AgentProvider, ProviderKind};
use crate::config::Config;
use crate::error::{Domain, Error, Result};
use crate::locks::Unpoisoned;
use crate::safe_fs::Dir;

/// A CLI's model list is asked again after this long.
const MODEL_LIST_CACHE: Duration = Duration::from_secs(300);
/// `--version` answers are cached this long.
const VERSION_CACHE: Duration = Duration::from_secs(300);
/// Longest wait for a CLI's `--version` or `login`.
const CLI_COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest accepted API key.
const MAX_API_KEY_CHARS: usize = 512;

/// How a provider is connected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    ApiKey,
    Oauth,
    Login,
}

/// The state of one provider's credentials.
#[derive(Clone, Debug, Serialize)]
pub struct ProviderStatus {
    pub connected: bool,
    pub method: Option<Method>,
}

/// Codex device-code login in progress (or finished).
#[derive(Clone, Debug, Serialize)]
pub struct DeviceLogin {
    pub status: &'static str,
    pub url: Option<String>,
    pub code: Option<String>,
    pub error: Option<String>,
}

/// Largest shell profile of the agent's home the server adds its line to.
const MAX_PROFILE_BYTES: u64 = 256 * 1024;

/// The agent CLIs and their credentials.
pub struct Providers {
    claude: Claude,
    codex: Codex,
    data_dir: PathBuf,
    api_url: String,
    /// The credentials: the server's copies and the CLIs' folders.
    pub credentials: Credentials,
    claude_base_url: Option<String>,
    codex_base_url: Option<String>,
    anthropic_api_url: String,
    openai_api_url: String,
    pub(crate) oauth: oauth::ClaudeOAuth,
    device: Arc<Mutex<Option<DeviceLogin>>>,
    versions: Mutex<Option<(Instant, [Option<String>; 2])>>,
    /// Codex's model list as its CLI last gave it.
    codex_models: tokio::sync::Mutex<Option<(Instant, Vec<ModelInfo>)>>,
    /// The memory ceiling of agent processes.
    memory: crate::agent::ceiling::MemoryCeiling,
    /// The agent process trees it starts (their labels and markers).
    trees: crate::agent::trees::Trees,
    /// The tools on the agent's `PATH`, as Settings lists them.
    toolbox: crate::agent::toolbox::Toolbox,
    /// The `mobius` binary git runs as the agent's credential helper (`Config::self_exe`).
    git_helper: PathBuf,
    /// Where the agent's git reaches GitHub (`Config::github_url`).
    github_url: String,
}

impl std::fmt::Debug for Providers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Providers(..)")
    }
}

impl Providers {
    /// Providers over `data_dir` (absolute); `api_url` is how agents reach this server.
    pub fn new(config: &Config, data_dir: &Path, api_url: String) -> Self {
        Self {
            claude: Claude {
                bin: config.claude_bin.clone(),
                start_timeout: config.agent_start_timeout,
                output_max: config.agent_output_max,
            },
            codex: Codex {
                bin: config.codex_bin.clone(),
                start_timeout: config.agent_start_timeout,
                output_max: config.agent_output_max,
            },
            memory: crate::agent::ceiling::MemoryCeiling::detect(config.agent_memory_max),
            trees: crate::agent::trees::Trees::new(crate::agent::agent_pid_dir(data_dir), !config.shared_process),
            data_dir: data_dir.to_path_buf(),
            api_url,
            credentials: Credentials::new(data_dir),
            claude_base_url: config.claude_base_url.clone(),
            codex_base_url: config.codex_base_url.clone(),
            anthropic_api_url: config.anthropic_api_url.clone(),
            openai_api_url: config.openai_api_url.clone(),
            oauth: oauth::ClaudeOAuth::new(config),
            device: Arc::new(Mutex::new(None)),
            versions: Mutex::new(None),
            toolbox: crate::agent::toolbox::Toolbox::default(),
            codex_models: tokio::sync::Mutex::new(None),
            git_helper: config.self_exe.clone(),
            github_url: config.github_url.clone(),
        }
    }

    /// How processes the server starts reach its API (`MOBIUS_API_URL`, `API_BASE_URL`).
    pub fn api_url(&self) -> &str {
        &self.api_url
    }

    /// The provider implementation for `kind`.
    pub fn provider(&self, kind: ProviderKind) -> &dyn AgentProvider {
        match kind {
            ProviderKind::Claude => &self.claude,
            ProviderKind::Codex => &self.codex,
        }
    }

    /// The memory ceiling agent processes are held to.
    pub fn memory(&self) -> &crate::agent::ceiling::MemoryCeiling {
        &self.memory
    }

    /// The agent process trees (turns, quiet turns, app jobs) this server starts.
    pub fn trees(&self) -> &crate::agent::trees::Trees {
        &self.trees
    }

    /// Most stdout bytes one turn of a CLI may produce.
    pub fn output_max(&self) -> u64 {
        self.claude.output_max
    }

    /// The CLI binary of `kind`.
    pub fn bin(&self, kind: ProviderKind) -> &Path {
        match kind {
            ProviderKind::Claude => &self.claude.bin,
            ProviderKind::Codex => &self.codex.bin,
        }
    }

    /// `DATA_DIR/cli-auth/<provider>` (created 0700): the CLI's config folder, which the agent
    /// can write.
    pub fn auth_dir(&self, kind: ProviderKind) -> Result<PathBuf> {
        self.credentials.cli_path(kind)
    }

    /// Connection state of `kind` (the server's own copies only, no network).
    pub fn status(&self, kind: ProviderKind) -> ProviderStatus {
        let method = self.credentials.method(kind);
        ProviderStatus { connected: method.is_some(), method }
    }

    /// The provider a chat without one runs on: the owner's choice if connected, else the
    /// first connected one, else the owner's choice (which then reports as not connected).
    pub async fn default_provider(&self, read: &SqlitePool) -> Result<Option<ProviderKind>> {
        let chosen = crate::db::owner::default_provider(read).await?;
        if let Some(k) = chosen
            && self.status(k).connected
        {
            return Ok(Some(k));
        }
        Ok(ProviderKind::ALL.into_iter().find(|k| self.status(*k).connected).or(chosen))
    }

    /// Prepares `kind`'s config folder for a CLI process about to start and answers the extra
    /// environment carrying its credentials; 409 when it is not connected. The folder is the
    /// agent's to write, so what the CLI relies on is put there now: its login (see
    /// [`Credentials::sync_cli`]) and, for Codex, the server's `config.toml` (planted rules and
    /// hooks removed). Claude takes its settings from flags (`agent/claude.rs`).
    pub fn prepare_cli(&self, kind: ProviderKind) -> Result<Vec<(String, String)>> {
        if !self.status(kind).connected {
            return Err(Domain::ProviderNotConnected(Some(kind.name())).into());
        }
        self.credentials.sync_cli(kind)?;
        let mut env = Vec::new();
        match kind {
            ProviderKind::Claude => {
                if let Some(key) = self.credentials.claude_api_key() {
                    env.push(("ANTHROPIC_API_KEY".to_owned(), key));
                }
            }
            ProviderKind::Codex => {
                let home = self.credentials.cli_dir(kind)?;
                crate::agent::codex::prepare_home(&home, self.codex_base_url.as_deref())?;
            }
        }
        Ok(env)
    }

    /// The complete environment of a turn's CLI process (nothing else is inherited).
    pub fn agent_env(
        &self,
        kind: ProviderKind,
        chat_id: &str,
        run_id: &str,
        token: &str,
        credentials: Vec<(String, String)>,
    ) -> Result<Vec<(String, String)>> {
        let scratch = self.data_dir.join("agent-scratch").join(chat_id);
        let home = self.data_dir.join("agent-home");
        Dir::create_under(&self.data_dir, &Path::new("agent-scratch").join(chat_id))?;
        let home_dir = Dir::create_under(&self.data_dir, Path::new("agent-home"))?;
        let path = self.agent_path();
        let exe = std::env::current_exe().ok();
        if let Some(dir) = exe.as_ref().and_then(|p| p.parent()) {
            ensure_login_profile(&home_dir, dir)?;
        }
        ensure_git_credentials(&home_dir, &self.git_helper, &self.github_url)?;
        let s = |p: &Path| p.display().to_string();
        let mut env = vec![
            ("PATH".to_owned(), path),
            ("HOME".to_owned(), s(&home)),
            ("LANG".to_owned(), "C.UTF-8".to_owned()),
            ("SHELL".to_owned(), "/bin/bash".to_owned()),
            ("TMPDIR".to_owned(), s(&scratch)),
            ("TMP".to_owned(), s(&scratch)),
            ("TEMP".to_owned(), s(&scratch)),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".to_owned(), "1".to_owned()),
            ("DISABLE_AUTOUPDATER".to_owned(), "1".to_owned()),
            ("MOBIUS_API_URL".to_owned(), self.api_url.clone()),
            ("MOBIUS_AGENT_TOKEN".to_owned(), token.to_owned()),
            ("MOBIUS_CHAT_ID".to_owned(), chat_id.to_owned()),
            ("MOBIUS_RUN_ID".to_owned(), run_id.to_owned()),
            ("MOBIUS_DATA_DIR".to_owned(), s(&self.data_dir)),
            ("MOBIUS_BIN".to_owned(), exe.as_deref().map(s).unwrap_or_else(|| "mobius".into())),
            // The names the original product's scripts and skills use.
            ("API_BASE_URL".to_owned(), self.api_url.clone()),
            ("AGENT_TOKEN".to_owned(), token.to_owned()),
            ("CHAT_ID".to_owned(), chat_id.to_owned()),
        ];
        // Only this provider's credentials: the other one's folder is not named (and the
        // sandbox does not open it).
        match kind {
            ProviderKind::Claude => env.push(("CLAUDE_CONFIG_DIR".to_owned(), s(&self.auth_dir(kind)?))),
            ProviderKind::Codex => env.push(("CODEX_HOME".to_owned(), s(&self.auth_dir(kind)?))),
        }
        for key in ["USER", "LOGNAME", "TZ"] {
            if let Ok(value) = std::env::var(key) {
                env.push((key.to_owned(), value));
            }
        }
        if kind == ProviderKind::Claude
            && let Some(url) = &self.claude_base_url
        {
            env.push(("ANTHROPIC_BASE_URL".to_owned(), url.clone()));
        }
        env.extend(credentials);
        Ok(env)
    }

    /// The models of `kind`: Claude's maintained list; Codex's from its CLI (`model/list`),
    /// asked at most every [`MODEL_LIST_CACHE`] (one ask at a time), else its fallback list.
    pub async fn models(&self, kind: ProviderKind) -> Vec<ModelInfo> {
        match kind {
            ProviderKind::Claude => crate::agent::claude::models(),
            ProviderKind::Codex => {
                let mut cached = self.codex_models.lock().await;
                if let Some((at, list)) = cached.as_ref()
                    && at.elapsed() < MODEL_LIST_CACHE
                {
                    return list.clone();
                }
                let list = match self.ask_codex_models().await {
                    Ok(list) if !list.is_empty() => list,
                    Ok(_) => crate::agent::codex::fallback_models(),
                    Err(e) => {
                        tracing::info!(error = %e, "Codex could not list its models; offering the fallback list");
                        crate::agent::codex::fallback_models()
                    }
                };
                *cached = Some((Instant::now(), list.clone()));
                list
            }
        }
    }

    /// Codex's `model/list`, asked of an app-server the server runs itself, in its own
    /// `CODEX_HOME` (never the agent's, whose files could start programs outside the sandbox).
    async fn ask_codex_models(&self) -> Result<Vec<ModelInfo>> {
        let home = self.server_codex_home()?;
        let s = |p: &Path| p.display().to_string();
        let env = vec![
            ("PATH".to_owned(), std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into())),
            ("HOME".to_owned(), s(&home)),
            ("CODEX_HOME".to_owned(), s(&home)),
        ];
        let listed = crate::agent::codex::list_models(&self.codex.bin, &home, &env).await;
        // A token the CLI refreshed meanwhile is kept.
        if let Err(e) = self.credentials.sync_server_codex_home() {
            tracing::warn!(error = %e, "the Codex login could not be read back");
        }
        listed
    }

    /// The server's own `CODEX_HOME`, ready for a command: the login and the server's config.
    fn server_codex_home(&self) -> Result<PathBuf> {
        let path = self.credentials.sync_server_codex_home()?;
        let (dir, _) = self.credentials.server_codex_home()?;
        crate::agent::codex::prepare_home(&dir, self.codex_base_url.as_deref())?;
        Ok(path)
    }

    /// Installed CLI versions (`None` when missing), cached for a few minutes.
    /// The `PATH` of the agent's processes (turns and app jobs): curated, see `agent::toolbox`.
    pub fn agent_path(&self) -> String {
        let dirs: Vec<PathBuf> = [self.bin(ProviderKind::Claude), self.bin(ProviderKind::Codex), Path::new("node")]
            .into_iter()
            .flat_map(crate::agent::toolbox::dirs_of)
            .collect();
        crate::agent::toolbox::agent_path(&dirs)
    }

    /// What an app job needs to run the CLIs itself, as the contract's jobs do (`claude -p`,
    /// `codex exec`): for each connected provider its login (the folder `CLAUDE_CONFIG_DIR` /
    /// `CODEX_HOME` names, prepared like a turn's; Claude's API key and model endpoint in the
    /// environment) and the folders the job's sandbox must open for it (that folder, read and
    /// write; the CLI's package, read and execute). Nothing of a provider not connected.
    pub fn job_clis(&self) -> (Vec<(String, String)>, Vec<PathBuf>, Vec<PathBuf>) {
        let (mut env, mut logins, mut packages) = (Vec::new(), Vec::new(), Vec::new());
        for kind in [ProviderKind::Claude, ProviderKind::Codex] {
            let Ok(credentials) = self.prepare_cli(kind) else { continue };
            let Ok(dir) = self.auth_dir(kind) else { continue };
            let name = match kind {
                ProviderKind::Claude => "CLAUDE_CONFIG_DIR",
                ProviderKind::Codex => "CODEX_HOME",
            };
            env.push((name.to_owned(), dir.display().to_string()));
            if kind == ProviderKind::Claude
                && let Some(url) = &self.claude_base_url
            {
                env.push(("ANTHROPIC_BASE_URL".to_owned(), url.clone()));
            }
            env.extend(credentials);
            logins.push(dir);
            packages.extend(crate::agent::sandbox::package_root(self.bin(kind)));
        }
        (env, logins, packages)
    }

    /// The tools on the agent's `PATH` and their versions (asked at most every few minutes).
    pub async fn toolbox(&self) -> Vec<crate::agent::toolbox::Tool> {
        let Ok(home) = Dir::create_under(&self.data_dir, Path::new("run/cli-home")) else { return Vec::new() };
        self.toolbox.list(&self.agent_path(), home.path()).await
    }

    pub async fn versions(&self) -> [Option<String>; 2] {
        if let Some((at, v)) = self.versions.locked().clone()
            && at.elapsed() < VERSION_CACHE
        {
            return v;
        }
        let (claude, codex) = tokio::join!(self.version(ProviderKind::Claude), self.version(ProviderKind::Codex));
        let v = [claude, codex];
        *self.versions.locked() = Some((Instant::now(), v.clone()));
        v
    }

    async fn version(&self, kind: ProviderKind) -> Option<String> {
        // A home of the server's own: the agent's could hold settings the CLI reads.
        let home = Dir::create_under(&self.data_dir, Path::new("run/cli-home")).ok()?;
        let output = tokio::time::timeout(
            Duration::from_secs(10),
            tokio::process::Command::new(self.bin(kind))
                .arg("--version")
                .env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env("HOME", home.path())
                .stdin(std::process::Stdio::null())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .ok()?
        .ok()?;
        if !output.status.success() {
            return None;
        }
        let text = String::from_utf8_lossy(&output.stdout);
        let first = text.lines().next()?.trim();
        // "2.1.332 (Claude Code)" / "codex-cli 0.171.0" → the version number.
        first.split_whitespace().find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit())).map(str::to_owned)
    }

    /// Stores an API key for `kind`.
    /// Checks `key` with the provider, then saves it. A key the provider refuses is not saved
    /// (400 `api_key_rejected` with the provider's reason); one that could not be checked
    /// (offline, timeout) is saved and the answer says so.
    pub async fn set_api_key(&self, kind: ProviderKind, key: &str) -> Result<check::KeyCheck> {
        let key = key.trim();
        if key.is_empty()
            || key.chars().count() > MAX_API_KEY_CHARS
            || key.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(Error::bad_request("invalid_api_key", "Paste the API key exactly as issued (no spaces)."));
        }
        let url = match kind {
            ProviderKind::Claude => &self.anthropic_api_url,
            ProviderKind::Codex => &self.openai_api_url,
        };
        let verdict = check::check_key(kind, url, key).await;
        if let check::KeyCheck::Refused(reason) = &verdict {
            let name = check::provider_name(kind);
            return Err(Error::bad_request("api_key_rejected", format!("{name} refused this key: {reason}")));
        }
        match kind {
            ProviderKind::Claude => self.credentials.save(kind, Method::ApiKey, key.as_bytes())?,
            ProviderKind::Codex => self.codex_login_with_key(key).await?,
        }
        Ok(verdict)
    }

    /// Starts `codex login <flag>` in the server's own `CODEX_HOME` (out of the agent's reach:
    /// what the login writes is taken from there) with nothing else inherited.
    fn codex_login(
        &self,
        flag: &str,
        stdin: std::process::Stdio,
        stdout: std::process::Stdio,
    ) -> Result<tokio::process::Child> {
        self.credentials.clear_server_codex_login()?;
        let home = self.server_codex_home()?;
        let child = tokio::process::Command::new(&self.codex.bin)
            .args(["login", flag])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("CODEX_HOME", &home)
            .stdin(stdin)
            .stdout(stdout)
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| Error::conflict("agent_cli_missing", format!("The Codex CLI could not be started: {e}")))?;
        Ok(child)
    }

    async fn codex_login_with_key(&self, key: &str) -> Result<()> {
        let mut child =
            self.codex_login("--with-api-key", std::process::Stdio::piped(), std::process::Stdio::null())?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(key.as_bytes()).await?;
            stdin.write_all(b"\n").await?;
        }
        let output = tokio::time::timeout(CLI_COMMAND_TIMEOUT, child.wait_with_output())
            .await
            .map_err(|_| Error::unavailable("provider_login_timeout", "Codex did not finish logging in."))??;
        if !output.status.success() || !self.credentials.adopt_codex_login()? {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let reason = stderr.lines().last().unwrap_or("no details").to_owned();
            return Err(Error::bad_request("provider_login_failed", format!("Codex refused the key: {reason}")));
        }
        Ok(())
    }

    /// The server's credentials of `kind` as they are now: a change retires the processes kept
    /// with the old ones (`agent/warm.rs`).
    pub fn credentials_stamp(&self, kind: ProviderKind) -> u64 {
        self.credentials.stamp(kind)
    }

    /// Forgets the credentials of `kind`.
    pub fn disconnect(&self, kind: ProviderKind) -> Result<()> {
        self.credentials.forget(kind)
    }

    /// Starts `codex login --device-auth` and returns the URL and code it prints.
    pub async fn codex_device_login(&self) -> Result<DeviceLogin> {
        let mut child = self.codex_login("--device-auth", std::process::Stdio::null(), std::process::Stdio::piped())?;
        let stdout = child.stdout.take().ok_or_else(|| Error::Internal("no stdout".into()))?;
        let stderr = child.stderr.take().ok_or_else(|| Error::Internal("no stderr".into()))?;
        let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(64);
        for pipe in [Box::new(stdout) as Box<dyn tokio::io::AsyncRead + Unpin + Send>, Box::new(stderr)] {
            let tx = tx.clone();
            tokio::spawn(async move {
                use tokio::io::AsyncBufReadExt;
                let mut lines = tokio::io::BufReader::new(pipe).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if tx.send(line).await.is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let (mut url, mut code) = (None, None);
        let deadline = tokio::time::sleep(Duration::from_secs(15));
        tokio::pin!(deadline);
        while url.is_none() || code.is_none() {
            tokio::select! {
                line = rx.recv() => match line {
                    Some(line) => {
                        let clean = strip_ansi(&line);
                        url = url.or_else(|| find_url(&clean));
                        code = code.or_else(|| find_device_code(&clean));
                    }
                    None => break,
                },
                () = &mut deadline => break,
            }
        }
        let (Some(url), Some(code)) = (url, code) else {
            return Err(Error::unavailable(
                "provider_login_failed",
                "Codex did not print a device code. Is device-code login enabled for your account?",
            ));
        };
        let login = DeviceLogin { status: "pending", url: Some(url), code: Some(code), error: None };
        *self.device.locked() = Some(login.clone());
        let device = self.device.clone();
        let credentials = self.credentials.clone();
        tokio::spawn(async move {
            // Keep reading so the CLI never blocks on a full pipe.
            let drain = async { while rx.recv().await.is_some() {} };
            let (status, ()) = tokio::join!(tokio::time::timeout(Duration::from_secs(15 * 60), child.wait()), drain);
            let mut guard = device.locked();
            if let Some(login) = guard.as_mut() {
                match status {
                    Ok(Ok(s)) if s.success() && credentials.adopt_codex_login().unwrap_or(false) => {
                        login.status = "complete";
                    }
                    Ok(Ok(s)) => {
                        login.status = "failed";
                        login.error = Some(format!("codex login exited with {s}"));
                    }
                    _ => {
                        login.status = "failed";
                        login.error = Some("the device code expired".into());
                    }
                }
            }
        });
        Ok(login)
    }

    /// State of the Codex device login.
    pub fn codex_device_status(&self) -> DeviceLogin {
        self.device.locked().clone().unwrap_or(DeviceLogin { status: "none", url: None, code: None, error: None })
    }
}

/// Login shells (Codex runs commands with `bash -lc`) rebuild PATH from /etc/profile; the
/// agent's home profile puts the `mobius` binary's folder back in front. The home is the
/// agent's to write: the files are reached through `safe_fs` (a planted link is replaced,
/// never written through; a FIFO is never opened for reading).
fn ensure_login_profile(home: &Dir, bin_dir: &Path) -> Result<()> {
    let line = format!("# Written by Möbius at each turn.\nexport PATH=\"{}:$PATH\"\n", bin_dir.display());
    let managed = OsStr::new(".mobius-profile");
    let current = home.read_optional(Path::new(".mobius-profile"), MAX_PROFILE_BYTES).ok().flatten();
    if current.as_deref() != Some(line.as_bytes()) {
        home.write(managed, line.as_bytes(), 0o600)?;
    }
    let hook = "[ -f \"$HOME/.mobius-profile\" ] && . \"$HOME/.mobius-profile\"";
    for name in [".profile", ".bashrc"] {
        let current = match home.read_optional(Path::new(name), MAX_PROFILE_BYTES) {
            Ok(current) => current.unwrap_or_default(),
            Err(e)
                if crate::safe_fs::refusal(&e).is_some_and(|r| matches!(r, crate::safe_fs::Refused::TooLarge(..))) =>
            {
                tracing::warn!(file = name, "the agent's shell profile is too large to add Möbius's line to");
                continue;
            }
            // A link or a FIFO the agent put there: replaced by a plain profile.
            Err(e) if crate::safe_fs::refusal(&e).is_some() => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        let text = String::from_utf8_lossy(&current);
        if !text.contains(".mobius-profile") {
            let sep = if text.is_empty() || text.ends_with('\n') { "" } else { "\n" };
            home.write(OsStr::new(name), format!("{text}{sep}{hook}\n").as_bytes(), 0o600)?;
        }
    }
    Ok(())
}

/// The first and last lines of the agent's git config block the server keeps.
const GIT_BLOCK_START: &str = "# >>> Möbius: GitHub credentials (rewritten at each turn; edits here are replaced)";
const GIT_BLOCK_END: &str = "# <<< Möbius";

/// The block of the agent's `~/.gitconfig` that makes `mobius git-credential` git's only
/// credential helper for GitHub (`github_url`, and `https://github.com` always), with the
/// repository's path sent along (`useHttpPath`, so the server can check it is allowed). `None`
/// when the helper's path cannot be written into a git config shell command safely.
fn git_credentials_block(helper: &Path, github_url: &str) -> Option<String> {
    let helper = helper.to_str().filter(|p| !p.is_empty() && !p.contains(['\'', '"', '\\', '\n', ';', '#']))?;
    let mut hosts = vec![crate::config::DEFAULT_GITHUB_URL];
    if github_url != crate::config::DEFAULT_GITHUB_URL {
        hosts.push(github_url);
    }
    let mut block = format!("{GIT_BLOCK_START}\n");
    for host in hosts {
        // The empty `helper =` drops any helper configured before for this host.
        block.push_str(&format!(
            "[credential \"{host}\"]\n\thelper =\n\thelper = !'{helper}' git-credential\n\tuseHttpPath = true\n"
        ));
    }
    block.push_str(GIT_BLOCK_END);
    block.push('\n');
    Some(block)
}

/// Puts [`git_credentials_block`] in the agent's `~/.gitconfig` (replacing an older one, the
/// rest of the file kept), written only when it changed.
fn ensure_git_credentials(home: &Dir, helper: &Path, github_url: &str) -> Result<()> {
    let Some(block) = git_credentials_block(helper, github_url) else {
        tracing::warn!(
            "the mobius binary's path cannot be a git credential helper; GitHub is unavailable to the agent"
        );
        return Ok(());
    };
    let name = Path::new(".gitconfig");
    let current = match home.read_optional(name, MAX_PROFILE_BYTES) {
        Ok(current) => current.unwrap_or_default(),
        Err(e) if crate::safe_fs::refusal(&e).is_some_and(|r| matches!(r, crate::safe_fs::Refused::TooLarge(..))) => {
            tracing::warn!("the agent's git config is too large to add the GitHub helper to");
            return Ok(());
        }
        // A link or a FIFO the agent put there: replaced by a plain file.
        Err(e) if crate::safe_fs::refusal(&e).is_some() => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let text = String::from_utf8_lossy(&current);
    let rest = match (text.find(GIT_BLOCK_START), text.find(GIT_BLOCK_END)) {
        (Some(start), Some(end)) if end > start => {
            let after = &text[end + GIT_BLOCK_END.len()..];
            format!("{}{}", &text[..start], after.strip_prefix('\n').unwrap_or(after))
        }
        _ => text.into_owned(),
    };
    let sep = if rest.is_empty() || rest.ends_with('\n') { "" } else { "\n" };
    let wanted = format!("{rest}{sep}{block}");
    if wanted.as_bytes() != current.as_slice() {
        home.write(OsStr::new(".gitconfig"), wanted.as_bytes(), 0o600)?;
    }
    Ok(())
}

fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for n in chars.by_ref() {
                    if n.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn find_url(line: &str) -> Option<String> {
    line.split_whitespace().find(|w| w.starts_with("https://")).map(|w| w.trim_end_matches(['.', ',', ')']).to_owned())
}

/// A device code looks like `ABCD-1234` (letters/digits around a dash).
fn find_device_code(line: &str) -> Option<String> {
    line.split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-'))
        .find(|w| {
            let parts: Vec<&str> = w.split('-').collect();
            parts.len() == 2
                && parts.iter().all(|p| {
                    (4..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
                })
        })
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_git_helper_block_is_kept_once_beside_the_agents_own_settings() {
        let tmp = tempfile::tempdir().expect("tmp");
        let home = Dir::create_under(tmp.path(), Path::new("agent-home")).expect("home");
        let file = tmp.path().join("agent-home/.gitconfig");
        std::fs::write(&file, "[user]\n\tname = Agent\n").expect("write");
        let helper = Path::new("/opt/mobius/bin/mobius");
        ensure_git_credentials(&home, helper, "http://127.0.0.1:8123").expect("block");
        ensure_git_credentials(&home, helper, "http://127.0.0.1:8123").expect("again");
        let text = std::fs::read_to_string(&file).expect("read");
        assert!(text.starts_with("[user]\n\tname = Agent\n"), "{text}");
        assert_eq!(text.matches(GIT_BLOCK_START).count(), 1, "{text}");
        assert!(text.contains("[credential \"https://github.com\"]\n\thelper =\n\thelper = !'/opt/mobius/bin/mobius' git-credential\n\tuseHttpPath = true\n"));
        assert!(text.contains("[credential \"http://127.0.0.1:8123\"]"));
        // A new address replaces the block; the agent's settings after it stay.
        std::fs::write(&file, format!("{text}[alias]\n\tst = status\n")).expect("write");
        ensure_git_credentials(&home, helper, crate::config::DEFAULT_GITHUB_URL).expect("replaced");
        let text = std::fs::read_to_string(&file).expect("read");
        assert_eq!(text.matches(GIT_BLOCK_START).count(), 1, "{text}");
        assert!(!text.contains("127.0.0.1"), "{text}");
        assert!(text.contains("[alias]") && text.contains("name = Agent"), "{text}");
        assert_eq!(git_credentials_block(Path::new("/tmp/it's/mobius"), "https://github.com"), None);
    }

    #[test]
    fn device_code_output_is_parsed_through_colours() {
        let line =
            "\u{1b}[1mOpen\u{1b}[0m https://auth.openai.com/codex/device and enter \u{1b}[94mABCD-12EF\u{1b}[0m.";
        let clean = strip_ansi(line);
        assert_eq!(find_url(&clean).as_deref(), Some("https://auth.openai.com/codex/device"));
        assert_eq!(find_device_code(&clean).as_deref(), Some("ABCD-12EF"));
        assert_eq!(find_device_code("no code here, only-words"), None);
    }
}
