//! JWT (HS256) issue and verification with a signing key that rotates (`DATA_DIR/secret.key`),
//! and the sealing of app secrets under a key that does not (`DATA_DIR/data.key`).
//!
//! HS256 is done here on ring's HMAC (RFC 7519 with the one header this server signs with):
//! the HMAC key is prepared once per signing key, not per token, and a token's claims are
//! parsed once. A bearer is checked on nearly every request; the generic crate this replaced
//! spent most of an authenticated `/api/health` on it (`scripts/bench`, issue 39).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use ring::hmac;
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::locks::UnpoisonedRw;

/// What a token may be used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The owner's login token.
    Owner,
    /// A mini-app's token (storage and app routes only).
    App,
    /// An agent run's token: the routes of `auth::agent::AGENT_ROUTES` only, valid only
    /// while its run is running.
    Agent,
    /// An embedded chat's session (the nested chat frame of an app): one chat, a few
    /// operations, 15 minutes, bound to its embed instance and a live grant row.
    ChatEmbed,
    /// A media token: loads one chat's files and images (`?token=` in an image URL), 15
    /// minutes; minted for an embedded chat it also dies with that chat's session.
    Media,
}

/// The claims every token carries.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Claims {
    /// The owner's username.
    pub sub: String,
    pub scope: Scope,
    /// Owner token epoch at issue time; a bump revokes the token.
    pub epoch: i64,
    /// Issued at (unix seconds).
    pub iat: i64,
    /// Expiry (unix seconds).
    pub exp: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_nonce: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Chat-embed sessions: the embed instance the session is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embed_instance: Option<String>,
    /// Chat-embed sessions: the grant row (its id) that became this session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embed_session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embed_role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embed_ops: Option<Vec<String>>,
    /// Owner tokens: the signed-in device's session (`auth::sessions`); none on tokens issued
    /// before sessions existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sid: Option<String>,
    /// App tokens of a job run (`schedules/jobs.rs`): the run they die with. Such a token is
    /// accepted only while that run is its app's running job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_run: Option<i64>,
}

impl Claims {
    /// Claims for `scope` valid for `ttl_secs` from now.
    pub fn new(sub: &str, scope: Scope, epoch: i64, ttl_secs: i64) -> Self {
        let now = unix_now();
        Self {
            sub: sub.to_owned(),
            scope,
            epoch,
            iat: now,
            exp: now + ttl_secs,
            app_id: None,
            app_nonce: None,
            chat_id: None,
            run_id: None,
            embed_instance: None,
            embed_session: None,
            embed_role: None,
            embed_ops: None,
            sid: None,
            job_run: None,
        }
    }
}

/// The JWT signing key and the app-secret sealing key. The signing key rotates ("sign out
/// everywhere", a new password: every token dies, forged ones included); the sealing key
/// (`DATA_DIR/data.key`) never does, so sealed secrets outlive rotations. Cheap to clone:
/// clones share one key.
#[derive(Clone)]
pub struct Keys(Arc<KeysInner>);

struct KeysInner {
    signing: RwLock<Signing>,
    /// Where a rotated signing key is written (`None`: in memory only, for tests).
    key_file: Option<PathBuf>,
    /// Seals app secrets at rest.
    sealing: [u8; 32],
    /// The sealing key earlier releases derived from the signing key, to re-seal secrets
    /// stored before `data.key` existed (see [`Keys::open_legacy`]).
    legacy_sealing: [u8; 32],
}

struct Signing {
    key: hmac::Key,
    /// Keys rotated away in this process, newest first: a token they verify is reported as
    /// revoked (it grants nothing), so clients can tell "signed out" from "not ours".
    retired: Vec<hmac::Key>,
}

impl Signing {
    fn new(secret: &[u8]) -> Self {
        Self { key: hmac::Key::new(hmac::HMAC_SHA256, secret), retired: Vec::new() }
    }
}

/// The JOSE header of every token this server signs, `{"typ":"JWT","alg":"HS256"}`, encoded.
const HEADER: &str = "eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9";
/// Seconds a token is still accepted after its `exp` (clock skew between processes).
const EXPIRY_LEEWAY_SECS: i64 = 5;

