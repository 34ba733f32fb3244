//! Warm sessions: the CLI process of a recently active chat, kept between its turns (Claude
//! takes the next user message on its stream-json stdin, Codex's app-server the next
//! `turn/start` on the same thread), so a turn skips the CLI's start-up. At most
//! [`WarmPool::max`] processes wait at once (the least recently parked goes first), each at
//! most [`WarmPool::idle`]; anything that would make the process differ from a cold start
//! (provider, model, effort, approval policy, system prompt, credentials, session, a token
//! that no longer verifies) retires it, and the turn starts cold with `--resume` as before.
//!
//! A chat has one process at a time. A process that is still winding down (a stopped turn
//! in its grace, a retired one being closed) holds its chat until it has parked or is gone:
//! the next turn waits for that ([`WarmPool::settle`]), so a cold start never resumes a
//! session another process still writes (Codex refuses that: "already has an active writer").
//! Only processes started with a keeper are counted: with keeping off (`max` 0) nothing is.
//!
//! A parked process keeps every guarantee of a running one: its sandbox, group and pid
//! marker stay as they were; what escaped its group is swept when each turn ends; stop,
//! steer and questions go through the same driver; and a turn dropped mid-way (a stop past
//! its grace, a ceiling) aborts the driver, which kills the group as a cold turn's would.

use crate::config::MAX_WARM_MAX;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;
use tracing::info;

use super::{ApprovalPolicy, ProviderKind, ProviderTurn};
use super::{Keeper, NextTurn, Parked};
use crate::locks::Unpoisoned;
use crate::protocol::{ChatId, RunId};

/// How long a turn waits for a kept process to take it before starting a new one.
const HANDOFF_WAIT: Duration = Duration::from_secs(2);
/// Longest a turn waits for its chat's previous process to park or go: a stop's grace, the
/// exit grace of a closed process and its kill, with room to spare.
pub const SETTLE_WAIT: Duration = Duration::from_secs(6);

/// What a process was started with; a turn that would start it differently starts cold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WarmKey {
    pub provider: ProviderKind,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub approval: ApprovalPolicy,
    /// Id of the system prompt (its hash).
    pub prompt_id: String,
    /// The provider's credentials as they were (`Providers::credentials_stamp`).
    pub credentials: u64,
    /// The connectors it was told about: a change (one added, disconnected, chosen) starts cold.
    pub mcp: Vec<super::McpServer>,
}

/// The processes kept between turns, one per chat at most.
#[derive(Debug)]
pub struct WarmPool {
    inner: Mutex<Inner>,
    /// Woken when a process parks or goes.
    changed: Notify,
    max: usize,
    idle: Duration,
}

#[derive(Debug, Default)]
struct Inner {
    parked: HashMap<ChatId, Entry>,
    /// How many processes of each chat are alive (parked or not); no entry at zero.
    alive: HashMap<ChatId, usize>,
    next_ticket: u64,
}

/// Counts a process of one chat as alive until it is dropped ([`Keeper::alive`]).
#[derive(Debug)]
struct Alive {
    pool: Arc<WarmPool>,
    chat_id: ChatId,
}

impl Drop for Alive {
    fn drop(&mut self) {
        {
            let mut inner = self.pool.lock();
            if let Some(n) = inner.alive.get_mut(self.chat_id.as_str()) {
                *n -= 1;
                if *n == 0 {
                    inner.alive.remove(self.chat_id.as_str());
                }
            }
        }
        self.pool.changed.notify_waiters();
    }
}

#[derive(Debug)]
struct Entry {
    ticket: u64,
    key: WarmKey,
    /// The run that started the process (its environment and agent token name it).
    origin: RunId,
    token: String,
    parked: Parked,
    since: Instant,
}

/// A kept process taken out of the pool for a turn (dropping it retires the process).
#[derive(Debug)]
pub struct Warm {
    entry: Entry,
}

