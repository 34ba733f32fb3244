//! argon2id password hashing, always off the async threads and bounded in parallelism.

use std::sync::Arc;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString, rand_core::OsRng};
use argon2::{Algorithm, Argon2, Params, Version};
use tokio::sync::{OnceCell, Semaphore};

use crate::error::{Error, Result};

/// argon2id memory cost in KiB (the OWASP baseline: 19 MiB, 2 passes, 1 lane).
const MEMORY_KIB: u32 = 19 * 1024;
const PASSES: u32 = 2;
/// Hashes running at once for attempts without a device credential (setup, sign-ins from new
/// browsers, and every guess); each holds `MEMORY_KIB` of RAM.
const MAX_PARALLEL_HASHES: usize = 1;
/// Hashes running at once for sign-ins that present a known device credential: their own lane,
/// so they never queue behind a burst of guesses.
const MAX_PARALLEL_DEVICE_HASHES: usize = 1;

/// Whose attempt a verification serves (each has its own bounded lane).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// Anyone without a known device credential.
    Anyone,
    /// A browser that presented a known device credential.
    KnownDevice,
}

/// Hashes and verifies owner passwords.
#[derive(Clone, Debug)]
pub struct Passwords {
    permits: Arc<Semaphore>,
    device_permits: Arc<Semaphore>,
    /// A hash verified against when the username is unknown, so timing does not reveal it.
    dummy: Arc<OnceCell<String>>,
}

impl Default for Passwords {
    fn default() -> Self {
        Self {
            permits: Arc::new(Semaphore::new(MAX_PARALLEL_HASHES)),
            device_permits: Arc::new(Semaphore::new(MAX_PARALLEL_DEVICE_HASHES)),
            dummy: Arc::new(OnceCell::new()),
        }
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
    pub async fn verify(&self, password: String, hash: Option<String>, lane: Lane) -> Result<bool> {
        let known = hash.is_some();
        let hash = match hash {
            Some(h) => h,
            None => self.dummy.get_or_try_init(|| self.hash("mobius-dummy-password".into())).await?.clone(),
        };
        let permits = match lane {
            Lane::Anyone => &self.permits,
            Lane::KnownDevice => &self.device_permits,
        };
        let _permit = permits.acquire().await.map_err(|_| Error::Internal("hasher closed".into()))?;
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
        assert!(p.verify("correct horse".into(), Some(hash.clone()), Lane::Anyone).await.expect("verify"));
        assert!(!p.verify("wrong".into(), Some(hash), Lane::KnownDevice).await.expect("verify"));
        assert!(!p.verify("mobius-dummy-password".into(), None, Lane::Anyone).await.expect("verify"));
    }

    #[tokio::test]
    async fn a_known_device_does_not_wait_behind_other_attempts() {
        let p = Passwords::default();
        let hash = p.hash("correct horse".into()).await.expect("hash");
        // Guesses hold every hashing slot open to anyone.
        let busy = p.permits.clone().acquire_many_owned(MAX_PARALLEL_HASHES as u32).await.expect("permits");
        let device = p.verify("correct horse".into(), Some(hash), Lane::KnownDevice);
        let verified = tokio::time::timeout(std::time::Duration::from_secs(60), device).await;
        assert!(verified.expect("the device's sign-in was not held up").expect("verify"));
        drop(busy);
    }
}
