//! `/api/apps…` and `/api/auth/app-token`.

use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use super::apply::{self, Applied};
use super::{AppOut, RECOVERY_WINDOW_MS, serve};
use crate::api::ApiJson;
use crate::auth::{Owner, Principal, Scope, issue_app_token};
use crate::db::{self, apps::AppPatch, now_ms};
use crate::error::{Domain, Error, Result};
use crate::state::AppState;
use crate::writer::WriteCommand;

/// The app routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/apps", get(list))
        .route("/apps/", get(list))
        .route("/apps/apply", post(apply_app))
        .route("/apps/install", post(install))
        .route("/apps/{id}", get(get_app).patch(patch_app).delete(delete_app))
        .route("/apps/{id}/recover", post(recover))
        .route("/apps/{id}/update", post(update))
        .route("/apps/{id}/undo", post(undo))
        .route("/apps/{id}/history", get(history))
        .route("/apps/{id}/opened", post(opened))
        .route("/apps/{id}/seen", post(seen))
        .route("/apps/{id}/module", get(serve::module))
        .route("/apps/{id}/frame", get(serve::frame))
        .route("/apps/{id}/icon", get(serve::icon))
        .route("/auth/app-token", post(app_token))
}

async fn list(State(state): State<AppState>, _who: Principal) -> Result<Json<Vec<AppOut>>> {
    if state.purge_clock.due() {
        tokio::spawn(crate::housekeeping::purge_tombstones(state.writer.clone(), state.apps.clone()));
    }
    Ok(Json(db::apps::list(&state.db.read).await?.into_iter().map(AppOut::from).collect()))
}

async fn app_row(state: &AppState, id: i64) -> Result<db::apps::AppRow> {
    db::apps::get(&state.db.read, id)
        .await?
        .filter(|a| a.bundle_sha.is_some())
        .ok_or_else(|| Domain::AppNotFound.into())
}

async fn live_row(state: &AppState, id: i64) -> Result<db::apps::AppRow> {
    let app = app_row(state, id).await?;
    if app.deleted_at.is_some() {
        return Err(Domain::AppNotFound.into());
    }
    Ok(app)
}

async fn get_app(State(state): State<AppState>, _who: Principal, Path(id): Path<i64>) -> Result<Json<AppOut>> {
    Ok(Json(live_row(&state, id).await?.into()))
}

#[derive(Deserialize)]
struct ApplyIn {
    slug: Option<String>,
    /// The original product's shape: `/data/apps/<slug>` (only the last segment is used).
    source_dir: Option<String>,
    chat_id: Option<String>,
}

fn applied_json(a: Applied) -> Json<Value> {
    let mode = a.mode;
    Json(json!({ "mode": mode, "app": AppOut::from(a.app), "warnings": a.warnings }))
}

/// `POST /api/apps/apply {slug}` — the owner, or an agent run (its chat is remembered).
async fn apply_app(
    State(state): State<AppState>,
    Owner(claims): Owner,
    ApiJson(body): ApiJson<ApplyIn>,
) -> Result<Json<Value>> {
    let slug = body
        .slug
        .or_else(|| {
            body.source_dir.as_deref().and_then(|d| d.trim_end_matches('/').rsplit('/').next()).map(str::to_owned)
        })
        .ok_or_else(|| {
            Error::bad_request("invalid_request", "Name the app to apply: {\"slug\": \"<folder under apps/>\"}.")
        })?;
    let chat_id = body.chat_id.or_else(|| (claims.scope == Scope::Agent).then(|| claims.chat_id.clone()).flatten());
    Ok(applied_json(apply::apply(&state.apps, &slug, chat_id).await?))
}

#[derive(Deserialize)]
struct InstallIn {
    source: String,
}

async fn install(
    State(state): State<AppState>,
    _owner: Owner,
    ApiJson(body): ApiJson<InstallIn>,
) -> Result<Json<Value>> {
    let source = apply::parse_source(&body.source)?;
    let label = match &source {
        super::git::Source::Path(p) => p.display().to_string(),
        super::git::Source::Url(u) => u.clone(),
    };
    let applied = apply::install(&state.apps, source, label).await?;
    Ok(Json(json!({ "mode": "installed", "app": AppOut::from(applied.app), "warnings": applied.warnings })))
}