/// What a parked process shows (Settings, the bench).
#[derive(Debug, Clone, serde::Serialize)]
pub struct WarmState {
    pub max: usize,
    pub idle_secs: u64,
    pub parked: usize,
}

impl WarmPool {
    /// A pool keeping at most `max` processes (0: none), each idle at most `idle`.
    pub fn new(max: usize, idle: Duration) -> Arc<Self> {
        Arc::new(Self { inner: Mutex::new(Inner::default()), changed: Notify::new(), max: max.min(MAX_WARM_MAX), idle })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.locked()
    }

    /// What keeps a new process of `chat_id` for its next turn (`None` when keeping is off).
    pub fn keeper(
        self: &Arc<Self>,
        chat_id: &ChatId,
        key: WarmKey,
        origin: &RunId,
        token: &str,
    ) -> Option<Box<dyn Keeper>> {
        (self.max > 0).then(|| {
            Box::new(ChatKeeper {
                pool: self.clone(),
                chat_id: chat_id.clone(),
                key,
                origin: origin.clone(),
                token: token.to_owned(),
            }) as Box<dyn Keeper>
        })
    }

    /// Waits (at most [`SETTLE_WAIT`]) until every live process of `chat_id` is parked:
    /// one still finishing a turn or closing holds the chat's session. False when it gave up.
    pub async fn settle(&self, chat_id: &str) -> bool {
        let deadline = Instant::now() + SETTLE_WAIT;
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let inner = self.lock();
                let alive = inner.alive.get(chat_id).copied().unwrap_or(0);
                if alive <= usize::from(inner.parked.contains_key(chat_id)) {
                    return true;
                }
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                info!(chat.id = %chat_id, "the chat's previous agent process is still going; starting anyway");
                return false;
            }
        }
    }

    /// Takes the kept process of `chat_id` if it was started as `key` would start it and
    /// holds `session`; a process that does not fit is retired.
    pub fn checkout(&self, chat_id: &str, key: &WarmKey, session: Option<&str>) -> Option<Warm> {
        let entry = self.lock().parked.remove(chat_id)?;
        if entry.key != *key || entry.parked.session.as_deref() != session {
            info!(chat.id = %chat_id, "a kept agent process no longer fits the chat; it is retired");
            return None;
        }
        Some(Warm { entry })
    }

    /// Retires the kept process of `chat_id` (the chat was deleted, or moved on).
    pub fn retire(&self, chat_id: &str) {
        self.lock().parked.remove(chat_id);
    }

    /// Retires every kept process of `provider` (its credentials changed).
    pub fn retire_provider(&self, provider: ProviderKind) {
        self.lock().parked.retain(|_, e| e.key.provider != provider);
    }

    /// Retires every kept process (shutdown).
    pub fn retire_all(&self) {
        self.lock().parked.clear();
    }

    /// The pool's settings and how many processes wait now.
    pub fn state(&self) -> WarmState {
        WarmState { max: self.max, idle_secs: self.idle.as_secs(), parked: self.lock().parked.len() }
    }

    /// The process ids of the kept processes.
    pub fn pids(&self) -> Vec<u32> {
        self.lock().parked.values().filter_map(|e| e.parked.pid).collect()
    }

    fn park(&self, chat_id: &ChatId, key: WarmKey, origin: RunId, token: String, parked: Parked) -> u64 {
        let mut inner = self.lock();
        inner.next_ticket += 1;
        let ticket = inner.next_ticket;
        // A chat has one process; at the cap the least recently parked other one goes.
        inner.parked.remove(chat_id.as_str());
        while inner.parked.len() >= self.max {
            let Some(oldest) = inner.parked.iter().min_by_key(|(_, e)| e.since).map(|(id, _)| id.clone()) else {
                break;
            };
            info!(chat.id = %oldest, "the oldest kept agent process is retired to make room");
            inner.parked.remove(oldest.as_str());
        }
        inner.parked.insert(chat_id.clone(), Entry { ticket, key, origin, token, parked, since: Instant::now() });
        drop(inner);
        self.changed.notify_waiters();
        ticket
    }

    fn forget(&self, chat_id: &str, ticket: u64) {
        let mut inner = self.lock();
        if inner.parked.get(chat_id).is_some_and(|e| e.ticket == ticket) {
            inner.parked.remove(chat_id);
        }
    }
}

