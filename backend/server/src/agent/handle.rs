//! Controlling a running turn from a route: stop it, steer the owner's words into it, answer
//! its card. Each call owns its reply channel and its deadline.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::error::{Domain, Result};
use crate::protocol::{Answers, Cid, Message, QuestionCard, QuestionId, RunId, UserInput};

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
    /// Show a secure-input card (the agent asked for a secret); 409 while another card waits.
    SecureInput { card: QuestionCard, reply: oneshot::Sender<Result<()>> },
}

/// A running turn, as routes see it.
#[derive(Clone, Debug)]
pub struct TurnHandle {
    run_id: RunId,
    commands: mpsc::Sender<TurnCommand>,
    /// The run whose kept process serves this turn (`None`: a process of its own).
    pub(super) process: Option<RunId>,
    /// The turn waits for a free agent.
    pub(super) waiting: Option<crate::protocol::Waiting>,
}

impl TurnHandle {
    pub(super) fn new(run_id: RunId, commands: mpsc::Sender<TurnCommand>) -> Self {
        Self { run_id, commands, process: None, waiting: None }
    }

    /// The run the turn was on when this handle was taken.
    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }

    pub(super) fn set_run(&mut self, run_id: &RunId) {
        run_id.clone_into(&mut self.run_id);
        self.process = None;
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

impl TurnHandle {
    /// Shows a secure-input card in the turn (durable before it is shown, then a push): 409
    /// while another card waits, 410 when the turn is gone, 503 when it does not take it in
    /// time.
    pub async fn secure_input(&self, card: QuestionCard) -> Result<()> {
        let (reply, rx) = oneshot::channel();
        self.commands.send(TurnCommand::SecureInput { card, reply }).await.map_err(|_| Domain::QuestionStale)?;
        match tokio::time::timeout(ANSWER_WAIT, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(Domain::QuestionStale.into()),
            Err(_) => Err(Domain::TurnBusy.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    /// A handle whose turn takes commands but never answers them.
    fn silent_turn() -> (TurnHandle, mpsc::Receiver<TurnCommand>) {
        let (tx, rx) = mpsc::channel(COMMAND_QUEUE);
        (TurnHandle::new(RunId::from("rt-1"), tx), rx)
    }

    #[tokio::test(start_paused = true)]
    async fn a_turn_that_does_not_answer_in_time_gets_each_call_its_own_outcome() {
        let (handle, _turn) = silent_turn();
        let started = tokio::time::Instant::now();
        assert_eq!(handle.stop().await, None, "no answer: the route closes the run itself");
        assert_eq!(started.elapsed(), STOP_WAIT);
        let steered = handle.steer(crate::protocol::UserInput::text(Cid::from("c1"), "hi".into())).await;
        assert!(matches!(steered, Ok(None)), "not taken in time: it is queued instead");
        let answered = handle.answer(QuestionId::from("q-1"), Answers::Choices(Default::default())).await;
        assert!(matches!(answered, Err(Error::Domain(Domain::TurnBusy))), "{answered:?}");
        assert_eq!(started.elapsed(), STOP_WAIT + STEER_WAIT + ANSWER_WAIT);
    }

    #[tokio::test]
    async fn a_turn_that_is_gone_answers_at_once() {
        let (handle, turn) = silent_turn();
        drop(turn);
        assert_eq!(handle.stop().await, None);
        assert!(matches!(handle.steer(crate::protocol::UserInput::text(Cid::from("c1"), "hi".into())).await, Ok(None)));
        let answered = handle.answer(QuestionId::from("q-1"), Answers::Choices(Default::default())).await;
        assert!(matches!(answered, Err(Error::Domain(Domain::QuestionStale))), "{answered:?}");
    }

    #[tokio::test]
    async fn a_turn_that_answers_hands_back_what_it_said() {
        let (handle, mut turn) = silent_turn();
        tokio::spawn(async move {
            while let Some(command) = turn.recv().await {
                match command {
                    TurnCommand::Stop { reply } => {
                        let _ = reply.send(vec![Cid::from("q2")]);
                    }
                    TurnCommand::Answer { reply, .. } | TurnCommand::SecureInput { reply, .. } => {
                        let _ = reply.send(Ok(()));
                    }
                    TurnCommand::Steer { message, reply } => {
                        let _ = reply.send(Ok(Some(message.at(7))));
                    }
                }
            }
        });
        assert_eq!(handle.stop().await, Some(vec![Cid::from("q2")]));
        let steered = handle.steer(crate::protocol::UserInput::text(Cid::from("c1"), "hi".into())).await;
        assert!(matches!(steered, Ok(Some(m)) if m.ts == 7 && m.content == "hi"));
        assert!(handle.answer(QuestionId::from("q-1"), Answers::Choices(Default::default())).await.is_ok());
    }
}
