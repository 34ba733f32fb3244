//! Notifications: what the owner is told, stored in the notification centre and pushed to
//! every subscribed device with Web Push (RFC 8030/8291/8292).
//!
//! Anyone who wants to tell the owner something builds a [`Notice`] and calls
//! [`Push::notify`]. That never waits: the notice goes into a bounded queue and one worker
//! task (`worker.rs`) stores it (through the writer) and decides whether to push (per-kind
//! switches, presence). Encrypting and sending happen in a child process (`deliver.rs`,
//! `mobius push-deliver`) started on a burst's first push and let go after a short idle, so the
//! server never holds the HTTP client, TLS or the key schedule. A turn's commit path pays only
//! for the enqueue.
//!
//! - `notice.rs`: what a notification says and about what.
//! - `deliver.rs`: the sender child and the worker's side of its pipes.
//! - `crypto.rs`: the VAPID key and `aes128gcm` encryption, on `ring`.
//! - `presence.rs`: which chats a device has open and visible right now.
//! - `actions.rs`: single-use tokens that let the service worker answer one question.
//! - `routes.rs`: `/api/push/*` and `/api/notifications/*`.

pub mod actions;
pub mod crypto;
mod deliver;
mod notice;
pub mod presence;
mod routes;
mod worker;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::warn;

pub use deliver::deliver_command;
pub use notice::{Decision, MAX_BODY_CHARS, MAX_NOTIFICATION_ACTIONS, MAX_TITLE_CHARS, Notice, Source, clip};
pub use routes::router;

use crate::config::Config;
use crate::db::Db;
use crate::error::Result;
use crate::locks::Unpoisoned;
use crate::protocol::{ChatId, QuestionCard, RunStatus};
use crate::writer::WriterHandle;

/// Notices waiting for the worker; beyond this, new ones are dropped (and logged).
pub const MAX_QUEUED_NOTICES: usize = 64;
/// Notifications one sender (an app, an agent run, the owner) may send per [`SEND_WINDOW`].
pub const MAX_SENDS_PER_WINDOW: usize = 10;
/// The rate limit's window.
pub const SEND_WINDOW: Duration = Duration::from_secs(60);
/// Senders tracked by the rate limiter at once (the oldest are forgotten first).
const MAX_RATE_KEYS: usize = 256;

/// The push module's shared state (one per server; routes reach it through `AppState::push`,
/// turns through `Agents::push`).
pub struct Push {
    shared: Arc<worker::Shared>,
    queue: mpsc::Sender<Box<Notice>>,
    limits: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl std::fmt::Debug for Push {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Push").finish_non_exhaustive()
    }
}

impl Push {
    /// Starts the worker. Nothing else is built until a notice needs it: the VAPID key under
    /// `DATA_DIR/push/` is read (or created) on first use.
    pub fn start(config: &Config, db: Db, writer: WriterHandle) -> Self {
        let shared = Arc::new(worker::Shared::new(config));
        if config.push_allow_loopback {
            warn!("MOBIUS_PUSH_ALLOW_LOOPBACK is set: pushes may go to plain-http loopback endpoints (tests only)");
        }
        let (queue, rx) = mpsc::channel(MAX_QUEUED_NOTICES);
        tokio::spawn(worker::run(rx, shared.clone(), db, writer));
        Self { shared, queue, limits: Mutex::new(HashMap::new()) }
    }

    /// Tells the owner: stores and pushes `notice` off the caller's path. Never waits;
    /// `false` when the queue is full (the notice is dropped and logged).
    pub fn notify(&self, notice: Notice) -> bool {
        match self.queue.try_send(Box::new(notice)) {
            Ok(()) => true,
            Err(e) => {
                warn!(error = %e, "notification queue full; a notification was dropped");
                false
            }
        }
    }

    /// A turn ended with `status` and nothing queued follows it. Completed and failed turns
    /// notify (pushed only while no device watches the chat); stops and interruptions do not.
    pub fn turn_ended(&self, chat: &ChatId, status: RunStatus, reply: &str, error: Option<&str>) {
        if let Some(notice) = Notice::turn_ended(chat, status, reply, error) {
            self.notify(notice);
        }
    }

    /// A question or approval card waits for the owner: always pushed.
    pub fn question_waiting(&self, chat: &ChatId, card: &QuestionCard) {
        self.notify(Notice::question(chat, card));
    }

    /// The VAPID public key browsers subscribe with (the key pair is created on first use).
    pub fn public_key(&self) -> Result<String> {
        self.shared.public_key()
    }

    /// Which chat each device has open and visible.
    pub fn presence(&self) -> &presence::Presence {
        &self.shared.presence
    }

    /// The live action tokens of pushed questions.
    pub fn actions(&self) -> &actions::ActionTokens {
        &self.shared.actions
    }

    /// Whether pushes may go to plain-http loopback endpoints (test configurations).
    pub fn allow_loopback(&self) -> bool {
        self.shared.allow_loopback
    }

    /// Counts a send by `key`; `Err(retry after secs)` once it sent [`MAX_SENDS_PER_WINDOW`]
    /// within [`SEND_WINDOW`].
    pub fn admit_send(&self, key: &str) -> std::result::Result<(), u64> {
        admit(&self.limits, key)
    }
}

fn admit(limits: &Mutex<HashMap<String, VecDeque<Instant>>>, key: &str) -> std::result::Result<(), u64> {
    let now = Instant::now();
    let mut limits = limits.locked();
    if !limits.contains_key(key) && limits.len() >= MAX_RATE_KEYS {
        limits.retain(|_, sent| sent.back().is_some_and(|t| now.duration_since(*t) < SEND_WINDOW));
        if limits.len() >= MAX_RATE_KEYS {
            return Err(SEND_WINDOW.as_secs());
        }
    }
    let sent = limits.entry(key.to_owned()).or_default();
    while sent.front().is_some_and(|t| now.duration_since(*t) >= SEND_WINDOW) {
        sent.pop_front();
    }
    if sent.len() >= MAX_SENDS_PER_WINDOW {
        let oldest = sent.front().copied().unwrap_or(now);
        return Err(SEND_WINDOW.saturating_sub(now.duration_since(oldest)).as_secs().max(1));
    }
    sent.push_back(now);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn each_sender_gets_ten_a_minute() {
        let limits = Mutex::new(HashMap::new());
        let push_limits = |key: &str| admit(&limits, key);
        for _ in 0..MAX_SENDS_PER_WINDOW {
            assert!(push_limits("app:1").is_ok());
        }
        assert!(push_limits("app:1").is_err());
        assert!(push_limits("app:2").is_ok(), "another app has its own budget");
        tokio::time::advance(SEND_WINDOW).await;
        assert!(push_limits("app:1").is_ok());
    }
}
