//! The scheduler's loop: one task that plans new schedules, fires what is due, and sleeps until
//! the next due time (or a change, or at most [`MAX_SLEEP`], which only re-reads the wall
//! clock). What "due" means after downtime and while a run is still going is [`decide`]: one
//! catch-up run for any number of missed ones (or none, when the schedule skips missed runs),
//! and a skipped run ("still running") rather than an overlap. The loop works through a
//! [`Backend`]: the database, writer and launchers in the server (`handle.rs`), a fake in tests.

use std::future::Future;
use std::time::Duration;

use jiff::tz::TimeZone;
use tokio::sync::watch;
use tracing::warn;

use crate::cadence::Cadence;
use crate::db::schedules::{NewRun, ScheduleRow};
use crate::error::Result;

/// Longest sleep: the loop re-reads the wall clock at least this often (a clock that jumped
/// is noticed), whatever the next due time.
pub const MAX_SLEEP: Duration = Duration::from_secs(300);
/// A fire this much after its due time is a catch-up (the server was down or asleep).
pub const CATCH_UP_AFTER_MS: i64 = 60_000;
/// Schedules planned or fired per query.
const BATCH: i64 = 64;
/// Pause after a failed round, doubling up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// What the loop needs from the world.
pub trait Backend: Send + Sync {
    /// A held run slot (dropped: freed).
    type Claim: Send;
    fn now(&self) -> i64;
    fn next_due(&self) -> impl Future<Output = Result<Option<i64>>> + Send;
    fn due(&self, now: i64, limit: i64) -> impl Future<Output = Result<Vec<ScheduleRow>>> + Send;
    fn unplanned(&self, limit: i64) -> impl Future<Output = Result<Vec<ScheduleRow>>> + Send;
    /// The zone a schedule's cadence is read in.
    fn zone(&self, schedule: &ScheduleRow) -> impl Future<Output = TimeZone> + Send;
    /// Records the next due time (`None`: never; the schedule pauses saying so).
    fn plan(&self, schedule: &ScheduleRow, next: Option<i64>) -> impl Future<Output = Result<()>> + Send;
    /// The schedule's run slot, or `None` while a run of it is still going.
    fn claim(&self, schedule: &ScheduleRow) -> impl Future<Output = Option<Self::Claim>> + Send;
    /// Records a run (running or skipped) and moves the due time on, unless the schedule changed
    /// since it was read (`updated_at`): the run's id.
    fn fire(
        &self,
        run: NewRun,
        updated_at: i64,
        next: Option<i64>,
        one_off: bool,
    ) -> impl Future<Output = Result<i64>> + Send;
    /// Starts run `run_id` of `schedule` in the background.
    fn launch(&self, schedule: ScheduleRow, run_id: i64, claim: Self::Claim);
}

/// What to do with a due schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Run it, or record it skipped with this reason.
    pub run: bool,
    pub trigger: &'static str,
    pub reason: Option<String>,
    /// The due time after this one (`None`: nothing more).
    pub next: Option<i64>,
    pub one_off: bool,
}

/// Decides a due schedule at `now`: `busy` when a run of it is still going.
pub fn decide(schedule: &ScheduleRow, now: i64, tz: &TimeZone, busy: bool) -> Decision {
    let due = schedule.next_due_at.unwrap_or(now);
    let cadence = schedule.cron.as_deref().and_then(|c| Cadence::parse(c, false).ok());
    let one_off = cadence.is_none();
    // Never a burst: the next due time is the first one after now.
    let next = cadence.as_ref().and_then(|c| c.next_after(now.max(due), tz));
    let late = now - due > CATCH_UP_AFTER_MS;
    let trigger = if late { "catch_up" } else { "schedule" };
    let missed = 1 + cadence.as_ref().map_or(0, |c| c.count_between(due, now, tz));
    let runs = |n: usize| if n == 1 { "1 run".to_owned() } else { format!("{n} runs") };
    let (run, reason) = if late && schedule.missed == "skip" {
        (false, Some(format!("Missed {} while the server was down; this schedule skips missed runs.", runs(missed))))
    } else if busy {
        (false, Some("Skipped: the previous run is still going.".to_owned()))
    } else if late {
        (true, Some(format!("Catching up: missed {} while the server was down; ran once.", runs(missed))))
    } else {
        (true, None)
    };
    Decision { run, trigger, reason, next, one_off }
}

