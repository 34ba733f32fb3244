//! SQL for schedules and their runs (`schedules/` decides; the writer writes).
//!
//! A schedule whose app or chat is deleted is neither listed nor due; it comes back with a
//! recovery and goes with the purge (foreign keys cascade).

use serde::Serialize;
use sqlx::{SqliteConnection, SqlitePool};

use crate::error::Result;

/// Runs kept per schedule (older ones are dropped as new ones start).
pub const MAX_RUNS_KEPT: i64 = 50;

/// A schedule as stored, with what the lists show about its app or chat.
#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct ScheduleRow {
    pub id: i64,
    pub kind: String,
    pub name: String,
    pub cron: Option<String>,
    pub run_at: Option<i64>,
    pub timezone: Option<String>,
    pub app_id: Option<i64>,
    pub job: Option<String>,
    pub manifest_cron: Option<String>,
    pub user_configurable: bool,
    pub chat_id: Option<String>,
    pub prompt: Option<String>,
    pub created_by: String,
    /// The chat whose agent created it (agent-made schedules only).
    pub origin_chat_id: Option<String>,
    pub missed: String,
    pub timeout_secs: Option<i64>,
    pub paused_at: Option<i64>,
    pub paused_reason: Option<String>,
    pub failures: i64,
    pub next_due_at: Option<i64>,
    pub finished_at: Option<i64>,
    pub last_run_at: Option<i64>,
    pub last_status: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// The app's name and slug (app jobs).
    pub app_name: Option<String>,
    pub app_slug: Option<String>,
    /// The chat's title (agent turns in a chat).
    pub chat_title: Option<String>,
    /// A run of it is going now.
    pub running: bool,
    /// That run waits for a free agent.
    pub waiting: bool,
}

const SELECT: &str = "SELECT s.id, s.kind, s.name, s.cron, s.run_at, s.timezone, s.app_id, s.job, s.manifest_cron,
        s.user_configurable, s.chat_id, s.prompt, s.created_by, s.origin_chat_id, s.missed, s.timeout_secs, s.paused_at,
        s.paused_reason, s.failures, s.next_due_at, s.finished_at, s.last_run_at, s.last_status, s.created_at,
        s.updated_at, a.name AS app_name, a.slug AS app_slug, c.title AS chat_title,
        EXISTS (SELECT 1 FROM schedule_runs r WHERE r.schedule_id = s.id AND r.status = 'running') AS running,
        EXISTS (SELECT 1 FROM schedule_runs r WHERE r.schedule_id = s.id AND r.status = 'running'
                AND r.waiting_since IS NOT NULL) AS waiting
    FROM schedules s
    LEFT JOIN apps a ON a.id = s.app_id
    LEFT JOIN chats c ON c.id = s.chat_id";

/// Live: neither its app nor its chat is deleted.
const LIVE: &str = "(s.app_id IS NULL OR a.deleted_at IS NULL) AND (s.chat_id IS NULL OR c.deleted_at IS NULL)";

/// Every live schedule: due ones first (soonest first), then paused, on-demand and finished.
pub async fn list(pool: &SqlitePool) -> Result<Vec<ScheduleRow>> {
    Ok(sqlx::query_as(&format!(
        "{SELECT} WHERE {LIVE} ORDER BY s.next_due_at IS NULL, s.next_due_at, s.finished_at IS NOT NULL, s.id"
    ))
    .fetch_all(pool)
    .await?)
}

