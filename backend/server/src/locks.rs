//! One async lock per key (a chat id, an app slug), so decisions about one thing never
//! interleave.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OwnedMutexGuard;

/// Idle locks are forgotten once the map holds more than this many keys.
const MAX_IDLE_LOCKS: usize = 1024;

/// Async locks keyed by name.
#[derive(Debug, Default)]
pub struct KeyedLocks(Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>);

impl KeyedLocks {
    /// Waits for and takes the lock of `key`.
    pub async fn lock(&self, key: &str) -> OwnedMutexGuard<()> {
        let lock = {
            let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
            if map.len() > MAX_IDLE_LOCKS {
                map.retain(|_, l| Arc::strong_count(l) > 1);
            }
            map.entry(key.to_owned()).or_default().clone()
        };
        lock.lock_owned().await
    }
}
