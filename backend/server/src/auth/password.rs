//! argon2id password hashing, always off the async threads and bounded in parallelism.

use std::sync::Arc;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString, rand_core::OsRng};
use argon2::{Algorithm, Argon2, Params, Version};
use tokio::sync::{OnceCell, Semaphore};

use crate::error::{Error, Result};

/// argon2id memory cost in KiB (the OWASP baseline: 19 MiB, 2 passes, 1 lane).
const MEMORY_KIB: u32 = 19 * 1024;
const PASSES: u32 = 2;
/// Hashes running at once; each holds `MEMORY_KIB` of RAM.
const MAX_PARALLEL_HASHES: usize = 2;

/// Hashes and verifies owner passwords.
#[derive(Clone, Debug)]
pub struct Passwords {
    permits: Arc<Semaphore>,
    /// A hash verified against when the username is unknown, so timing does not reveal it.
    dummy: Arc<OnceCell<String>>,
}

impl Default for Passwords {
    fn default() -> Self {
        Self { permits: Arc::new(Semaphore::new(MAX_PARALLEL_HASHES)), dummy: Arc::new(OnceCell::new()) }
    }
}

fn argon2() -> Argon2<'static> {
    let params = Params::new(MEMORY_KIB, PASSES, 1, None).unwrap_or_default();
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

impl Passwords {
    /// Hashes `password` into a PHC string.
    pub async fn hash(&self, password: String) -> Result<String> {
        let _permit = self.permits.acquire().await.map_err(|_| Error::Internal("hasher closed".into()))?;
        tokio::task::spawn_blocking(move || {
            let salt = SaltString::generate(&mut OsRng);
            argon2()
                .hash_password(password.as_bytes(), &salt)
                .map(|h| h.to_string())
                .map_err(|e| Error::Internal(format!("password hashing failed: {e}")))
        })
        .await
        .map_err(|e| Error::Internal(format!("hashing task failed: {e}")))?
    }

    /// True if `password` matches `hash`. With no hash (unknown user) it still does the work.
    pub async fn verify(&self, password: String, hash: Option<String>) -> Result<bool> {
        let known = hash.is_some();
        let hash = match hash {
            Some(h) => h,
            None => self.dummy.get_or_try_init(|| self.hash("mobius-dummy-password".into())).await?.clone(),
        };
        let _permit = self.permits.acquire().await.map_err(|_| Error::Internal("hasher closed".into()))?;
        let matched = tokio::task::spawn_blocking(move || {
            PasswordHash::new(&hash).is_ok_and(|parsed| argon2().verify_password(password.as_bytes(), &parsed).is_ok())
        })
        .await
        .map_err(|e| Error::Internal(format!("verify task failed: {e}")))?;
        Ok(matched && known)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hashes_verify_and_unknown_users_never_match() {
        let p = Passwords::default();
        let hash = p.hash("correct horse".into()).await.expect("hash");
        assert!(hash.starts_with("$argon2id$"));
        assert!(p.verify("correct horse".into(), Some(hash.clone())).await.expect("verify"));
        assert!(!p.verify("wrong".into(), Some(hash)).await.expect("verify"));
        assert!(!p.verify("mobius-dummy-password".into(), None).await.expect("verify"));
    }
}