/// The due time of a schedule that has none yet: the first after `now` for a cadence, the
/// one-off's own time (even past: it then fires at once, late).
pub fn first_due(schedule: &ScheduleRow, now: i64, tz: &TimeZone) -> Option<i64> {
    match (&schedule.cron, schedule.run_at) {
        (Some(cron), _) => Cadence::parse(cron, false).ok()?.next_after(now, tz),
        (None, Some(at)) => Some(at),
        (None, None) => None,
    }
}

/// Runs the loop until `stop` turns true. `wake` changes when schedules change.
pub async fn run<B: Backend>(backend: B, mut wake: watch::Receiver<u64>, mut stop: watch::Receiver<bool>) {
    let mut backoff = MIN_BACKOFF;
    loop {
        wake.borrow_and_update();
        let wait = match round(&backend).await {
            Ok(next) => {
                backoff = MIN_BACKOFF;
                let now = backend.now();
                next.map_or(MAX_SLEEP, |due| {
                    Duration::from_millis(u64::try_from(due.saturating_sub(now)).unwrap_or(0)).min(MAX_SLEEP)
                })
            }
            Err(e) => {
                warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "the scheduler could not read or record schedules");
                let wait = backoff;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                wait
            }
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            changed = wake.changed() => if changed.is_err() { return },
            () = crate::shutdown::stopping(&mut stop) => return,
        }
    }
}

/// Plans what has no due time, fires what is due; answers the next due time.
pub async fn round<B: Backend>(backend: &B) -> Result<Option<i64>> {
    loop {
        let rows = backend.unplanned(BATCH).await?;
        if rows.is_empty() {
            break;
        }
        let now = backend.now();
        for schedule in rows {
            let tz = backend.zone(&schedule).await;
            backend.plan(&schedule, first_due(&schedule, now, &tz)).await?;
        }
    }
    loop {
        let now = backend.now();
        let due = backend.due(now, BATCH).await?;
        if due.is_empty() {
            break;
        }
        for schedule in due {
            fire(backend, schedule, now).await?;
        }
    }
    backend.next_due().await
}

