//! The cheap, cloneable front of the writer actor.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sqlx::SqliteConnection;
use tokio::sync::{mpsc, oneshot};

use super::actor::Actor;
use super::commands::{Ack, LiveSnapshot, WriteCommand, WriterStats};
use crate::error::{Error, Result};
use crate::events::Hub;
use crate::protocol::{ChatId, RunId};

/// How long a caller waits for its ack before giving up with 503.
pub const ACK_TIMEOUT: Duration = Duration::from_secs(30);
/// Depth of the command queue; senders wait when it is full.
const QUEUE_CAPACITY: usize = 4096;

/// Sends commands to the writer actor.
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
        let task = tokio::spawn(Actor::new(conn, hub, rx, alive.clone(), stats.clone()).run());
        (Self { tx, alive, stats }, task)
    }

    /// Sends a strict command and waits for its ack (which arrives only after commit).
    pub async fn call<T>(&self, make: impl FnOnce(Ack<T>) -> WriteCommand) -> Result<T> {
        let (ack, rx) = Ack::channel();
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
    pub fn snapshot_live(&self, chat_id: &ChatId, run_id: &RunId, body: String) -> bool {
        self.submit(WriteCommand::SnapshotLive(LiveSnapshot { chat_id: chat_id.clone(), run_id: run_id.clone(), body }))
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

    /// True while writes fail because the disk is full.
    pub fn disk_full(&self) -> bool {
        self.stats.disk_full.load(Ordering::Relaxed)
    }

    /// Live counters.
    pub fn stats(&self) -> &WriterStats {
        &self.stats
    }
}
