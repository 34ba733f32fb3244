//! `/api/apps…` and `/api/auth/app-token`.

use axum::extract::{Path, Query, State};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use super::apply::{self, Applied};
use super::{AppOut, RECOVERY_WINDOW_MS, catalog, lifecycle, review, serve};
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
        .route("/apps/review", post(review_source))
        .route("/apps/updates/check", post(check_updates))
        .route("/apps/{id}", get(get_app).patch(patch_app).delete(delete_app))
        .route("/apps/{id}/recover", post(recover))
        .route("/apps/{id}/update", post(update))
        .route("/apps/{id}/update/check", post(check_update))
        .route("/apps/{id}/update/preview", get(update_preview))
        .route("/apps/{id}/restore", post(restore))
        .route("/apps/{id}/undo", post(restore))
        .route("/apps/{id}/history", get(history))
        .route("/apps/{id}/data", axum::routing::delete(delete_data))
        .route("/catalog", get(browse_catalog))
        .route("/catalog/indexes", get(catalog_indexes).put(set_catalog_indexes))
        .route("/auth/install-pass", post(mint_install_pass))
        .route("/auth/install-pass/redeem", post(redeem_install_pass))
        .route("/apps/{id}/opened", post(opened))
        .route("/apps/{id}/seen", post(seen))
        .route("/apps/{id}/module", get(serve::module))
        .route("/apps/{id}/frame", get(serve::frame))
        .route("/apps/{id}/icon", get(serve::icon))
        .route("/auth/app-token", post(app_token))
}

/// Lets the owner through, and an app whose manifest asks for `permissions.manage_apps` (the
/// store as a mini-app): reads only; every change it asks for goes through the owner's review
/// in the shell.
fn manager(who: &Principal) -> Result<()> {
    match who {
        Principal::Owner(_) => Ok(()),
        Principal::App(app) => {
            if app.manifest.permissions().grant("manage_apps") {
                Ok(())
            } else {
                Err(Error::forbidden(
                    "manage_apps_required",
                    "Only an app whose mobius.json asks for permissions.manage_apps may do this.",
                ))
            }
        }
    }
}

/// `GET /api/apps`: the owner's list, and a `manage_apps` app's (no other app may enumerate them).
#[tracing::instrument(level = "debug", skip_all)]
async fn list(State(state): State<AppState>, who: Principal) -> Result<Json<Vec<AppOut>>> {
    manager(&who)?;
    Ok(Json(db::apps::list(&state.db.read).await?.into_iter().map(|row| AppOut::new(&state, row)).collect()))
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

/// `GET /api/apps/{id}`: the owner's view of any app; an app sees only itself.
#[tracing::instrument(level = "debug", skip_all)]
async fn get_app(State(state): State<AppState>, who: Principal, Path(id): Path<i64>) -> Result<Json<AppOut>> {
    if who.app_id().is_some_and(|own| own != id) {
        return Err(Error::forbidden("forbidden", "An app may read only its own entry."));
    }
    Ok(Json(AppOut::new(&state, live_row(&state, id).await?)))
}

#[derive(Deserialize)]
struct ApplyIn {
    slug: Option<String>,
    /// The original product's shape: `/data/apps/<slug>` (only the last segment is used).
    source_dir: Option<String>,
    chat_id: Option<String>,
}

fn applied_json(state: &AppState, a: Applied) -> Json<Value> {
    let mode = a.mode;
    Json(json!({ "mode": mode, "app": AppOut::new(state, a.app), "warnings": a.warnings }))
}

/// `POST /api/apps/apply {slug}` — the owner, or an agent run (its chat is remembered).
#[tracing::instrument(level = "debug", skip_all)]
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
    Ok(applied_json(&state, apply::apply(&state.apps, &slug, chat_id).await?))
}

#[derive(Deserialize)]
struct InstallIn {
    source: String,
    /// The release commit the owner reviewed; the install refuses another (409 `source_changed`).
    commit: Option<String>,
}

fn source_label(source: &super::git::Source) -> String {
    match source {
        super::git::Source::Path(p) => p.display().to_string(),
        super::git::Source::Url(u) => u.clone(),
    }
}

