//! What the scheduler's parts share: the handles they use, the clock, who is running now (one
//! job per app, one turn per schedule), and how a run is closed and the owner told.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::tz::TimeZone;
use tokio::sync::oneshot;
use tracing::warn;

use crate::agent::turn::Agents;
use crate::cadence;
use crate::db::schedules::{RunEnd, ScheduleRow};
use crate::locks::KeyedLocks;
use crate::locks::Unpoisoned;
use crate::protocol::NotificationKind;
use crate::push::{Notice, Source};
use crate::writer::{FinishedRun, WriteCommand};

/// Where full job logs go: `DATA_DIR/schedule-logs/<schedule id>/<run id>.log`.
pub const LOG_DIR: &str = "schedule-logs";

/// The scheduler's clock: the system's, or (in tests) one that moves with tokio's paused time.
#[derive(Clone, Debug)]
pub enum Clock {
    System,
    /// `base` unix ms at `start`, moving with `tokio::time::Instant`.
    Tokio {
        base: i64,
        start: tokio::time::Instant,
    },
}

impl Clock {
    /// Now, in unix milliseconds.
    pub fn now_ms(&self) -> i64 {
        match self {
            Clock::System => crate::db::now_ms(),
            Clock::Tokio { base, start } => {
                base + i64::try_from(start.elapsed().as_millis()).unwrap_or(i64::MAX - base)
            }
        }
    }
}

/// A job running for an app: its run, and how to end it early.
#[derive(Debug)]
pub struct RunningJob {
    pub run_id: i64,
    pub cancel: Option<oneshot::Sender<String>>,
    /// From just before its process starts until its group is killed: while this holds, the
    /// run's token (`auth::job_token`) is accepted.
    pub live: bool,
}

/// A scheduled turn sent and not yet ended.
#[derive(Debug, Clone, Default)]
pub struct Outstanding {
    pub run_id: i64,
    /// The cid of its message, once sent.
    pub cid: Option<String>,
    pub chat_id: Option<String>,
}

/// What the scheduler's parts share.
pub struct Ctx {
    pub agents: Arc<Agents>,
    /// The routes' per-chat locks: a scheduled send decides like the owner's.
    pub chat_locks: Arc<KeyedLocks>,
    pub clock: Clock,
    /// A job's time limit when its schedule sets none.
    pub job_timeout: Duration,
    /// How jobs reach the API (`API_BASE_URL`).
    pub api_url: String,
    /// Running jobs by app id (one at a time per app).
    pub jobs: Mutex<HashMap<i64, RunningJob>>,
    /// Scheduled turns in flight by schedule id (one at a time per schedule).
    pub turns: Mutex<HashMap<i64, Outstanding>>,
}

/// Holds a schedule's slot (its app's job, or its turn) while a run starts and goes; a claim
/// that is dropped before the run took the slot over frees it.
pub struct Claim {
    ctx: Arc<Ctx>,
    slot: Slot,
    /// The job's cancel signal, handed to the job when it starts.
    pub cancelled: Option<oneshot::Receiver<String>>,
    kept: bool,
}

enum Slot {
    Job(i64),
    Turn(i64),
}

impl Claim {
    /// The run took the slot: it frees it itself when it ends.
    pub fn keep(mut self, run_id: i64) {
        self.kept = true;
        match self.slot {
            Slot::Job(app) => {
                if let Some(job) = lock(&self.ctx.jobs).get_mut(&app) {
                    job.run_id = run_id;
                }
            }
            Slot::Turn(schedule) => {
                if let Some(turn) = lock(&self.ctx.turns).get_mut(&schedule) {
                    turn.run_id = run_id;
                }
            }
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        match self.slot {
            Slot::Job(app) => {
                lock(&self.ctx.jobs).remove(&app);
            }
            Slot::Turn(schedule) => {
                lock(&self.ctx.turns).remove(&schedule);
            }
        }
    }
}

pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.locked()
}

impl Ctx {
    /// The data directory.
    pub fn data_dir(&self) -> &PathBuf {
        &self.agents.data_dir
    }

    /// Marks app `app_id`'s job run `run_id` live or not (its token is accepted only while it is).
    pub fn job_live(&self, app_id: i64, run_id: i64, live: bool) {
        if let Some(job) = lock(&self.jobs).get_mut(&app_id)
            && job.run_id == run_id
        {
            job.live = live;
        }
    }

