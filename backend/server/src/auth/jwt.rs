//! JWT (HS256) issue and verification; the signing key lives in `DATA_DIR/secret.key`.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use rand::RngCore;
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::error::{Error, Result};

/// What a token may be used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The owner's login token.
    Owner,
    /// A mini-app's token (storage and app routes only).
    App,
    /// An agent run's token: owner powers, valid only while its run is running.
    Agent,
    /// An embedded chat's session (the nested chat frame of an app): one chat, a few
    /// operations, 15 minutes, bound to its embed instance and a live grant row.
    ChatEmbed,
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
        }
    }
}

/// Signing and verification keys.
#[derive(Clone)]
pub struct Keys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    /// Seals app secrets at rest (derived from the same server secret, for another purpose).
    sealing: [u8; 32],
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(..)")
    }
}

/// Length of a generated key, in random bytes (written hex-encoded).
const GENERATED_KEY_BYTES: usize = 48;

impl Keys {
    /// Uses `MOBIUS_SECRET_KEY` if set, else reads `DATA_DIR/secret.key`, creating it (0600) on first boot.
    pub fn load_or_create(config: &Config) -> Result<Self> {
        let secret = match &config.secret_key {
            Some(key) => key.clone(),
            None => read_or_create_key_file(&config.data_dir.join("secret.key"))?,
        };
        Ok(Self::from_secret(secret.as_bytes()))
    }

    /// Keys from raw secret bytes.
    pub fn from_secret(secret: &[u8]) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 5;
        validation.set_required_spec_claims(&["exp", "sub"]);
        use sha2::{Digest, Sha256};
        let sealing = Sha256::new().chain_update(b"mobius app secrets v1\0").chain_update(secret).finalize().into();
        Self {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            validation,
            sealing,
        }
    }

    /// Encrypts `value` for `context` (a random nonce, then ChaCha20-Poly1305 ciphertext and tag).
    pub fn seal(&self, context: &str, value: &[u8]) -> Result<Vec<u8>> {
        use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
        let key = LessSafeKey::new(
            UnboundKey::new(&CHACHA20_POLY1305, &self.sealing).map_err(|_| Error::Internal("sealing key".into()))?,
        );
        let mut nonce = [0u8; NONCE_LEN];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let mut sealed = value.to_vec();
        key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(context.as_bytes()), &mut sealed)
            .map_err(|_| Error::Internal("sealing failed".into()))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// Decrypts what [`Keys::seal`] made for the same `context`.
    pub fn open(&self, context: &str, sealed: &[u8]) -> Result<Vec<u8>> {
        use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
        let key = LessSafeKey::new(
            UnboundKey::new(&CHACHA20_POLY1305, &self.sealing).map_err(|_| Error::Internal("sealing key".into()))?,
        );
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

    /// Signs `claims`.
    pub fn issue(&self, claims: &Claims) -> Result<String> {
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &self.encoding)
            .map_err(|e| Error::Internal(format!("token signing failed: {e}")))
    }

    /// Verifies signature, algorithm and expiry; maps failures to 401 codes.
    pub fn verify(&self, token: &str) -> Result<Claims> {
        match jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation) {
            Ok(data) => Ok(data.claims),
            Err(e) => Err(match e.kind() {
                ErrorKind::ExpiredSignature => {
                    Error::unauthorized("token_expired", "Your session has expired; sign in again.")
                }
                ErrorKind::InvalidSignature | ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => {
                    Error::unauthorized("invalid_token", "This token was not issued by this server.")
                }
                _ => Error::unauthorized("malformed_token", "The token is malformed."),
            }),
        }
    }
}

fn read_or_create_key_file(path: &Path) -> Result<String> {
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
    let mut bytes = [0u8; GENERATED_KEY_BYTES];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let key = hex::encode(bytes);
    match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path) {
        Ok(mut file) => {
            file.write_all(key.as_bytes())?;
            file.sync_all()?;
            Ok(key)
        }
        // Another process won the race: use its key.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_or_create_key_file(path),
        Err(e) => Err(e.into()),
    }
}

/// Seconds since the unix epoch.
pub fn unix_now() -> i64 {
    crate::db::now_ms() / 1000
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
}
