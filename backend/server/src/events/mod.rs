//! The in-memory event hub: per-chat journal events and shell-wide system events, fanned out
//! to SSE subscribers. The writer publishes here only after the events are committed.

pub mod routes;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, watch};

use crate::error::{Error, Result};
use crate::locks::Unpoisoned;

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

/// A system event: its JSON, and its server-sent-events frame (`data: …`), rendered once for
/// every open stream rather than by each.
#[derive(Debug)]
pub struct SystemFrame {
    pub json: Box<str>,
    pub sse: bytes::Bytes,
}

impl SystemFrame {
    /// The frame of the JSON object `json` (a line of `data:` per line of it, then a blank line).
    pub fn new(json: impl Into<Box<str>>) -> Self {
        let json = json.into();
        let mut sse = String::with_capacity(json.len() + 8);
        for line in json.split('\n') {
            sse.push_str("data: ");
            sse.push_str(line);
            sse.push('\n');
        }
        sse.push('\n');
        Self { json, sse: sse.into() }
    }
}

/// Fan-out of committed events to live subscribers.
#[derive(Debug)]
pub struct Hub {
    chats: Mutex<HashMap<Arc<str>, broadcast::Sender<Arc<JournalEvent>>>>,
    system: broadcast::Sender<Arc<SystemFrame>>,
    /// Bumped after every commit that changes what the chat list shows.
    list_version: AtomicU64,
    /// Bumped after every writer commit.
    data_version: AtomicU64,
    /// Bumped after every commit that changes a schedule (the scheduler waits on it).
    schedules: watch::Sender<u64>,
}

impl Default for Hub {
    fn default() -> Self {
        Self {
            chats: Mutex::new(HashMap::new()),
            system: broadcast::channel(SYSTEM_CHANNEL_CAPACITY).0,
            list_version: AtomicU64::new(0),
            data_version: AtomicU64::new(0),
            schedules: watch::channel(0).0,
        }
    }
}

/// A live subscription to one chat's events; the chat's channel goes with its last one.
#[derive(Debug)]
pub struct ChatSubscription {
    hub: Arc<Hub>,
    chat_id: Arc<str>,
    rx: Option<broadcast::Receiver<Arc<JournalEvent>>>,
}

impl ChatSubscription {
    /// The next committed event (see `broadcast::Receiver::recv`).
    pub async fn recv(&mut self) -> std::result::Result<Arc<JournalEvent>, broadcast::error::RecvError> {
        match self.rx.as_mut() {
            Some(rx) => rx.recv().await,
            None => Err(broadcast::error::RecvError::Closed),
        }
    }
}

impl Drop for ChatSubscription {
    fn drop(&mut self) {
        drop(self.rx.take());
        let mut chats = self.hub.chats.locked();
        if chats.get(&*self.chat_id).is_some_and(|tx| tx.receiver_count() == 0) {
            chats.remove(&*self.chat_id);
        }
    }
}

impl Hub {
    /// Subscribes to a chat's committed events. Subscribe *before* reading the journal for
    /// replay, then skip anything at or below the last replayed seq.
    pub fn subscribe(self: &Arc<Self>, chat_id: &str) -> ChatSubscription {
        let mut chats = self.chats.locked();
        let (chat_id, rx) = match chats.get_key_value(chat_id) {
            Some((key, tx)) => (key.clone(), tx.subscribe()),
            None => {
                let (tx, rx) = broadcast::channel(CHAT_CHANNEL_CAPACITY);
                let key: Arc<str> = Arc::from(chat_id);
                chats.insert(key.clone(), tx);
                (key, rx)
            }
        };
        ChatSubscription { hub: self.clone(), chat_id, rx: Some(rx) }
    }

