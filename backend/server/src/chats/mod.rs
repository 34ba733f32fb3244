//! Chats: CRUD, send / queue / answer / stop, the chat detail with its live message, and
//! the per-chat SSE stream. Every write goes through the writer; turns run in `agent`.

mod routes;
pub(crate) mod stream;

use std::sync::atomic::{AtomicI64, Ordering};

pub use routes::router;

use crate::db::now_ms;

/// Longest accepted message, in characters.
pub const MAX_MESSAGE_CHARS: usize = 200_000;
/// Default and largest page size of the chat detail.
pub const DEFAULT_PAGE: i64 = 20;
pub const MAX_PAGE: i64 = 200;
/// Deleted chats can be recovered this long.
pub const RECOVERY_WINDOW_MS: i64 = 7 * 24 * 3600 * 1000;
/// Tombstones are purged at most this often.
const PURGE_EVERY_MS: i64 = 3600 * 1000;

/// When tombstones were last purged.
#[derive(Debug, Default)]
pub struct PurgeClock(AtomicI64);

impl PurgeClock {
    /// True (and resets the clock) when a purge is due.
    pub fn due(&self) -> bool {
        let now = now_ms();
        let last = self.0.load(Ordering::Relaxed);
        now - last >= PURGE_EVERY_MS && self.0.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }
}

/// The serialized chat list, reused until the writer reports a change.
#[derive(Debug, Default)]
pub struct ListCache(std::sync::Mutex<Option<(u64, bytes::Bytes)>>);

impl ListCache {
    /// The cached body if it is still current.
    pub fn get(&self, version: u64) -> Option<bytes::Bytes> {
        match &*self.0.lock().unwrap_or_else(|p| p.into_inner()) {
            Some((v, body)) if *v == version => Some(body.clone()),
            _ => None,
        }
    }

    /// Stores the body read at `version`.
    pub fn put(&self, version: u64, body: bytes::Bytes) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some((version, body));
    }
}

/// Chat ids are client-minted UUIDs (or similar): short, URL-safe.
pub fn valid_chat_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}
