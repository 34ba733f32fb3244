//! Typed server configuration, read from the environment once and validated at start.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Everything the server needs to know before it starts.
#[derive(Clone, Debug)]
pub struct Config {
    /// Root of all persistent state (`DATA_DIR`, default `./data`).
    pub data_dir: PathBuf,
    /// Address the HTTP listener binds (`MOBIUS_BIND`, default `127.0.0.1:8000`).
    pub bind: SocketAddr,
    /// The origin browsers use to reach the server (`MOBIUS_PUBLIC_ORIGIN`), e.g.
    /// `https://mobius.example.com`. Defaults to `http://<bind>`.
    pub public_origin: PublicOrigin,
    /// `tracing` filter (`MOBIUS_LOG`, then `RUST_LOG`, default `info`).
    pub log_filter: String,
    /// The built PWA (`MOBIUS_FRONTEND_DIR`, default `frontend/dist`).
    pub frontend_dir: PathBuf,
    /// JWT signing key (`MOBIUS_SECRET_KEY`); when absent it is generated into
    /// `DATA_DIR/secret.key` on first boot.
    pub secret_key: Option<String>,
    /// The agent's constitution and skills (`MOBIUS_SKILL_DIR`, default `skill`).
    pub skill_dir: PathBuf,
    /// The Claude Code CLI (`MOBIUS_CLAUDE_BIN`, default `claude` on PATH).
    pub claude_bin: PathBuf,
    /// The Codex CLI (`MOBIUS_CODEX_BIN`, default `codex` on PATH).
    pub codex_bin: PathBuf,
    /// The screenshot browser (`MOBIUS_CHROMIUM`; default `chromium-headless-shell` or
    /// `chromium` on PATH).
    pub chromium_bin: Option<PathBuf>,
    /// Model endpoint for Claude Code (`MOBIUS_CLAUDE_BASE_URL` → `ANTHROPIC_BASE_URL`).
    pub claude_base_url: Option<String>,
    /// A Responses endpoint for Codex instead of OpenAI's (`MOBIUS_CODEX_BASE_URL`): the
    /// server's `config.toml` names it as Codex's model provider.
    pub codex_base_url: Option<String>,
    /// Where a pasted key is checked before it is saved: Anthropic's API
    /// (`MOBIUS_ANTHROPIC_API_URL`, else the Claude base URL, else api.anthropic.com) and
    /// OpenAI's (`MOBIUS_OPENAI_API_URL`, default `https://api.openai.com/v1`).
    pub anthropic_api_url: String,
    pub openai_api_url: String,
    /// Claude OAuth endpoints (`MOBIUS_CLAUDE_OAUTH_AUTHORIZE_URL`, `MOBIUS_CLAUDE_OAUTH_TOKEN_URL`).
    pub claude_oauth_authorize_url: String,
    pub claude_oauth_token_url: String,
    /// A turn whose CLI prints nothing for this long fails (`MOBIUS_AGENT_START_TIMEOUT_SECS`).
    pub agent_start_timeout: Duration,
    /// A turn is ended after this long (`MOBIUS_AGENT_TURN_MAX_SECS`, default 6 h).
    pub agent_turn_max: Duration,
    /// A turn whose CLI says nothing for this long is ended as stuck; a card waiting for the
    /// owner does not count (`MOBIUS_AGENT_SILENCE_MAX_SECS`, default 30 min).
    pub agent_silence_max: Duration,
    /// An app job's time limit unless its schedule sets one (`MOBIUS_JOB_TIMEOUT_SECS`,
    /// default 5 min).
    pub job_timeout: Duration,
    /// Confine the agent's processes with Landlock where the kernel has it
    /// (`MOBIUS_AGENT_SANDBOX`: `on`, the default, or `off`).
    pub agent_sandbox: bool,
    /// The newest Landlock ABI the sandbox uses, when lower than the kernel's
    /// (`MOBIUS_AGENT_LANDLOCK_MAX_ABI`, unset: the kernel's): a way back should a newer
    /// restriction break a CLI. Below 6 the agent can signal the server again.
    pub agent_landlock_max_abi: Option<u32>,
    /// Other servers run in this process (tests hosting several): each sweeps up only the
    /// escaped agent processes it labelled (and ones whose label was lowered), not every
    /// server child that carries no live label of its own. Never set from the environment.
    pub shared_process: bool,
    /// The memory ceiling of one agent (`MOBIUS_AGENT_MEMORY_MAX_MB`, default 2048; 0: none).
    pub agent_memory_max: Option<u64>,
    /// Most stdout bytes one turn's CLI may write (`MOBIUS_AGENT_OUTPUT_MAX_MB`, default 256).
    pub agent_output_max: u64,
    /// Agents (chat turns and app jobs) running at once, at most (`MOBIUS_AGENT_MAX_RUNNING`,
    /// default 4); more wait their turn, the owner's first.
    pub agent_max_running: usize,
    /// CLI processes kept between a chat's turns, at most (`MOBIUS_AGENT_WARM_MAX`, default 3;
    /// 0 starts every turn cold).
    pub agent_warm_max: usize,
    /// How long a kept process waits for its chat's next turn (`MOBIUS_AGENT_WARM_IDLE_SECS`,
    /// default 600).
    pub agent_warm_idle: Duration,
    /// The installed libraries mini-apps may import (`MOBIUS_APP_NODE_MODULES`, default
    /// `frontend/node_modules`).
    pub app_node_modules: PathBuf,
    /// Where `mobius-runtime.js`, `mobius-chat.js` and `app-runtime-inject.js` live (`MOBIUS_APP_RUNTIME_DIR`,
    /// default `frontend/public`).
    pub app_runtime_dir: PathBuf,
    /// The stock source of the shell (the PWA), seeded into `DATA_DIR/platform/shell/` for the
    /// agent to edit (`MOBIUS_SHELL_SOURCE`, default `frontend` when it holds a `package.json`;
    /// `None`: the shell is not editable here).
    pub shell_source: Option<PathBuf>,
    /// The installed packages a shell rebuild resolves in, vite and its plugins included
    /// (`MOBIUS_SHELL_NODE_MODULES`, default `frontend/node_modules`).
    pub shell_node_modules: PathBuf,
    /// How long a device that loaded a new shell build has to report it mounted before the
    /// build is rolled back (`MOBIUS_SHELL_READY_SECS`, default 15).
    pub shell_ready_timeout: Duration,
    /// How long edits of the shell's source must settle before the watcher rebuilds it
    /// (`MOBIUS_SHELL_WATCH_MS`, default 2000; `0` or `None`: no watcher, `mobius shell rebuild` only).
    pub shell_watch: Option<Duration>,
    /// Storage each mini-app may use (`MOBIUS_APP_QUOTA_BYTES`, default 1 GiB).
    pub app_quota_bytes: u64,
    /// Largest file the owner may attach to a chat (`MOBIUS_MAX_UPLOAD_MB`, default 25 MiB);
    /// an image the agent publishes is held to it too.
    pub upload_max_file_bytes: u64,
    /// Chat files of all chats together (`MOBIUS_UPLOAD_QUOTA_MB`, default 2048 MiB).
    pub upload_quota_bytes: u64,
    /// Lets `/api/proxy` reach loopback addresses. No environment variable sets it: only
    /// tests and benchmarks that build a `Config` themselves, for a server on `127.0.0.1`.
    pub proxy_allow_loopback: bool,
    /// Lets connectors (remote MCP servers) be on loopback addresses
    /// (`MOBIUS_CONNECTORS_ALLOW_LOOPBACK=1`): for the tests' scripted MCP server only. Off,
    /// connectors are public addresses only.
    pub connectors_allow_loopback: bool,
    /// The GitHub API the owner's token is checked against (`MOBIUS_GITHUB_API_URL`, default
    /// `https://api.github.com`; tests point it at a local fake).
    pub github_api_url: String,
    /// Where the agent's git reaches GitHub (`MOBIUS_GITHUB_URL`, default `https://github.com`):
    /// the host the credential helper answers for.
    pub github_url: String,
    /// How long one `/api/proxy` request may take in all (default 15 s; tests shorten it).
    pub proxy_timeout: Duration,
    /// Proxies whose `X-Forwarded-For` names the client (`MOBIUS_TRUSTED_PROXIES`: addresses
    /// or CIDR ranges, comma-separated; default none, so the header is ignored).
    pub trusted_proxies: TrustedProxies,
    /// Further names the server answers to besides the public origin's, e.g. a LAN address
    /// (`MOBIUS_EXTRA_HOSTS`: `host` or `host:port`, comma-separated, at most 16; a name
    /// without a port answers on any port).
    pub extra_hosts: Vec<ExtraHost>,
    /// Connection and stream limits and timeouts (`MOBIUS_HEADER_READ_TIMEOUT_SECS`, …).
    pub net: NetLimits,
    /// Password-attempt throttling (not set from the environment).
    pub login: LoginPolicy,
    /// How often expired chat and app tombstones are purged (not set from the environment;
    /// tests shorten it).
    pub purge_every: Duration,
    /// How long a chat stays idle after its turns before its note is written
    /// (`MOBIUS_NOTE_IDLE_SECS`, default 120; `0` turns chat notes off, as `for_test` does).
    pub note_idle: Option<Duration>,
    /// Lets Web Push reach plain-http loopback endpoints (`MOBIUS_PUSH_ALLOW_LOOPBACK=1`): for
    /// the browser tests' push service only. Off, pushes go to https public addresses only.
    pub push_allow_loopback: bool,
    /// The `mobius` binary itself, run for helper processes (`mobius push-deliver` sends Web
    /// Push): the running executable. Tests that run the server in their own process point it
    /// at the built binary.
    pub self_exe: PathBuf,
    /// Threads the runtime may start for blocking work: file storage, password hashes, git,
    /// icons (`MOBIUS_MAX_BLOCKING_THREADS`, default 32). More work waits for a free thread
    /// instead of starting another one (tokio's own default is 512).
    pub max_blocking_threads: usize,
    /// Platform updates: the release feed, the launcher, readiness of a new version
    /// (`MOBIUS_UPDATE_*`, see [`UpdateConfig`]).
    pub updates: UpdateConfig,
}

