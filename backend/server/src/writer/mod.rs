//! The single-writer actor: the only owner of the write connection.
//!
//! Callers send a [`WriteCommand`] through a [`WriterHandle`] (`handle.rs`). The actor
//! (`actor.rs`) applies queued commands in FIFO order, a batch per transaction (each command
//! inside its own savepoint, so one failing command never takes its neighbours down),
//! commits, and only then resolves the acks and publishes the batch's journal events
//! (`batch.rs`) to the [`Hub`](crate::events::Hub). Live snapshots of a running assistant
//! message are coalesced per chat: the latest wins and a chat is written at most once per
//! [`SNAPSHOT_INTERVAL`]. The domain logic lives in `chat.rs`, `apps.rs`, `notes.rs`, `push.rs`,
//! `schedules.rs` and `uploads.rs`.

mod actor;
mod apps;
mod batch;
mod chat;
mod commands;
mod goals;
mod handle;
mod notes;
mod push;
mod schedules;
mod uploads;

pub use actor::SNAPSHOT_INTERVAL;
pub use chat::is_continuation;
pub use commands::*;
pub use handle::{ACK_TIMEOUT, WriterHandle};
pub use push::{MAX_STORED_NOTIFICATIONS, MAX_SUBSCRIPTIONS};
pub use schedules::{MAX_FAILURES, MAX_SCHEDULES, failures_after};