/// `POST /api/apps/install {source, commit?}` (the owner: an app's request goes through the
/// shell's review).
#[tracing::instrument(level = "debug", skip_all)]
async fn install(
    State(state): State<AppState>,
    _owner: Owner,
    ApiJson(body): ApiJson<InstallIn>,
) -> Result<Json<Value>> {
    let source = apply::parse_source(&state.config.data_dir, &body.source)?;
    let label = source_label(&source);
    let applied = apply::install(&state.apps, source, label, body.commit).await?;
    initialize_on_install(&state, &applied).await;
    Ok(Json(json!({ "mode": "installed", "app": AppOut::new(&state, applied.app), "warnings": applied.warnings })))
}

/// `schedule.initialize_on_install`: a first install runs the job once, now (not an update).
async fn initialize_on_install(state: &AppState, applied: &Applied) {
    let wanted = applied.app.manifest.initialize_on_install();
    if applied.mode != "created" || !wanted {
        return;
    }
    match db::schedules::of_app(&state.db.read, applied.app.id).await {
        Ok(Some(schedule)) => {
            if let Err(e) = state.schedules.run_now(schedule.id, "install").await {
                tracing::warn!(app.id = applied.app.id, error = %e, "the job could not run after install");
            }
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(app.id = applied.app.id, error = %e, "the job schedule could not be read after install")
        }
    }
}

#[derive(Deserialize)]
struct ReviewIn {
    source: String,
}

/// `POST /api/apps/review {source}`: what installing `source` would bring, before anything is
/// installed.
#[tracing::instrument(level = "debug", skip_all)]
async fn review_source(
    State(state): State<AppState>,
    who: Principal,
    ApiJson(body): ApiJson<ReviewIn>,
) -> Result<Json<review::Review>> {
    manager(&who)?;
    let source = apply::parse_source(&state.config.data_dir, &body.source)?;
    let label = source_label(&source);
    Ok(Json(review::review(&state, source, label).await?))
}

#[derive(Deserialize, Default)]
struct CheckIn {
    #[serde(default)]
    force: bool,
}

/// `POST /api/apps/updates/check {force?}`: asks every installed app's source for a new release.
#[tracing::instrument(level = "debug", skip_all)]
async fn check_updates(
    State(state): State<AppState>,
    who: Principal,
    ApiJson(body): ApiJson<CheckIn>,
) -> Result<Json<lifecycle::CheckSummary>> {
    manager(&who)?;
    let force = body.force;
    Ok(Json(lifecycle::check_all(&state, force).await?))
}

/// `POST /api/apps/{id}/update/check`: asks this app's source.
#[tracing::instrument(level = "debug", skip_all)]
async fn check_update(State(state): State<AppState>, who: Principal, Path(id): Path<i64>) -> Result<Json<Value>> {
    manager(&who)?;
    let app = live_row(&state, id).await?;
    let checked = lifecycle::check_one(&state, &app).await;
    Ok(Json(json!(checked)))
}

/// `GET /api/apps/{id}/update/preview`: what the source's newest release would change.
#[tracing::instrument(level = "debug", skip_all)]
async fn update_preview(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<i64>,
) -> Result<Json<lifecycle::Preview>> {
    manager(&who)?;
    let app = live_row(&state, id).await?;
    Ok(Json(lifecycle::preview(&state, &app).await?))
}

#[derive(Deserialize, Default)]
struct UpdateIn {
    /// The release the owner previewed; the update refuses another (409 `source_changed`).
    commit: Option<String>,
}

/// `POST /api/apps/{id}/update {commit?}` → `{mode: updated | up_to_date | conflict, …}`.
#[tracing::instrument(level = "debug", skip_all)]
async fn update(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<i64>,
    ApiJson(body): ApiJson<UpdateIn>,
) -> Result<Json<Value>> {
    let app = live_row(&state, id).await?;
    let expect = body.commit;
    let updated = lifecycle::update(&state, &app, expect).await?;
    Ok(Json(json!({
        "mode": updated.mode,
        "conflict_paths": updated.conflict_paths,
        "resolver_chat_id": updated.resolver_chat_id,
        "resolver_started": updated.resolver_started,
        "draft": updated.draft,
        "warnings": updated.warnings,
        "app": AppOut::new(&state, updated.app),
    })))
}

#[derive(Deserialize, Default)]
struct RestoreIn {
    commit: Option<String>,
}

/// `POST /api/apps/{id}/restore {commit?}` (and `/undo`): back to an earlier version.
#[tracing::instrument(level = "debug", skip_all)]
async fn restore(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<i64>,
    ApiJson(body): ApiJson<RestoreIn>,
) -> Result<Json<Value>> {
    let app = live_row(&state, id).await?;
    let commit = body.commit;
    Ok(applied_json(&state, lifecycle::restore(&state, &app, commit).await?))
}