/// Default of [`Config::upload_max_file_bytes`], in MiB.
pub const DEFAULT_MAX_UPLOAD_MIB: u64 = 25;
/// Default of [`Config::upload_quota_bytes`], in MiB.
pub const DEFAULT_UPLOAD_QUOTA_MIB: u64 = 2048;
/// Largest accepted upload setting, in MiB (1 TiB).
const MAX_UPLOAD_SETTING_MIB: u64 = 1 << 20;

/// The default idle spell before a chat's note is written.
pub const DEFAULT_NOTE_IDLE: Duration = Duration::from_secs(120);

/// The running executable (`mobius` from `PATH` if the system cannot say).
fn running_exe() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("mobius"))
}

/// Default of [`Config::github_api_url`].
pub const DEFAULT_GITHUB_API_URL: &str = "https://api.github.com";
/// Default of [`Config::github_url`].
pub const DEFAULT_GITHUB_URL: &str = "https://github.com";

/// An http(s) base URL setting without credentials, query or fragment: its text without a
/// trailing `/`.
fn base_url(get: &impl Fn(&str) -> Option<String>, key: &str, default: &str) -> Result<String, ConfigError> {
    let Some(raw) = get(key) else { return Ok(default.to_owned()) };
    let raw = raw.trim();
    let url = reqwest::Url::parse(raw).map_err(|e| ConfigError(format!("{key}={raw:?} is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https")
        || url.host_str().is_none()
        || !url.username().is_empty()
        || url.password().is_some()
        || url.query().is_some()
        || url.fragment().is_some()
    {
        return Err(ConfigError(format!("{key}={raw:?} must be an http(s) address without credentials or query")));
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// Default of [`Config::purge_every`].
pub const DEFAULT_PURGE_EVERY: Duration = Duration::from_secs(3600);

/// Default of [`Config::max_blocking_threads`].
pub const DEFAULT_MAX_BLOCKING_THREADS: usize = 32;
/// Largest accepted [`Config::max_blocking_threads`].
const MAX_BLOCKING_THREADS: usize = 512;

pub mod proxies;
pub mod updates;

pub use proxies::TrustedProxies;
pub use updates::UpdateConfig;

/// The throttle's numbers (defaults for production; tests shrink them).
#[derive(Clone, Debug, PartialEq)]
pub struct LoginPolicy {
    /// Failed attempts an address or device may make before it has to wait.
    pub free_failures: u32,
    /// Burst of the global bucket (attempts without a device credential, all addresses).
    pub global_burst: u32,
    /// The global bucket gains one attempt this often.
    pub global_refill_every: Duration,
}

impl Default for LoginPolicy {
    fn default() -> Self {
        Self { free_failures: 5, global_burst: 100, global_refill_every: Duration::from_secs(1) }
    }
}

/// Default number of agents running at once (`MOBIUS_AGENT_MAX_RUNNING`): a 2-core box with
/// 2 GiB runs four CLIs (a few hundred MiB each) and their tools without thrashing.
pub const DEFAULT_MAX_RUNNING: usize = 4;
/// Most agents that may be allowed at once, whatever the setting says.
pub const MAX_MAX_RUNNING: usize = 64;
/// Default number of processes kept between turns (`MOBIUS_AGENT_WARM_MAX`).
pub const DEFAULT_WARM_MAX: usize = 3;
/// Most processes that may be kept, whatever the setting says.
pub const MAX_WARM_MAX: usize = 16;
/// Default time a kept process waits for its chat's next turn (`MOBIUS_AGENT_WARM_IDLE_SECS`).
pub const DEFAULT_WARM_IDLE: Duration = Duration::from_secs(600);
/// How long a new shell build has to report ready on the device that loaded it.
pub const DEFAULT_SHELL_READY: Duration = Duration::from_secs(15);
/// The quiet spell after the last edit of the shell's source before the watcher rebuilds.
pub const DEFAULT_SHELL_WATCH: Duration = Duration::from_secs(2);
/// The longest quiet spell `MOBIUS_SHELL_WATCH_MS` may ask.
const MAX_SHELL_WATCH: Duration = Duration::from_secs(600);
/// Default memory ceiling of one agent (`MOBIUS_AGENT_MEMORY_MAX_MB`).
pub const DEFAULT_MEMORY_MAX_BYTES: u64 = 2 << 30;
/// Default output ceiling of one turn (`MOBIUS_AGENT_OUTPUT_MAX_MB`).
pub const DEFAULT_OUTPUT_MAX_BYTES: u64 = 256 << 20;
/// A job's time limit unless its schedule sets one (`MOBIUS_JOB_TIMEOUT_SECS`).
pub const DEFAULT_JOB_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// How long connections may take and how many may be open; every field has its own
/// environment variable (in parentheses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetLimits {
    /// A request's head must arrive this soon after the connection opens or the previous
    /// response ends (`MOBIUS_HEADER_READ_TIMEOUT_SECS`, default 10).
    pub header_read_timeout: Duration,
    /// Longest pause while a request body arrives; then 408 (`MOBIUS_REQUEST_BODY_TIMEOUT_SECS`,
    /// default 30).
    pub request_body_timeout: Duration,
    /// Slowest average a request body may arrive at once [`Self::request_body_grace`] has
    /// passed, in bytes per second; slower gets 408 (`MOBIUS_REQUEST_BODY_MIN_RATE`, default
    /// 1024; `0` turns the check off). Each byte received earns `1 / rate` seconds, so a fast
    /// start pays for a later pause.
    pub request_body_min_rate: u64,
    /// What a request body may take before the minimum rate applies
    /// (`MOBIUS_REQUEST_BODY_GRACE_SECS`, default 10).
    pub request_body_grace: Duration,
    /// An idle keep-alive connection is closed after this long (`MOBIUS_KEEP_ALIVE_SECS`,
    /// default 75).
    pub keep_alive_idle: Duration,
    /// Open connections in all (`MOBIUS_MAX_CONNECTIONS`, default 1024). At the cap, a new
    /// connection replaces the one that has waited longest without a request in progress.
    pub max_connections: usize,
    /// Open connections per client address, an IPv6 /64 counting as one; trusted proxies are
    /// exempt (`MOBIUS_MAX_CONNECTIONS_PER_ADDRESS`, default 64).
    pub max_connections_per_address: usize,
    /// Open event streams in all (`MOBIUS_MAX_STREAMS`, default 512); more get 503.
    pub max_streams: usize,
    /// Open event streams per client address (`MOBIUS_MAX_STREAMS_PER_ADDRESS`, default 32).
    pub max_streams_per_address: usize,
    /// Requests whose body is still arriving, per client address (the forwarded one behind a
    /// trusted proxy); more get 429, except from the owner's devices
    /// (`MOBIUS_MAX_UPLOADS_PER_ADDRESS`, default 8).
    pub max_uploads_per_address: usize,
    /// Of `max_connections`, how many only the owner's devices may fill: requests from anyone
    /// else get 503 while `max_connections − reserved` requests are in progress
    /// (`MOBIUS_RESERVED_CONNECTIONS`, default 64 or half of `max_connections` if that is less;
    /// a value set above half of it is refused).
    pub reserved_connections: usize,
}

impl Default for NetLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            request_body_timeout: Duration::from_secs(30),
            request_body_min_rate: 1024,
            request_body_grace: Duration::from_secs(10),
            keep_alive_idle: Duration::from_secs(75),
            max_connections: 1024,
            max_connections_per_address: 64,
            max_streams: 512,
            max_streams_per_address: 32,
            max_uploads_per_address: 8,
            reserved_connections: 64,
        }
    }
}

