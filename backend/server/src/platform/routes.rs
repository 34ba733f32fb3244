//! `/api/platform/*`: what runs and what is available (Settings › About), checking now, the
//! daily-check switch, applying an update and restarting. Owner only.

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use serde::Deserialize;
use serde_json::{Value, json};

use super::feed::{self, MANUAL_CHECK_MIN_INTERVAL};
use super::state::ReleaseState;
use super::updates;
use super::{Progress, apply, launcher};
use crate::api::ApiJson;
use crate::auth::Owner;
use crate::error::{Error, Result};
use crate::state::AppState;

/// The platform routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/platform/status", get(status))
        .route("/platform/check", post(check))
        .route("/platform/settings", put(settings))
        .route("/platform/update", post(update))
        .route("/platform/restart", post(restart))
}

/// What Settings › About shows.
fn describe(state: &AppState) -> Value {
    let updates = &state.updates;
    let running = apply::running_version(updates.config());
    let check = updates.last_check();
    let available = check.as_ref().and_then(|c| c.feed.as_ref()).filter(|f| f.semver() > running).map(|f| {
        json!({
            "version": f.version,
            "published_at": f.published_at,
            "notes": f.notes,
            "download_bytes": f.assets.iter()
                .filter(|(name, _)| name.contains(super::verify::this_arch()) || name.contains("pwa"))
                .map(|(_, bytes)| *bytes).sum::<u64>(),
        })
    });
    let release = ReleaseState::load(updates.data_dir());
    json!({
        "version": running.to_string(),
        "build_sha": crate::ops::BUILD_SHA,
        "serving": if updates.config().release.is_some() { "release" } else { "image" },
        "supervised": updates.supervised(),
        "feed": updates.config().feed.as_ref().map(|u| u.to_string()),
        "auto_check": updates.auto_check(),
        "checked_at": check.as_ref().map(|c| c.checked_at),
        "check_error": check.as_ref().and_then(|c| c.error.clone()),
        "available": available,
        "running_turns": state.agents.turns.len(),
        "progress": updates.progress(),
        "last": release.last,
    })
}

#[tracing::instrument(level = "debug", skip_all)]
async fn status(State(state): State<AppState>, _owner: Owner) -> Json<Value> {
    Json(describe(&state))
}

/// `POST /api/platform/check`: asks the feed now (a check younger than a minute is reused).
#[tracing::instrument(level = "debug", skip_all)]
async fn check(State(state): State<AppState>, _owner: Owner) -> Result<Json<Value>> {
    if state.updates.config().feed.is_none() {
        return Err(Error::conflict("updates_off", "Update checks are off on this server (MOBIUS_UPDATE_FEED=off)."));
    }
    let recent = state.updates.last_check().is_some_and(|c| {
        crate::db::now_ms() - c.checked_at < i64::try_from(MANUAL_CHECK_MIN_INTERVAL.as_millis()).unwrap_or(0)
    });
    if !recent && let Some(_busy) = state.updates.try_busy() {
        updates::check_now(&state.updates).await;
    }
    Ok(Json(describe(&state)))
}

#[derive(Deserialize)]
struct SettingsBody {
    auto_check: bool,
}

/// `PUT /api/platform/settings {auto_check}`: the daily check on or off.
#[tracing::instrument(level = "debug", skip_all)]
async fn settings(
    State(state): State<AppState>,
    _owner: Owner,
    ApiJson(body): ApiJson<SettingsBody>,
) -> Result<Json<Value>> {
    feed::set_auto_check(state.updates.data_dir(), body.auto_check)?;
    Ok(Json(describe(&state)))
}

#[derive(Deserialize)]
struct UpdateBody {
    /// The version the owner was shown.
    version: String,
}

/// `POST /api/platform/update {version}`: 202 and the apply runs; `GET /api/platform/status`
/// follows it (`progress`, then `last` after the restart).
#[tracing::instrument(level = "debug", skip_all)]
async fn update(State(state): State<AppState>, _owner: Owner, ApiJson(body): ApiJson<UpdateBody>) -> Result<Response> {
    let updates = state.updates.clone();
    let Some(pid) = updates.config().launcher_pid else {
        return Err(not_supervised());
    };
    if updates.config().feed.is_none() {
        return Err(Error::conflict("updates_off", "Update checks are off on this server (MOBIUS_UPDATE_FEED=off)."));
    }
    let running = apply::running_version(updates.config());
    if semver::Version::parse(&body.version).map_or(true, |v| v <= running) {
        return Err(Error::conflict(
            "up_to_date",
            format!("{} is not newer than the running {running}.", body.version),
        ));
    }
    if updates.progress().is_some_and(|p| p.phase != "failed") {
        return Err(Error::conflict("update_in_progress", "An update is already being applied."));
    }
    let progress = |phase: &'static str, done: u64, total: u64| Progress {
        phase,
        version: body.version.clone(),
        done_bytes: done,
        total_bytes: total,
        error: None,
    };
    updates.set_progress(Some(progress("checking", 0, 0)));
    let version = body.version.clone();
    tokio::spawn(async move {
        let _busy = updates.busy().await;
        let report = {
            let updates = updates.clone();
            let version = version.clone();
            move |phase: &'static str, done: u64, total: u64| {
                updates.set_progress(Some(Progress {
                    phase,
                    version: version.clone(),
                    done_bytes: done,
                    total_bytes: total,
                    error: None,
                }))
            }
        };
        let data_dir = updates.data_dir().to_path_buf();
        if let Err(e) = apply::apply(&data_dir, updates.config(), &running, pid, Some(&version), &report).await {
            tracing::warn!(code = e.code, error = %e.message, "update not applied");
            updates.set_progress(Some(Progress {
                phase: "failed",
                version,
                done_bytes: 0,
                total_bytes: 0,
                error: Some(e.message),
            }));
        }
    });
    Ok((StatusCode::ACCEPTED, Json(json!({ "accepted": true, "version": body.version }))).into_response())
}

fn not_supervised() -> Error {
    Error::conflict(
        "not_supervised",
        "This server was not started by `mobius launch` (the image's default), so it cannot restart itself.",
    )
}

/// `POST /api/platform/restart`: 202, then the launcher restarts the server (running turns
/// continue after it).
#[tracing::instrument(level = "debug", skip_all)]
async fn restart(State(state): State<AppState>, _owner: Owner) -> Result<Response> {
    let Some(pid) = state.updates.config().launcher_pid else {
        return Err(not_supervised());
    };
    launcher::ask_restart(pid).map_err(|e| Error::Internal(format!("cannot reach the launcher: {e}")))?;
    tracing::info!("restart asked for from Settings");
    Ok((StatusCode::ACCEPTED, Json(json!({ "accepted": true }))).into_response())
}
