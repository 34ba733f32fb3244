//! Controlling a running turn from a route: stop it, steer the owner's words into it, answer
//! its card. Each call owns its reply channel and its deadline.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::error::{Domain, Result};
use crate::protocol::{Answers, Cid, Message, QuestionId, RunId, UserInput};

/// How long a stop waits for the turn to record itself as stopped.
pub const STOP_WAIT: Duration = Duration::from_secs(3);
/// How long a steering message waits for the CLI to take it before it is queued instead.
pub const STEER_WAIT: Duration = Duration::from_secs(10);
/// How long an answer waits for the turn to take it.
pub const ANSWER_WAIT: Duration = Duration::from_secs(10);
/// Commands waiting for a turn; a caller waits for room.
pub(super) const COMMAND_QUEUE: usize = 16;

/// Requests a route makes to a running turn (sent only through [`TurnHandle`]).
#[derive(Debug)]
pub(super) enum TurnCommand {
    /// Stop now; the reply carries the cids of the queued messages that were cleared.
    Stop { reply: oneshot::Sender<Vec<Cid>> },
    /// The owner answered card `question_id`.
    Answer { question_id: QuestionId, answers: Answers, reply: oneshot::Sender<Result<()>> },
    /// Add the owner's message to the running turn. The reply carries the stored message, or
    /// `None` when the CLI cannot take it now (the caller queues it instead).
    Steer { message: UserInput, reply: oneshot::Sender<Result<Option<Message>>> },
}

/// A running turn, as routes see it.
#[derive(Clone, Debug)]
pub struct TurnHandle {
    run_id: RunId,
    commands: mpsc::Sender<TurnCommand>,
}

impl TurnHandle {
    pub(super) fn new(run_id: RunId, commands: mpsc::Sender<TurnCommand>) -> Self {
        Self { run_id, commands }
    }

    /// The run the turn was on when this handle was taken.
    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }

    pub(super) fn set_run(&mut self, run_id: &RunId) {
        run_id.clone_into(&mut self.run_id);
    }

    /// Stops the turn: `Some(cleared cids)` once it recorded itself as stopped, `None` when it
    /// did not answer within [`STOP_WAIT`] (the caller then closes the run itself).
    pub async fn stop(&self) -> Option<Vec<Cid>> {
        let (reply, rx) = oneshot::channel();
        self.commands.send(TurnCommand::Stop { reply }).await.ok()?;
        tokio::time::timeout(STOP_WAIT, rx).await.ok()?.ok()
    }

    /// Offers the owner's words to the running turn: `Some(stored message)` when the CLI took
    /// them, `None` when it cannot now (or not within [`STEER_WAIT`]): queue them instead.
    pub async fn steer(&self, message: UserInput) -> Result<Option<Message>> {
        let (reply, rx) = oneshot::channel();
        if self.commands.send(TurnCommand::Steer { message, reply }).await.is_err() {
            return Ok(None);
        }
        match tokio::time::timeout(STEER_WAIT, rx).await {
            Ok(Ok(taken)) => taken,
            _ => Ok(None),
        }
    }

    /// Hands the owner's answers to the waiting card: 410 when the turn is gone or waits for
    /// another card, 503 when it does not take them within [`ANSWER_WAIT`].
    pub async fn answer(&self, question_id: QuestionId, answers: Answers) -> Result<()> {
        let (reply, rx) = oneshot::channel();
        self.commands
            .send(TurnCommand::Answer { question_id, answers, reply })
            .await
            .map_err(|_| Domain::QuestionStale)?;
        match tokio::time::timeout(ANSWER_WAIT, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(Domain::QuestionStale.into()),
            Err(_) => Err(Domain::TurnBusy.into()),
        }
    }
}
