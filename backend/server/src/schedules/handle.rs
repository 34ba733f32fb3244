//! [`Scheduler`]: what routes (and other runtime parts) ask of the scheduler — run now, a
//! one-off turn at a time ([`Scheduler::once`]), stop an app's job — and the server's
//! [`Backend`] for the loop (the database, the writer, the job and turn launchers).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::tz::TimeZone;
use tokio::sync::watch;
use tracing::{Instrument, info_span, warn};

use super::context::{Claim, Clock, Ctx, lock};
use super::runner::{self, Backend};
use super::{jobs, turns};
use crate::agent::schedule_ends::{TurnEndReceiver, TurnSignal};
use crate::agent::turn::Agents;
use crate::db::schedules::{self as sql, NewRun, NewSchedule, ScheduleRow};
use crate::error::{Domain, Result};
use crate::events::Hub;
use crate::locks::KeyedLocks;
use crate::protocol::ChatId;
use crate::writer::{ScheduleWrite, WriteCommand};

/// A one-off agent turn: `prompt` sent into `chat_id` at `at` (unix ms), durable (it survives a
/// restart and fires once, late, if its time passed while the server was down).
#[derive(Debug, Clone)]
pub struct OnceTurn {
    pub chat_id: ChatId,
    pub at: i64,
    pub prompt: String,
    /// What lists show ("Reminder: …", "Continue after the usage limit").
    pub name: String,
    /// `owner`, `agent`, or the part of the server that asks.
    pub created_by: String,
}

/// How a run that was asked for went.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunStarted {
    pub run_id: i64,
    /// `running`, or `skipped` when a run of it is still going.
    pub status: &'static str,
    pub started_at: i64,
}

/// The scheduler, as the rest of the server sees it.
pub struct Scheduler {
    ctx: Arc<Ctx>,
    hub: Arc<Hub>,
    ends: Mutex<Option<TurnEndReceiver>>,
}

impl Scheduler {
    /// A scheduler over the turns' handles; nothing runs until [`Scheduler::start`].
    pub fn new(
        agents: Arc<Agents>,
        chat_locks: Arc<KeyedLocks>,
        hub: Arc<Hub>,
        ends: TurnEndReceiver,
        job_timeout: Duration,
    ) -> Self {
        let api_url = agents.providers.api_url().to_owned();
        let ctx = Arc::new(Ctx {
            agents,
            chat_locks,
            clock: Clock::System,
            job_timeout,
            api_url,
            jobs: Mutex::default(),
            turns: Mutex::default(),
        });
        Self { ctx, hub, ends: Mutex::new(Some(ends)) }
    }

    /// Closes the runs the last process left running and removes their job views (at start-up,
    /// before any route can start a run: a view made since would go with them).
    pub async fn reconcile(&self) -> Result<()> {
        let data_dir = self.ctx.data_dir().clone();
        if data_dir.join(super::view::VIEW_DIR).exists() {
            let _ = tokio::task::spawn_blocking(move || super::view::remove_stale(&data_dir)).await;
        }
        let at = self.ctx.clock.now_ms();
        let op = ScheduleWrite::Reconcile { at };
        let closed = self.ctx.agents.writer.call(|ack| WriteCommand::Schedule { op, ack }).await?;
        if closed > 0 {
            warn!(runs = closed, "schedule runs interrupted by the last shutdown were closed");
        }
        Ok(())
    }

    /// Runs the loop and the turn-end listener until `stop`.
    pub async fn start(&self, stop: watch::Receiver<bool>) {
        remove_orphan_logs(&self.ctx).await;
        if let Some(mut ends) = lock(&self.ends).take() {
            let ctx = self.ctx.clone();
            tokio::spawn(
                async move {
                    while let Some(signal) = ends.0.recv().await {
                        match signal {
                            TurnSignal::Ended(end) => turns::ended(&ctx, end).await,
                            TurnSignal::Waiting { cids, waiting } => turns::waiting(&ctx, &cids, waiting).await,
                        }
                    }
                }
                .instrument(info_span!("schedule_turns")),
            );
        }
        let backend = Live(self.ctx.clone());
        tokio::spawn(runner::run(backend, self.hub.watch_schedules(), stop).instrument(info_span!("scheduler")));
    }

    /// Now, by the scheduler's clock.
    pub fn now(&self) -> i64 {
        self.ctx.clock.now_ms()
    }

    /// Runs schedule `id` now (`trigger`: `manual`, `install`), unless a run of it is still
    /// going (then a skipped run is recorded and answered).
    pub async fn run_now(&self, id: i64, trigger: &str) -> Result<RunStarted> {
        let schedule = sql::get(&self.ctx.agents.read, id).await?.ok_or(Domain::ScheduleNotFound)?;
        let claim = self.ctx.claim(&schedule).await;
        let started_at = self.now();
        let run = NewRun {
            schedule_id: id,
            trigger: trigger.into(),
            due_at: None,
            started_at,
            status: if claim.is_some() { "running".into() } else { "skipped".into() },
            reason: claim.is_none().then(|| "Skipped: the previous run is still going.".to_owned()),
            chat_id: schedule.chat_id.clone(),
        };
        let run_id =
            self.ctx.agents.writer.call(|ack| WriteCommand::Schedule { op: ScheduleWrite::Start(run), ack }).await?;
        let status = match claim {
            Some(claim) => {
                launch(&self.ctx, schedule, run_id, claim);
                "running"
            }
            None => "skipped",
        };
        Ok(RunStarted { run_id, status, started_at })
    }

