//! The messages the writer actor accepts. Strict commands carry an [`Ack`] resolved after
//! commit; [`WriteCommand::SnapshotLive`] is fire-and-forget and coalesced.

use serde_json::{Map, Value};
use tokio::sync::oneshot;

use super::Ack;

/// A journal event before it has a seq: a JSON object with at least `"type"`.
pub type EventBody = Map<String, Value>;

/// Builds an event body `{"type": kind, ...fields}`.
pub fn event(kind: &str, fields: Value) -> EventBody {
    let mut map = Map::new();
    map.insert("type".into(), Value::String(kind.to_owned()));
    if let Value::Object(extra) = fields {
        map.extend(extra);
    }
    map
}

/// The latest state of a running turn's assistant message.
#[derive(Debug)]
pub struct LiveSnapshot {
    pub chat_id: String,
    pub run_id: String,
    /// The live assistant message JSON.
    pub body: String,
}

/// A new chat, optionally with an imported transcript.
#[derive(Debug, Default)]
pub struct NewChat {
    /// Client-supplied id (idempotent) or a fresh UUID.
    pub id: String,
    pub title: Option<String>,
    /// Messages as JSON objects (`role`, `content`, `ts`, …), appended in order.
    pub messages: Vec<Map<String, Value>>,
}

/// What [`WriteCommand::CreateChat`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatCreated {
    /// A new row was inserted.
    Created,
    /// A live chat with this id already existed; nothing changed.
    Existing,
}

/// Opening a run row and the empty live message for a turn.
#[derive(Debug)]
pub struct NewRun {
    pub chat_id: String,
    pub run_id: String,
    pub provider: Option<String>,
}

/// Every mutation the writer knows how to apply.
#[derive(Debug)]
pub enum WriteCommand {
    /// Creates the owner row (fails with 409 if it exists).
    CreateOwner { username: String, password_hash: String, ack: Ack<()> },
    /// Bumps the token epoch, revoking every issued token; answers the new epoch.
    BumpTokenEpoch { ack: Ack<i64> },
    /// Creates a chat (idempotent on id).
    CreateChat { chat: NewChat, ack: Ack<ChatCreated> },
    /// Appends events to a chat's journal. With `run_id`, only while that run is running:
    /// a stopped turn can no longer write. Answers the seq of the last event.
    Emit { chat_id: String, run_id: Option<String>, events: Vec<EventBody>, ack: Option<Ack<i64>> },
    /// Opens a running run with an empty live message.
    StartRun { run: NewRun, ack: Ack<()> },
    /// Coalesced live-message snapshot.
    SnapshotLive(LiveSnapshot),
    /// Resolves after everything queued before it is committed.
    Barrier(Ack<()>),
    /// Drains the queue, flushes snapshots, stops the actor.
    Shutdown(oneshot::Sender<()>),
}