/// [`list`] as one JSON array built by SQLite (a schedule as `ScheduleRow` serialises it, plus
/// `zone` — its own, else `owner_zone` — and `cadence_editable`): 1,000 schedules cost one row
/// instead of 1,000 decoded ones. With `agent_chat`, only the schedules of [`agent_owns`].
pub async fn list_json(pool: &SqlitePool, owner_zone: &str, agent_chat: Option<&str>) -> Result<String> {
    let flag = |expr: &str| format!("json(CASE WHEN {expr} THEN 'true' ELSE 'false' END)");
    let sql = format!(
        "SELECT '[' || coalesce(group_concat(json_object(
             'id', s.id, 'kind', s.kind, 'name', s.name, 'cron', s.cron, 'run_at', s.run_at,
             'timezone', s.timezone, 'app_id', s.app_id, 'job', s.job, 'manifest_cron', s.manifest_cron,
             'user_configurable', {configurable}, 'chat_id', s.chat_id, 'prompt', s.prompt,
             'created_by', s.created_by, 'origin_chat_id', s.origin_chat_id, 'missed', s.missed, 'timeout_secs', s.timeout_secs,
             'paused_at', s.paused_at, 'paused_reason', s.paused_reason, 'failures', s.failures,
             'next_due_at', s.next_due_at, 'finished_at', s.finished_at, 'last_run_at', s.last_run_at,
             'last_status', s.last_status, 'created_at', s.created_at, 'updated_at', s.updated_at,
             'app_name', a.name, 'app_slug', a.slug, 'chat_title', c.title, 'running', {running},
             'waiting', {waiting},
             'zone', coalesce(s.timezone, ?), 'cadence_editable', {editable}),
           ',' ORDER BY s.next_due_at IS NULL, s.next_due_at, s.finished_at IS NOT NULL, s.id), '') || ']'
         FROM schedules s LEFT JOIN apps a ON a.id = s.app_id LEFT JOIN chats c ON c.id = s.chat_id
         LEFT JOIN (SELECT schedule_id, max(waiting_since IS NOT NULL) AS waits FROM schedule_runs
                    WHERE status = 'running' GROUP BY schedule_id) rr
           ON rr.schedule_id = s.id
         WHERE {LIVE} AND (? IS NULL OR s.chat_id = ? OR s.origin_chat_id = ?)",
        configurable = flag("s.user_configurable"),
        running = flag("rr.schedule_id IS NOT NULL"),
        waiting = flag("rr.waits"),
        editable = flag("s.kind != 'app_job' OR s.user_configurable"),
    );
    Ok(sqlx::query_scalar(&sql)
        .bind(owner_zone)
        .bind(agent_chat)
        .bind(agent_chat)
        .bind(agent_chat)
        .fetch_one(pool)
        .await?)
}

/// Whether the agent of `chat` may see and remove `schedule`: it runs in that chat, or that
/// chat's agent made it (a reminder into a new chat).
pub fn agent_owns(schedule: &ScheduleRow, chat: &str) -> bool {
    schedule.chat_id.as_deref() == Some(chat) || schedule.origin_chat_id.as_deref() == Some(chat)
}

/// One live schedule.
pub async fn list_one_live(pool: &SqlitePool, id: i64) -> Result<Option<ScheduleRow>> {
    Ok(sqlx::query_as(&format!("{SELECT} WHERE s.id = ? AND {LIVE}")).bind(id).fetch_optional(pool).await?)
}

/// One schedule (live or not).
pub async fn get(pool: &SqlitePool, id: i64) -> Result<Option<ScheduleRow>> {
    Ok(sqlx::query_as(&format!("{SELECT} WHERE s.id = ?")).bind(id).fetch_optional(pool).await?)
}

/// The live job schedule of app `app_id`.
pub async fn of_app(pool: &SqlitePool, app_id: i64) -> Result<Option<ScheduleRow>> {
    Ok(sqlx::query_as(&format!("{SELECT} WHERE s.kind = 'app_job' AND s.app_id = ?"))
        .bind(app_id)
        .fetch_optional(pool)
        .await?)
}

