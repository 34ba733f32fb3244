//! In-memory registries of the running turns and of per-chat decision locks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedMutexGuard, mpsc};

use super::turn::TurnCommand;

/// A running turn, as seen from routes.
#[derive(Clone, Debug)]
pub struct TurnHandle {
    pub run_id: String,
    pub commands: mpsc::Sender<TurnCommand>,
}

/// The running turn of each chat (at most one).
#[derive(Debug, Default)]
pub struct Turns(Mutex<HashMap<String, TurnHandle>>);

impl Turns {
    /// Registers the turn of `chat_id`, replacing any stale entry.
    pub fn insert(&self, chat_id: &str, handle: TurnHandle) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(chat_id.to_owned(), handle);
    }

    /// The running turn of `chat_id`, if any.
    pub fn get(&self, chat_id: &str) -> Option<TurnHandle> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).get(chat_id).cloned()
    }

    /// Updates the run id of a chat's turn (a queued message became the next run).
    pub fn set_run(&self, chat_id: &str, run_id: &str) {
        if let Some(h) = self.0.lock().unwrap_or_else(|p| p.into_inner()).get_mut(chat_id) {
            run_id.clone_into(&mut h.run_id);
        }
    }

    /// Removes the entry only if it still belongs to `run_id`.
    pub fn remove(&self, chat_id: &str, run_id: &str) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if map.get(chat_id).is_some_and(|h| h.run_id == run_id) {
            map.remove(chat_id);
        }
    }

    /// Number of chats with a running turn.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// True when no turn runs.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every running turn (for shutdown).
    pub fn all(&self) -> Vec<(String, TurnHandle)> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

/// One async lock per key (a chat id, an app slug), so decisions about one thing never interleave.
#[derive(Debug, Default)]
pub struct KeyedLocks(Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>);

impl KeyedLocks {
    /// Waits for and takes the lock of `chat_id`.
    pub async fn lock(&self, chat_id: &str) -> OwnedMutexGuard<()> {
        let lock = {
            let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
            if map.len() > 1024 {
                map.retain(|_, l| Arc::strong_count(l) > 1);
            }
            map.entry(chat_id.to_owned()).or_default().clone()
        };
        lock.lock_owned().await
    }
}
