//! `/api/schedules…` (the owner's Settings → Schedules, and the agent's `mobius schedule` and
//! `mobius remind`), and the original's app-job routes (`app-platform-contract.md` §4.5):
//! `GET /api/apps/schedules`, `POST /api/apps/{id}/run-job`, `GET /api/apps/{id}/job-context`,
//! `POST /api/apps/{id}/schedule`, `POST /api/auth/app-job-token`.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::jobs;
use crate::api::ApiJson;
use crate::auth::{Owner, Principal, Scope};
use crate::cadence::{self, Cadence};
use crate::db::apps::AppRow;
use crate::db::schedules::{self as sql, NewSchedule, RunRow, ScheduleRow};
use crate::db::{self};
use crate::error::{Domain, Error, Result};
use crate::protocol::{ChatId, ProviderKind};
use crate::state::AppState;
use crate::writer::{ScheduleChange, ScheduleWrite, WriteCommand};

/// Longest schedule name.
const MAX_NAME_CHARS: usize = 120;
/// Runs listed per page.
const DEFAULT_RUNS: i64 = 20;
const MAX_RUNS: i64 = 50;
/// Longest job time limit the owner may set.
const MAX_TIMEOUT_SECS: i64 = 6 * 3600;
/// The shortest time between two runs of a cadence the agent sets (the owner's are free).
pub const MIN_AGENT_INTERVAL_MS: i64 = 10 * 60 * 1000;

/// The schedule routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/schedules", get(list).post(create))
        .route("/schedules/timezone", put(set_timezone))
        .route("/schedules/{id}", get(one).patch(update).delete(remove))
        .route("/schedules/{id}/run", post(run_now))
        .route("/schedules/{id}/runs", get(runs))
        .route("/schedules/{id}/runs/{run}", get(run_detail))
        .route("/schedules/{id}/runs/{run}/log", get(run_log))
        .route("/apps/schedules", get(app_schedules))
        .route("/apps/{id}/run-job", post(run_job))
        .route("/apps/{id}/job-context", get(job_context))
        .route("/apps/{id}/schedule", post(set_app_schedule))
        .route("/auth/app-job-token", post(app_job_token))
}

/// A schedule as the PWA and the agent read it.
#[derive(Serialize)]
struct ScheduleOut {
    #[serde(flatten)]
    row: ScheduleRow,
    /// The zone its cadence is read in (its own, else the owner's).
    zone: String,
    /// The owner may change its cadence (an app job only when the app allows it).
    cadence_editable: bool,
}

impl ScheduleOut {
    fn new(row: ScheduleRow, owner_zone: &str) -> Self {
        let zone = row.timezone.clone().unwrap_or_else(|| owner_zone.to_owned());
        let cadence_editable = row.kind != "app_job" || row.user_configurable;
        Self { row, zone, cadence_editable }
    }
}

fn schedule_id(id: &str) -> Result<i64> {
    id.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| Domain::ScheduleNotFound.into())
}

/// A live schedule (its app or chat not deleted).
async fn live(state: &AppState, id: i64) -> Result<ScheduleRow> {
    sql::list_one_live(&state.db.read, id).await?.ok_or_else(|| Domain::ScheduleNotFound.into())
}

/// The agent's own chat when an agent token calls.
fn agent_chat(owner: &Owner) -> Option<&str> {
    (owner.0.scope == Scope::Agent).then(|| owner.0.chat_id.as_deref().unwrap_or_default())
}

#[derive(Serialize)]
struct ListOut {
    /// The owner's setting (`null`: the server's zone).
    timezone: Option<String>,
    server_timezone: String,
    /// The zone schedules without their own are read in.
    zone: String,
    /// `ScheduleOut`s, as the database wrote them.
    schedules: Box<serde_json::value::RawValue>,
}

/// Key of the schedule list in the response cache (chat ids never contain a space).
const LIST_KEY: &str = "schedule list";