/// Live schedules due at or before `now`, soonest first.
pub async fn due(pool: &SqlitePool, now: i64, limit: i64) -> Result<Vec<ScheduleRow>> {
    Ok(sqlx::query_as(&format!(
        "{SELECT} WHERE s.next_due_at IS NOT NULL AND s.next_due_at <= ? AND {LIVE} ORDER BY s.next_due_at LIMIT ?"
    ))
    .bind(now)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

/// The earliest due time of a live schedule.
pub async fn next_due(pool: &SqlitePool) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar(
        "SELECT s.next_due_at FROM schedules s
         LEFT JOIN apps a ON a.id = s.app_id
         LEFT JOIN chats c ON c.id = s.chat_id
         WHERE s.next_due_at IS NOT NULL AND (s.app_id IS NULL OR a.deleted_at IS NULL)
           AND (s.chat_id IS NULL OR c.deleted_at IS NULL)
         ORDER BY s.next_due_at LIMIT 1",
    )
    .fetch_optional(pool)
    .await?)
}

/// Schedules with a cadence but no due time yet (new, changed, resumed), oldest change first.
pub async fn unplanned(pool: &SqlitePool, limit: i64) -> Result<Vec<ScheduleRow>> {
    Ok(sqlx::query_as(&format!(
        "{SELECT} WHERE s.next_due_at IS NULL AND s.paused_at IS NULL AND s.finished_at IS NULL
           AND (s.cron IS NOT NULL OR s.run_at IS NOT NULL) ORDER BY s.updated_at LIMIT ?"
    ))
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

/// The owner's time zone setting.
pub async fn owner_timezone(pool: &SqlitePool) -> Result<Option<String>> {
    Ok(sqlx::query_scalar::<_, Option<String>>("SELECT timezone FROM owner WHERE id = 1")
        .fetch_optional(pool)
        .await?
        .flatten())
}

/// One run of a schedule.
#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct RunRow {
    pub id: i64,
    pub schedule_id: i64,
    pub trigger: String,
    pub due_at: Option<i64>,
    pub started_at: i64,
    pub ended_at: Option<i64>,
    pub status: String,
    pub exit_code: Option<i64>,
    pub reason: Option<String>,
    /// The last 64 KiB of the output (left out of lists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    pub output_bytes: i64,
    pub has_log: bool,
    pub chat_id: Option<String>,
    pub run_id: Option<String>,
    /// A running run that has not started: it waits for a free agent since then (unix ms).
    pub waiting_since: Option<i64>,
}

const RUN_COLUMNS: &str = "id, schedule_id, trigger, due_at, started_at, ended_at, status, exit_code, reason, output_bytes, has_log, chat_id, run_id, waiting_since";

/// A schedule's runs, newest first, before run `before`.
pub async fn runs(pool: &SqlitePool, schedule_id: i64, before: Option<i64>, limit: i64) -> Result<Vec<RunRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {RUN_COLUMNS}, NULL AS output FROM schedule_runs WHERE schedule_id = ? AND id < ?
         ORDER BY id DESC LIMIT ?"
    ))
    .bind(schedule_id)
    .bind(before.unwrap_or(i64::MAX))
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

/// One run with its output.
pub async fn run(pool: &SqlitePool, schedule_id: i64, run_id: i64) -> Result<Option<RunRow>> {
    Ok(sqlx::query_as(&format!("SELECT {RUN_COLUMNS}, output FROM schedule_runs WHERE schedule_id = ? AND id = ?"))
        .bind(schedule_id)
        .bind(run_id)
        .fetch_optional(pool)
        .await?)
}

/// What an app's manifest declares under `schedule` (its job schedule).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppJobSpec {
    /// `schedule.default`: the cadence (`None`: the job runs only on demand).
    pub cron: Option<String>,
    /// `schedule.job` (`None`: the contract's fallbacks, `fetch.sh`, `job.sh`, `build.sh`).
    pub job: Option<String>,
    pub user_configurable: bool,
}

