//! The in-memory event hub: per-chat journal events and shell-wide system events, fanned out
//! to SSE subscribers. The writer publishes here only after the events are committed.

pub mod routes;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

/// Queue depth per chat channel; a subscriber that falls further behind catches up from
/// the journal in the database instead of holding anyone else back.
const CHAT_CHANNEL_CAPACITY: usize = 1024;
/// Queue depth of the system channel (no replay: clients reconcile by refetching).
const SYSTEM_CHANNEL_CAPACITY: usize = 256;

/// One committed journal event of a chat.
#[derive(Debug)]
pub struct JournalEvent {
    /// Position in the chat's journal; also the SSE `id:`.
    pub seq: i64,
    /// The event JSON exactly as stored and sent (`{"seq":…,"type":…,…}`).
    pub data: Arc<str>,
}

/// Fan-out of committed events to live subscribers.
#[derive(Debug)]
pub struct Hub {
    chats: Mutex<HashMap<Arc<str>, broadcast::Sender<Arc<JournalEvent>>>>,
    system: broadcast::Sender<Arc<str>>,
    /// Bumped after every commit that changes what the chat list shows.
    list_version: AtomicU64,
    /// Bumped after every writer commit.
    data_version: AtomicU64,
}

impl Default for Hub {
    fn default() -> Self {
        Self {
            chats: Mutex::new(HashMap::new()),
            system: broadcast::channel(SYSTEM_CHANNEL_CAPACITY).0,
            list_version: AtomicU64::new(0),
            data_version: AtomicU64::new(0),
        }
    }
}

impl Hub {
    /// Subscribes to a chat's committed events. Subscribe *before* reading the journal for
    /// replay, then skip anything at or below the last replayed seq.
    pub fn subscribe(&self, chat_id: &str) -> broadcast::Receiver<Arc<JournalEvent>> {
        let mut chats = self.chats.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = chats.get(chat_id) {
            return tx.subscribe();
        }
        let (tx, rx) = broadcast::channel(CHAT_CHANNEL_CAPACITY);
        chats.insert(Arc::from(chat_id), tx);
        rx
    }

    /// Delivers committed events of one chat to its subscribers, if any.
    pub fn publish(&self, chat_id: &str, events: impl IntoIterator<Item = Arc<JournalEvent>>) {
        let mut chats = self.chats.lock().unwrap_or_else(|p| p.into_inner());
        let Some(tx) = chats.get(chat_id) else { return };
        if tx.receiver_count() == 0 {
            chats.remove(chat_id);
            return;
        }
        for event in events {
            // An error only means every receiver went away meanwhile.
            let _ = tx.send(event);
        }
    }

    /// Subscribes to shell-wide system events.
    pub fn subscribe_system(&self) -> broadcast::Receiver<Arc<str>> {
        self.system.subscribe()
    }

    /// Sends a system event (JSON object text) to every shell stream.
    pub fn publish_system(&self, data: impl Into<Arc<str>>) {
        let _ = self.system.send(data.into());
    }

    /// Marks the chat list as changed (called by the writer after a commit).
    pub fn bump_list_version(&self) {
        self.list_version.fetch_add(1, Ordering::Release);
    }

    /// The current chat-list version; read it *before* querying the list.
    pub fn list_version(&self) -> u64 {
        self.list_version.load(Ordering::Acquire)
    }

    /// Marks the data as changed (called by the writer after every commit).
    pub fn bump_data_version(&self) {
        self.data_version.fetch_add(1, Ordering::Release);
    }

    /// The current data version; read it *before* querying.
    pub fn data_version(&self) -> u64 {
        self.data_version.load(Ordering::Acquire)
    }

    /// Number of chats with at least one live channel (for diagnostics and tests).
    pub fn chat_channels(&self) -> usize {
        self.chats.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(seq: i64) -> Arc<JournalEvent> {
        Arc::new(JournalEvent { seq, data: Arc::from(format!("{{\"seq\":{seq}}}")) })
    }

    #[tokio::test]
    async fn publish_reaches_every_subscriber_in_order() {
        let hub = Hub::default();
        let mut a = hub.subscribe("c1");
        let mut b = hub.subscribe("c1");
        hub.publish("c1", [ev(1), ev(2)]);
        for rx in [&mut a, &mut b] {
            assert_eq!(rx.recv().await.expect("1").seq, 1);
            assert_eq!(rx.recv().await.expect("2").seq, 2);
        }
    }

    #[tokio::test]
    async fn channels_without_subscribers_are_dropped() {
        let hub = Hub::default();
        drop(hub.subscribe("c1"));
        assert_eq!(hub.chat_channels(), 1);
        hub.publish("c1", [ev(1)]);
        assert_eq!(hub.chat_channels(), 0);
        hub.publish("nobody", [ev(1)]);
        assert_eq!(hub.chat_channels(), 0);
    }
}
