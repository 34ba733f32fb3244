//! The owner as token checks see it, kept in memory.

use crate::locks::UnpoisonedRw;
use std::sync::RwLock;

/// In-memory copy of the owner's username and token epoch, so token checks need no query.
#[derive(Debug, Default)]
pub struct OwnerCache(RwLock<Option<(String, i64)>>);

impl OwnerCache {
    /// Replaces the cached owner.
    pub fn set(&self, username: String, epoch: i64) {
        *self.0.write_locked() = Some((username, epoch));
    }

    /// Updates only the epoch.
    pub fn set_epoch(&self, epoch: i64) {
        if let Some((_, e)) = self.0.write_locked().as_mut() {
            *e = epoch;
        }
    }

    /// `(username, epoch)` once setup has happened.
    pub fn get(&self) -> Option<(String, i64)> {
        self.0.read_locked().clone()
    }
}
