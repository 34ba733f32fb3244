//! Entity tags for stored files and the RFC 9110 conditional-request checks ([`Preconditions`]).
//!
//! A write through the API mints a random version (`v…`), recorded in the sidecar together
//! with the stamp of the file it describes; a file written behind the API's back (no sidecar,
//! or a sidecar whose stamp no longer matches) gets `f<mtime_ns>-<size>-<inode>`, which the
//! next API write replaces. Tags are kept here without their quotes.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;

use axum::http::HeaderMap;
use axum::http::header::{IF_MATCH, IF_NONE_MATCH};
use rand::RngCore;
use serde::{Deserialize, Serialize};

use crate::error::{Domain, Result};

/// What identifies one version of a file on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub size: u64,
    pub mtime_ns: i64,
    pub ino: u64,
}

impl Stamp {
    /// The stamp of `meta` (from `stat` or `fstat`).
    pub fn of(meta: &Metadata) -> Self {
        Self {
            size: meta.len(),
            mtime_ns: meta.mtime().saturating_mul(1_000_000_000).saturating_add(meta.mtime_nsec()),
            ino: meta.ino(),
        }
    }

    /// The stamp of a `stat` answer.
    pub fn of_stat(stat: &nix::sys::stat::FileStat) -> Self {
        Self {
            size: u64::try_from(stat.st_size).unwrap_or(0),
            mtime_ns: stat.st_mtime.saturating_mul(1_000_000_000).saturating_add(stat.st_mtime_nsec),
            ino: stat.st_ino,
        }
    }

    /// When the file was last modified, in unix milliseconds.
    pub fn modified_ms(&self) -> i64 {
        self.mtime_ns / 1_000_000
    }

    /// The tag of a file no API write describes.
    pub fn fallback_tag(&self) -> String {
        format!("f{:x}-{:x}-{:x}", self.mtime_ns, self.size, self.ino)
    }
}

/// A fresh, never-repeating version tag for one API write.
pub fn fresh_tag() -> String {
    let mut bytes = [0u8; 12];
    rand::thread_rng().fill_bytes(&mut bytes);
    format!("v{}", hex::encode(bytes))
}

/// `tag` as an `ETag` header value.
pub fn quoted(tag: &str) -> String {
    format!("\"{tag}\"")
}

/// One member of an `If-Match` / `If-None-Match` list.
#[derive(Debug, PartialEq, Eq)]
enum Member<'a> {
    Any,
    Tag { weak: bool, opaque: &'a str },
}

/// Parses a comma-separated entity-tag list; `None` when the header is malformed.
fn parse_list(header: &str) -> Option<Vec<Member<'_>>> {
    let mut members = Vec::new();
    let mut rest = header;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            break;
        }
        if let Some(after) = rest.strip_prefix('*') {
            members.push(Member::Any);
            rest = after;
            continue;
        }
        let (weak, after) = match rest.strip_prefix("W/") {
            Some(after) => (true, after),
            None => (false, rest),
        };
        let after = after.strip_prefix('"')?;
        let end = after.find('"')?;
        members.push(Member::Tag { weak, opaque: &after[..end] });
        rest = &after[end + 1..];
        if !rest.is_empty() && !rest.starts_with([' ', '\t', ',']) {
            return None;
        }
    }
    (!members.is_empty()).then_some(members)
}

/// Suffixes reverse proxies append inside the quotes when they compress a response.
const PROXY_SUFFIXES: [&str; 4] = ["-gzip", "-br", "-zstd", "-deflate"];

fn same(opaque: &str, current: &str) -> bool {
    opaque == current || PROXY_SUFFIXES.iter().any(|s| opaque.strip_suffix(s) == Some(current))
}

/// `If-Match`: true when the write may proceed. Strong comparison: weak tags never match;
/// `*` matches any existing file; a malformed header matches nothing.
pub fn if_match_passes(header: &str, current: Option<&str>) -> bool {
    let (Some(members), Some(current)) = (parse_list(header), current) else {
        return false;
    };
    members.iter().any(|m| match m {
        Member::Any => true,
        Member::Tag { weak, opaque } => !weak && same(opaque, current),
    })
}