/// `GET /api/schedules`: every live schedule, due ones first (an agent: its own chat's, and
/// the ones it made). The body is reused until a
/// commit changes what it shows: a schedule or a run (the schedules version, which app
/// changes bump too) or a chat's title or deletion (the chat-list version).
#[tracing::instrument(level = "debug", skip_all)]
async fn list(State(state): State<AppState>, owner: Owner) -> Result<Response> {
    // An agent lists only its own chat's schedules (never cached: the cache holds the owner's).
    let agent = agent_chat(&owner);
    // Read the versions first: a commit during the query can only cause one extra refresh.
    let version = (state.hub.schedules_version() << 32) ^ (state.hub.list_version() & 0xffff_ffff);
    let body = match state.response_cache.get(LIST_KEY, version).filter(|_| agent.is_none()) {
        Some(body) => body,
        None => {
            let timezone = sql::owner_timezone(&state.db.read).await?;
            let (_, zone) = state.schedules.owner_zone().await;
            let rows = sql::list_json(&state.db.read, &zone, agent).await?;
            let schedules =
                serde_json::value::RawValue::from_string(rows).map_err(|e| Error::Internal(e.to_string()))?;
            let out = ListOut { timezone, server_timezone: cadence::server_zone().1, zone, schedules };
            let body = bytes::Bytes::from(serde_json::to_vec(&out).map_err(|e| Error::Internal(e.to_string()))?);
            if agent.is_none() {
                state.response_cache.put(LIST_KEY, version, body.clone());
            }
            body
        }
    };
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(response)
}

#[tracing::instrument(level = "debug", skip_all)]
async fn one(State(state): State<AppState>, _owner: Owner, Path(id): Path<String>) -> Result<Json<ScheduleOut>> {
    let row = live(&state, schedule_id(&id)?).await?;
    let (_, zone) = state.schedules.owner_zone().await;
    Ok(Json(ScheduleOut::new(row, &zone)))
}

#[derive(Deserialize)]
struct CreateIn {
    name: Option<String>,
    prompt: Option<String>,
    cron: Option<String>,
    at: Option<String>,
    #[serde(rename = "in")]
    in_: Option<String>,
    timezone: Option<String>,
    chat_id: Option<String>,
    #[serde(default)]
    new_chat: bool,
    missed: Option<String>,
}

fn bad_cron(why: String) -> Error {
    Error::bad_request("invalid_cron", format!("cron › {why}"))
}

fn checked_zone(zone: Option<String>) -> Result<Option<String>> {
    match zone.map(|z| z.trim().to_owned()).filter(|z| !z.is_empty()) {
        None => Ok(None),
        Some(z) => {
            cadence::zone(&z).map_err(|why| Error::bad_request("invalid_timezone", format!("timezone › {why}")))?;
            Ok(Some(z))
        }
    }
}

fn checked_missed(missed: Option<String>) -> Result<Option<String>> {
    match missed.as_deref() {
        None => Ok(None),
        Some(m @ ("run_once" | "skip")) => Ok(Some(m.to_owned())),
        Some(_) => Err(Error::bad_request("invalid_missed", "missed › is run_once or skip.")),
    }
}

fn checked_name(name: &str) -> Result<String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(Error::bad_request("invalid_name", format!("name › 1 to {MAX_NAME_CHARS} characters.")));
    }
    Ok(name.to_owned())
}

/// A cadence the agent may set: no two runs closer than [`MIN_AGENT_INTERVAL_MS`] (a runaway
/// or tricked agent cannot fill the server with every-minute turns).
fn agent_cadence(cron: &str, now: i64) -> Result<()> {
    let cadence = Cadence::parse(cron, false).map_err(bad_cron)?;
    match cadence.shortest_gap(now, MIN_AGENT_INTERVAL_MS) {
        Some(gap) if gap < MIN_AGENT_INTERVAL_MS => Err(Error::bad_request(
            "schedule_too_frequent",
            format!(
                "cron › the agent may schedule runs at most every {} minutes ({cron:?} runs {} apart); \
                 the owner can set a tighter cadence in Settings.",
                MIN_AGENT_INTERVAL_MS / 60_000,
                if gap < 60_000 * 2 { "a minute".to_owned() } else { format!("{} minutes", gap / 60_000) }
            ),
        )),
        _ => Ok(()),
    }
}

/// A cadence that parses and comes round again.
fn checked_cron(cron: &str, strict: bool, tz: &jiff::tz::TimeZone, now: i64) -> Result<String> {
    let cadence = Cadence::parse(cron, strict).map_err(bad_cron)?;
    if cadence.next_after(now, tz).is_none() {
        return Err(bad_cron(format!("{:?} never comes round", cadence.as_str())));
    }
    Ok(cadence.as_str().to_owned())
}