impl NetLimits {
    fn from_lookup(get: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let d = Self::default();
        let secs = |key: &str, default: Duration| -> Result<Duration, ConfigError> {
            match get(key) {
                None => Ok(default),
                Some(raw) => raw
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|s| *s > 0)
                    .map(Duration::from_secs)
                    .ok_or_else(|| ConfigError(format!("{key}={raw:?} must be a positive number of seconds"))),
            }
        };
        let count = |key: &str, default: usize| -> Result<usize, ConfigError> {
            match get(key) {
                None => Ok(default),
                Some(raw) => raw
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| ConfigError(format!("{key}={raw:?} must be a positive whole number"))),
            }
        };
        let rate = match get("MOBIUS_REQUEST_BODY_MIN_RATE") {
            None => d.request_body_min_rate,
            Some(raw) => raw.trim().parse::<u64>().map_err(|_| {
                ConfigError(format!("MOBIUS_REQUEST_BODY_MIN_RATE={raw:?} must be a whole number of bytes per second"))
            })?,
        };
        let limits = Self {
            header_read_timeout: secs("MOBIUS_HEADER_READ_TIMEOUT_SECS", d.header_read_timeout)?,
            request_body_timeout: secs("MOBIUS_REQUEST_BODY_TIMEOUT_SECS", d.request_body_timeout)?,
            request_body_min_rate: rate,
            request_body_grace: secs("MOBIUS_REQUEST_BODY_GRACE_SECS", d.request_body_grace)?,
            keep_alive_idle: secs("MOBIUS_KEEP_ALIVE_SECS", d.keep_alive_idle)?,
            max_connections: count("MOBIUS_MAX_CONNECTIONS", d.max_connections)?,
            max_connections_per_address: count("MOBIUS_MAX_CONNECTIONS_PER_ADDRESS", d.max_connections_per_address)?,
            max_streams: count("MOBIUS_MAX_STREAMS", d.max_streams)?,
            max_streams_per_address: count("MOBIUS_MAX_STREAMS_PER_ADDRESS", d.max_streams_per_address)?,
            max_uploads_per_address: count("MOBIUS_MAX_UPLOADS_PER_ADDRESS", d.max_uploads_per_address)?,
            // Unset, the reserve follows a lowered connection cap (at most half of it).
            reserved_connections: match get("MOBIUS_RESERVED_CONNECTIONS") {
                None => d.reserved_connections.min(count("MOBIUS_MAX_CONNECTIONS", d.max_connections)? / 2),
                Some(raw) => raw
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| ConfigError(format!("MOBIUS_RESERVED_CONNECTIONS={raw:?} must be a whole number")))?,
            },
        };
        if limits.reserved_connections > limits.max_connections / 2 {
            return Err(ConfigError(format!(
                "MOBIUS_RESERVED_CONNECTIONS ({}) may be at most half of MOBIUS_MAX_CONNECTIONS ({})",
                limits.reserved_connections, limits.max_connections
            )));
        }
        Ok(limits)
    }
}

