//! Schedules and their runs, applied inside the writer's transaction. Every change marks the
//! batch so that, after the commit, the scheduler wakes and open shells refresh their lists.

use sqlx::SqliteConnection;

use super::batch::Batch;
use super::commands::{FinishedRun, ScheduleChange, ScheduleWrite};
use crate::db::now_ms;
use crate::db::schedules::{self as sql, AppJobSpec, RunEnd};
use crate::error::{Domain, Result};

/// Schedules one server keeps (a bound against a runaway agent or app).
pub const MAX_SCHEDULES: i64 = 5_000;
/// Unfinished schedules one chat's agent may keep (cadences and pending reminders).
pub const MAX_AGENT_SCHEDULES_PER_CHAT: i64 = 10;
/// Unfinished schedules all agents together may keep.
pub const MAX_AGENT_SCHEDULES: i64 = 50;
/// Failed runs in a row after which a schedule pauses itself.
pub const MAX_FAILURES: i64 = 5;
/// Fired one-offs are forgotten this long after they ran.
const FINISHED_RETENTION_MS: i64 = 7 * 24 * 3600 * 1000;

#[tracing::instrument(level = "debug", skip_all)]
pub(super) async fn apply(conn: &mut SqliteConnection, batch: &mut Batch, op: ScheduleWrite) -> Result<i64> {
    batch.schedules_changed = true;
    let now = now_ms();
    match op {
        ScheduleWrite::Create(new) => {
            if sql::count_all(conn).await? >= MAX_SCHEDULES {
                return Err(Domain::TooManySchedules(MAX_SCHEDULES).into());
            }
            sql::forget_finished(conn, now - FINISHED_RETENTION_MS).await?;
            if new.created_by == "agent" {
                let (own, all) = sql::count_agent(conn, new.origin_chat_id.as_deref()).await?;
                if own >= MAX_AGENT_SCHEDULES_PER_CHAT || all >= MAX_AGENT_SCHEDULES {
                    return Err(Domain::TooManyAgentSchedules(MAX_AGENT_SCHEDULES_PER_CHAT, MAX_AGENT_SCHEDULES).into());
                }
            }
            sql::insert(conn, &new, now).await
        }
        ScheduleWrite::Update { id, change } => {
            let row = sql::get_in(conn, id).await?.ok_or(Domain::ScheduleNotFound)?;
            update(conn, row, change, now).await?;
            Ok(id)
        }
        ScheduleWrite::Delete(id) => {
            if !sql::delete(conn, id).await? {
                return Err(Domain::ScheduleNotFound.into());
            }
            Ok(id)
        }
        ScheduleWrite::SetAppJob { app_id, name, cron, job, timezone, created_by } => {
            match sql::of_app_in(conn, app_id).await? {
                Some(mut row) => {
                    let replan = row.cron != cron || row.timezone != timezone;
                    row.cron = cron;
                    row.job = job;
                    row.timezone = timezone;
                    sql::update(conn, &row, replan, now).await?;
                    Ok(row.id)
                }
                None => {
                    let new = sql::NewSchedule {
                        kind: "app_job".into(),
                        name,
                        cron,
                        timezone,
                        app_id: Some(app_id),
                        job,
                        created_by,
                        missed: "run_once".into(),
                        ..sql::NewSchedule::default()
                    };
                    sql::insert(conn, &new, now).await
                }
            }
        }
        ScheduleWrite::Plan { id, updated_at, next } => match next {
            Some(next) => Ok(i64::from(sql::plan(conn, id, updated_at, Some(next)).await?)),
            None => {
                sql::pause(conn, id, "Its cadence never comes round again.", now).await?;
                Ok(0)
            }
        },
        ScheduleWrite::Fire { run, updated_at, next, one_off } => {
            sql::advance(conn, run.schedule_id, updated_at, next, one_off, now).await?;
            sql::insert_run(conn, &run).await
        }
        ScheduleWrite::Start(run) => sql::insert_run(conn, &run).await,
        ScheduleWrite::Link { run_id, chat_id, turn } => {
            sql::link_run(conn, run_id, &chat_id, turn.as_deref()).await?;
            Ok(run_id)
        }
        ScheduleWrite::Waiting { run_id, since } => {
            sql::set_waiting(conn, run_id, since).await?;
            Ok(run_id)
        }
        ScheduleWrite::Reconcile { at } => {
            let mut closed = 0;
            for (run_id, schedule_id) in sql::running_runs(conn).await? {
                let end = RunEnd {
                    status: "interrupted".into(),
                    reason: Some("The server restarted while it ran.".into()),
                    ended_at: at,
                    ..RunEnd::default()
                };
                if sql::finish_run(conn, run_id, &end).await?.is_some() {
                    let failures = sql::failures(conn, schedule_id).await?;
                    sql::record_outcome(conn, schedule_id, "interrupted", failures).await?;
                    closed += 1;
                }
            }
            Ok(closed)
        }
        ScheduleWrite::SetTimezone(zone) => {
            let replanned = sql::set_owner_timezone(conn, zone.as_deref(), now).await?;
            Ok(i64::try_from(replanned).unwrap_or(i64::MAX))
        }
    }
}