    /// Adds a one-off agent turn (see [`OnceTurn`]): its schedule id. The scheduler wakes for it.
    pub async fn once(&self, turn: OnceTurn) -> Result<i64> {
        let new = NewSchedule {
            kind: "agent_turn".into(),
            name: turn.name,
            run_at: Some(turn.at),
            chat_id: Some(turn.chat_id.to_string()),
            prompt: Some(turn.prompt),
            created_by: turn.created_by,
            missed: "run_once".into(),
            ..NewSchedule::default()
        };
        self.ctx.agents.writer.call(|ack| WriteCommand::Schedule { op: ScheduleWrite::Create(new), ack }).await
    }

    /// Removes a schedule (a one-off that should no longer fire, or any other).
    pub async fn cancel(&self, id: i64) -> Result<()> {
        self.ctx.agents.writer.call(|ack| WriteCommand::Schedule { op: ScheduleWrite::Delete(id), ack }).await?;
        let dir = self.ctx.data_dir().join(super::context::LOG_DIR).join(id.to_string());
        let _ = tokio::fs::remove_dir_all(dir).await;
        Ok(())
    }

    /// True while `run_id` is `app_id`'s running job: a job token (`auth::job_token`) is
    /// accepted only then.
    pub fn job_running(&self, app_id: i64, run_id: i64) -> bool {
        lock(&self.ctx.jobs).get(&app_id).is_some_and(|job| job.run_id == run_id && job.live)
    }

    /// Ends app `app_id`'s running job, if any (the app is being removed): killed with its
    /// group, recorded as cancelled with `why`.
    pub fn stop_app(&self, app_id: i64, why: &str) {
        if let Some(cancel) = lock(&self.ctx.jobs).get_mut(&app_id).and_then(|j| j.cancel.take()) {
            let _ = cancel.send(why.to_owned());
        }
    }

    /// The owner's zone (the setting, else the server's), and its name.
    pub async fn owner_zone(&self) -> (TimeZone, String) {
        let owner = sql::owner_timezone(&self.ctx.agents.read).await.ok().flatten();
        match owner.as_deref().map(crate::cadence::zone) {
            Some(Ok(tz)) => (tz, owner.unwrap_or_default()),
            _ => crate::cadence::server_zone(),
        }
    }

    /// Where a schedule's full logs are.
    pub fn log_dir(&self, schedule_id: i64) -> std::path::PathBuf {
        self.ctx.data_dir().join(super::context::LOG_DIR).join(schedule_id.to_string())
    }
}

fn launch(ctx: &Arc<Ctx>, schedule: ScheduleRow, run_id: i64, claim: Claim) {
    let ctx = ctx.clone();
    let span = info_span!(parent: None, "schedule_run", schedule.id = schedule.id, run.id = run_id);
    if schedule.kind == "app_job" {
        tokio::spawn(jobs::run(ctx, schedule, run_id, claim).instrument(span));
    } else {
        tokio::spawn(turns::start(ctx, schedule, run_id, claim).instrument(span));
    }
}

/// The loop's backend in the server.
struct Live(Arc<Ctx>);

impl Backend for Live {
    type Claim = Claim;

    fn now(&self) -> i64 {
        self.0.clock.now_ms()
    }

    async fn next_due(&self) -> Result<Option<i64>> {
        sql::next_due(&self.0.agents.read).await
    }

    async fn due(&self, now: i64, limit: i64) -> Result<Vec<ScheduleRow>> {
        sql::due(&self.0.agents.read, now, limit).await
    }

    async fn unplanned(&self, limit: i64) -> Result<Vec<ScheduleRow>> {
        sql::unplanned(&self.0.agents.read, limit).await
    }

    async fn zone(&self, schedule: &ScheduleRow) -> TimeZone {
        self.0.zone_for(schedule).await.0
    }

    async fn plan(&self, schedule: &ScheduleRow, next: Option<i64>) -> Result<()> {
        let op = ScheduleWrite::Plan { id: schedule.id, updated_at: schedule.updated_at, next };
        self.0.agents.writer.call(|ack| WriteCommand::Schedule { op, ack }).await.map(|_| ())
    }

    async fn claim(&self, schedule: &ScheduleRow) -> Option<Claim> {
        self.0.claim(schedule).await
    }

    async fn fire(&self, run: NewRun, updated_at: i64, next: Option<i64>, one_off: bool) -> Result<i64> {
        let op = ScheduleWrite::Fire { run, updated_at, next, one_off };
        self.0.agents.writer.call(|ack| WriteCommand::Schedule { op, ack }).await
    }

    fn launch(&self, schedule: ScheduleRow, run_id: i64, claim: Claim) {
        launch(&self.0, schedule, run_id, claim);
    }
}

/// Removes the log folders of schedules that no longer exist (a purged app's, a deleted chat's).
async fn remove_orphan_logs(ctx: &Ctx) {
    let root = ctx.data_dir().join(super::context::LOG_DIR);
    let Ok(mut entries) = tokio::fs::read_dir(&root).await else { return };
    while let Ok(Some(entry)) = entries.next_entry().await {
        let Some(id) = entry.file_name().to_str().and_then(|n| n.parse::<i64>().ok()) else { continue };
        if matches!(sql::get(&ctx.agents.read, id).await, Ok(None)) {
            let _ = tokio::fs::remove_dir_all(entry.path()).await;
        }
    }
}
