//! The owner's device credentials the listener recognises, in memory: the hashes of
//! `owner_devices` used within [`DEVICE_TTL`], reloaded after each sign-in and revocation,
//! emptied by sign-out-everywhere. A leaf the shared state can hold without importing the
//! routes side of `devices` (which reaches back into the state).

use std::collections::HashSet;
use std::sync::RwLock;
use std::time::Duration;

use crate::error::Result;
use crate::locks::UnpoisonedRw;

/// A device credential unused this long is no longer honoured (browsers cap cookies at 400 days).
pub const DEVICE_TTL: Duration = Duration::from_secs(400 * 24 * 3600);

/// The credential hashes of the owner's devices, in memory for the listener's check.
#[derive(Debug, Default)]
pub struct KnownDevices(RwLock<HashSet<String>>);

impl KnownDevices {
    /// Reads the devices the database knows (used within [`DEVICE_TTL`]).
    pub async fn reload<'e>(&self, db: impl sqlx::SqliteExecutor<'e>) -> Result<()> {
        let since = crate::db::now_ms() - i64::try_from(DEVICE_TTL.as_millis()).unwrap_or(i64::MAX);
        let hashes = crate::db::owner::device_hashes(db, since).await?;
        *self.0.write_locked() = hashes.into_iter().collect();
        Ok(())
    }

    /// Forgets every device (sign out everywhere).
    pub fn clear(&self) {
        self.0.write_locked().clear();
    }

    /// True when `digest` is a known device's.
    pub(crate) fn contains(&self, digest: &str) -> bool {
        self.0.read_locked().contains(digest)
    }
}