    /// Delivers committed events of one chat to its subscribers, if any.
    pub fn publish(&self, chat_id: &str, events: impl IntoIterator<Item = Arc<JournalEvent>>) {
        let mut chats = self.chats.locked();
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
    pub fn subscribe_system(&self) -> broadcast::Receiver<Arc<SystemFrame>> {
        self.system.subscribe()
    }

    /// Sends a system event (JSON object text) to every shell stream.
    pub fn publish_system(&self, data: impl Into<Box<str>>) {
        // Nobody listens: nothing to render.
        if self.system.receiver_count() > 0 {
            let _ = self.system.send(Arc::new(SystemFrame::new(data)));
        }
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

    /// Marks the schedules as changed (called by the writer after a commit): wakes the
    /// scheduler and tells open shells.
    pub fn bump_schedules(&self) {
        self.schedules.send_modify(|v| *v = v.wrapping_add(1));
        if let Ok(data) = serde_json::to_string(&crate::protocol::SystemEvent::SchedulesChanged) {
            self.publish_system(data);
        }
    }

    /// The schedule version (bumped by [`Hub::bump_schedules`]); read it *before* querying.
    pub fn schedules_version(&self) -> u64 {
        *self.schedules.borrow()
    }

    /// Follows schedule changes (the scheduler's wake-up).
    pub fn watch_schedules(&self) -> watch::Receiver<u64> {
        self.schedules.subscribe()
    }

    /// Number of chats with at least one live channel (for diagnostics and tests).
    pub fn chat_channels(&self) -> usize {
        self.chats.locked().len()
    }
}

/// Caps open event streams (chat and system), per client address and in all.
#[derive(Debug)]
pub struct StreamLimits {
    max: usize,
    max_per_address: usize,
    open: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

/// An open stream's place under [`StreamLimits`]; given back when dropped.
#[derive(Debug)]
pub struct StreamSlot {
    limits: Arc<StreamLimits>,
    key: IpAddr,
}

impl StreamLimits {
    /// At most `max` streams, `max_per_address` of them from one client address.
    pub fn new(max: usize, max_per_address: usize) -> Arc<Self> {
        Arc::new(Self { max, max_per_address, open: Mutex::new((0, HashMap::new())) })
    }

    /// A slot for a stream of the client keyed `key`, or 503 `too_many_streams`.
    pub fn acquire(self: &Arc<Self>, key: IpAddr) -> Result<StreamSlot> {
        let mut open = self.open.locked();
        let (total, per_address) = &mut *open;
        let mine = per_address.get(&key).copied().unwrap_or(0);
        if mine >= self.max_per_address || *total >= self.max {
            let whose = if mine >= self.max_per_address { "from this address" } else { "on this server" };
            return Err(Error::Client {
                status: axum::http::StatusCode::SERVICE_UNAVAILABLE,
                code: "too_many_streams",
                message: format!("Too many event streams are open {whose}; close one and try again."),
                retry_after_secs: Some(5),
            });
        }
        *total += 1;
        per_address.insert(key, mine + 1);
        Ok(StreamSlot { limits: self.clone(), key })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.limits.open.locked();
        let (total, per_address) = &mut *open;
        *total = total.saturating_sub(1);
        if let Some(n) = per_address.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                per_address.remove(&self.key);
            }
        }
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
        let hub = Arc::new(Hub::default());
        let mut a = hub.subscribe("c1");
        let mut b = hub.subscribe("c1");
        hub.publish("c1", [ev(1), ev(2)]);
        for rx in [&mut a, &mut b] {
            assert_eq!(rx.recv().await.expect("1").seq, 1);
            assert_eq!(rx.recv().await.expect("2").seq, 2);
        }
    }

    #[tokio::test]
    async fn a_chat_channel_goes_with_its_last_subscriber() {
        let hub = Arc::new(Hub::default());
        let a = hub.subscribe("c1");
        let b = hub.subscribe("c1");
        drop(hub.subscribe("c2"));
        assert_eq!(hub.chat_channels(), 1, "c2 had one subscriber, now none");
        drop(a);
        assert_eq!(hub.chat_channels(), 1);
        drop(b);
        assert_eq!(hub.chat_channels(), 0);
        hub.publish("nobody", [ev(1)]);
        assert_eq!(hub.chat_channels(), 0);
    }

    #[test]
    fn stream_slots_are_capped_and_given_back() {
        let limits = StreamLimits::new(3, 2);
        let a: IpAddr = "192.0.2.1".parse().expect("ip");
        let b: IpAddr = "192.0.2.2".parse().expect("ip");
        let first = limits.acquire(a).expect("1");
        let _second = limits.acquire(a).expect("2");
        assert!(limits.acquire(a).is_err(), "per address");
        let _third = limits.acquire(b).expect("3");
        assert!(limits.acquire("192.0.2.3".parse().expect("ip")).is_err(), "in all");
        drop(first);
        assert!(limits.acquire(a).is_ok());
    }
}