/// `POST /api/schedules`: a scheduled prompt — every `cron`, or once `at`/`in` (a reminder) —
/// in a chat (`chat_id`; the agent's own by default) or a new chat each run (`new_chat`).
#[tracing::instrument(level = "debug", skip_all)]
async fn create(State(state): State<AppState>, owner: Owner, ApiJson(body): ApiJson<CreateIn>) -> Result<Response> {
    let agent = agent_chat(&owner).map(str::to_owned);
    let prompt = body.prompt.unwrap_or_default();
    if prompt.trim().is_empty() {
        return Err(Error::bad_request("invalid_prompt", "prompt › say what the agent should do."));
    }
    if prompt.chars().count() > crate::chats::MAX_MESSAGE_CHARS {
        return Err(Error::too_large(
            "prompt_too_long",
            format!("prompt › at most {} characters.", crate::chats::MAX_MESSAGE_CHARS),
        ));
    }
    let timezone = checked_zone(body.timezone)?;
    let tz = match &timezone {
        Some(z) => cadence::zone_or_server(Some(z)),
        None => state.schedules.owner_zone().await.0,
    };
    let now = state.schedules.now();
    let once = body.at.is_some() || body.in_.is_some();
    let (cron, run_at) = match (body.cron.filter(|c| !c.trim().is_empty()), once) {
        (Some(_), true) => {
            return Err(Error::bad_request(
                "invalid_schedule",
                "Give either a cron cadence or a time (at / in), not both.",
            ));
        }
        (None, false) => {
            return Err(Error::bad_request(
                "invalid_schedule",
                "Say when: a cron cadence (cron), or a time (at, such as 07:30, or in, such as 2h).",
            ));
        }
        (Some(cron), false) => {
            let cron = checked_cron(&cron, false, &tz, now)?;
            if agent.is_some() {
                agent_cadence(&cron, now)?;
            }
            (Some(cron), None)
        }
        (None, true) => {
            let at = cadence::parse_when(body.in_.as_deref(), body.at.as_deref(), now, &tz)
                .map_err(|why| Error::bad_request("invalid_time", why))?;
            (None, Some(at))
        }
    };
    let chat_id = match (body.chat_id.filter(|c| !c.is_empty()), body.new_chat, &agent) {
        (Some(_), true, _) => {
            return Err(Error::bad_request("invalid_chat", "Give either chat_id or new_chat, not both."));
        }
        (None, true, _) => None,
        (Some(id), false, Some(own)) if id != *own => {
            return Err(Error::forbidden(
                "agent_not_allowed",
                "The agent may schedule only into its own chat or a new chat.",
            ));
        }
        (None, false, Some(own)) => Some(own.clone()),
        (None, false, None) => {
            return Err(Error::bad_request("invalid_chat", "Say which chat (chat_id), or new_chat: true."));
        }
        (Some(id), false, _) => Some(id),
    };
    if let Some(id) = &chat_id {
        let id = ChatId::parse(id).ok_or(Domain::ChatNotFound)?;
        match db::chats::get(&state.db.read, &id).await? {
            Some(chat) if chat.deleted_at.is_none() => {}
            _ => return Err(Domain::ChatNotFound.into()),
        }
    }
    let name = match body.name {
        Some(n) => checked_name(&n)?,
        None => {
            let first: String =
                prompt.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim().chars().take(60).collect();
            if once { format!("Reminder: {first}") } else { first }
        }
    };
    let new = NewSchedule {
        kind: "agent_turn".into(),
        name,
        cron,
        run_at,
        timezone,
        chat_id,
        prompt: Some(prompt),
        created_by: if agent.is_some() { "agent".into() } else { "owner".into() },
        origin_chat_id: agent,
        missed: checked_missed(body.missed)?.unwrap_or_else(|| "run_once".into()),
        ..NewSchedule::default()
    };
    let id = state.writer.call(|ack| WriteCommand::Schedule { op: ScheduleWrite::Create(new), ack }).await?;
    let row = sql::get(&state.db.read, id).await?.ok_or(Domain::ScheduleNotFound)?;
    let (_, zone) = state.schedules.owner_zone().await;
    Ok((StatusCode::CREATED, Json(ScheduleOut::new(row, &zone))).into_response())
}

#[derive(Deserialize)]
struct PatchIn {
    name: Option<String>,
    cron: Option<String>,
    at: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    timezone: Option<Option<String>>,
    prompt: Option<String>,
    paused: Option<bool>,
    missed: Option<String>,
    #[serde(default, deserialize_with = "double_option_i64")]
    timeout_secs: Option<Option<i64>>,
}

