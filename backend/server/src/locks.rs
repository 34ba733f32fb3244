//! One async lock per key (a chat id, an app slug), so decisions about one thing never
//! interleave; and the one way std locks are taken ([`Unpoisoned`], [`UnpoisonedRw`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OwnedMutexGuard;

/// A std lock taken whatever a panicking holder left: every critical section here leaves its
/// data whole, so a poisoned lock is recovered, never unwrapped (one panic must not take every
/// later caller down with it). The only way the server takes a std lock (`clippy.toml`
/// disallows `Mutex::lock`, `RwLock::read` and `RwLock::write` elsewhere).
pub trait Unpoisoned {
    /// The guard a lock gives.
    type Guard<'a>
    where
        Self: 'a;
    /// Takes the lock (a poisoned one too).
    fn locked(&self) -> Self::Guard<'_>;
}

impl<T: ?Sized> Unpoisoned for std::sync::Mutex<T> {
    type Guard<'a>
        = std::sync::MutexGuard<'a, T>
    where
        T: 'a;

    #[allow(clippy::disallowed_methods)]
    fn locked(&self) -> Self::Guard<'_> {
        self.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Reading and writing a std `RwLock` whatever a panicking holder left (see [`Unpoisoned`]).
pub trait UnpoisonedRw<T: ?Sized> {
    /// Takes the lock to read.
    fn read_locked(&self) -> std::sync::RwLockReadGuard<'_, T>;
    /// Takes the lock to write.
    fn write_locked(&self) -> std::sync::RwLockWriteGuard<'_, T>;
}

impl<T: ?Sized> UnpoisonedRw<T> for std::sync::RwLock<T> {
    #[allow(clippy::disallowed_methods)]
    fn read_locked(&self) -> std::sync::RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    #[allow(clippy::disallowed_methods)]
    fn write_locked(&self) -> std::sync::RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Idle locks are forgotten once the map holds more than this many keys.
const MAX_IDLE_LOCKS: usize = 1024;

/// Async locks keyed by name.
#[derive(Debug, Default)]
pub struct KeyedLocks(Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>);

impl KeyedLocks {
    /// Waits for and takes the lock of `key`.
    pub async fn lock(&self, key: &str) -> OwnedMutexGuard<()> {
        let lock = {
            let mut map = self.0.locked();
            if map.len() > MAX_IDLE_LOCKS {
                map.retain(|_, l| Arc::strong_count(l) > 1);
            }
            map.entry(key.to_owned()).or_default().clone()
        };
        lock.lock_owned().await
    }
}
