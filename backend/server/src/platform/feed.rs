//! The release feed: one small JSON document (`latest.json` of the newest release) fetched at
//! most once a day, with nothing sent but the GET itself (no query, no cookies, no version in
//! the user agent). A feed that is unreachable, slow or garbled costs one line in the log.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Daily checks: this long between two.
pub const CHECK_INTERVAL: Duration = Duration::from_secs(24 * 3600);
/// The first check after a start waits this long (start-up stays quiet).
pub const FIRST_CHECK_DELAY: Duration = Duration::from_secs(60);
/// An owner's "Check now" is answered from the last check when it is younger than this.
pub const MANUAL_CHECK_MIN_INTERVAL: Duration = Duration::from_secs(60);
/// A feed request gives up after this long in all.
const FEED_TIMEOUT: Duration = Duration::from_secs(15);
/// Largest feed read.
const MAX_FEED_BYTES: usize = 64 * 1024;
/// Release notes kept, in characters.
const MAX_NOTES_CHARS: usize = 16_000;
/// Redirects followed (the feed's usual address redirects once to the file).
const MAX_REDIRECTS: usize = 5;

const CHECK_FILE: &str = "feed.json";
const SETTINGS_FILE: &str = "updates.json";

/// The newest release, as the feed describes it (unsigned: what is applied is verified).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Feed {
    pub version: String,
    #[serde(default)]
    pub published_at: String,
    #[serde(default)]
    pub notes: String,
    /// Where the release's files are (absolute, resolved against the feed's address).
    pub base_url: String,
    /// The release's files and their sizes in bytes.
    #[serde(default)]
    pub assets: std::collections::BTreeMap<String, u64>,
}

impl Feed {
    /// Parses and checks a feed document fetched from `from`.
    pub fn parse(bytes: &[u8], from: &reqwest::Url) -> Result<Self, String> {
        #[derive(Deserialize)]
        struct Raw {
            format: u32,
            version: String,
            #[serde(default)]
            published_at: String,
            #[serde(default)]
            notes: String,
            base_url: String,
            #[serde(default)]
            assets: std::collections::BTreeMap<String, u64>,
        }
        let raw: Raw = serde_json::from_slice(bytes).map_err(|e| format!("the feed is not a release feed: {e}"))?;
        if raw.format != 1 {
            return Err(format!("the feed has format {}; this build reads format 1", raw.format));
        }
        semver::Version::parse(&raw.version)
            .map_err(|e| format!("the feed's version {:?} is invalid: {e}", raw.version))?;
        let base = from.join(&raw.base_url).map_err(|e| format!("the feed's base_url is invalid: {e}"))?;
        let base_ok = base.scheme() == "https" || (base.scheme() == "http" && super::is_loopback_url(&base));
        if !base_ok {
            return Err("the feed's base_url must be https".into());
        }
        let mut base = base.to_string();
        if !base.ends_with('/') {
            base.push('/');
        }
        Ok(Self {
            version: raw.version,
            published_at: raw.published_at.chars().take(64).collect(),
            notes: raw.notes.chars().take(MAX_NOTES_CHARS).collect(),
            base_url: base,
            assets: raw.assets,
        })
    }

    /// The version, parsed.
    pub fn semver(&self) -> semver::Version {
        semver::Version::parse(&self.version).unwrap_or_else(|_| semver::Version::new(0, 0, 0))
    }
}

/// The last check, kept in `platform/feed.json` so a restart does not check again.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct CheckRecord {
    /// Unix milliseconds.
    pub checked_at: i64,
    #[serde(default)]
    pub feed: Option<Feed>,
    #[serde(default)]
    pub error: Option<String>,
}

impl CheckRecord {
    pub(crate) fn load(data_dir: &Path) -> Option<Self> {
        let bytes = super::verify::read_small(&super::platform_dir(data_dir).join(CHECK_FILE)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    pub(crate) fn store(&self, data_dir: &Path) {
        if let Err(e) = write_json(&super::platform_dir(data_dir).join(CHECK_FILE), self) {
            tracing::warn!(error = %e, "cannot keep the update check");
        }
    }
}

fn write_json(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("json.tmp");
    let mut out = std::fs::File::create(&tmp)?;
    out.write_all(&serde_json::to_vec(value).unwrap_or_default())?;
    out.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// The owner's switch for daily checks (`platform/updates.json`; on unless turned off).
pub fn auto_check(data_dir: &Path) -> bool {
    super::verify::read_small(&super::platform_dir(data_dir).join(SETTINGS_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["auto_check"].as_bool())
        .unwrap_or(true)
}

/// Turns daily checks on or off.
pub fn set_auto_check(data_dir: &Path, on: bool) -> std::io::Result<()> {
    write_json(&super::platform_dir(data_dir).join(SETTINGS_FILE), &serde_json::json!({ "auto_check": on }))
}

/// A client for the feed and release files: no cookies, a plain user agent, redirects only to
/// https (or loopback, where the feed itself is).
pub fn client(timeout: Duration) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .user_agent("mobius-update")
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            let allowed = attempt.url().scheme() == "https" || super::is_loopback_url(attempt.url());
            if attempt.previous().len() >= MAX_REDIRECTS || !allowed { attempt.stop() } else { attempt.follow() }
        }))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// Fetches and parses the feed at `url`.
pub async fn fetch(url: &reqwest::Url) -> Result<Feed, String> {
    let client = client(FEED_TIMEOUT)?;
    let mut response = client.get(url.clone()).send().await.map_err(|e| format!("the feed is unreachable: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("the feed answered {}", response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("the feed broke off: {e}"))? {
        if body.len() + chunk.len() > MAX_FEED_BYTES {
            return Err(format!("the feed is larger than {} KiB", MAX_FEED_BYTES >> 10));
        }
        body.extend_from_slice(&chunk);
    }
    Feed::parse(&body, response.url())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_feed_resolves_its_base_and_refuses_garbage() {
        let from = reqwest::Url::parse("https://example.test/releases/latest/latest.json").expect("url");
        let feed = Feed::parse(
            br#"{"format":1,"version":"1.2.0","notes":"Faster.","base_url":"../download/v1.2.0","assets":{"a":3}}"#,
            &from,
        )
        .expect("parse");
        assert_eq!(feed.base_url, "https://example.test/releases/download/v1.2.0/");
        assert_eq!(feed.semver(), semver::Version::new(1, 2, 0));
        for bad in [
            &b"<html>"[..],
            br#"{"format":2,"version":"1.0.0","base_url":"x"}"#,
            br#"{"format":1,"version":"one","base_url":"x"}"#,
            br#"{"format":1,"version":"1.0.0","base_url":"http://example.test/"}"#,
        ] {
            assert!(Feed::parse(bad, &from).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn the_switch_is_on_unless_turned_off() {
        let dir = tempfile::tempdir().expect("tmp");
        assert!(auto_check(dir.path()));
        set_auto_check(dir.path(), false).expect("off");
        assert!(!auto_check(dir.path()));
        set_auto_check(dir.path(), true).expect("on");
        assert!(auto_check(dir.path()));
    }
}
