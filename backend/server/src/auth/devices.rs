//! Device credentials: a browser that signed in (or set up the owner) gets a random 256-bit
//! credential in an HttpOnly, SameSite=Strict cookie scoped to `/api/auth`. The server keeps
//! only its SHA-256 (`owner_devices`). A sign-in that presents a known credential skips the
//! per-address and global limits (it still needs the right password, and waits after its own
//! failures), so an attack cannot lock the owner's devices out. "Sign out everywhere" forgets
//! every device; a device unused for [`DEVICE_TTL`] is forgotten too.
//!
//! The listener keeps slots for the owner's devices ([`Recognizer`], see `net`): a request is
//! from one when its bearer token verifies for the owner, or when it carries a credential of
//! [`KnownDevices`], the devices' hashes held in memory (reloaded after each sign-in, emptied
//! by sign-out-everywhere), so the check needs no I/O.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, header};
use base64::Engine;
use rand::RngCore;
use sha2::{Digest, Sha256};

use super::jwt::Keys;
use super::owner::OwnerCache;
use crate::error::Result;

/// The cookie's name.
pub const DEVICE_COOKIE: &str = "mobius_device";
/// Devices remembered at once (the least recently used go first).
pub const MAX_DEVICES: i64 = 32;
pub use super::known::DEVICE_TTL;
/// Longest credential value read from a cookie.
const MAX_CREDENTIAL_CHARS: usize = 128;
/// Longest device label kept (from `User-Agent`).
const MAX_LABEL_CHARS: usize = 200;

/// The device credential this request carries, if any (unchecked).
pub fn presented(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == DEVICE_COOKIE)
        .map(|(_, value)| value.trim().to_owned())
        .filter(|v| !v.is_empty() && v.len() <= MAX_CREDENTIAL_CHARS)
}

/// What the database keeps of a credential.
pub fn hash(credential: &str) -> String {
    hex::encode(Sha256::digest(credential.as_bytes()))
}

/// A fresh credential.
pub fn mint() -> String {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The hash of the credential this request carries when it names a known device.
pub async fn known(read: &sqlx::SqlitePool, headers: &HeaderMap) -> Result<Option<String>> {
    let Some(credential) = presented(headers) else { return Ok(None) };
    let digest = hash(&credential);
    let since = crate::db::now_ms() - i64::try_from(DEVICE_TTL.as_millis()).unwrap_or(i64::MAX);
    Ok(crate::db::owner::device_known(read, &digest, since).await?.then_some(digest))
}

/// Tells the owner's devices for the listener (`net::Recognize`): a bearer token that verifies
/// for the owner (any scope: every token is minted for one of the owner's devices or its
/// agent), or a known device credential.
pub struct Recognizer {
    pub keys: Keys,
    pub owner: Arc<OwnerCache>,
    pub sessions: Arc<super::sessions::Sessions>,
    pub devices: Arc<super::known::KnownDevices>,
}

impl crate::net::Recognize for Recognizer {
    fn known(&self, headers: &HeaderMap) -> bool {
        let owner = self.owner.get();
        let by_token = super::jwt::bearer_of(headers).and_then(|t| self.keys.verify(t).ok()).is_some_and(|claims| {
            owner.as_ref().is_some_and(|(name, epoch)| claims.sub == *name && claims.epoch == *epoch)
                && (claims.scope != super::jwt::Scope::Owner
                    || self.sessions.check(claims.sid.as_deref().unwrap_or(super::sessions::LEGACY_SESSION)))
        });
        by_token || presented(headers).is_some_and(|credential| self.devices.contains(&hash(&credential)))
    }
}

/// A device's label: its `User-Agent`, without control characters, bounded.
pub fn label_of(headers: &HeaderMap) -> String {
    headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_LABEL_CHARS)
        .collect()
}

/// The `Set-Cookie` that removes the credential from this browser.
pub fn clear(https: bool) -> HeaderValue {
    cookie("", 0, https)
}

pub(super) fn cookie(value: &str, max_age_secs: u64, https: bool) -> HeaderValue {
    let secure = if https { "; Secure" } else { "" };
    let text =
        format!("{DEVICE_COOKIE}={value}; Max-Age={max_age_secs}; Path=/api/auth; HttpOnly; SameSite=Strict{secure}");
    // Base64url and digits only: always a valid header value.
    HeaderValue::from_str(&text)
        .unwrap_or_else(|_| HeaderValue::from_static("mobius_device=; Max-Age=0; Path=/api/auth"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_credential_is_read_from_among_other_cookies() {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, HeaderValue::from_static("a=1; mobius_device=abc_DEF-9; b=2"));
        assert_eq!(presented(&h).as_deref(), Some("abc_DEF-9"));
        h.insert(header::COOKIE, HeaderValue::from_static("mobius_device="));
        assert_eq!(presented(&h), None);
        assert_eq!(presented(&HeaderMap::new()), None);
    }

    #[test]
    fn minted_credentials_are_distinct_and_the_cookie_is_locked_down() {
        assert_ne!(mint(), mint());
        assert_eq!(hash("x").len(), 64);
        let c = cookie(&mint(), 10, true);
        let text = c.to_str().expect("text");
        for part in ["HttpOnly", "SameSite=Strict", "Path=/api/auth", "Secure", "Max-Age=10"] {
            assert!(text.contains(part), "{text}");
        }
        assert!(!clear(false).to_str().expect("text").contains("Secure"));
    }
}