fn malformed() -> Error {
    Error::unauthorized("malformed_token", "The token is malformed.")
}

fn not_ours() -> Error {
    Error::unauthorized("invalid_token", "This token was not issued by this server.")
}

/// A header other than [`HEADER`] is accepted when it names HS256 (the signature decides).
fn check_header(encoded: &str) -> Result<()> {
    #[derive(Deserialize)]
    struct Header<'a> {
        #[serde(borrow)]
        alg: std::borrow::Cow<'a, str>,
    }
    let bytes = URL_SAFE_NO_PAD.decode(encoded).map_err(|_| malformed())?;
    let header: Header<'_> = serde_json::from_slice(&bytes).map_err(|_| malformed())?;
    if header.alg == "HS256" { Ok(()) } else { Err(not_ours()) }
}

/// The claims of a token whose signature checked out, unless it has expired.
fn read_claims(payload: &str) -> Result<Claims> {
    let bytes = URL_SAFE_NO_PAD.decode(payload).map_err(|_| malformed())?;
    let claims: Claims = serde_json::from_slice(&bytes).map_err(|_| malformed())?;
    if claims.exp < unix_now() - EXPIRY_LEEWAY_SECS {
        return Err(Error::unauthorized("token_expired", "Your session has expired; sign in again."));
    }
    Ok(claims)
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(..)")
    }
}

/// Length of a generated key, in random bytes (written hex-encoded).
const GENERATED_KEY_BYTES: usize = 48;
/// Rotated-away signing keys remembered (in memory) to name their tokens revoked.
const MAX_RETIRED_KEYS: usize = 4;
/// Length of the data key, in random bytes (written hex-encoded).
const DATA_KEY_BYTES: usize = 32;
/// The signing key's file in `DATA_DIR`.
pub const SIGNING_KEY_FILE: &str = "secret.key";
/// The sealing key's file in `DATA_DIR`.
pub const DATA_KEY_FILE: &str = "data.key";

fn derive_legacy_sealing(secret: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::new().chain_update(b"mobius app secrets v1\0").chain_update(secret).finalize().into()
}

impl Keys {
    /// Reads `DATA_DIR/secret.key` (the signing key) and `DATA_DIR/data.key` (the sealing key),
    /// creating each (0600) on first boot; `MOBIUS_SECRET_KEY`, when set, is the first signing
    /// key written into `secret.key` (a rotation replaces it there).
    pub fn load_or_create(config: &Config) -> Result<Self> {
        let key_file = config.data_dir.join(SIGNING_KEY_FILE);
        let secret = read_or_create_key_file(&key_file, config.secret_key.as_deref(), GENERATED_KEY_BYTES)?;
        let data_key = read_or_create_key_file(&config.data_dir.join(DATA_KEY_FILE), None, DATA_KEY_BYTES)?;
        let data_key =
            hex::decode(data_key.trim()).ok().and_then(|bytes| <[u8; 32]>::try_from(bytes).ok()).ok_or_else(|| {
                Error::Internal(format!("{DATA_KEY_FILE} is not 64 hex digits; restore it from a backup"))
            })?;
        Ok(Self::build(secret.as_bytes(), data_key, Some(key_file)))
    }

    /// Keys from raw secret bytes, in memory only (the sealing key is derived from it).
    pub fn from_secret(secret: &[u8]) -> Self {
        let sealing = derive_legacy_sealing(secret);
        Self::build(secret, sealing, None)
    }

    fn build(secret: &[u8], sealing: [u8; 32], key_file: Option<PathBuf>) -> Self {
        Self(Arc::new(KeysInner {
            signing: RwLock::new(Signing::new(secret)),
            key_file,
            sealing,
            legacy_sealing: derive_legacy_sealing(secret),
        }))
    }