async fn update(State(state): State<AppState>, _owner: Owner, Path(id): Path<i64>) -> Result<Json<Value>> {
    let app = live_row(&state, id).await?;
    let updated = apply::update(&state.apps, &app).await?;
    let status = updated.mode;
    let body = json!({ "mode": status, "conflict_paths": updated.conflict_paths, "app": AppOut::from(updated.app) });
    if status == "conflict" {
        return Err(Error::conflict(
            "update_conflict",
            format!(
                "Local edits and the new release change the same lines in: {}. The app was left as it was.",
                body["conflict_paths"]
                    .as_array()
                    .map(|p| p.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
                    .unwrap_or_default()
            ),
        ));
    }
    Ok(Json(body))
}

#[derive(Deserialize, Default)]
struct UndoIn {
    commit: Option<String>,
}

async fn undo(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<i64>,
    ApiJson(body): ApiJson<UndoIn>,
) -> Result<Json<Value>> {
    let app = live_row(&state, id).await?;
    let commit = body.commit;
    Ok(applied_json(apply::undo(&state.apps, &app, commit).await?))
}

async fn history(State(state): State<AppState>, _owner: Owner, Path(id): Path<i64>) -> Result<Json<Value>> {
    let app = live_row(&state, id).await?;
    let dir = state.apps.source_dir(&app.slug)?;
    let versions = tokio::task::spawn_blocking(move || -> Result<Vec<(String, String, i64)>> {
        let repo = super::git::open_or_init(&dir)?;
        super::git::history(&repo, 50)
    })
    .await
    .map_err(|e| Error::Internal(e.to_string()))??;
    let rows: Vec<Value> = versions
        .into_iter()
        .map(|(sha, message, at)| json!({ "commit": sha, "message": message, "at": at, "live": app.source_commit.as_deref() == Some(sha.as_str()) }))
        .collect();
    Ok(Json(json!({ "versions": rows })))
}

#[derive(Deserialize)]
struct PatchIn {
    name: Option<String>,
    pinned: Option<bool>,
    cross_app_access: Option<String>,
    share_with_apps: Option<String>,
}

fn level(v: Option<String>) -> Result<Option<String>> {
    match v.as_deref() {
        None => Ok(None),
        Some("none" | "read" | "write") => Ok(v),
        Some(_) => Err(Error::bad_request("invalid_permission", "Access levels are none, read or write.")),
    }
}

async fn patch_app(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<i64>,
    ApiJson(body): ApiJson<PatchIn>,
) -> Result<Json<Value>> {
    live_row(&state, id).await?;
    let name = body.name.map(|n| n.trim().to_owned());
    if name.as_ref().is_some_and(|n| n.is_empty() || n.chars().count() > 128) {
        return Err(Error::bad_request("invalid_name", "App names are 1 to 128 characters."));
    }
    let patch = AppPatch {
        name,
        pinned_at: body.pinned.map(|p| p.then(now_ms)),
        cross_app_access: level(body.cross_app_access)?,
        share_with_apps: level(body.share_with_apps)?,
        ..AppPatch::default()
    };
    state.writer.call(|ack| WriteCommand::AppPatch { id, patch, ack }).await?;
    Ok(Json(json!({ "ok": true })))
}

async fn delete_app(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<i64>,
) -> Result<axum::response::Response> {
    live_row(&state, id).await?;
    let patch = AppPatch { deleted_at: Some(Some(now_ms())), ..AppPatch::default() };
    state.writer.call(|ack| WriteCommand::AppPatch { id, patch, ack }).await?;
    Ok(crate::api::no_content())
}

async fn recover(State(state): State<AppState>, _owner: Owner, Path(id): Path<i64>) -> Result<Json<Value>> {
    let app = app_row(&state, id).await?;
    match app.deleted_at {
        None => {}
        Some(at) if at >= now_ms() - RECOVERY_WINDOW_MS => {
            let patch = AppPatch { deleted_at: Some(None), ..AppPatch::default() };
            state.writer.call(|ack| WriteCommand::AppPatch { id, patch, ack }).await?;
        }
        Some(_) => return Err(Error::gone("app_purged", "This app was deleted too long ago to recover.")),
    }
    Ok(Json(json!({ "ok": true })))
}

async fn opened(State(state): State<AppState>, _owner: Owner, Path(id): Path<i64>) -> Result<Json<Value>> {
    let app = live_row(&state, id).await?;
    let patch = AppPatch { last_opened_at: Some(now_ms()), seen_sha: app.bundle_sha, ..AppPatch::default() };
    state.writer.call(|ack| WriteCommand::AppPatch { id, patch, ack }).await?;
    Ok(Json(json!({ "ok": true })))
}

async fn seen(State(state): State<AppState>, _owner: Owner, Path(id): Path<i64>) -> Result<Json<Value>> {
    let app = live_row(&state, id).await?;
    let patch = AppPatch { seen_sha: app.bundle_sha, ..AppPatch::default() };
    state.writer.call(|ack| WriteCommand::AppPatch { id, patch, ack }).await?;
    Ok(Json(json!({ "ok": true })))
}

#[derive(Deserialize)]
struct AppTokenIn {
    app_id: i64,
}

/// `POST /api/auth/app-token {app_id}` → an 8-hour token scoped to that app.
async fn app_token(
    State(state): State<AppState>,
    _owner: Owner,
    ApiJson(body): ApiJson<AppTokenIn>,
) -> Result<Json<Value>> {
    let app = live_row(&state, body.app_id).await?;
    let token = issue_app_token(&state, &app)?;
    Ok(Json(json!({ "token": token, "expires_in": crate::auth::APP_TOKEN_TTL_SECS })))
}