impl Warm {
    /// The run that started the process (its agent token names that run).
    pub fn origin(&self) -> &RunId {
        &self.entry.origin
    }

    /// The agent token in the process's environment.
    pub fn token(&self) -> &str {
        &self.entry.token
    }

    /// Hands `prompt` to the process: the turn, or `None` when the process could not take
    /// it (it died meanwhile): the caller starts a new one.
    pub async fn start(self, prompt: super::Prompt) -> Option<ProviderTurn> {
        let (half, io) = super::session::turn_channels();
        let (taken, answer) = oneshot::channel();
        let Entry { parked, .. } = self.entry;
        parked.handoff.try_send(NextTurn { prompt, io, taken }).ok()?;
        match tokio::time::timeout(HANDOFF_WAIT, answer).await {
            Ok(Ok(true)) => {
                let mut turn = half.with_driver(parked.driver);
                turn.guard.warm = true;
                Some(turn)
            }
            _ => None,
        }
    }
}

/// Parks one chat's process in the pool.
#[derive(Debug)]
struct ChatKeeper {
    pool: Arc<WarmPool>,
    chat_id: ChatId,
    key: WarmKey,
    origin: RunId,
    token: String,
}

impl Keeper for ChatKeeper {
    fn park(&self, parked: Parked) -> u64 {
        self.pool.park(&self.chat_id, self.key.clone(), self.origin.clone(), self.token.clone(), parked)
    }

    fn forget(&self, ticket: u64) {
        self.pool.forget(&self.chat_id, ticket);
    }

    fn idle(&self) -> Duration {
        self.pool.idle
    }