/// A new schedule.
#[derive(Debug, Clone, Default)]
pub struct NewSchedule {
    pub kind: String,
    pub name: String,
    pub cron: Option<String>,
    pub run_at: Option<i64>,
    pub timezone: Option<String>,
    pub app_id: Option<i64>,
    pub job: Option<String>,
    pub manifest_cron: Option<String>,
    pub user_configurable: bool,
    pub chat_id: Option<String>,
    pub prompt: Option<String>,
    pub created_by: String,
    pub origin_chat_id: Option<String>,
    pub missed: String,
    pub timeout_secs: Option<i64>,
}

pub async fn insert(conn: &mut SqliteConnection, s: &NewSchedule, now: i64) -> Result<i64> {
    Ok(sqlx::query_scalar(
        "INSERT INTO schedules (kind, name, cron, run_at, timezone, app_id, job, manifest_cron, user_configurable,
             chat_id, prompt, created_by, origin_chat_id, missed, timeout_secs, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(&s.kind)
    .bind(&s.name)
    .bind(&s.cron)
    .bind(s.run_at)
    .bind(&s.timezone)
    .bind(s.app_id)
    .bind(&s.job)
    .bind(&s.manifest_cron)
    .bind(s.user_configurable)
    .bind(&s.chat_id)
    .bind(&s.prompt)
    .bind(&s.created_by)
    .bind(&s.origin_chat_id)
    .bind(&s.missed)
    .bind(s.timeout_secs)
    .bind(now)
    .bind(now)
    .fetch_one(conn)
    .await?)
}

/// The schedule row as the writer sees it inside its transaction.
pub async fn get_in(conn: &mut SqliteConnection, id: i64) -> Result<Option<ScheduleRow>> {
    Ok(sqlx::query_as(&format!("{SELECT} WHERE s.id = ?")).bind(id).fetch_optional(conn).await?)
}

/// The job schedule of an app, inside the writer's transaction.
pub async fn of_app_in(conn: &mut SqliteConnection, app_id: i64) -> Result<Option<ScheduleRow>> {
    Ok(sqlx::query_as(&format!("{SELECT} WHERE s.kind = 'app_job' AND s.app_id = ?"))
        .bind(app_id)
        .fetch_optional(conn)
        .await?)
}

/// Rewrites a schedule's editable fields (the row as read, changed by the caller); a change of
/// cadence, zone or pause clears the due time for the scheduler to plan again.
pub async fn update(conn: &mut SqliteConnection, s: &ScheduleRow, replan: bool, now: i64) -> Result<()> {
    sqlx::query(
        "UPDATE schedules SET name = ?, cron = ?, run_at = ?, timezone = ?, job = ?, manifest_cron = ?,
             user_configurable = ?, chat_id = ?, prompt = ?, missed = ?, timeout_secs = ?, paused_at = ?,
             paused_reason = ?, failures = ?, finished_at = ?,
             next_due_at = CASE WHEN ? THEN NULL ELSE next_due_at END, updated_at = max(updated_at + 1, ?)
         WHERE id = ?",
    )
    .bind(&s.name)
    .bind(&s.cron)
    .bind(s.run_at)
    .bind(&s.timezone)
    .bind(&s.job)
    .bind(&s.manifest_cron)
    .bind(s.user_configurable)
    .bind(&s.chat_id)
    .bind(&s.prompt)
    .bind(&s.missed)
    .bind(s.timeout_secs)
    .bind(s.paused_at)
    .bind(&s.paused_reason)
    .bind(s.failures)
    .bind(s.finished_at)
    .bind(replan)
    .bind(now)
    .bind(s.id)
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn delete(conn: &mut SqliteConnection, id: i64) -> Result<bool> {
    Ok(sqlx::query("DELETE FROM schedules WHERE id = ?").bind(id).execute(conn).await?.rows_affected() > 0)
}

/// Sets the due time the scheduler planned, unless the row changed since it was read
/// (`updated_at`); answers whether it was set.
pub async fn plan(conn: &mut SqliteConnection, id: i64, updated_at: i64, next: Option<i64>) -> Result<bool> {
    Ok(sqlx::query(
        "UPDATE schedules SET next_due_at = ? WHERE id = ? AND updated_at = ? AND paused_at IS NULL
           AND finished_at IS NULL",
    )
    .bind(next)
    .bind(id)
    .bind(updated_at)
    .execute(conn)
    .await?
    .rows_affected()
        > 0)
}

/// Pauses a schedule whose cadence never comes round, with the reason.
pub async fn pause(conn: &mut SqliteConnection, id: i64, reason: &str, now: i64) -> Result<()> {
    sqlx::query(
        "UPDATE schedules SET paused_at = ?, paused_reason = ?, next_due_at = NULL, updated_at = max(updated_at + 1, ?)
         WHERE id = ?",
    )
    .bind(now)
    .bind(reason)
    .bind(now)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Moves the due time on after a fire or skip (`next`: `None` for nothing more), and finishes a
/// one-off. A row changed since it was read (`updated_at`) gets no due time instead: the
/// scheduler plans it again from now.
pub async fn advance(
    conn: &mut SqliteConnection,
    id: i64,
    updated_at: i64,
    next: Option<i64>,
    one_off: bool,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "UPDATE schedules SET next_due_at = CASE WHEN updated_at = ? THEN ? ELSE NULL END,
             finished_at = CASE WHEN ? AND updated_at = ? THEN ? ELSE finished_at END WHERE id = ?",
    )
    .bind(updated_at)
    .bind(next)
    .bind(one_off)
    .bind(updated_at)
    .bind(now)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// A run that starts (or is recorded as skipped).
#[derive(Debug, Clone)]
pub struct NewRun {
    pub schedule_id: i64,
    pub trigger: String,
    pub due_at: Option<i64>,
    pub started_at: i64,
    /// `running`, or `skipped` with `reason`.
    pub status: String,
    pub reason: Option<String>,
    pub chat_id: Option<String>,
}

/// Inserts a run, stamps the schedule's last run, and drops runs beyond [`MAX_RUNS_KEPT`].
pub async fn insert_run(conn: &mut SqliteConnection, r: &NewRun) -> Result<i64> {
    let ended = (r.status != "running").then_some(r.started_at);
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO schedule_runs (schedule_id, trigger, due_at, started_at, ended_at, status, reason, chat_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(r.schedule_id)
    .bind(&r.trigger)
    .bind(r.due_at)
    .bind(r.started_at)
    .bind(ended)
    .bind(&r.status)
    .bind(&r.reason)
    .bind(&r.chat_id)
    .fetch_one(&mut *conn)
    .await?;
    sqlx::query("UPDATE schedules SET last_run_at = ?, last_status = ? WHERE id = ?")
        .bind(r.started_at)
        .bind(&r.status)
        .bind(r.schedule_id)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "DELETE FROM schedule_runs WHERE schedule_id = ? AND status != 'running' AND id <= (
             SELECT id FROM schedule_runs WHERE schedule_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)",
    )
    .bind(r.schedule_id)
    .bind(r.schedule_id)
    .bind(MAX_RUNS_KEPT)
    .execute(conn)
    .await?;
    Ok(id)
}

/// Records the chat and turn a scheduled agent turn became.
/// Marks a running run as waiting for a free agent since `since` (`None`: it started).
pub async fn set_waiting(conn: &mut SqliteConnection, run_id: i64, since: Option<i64>) -> Result<()> {
    sqlx::query("UPDATE schedule_runs SET waiting_since = ? WHERE id = ? AND status = 'running'")
        .bind(since)
        .bind(run_id)
        .execute(conn)
        .await?;
    Ok(())
}

pub async fn link_run(conn: &mut SqliteConnection, run_id: i64, chat_id: &str, turn: Option<&str>) -> Result<()> {
    sqlx::query("UPDATE schedule_runs SET chat_id = ?, run_id = coalesce(?, run_id) WHERE id = ?")
        .bind(chat_id)
        .bind(turn)
        .bind(run_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// How a run ended.
#[derive(Debug, Clone, Default)]
pub struct RunEnd {
    pub status: String,
    pub exit_code: Option<i64>,
    pub reason: Option<String>,
    pub output: Option<String>,
    pub output_bytes: i64,
    pub has_log: bool,
    pub ended_at: i64,
}

/// Closes a running run; answers its schedule id, or `None` when it was no longer running.
pub async fn finish_run(conn: &mut SqliteConnection, run_id: i64, end: &RunEnd) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar(
        "UPDATE schedule_runs SET status = ?, exit_code = ?, reason = ?, output = ?, output_bytes = ?, has_log = ?,
             ended_at = ?, waiting_since = NULL WHERE id = ? AND status = 'running' RETURNING schedule_id",
    )
    .bind(&end.status)
    .bind(end.exit_code)
    .bind(&end.reason)
    .bind(&end.output)
    .bind(end.output_bytes)
    .bind(end.has_log)
    .bind(end.ended_at)
    .bind(run_id)
    .fetch_optional(conn)
    .await?)
}

/// The schedule's failures in a row.
pub async fn failures(conn: &mut SqliteConnection, id: i64) -> Result<i64> {
    Ok(sqlx::query_scalar("SELECT failures FROM schedules WHERE id = ?")
        .bind(id)
        .fetch_optional(conn)
        .await?
        .unwrap_or(0))
}

/// Stamps the schedule's last status and its failures in a row.
pub async fn record_outcome(conn: &mut SqliteConnection, id: i64, status: &str, failures: i64) -> Result<()> {
    sqlx::query("UPDATE schedules SET last_status = ?, failures = ? WHERE id = ?")
        .bind(status)
        .bind(failures)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Runs still `running` (a restart interrupted them).
pub async fn running_runs(conn: &mut SqliteConnection) -> Result<Vec<(i64, i64)>> {
    Ok(sqlx::query_as("SELECT id, schedule_id FROM schedule_runs WHERE status = 'running'").fetch_all(conn).await?)
}

/// Sets the owner's time zone and clears the due times of the schedules that follow it.
pub async fn set_owner_timezone(conn: &mut SqliteConnection, zone: Option<&str>, now: i64) -> Result<u64> {
    sqlx::query("UPDATE owner SET timezone = ?, updated_at = ? WHERE id = 1")
        .bind(zone)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    Ok(sqlx::query(
        "UPDATE schedules SET next_due_at = NULL, updated_at = max(updated_at + 1, ?)
         WHERE timezone IS NULL AND cron IS NOT NULL AND paused_at IS NULL AND finished_at IS NULL",
    )
    .bind(now)
    .execute(conn)
    .await?
    .rows_affected())
}

/// Drops one-offs that fired before `cutoff`.
pub async fn forget_finished(conn: &mut SqliteConnection, cutoff: i64) -> Result<u64> {
    Ok(sqlx::query("DELETE FROM schedules WHERE finished_at IS NOT NULL AND finished_at < ?")
        .bind(cutoff)
        .execute(conn)
        .await?
        .rows_affected())
}

/// Counts all schedules (a bound).
pub async fn count_all(conn: &mut SqliteConnection) -> Result<i64> {
    Ok(sqlx::query_scalar("SELECT count(*) FROM schedules").fetch_one(conn).await?)
}

/// Schedules the agent made that have not finished: those from chat `origin`, and all of them.
pub async fn count_agent(conn: &mut SqliteConnection, origin: Option<&str>) -> Result<(i64, i64)> {
    Ok(sqlx::query_as(
        "SELECT coalesce(sum(origin_chat_id IS ?), 0), count(*) FROM schedules
         WHERE created_by = 'agent' AND finished_at IS NULL",
    )
    .bind(origin)
    .fetch_one(conn)
    .await?)
}