fn double_option<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

fn double_option_i64<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<Option<i64>>, D::Error> {
    Option::<i64>::deserialize(d).map(Some)
}

/// `PATCH /api/schedules/{id}`: rename, change the cadence (an app's job only when the app
/// allows it), the zone, the prompt, the time limit, what happens to missed runs; pause and
/// resume (resuming clears the failure count).
#[tracing::instrument(level = "debug", skip_all)]
async fn update(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<PatchIn>,
) -> Result<Json<ScheduleOut>> {
    let row = live(&state, schedule_id(&id)?).await?;
    let app_job = row.kind == "app_job";
    let mut change = ScheduleChange {
        name: body.name.as_deref().map(checked_name).transpose()?,
        missed: checked_missed(body.missed)?,
        paused: body.paused,
        ..ScheduleChange::default()
    };
    if let Some(zone) = body.timezone {
        change.timezone = Some(checked_zone(zone)?);
    }
    let tz = match change.timezone.clone().unwrap_or_else(|| row.timezone.clone()) {
        Some(z) => cadence::zone_or_server(Some(&z)),
        None => state.schedules.owner_zone().await.0,
    };
    let now = state.schedules.now();
    if let Some(cron) = body.cron {
        if app_job && !row.user_configurable {
            return Err(Error::forbidden(
                "not_configurable",
                "This app sets its own cadence (its manifest's schedule.user_configurable is off).",
            ));
        }
        change.cron = Some(checked_cron(&cron, false, &tz, now)?);
    }
    if let Some(at) = body.at {
        if app_job {
            return Err(Error::bad_request("invalid_schedule", "An app's job runs on a cadence, not once."));
        }
        let at =
            cadence::parse_when(None, Some(&at), now, &tz).map_err(|why| Error::bad_request("invalid_time", why))?;
        change.run_at = Some(at);
    }
    if let Some(prompt) = body.prompt {
        if app_job || prompt.trim().is_empty() || prompt.chars().count() > crate::chats::MAX_MESSAGE_CHARS {
            return Err(Error::bad_request(
                "invalid_prompt",
                "prompt › only a scheduled prompt has one, and it says something.",
            ));
        }
        change.prompt = Some(prompt);
    }
    if let Some(timeout) = body.timeout_secs {
        if timeout.is_some_and(|t| !(1..=MAX_TIMEOUT_SECS).contains(&t)) || !app_job {
            return Err(Error::bad_request(
                "invalid_timeout",
                format!("timeout_secs › an app job's limit, 1 to {MAX_TIMEOUT_SECS} seconds (null: 5 min)."),
            ));
        }
        change.timeout_secs = Some(timeout);
    }
    state.writer.call(|ack| WriteCommand::Schedule { op: ScheduleWrite::Update { id: row.id, change }, ack }).await?;
    let row = sql::get(&state.db.read, row.id).await?.ok_or(Domain::ScheduleNotFound)?;
    let (_, zone) = state.schedules.owner_zone().await;
    Ok(Json(ScheduleOut::new(row, &zone)))
}

/// `DELETE /api/schedules/{id}`: a scheduled prompt or reminder (the agent: those of its own
/// chat, or that it made, only). An app's job goes with its app.
#[tracing::instrument(level = "debug", skip_all)]
async fn remove(State(state): State<AppState>, owner: Owner, Path(id): Path<String>) -> Result<Response> {
    let row = live(&state, schedule_id(&id)?).await?;
    // Another chat's schedule does not exist for an agent.
    if agent_chat(&owner).is_some_and(|chat| !sql::agent_owns(&row, chat)) {
        return Err(Domain::ScheduleNotFound.into());
    }
    if row.kind == "app_job" {
        return Err(Error::conflict("app_job_schedule", "An app's job goes with its app; pause it instead."));
    }
    state.schedules.cancel(row.id).await?;
    Ok(crate::api::no_content())
}

/// `POST /api/schedules/{id}/run`: runs it now → 202 `{run_id, status, started_at}`.
#[tracing::instrument(level = "debug", skip_all)]
async fn run_now(State(state): State<AppState>, _owner: Owner, Path(id): Path<String>) -> Result<Response> {
    let row = live(&state, schedule_id(&id)?).await?;
    let started = state.schedules.run_now(row.id, "manual").await?;
    Ok((StatusCode::ACCEPTED, Json(started)).into_response())
}

