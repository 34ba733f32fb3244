//! Automatic continuation: a chat parked on a usage limit (until the reset) or cut by a
//! restart (at once, after boot) continues by itself. The park is durable (`chats.resume_at`,
//! set by the writer with the run's end or at boot); one task sleeps until the earliest park
//! is due, then asks the writer to start the continuation (`WriteCommand::Resume`: a hidden
//! message, re-checked under the writer, so a chat the owner resumed or deleted meanwhile is
//! left alone) and runs the turn. It is small on purpose, so the scheduler's durable wake-ups
//! can take it over.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tracing::{info, warn};

use super::turn::{Agents, TurnStart};
use crate::db;
use crate::protocol::{ChatId, Pause, PauseKind, RunId};
use crate::writer::WriteCommand;

/// A limit's reset plus this much, so the provider's clock has passed it too.
pub const RESET_SLACK: Duration = Duration::from_secs(3);
/// The soonest a parked chat continues.
pub const MIN_PARK: Duration = Duration::from_secs(5);
/// The latest a parked chat continues (a reset further out is not believed).
pub const MAX_PARK: Duration = Duration::from_secs(7 * 24 * 3600);
/// When a limit does not say when it resets.
pub const UNKNOWN_RESET_PARK: Duration = Duration::from_secs(30 * 60);
/// Continuations started one after another this far apart (a restart may park many chats).
const RESUME_STAGGER: Duration = Duration::from_millis(500);
/// After a failed read of the parks, wait this long before trying again.
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(30);

/// Wakes the continuation task when a park is set or moved.
#[derive(Debug, Default)]
pub struct Resumer {
    poke: Notify,
}

impl Resumer {
    /// A park was set: look again at the earliest one.
    pub fn poke(&self) {
        self.poke.notify_one();
    }
}

/// When a chat that hit its limit at `now` continues (unix ms): the reset plus
/// [`RESET_SLACK`], kept within [`MIN_PARK`]..[`MAX_PARK`]; [`UNKNOWN_RESET_PARK`] when the
/// provider did not say.
pub fn park_until(resets_at: Option<i64>, now: i64) -> i64 {
    let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    match resets_at {
        Some(at) => (at + ms(RESET_SLACK)).clamp(now + ms(MIN_PARK), now + ms(MAX_PARK)),
        None => now + ms(UNKNOWN_RESET_PARK),
    }
}

/// The pause a turn that ended on a usage limit records: continuing at the reset unless the
/// chat's switch is off.
pub fn limit_pause(resets_at: Option<i64>, auto_resume: bool, now: i64) -> Pause {
    Pause { kind: PauseKind::UsageLimit, resumes_at: auto_resume.then(|| park_until(resets_at, now)) }
}

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
        Ok(chat) => chat.and_then(|c| c.provider).and_then(|p| crate::protocol::ProviderKind::parse(&p)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_parks_until_its_reset_within_bounds() {
        let now = 1_000_000;
        assert_eq!(park_until(Some(now + 60_000), now), now + 63_000, "the reset plus the slack");
        assert_eq!(park_until(Some(now - 60_000), now), now + 5_000, "a reset in the past: soon, not at once");
        assert_eq!(park_until(Some(now + 30 * 86_400_000), now), now + 7 * 86_400_000);
        assert_eq!(park_until(None, now), now + 30 * 60_000);
        assert_eq!(limit_pause(Some(now), false, now).resumes_at, None, "the chat's switch is off");
    }
}
