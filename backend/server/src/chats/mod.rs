//! Chats: CRUD, send / queue / answer / stop, the chat detail with its live message, and
//! the per-chat SSE stream. Every write goes through the writer; turns run in `agent`.

pub mod access;
pub mod apps;
pub mod context;
pub mod goal;
pub mod logs;
mod routes;
pub mod secure_input;
pub mod secure_requests;
pub(crate) mod stream;

use crate::locks::Unpoisoned;
use std::collections::VecDeque;

pub(crate) use routes::deliver_answer;
pub use routes::{open_primed_chat, router};

/// Longest accepted message, in characters.
pub const MAX_MESSAGE_CHARS: usize = 200_000;
/// Default and largest page size of the chat detail.
pub const DEFAULT_PAGE: i64 = 20;
pub const MAX_PAGE: i64 = 200;
/// Deleted chats can be recovered this long.
pub const RECOVERY_WINDOW_MS: i64 = 7 * 24 * 3600 * 1000;
/// Serialized read responses (the chat list, the newest pages of recently read chats), each
/// reused until the writer version it was read at moves on. Small and bounded: a handful of
/// entries, none larger than [`MAX_CACHED_BODY`].
#[derive(Debug, Default)]
pub struct ResponseCache(std::sync::Mutex<VecDeque<(String, u64, bytes::Bytes)>>);

/// Entries kept; the oldest is dropped first.
const CACHED_RESPONSES: usize = 8;
/// Larger bodies are rendered each time rather than held.
const MAX_CACHED_BODY: usize = 1 << 20;

impl ResponseCache {
    /// The body cached under `key` if it was read at `version`.
    pub fn get(&self, key: &str, version: u64) -> Option<bytes::Bytes> {
        let entries = self.0.locked();
        entries.iter().find(|(k, v, _)| k == key && *v == version).map(|(_, _, body)| body.clone())
    }

    /// Stores the body read at `version` (read the version *before* querying).
    pub fn put(&self, key: &str, version: u64, body: bytes::Bytes) {
        if body.len() > MAX_CACHED_BODY {
            return;
        }
        let mut entries = self.0.locked();
        entries.retain(|(k, _, _)| k != key);
        if entries.len() >= CACHED_RESPONSES {
            entries.pop_front();
        }
        entries.push_back((key.to_owned(), version, body));
    }
}