/// `If-None-Match`: true when the header matches the current file (weak comparison), i.e.
/// a GET may answer 304 and a write must answer 412. `*` matches any existing file.
pub fn if_none_match_hits(header: &str, current: Option<&str>) -> bool {
    let (Some(members), Some(current)) = (parse_list(header), current) else {
        return false;
    };
    members.iter().any(|m| match m {
        Member::Any => true,
        Member::Tag { opaque, .. } => same(opaque, current),
    })
}

/// `If-Match` / `If-None-Match` of a write.
#[derive(Debug, Clone, Default)]
pub(crate) struct Preconditions {
    if_match: Option<String>,
    if_none_match: Option<String>,
}

/// All values of a list header joined by commas. A non-ASCII value becomes a token no list
/// parser accepts, so it matches nothing (If-Match fails, If-None-Match never hits).
fn joined(headers: &HeaderMap, name: axum::http::HeaderName) -> Option<String> {
    let values: Vec<&str> = headers.get_all(name).iter().map(|v| v.to_str().unwrap_or("?")).collect();
    (!values.is_empty()).then(|| values.join(", "))
}

impl Preconditions {
    /// Reads the conditional headers of a request.
    pub fn from_headers(headers: &HeaderMap) -> Self {
        Self { if_match: joined(headers, IF_MATCH), if_none_match: joined(headers, IF_NONE_MATCH) }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.if_match.is_none() && self.if_none_match.is_none()
    }

    /// 412 unless a write over the file currently tagged `current` may proceed.
    pub(crate) fn check(&self, current: Option<&str>) -> Result<()> {
        if let Some(h) = &self.if_match
            && !if_match_passes(h, current)
        {
            return Err(Domain::PreconditionFailed(
                "The file is not the version named in If-Match; read it again and retry.",
            )
            .into());
        }
        if let Some(h) = &self.if_none_match
            && if_none_match_hits(h, current)
        {
            return Err(
                Domain::PreconditionFailed("The file already exists in the version named in If-None-Match.").into()
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_match_follows_rfc_9110() {
        assert!(if_match_passes("\"v1\"", Some("v1")));
        assert!(!if_match_passes("\"v2\"", Some("v1")));
        assert!(if_match_passes("\"v0\", \"v1\"", Some("v1")));
        assert!(if_match_passes("\"v0\",\"v1\"", Some("v1")));
        assert!(if_match_passes("*", Some("v1")));
        assert!(!if_match_passes("*", None));
        assert!(!if_match_passes("\"v1\"", None));
        assert!(!if_match_passes("W/\"v1\"", Some("v1")), "weak tags never match");
        assert!(!if_match_passes("v1", Some("v1")), "unquoted is malformed");
        assert!(!if_match_passes("", Some("v1")));
        assert!(!if_match_passes("\"v1", Some("v1")));
        assert!(!if_match_passes("\"v1\"x", Some("v1")));
    }

    #[test]
    fn compression_suffixes_from_proxies_are_tolerated() {
        for suffix in ["-gzip", "-br", "-zstd", "-deflate"] {
            assert!(if_match_passes(&format!("\"v1{suffix}\""), Some("v1")), "{suffix}");
        }
        assert!(!if_match_passes("\"v1-lz4\"", Some("v1")));
        assert!(!if_match_passes("\"v1-gzip\"", Some("v2")));
    }

    #[test]
    fn if_none_match_uses_weak_comparison() {
        assert!(if_none_match_hits("*", Some("v1")));
        assert!(!if_none_match_hits("*", None));
        assert!(if_none_match_hits("W/\"v1\"", Some("v1")));
        assert!(if_none_match_hits("\"a\", \"v1-gzip\"", Some("v1")));
        assert!(!if_none_match_hits("\"a\"", Some("v1")));
    }

    #[test]
    fn tags_differ_per_write_and_per_stamp() {
        assert_ne!(fresh_tag(), fresh_tag());
        let a = Stamp { size: 3, mtime_ns: 10, ino: 7 };
        let b = Stamp { ino: 8, ..a };
        assert_ne!(a.fallback_tag(), b.fallback_tag());
        assert_eq!(quoted("v1"), "\"v1\"");
    }
}
