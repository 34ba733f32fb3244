//! How platform updates are configured (`MOBIUS_UPDATE_*`) and the keys and feed baked into
//! this build: value types of the configuration; `platform/` acts on them.

use std::time::Duration;

/// The public key releases are signed with (minisign, Ed25519), baked into the binary.
pub const RELEASE_PUBLIC_KEY: &str = include_str!("../../release.pub");

/// The feed a build checks unless told otherwise (`MOBIUS_RELEASE_FEED` at build time: release
/// builds and the image name the repository's latest release; empty, as in a plain `cargo
/// build`, turns checks off).
pub const DEFAULT_FEED_URL: &str = env!("MOBIUS_RELEASE_FEED");

/// What the image holds besides the binary and the PWA (agent CLIs, Node, the app libraries),
/// as a digest baked at build time (`build.rs`). A release with another key needs the image.
pub const IMAGE_KEY: &str = env!("MOBIUS_IMAGE_KEY");

/// How long a version on trial has to become ready by default.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(90);

/// How updates are configured (`MOBIUS_UPDATE_*`, read with the rest of [`crate::config`]).
#[derive(Clone, Debug)]
pub struct UpdateConfig {
    /// The release feed (`MOBIUS_UPDATE_FEED`; `off` turns checks off), an http(s) URL.
    pub feed: Option<reqwest::Url>,
    /// A further trusted key (`MOBIUS_UPDATE_TEST_KEY`, a minisign public key): honoured only
    /// with a feed on a loopback address, so it can sign a test release served on this
    /// machine, never one fetched from elsewhere.
    pub test_key: Option<String>,
    /// How long a new version has to become ready before it is rolled back
    /// (`MOBIUS_UPDATE_READY_TIMEOUT_SECS`, default 90).
    pub ready_timeout: Duration,
    /// The launcher that started this server (`MOBIUS_LAUNCHER_PID`, set by `mobius launch`).
    pub launcher_pid: Option<i32>,
    /// What the running image holds (`MOBIUS_IMAGE_KEY` from the launcher, else this build's).
    pub image_key: String,
    /// The release this server runs from (`MOBIUS_RELEASE`, set by the launcher), if any.
    pub release: Option<String>,
}

impl UpdateConfig {
    /// Reads the settings through `get` (the environment).
    pub fn from_lookup(get: &impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let feed = match get("MOBIUS_UPDATE_FEED").as_deref().map(str::trim) {
            Some("off" | "0" | "false") => None,
            Some(raw) => Some(parse_feed_url(raw)?),
            None if DEFAULT_FEED_URL.is_empty() => None,
            None => Some(parse_feed_url(DEFAULT_FEED_URL)?),
        };
        let test_key = get("MOBIUS_UPDATE_TEST_KEY");
        if let Some(key) = &test_key {
            parse_key(key).map_err(|e| format!("MOBIUS_UPDATE_TEST_KEY: {e}"))?;
            if !feed.as_ref().is_some_and(is_loopback_url) {
                return Err("MOBIUS_UPDATE_TEST_KEY is honoured only with a MOBIUS_UPDATE_FEED on a loopback \
                            address (127.0.0.1, ::1): it is for test releases served on this machine"
                    .into());
            }
        }
        let ready_raw = get("MOBIUS_UPDATE_READY_TIMEOUT_SECS").unwrap_or_else(|| "90".into());
        let ready_timeout = ready_raw
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|s| (1..=3600).contains(s))
            .map(Duration::from_secs)
            .ok_or_else(|| {
                format!("MOBIUS_UPDATE_READY_TIMEOUT_SECS={ready_raw:?} must be a number of seconds from 1 to 3600")
            })?;
        let launcher_pid = get("MOBIUS_LAUNCHER_PID").and_then(|p| p.trim().parse::<i32>().ok()).filter(|p| *p > 1);
        let image_key = get("MOBIUS_IMAGE_KEY").unwrap_or_else(|| IMAGE_KEY.to_owned());
        let release = get("MOBIUS_RELEASE").filter(|v| semver::Version::parse(v).is_ok());
        Ok(Self { feed, test_key, ready_timeout, launcher_pid, image_key, release })
    }

    /// Checks off, no launcher: what `Config::for_test` uses.
    pub fn for_test() -> Self {
        Self {
            feed: None,
            test_key: None,
            ready_timeout: DEFAULT_READY_TIMEOUT,
            launcher_pid: None,
            image_key: IMAGE_KEY.to_owned(),
            release: None,
        }
    }

    /// The keys a release may be signed with: the baked one, and the test key when allowed.
    pub fn trusted_keys(&self) -> Vec<minisign_verify::PublicKey> {
        let mut keys: Vec<_> = parse_key(RELEASE_PUBLIC_KEY).into_iter().collect();
        if self.feed.as_ref().is_some_and(is_loopback_url) {
            keys.extend(self.test_key.as_deref().and_then(|k| parse_key(k).ok()));
        }
        keys
    }
}

fn parse_feed_url(raw: &str) -> Result<reqwest::Url, String> {
    let url = reqwest::Url::parse(raw).map_err(|e| format!("MOBIUS_UPDATE_FEED={raw:?} is not a URL: {e}"))?;
    match url.scheme() {
        "https" => Ok(url),
        "http" if is_loopback_url(&url) => Ok(url),
        _ => Err(format!("MOBIUS_UPDATE_FEED={raw:?} must be an https URL (plain http only on loopback)")),
    }
}

/// True for a URL whose host is a loopback address literal or `localhost`.
pub fn is_loopback_url(url: &reqwest::Url) -> bool {
    match url.host_str() {
        Some("localhost") => true,
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

/// Reads a minisign public key: a `.pub` file's text or its base64 line.
pub fn parse_key(text: &str) -> Result<minisign_verify::PublicKey, String> {
    let line = text.lines().map(str::trim).rfind(|l| !l.is_empty() && !l.starts_with("untrusted comment:"));
    let line = line.ok_or("no key in it")?;
    minisign_verify::PublicKey::from_base64(line).map_err(|e| format!("not a minisign public key: {e}"))
}