/// The app proxy's default time limit per request.
pub const DEFAULT_PROXY_TIMEOUT: Duration = Duration::from_secs(15);

/// Where Claude's OAuth login starts and where its code is exchanged (Claude Code's own flow).
pub const DEFAULT_CLAUDE_AUTHORIZE_URL: &str = "https://claude.ai/oauth/authorize";
pub const DEFAULT_ANTHROPIC_API_URL: &str = "https://api.anthropic.com";
pub const DEFAULT_OPENAI_API_URL: &str = "https://api.openai.com/v1";
/// Port 9 (discard) on loopback: nothing listens, so a connection is refused at once.
pub const UNREACHABLE_TEST_URL: &str = "http://127.0.0.1:9";
pub const DEFAULT_CLAUDE_TOKEN_URL: &str = "https://console.anthropic.com/v1/oauth/token";

/// Default wall-clock ceiling of a turn.
pub const DEFAULT_AGENT_TURN_MAX: Duration = Duration::from_secs(6 * 3600);
/// The longest either ceiling may be set to (30 days).
pub const MAX_AGENT_CEILING: Duration = Duration::from_secs(30 * 24 * 3600);
/// The largest memory or output ceiling accepted, in MiB (1 TiB).
pub const MAX_AGENT_MB: u64 = 1 << 20;
/// Default silence ceiling of a turn.
pub const DEFAULT_AGENT_SILENCE_MAX: Duration = Duration::from_secs(30 * 60);

/// Default per-app storage quota.
pub const DEFAULT_APP_QUOTA_BYTES: u64 = 1024 * 1024 * 1024;

/// A validated `scheme://host[:port]` origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicOrigin {
    origin: String,
    https: bool,
}

impl PublicOrigin {
    /// Parses `http(s)://host[:port]` (a trailing `/` is tolerated; paths are not).
    pub fn parse(raw: &str) -> Result<Self, String> {
        let trimmed = raw.trim().trim_end_matches('/');
        let (https, rest) = if let Some(rest) = trimmed.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = trimmed.strip_prefix("http://") {
            (false, rest)
        } else {
            return Err(format!("{raw:?} must start with http:// or https://"));
        };
        if rest.is_empty() || rest.contains(['/', '?', '#', '@', ' ']) {
            return Err(format!("{raw:?} must be scheme://host[:port] with no path, query or credentials"));
        }
        Ok(Self { origin: trimmed.to_ascii_lowercase(), https })
    }

    /// The origin as browsers send it in the `Origin` header.
    pub fn as_str(&self) -> &str {
        &self.origin
    }

    /// True for `https://` origins (enables HSTS).
    pub fn is_https(&self) -> bool {
        self.https
    }

    /// `host[:port]` without the scheme.
    pub fn authority(&self) -> &str {
        self.origin.split_once("://").map_or("", |(_, a)| a)
    }
}

/// At most this many extra host names (`MOBIUS_EXTRA_HOSTS`).
pub const MAX_EXTRA_HOSTS: usize = 16;

/// A name the server answers to besides the public origin's: a DNS name, an IPv4 address or
/// a bracketed IPv6 address, with the one port it answers on, or any port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtraHost {
    /// Lower case, without a trailing dot; IPv6 literals keep their brackets.
    pub name: String,
    pub port: Option<u16>,
}

impl ExtraHost {
    /// Parses `host[:port]` entries separated by commas (no scheme, path or credentials).
    pub fn parse_list(raw: &str) -> Result<Vec<Self>, String> {
        let entries: Vec<&str> = raw.split(',').map(str::trim).filter(|e| !e.is_empty()).collect();
        if entries.len() > MAX_EXTRA_HOSTS {
            return Err(format!("{} names given; at most {MAX_EXTRA_HOSTS}", entries.len()));
        }
        entries.into_iter().map(Self::parse).collect()
    }

    fn parse(entry: &str) -> Result<Self, String> {
        let bad = || format!("{entry:?} must be host or host:port (no scheme, path or credentials)");
        let lower = entry.to_ascii_lowercase();
        let (name, port) = if let Some(rest) = lower.strip_prefix('[') {
            let (inside, after) = rest.split_once(']').ok_or_else(bad)?;
            inside.parse::<std::net::Ipv6Addr>().map_err(|_| bad())?;
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or_else(bad)?),
            };
            (format!("[{inside}]"), port)
        } else {
            let (name, port) = match lower.split_once(':') {
                Some((n, p)) => (n, Some(p)),
                None => (lower.as_str(), None),
            };
            let name = name.trim_end_matches('.');
            let label_ok = |l: &str| {
                !l.is_empty()
                    && l.len() <= 63
                    && !l.starts_with('-')
                    && !l.ends_with('-')
                    && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            };
            if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
                return Err(bad());
            }
            (name.to_owned(), port)
        };
        let port = match port {
            None => None,
            Some(p) => Some(p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(bad)?),
        };
        Ok(Self { name, port })
    }
}

/// A start-up configuration problem, printed as one line before exiting.
#[derive(Debug, thiserror::Error)]
#[error("configuration error: {0}")]
pub struct ConfigError(String);

