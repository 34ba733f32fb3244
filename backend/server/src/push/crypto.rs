//! The cryptography of Web Push, on `ring` (already linked for rustls): the server's VAPID
//! identity (RFC 8292) and the `aes128gcm` message encryption (RFC 8291, RFC 8188).
//!
//! Why not the `web-push` crate: its encryption comes from the `ece` crate, whose only
//! backend is OpenSSL, and this server links no OpenSSL (see ARCHITECTURE.md, Decisions).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::aead::{AES_128_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::agreement::{self, ECDH_P256, EphemeralPrivateKey, UnparsedPublicKey};
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use ring::{hkdf, hmac};

use crate::error::{Error, Result};

/// Length of an uncompressed P-256 point (`0x04 ‖ x ‖ y`).
pub const P256_POINT_BYTES: usize = 65;
/// Length of the subscription's authentication secret.
pub const AUTH_SECRET_BYTES: usize = 16;
/// The record size announced in the header: one record holds the whole message.
const RECORD_SIZE: u32 = 4096;
/// Header: salt (16), record size (4), key id length (1), key id (65).
const HEADER_BYTES: usize = 16 + 4 + 1 + P256_POINT_BYTES;
/// AES-GCM tag.
const TAG_BYTES: usize = 16;
/// The largest plaintext one record carries (the record size less tag and padding delimiter).
pub const MAX_PLAINTEXT_BYTES: usize = RECORD_SIZE as usize - TAG_BYTES - 1 - HEADER_BYTES;
/// A VAPID token stays valid this long (RFC 8292 allows up to 24 h).
pub const VAPID_TOKEN_TTL_SECS: i64 = 12 * 3600;

/// The server's VAPID key pair (ECDSA P-256), kept as PKCS#8 PEM.
pub struct Vapid {
    pair: EcdsaKeyPair,
    /// base64url (no padding) of the uncompressed public point: what browsers subscribe with.
    public_b64: String,
}

impl std::fmt::Debug for Vapid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vapid").field("public", &self.public_b64).finish_non_exhaustive()
    }
}

impl Vapid {
    /// Reads the key at `path`, creating it (0600, its folder 0700) the first time.
    pub fn load_or_create(path: &Path) -> Result<Self> {
        match std::fs::read_to_string(path) {
            Ok(pem) => Self::from_pem(&pem),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let rng = SystemRandom::new();
                let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
                    .map_err(|_| Error::Internal("cannot generate the VAPID key".into()))?;
                let pem = to_pem(pkcs8.as_ref());
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                    std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
                }
                // Written aside, then linked into place: a reader never sees a half-written key,
                // and of two callers racing on first use, the one that loses reads the winner's.
                let mut nonce = [0u8; 8];
                rng.fill(&mut nonce).map_err(|_| Error::Internal("no randomness".into()))?;
                let aside = path.with_extension(format!("{}.tmp", URL_SAFE_NO_PAD.encode(nonce)));
                let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&aside)?;
                file.write_all(pem.as_bytes())?;
                file.sync_all()?;
                let linked = std::fs::hard_link(&aside, path);
                let _ = std::fs::remove_file(&aside);
                match linked {
                    Ok(()) => Self::from_pem(&pem),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        Self::from_pem(&std::fs::read_to_string(path)?)
                    }
                    Err(e) => Err(e.into()),
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Parses a PKCS#8 PEM private key.
    pub fn from_pem(pem: &str) -> Result<Self> {
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).map(str::trim).collect();
        let der = STANDARD.decode(body).map_err(|_| Error::Internal("the VAPID key file is not PEM".into()))?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &SystemRandom::new())
            .map_err(|_| Error::Internal("the VAPID key file holds no P-256 key".into()))?;
        let public_b64 = URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
        Ok(Self { pair, public_b64 })
    }

    /// The public key as browsers take it (`applicationServerKey`).
    pub fn public_key(&self) -> &str {
        &self.public_b64
    }

    /// The `Authorization` header value for a push to `endpoint`'s origin (`vapid t=…, k=…`).
    pub fn authorization(&self, audience: &str, subject: &str, now_secs: i64) -> Result<String> {
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = serde_json::json!({ "aud": audience, "exp": now_secs + VAPID_TOKEN_TTL_SECS, "sub": subject });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signing_input = format!("{header}.{claims}");
        let signature = self
            .pair
            .sign(&SystemRandom::new(), signing_input.as_bytes())
            .map_err(|_| Error::Internal("cannot sign the VAPID token".into()))?;
        Ok(format!("vapid t={signing_input}.{}, k={}", URL_SAFE_NO_PAD.encode(signature.as_ref()), self.public_b64))
    }
}

fn to_pem(der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let mut pem = String::from("-----BEGIN PRIVATE KEY-----\n");
    for line in b64.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str("-----END PRIVATE KEY-----\n");
    pem
}