async fn update(conn: &mut SqliteConnection, mut row: sql::ScheduleRow, c: ScheduleChange, now: i64) -> Result<()> {
    let mut replan = false;
    if let Some(name) = c.name {
        row.name = name;
    }
    if let Some(cron) = c.cron {
        replan |= row.cron.as_deref() != Some(cron.as_str());
        row.cron = Some(cron);
        row.run_at = None;
    }
    if let Some(run_at) = c.run_at {
        replan |= row.run_at != Some(run_at);
        row.run_at = Some(run_at);
        row.cron = None;
        row.finished_at = None;
    }
    if let Some(zone) = c.timezone {
        replan |= row.timezone != zone;
        row.timezone = zone;
    }
    if let Some(prompt) = c.prompt {
        row.prompt = Some(prompt);
    }
    if let Some(missed) = c.missed {
        row.missed = missed;
    }
    if let Some(timeout) = c.timeout_secs {
        row.timeout_secs = timeout;
    }
    match c.paused {
        Some(true) if row.paused_at.is_none() => {
            row.paused_at = Some(now);
            row.paused_reason = Some("Paused by the owner.".into());
            replan = true;
        }
        Some(false) if row.paused_at.is_some() => {
            row.paused_at = None;
            row.paused_reason = None;
            row.failures = 0;
            replan = true;
        }
        _ => {}
    }
    sql::update(conn, &row, replan, now).await
}

/// Failed runs in a row after a run (`failed`: it failed, it succeeded, or neither counts nor
/// clears, as a stop), and whether that pauses the schedule.
pub fn failures_after(before: i64, failed: Option<bool>) -> (i64, bool) {
    match failed {
        Some(true) => (before + 1, before + 1 >= MAX_FAILURES),
        Some(false) => (0, false),
        None => (before, false),
    }
}

/// Closes a run and keeps the schedule's record: its last status, failures in a row, and the
/// pause after [`MAX_FAILURES`]. `failed`: whether the run counts as a failure (`None`: it
/// neither counts nor clears, e.g. a stop by the owner). `None` when the run was already closed.
#[tracing::instrument(level = "debug", skip_all, fields(run.id = run_id))]
pub(super) async fn finish(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    run_id: i64,
    end: &RunEnd,
    failed: Option<bool>,
) -> Result<Option<FinishedRun>> {
    batch.schedules_changed = true;
    let Some(schedule_id) = sql::finish_run(conn, run_id, end).await? else { return Ok(None) };
    let (failures, pause) = failures_after(sql::failures(conn, schedule_id).await?, failed);
    sql::record_outcome(conn, schedule_id, &end.status, failures).await?;
    let mut paused = false;
    if pause {
        let why = end.reason.as_deref().unwrap_or(&end.status);
        let reason = format!("Paused after {failures} failed runs in a row. The last: {why}");
        sql::pause(conn, schedule_id, &reason, end.ended_at).await?;
        paused = true;
    }
    let schedule = sql::get_in(conn, schedule_id).await?;
    Ok(schedule.map(|schedule| FinishedRun { schedule, failures, paused }))
}

/// Registers, updates or removes app `app_id`'s job schedule from its manifest (`spec`) at
/// apply and install. A cadence changed since by the app or the owner is kept unless the
/// manifest's default itself changed. Without `schedule` in the manifest, the schedule the
/// manifest made goes; one the app registered itself stays.
#[tracing::instrument(level = "debug", skip_all, fields(app.id = app_id))]
pub(super) async fn sync_app(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    app_id: i64,
    name: &str,
    spec: Option<&AppJobSpec>,
) -> Result<()> {
    let existing = sql::of_app_in(conn, app_id).await?;
    let now = now_ms();
    match (existing, spec) {
        (None, None) => return Ok(()),
        (Some(row), None) => {
            if row.created_by == "manifest" {
                sql::delete(conn, row.id).await?;
            }
        }
        (None, Some(spec)) => {
            let new = sql::NewSchedule {
                kind: "app_job".into(),
                name: name.to_owned(),
                cron: spec.cron.clone(),
                app_id: Some(app_id),
                job: spec.job.clone(),
                manifest_cron: spec.cron.clone(),
                user_configurable: spec.user_configurable,
                created_by: "manifest".into(),
                missed: "run_once".into(),
                ..sql::NewSchedule::default()
            };
            sql::insert(conn, &new, now).await?;
        }
        (Some(mut row), Some(spec)) => {
            let overridden = row.cron != row.manifest_cron;
            let default_changed = row.manifest_cron != spec.cron;
            let mut replan = false;
            if !overridden || default_changed {
                replan = row.cron != spec.cron;
                row.cron.clone_from(&spec.cron);
                if default_changed {
                    row.timezone = None;
                    replan = true;
                }
            }
            row.manifest_cron.clone_from(&spec.cron);
            row.job.clone_from(&spec.job);
            row.user_configurable = spec.user_configurable;
            name.clone_into(&mut row.name);
            sql::update(conn, &row, replan, now).await?;
        }
    }
    batch.schedules_changed = true;
    Ok(())
}