    /// Takes the slot `schedule` runs in, or `None` when a run of it (or of its app's job) is
    /// still going. A scheduled turn whose chat no longer runs anything lost its end report:
    /// it is closed as interrupted and the slot is free again.
    pub async fn claim(self: &Arc<Self>, schedule: &ScheduleRow) -> Option<Claim> {
        if schedule.kind == "app_job" {
            let app = schedule.app_id?;
            let (tx, rx) = oneshot::channel();
            let mut jobs = lock(&self.jobs);
            if jobs.contains_key(&app) {
                return None;
            }
            jobs.insert(app, RunningJob { run_id: 0, cancel: Some(tx), live: false });
            return Some(Claim { ctx: self.clone(), slot: Slot::Job(app), cancelled: Some(rx), kept: false });
        }
        let stale = {
            let turns = lock(&self.turns);
            match turns.get(&schedule.id) {
                None => None,
                Some(o) => {
                    let idle = o.chat_id.as_deref().is_some_and(|chat| self.agents.turns.get(chat).is_none());
                    if o.cid.is_some() && idle { Some(o.run_id) } else { return None }
                }
            }
        };
        if let Some(run_id) = stale {
            lock(&self.turns).remove(&schedule.id);
            let end = RunEnd {
                status: "interrupted".into(),
                reason: Some("The turn ended without telling the scheduler how.".into()),
                ended_at: self.clock.now_ms(),
                ..RunEnd::default()
            };
            self.finish(run_id, end, None, false).await;
        }
        let mut turns = lock(&self.turns);
        if turns.contains_key(&schedule.id) {
            return None;
        }
        turns.insert(schedule.id, Outstanding::default());
        Some(Claim { ctx: self.clone(), slot: Slot::Turn(schedule.id), cancelled: None, kept: false })
    }

    /// The zone a schedule's cadence is read in: its own, else the owner's, else the server's.
    pub async fn zone_for(&self, schedule: &ScheduleRow) -> (TimeZone, String) {
        let name = match &schedule.timezone {
            Some(zone) => Some(zone.clone()),
            None => crate::db::schedules::owner_timezone(&self.agents.read).await.ok().flatten(),
        };
        match name.as_deref().map(cadence::zone) {
            Some(Ok(tz)) => (tz, name.unwrap_or_default()),
            _ => {
                let (tz, name) = cadence::server_zone();
                (tz, name)
            }
        }
    }

    /// Marks run `run_id` as waiting for a free agent (since now), or not any more.
    pub async fn waiting(&self, run_id: i64, waiting: bool) {
        let since = waiting.then(|| self.clock.now_ms());
        let op = crate::writer::ScheduleWrite::Waiting { run_id, since };
        if let Err(e) = self.agents.writer.call(|ack| WriteCommand::Schedule { op, ack }).await {
            warn!(run_id, error = %e, "a schedule run's wait could not be recorded");
        }
    }

    /// Closes run `run_id` and tells the owner about a failure (unless `told`: a failed turn
    /// is reported by the turn path itself), or a schedule that paused itself.
    pub async fn finish(&self, run_id: i64, end: RunEnd, failed: Option<bool>, told: bool) -> Option<FinishedRun> {
        let reason = end.reason.clone();
        let status = end.status.clone();
        let exit_code = end.exit_code;
        let finished =
            match self.agents.writer.call(|ack| WriteCommand::ScheduleFinish { run_id, end, failed, ack }).await {
                Ok(finished) => finished?,
                Err(e) => {
                    warn!(run_id, error = %e, "a schedule run could not be recorded");
                    return None;
                }
            };
        let s = &finished.schedule;
        if finished.paused {
            let body = s.paused_reason.clone().unwrap_or_else(|| "It failed too often.".into());
            self.notify(s, format!("{} paused", s.name), body);
        } else if failed == Some(true) && !told {
            let why = match (&reason, exit_code) {
                (Some(r), _) => r.clone(),
                (None, Some(code)) => format!("It exited with status {code}."),
                (None, None) => format!("It ended {status}."),
            };
            self.notify(s, format!("{} failed", s.name), why);
        }
        Some(finished)
    }

    fn notify(&self, s: &ScheduleRow, title: String, body: String) {
        let mut notice = Notice::new(
            NotificationKind::Schedule,
            Source::Schedule { id: s.id.to_string(), app_id: s.app_id },
            title,
            Some(body),
        );
        if s.app_id.is_none() {
            notice.target = s.chat_id.as_ref().map(|c| format!("/shell/?chat={c}"));
        }
        self.agents.push.notify(notice);
    }
}
