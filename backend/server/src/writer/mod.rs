//! The single-writer actor: the only owner of the write connection.
//!
//! Callers send a [`WriteCommand`] through a [`WriterHandle`]. The actor applies queued
//! commands in FIFO order, a batch per transaction (each command inside its own savepoint,
//! so one failing command never takes its neighbours down), commits, and only then resolves
//! the acks and publishes the batch's journal events to the [`Hub`](crate::events::Hub).
//! Live snapshots of a running assistant message are coalesced per chat: the latest wins
//! and a chat is written at most once per [`SNAPSHOT_INTERVAL`].

mod actor;
mod apps;
mod chat;
pub mod commands;
pub mod push;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use sqlx::SqliteConnection;
use tokio::sync::{mpsc, oneshot};

pub use commands::*;

use crate::error::{Error, Result};
use crate::events::Hub;

/// How long a caller waits for its ack before giving up with 503.
pub const ACK_TIMEOUT: Duration = Duration::from_secs(30);
/// Minimum spacing of live-snapshot writes for one chat.
pub const SNAPSHOT_INTERVAL: Duration = Duration::from_secs(1);
/// Depth of the command queue; senders wait when it is full.
const QUEUE_CAPACITY: usize = 4096;
/// Most commands folded into one transaction.
const MAX_BATCH: usize = 256;

/// A reply channel carried by a strict command.
pub type Ack<T> = oneshot::Sender<Result<T>>;

/// Counters for diagnostics, tests and the benchmark.
#[derive(Debug, Default)]
pub struct WriterStats {
    /// Transactions committed.
    pub commits: AtomicU64,
    /// Commands applied (including failed ones).
    pub commands: AtomicU64,
    /// Live snapshots received.
    pub snapshots_received: AtomicU64,
    /// Live snapshots actually written.
    pub snapshot_writes: AtomicU64,
}

/// Cheap, cloneable front of the writer actor.
#[derive(Clone, Debug)]
pub struct WriterHandle {
    tx: mpsc::Sender<WriteCommand>,
    alive: Arc<AtomicBool>,
    stats: Arc<WriterStats>,
}

impl WriterHandle {
    /// Starts the actor on `conn`. It publishes committed events to `hub`.
    pub fn spawn(conn: SqliteConnection, hub: Arc<Hub>) -> (Self, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let alive = Arc::new(AtomicBool::new(true));
        let stats = Arc::new(WriterStats::default());
        let task = tokio::spawn(actor::Actor::new(conn, hub, rx, alive.clone(), stats.clone()).run());
        (Self { tx, alive, stats }, task)
    }

    /// Sends a strict command and waits for its ack (which arrives only after commit).
    pub async fn call<T>(&self, make: impl FnOnce(Ack<T>) -> WriteCommand) -> Result<T> {
        let (ack, rx) = oneshot::channel();
        self.tx.send(make(ack)).await.map_err(|_| Error::WriterUnavailable)?;
        match tokio::time::timeout(ACK_TIMEOUT, rx).await {
            Ok(Ok(result)) => result,
            _ => Err(Error::WriterUnavailable),
        }
    }

    /// Queues a command without waiting for its ack, but waits for room in the queue, so
    /// nothing is dropped (the turn's events).
    pub async fn enqueue(&self, command: WriteCommand) {
        let _ = self.tx.send(command).await;
    }

    /// Queues a command without waiting for it (live snapshots, best-effort events).
    /// Returns false when the queue is full or the writer is gone.
    pub fn submit(&self, command: WriteCommand) -> bool {
        self.tx.try_send(command).is_ok()
    }

    /// Queues the latest live assistant message of a running turn; coalesced per chat.
    pub fn snapshot_live(&self, chat_id: &str, run_id: &str, body: String) -> bool {
        self.submit(WriteCommand::SnapshotLive(LiveSnapshot {
            chat_id: chat_id.to_owned(),
            run_id: run_id.to_owned(),
            body,
        }))
    }

    /// Resolves once every command queued before it has been committed.
    pub async fn barrier(&self) -> Result<()> {
        self.call(WriteCommand::Barrier).await
    }

    /// Applies everything already queued, flushes pending snapshots, and stops the actor.
    pub async fn shutdown(&self) {
        let (done, rx) = oneshot::channel();
        if self.tx.send(WriteCommand::Shutdown(done)).await.is_ok() {
            let _ = rx.await;
        }
    }

    /// False once the actor has stopped (shut down, or died).
    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire) && !self.tx.is_closed()
    }

    /// Live counters.
    pub fn stats(&self) -> &WriterStats {
        &self.stats
    }
}