impl Config {
    /// Reads and validates the configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|key| std::env::var(key).ok().filter(|v| !v.trim().is_empty()))
    }

    /// Reads the configuration through `get`, so tests can supply their own environment.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let data_dir = PathBuf::from(get("DATA_DIR").unwrap_or_else(|| "./data".into()));
        let bind_raw = get("MOBIUS_BIND").unwrap_or_else(|| "127.0.0.1:8000".into());
        let bind: SocketAddr = bind_raw
            .trim()
            .parse()
            .map_err(|_| ConfigError(format!("MOBIUS_BIND={bind_raw:?} is not an address like 127.0.0.1:8000")))?;
        let public_origin = match get("MOBIUS_PUBLIC_ORIGIN") {
            Some(raw) => PublicOrigin::parse(&raw).map_err(|e| ConfigError(format!("MOBIUS_PUBLIC_ORIGIN: {e}")))?,
            None => PublicOrigin::parse(&format!("http://{bind}")).map_err(ConfigError)?,
        };
        let log_filter = get("MOBIUS_LOG").or_else(|| get("RUST_LOG")).unwrap_or_else(|| "info".into());
        tracing_subscriber::EnvFilter::try_new(&log_filter)
            .map_err(|e| ConfigError(format!("MOBIUS_LOG={log_filter:?} is not a valid log filter: {e}")))?;
        let frontend_dir = PathBuf::from(get("MOBIUS_FRONTEND_DIR").unwrap_or_else(|| "frontend/dist".into()));
        let secret_key = get("MOBIUS_SECRET_KEY");
        if let Some(key) = &secret_key
            && key.len() < 32
        {
            return Err(ConfigError("MOBIUS_SECRET_KEY must be at least 32 characters".into()));
        }
        let skill_dir = PathBuf::from(get("MOBIUS_SKILL_DIR").unwrap_or_else(|| "skill".into()));
        let claude_bin = PathBuf::from(get("MOBIUS_CLAUDE_BIN").unwrap_or_else(|| "claude".into()));
        let codex_bin = PathBuf::from(get("MOBIUS_CODEX_BIN").unwrap_or_else(|| "codex".into()));
        let chromium_bin = get("MOBIUS_CHROMIUM").filter(|v| !v.is_empty()).map(PathBuf::from);
        let claude_base_url = get("MOBIUS_CLAUDE_BASE_URL");
        if let Some(url) = &claude_base_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(ConfigError(format!("MOBIUS_CLAUDE_BASE_URL={url:?} must be an http(s) URL")));
        }
        let codex_base_url = get("MOBIUS_CODEX_BASE_URL");
        if let Some(url) = &codex_base_url
            && (!(url.starts_with("http://") || url.starts_with("https://")) || url.chars().any(char::is_control))
        {
            return Err(ConfigError(format!("MOBIUS_CODEX_BASE_URL={url:?} must be an http(s) URL")));
        }
        let anthropic_api_url = get("MOBIUS_ANTHROPIC_API_URL")
            .or_else(|| claude_base_url.clone())
            .unwrap_or_else(|| DEFAULT_ANTHROPIC_API_URL.into());
        let openai_api_url = get("MOBIUS_OPENAI_API_URL").unwrap_or_else(|| DEFAULT_OPENAI_API_URL.into());
        for (name, url) in
            [("MOBIUS_ANTHROPIC_API_URL", &anthropic_api_url), ("MOBIUS_OPENAI_API_URL", &openai_api_url)]
        {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ConfigError(format!("{name}={url:?} must be an http(s) URL")));
            }
        }
        let claude_oauth_authorize_url =
            get("MOBIUS_CLAUDE_OAUTH_AUTHORIZE_URL").unwrap_or_else(|| DEFAULT_CLAUDE_AUTHORIZE_URL.into());
        let claude_oauth_token_url =
            get("MOBIUS_CLAUDE_OAUTH_TOKEN_URL").unwrap_or_else(|| DEFAULT_CLAUDE_TOKEN_URL.into());
        let timeout_raw = get("MOBIUS_AGENT_START_TIMEOUT_SECS").unwrap_or_else(|| "90".into());
        let agent_start_timeout =
            timeout_raw.trim().parse::<u64>().ok().filter(|s| *s > 0).map(Duration::from_secs).ok_or_else(|| {
                ConfigError(format!(
                    "MOBIUS_AGENT_START_TIMEOUT_SECS={timeout_raw:?} must be a positive number of seconds"
                ))
            })?;
        let secs = |key: &str, default: u64| -> Result<Duration, ConfigError> {
            let raw = get(key).unwrap_or_else(|| default.to_string());
            raw.trim()
                .parse::<u64>()
                .ok()
                .filter(|s| *s > 0 && *s <= MAX_AGENT_CEILING.as_secs())
                .map(Duration::from_secs)
                .ok_or_else(|| {
                    ConfigError(format!(
                        "{key}={raw:?} must be a number of seconds from 1 to {}",
                        MAX_AGENT_CEILING.as_secs()
                    ))
                })
        };
        let agent_turn_max = secs("MOBIUS_AGENT_TURN_MAX_SECS", DEFAULT_AGENT_TURN_MAX.as_secs())?;
        let agent_silence_max = secs("MOBIUS_AGENT_SILENCE_MAX_SECS", DEFAULT_AGENT_SILENCE_MAX.as_secs())?;
        let job_timeout = secs("MOBIUS_JOB_TIMEOUT_SECS", DEFAULT_JOB_TIMEOUT.as_secs())?;
        let agent_sandbox = match get("MOBIUS_AGENT_SANDBOX").as_deref().map(str::trim) {
            None | Some("on") => true,
            Some("off") => false,
            Some(other) => return Err(ConfigError(format!("MOBIUS_AGENT_SANDBOX={other:?} must be on or off"))),
        };
        let agent_landlock_max_abi = match get("MOBIUS_AGENT_LANDLOCK_MAX_ABI") {
            None => None,
            Some(raw) => Some(raw.trim().parse::<u32>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                ConfigError(format!("MOBIUS_AGENT_LANDLOCK_MAX_ABI={raw:?} must be a Landlock ABI version (1, 2, …)"))
            })?),
        };
        let running_raw = get("MOBIUS_AGENT_MAX_RUNNING").unwrap_or_else(|| DEFAULT_MAX_RUNNING.to_string());
        let agent_max_running =
            running_raw.trim().parse::<usize>().ok().filter(|n| (1..=MAX_MAX_RUNNING).contains(n)).ok_or_else(
                || {
                    ConfigError(format!(
                        "MOBIUS_AGENT_MAX_RUNNING={running_raw:?} must be a number from 1 to {}",
                        MAX_MAX_RUNNING
                    ))
                },
            )?;
        let warm_raw = get("MOBIUS_AGENT_WARM_MAX").unwrap_or_else(|| DEFAULT_WARM_MAX.to_string());
        let agent_warm_max = warm_raw.trim().parse::<usize>().ok().filter(|n| *n <= MAX_WARM_MAX).ok_or_else(|| {
            ConfigError(format!("MOBIUS_AGENT_WARM_MAX={warm_raw:?} must be a number from 0 to {}", MAX_WARM_MAX))
        })?;
        let mb =
            |key: &str, default: u64| -> Result<u64, ConfigError> {
                let raw = get(key).unwrap_or_else(|| (default >> 20).to_string());
                raw.trim().parse::<u64>().ok().filter(|n| *n <= MAX_AGENT_MB).map(|n| n << 20).ok_or_else(|| {
                    ConfigError(format!("{key}={raw:?} must be a number of MiB from 0 to {MAX_AGENT_MB}"))
                })
            };
        let agent_memory_max = Some(mb("MOBIUS_AGENT_MEMORY_MAX_MB", DEFAULT_MEMORY_MAX_BYTES)?).filter(|b| *b > 0);
        let agent_output_max = mb("MOBIUS_AGENT_OUTPUT_MAX_MB", DEFAULT_OUTPUT_MAX_BYTES)?.max(1 << 20);
        let agent_warm_idle = secs("MOBIUS_AGENT_WARM_IDLE_SECS", DEFAULT_WARM_IDLE.as_secs())?;
        let app_node_modules =
            PathBuf::from(get("MOBIUS_APP_NODE_MODULES").unwrap_or_else(|| "frontend/node_modules".into()));
        let app_runtime_dir = PathBuf::from(get("MOBIUS_APP_RUNTIME_DIR").unwrap_or_else(|| "frontend/public".into()));
        let shell_source = match get("MOBIUS_SHELL_SOURCE") {
            Some(dir) if dir.trim().is_empty() || dir == "off" => None,
            Some(dir) => Some(PathBuf::from(dir)),
            None => Some(PathBuf::from("frontend")).filter(|d| d.join("package.json").is_file()),
        };
        let shell_node_modules =
            PathBuf::from(get("MOBIUS_SHELL_NODE_MODULES").unwrap_or_else(|| "frontend/node_modules".into()));
        let shell_ready_timeout = secs("MOBIUS_SHELL_READY_SECS", DEFAULT_SHELL_READY.as_secs())?;
        let shell_watch = {
            let raw = get("MOBIUS_SHELL_WATCH_MS").unwrap_or_else(|| DEFAULT_SHELL_WATCH.as_millis().to_string());
            let ms = raw.trim().parse::<u64>().ok().filter(|ms| *ms <= MAX_SHELL_WATCH.as_millis() as u64).ok_or_else(
                || {
                    ConfigError(format!(
                        "MOBIUS_SHELL_WATCH_MS={raw:?} must be a number of milliseconds from 0 (off) to {}",
                        MAX_SHELL_WATCH.as_millis()
                    ))
                },
            )?;
            Some(Duration::from_millis(ms)).filter(|d| !d.is_zero())
        };
        let quota_raw = get("MOBIUS_APP_QUOTA_BYTES").unwrap_or_else(|| DEFAULT_APP_QUOTA_BYTES.to_string());
        let app_quota_bytes = quota_raw.trim().parse::<u64>().ok().filter(|q| *q > 0).ok_or_else(|| {
            ConfigError(format!("MOBIUS_APP_QUOTA_BYTES={quota_raw:?} must be a positive number of bytes"))
        })?;
        let mib = |key: &str, default: u64| -> Result<u64, ConfigError> {
            let raw = get(key).unwrap_or_else(|| default.to_string());
            raw.trim()
                .parse::<u64>()
                .ok()
                .filter(|m| (1..=MAX_UPLOAD_SETTING_MIB).contains(m))
                .map(|m| m << 20)
                .ok_or_else(|| {
                    ConfigError(format!(
                        "{key}={raw:?} must be a whole number of MiB from 1 to {MAX_UPLOAD_SETTING_MIB}"
                    ))
                })
        };
        let upload_max_file_bytes = mib("MOBIUS_MAX_UPLOAD_MB", DEFAULT_MAX_UPLOAD_MIB)?;
        let upload_quota_bytes = mib("MOBIUS_UPLOAD_QUOTA_MB", DEFAULT_UPLOAD_QUOTA_MIB)?;
        let push_allow_loopback = match get("MOBIUS_PUSH_ALLOW_LOOPBACK").as_deref().map(str::trim) {
            None | Some("" | "0" | "false") => false,
            Some("1" | "true") => true,
            Some(other) => return Err(ConfigError(format!("MOBIUS_PUSH_ALLOW_LOOPBACK={other:?} must be 1 or 0"))),
        };
        let connectors_allow_loopback = match get("MOBIUS_CONNECTORS_ALLOW_LOOPBACK").as_deref().map(str::trim) {
            None | Some("" | "0" | "false") => false,
            Some("1" | "true") => true,
            Some(other) => {
                return Err(ConfigError(format!("MOBIUS_CONNECTORS_ALLOW_LOOPBACK={other:?} must be 1 or 0")));
            }
        };
        let github_api_url = base_url(&get, "MOBIUS_GITHUB_API_URL", DEFAULT_GITHUB_API_URL)?;
        let github_url = base_url(&get, "MOBIUS_GITHUB_URL", DEFAULT_GITHUB_URL)?;
        let trusted_proxies = match get("MOBIUS_TRUSTED_PROXIES") {
            Some(raw) => {
                TrustedProxies::parse(&raw).map_err(|e| ConfigError(format!("MOBIUS_TRUSTED_PROXIES: {e}")))?
            }
            None => TrustedProxies::default(),
        };
        let extra_hosts = match get("MOBIUS_EXTRA_HOSTS") {
            Some(raw) => ExtraHost::parse_list(&raw).map_err(|e| ConfigError(format!("MOBIUS_EXTRA_HOSTS: {e}")))?,
            None => Vec::new(),
        };
        let net = NetLimits::from_lookup(&get)?;
        let note_idle = match get("MOBIUS_NOTE_IDLE_SECS") {
            None => Some(DEFAULT_NOTE_IDLE),
            Some(raw) => match raw.trim().parse::<u64>() {
                Ok(0) => None,
                Ok(secs) => Some(Duration::from_secs(secs)),
                Err(_) => {
                    return Err(ConfigError(format!(
                        "MOBIUS_NOTE_IDLE_SECS={raw:?} must be a number of seconds (0: no chat notes)"
                    )));
                }
            },
        };
        let blocking_raw =
            get("MOBIUS_MAX_BLOCKING_THREADS").unwrap_or_else(|| DEFAULT_MAX_BLOCKING_THREADS.to_string());
        let max_blocking_threads = blocking_raw
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_BLOCKING_THREADS).contains(n))
            .ok_or_else(|| {
                ConfigError(format!(
                    "MOBIUS_MAX_BLOCKING_THREADS={blocking_raw:?} must be a whole number from 1 to {MAX_BLOCKING_THREADS}"
                ))
            })?;
        let updates = UpdateConfig::from_lookup(&get).map_err(ConfigError)?;
        Ok(Self {
            updates,
            data_dir,
            bind,
            public_origin,
            log_filter,
            frontend_dir,
            secret_key,
            skill_dir,
            claude_bin,
            codex_bin,
            chromium_bin,
            claude_base_url,
            codex_base_url,
            anthropic_api_url,
            openai_api_url,
            claude_oauth_authorize_url,
            claude_oauth_token_url,
            agent_start_timeout,
            agent_turn_max,
            agent_silence_max,
            job_timeout,
            agent_sandbox,
            agent_landlock_max_abi,
            shared_process: false,
            agent_max_running,
            agent_warm_max,
            agent_warm_idle,
            agent_memory_max,
            agent_output_max,
            app_node_modules,
            app_runtime_dir,
            shell_source,
            shell_node_modules,
            shell_ready_timeout,
            shell_watch,
            app_quota_bytes,
            upload_max_file_bytes,
            upload_quota_bytes,
            proxy_allow_loopback: false,
            connectors_allow_loopback,
            github_api_url,
            github_url,
            proxy_timeout: DEFAULT_PROXY_TIMEOUT,
            push_allow_loopback,
            self_exe: running_exe(),
            trusted_proxies,
            extra_hosts,
            net,
            login: LoginPolicy::default(),
            purge_every: DEFAULT_PURGE_EVERY,
            note_idle,
            max_blocking_threads,
        })
    }

    /// A configuration for tests: everything under `dir`, loopback on an ephemeral port.
    pub fn for_test(dir: &Path) -> Self {
        Self {
            data_dir: dir.to_path_buf(),
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            public_origin: PublicOrigin { origin: "http://127.0.0.1".into(), https: false },
            log_filter: "warn".into(),
            frontend_dir: dir.join("frontend-dist"),
            secret_key: None,
            skill_dir: checkout_root().join("skill"),
            claude_bin: dir.join("no-claude-installed"),
            codex_bin: dir.join("no-codex-installed"),
            chromium_bin: Some(dir.join("no-chromium-installed")),
            claude_base_url: None,
            codex_base_url: None,
            // A closed port: key checks answer "couldn't check" at once, and the key is kept.
            anthropic_api_url: UNREACHABLE_TEST_URL.into(),
            openai_api_url: UNREACHABLE_TEST_URL.into(),
            claude_oauth_authorize_url: DEFAULT_CLAUDE_AUTHORIZE_URL.into(),
            claude_oauth_token_url: DEFAULT_CLAUDE_TOKEN_URL.into(),
            agent_start_timeout: Duration::from_secs(30),
            agent_turn_max: DEFAULT_AGENT_TURN_MAX,
            agent_silence_max: DEFAULT_AGENT_SILENCE_MAX,
            job_timeout: DEFAULT_JOB_TIMEOUT,
            // Tests keep their fake CLIs in the data dir the sandbox closes; the ones about the
            // sandbox turn it on.
            agent_sandbox: false,
            agent_landlock_max_abi: None,
            // API tests host many servers in one process.
            shared_process: true,
            agent_max_running: DEFAULT_MAX_RUNNING,
            // The fake CLIs of the API tests answer one turn each; the tests about kept
            // processes turn keeping on.
            agent_warm_max: 0,
            agent_warm_idle: DEFAULT_WARM_IDLE,
            agent_memory_max: Some(DEFAULT_MEMORY_MAX_BYTES),
            agent_output_max: DEFAULT_OUTPUT_MAX_BYTES,
            app_node_modules: checkout_root().join("frontend/node_modules"),
            app_runtime_dir: checkout_root().join("frontend/public"),
            // Seeding the shell's source costs every test server a copy; the tests about it set one.
            shell_source: None,
            shell_node_modules: checkout_root().join("frontend/node_modules"),
            shell_ready_timeout: DEFAULT_SHELL_READY,
            // Tests rebuild when they mean to; the watcher's own test turns it on.
            shell_watch: None,
            app_quota_bytes: DEFAULT_APP_QUOTA_BYTES,
            upload_max_file_bytes: DEFAULT_MAX_UPLOAD_MIB << 20,
            upload_quota_bytes: DEFAULT_UPLOAD_QUOTA_MIB << 20,
            proxy_allow_loopback: false,
            connectors_allow_loopback: false,
            github_api_url: DEFAULT_GITHUB_API_URL.to_owned(),
            github_url: DEFAULT_GITHUB_URL.to_owned(),
            proxy_timeout: DEFAULT_PROXY_TIMEOUT,
            push_allow_loopback: false,
            self_exe: running_exe(),
            trusted_proxies: TrustedProxies::default(),
            extra_hosts: Vec::new(),
            net: NetLimits::default(),
            login: LoginPolicy::default(),
            purge_every: DEFAULT_PURGE_EVERY,
            note_idle: None,
            max_blocking_threads: DEFAULT_MAX_BLOCKING_THREADS,
            updates: UpdateConfig::for_test(),
        }
    }

    /// For `serve`: requests must name a host this server answers for (DNS rebinding), so a
    /// server reachable from other machines has to be told its public name. (Other commands
    /// read the same environment and need no origin.)
    pub fn check_serve(&self) -> Result<(), ConfigError> {
        if !self.bind.ip().is_loopback() && self.public_origin.as_str() == format!("http://{}", self.bind) {
            return Err(ConfigError(format!(
                "MOBIUS_PUBLIC_ORIGIN must be set when MOBIUS_BIND ({}) is not a loopback address, \
                 e.g. MOBIUS_PUBLIC_ORIGIN=https://mobius.example.com",
                self.bind
            )));
        }
        Ok(())
    }

    /// `DATA_DIR/db/mobius.sqlite3`.
    pub fn database_path(&self) -> PathBuf {
        self.data_dir.join("db").join("mobius.sqlite3")
    }
}