#[derive(Deserialize)]
struct RunsQuery {
    before: Option<i64>,
    limit: Option<i64>,
}

#[derive(Serialize)]
struct RunsOut {
    runs: Vec<RunRow>,
    /// Pass as `before` for older runs; `null` at the end.
    next_before: Option<i64>,
}

/// `GET /api/schedules/{id}/runs?before=&limit=`: its history, newest first (without output).
#[tracing::instrument(level = "debug", skip_all)]
async fn runs(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<String>,
    Query(q): Query<RunsQuery>,
) -> Result<Json<RunsOut>> {
    let row = live(&state, schedule_id(&id)?).await?;
    let limit = q.limit.unwrap_or(DEFAULT_RUNS).clamp(1, MAX_RUNS);
    let mut runs = sql::runs(&state.db.read, row.id, q.before, limit + 1).await?;
    let more = runs.len() > usize::try_from(limit).unwrap_or(usize::MAX);
    runs.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    let next_before = if more { runs.last().map(|r| r.id) } else { None };
    Ok(Json(RunsOut { runs, next_before }))
}

fn run_id(run: &str) -> Result<i64> {
    run.parse::<i64>().map_err(|_| Error::not_found("run_not_found", "No such run."))
}

/// `GET /api/schedules/{id}/runs/{run}`: one run with the last 64 KiB of its output.
#[tracing::instrument(level = "debug", skip_all)]
async fn run_detail(
    State(state): State<AppState>,
    _owner: Owner,
    Path((id, run)): Path<(String, String)>,
) -> Result<Json<RunRow>> {
    let row = live(&state, schedule_id(&id)?).await?;
    let run = sql::run(&state.db.read, row.id, run_id(&run)?).await?;
    Ok(Json(run.ok_or_else(|| Error::not_found("run_not_found", "No such run."))?))
}

/// `GET /api/schedules/{id}/runs/{run}/log`: the run's full log as text (the logs of the last
/// 10 runs of a schedule are kept, each up to 2 MiB).
#[tracing::instrument(level = "debug", skip_all)]
async fn run_log(
    State(state): State<AppState>,
    _owner: Owner,
    Path((id, run)): Path<(String, String)>,
) -> Result<Response> {
    let row = live(&state, schedule_id(&id)?).await?;
    let run = sql::run(&state.db.read, row.id, run_id(&run)?)
        .await?
        .ok_or_else(|| Error::not_found("run_not_found", "No such run."))?;
    let dir = state.schedules.log_dir(row.id);
    let run_id = run.id;
    let log = tokio::task::spawn_blocking(move || super::read_log(&dir, run_id))
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
        .ok_or_else(|| {
            Error::not_found("log_not_found", "This run's log is no longer kept (only the last 10 runs').")
        })?;
    let mut response = log.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(response)
}

#[derive(Deserialize)]
struct TimezoneIn {
    timezone: Option<String>,
}

/// `PUT /api/schedules/timezone {timezone}`: the owner's zone (`null`: the server's); the
/// schedules that follow it are planned again.
#[tracing::instrument(level = "debug", skip_all)]
async fn set_timezone(
    State(state): State<AppState>,
    _owner: Owner,
    ApiJson(body): ApiJson<TimezoneIn>,
) -> Result<Json<Value>> {
    let zone = checked_zone(body.timezone)?;
    state.writer.call(|ack| WriteCommand::Schedule { op: ScheduleWrite::SetTimezone(zone.clone()), ack }).await?;
    let (_, effective) = state.schedules.owner_zone().await;
    Ok(Json(json!({ "timezone": zone, "zone": effective, "server_timezone": cadence::server_zone().1 })))
}

// ---- The original's app-job routes ----------------------------------------------------------

/// A live, built app that `who` may act for: the owner any, an app itself only. A malformed id
/// names no app.
async fn app_for(state: &AppState, who: &Principal, id: &str, other: &'static str) -> Result<AppRow> {
    let id = id.parse::<i64>().map_err(|_| Domain::AppNotFound)?;
    if who.app_id().is_some_and(|own| own != id) {
        return Err(Error::forbidden("forbidden", other));
    }
    db::apps::get(&state.db.read, id)
        .await?
        .filter(|a| a.deleted_at.is_none() && a.bundle_sha.is_some())
        .ok_or_else(|| Domain::AppNotFound.into())
}

