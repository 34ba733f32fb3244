//! The running turn of each chat (at most one), as handles routes control it through.

use std::collections::HashMap;
use std::sync::Mutex;

use super::handle::TurnHandle;
use crate::locks::Unpoisoned;
use crate::protocol::{ChatId, RunId};

/// The running turn of each chat, and a signal each time one ends.
#[derive(Debug, Default)]
pub struct Turns(Mutex<HashMap<ChatId, TurnHandle>>, tokio::sync::Notify);

impl Turns {
    /// Registers the turn of `chat_id`, replacing any stale entry.
    pub fn insert(&self, chat_id: &ChatId, handle: TurnHandle) {
        self.0.locked().insert(chat_id.clone(), handle);
    }

    /// The running turn of `chat_id`, if any.
    pub fn get(&self, chat_id: &str) -> Option<TurnHandle> {
        self.0.locked().get(chat_id).cloned()
    }

    /// Updates the run id of a chat's turn (a queued message became the next run).
    pub fn set_run(&self, chat_id: &str, run_id: &RunId) {
        if let Some(h) = self.0.locked().get_mut(chat_id) {
            h.set_run(run_id);
        }
    }

    /// Records which run's process serves the chat's current turn (a kept process: its agent
    /// token names the run that started it); `None` for a process of the turn's own.
    pub fn set_process(&self, chat_id: &str, origin: Option<&RunId>) {
        if let Some(h) = self.0.locked().get_mut(chat_id) {
            h.process = origin.cloned();
        }
    }

    /// True when the running turn of `chat_id` runs on the process `origin` started.
    pub fn served_by(&self, chat_id: &str, origin: &str) -> bool {
        self.0.locked().get(chat_id).is_some_and(|h| h.process.as_ref().is_some_and(|p| p.as_str() == origin))
    }

    /// Marks the chat's turn as waiting for a free agent (`None`: it has its slot).
    pub fn set_waiting(&self, chat_id: &str, waiting: Option<crate::protocol::Waiting>) {
        if let Some(h) = self.0.locked().get_mut(chat_id) {
            h.waiting = waiting;
        }
    }

    /// Whether the chat's turn waits for a free agent, and on what.
    pub fn waiting(&self, chat_id: &str) -> Option<crate::protocol::Waiting> {
        self.0.locked().get(chat_id).and_then(|h| h.waiting)
    }

    /// Removes the entry only if it still belongs to `run_id`.
    pub fn remove(&self, chat_id: &str, run_id: &RunId) {
        let mut map = self.0.locked();
        if map.get(chat_id).is_some_and(|h| h.run_id() == run_id) {
            map.remove(chat_id);
        }
        drop(map);
        self.1.notify_waiters();
    }

    /// Returns once no turn runs (at once when none does).
    pub async fn none_running(&self) {
        loop {
            let ended = self.1.notified();
            if self.is_empty() {
                return;
            }
            ended.await;
        }
    }

    /// The chat whose turn runs, when exactly one does.
    pub fn only_running(&self) -> Option<ChatId> {
        let map = self.0.locked();
        (map.len() == 1).then(|| map.keys().next().cloned()).flatten()
    }

    /// Number of chats with a running turn.
    pub fn len(&self) -> usize {
        self.0.locked().len()
    }

    /// True when no turn runs.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