    fn alive(&self) -> Box<dyn std::fmt::Debug + Send + Sync> {
        *self.pool.lock().alive.entry(self.chat_id.clone()).or_default() += 1;
        Box::new(Alive { pool: self.pool.clone(), chat_id: self.chat_id.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DEFAULT_WARM_IDLE;
    use tokio::sync::mpsc;

    fn key(model: &str) -> WarmKey {
        WarmKey {
            provider: ProviderKind::Claude,
            model: Some(model.into()),
            effort: None,
            approval: ApprovalPolicy::Full,
            prompt_id: "p".into(),
            credentials: 1,
            mcp: Vec::new(),
        }
    }

    /// Parks a stand-in process for `chat`; the receiver sees the handoffs (closed = retired).
    fn park(pool: &Arc<WarmPool>, chat: &str, model: &str) -> mpsc::Receiver<NextTurn> {
        let keeper = pool.keeper(&ChatId::from(chat), key(model), &RunId::from("rt-1"), "tok").expect("keeping is on");
        let (handoff, rx) = mpsc::channel(1);
        let driver = tokio::spawn(std::future::pending::<()>()).abort_handle();
        keeper.park(Parked { handoff, driver, pid: Some(1), session: Some("s1".into()) });
        rx
    }

    #[tokio::test(start_paused = true)]
    async fn the_least_recently_parked_process_is_retired_at_the_cap() {
        let pool = WarmPool::new(2, DEFAULT_WARM_IDLE);
        let mut a = park(&pool, "a", "m");
        tokio::time::advance(Duration::from_secs(1)).await;
        let _b = park(&pool, "b", "m");
        tokio::time::advance(Duration::from_secs(1)).await;
        let _c = park(&pool, "c", "m");
        assert_eq!(pool.state().parked, 2);
        assert!(a.recv().await.is_none(), "the oldest was retired");
        assert!(pool.checkout("a", &key("m"), Some("s1")).is_none());
        assert!(pool.checkout("b", &key("m"), Some("s1")).is_some());
    }

    #[tokio::test]
    async fn a_process_that_no_longer_fits_is_retired_at_checkout() {
        let pool = WarmPool::new(3, DEFAULT_WARM_IDLE);
        let mut a = park(&pool, "a", "sonnet");
        assert!(pool.checkout("a", &key("opus"), Some("s1")).is_none(), "another model starts cold");
        assert!(a.recv().await.is_none(), "and the kept process was retired");
        let mut b = park(&pool, "b", "m");
        assert!(pool.checkout("b", &key("m"), Some("other-session")).is_none(), "another session starts cold");
        assert!(b.recv().await.is_none());
        let _c = park(&pool, "c", "m");
        pool.retire_provider(ProviderKind::Claude);
        assert_eq!(pool.state().parked, 0, "a credential change retires the provider's processes");
    }

    #[test]
    fn keeping_can_be_turned_off() {
        let pool = WarmPool::new(0, DEFAULT_WARM_IDLE);
        assert!(pool.keeper(&ChatId::from("a"), key("m"), &RunId::from("rt-1"), "t").is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_process_waits_until_the_chat_s_previous_one_parks_or_goes() {
        let pool = WarmPool::new(3, DEFAULT_WARM_IDLE);
        let keeper = pool.keeper(&ChatId::from("a"), key("m"), &RunId::from("rt-1"), "tok").expect("keeping is on");
        assert!(pool.settle("a").await, "no process: no wait");
        let alive = keeper.alive();
        assert!(pool.settle("b").await, "another chat's process does not count");

        // Still finishing its turn (a stop's grace): the next turn waits until it parks.
        let mut waiting = tokio::spawn({
            let pool = pool.clone();
            async move { pool.settle("a").await }
        });
        assert!(tokio::time::timeout(Duration::from_secs(1), &mut waiting).await.is_err(), "it waits");
        let (handoff, _arrivals) = mpsc::channel(1);
        let driver = tokio::spawn(std::future::pending::<()>()).abort_handle();
        keeper.park(Parked { handoff, driver, pid: Some(1), session: Some("s1".into()) });
        assert!(waiting.await.expect("task"), "parked: the turn goes on (and takes it)");

        // Retired at checkout (it no longer fits): the new process waits until it is gone.
        assert!(pool.checkout("a", &key("other"), Some("s1")).is_none());
        let mut waiting = tokio::spawn({
            let pool = pool.clone();
            async move { pool.settle("a").await }
        });
        assert!(tokio::time::timeout(Duration::from_secs(1), &mut waiting).await.is_err(), "it waits");
        drop(alive);
        assert!(waiting.await.expect("task"), "gone: the turn starts a new process");

        // One that never goes is waited for at most SETTLE_WAIT.
        let _stuck = keeper.alive();
        let started = Instant::now();
        assert!(!pool.settle("a").await);
        assert_eq!(started.elapsed(), SETTLE_WAIT);
    }

    #[tokio::test]
    async fn a_handed_over_turn_is_answered_or_falls_back() {
        let pool = WarmPool::new(3, DEFAULT_WARM_IDLE);
        let mut rx = park(&pool, "a", "m");
        let warm = pool.checkout("a", &key("m"), Some("s1")).expect("kept");
        assert_eq!(warm.origin().as_str(), "rt-1");
        tokio::spawn(async move {
            if let Some(next) = rx.recv().await {
                assert_eq!(next.prompt.text, "hello");
                let _ = next.taken.send(false);
            }
        });
        assert!(
            warm.start(super::super::Prompt { text: "hello".into(), files: Vec::new(), plan: false }).await.is_none(),
            "a process that cannot take it: start cold"
        );
    }
}