/// `GET /api/apps/{id}/history`: the versions that went live, newest first.
#[tracing::instrument(level = "debug", skip_all)]
async fn history(State(state): State<AppState>, who: Principal, Path(id): Path<i64>) -> Result<Json<Value>> {
    manager(&who)?;
    let app = live_row(&state, id).await?;
    let versions = lifecycle::history(&state, &app).await?;
    let rows: Vec<Value> = versions
        .into_iter()
        .map(|v| {
            let live = app.source_commit.as_deref() == Some(v.commit.as_str());
            let mut row = json!(v);
            row["live"] = json!(live);
            row
        })
        .collect();
    Ok(Json(json!({ "versions": rows })))
}

/// `DELETE /api/apps/{id}/data`: wipes what the app stored (its starting documents come back).
#[tracing::instrument(level = "debug", skip_all)]
async fn delete_data(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<i64>,
) -> Result<axum::response::Response> {
    let app = live_row(&state, id).await?;
    lifecycle::delete_data(&state, &app).await?;
    Ok(crate::api::no_content())
}

#[derive(Deserialize)]
struct CatalogQuery {
    q: Option<String>,
    #[serde(default)]
    refresh: bool,
}

/// `GET /api/catalog?q=&refresh=`: the store's apps, each marked when installed.
#[tracing::instrument(level = "debug", skip_all)]
async fn browse_catalog(
    State(state): State<AppState>,
    who: Principal,
    Query(q): Query<CatalogQuery>,
) -> Result<Json<Value>> {
    manager(&who)?;
    let mut found = catalog::catalog(&state, q.refresh).await?;
    if let Some(query) = q.q.as_deref().map(str::trim).filter(|q| !q.is_empty()) {
        found.apps.retain(|entry| catalog::matches(entry, query));
    }
    let installed = db::apps::list(&state.db.read).await?;
    let apps: Vec<Value> = found
        .apps
        .into_iter()
        .map(|entry| {
            let app = installed.iter().find(|a| a.slug == entry.id);
            let mut row = json!(entry);
            row["installed"] = app.map_or(
                Value::Null,
                |a| json!({ "id": a.id, "version": a.version, "update_available": a.update_commit.is_some() }),
            );
            row
        })
        .collect();
    Ok(Json(json!({ "apps": apps, "errors": found.errors })))
}

/// `GET /api/catalog/indexes`.
#[tracing::instrument(level = "debug", skip_all)]
async fn catalog_indexes(State(state): State<AppState>, _owner: Owner) -> Result<Json<Value>> {
    let indexes = catalog::indexes(&state).await?;
    Ok(Json(json!({ "indexes": indexes, "default": catalog::DEFAULT_CATALOG_INDEX })))
}

#[derive(Deserialize)]
struct IndexesIn {
    indexes: Option<Vec<String>>,
}

/// `PUT /api/catalog/indexes {indexes}` (`null` or `[]`: the default catalog).
#[tracing::instrument(level = "debug", skip_all)]
async fn set_catalog_indexes(
    State(state): State<AppState>,
    _owner: Owner,
    ApiJson(body): ApiJson<IndexesIn>,
) -> Result<Json<Value>> {
    let indexes = catalog::set_indexes(&state, body.indexes).await?;
    Ok(Json(json!({ "indexes": indexes, "default": catalog::DEFAULT_CATALOG_INDEX })))
}

/// An install pass lives this long.
pub const INSTALL_PASS_TTL_MS: i64 = 60 * 1000;

#[derive(Deserialize)]
struct PassIn {
    app_id: i64,
}

/// `POST /api/auth/install-pass {app_id}` → `{install_pass, expires_at}`: a one-use pass that
/// signs the installed home-screen app of `app_id` in once, within a minute.
#[tracing::instrument(level = "debug", skip_all)]
async fn mint_install_pass(
    State(state): State<AppState>,
    Owner(claims): Owner,
    ApiJson(body): ApiJson<PassIn>,
) -> Result<Json<Value>> {
    use rand::RngCore;
    use sha2::{Digest, Sha256};
    let app = live_row(&state, body.app_id).await?;
    let mut raw = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut raw);
    let pass = base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, raw);
    let now = now_ms();
    let record = db::apps::InstallPass {
        id: hex::encode(Sha256::digest(pass.as_bytes())),
        app_id: app.id,
        epoch: claims.epoch,
        created_at: now,
        expires_at: now + INSTALL_PASS_TTL_MS,
        consumed_at: None,
    };
    let expires_at = record.expires_at;
    state.writer.call(|ack| WriteCommand::InstallPassMint { pass: record, ack }).await?;
    Ok(Json(json!({ "install_pass": pass, "expires_at": expires_at, "slug": app.slug })))
}

