//! Automatic continuation: a chat parked on a usage limit (until the reset) or cut by a
//! restart (at once, after boot) continues by itself. The park is durable (`chats.resume_at`,
//! set by the writer with the run's end or at boot; its times in `park.rs`); one task sleeps
//! until the earliest park is due, then asks the writer to start the continuation
//! (`WriteCommand::Resume`: a hidden message, re-checked under the writer, so a chat the owner
//! resumed or deleted meanwhile is left alone) and runs the turn. It is small on purpose, so
//! the scheduler's durable wake-ups can take it over.

use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

use super::turn::{Agents, TurnStart};
use crate::db;
use crate::protocol::{ChatId, RunId};
use crate::writer::WriteCommand;

/// Continuations started one after another this far apart (a restart may park many chats).
const RESUME_STAGGER: Duration = Duration::from_millis(500);
/// After a failed read of the parks, wait this long before trying again.
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(30);

/// Runs the continuation task until the server stops.
pub async fn run(agents: Arc<Agents>) {
    loop {
        let next = match db::chats::next_resume(&agents.read).await {
            Ok(next) => next,
            Err(e) => {
                warn!(error = %e, "parked chats could not be read");
                tokio::select! {
                    () = tokio::time::sleep(RETRY_AFTER_ERROR) => {}
                    () = agents.resumer.poke.notified() => {}
                }
                continue;
            }
        };
        let Some((chat_id, at)) = next else {
            agents.resumer.poke.notified().await;
            continue;
        };
        let wait = u64::try_from(at - db::now_ms()).unwrap_or(0);
        if wait > 0 {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(wait)) => {}
                () = agents.resumer.poke.notified() => continue,
            }
        }
        resume(&agents, ChatId::from(chat_id)).await;
        tokio::time::sleep(RESUME_STAGGER).await;
    }
}

async fn resume(agents: &Arc<Agents>, chat_id: ChatId) {
    // A provider disconnected meanwhile cannot continue it: the park is dropped.
    let provider = match db::chats::get(&agents.read, &chat_id).await {
        Ok(chat) => chat.and_then(|c| c.provider),
        Err(e) => {
            warn!(chat.id = %chat_id, error = %e, "a parked chat could not be read");
            return;
        }
    };
    let start = provider.is_some_and(|p| agents.providers.status(p).connected);
    let run_id = RunId::random();
    let started = agents
        .writer
        .call(|ack| WriteCommand::Resume { chat_id: chat_id.clone(), run_id, now: db::now_ms(), start, ack })
        .await;
    match started {
        Ok(Some(started)) => {
            info!(chat.id = %chat_id, run.id = %started.run_id, "a parked chat continues by itself");
            super::turn::spawn(agents, TurnStart { chat_id, started });
        }
        Ok(None) => {}
        Err(e) => warn!(chat.id = %chat_id, error = %e, "a parked chat could not continue"),
    }
}