/// A subscription's keys, decoded and checked.
#[derive(Clone, Debug)]
pub struct ClientKeys {
    /// The browser's uncompressed P-256 point.
    pub p256dh: [u8; P256_POINT_BYTES],
    pub auth: [u8; AUTH_SECRET_BYTES],
}

impl ClientKeys {
    /// Decodes `p256dh` and `auth` (base64url, padded or not) as a browser sends them.
    pub fn decode(p256dh: &str, auth: &str) -> Option<Self> {
        let decode = |s: &str| URL_SAFE_NO_PAD.decode(s.trim().trim_end_matches('=')).ok();
        let p256dh: [u8; P256_POINT_BYTES] = decode(p256dh)?.try_into().ok()?;
        let auth: [u8; AUTH_SECRET_BYTES] = decode(auth)?.try_into().ok()?;
        // An uncompressed point; whether it is on the curve is checked by the key agreement.
        (p256dh[0] == 4).then_some(Self { p256dh, auth })
    }
}

/// Encrypts `plaintext` for a subscription as one `aes128gcm` record (RFC 8291 §4 with an
/// ephemeral key pair and a random salt). Errors on a plaintext over [`MAX_PLAINTEXT_BYTES`]
/// or a public key that is not a P-256 point.
pub fn encrypt(keys: &ClientKeys, plaintext: &[u8]) -> Result<Vec<u8>> {
    let rng = SystemRandom::new();
    let mut salt = [0u8; 16];
    rng.fill(&mut salt).map_err(|_| Error::Internal("no randomness".into()))?;
    let private =
        EphemeralPrivateKey::generate(&ECDH_P256, &rng).map_err(|_| Error::Internal("no randomness".into()))?;
    let public = private.compute_public_key().map_err(|_| Error::Internal("ECDH key".into()))?;
    let as_public: [u8; P256_POINT_BYTES] =
        public.as_ref().try_into().map_err(|_| Error::Internal("ECDH public key length".into()))?;
    let ecdh_secret = agreement::agree_ephemeral(private, &UnparsedPublicKey::new(&ECDH_P256, &keys.p256dh), |s| {
        <[u8; 32]>::try_from(s).ok()
    })
    .ok()
    .flatten()
    .ok_or_else(|| Error::bad_request("invalid_subscription", "The subscription's key is not a P-256 point."))?;
    seal(&ecdh_secret, &as_public, keys, &salt, plaintext)
}

/// RFC 8291 §3.3–3.4 and RFC 8188 §2 from the ECDH secret on: deterministic, so the RFC's
/// example can check it.
pub fn seal(
    ecdh_secret: &[u8; 32],
    as_public: &[u8; P256_POINT_BYTES],
    keys: &ClientKeys,
    salt: &[u8; 16],
    plaintext: &[u8],
) -> Result<Vec<u8>> {
    if plaintext.len() > MAX_PLAINTEXT_BYTES {
        return Err(Error::too_large("push_too_large", "The notification is too large to push."));
    }
    // IKM = HKDF(auth, ecdh_secret, "WebPush: info\0" ‖ ua_public ‖ as_public, 32)
    let mut key_info = Vec::with_capacity(14 + 2 * P256_POINT_BYTES);
    key_info.extend_from_slice(b"WebPush: info\0");
    key_info.extend_from_slice(&keys.p256dh);
    key_info.extend_from_slice(as_public);
    let ikm: [u8; 32] = hkdf_expand(&keys.auth, ecdh_secret, &key_info)?;
    let cek: [u8; 16] = hkdf_expand(salt, &ikm, b"Content-Encoding: aes128gcm\0")?;
    let nonce: [u8; 12] = hkdf_expand(salt, &ikm, b"Content-Encoding: nonce\0")?;
    let key = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &cek).map_err(|_| Error::Internal("AES key".into()))?);
    // One record, the last: the plaintext then the delimiter 0x02 (no further padding).
    let mut out = Vec::with_capacity(HEADER_BYTES + plaintext.len() + 1 + TAG_BYTES);
    out.extend_from_slice(salt);
    out.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    out.push(P256_POINT_BYTES as u8);
    out.extend_from_slice(as_public);
    let mut record = Vec::with_capacity(plaintext.len() + 1 + TAG_BYTES);
    record.extend_from_slice(plaintext);
    record.push(2);
    key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut record)
        .map_err(|_| Error::Internal("AES-GCM".into()))?;
    out.extend_from_slice(&record);
    Ok(out)
}

/// HKDF-SHA-256 (extract with `salt`, expand with `info`) to `N` bytes.
fn hkdf_expand<const N: usize>(salt: &[u8], ikm: &[u8], info: &[u8]) -> Result<[u8; N]> {
    struct Len(usize);
    impl hkdf::KeyType for Len {
        fn len(&self) -> usize {
            self.0
        }
    }
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, salt).extract(ikm);
    let mut out = [0u8; N];
    let infos = [info];
    prk.expand(&infos, Len(N)).and_then(|okm| okm.fill(&mut out)).map_err(|_| Error::Internal("HKDF".into()))?;
    Ok(out)
}

