//! `/api/shell…`: the builds and what is served, a rebuild (the agent's `mobius shell rebuild`),
//! going back to a build or to stock, and the ready beacon a new build's shell sends once it
//! mounted.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;

use super::{Rebuilt, Status};
use crate::api::ApiJson;
use crate::auth::{Owner, Scope};
use crate::error::Result;
use crate::state::AppState;

/// The routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/shell", get(status))
        .route("/shell/rebuild", post(rebuild))
        .route("/shell/use", post(use_build))
        .route("/shell/ready", post(ready))
}

/// `GET /api/shell`: the builds (newest first), the one served, whether one is building.
#[tracing::instrument(level = "debug", skip_all)]
async fn status(State(state): State<AppState>, _owner: Owner) -> Json<Status> {
    Json(state.shell.status())
}

/// `POST /api/shell/rebuild`: builds `DATA_DIR/platform/shell/` and serves it (on trial). 422
/// `shell_build_failed` with the build's output, 422 `shell_source_refused`, 409
/// `shell_build_running`; the current shell stays on any refusal.
#[tracing::instrument(level = "debug", skip_all)]
async fn rebuild(State(state): State<AppState>, Owner(claims): Owner) -> Result<Json<Rebuilt>> {
    let chat = (claims.scope == Scope::Agent).then(|| claims.chat_id.clone()).flatten();
    Ok(Json(state.shell.rebuild(chat).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UseBody {
    /// The build's number; `null`: the stock shell.
    build: Option<u32>,
}

/// `POST /api/shell/use` `{build}`: serve that build, or the stock shell (`null`).
#[tracing::instrument(level = "debug", skip_all)]
async fn use_build(
    State(state): State<AppState>,
    _owner: Owner,
    ApiJson(body): ApiJson<UseBody>,
) -> Result<Json<Status>> {
    state.shell.use_build(body.build).await?;
    Ok(Json(state.shell.status()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadyBody {
    build: u32,
}

/// `POST /api/shell/ready` `{build}`: a browser mounted that build (204; a build not served
/// any more is ignored). No token needed: a device on the sign-in screen mounted the build as
/// surely as a signed-in one, and all a beacon can do is keep the build already served.
#[tracing::instrument(level = "debug", skip_all)]
async fn ready(State(state): State<AppState>, ApiJson(body): ApiJson<ReadyBody>) -> Result<StatusCode> {
    state.shell.ready(body.build).await?;
    Ok(StatusCode::NO_CONTENT)
}