/// The repository checkout, for tests and examples that read its files (`skill/`, fixtures,
/// `frontend/node_modules`). Cargo sets `CARGO_MANIFEST_DIR` when it runs a test, which stays
/// right when a shared target directory holds a binary compiled in another clone; the
/// compile-time value is the fallback.
pub fn checkout_root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
        .join("../..")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn github_addresses_default_to_github_and_refuse_credentials() {
        let c = config(&[]).expect("defaults");
        assert_eq!(
            (c.github_api_url.as_str(), c.github_url.as_str()),
            ("https://api.github.com", "https://github.com")
        );
        let c = config(&[
            ("MOBIUS_GITHUB_API_URL", "http://127.0.0.1:9/api/"),
            ("MOBIUS_GITHUB_URL", "http://127.0.0.1:9"),
        ])
        .expect("a local fake");
        assert_eq!(
            (c.github_api_url.as_str(), c.github_url.as_str()),
            ("http://127.0.0.1:9/api", "http://127.0.0.1:9")
        );
        for bad in ["ftp://x", "https://u:p@github.com", "not a url", "https://github.com/?q=1"] {
            assert!(config(&[("MOBIUS_GITHUB_URL", bad)]).is_err(), "{bad}");
        }
    }

    #[test]
    fn defaults_are_local_and_sane() {
        let c = config(&[]).expect("defaults");
        assert_eq!(c.bind.to_string(), "127.0.0.1:8000");
        assert_eq!(c.data_dir, PathBuf::from("./data"));
        assert_eq!(c.public_origin.as_str(), "http://127.0.0.1:8000");
        assert!(!c.public_origin.is_https());
    }

    #[test]
    fn a_bad_bind_address_is_one_clear_line() {
        let err = config(&[("MOBIUS_BIND", "localhost")]).expect_err("must fail").to_string();
        assert!(err.contains("MOBIUS_BIND") && !err.contains('\n'), "{err}");
    }

    #[test]
    fn origins_with_paths_or_other_schemes_are_refused() {
        assert!(config(&[("MOBIUS_PUBLIC_ORIGIN", "https://x.example/app")]).is_err());
        assert!(config(&[("MOBIUS_PUBLIC_ORIGIN", "ftp://x.example")]).is_err());
        let c = config(&[("MOBIUS_PUBLIC_ORIGIN", "https://Mobius.Example.com/")]).expect("ok");
        assert_eq!(c.public_origin.as_str(), "https://mobius.example.com");
        assert_eq!(c.public_origin.authority(), "mobius.example.com");
        assert!(c.public_origin.is_https());
    }

    #[test]
    fn a_server_reachable_from_elsewhere_must_know_its_public_origin() {
        let c = config(&[("MOBIUS_BIND", "0.0.0.0:8000")]).expect("backup and healthcheck need no origin");
        let err = c.check_serve().expect_err("serve must refuse").to_string();
        assert!(err.contains("MOBIUS_PUBLIC_ORIGIN") && !err.contains('\n'), "{err}");
        let c = config(&[("MOBIUS_BIND", "0.0.0.0:8000"), ("MOBIUS_PUBLIC_ORIGIN", "https://m.example")]).expect("ok");
        assert!(c.check_serve().is_ok());
        assert!(config(&[]).expect("loopback").check_serve().is_ok());
    }

    #[test]
    fn connection_limits_have_defaults_and_refuse_nonsense() {
        let c = config(&[]).expect("defaults");
        assert_eq!(c.net, NetLimits::default());
        assert!(c.trusted_proxies.is_empty());
        let c = config(&[("MOBIUS_MAX_CONNECTIONS", "50"), ("MOBIUS_HEADER_READ_TIMEOUT_SECS", "3")]).expect("ok");
        assert_eq!(c.net.max_connections, 50);
        assert_eq!(c.net.reserved_connections, 25, "the reserve follows a lowered cap");
        assert!(config(&[("MOBIUS_MAX_CONNECTIONS", "50"), ("MOBIUS_RESERVED_CONNECTIONS", "26")]).is_err());
        assert_eq!(c.net.header_read_timeout, Duration::from_secs(3));
        assert!(config(&[("MOBIUS_MAX_CONNECTIONS", "0")]).is_err());
        assert!(config(&[("MOBIUS_KEEP_ALIVE_SECS", "soon")]).is_err());
        assert!(config(&[("MOBIUS_TRUSTED_PROXIES", "10.0.0.0/99")]).is_err());
        let hosts =
            config(&[("MOBIUS_EXTRA_HOSTS", "192.168.1.20:8000, Mobius.LAN., [fd00::7]")]).expect("ok").extra_hosts;
        assert_eq!(
            hosts,
            vec![
                ExtraHost { name: "192.168.1.20".into(), port: Some(8000) },
                ExtraHost { name: "mobius.lan".into(), port: None },
                ExtraHost { name: "[fd00::7]".into(), port: None },
            ]
        );
        for bad in
            ["http://lan", "lan/path", "user@lan", "lan:0", "lan:99999", "[::1", "[nope]", "-lan", "a..b", "l an"]
        {
            assert!(config(&[("MOBIUS_EXTRA_HOSTS", bad)]).is_err(), "{bad}");
        }
        let many = (0..=MAX_EXTRA_HOSTS).map(|i| format!("h{i}")).collect::<Vec<_>>().join(",");
        assert!(config(&[("MOBIUS_EXTRA_HOSTS", &many)]).is_err());
        let c = config(&[("MOBIUS_TRUSTED_PROXIES", "172.16.0.0/12, ::1")]).expect("ok");
        assert!(!c.trusted_proxies.is_empty());
    }

    #[test]
    fn the_blocking_pool_is_bounded_by_default_and_the_bound_is_checked() {
        assert_eq!(config(&[]).expect("defaults").max_blocking_threads, DEFAULT_MAX_BLOCKING_THREADS);
        assert_eq!(config(&[("MOBIUS_MAX_BLOCKING_THREADS", "4")]).expect("ok").max_blocking_threads, 4);
        for bad in ["0", "-1", "many", "100000"] {
            let err = config(&[("MOBIUS_MAX_BLOCKING_THREADS", bad)]).expect_err(bad).to_string();
            assert!(err.contains("MOBIUS_MAX_BLOCKING_THREADS"), "{err}");
        }
    }

    #[test]
    fn short_secret_keys_and_bad_filters_are_refused() {
        assert!(config(&[("MOBIUS_SECRET_KEY", "short")]).is_err());
        assert!(config(&[("MOBIUS_AGENT_SANDBOX", "maybe")]).is_err());
        assert!(config(&[("MOBIUS_AGENT_SILENCE_MAX_SECS", "0")]).is_err());
        let c = config(&[("MOBIUS_AGENT_SANDBOX", "off"), ("MOBIUS_AGENT_TURN_MAX_SECS", "60")]).expect("ok");
        assert!(!c.agent_sandbox);
        assert_eq!(c.agent_turn_max, Duration::from_secs(60));
        assert!(config(&[]).expect("defaults").agent_sandbox);
        assert!(config(&[("MOBIUS_LOG", "info,[[[")]).is_err());
    }
}