/// A random single-use secret (base64url) and the hash it is looked up by.
pub fn new_secret() -> Result<(String, [u8; 32])> {
    let mut raw = [0u8; 32];
    SystemRandom::new().fill(&mut raw).map_err(|_| Error::Internal("no randomness".into()))?;
    let secret = URL_SAFE_NO_PAD.encode(raw);
    Ok((secret.clone(), secret_hash(&secret)))
}

/// The lookup key of a secret (HMAC is not needed: the secret itself is random).
pub fn secret_hash(secret: &str) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, secret.as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(digest.as_ref());
    out
}

/// A stable, opaque `Topic` header value (≤ 32 base64url characters) for `key`.
pub fn topic(key: &str) -> String {
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, b"mobius push topic"), key.as_bytes());
    URL_SAFE_NO_PAD.encode(&tag.as_ref()[..18])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(s).expect("base64url")
    }

    /// RFC 8291 Appendix A (the sender's static key stands in for the ephemeral one).
    #[test]
    fn the_rfc_8291_example_encrypts_byte_for_byte() {
        let h = |s: &str| hex::decode(s).expect("hex");
        let ua_public = h(
            "042571b2becdfde360551aaf1ed0f4cd366c11cebe555f89bcb7b186a53339173168ece2ebe018597bd30479b86e3c8f8eced577ca59187e9246990db682008b0e",
        );
        let as_private = h("c9f58f89813e9f8e872e71f42aa64e1757c9254dcc62b72ddc010bb4043ea11c");
        let as_public: [u8; 65] = h("04fe33f4ab0dea71914db55823f73b54948f41306d920732dbb9a59a53286482200e597a7b7bc260ba1c227998580992e93973002f3012a28ae8f06bbb78e5ec0f").try_into().expect("65");
        let keys = ClientKeys {
            p256dh: ua_public.clone().try_into().expect("65"),
            auth: h("05305932a1c7eabe13b6cec9fda48882").try_into().expect("16"),
        };
        let secret = p256::SecretKey::from_slice(&as_private).expect("scalar");
        let peer = p256::PublicKey::from_sec1_bytes(&ua_public).expect("point");
        let shared = p256::ecdh::diffie_hellman(secret.to_nonzero_scalar(), peer.as_affine());
        let ecdh: [u8; 32] = shared.raw_secret_bytes().as_slice().try_into().expect("32");
        let salt: [u8; 16] = h("0c6bfaadad67958803092d454676f397").try_into().expect("16");
        let body = seal(&ecdh, &as_public, &keys, &salt, b"When I grow up, I want to be a watermelon").expect("seal");
        assert_eq!(
            hex::encode(body),
            "0c6bfaadad67958803092d454676f397000010004104fe33f4ab0dea71914db55823f73b54948f41306d920732dbb9a59a53286482200e597a7b7bc260ba1c227998580992e93973002f3012a28ae8f06bbb78e5ec0ff297de5b429bba7153d3a4ae0caa091fd425f3b4b5414add8ab37a19c1bbb05cf5cb5b2a2e0562d558635641ec52812c6c8ff42e95ccb86be7cd"
        );
    }

    #[test]
    fn the_vapid_key_is_created_once_private_and_reread() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("push/vapid.pem");
        let first = Vapid::load_or_create(&path).expect("create");
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).expect("meta").permissions());
        assert_eq!(mode & 0o777, 0o600);
        let again = Vapid::load_or_create(&path).expect("read");
        assert_eq!(first.public_key(), again.public_key());
        assert_eq!(b64(first.public_key()).len(), 65);
        let header = first.authorization("https://push.example", "mailto:admin@example.com", 1000).expect("sign");
        let (t, k) = header.strip_prefix("vapid t=").and_then(|r| r.split_once(", k=")).expect("shape");
        assert_eq!(k, first.public_key());
        let (input, sig) = t.rsplit_once('.').expect("jwt");
        let public = ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, b64(k));
        public.verify(input.as_bytes(), &b64(sig)).expect("signature verifies");
    }

    #[test]
    fn bad_client_keys_are_refused() {
        assert!(ClientKeys::decode("AAAA", "BTBZMqHH6r4Tts7J_aSIgg").is_none());
        assert!(ClientKeys::decode(&URL_SAFE_NO_PAD.encode([5u8; 65]), "BTBZMqHH6r4Tts7J_aSIgg").is_none());
        let bogus = ClientKeys { p256dh: [4u8; 65], auth: [0; 16] };
        assert!(encrypt(&bogus, b"x").is_err(), "not a curve point");
        assert_eq!(topic("chat:c1").len(), 24);
    }
}