/// `GET /api/apps/schedules` (owner or any app token): every live app's job schedule in the
/// original's shape, sorted by name then id.
#[tracing::instrument(level = "debug", skip_all)]
async fn app_schedules(State(state): State<AppState>, _who: Principal) -> Result<Json<Vec<Value>>> {
    let server = cadence::server_zone().1;
    let (_, owner_zone) = state.schedules.owner_zone().await;
    let mut out: Vec<(String, i64, Value)> = Vec::new();
    for row in sql::list(&state.db.read).await?.into_iter().filter(|r| r.kind == "app_job" && r.cron.is_some()) {
        let (Some(app_id), Some(slug)) = (row.app_id, row.app_slug.clone()) else { continue };
        let name = row.app_name.clone().unwrap_or_else(|| row.name.clone());
        let job = jobs::source_dir(&state.config.data_dir, &slug)
            .and_then(|dir| jobs::resolve_job(&dir, row.job.as_deref()).ok())
            .map(|(job, _)| job)
            .or_else(|| row.job.clone())
            .unwrap_or_else(|| "job.sh".into());
        let next_run = row.next_due_at.and_then(cadence::iso_utc);
        let zone_cron = row.timezone.as_ref().and(row.cron.clone());
        out.push((
            name.clone(),
            app_id,
            json!({
                "id": app_id, "name": name, "slug": slug, "cron": row.cron, "job": job, "next_run": next_run,
                "timezone": row.timezone.clone().unwrap_or_else(|| owner_zone.clone()), "zone_cron": zone_cron,
                "server_timezone": server, "schedule_id": row.id, "paused": row.paused_at.is_some(),
                "last_status": row.last_status,
            }),
        ));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    Ok(Json(out.into_iter().map(|(_, _, v)| v).collect()))
}

/// The app's job schedule, made on demand (an app without `schedule` can still run a job).
async fn app_job_schedule(state: &AppState, app: &AppRow, who: &Principal) -> Result<i64> {
    if let Some(row) = sql::of_app(&state.db.read, app.id).await? {
        return Ok(row.id);
    }
    let op = ScheduleWrite::SetAppJob {
        app_id: app.id,
        name: app.name.clone(),
        cron: None,
        job: None,
        timezone: None,
        created_by: if who.app_id().is_some() { "app".into() } else { "owner".into() },
    };
    state.writer.call(|ack| WriteCommand::Schedule { op, ack }).await
}

/// `POST /api/apps/{id}/run-job` (owner or that app): starts the job now → 202 `{started_at}`
/// (ISO, UTC) with the run's id and `status` (`skipped` while a run is still going).
#[tracing::instrument(level = "debug", skip_all)]
async fn run_job(State(state): State<AppState>, who: Principal, Path(id): Path<String>) -> Result<Response> {
    let app = app_for(&state, &who, &id, "App token can only run its own job.").await?;
    let dir = jobs::source_dir(&state.config.data_dir, &app.slug)
        .ok_or_else(|| Error::bad_request("no_job", "The app's folder is missing."))?;
    let schedule = sql::of_app(&state.db.read, app.id).await?;
    jobs::resolve_job(&dir, schedule.as_ref().and_then(|s| s.job.as_deref()))
        .map_err(|why| Error::bad_request("no_job", why))?;
    let schedule_id = app_job_schedule(&state, &app, &who).await?;
    let started = state.schedules.run_now(schedule_id, "manual").await?;
    let started_at = cadence::iso_utc(started.started_at);
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "started_at": started_at, "run_id": started.run_id, "status": started.status, "schedule_id": schedule_id })),
    )
        .into_response())
}