    /// Replaces the signing key with a fresh random one (written to `secret.key` first, so a
    /// restart keeps it): every token signed before, forged or not, stops verifying.
    pub fn rotate(&self) -> Result<()> {
        let mut bytes = [0u8; GENERATED_KEY_BYTES];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        let secret = hex::encode(bytes);
        if let Some(file) = &self.0.key_file {
            // Atomically: a crash leaves the old key or the new one, never half of one.
            let tmp = file.with_extension("tmp");
            let mut out = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
            out.write_all(secret.as_bytes())?;
            out.sync_all()?;
            std::fs::rename(&tmp, file)?;
        }
        let mut signing = self.0.signing.write_locked();
        let mut next = Signing::new(secret.as_bytes());
        next.retired = std::mem::take(&mut signing.retired);
        next.retired.insert(0, signing.key.clone());
        next.retired.truncate(MAX_RETIRED_KEYS);
        *signing = next;
        Ok(())
    }

    /// Encrypts `value` for `context` (a random nonce, then ChaCha20-Poly1305 ciphertext and tag).
    pub fn seal(&self, context: &str, value: &[u8]) -> Result<Vec<u8>> {
        seal_with(&self.0.sealing, context, value)
    }

    /// Decrypts what [`Keys::seal`] made for the same `context`.
    pub fn open(&self, context: &str, sealed: &[u8]) -> Result<Vec<u8>> {
        open_with(&self.0.sealing, context, sealed)
    }

    /// Decrypts a value sealed by an earlier release (under a key derived from the signing key
    /// as it was at this start-up), to seal it again with [`Keys::seal`].
    pub fn open_legacy(&self, context: &str, sealed: &[u8]) -> Result<Vec<u8>> {
        open_with(&self.0.legacy_sealing, context, sealed)
    }

    /// Signs `claims`.
    pub fn issue(&self, claims: &Claims) -> Result<String> {
        let payload = serde_json::to_vec(claims).map_err(|e| Error::Internal(format!("token signing failed: {e}")))?;
        let mut token = String::with_capacity(HEADER.len() + 1 + payload.len() * 4 / 3 + 48);
        token.push_str(HEADER);
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(&payload, &mut token);
        let tag = {
            let signing = self.0.signing.read_locked();
            hmac::sign(&signing.key, token.as_bytes())
        };
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(tag.as_ref(), &mut token);
        Ok(token)
    }

    /// Verifies signature, algorithm and expiry; maps failures to 401 codes: `malformed_token`,
    /// `invalid_token` (not signed by this server), `token_revoked` (signed by a key that has
    /// rotated away), `token_expired`.
    pub fn verify(&self, token: &str) -> Result<Claims> {
        let (signed, signature) = token.rsplit_once('.').ok_or_else(malformed)?;
        let (header, payload) = signed.split_once('.').ok_or_else(malformed)?;
        if header != HEADER {
            check_header(header)?;
        }
        let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|_| malformed())?;
        let retired = {
            let signing = self.0.signing.read_locked();
            if hmac::verify(&signing.key, signed.as_bytes(), &signature).is_ok() {
                false
            } else if signing.retired.iter().any(|key| hmac::verify(key, signed.as_bytes(), &signature).is_ok()) {
                true
            } else {
                return Err(not_ours());
            }
        };
        match read_claims(payload) {
            Ok(_) if retired => {
                Err(Error::unauthorized("token_revoked", "This session was signed out everywhere; sign in again."))
            }
            Ok(claims) => Ok(claims),
            // A rotated-away key's token that is unreadable or expired is simply not ours now.
            Err(_) if retired => Err(not_ours()),
            Err(e) => Err(e),
        }
    }
}

fn seal_with(key: &[u8; 32], context: &str, value: &[u8]) -> Result<Vec<u8>> {
    use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
    let key =
        LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, key).map_err(|_| Error::Internal("sealing key".into()))?);
    let mut nonce = [0u8; NONCE_LEN];
    rand::rngs::OsRng.fill_bytes(&mut nonce);
    let mut sealed = value.to_vec();
    key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(context.as_bytes()), &mut sealed)
        .map_err(|_| Error::Internal("sealing failed".into()))?;
    let mut out = nonce.to_vec();
    out.extend_from_slice(&sealed);
    Ok(out)
}

