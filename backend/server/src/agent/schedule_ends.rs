//! How a scheduled agent turn's end reaches the scheduler: the turn path (`agent/turn.rs`)
//! reports the end of every run that answered a scheduled message (its cid starts with
//! [`SCHEDULED_CID_PREFIX`]) through a bounded channel; nothing is sent for other turns.

use tokio::sync::mpsc;

use crate::protocol::{ChatId, Cid, RunId, RunStatus};

/// Cids of the messages the scheduler sends: `schedule-<schedule id>-<run id>`.
pub const SCHEDULED_CID_PREFIX: &str = "schedule-";
/// Ends waiting for the scheduler; a full queue drops the signal (the run is closed as
/// interrupted when its schedule is next due).
const QUEUE: usize = 256;
/// Reply text kept as a scheduled turn's output.
pub const MAX_REPLY_BYTES: usize = 64 * 1024;

/// The end of a run that answered (or dropped) scheduled messages.
#[derive(Debug, Clone)]
pub struct TurnEnded {
    pub chat_id: ChatId,
    pub run_id: RunId,
    pub status: RunStatus,
    pub error: Option<String>,
    /// The reply's text (at most [`MAX_REPLY_BYTES`], the end kept).
    pub reply: String,
    /// Scheduled messages this run answered.
    pub answered: Vec<Cid>,
    /// Scheduled messages a stop took out of the queue.
    pub cleared: Vec<Cid>,
}

/// Whether `cid` is one the scheduler sent.
pub fn is_scheduled(cid: &str) -> bool {
    cid.starts_with(SCHEDULED_CID_PREFIX)
}

/// What a turn tells the scheduler.
#[derive(Debug, Clone)]
pub enum TurnSignal {
    /// A run that answered (or dropped) scheduled messages ended.
    Ended(TurnEnded),
    /// The turn answering these scheduled messages waits for a free agent (`true`), or no
    /// longer does.
    Waiting { cids: Vec<Cid>, waiting: bool },
}

/// The turns' side.
#[derive(Clone, Debug)]
pub struct TurnEnds {
    tx: Option<mpsc::Sender<TurnSignal>>,
}

/// The scheduler's side.
#[derive(Debug)]
pub struct TurnEndReceiver(pub(crate) mpsc::Receiver<TurnSignal>);

impl TurnEnds {
    pub fn channel() -> (Self, TurnEndReceiver) {
        let (tx, rx) = mpsc::channel(QUEUE);
        (Self { tx: Some(tx) }, TurnEndReceiver(rx))
    }

    /// Signals that go nowhere (tests of turns without a scheduler).
    pub fn off() -> Self {
        Self { tx: None }
    }

    /// Reports a run's end if it concerns scheduled messages.
    pub fn ended(&self, mut end: TurnEnded) {
        end.answered.retain(|c| is_scheduled(c));
        end.cleared.retain(|c| is_scheduled(c));
        if end.answered.is_empty() && end.cleared.is_empty() {
            return;
        }
        if end.reply.len() > MAX_REPLY_BYTES {
            let mut cut = end.reply.len() - MAX_REPLY_BYTES;
            while !end.reply.is_char_boundary(cut) {
                cut += 1;
            }
            end.reply.drain(..cut);
        }
        if let Some(tx) = &self.tx
            && tx.try_send(TurnSignal::Ended(end)).is_err()
        {
            tracing::warn!("the scheduler's queue is full; a scheduled turn's end was dropped");
        }
    }

    /// Tells whether the turn answering `cids` waits for a free agent (nothing for a turn that
    /// answers no scheduled message). A full queue drops it: the run only shows as running.
    pub fn waiting(&self, cids: &[Cid], waiting: bool) {
        let cids: Vec<Cid> = cids.iter().filter(|c| is_scheduled(c)).cloned().collect();
        if cids.is_empty() {
            return;
        }
        if let Some(tx) = &self.tx {
            let _ = tx.try_send(TurnSignal::Waiting { cids, waiting });
        }
    }
}