async fn fire<B: Backend>(backend: &B, schedule: ScheduleRow, now: i64) -> Result<()> {
    let tz = backend.zone(&schedule).await;
    let claim = backend.claim(&schedule).await;
    let d = decide(&schedule, now, &tz, claim.is_none());
    let run = NewRun {
        schedule_id: schedule.id,
        trigger: d.trigger.into(),
        due_at: schedule.next_due_at,
        started_at: now,
        status: if d.run { "running".into() } else { "skipped".into() },
        reason: d.reason,
        chat_id: schedule.chat_id.clone(),
    };
    let run_id = backend.fire(run, schedule.updated_at, d.next, d.one_off).await?;
    if d.run
        && let Some(claim) = claim
    {
        backend.launch(schedule, run_id, claim);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::locks::Unpoisoned;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Schedules in memory; a launched run "runs" for `run_for` of (paused) time, then ends
    /// with `outcome` through the same failure rule as the writer.
    #[derive(Clone)]
    struct Fake(Arc<Inner>);

    struct Inner {
        base: i64,
        start: tokio::time::Instant,
        rows: Mutex<Vec<ScheduleRow>>,
        runs: Mutex<Vec<NewRun>>,
        running: Mutex<HashMap<i64, i64>>,
        run_for: Duration,
        fails: bool,
        wake: watch::Sender<u64>,
        rounds: Mutex<usize>,
        tz: TimeZone,
    }

    impl Fake {
        fn new(rows: Vec<ScheduleRow>, base: i64, run_for: Duration, fails: bool) -> Self {
            Self(Arc::new(Inner {
                base,
                start: tokio::time::Instant::now(),
                rows: Mutex::new(rows),
                runs: Mutex::new(Vec::new()),
                running: Mutex::new(HashMap::new()),
                run_for,
                fails,
                wake: watch::channel(0).0,
                rounds: Mutex::new(0),
                tz: TimeZone::UTC,
            }))
        }
        fn in_zone(mut self, tz: TimeZone) -> Self {
            if let Some(inner) = Arc::get_mut(&mut self.0) {
                inner.tz = tz;
            }
            self
        }
        fn runs(&self) -> Vec<NewRun> {
            self.0.runs.locked().clone()
        }
        fn row(&self, id: i64) -> ScheduleRow {
            self.0.rows.locked().iter().find(|r| r.id == id).cloned().expect("row")
        }
    }

    struct FakeClaim(Arc<Inner>, i64);

    impl Drop for FakeClaim {
        fn drop(&mut self) {
            self.0.running.locked().remove(&self.1);
        }
    }

    impl Backend for Fake {
        type Claim = FakeClaim;
        fn now(&self) -> i64 {
            Clock::now(&self.0)
        }
        async fn next_due(&self) -> Result<Option<i64>> {
            *self.0.rounds.locked() += 1;
            let rows = self.0.rows.locked();
            Ok(rows.iter().filter(|r| r.paused_at.is_none()).filter_map(|r| r.next_due_at).min())
        }
        async fn due(&self, now: i64, _limit: i64) -> Result<Vec<ScheduleRow>> {
            let rows = self.0.rows.locked();
            Ok(rows
                .iter()
                .filter(|r| r.paused_at.is_none() && r.next_due_at.is_some_and(|d| d <= now))
                .cloned()
                .collect())
        }
        async fn unplanned(&self, _limit: i64) -> Result<Vec<ScheduleRow>> {
            let rows = self.0.rows.locked();
            Ok(rows
                .iter()
                .filter(|r| r.next_due_at.is_none() && r.paused_at.is_none() && r.finished_at.is_none())
                .cloned()
                .collect())
        }
        async fn zone(&self, _schedule: &ScheduleRow) -> TimeZone {
            self.0.tz.clone()
        }
        async fn plan(&self, schedule: &ScheduleRow, next: Option<i64>) -> Result<()> {
            let mut rows = self.0.rows.locked();
            if let Some(r) = rows.iter_mut().find(|r| r.id == schedule.id) {
                r.next_due_at = next;
            }
            Ok(())
        }
        async fn claim(&self, schedule: &ScheduleRow) -> Option<FakeClaim> {
            let mut running = self.0.running.locked();
            if running.contains_key(&schedule.id) {
                return None;
            }
            running.insert(schedule.id, 0);
            Some(FakeClaim(self.0.clone(), schedule.id))
        }
        async fn fire(&self, run: NewRun, _updated_at: i64, next: Option<i64>, one_off: bool) -> Result<i64> {
            let mut rows = self.0.rows.locked();
            if let Some(r) = rows.iter_mut().find(|r| r.id == run.schedule_id) {
                r.next_due_at = next;
                if one_off {
                    r.finished_at = Some(run.started_at);
                }
            }
            let mut runs = self.0.runs.locked();
            runs.push(run);
            Ok(runs.len() as i64)
        }
        fn launch(&self, schedule: ScheduleRow, _run_id: i64, claim: FakeClaim) {
            let inner = self.0.clone();
            tokio::spawn(async move {
                tokio::time::sleep(inner.run_for).await;
                let mut rows = inner.rows.locked();
                if let Some(r) = rows.iter_mut().find(|r| r.id == schedule.id) {
                    let (failures, pause) = crate::writer::failures_after(r.failures, Some(inner.fails));
                    r.failures = failures;
                    if pause {
                        r.paused_at = Some(0);
                        r.next_due_at = None;
                    }
                }
                drop(rows);
                drop(claim);
                inner.wake.send_modify(|v| *v += 1);
            });
        }
    }

    struct Clock;
    impl Clock {
        fn now(inner: &Inner) -> i64 {
            inner.base + inner.start.elapsed().as_millis() as i64
        }
    }

    fn schedule(id: i64, cron: &str, next_due_at: Option<i64>) -> ScheduleRow {
        ScheduleRow {
            id,
            kind: "app_job".into(),
            name: format!("s{id}"),
            cron: Some(cron.into()),
            run_at: None,
            timezone: None,
            app_id: Some(id),
            job: None,
            manifest_cron: None,
            user_configurable: false,
            chat_id: None,
            prompt: None,
            created_by: "owner".into(),
            origin_chat_id: None,
            missed: "run_once".into(),
            timeout_secs: None,
            paused_at: None,
            paused_reason: None,
            failures: 0,
            next_due_at,
            finished_at: None,
            last_run_at: None,
            last_status: None,
            created_at: 0,
            updated_at: 0,
            app_name: None,
            app_slug: None,
            chat_title: None,
            running: false,
            waiting: false,
        }
    }

    /// 2024-06-07T09:00:00Z
    const NINE: i64 = 1_717_750_800_000;
    const HOUR: i64 = 3_600_000;

    fn spawn_loop(fake: &Fake) -> watch::Sender<bool> {
        let (stop, stop_rx) = watch::channel(false);
        tokio::spawn(run(fake.clone(), fake.0.wake.subscribe(), stop_rx));
        stop
    }

    #[tokio::test(start_paused = true)]
    async fn it_sleeps_until_each_due_time_and_fires_once_per_due_time() {
        // Planned at 09:00:30: hourly, first due 10:00.
        let fake = Fake::new(vec![schedule(1, "0 * * * *", None)], NINE + 30_000, Duration::from_secs(1), false);
        let _stop = spawn_loop(&fake);
        tokio::time::sleep(Duration::from_secs(3 * 3600 + 60)).await;
        let runs = fake.runs();
        let due: Vec<_> = runs.iter().map(|r| r.due_at).collect();
        assert_eq!(due, [Some(NINE + HOUR), Some(NINE + 2 * HOUR), Some(NINE + 3 * HOUR)]);
        assert!(
            runs.iter()
                .all(|r| r.status == "running" && r.trigger == "schedule" && r.started_at == r.due_at.expect("due"))
        );
        // No polling: a round per due time and per run's end, plus the wall-clock re-reads.
        let rounds = *fake.0.rounds.locked();
        assert!(rounds <= 3 * 2 + 3 * 3600 / MAX_SLEEP.as_secs() as usize + 2, "{rounds} rounds");
    }

    #[tokio::test(start_paused = true)]
    async fn a_restart_that_missed_three_runs_runs_once_then_keeps_its_cadence() {
        // Due at 09:00, the server comes back at 11:30: 09:00, 10:00 and 11:00 were missed.
        let fake =
            Fake::new(vec![schedule(1, "0 * * * *", Some(NINE))], NINE + 2 * HOUR + 30 * 60_000, Duration::ZERO, false);
        let _stop = spawn_loop(&fake);
        tokio::time::sleep(Duration::from_secs(60)).await;
        let runs = fake.runs();
        assert_eq!(runs.len(), 1, "one catch-up run, never a burst: {runs:?}");
        assert_eq!(runs[0].trigger, "catch_up");
        assert!(runs[0].reason.as_deref().is_some_and(|r| r.contains("missed 3 runs")), "{:?}", runs[0].reason);
        assert_eq!(fake.row(1).next_due_at, Some(NINE + 3 * HOUR));
        tokio::time::sleep(Duration::from_secs(30 * 60)).await;
        assert_eq!(fake.runs().len(), 2);
        assert_eq!(fake.runs()[1].trigger, "schedule");
    }

    #[tokio::test(start_paused = true)]
    async fn a_schedule_that_skips_missed_runs_records_the_skip() {
        let mut row = schedule(1, "0 * * * *", Some(NINE));
        row.missed = "skip".into();
        let fake = Fake::new(vec![row], NINE + 2 * HOUR + 60_000 * 30, Duration::ZERO, false);
        let _stop = spawn_loop(&fake);
        tokio::time::sleep(Duration::from_secs(60)).await;
        let runs = fake.runs();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].status, "skipped");
        assert!(runs[0].reason.as_deref().is_some_and(|r| r.contains("Missed 3 runs")));
    }

    #[tokio::test(start_paused = true)]
    async fn a_run_still_going_when_the_next_is_due_records_a_skip_not_an_overlap() {
        // Every minute; each run takes 90 s.
        let fake = Fake::new(vec![schedule(1, "* * * * *", None)], NINE, Duration::from_secs(90), false);
        let _stop = spawn_loop(&fake);
        tokio::time::sleep(Duration::from_secs(4 * 60 + 10)).await;
        let statuses: Vec<String> = fake.runs().iter().map(|r| r.status.clone()).collect();
        assert_eq!(statuses, ["running", "skipped", "running", "skipped"]);
        let skipped = &fake.runs()[1];
        assert_eq!(skipped.reason.as_deref(), Some("Skipped: the previous run is still going."));
    }

    #[tokio::test(start_paused = true)]
    async fn five_failures_in_a_row_pause_the_schedule() {
        let fake = Fake::new(vec![schedule(1, "*/10 * * * *", None)], NINE, Duration::from_secs(5), true);
        let _stop = spawn_loop(&fake);
        tokio::time::sleep(Duration::from_secs(3 * 3600)).await;
        assert_eq!(fake.runs().len(), 5, "nothing runs after the pause");
        let row = fake.row(1);
        assert!(row.paused_at.is_some() && row.next_due_at.is_none());
        assert_eq!(row.failures, 5);
    }

    #[tokio::test(start_paused = true)]
    async fn a_one_off_fires_once_even_when_its_time_passed_while_down() {
        let mut row = schedule(1, "", None);
        row.cron = None;
        row.kind = "agent_turn".into();
        row.run_at = Some(NINE - HOUR);
        let fake = Fake::new(vec![row], NINE, Duration::ZERO, false);
        let _stop = spawn_loop(&fake);
        tokio::time::sleep(Duration::from_secs(3600)).await;
        let runs = fake.runs();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].trigger, "catch_up");
        assert!(fake.row(1).finished_at.is_some() && fake.row(1).next_due_at.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn across_daylight_saving_changes_the_loop_fires_each_wall_clock_time_once() {
        let eastern = TimeZone::posix("EST5EDT,M3.2.0,M11.1.0").expect("tz");
        let local = |ms: i64| {
            jiff::Timestamp::from_millisecond(ms)
                .expect("ts")
                .to_zoned(eastern.clone())
                .strftime("%m-%d %H:%M %z")
                .to_string()
        };
        // Forward (2024-03-10): 02:30 does not exist and fires at 03:00; back (2024-11-03):
        // 01:30 happens twice and fires once.
        for (cron, start, expected) in [
            ("30 2 * * *", 1_710_000_000_000_i64, ["03-10 03:00 -0400", "03-11 02:30 -0400", "03-12 02:30 -0400"]),
            ("30 1 * * *", 1_730_548_800_000_i64, ["11-03 01:30 -0400", "11-04 01:30 -0500", "11-05 01:30 -0500"]),
        ] {
            let fake = Fake::new(vec![schedule(1, cron, None)], start, Duration::ZERO, false).in_zone(eastern.clone());
            let _stop = spawn_loop(&fake);
            tokio::time::sleep(Duration::from_secs(3 * 86_400 + 3600)).await;
            let fired: Vec<String> = fake.runs().iter().map(|r| local(r.started_at)).collect();
            assert_eq!(fired, expected, "{cron}");
        }
    }

    #[test]
    fn decide_on_time_late_and_busy() {
        let tz = TimeZone::UTC;
        let row = schedule(1, "0 * * * *", Some(NINE));
        let on_time = decide(&row, NINE + 500, &tz, false);
        assert_eq!((on_time.run, on_time.trigger, on_time.next), (true, "schedule", Some(NINE + HOUR)));
        let busy = decide(&row, NINE + 500, &tz, true);
        assert!(!busy.run && busy.next == Some(NINE + HOUR));
    }
}