#[derive(Deserialize)]
struct RedeemIn {
    install_pass: String,
    slug: String,
}

/// `POST /api/auth/install-pass/redeem {install_pass, slug}` (no token) → an owner session,
/// once, for the app the pass was made for, within its minute.
#[tracing::instrument(level = "debug", skip_all)]
async fn redeem_install_pass(
    State(state): State<AppState>,
    client: crate::net::client::ClientAddr,
    headers: axum::http::HeaderMap,
    ApiJson(body): ApiJson<RedeemIn>,
) -> Result<axum::response::Response> {
    use sha2::{Digest, Sha256};
    let refused =
        || Error::unauthorized("invalid_install_pass", "This install pass is not valid (anymore); sign in instead.");
    if body.install_pass.is_empty() || body.install_pass.len() > 128 {
        return Err(refused());
    }
    let id = hex::encode(Sha256::digest(body.install_pass.as_bytes()));
    let pass = state.writer.call(|ack| WriteCommand::InstallPassRedeem { id, ack }).await?.ok_or_else(refused)?;
    let app =
        db::apps::get(&state.db.read, pass.app_id).await?.filter(|a| a.deleted_at.is_none() && a.slug == body.slug);
    let (username, epoch) = state.owner.get().ok_or_else(refused)?;
    if app.is_none() || epoch != pass.epoch {
        return Err(refused());
    }
    // The installed app is a device of its own (iOS keeps its storage apart from Safari's).
    let device = crate::auth::devices::known(&state.db.read, &headers).await?;
    let (token, cookie) = crate::auth::open_session(&state, &headers, device, &client, &username, epoch).await?;
    tracing::info!(app.id = pass.app_id, "install pass redeemed");
    let mut response = Json(json!({ "access_token": token, "token_type": "bearer" })).into_response();
    response.headers_mut().insert(axum::http::header::SET_COOKIE, cookie);
    Ok(response)
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

#[tracing::instrument(level = "debug", skip_all)]
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

#[derive(Deserialize)]
struct DeleteQuery {
    /// `keep` (the default: installing the app again brings it back) or `delete`.
    data: Option<String>,
}

/// `DELETE /api/apps/{id}?data=keep|delete`: uninstalls (recoverable for a week).
#[tracing::instrument(level = "debug", skip_all)]
async fn delete_app(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<i64>,
    Query(q): Query<DeleteQuery>,
) -> Result<axum::response::Response> {
    let app = live_row(&state, id).await?;
    let keep_data = match q.data.as_deref() {
        None | Some("keep") => true,
        Some("delete") => false,
        Some(_) => return Err(Error::bad_request("invalid_request", "data is keep or delete.")),
    };
    lifecycle::uninstall(&state, &app, keep_data).await?;
    // A deleted app's page goes at once (recovering the app does not publish it again).
    crate::published::routes::publisher(&state).unpublish(id).await?;
    Ok(crate::api::no_content())
}

#[tracing::instrument(level = "debug", skip_all)]
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

#[tracing::instrument(level = "debug", skip_all)]
async fn opened(State(state): State<AppState>, _owner: Owner, Path(id): Path<i64>) -> Result<Json<Value>> {
    let app = live_row(&state, id).await?;
    let patch = AppPatch { last_opened_at: Some(now_ms()), seen_sha: app.bundle_sha, ..AppPatch::default() };
    state.writer.call(|ack| WriteCommand::AppPatch { id, patch, ack }).await?;
    Ok(Json(json!({ "ok": true })))
}

#[tracing::instrument(level = "debug", skip_all)]
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
#[tracing::instrument(level = "debug", skip_all)]
async fn app_token(
    State(state): State<AppState>,
    _owner: Owner,
    ApiJson(body): ApiJson<AppTokenIn>,
) -> Result<Json<Value>> {
    let app = live_row(&state, body.app_id).await?;
    let token = issue_app_token(&state, &app)?;
    Ok(Json(json!({ "token": token, "expires_in": crate::auth::APP_TOKEN_TTL_SECS })))
}
