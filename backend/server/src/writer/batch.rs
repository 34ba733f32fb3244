//! What one transaction of the writer produces that must wait for its commit: journal events
//! to publish, system events to announce, and the acks to resolve.

use std::sync::Arc;

use sqlx::SqliteConnection;

use super::commands::{Ack, uncommitted};
use crate::db::{self, now_ms};
use crate::error::{Error, Result};
use crate::events::JournalEvent;
use crate::protocol::{ChatEvent, JournalEntry, SystemEvent};

pub(super) type Completion = Box<dyn FnOnce(bool) + Send>;

/// Everything a batch produces that must wait for the commit.
#[derive(Default)]
pub(super) struct Batch {
    pub(super) events: Vec<(Arc<str>, Arc<JournalEvent>)>,
    pub(super) system: Vec<String>,
    pub(super) completions: Vec<Completion>,
    /// A command changed a field the chat list shows.
    pub(super) list_changed: bool,
    /// A command changed a schedule, or what decides whether one is due (its app or chat).
    pub(super) schedules_changed: bool,
    /// A command failed because the disk is full.
    pub(super) disk_full: bool,
    /// A command stored messages that wait for their search documents (`db::search::index_backlog`).
    pub(super) search_backlog: bool,
}

impl Batch {
    /// Queues `ack` to receive `result` once the batch is committed (or not).
    pub(super) fn complete<T: Send + 'static>(&mut self, ack: Ack<T>, result: Result<T>) {
        self.disk_full |= result.as_ref().is_err_and(Error::is_disk_full);
        self.completions.push(Box::new(move |committed| {
            let outcome = match result {
                Ok(value) if committed => Ok(value),
                Ok(_) => Err(uncommitted()),
                Err(e) => Err(e),
            };
            ack.send(outcome);
        }));
    }

    /// Appends an event to a chat's journal inside the current transaction; returns its seq.
    pub(super) async fn emit(&mut self, conn: &mut SqliteConnection, chat_id: &str, event: ChatEvent) -> Result<i64> {
        let seq = db::journal::next_seq(conn, chat_id).await?;
        let data = serde_json::to_string(&JournalEntry { seq, event }).map_err(|e| Error::Internal(e.to_string()))?;
        db::journal::insert(conn, chat_id, seq, &data, now_ms()).await?;
        self.events.push((Arc::from(chat_id), Arc::new(JournalEvent { seq, data: Arc::from(data) })));
        Ok(seq)
    }

    /// Notes a fire-and-forget command's result (nobody waits for it, but a full disk counts).
    pub(super) fn noted<T>(&mut self, result: &Result<T>) -> bool {
        self.disk_full |= result.as_ref().is_err_and(Error::is_disk_full);
        result.is_ok()
    }

    /// Queues a shell-wide system event for after the commit.
    pub(super) fn system(&mut self, event: SystemEvent) {
        match serde_json::to_string(&event) {
            Ok(data) => self.system.push(data),
            Err(e) => tracing::error!(error = %e, "a system event could not be encoded"),
        }
    }
}