/// `GET /api/apps/{id}/job-context` (owner or that app): `{app_id, source_dir, primary,
/// fallback, capability_contract}`; `primary`/`fallback` are the connected agents
/// (`{provider, model, effort}`) a job may hand work to, `fallback` `null` when there is none.
#[tracing::instrument(level = "debug", skip_all)]
async fn job_context(State(state): State<AppState>, who: Principal, Path(id): Path<String>) -> Result<Json<Value>> {
    let app = app_for(&state, &who, &id, "An app may read only its own job context.").await?;
    let dir = jobs::source_dir(&state.config.data_dir, &app.slug)
        .unwrap_or_else(|| state.config.data_dir.join("apps").join(&app.slug));
    let connected = |k: ProviderKind| state.providers.status(k).connected;
    let default = state.providers.default_provider(&state.db.read).await?.filter(|k| connected(*k));
    let choice = |k: ProviderKind| json!({ "provider": k.id(), "model": null, "effort": null });
    let primary = default.or_else(|| [ProviderKind::Claude, ProviderKind::Codex].into_iter().find(|k| connected(*k)));
    let fallback = primary
        .and_then(|p| [ProviderKind::Claude, ProviderKind::Codex].into_iter().find(|k| *k != p && connected(*k)));
    let contract = crate::apps::contract::capability_contract(
        &app.manifest,
        app.offline_capable,
        &app.cross_app_access,
        &app.share_with_apps,
    );
    Ok(Json(json!({
        "app_id": app.id,
        "source_dir": dir.display().to_string(),
        "primary": primary.map(choice),
        "fallback": fallback.map(choice),
        "capability_contract": contract,
    })))
}

#[derive(Deserialize)]
struct AppScheduleIn {
    cron: Option<String>,
    job: Option<String>,
    timezone: Option<String>,
}

/// `POST /api/apps/{id}/schedule {cron, job?, timezone?}` (owner or that app): sets the app's
/// job cadence (kept across applies until the manifest's default changes); `job` defaults to
/// `fetch.sh` and must be a file in the app's folder. Any cadence may be read in `timezone`
/// (the original allowed only a daily one there). Answers `{cron, job, timezone, zone_cron}`.
#[tracing::instrument(level = "debug", skip_all)]
async fn set_app_schedule(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<AppScheduleIn>,
) -> Result<Json<Value>> {
    let app = app_for(&state, &who, &id, "An app may schedule only its own job.").await?;
    let timezone = checked_zone(body.timezone)?;
    let tz = match &timezone {
        Some(z) => cadence::zone_or_server(Some(z)),
        None => state.schedules.owner_zone().await.0,
    };
    let cron = checked_cron(body.cron.as_deref().unwrap_or_default(), true, &tz, state.schedules.now())?;
    let job = body.job.unwrap_or_else(|| "fetch.sh".into());
    if !jobs::valid_job_name(&job) {
        return Err(Error::bad_request("invalid_job", "Invalid job filename."));
    }
    let dir = jobs::source_dir(&state.config.data_dir, &app.slug);
    let exists = dir.is_some_and(|d| std::fs::symlink_metadata(d.join(&job)).is_ok_and(|m| m.file_type().is_file()));
    if !exists {
        return Err(Error::bad_request("job_not_found", "Job script not found."));
    }
    let op = ScheduleWrite::SetAppJob {
        app_id: app.id,
        name: app.name.clone(),
        cron: Some(cron.clone()),
        job: Some(job.clone()),
        timezone: timezone.clone(),
        created_by: if who.app_id().is_some() { "app".into() } else { "owner".into() },
    };
    state.writer.call(|ack| WriteCommand::Schedule { op, ack }).await?;
    let zone_cron = timezone.as_ref().map(|_| cron.clone());
    Ok(Json(json!({ "cron": cron, "job": job, "timezone": timezone, "zone_cron": zone_cron })))
}

#[derive(Deserialize)]
struct JobTokenIn {
    app_id: i64,
}

/// `POST /api/auth/app-job-token {app_id}` (owner): a 2-hour app token for a job runner.
#[tracing::instrument(level = "debug", skip_all)]
async fn app_job_token(
    State(state): State<AppState>,
    owner: Owner,
    ApiJson(body): ApiJson<JobTokenIn>,
) -> Result<Json<Value>> {
    if owner.0.scope != Scope::Owner {
        return Err(Error::forbidden("wrong_scope", "Only the owner can mint job tokens."));
    }
    let app = db::apps::get(&state.db.read, body.app_id)
        .await?
        .filter(|a| a.deleted_at.is_none() && a.bundle_sha.is_some())
        .ok_or(Domain::AppNotFound)?;
    let token = crate::auth::app_token(&state.keys, &state.owner, &app, crate::auth::APP_JOB_TOKEN_TTL_SECS)?;
    Ok(Json(json!({ "token": token, "expires_in": crate::auth::APP_JOB_TOKEN_TTL_SECS })))
}