fn open_with(key: &[u8; 32], context: &str, sealed: &[u8]) -> Result<Vec<u8>> {
    use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
    let key =
        LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, key).map_err(|_| Error::Internal("sealing key".into()))?);
    let unreadable = || Error::Internal("a sealed value could not be opened (wrong key or damaged)".into());
    if sealed.len() < NONCE_LEN {
        return Err(unreadable());
    }
    let (nonce, body) = sealed.split_at(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| unreadable())?;
    let mut body = body.to_vec();
    let plain = key.open_in_place(nonce, Aad::from(context.as_bytes()), &mut body).map_err(|_| unreadable())?;
    Ok(plain.to_vec())
}

/// The key in `path` (at least 32 characters), or, when there is none, `initial` (or
/// `random_bytes` fresh random bytes, hex-encoded) written there with mode 0600.
fn read_or_create_key_file(path: &Path, initial: Option<&str>, random_bytes: usize) -> Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().len() >= 32 => return Ok(text.trim().to_owned()),
        Ok(_) => {
            return Err(Error::Internal(format!(
                "{} is shorter than 32 characters; remove it to regenerate",
                path.display()
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e.into()),
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let key = match initial {
        Some(key) => key.to_owned(),
        None => {
            let mut bytes = vec![0u8; random_bytes];
            rand::rngs::OsRng.fill_bytes(&mut bytes);
            hex::encode(bytes)
        }
    };
    match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path) {
        Ok(mut file) => {
            file.write_all(key.as_bytes())?;
            file.sync_all()?;
            Ok(key)
        }
        // Another process won the race: use its key.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_or_create_key_file(path, initial, random_bytes),
        Err(e) => Err(e.into()),
    }
}

/// Seconds since the unix epoch.
pub fn unix_now() -> i64 {
    crate::db::now_ms() / 1000
}

/// The bearer token of `Authorization`, if it has one (unchecked).
pub fn bearer_of(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?;
    match value.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() => {
            Some(token.trim())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_generated_key_is_private_and_stable() {
        let dir = tempfile::tempdir().expect("tmp");
        let config = Config::for_test(dir.path());
        let a = Keys::load_or_create(&config).expect("create");
        let mode = std::fs::metadata(dir.path().join("secret.key")).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let b = Keys::load_or_create(&config).expect("reload");
        let token = a.issue(&Claims::new("owner", Scope::Owner, 0, 60)).expect("issue");
        assert_eq!(b.verify(&token).expect("verify").sub, "owner");
    }

    #[test]
    fn forged_expired_and_garbage_tokens_have_distinct_codes() {
        let keys = Keys::from_secret(b"0123456789abcdef0123456789abcdef");
        let other = Keys::from_secret(b"fedcba9876543210fedcba9876543210");
        let forged = other.issue(&Claims::new("owner", Scope::Owner, 0, 60)).expect("issue");
        assert_eq!(keys.verify(&forged).expect_err("forged").code(), "invalid_token");
        let expired = keys.issue(&Claims::new("owner", Scope::Owner, 0, -3600)).expect("issue");
        assert_eq!(keys.verify(&expired).expect_err("expired").code(), "token_expired");
        assert_eq!(keys.verify("not.a.jwt").expect_err("garbage").code(), "malformed_token");
    }

    #[test]
    fn tokens_signed_by_earlier_releases_still_verify() {
        // Signed by an independent HS256 implementation (Python's hmac), in the exact format the
        // jsonwebtoken crate of earlier releases wrote: secret "0123456789abcdef0123456789abcdef".
        let earlier = "eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvd25lciIsInNjb3BlIjoib3duZXIiLCJlcG9jaCI6MywiaWF0IjoxNzk2NTI2ODg0LCJleHAiOjQxMDI0NDQ4MDB9.LYRpcliYxHQz54goKq2mwxUCX-j8VAnTVzdKO5GmjnU";
        let keys = Keys::from_secret(b"0123456789abcdef0123456789abcdef");
        let claims = keys.verify(earlier).expect("verifies");
        assert_eq!((claims.sub.as_str(), claims.scope, claims.epoch), ("owner", Scope::Owner, 3));
        // What this release issues has the same shape: the same header, then claims and a MAC.
        let ours = keys.issue(&claims).expect("issue");
        assert!(ours.starts_with("eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvd25lciIsInNjb3BlIjoib3duZXIi"));
        assert_eq!(ours.split('.').count(), 3);
        // One changed byte anywhere is refused.
        let mut tampered = earlier.to_owned();
        tampered.replace_range(60..61, if &earlier[60..61] == "A" { "B" } else { "A" });
        assert!(keys.verify(&tampered).is_err());
    }

    #[test]
    fn only_an_hs256_header_is_accepted() {
        let keys = Keys::from_secret(b"0123456789abcdef0123456789abcdef");
        let token = keys.issue(&Claims::new("owner", Scope::Owner, 0, 60)).expect("issue");
        let (_, rest) = token.split_once('.').expect("header");
        let (payload, _) = rest.split_once('.').expect("payload");
        let signed_with = |header: &str| {
            let signed = format!("{}.{payload}", URL_SAFE_NO_PAD.encode(header));
            let tag =
                hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, b"0123456789abcdef0123456789abcdef"), signed.as_bytes());
            format!("{signed}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
        };
        assert!(keys.verify(&signed_with(r#"{"alg":"HS256","kid":"k1"}"#)).is_ok(), "another HS256 header");
        assert_eq!(keys.verify(&signed_with(r#"{"alg":"none"}"#)).expect_err("none").code(), "invalid_token");
        assert_eq!(keys.verify(&signed_with(r#"{"alg":"HS512"}"#)).expect_err("hs512").code(), "invalid_token");
        assert_eq!(keys.verify(&signed_with("not json")).expect_err("junk").code(), "malformed_token");
        let unsigned = format!("{}.{payload}.", URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#));
        assert!(keys.verify(&unsigned).is_err());
        assert_eq!(keys.verify("a.b").expect_err("two parts").code(), "malformed_token");
        assert_eq!(keys.verify("").expect_err("empty").code(), "malformed_token");
    }

    #[test]
    fn rotation_kills_every_token_and_survives_a_restart_while_sealed_values_stay_readable() {
        let dir = tempfile::tempdir().expect("tmp");
        let mut config = Config::for_test(dir.path());
        config.secret_key = Some("an initial key of at least thirty-two characters".into());
        let keys = Keys::load_or_create(&config).expect("create");
        let before = keys.issue(&Claims::new("owner", Scope::Owner, 0, 60)).expect("issue");
        let sealed = keys.seal("app:1:k", b"value").expect("seal");
        // A token forged with the stolen key file verifies until the rotation.
        let stolen = std::fs::read_to_string(dir.path().join("secret.key")).expect("key file");
        let forged =
            Keys::from_secret(stolen.as_bytes()).issue(&Claims::new("owner", Scope::Owner, 0, 3600)).expect("forge");
        assert!(keys.verify(&forged).is_ok());
        keys.rotate().expect("rotate");
        assert_eq!(keys.verify(&before).expect_err("old").code(), "token_revoked");
        assert_eq!(keys.verify(&forged).expect_err("forged").code(), "token_revoked");
        let after = keys.issue(&Claims::new("owner", Scope::Owner, 0, 60)).expect("issue");
        let reloaded = Keys::load_or_create(&config).expect("reload");
        assert!(reloaded.verify(&after).is_ok(), "the rotated key is the one on disk");
        assert_eq!(reloaded.verify(&forged).expect_err("forged").code(), "invalid_token");
        assert_ne!(std::fs::read_to_string(dir.path().join("secret.key")).expect("key"), stolen);
        assert_eq!(reloaded.open("app:1:k", &sealed).expect("open"), b"value");
        let mode = std::fs::metadata(dir.path().join("data.key")).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn values_sealed_by_an_earlier_release_open_with_the_legacy_key() {
        let dir = tempfile::tempdir().expect("tmp");
        let config = Config::for_test(dir.path());
        let keys = Keys::load_or_create(&config).expect("create");
        let secret = std::fs::read_to_string(dir.path().join("secret.key")).expect("key");
        // Earlier releases sealed with a key derived from the signing key.
        let old = Keys::from_secret(secret.trim().as_bytes()).seal("app:1:k", b"v").expect("seal");
        assert!(keys.open("app:1:k", &old).is_err());
        assert_eq!(keys.open_legacy("app:1:k", &old).expect("legacy"), b"v");
    }
}
