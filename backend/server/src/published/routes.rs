//! The owner's side of published pages (mounted under `/api`): `POST/GET/DELETE
//! /api/apps/{id}/publish` (the original's shape, plus a read of the current state) and
//! `GET /api/published-sites`, `DELETE /api/published-sites/{id}` (what Settings lists).
//! Owner only: an agent token is refused by the gate (publishing makes data public; the
//! agent asks the owner to do it), an app token by the `Owner` extractor.

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{delete, get};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{MAX_SITES, Publisher, url};
use crate::auth::Owner;
use crate::db::{self, published::SiteRow};
use crate::error::{Domain, Error, Result};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/apps/{id}/publish", get(current).post(publish).delete(unpublish))
        .route("/published-sites", get(list))
        .route("/published-sites/{id}", delete(remove))
}

/// What publishing needs, from the shared state.
pub fn publisher(state: &AppState) -> Publisher<'_> {
    Publisher {
        data_dir: &state.config.data_dir,
        compiled_dir: state.apps.compiled_dir(),
        read: &state.db.read,
        writer: &state.writer,
        keys: &state.keys,
        store: &state.storage,
    }
}

/// `POST /api/apps/{id}/publish` body (all optional; an empty body publishes a snapshot).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PublishBody {
    /// Read the app's data as it is now instead of a copy made now.
    live: Option<bool>,
    /// The original's project folder; this platform has none (only `null` is accepted).
    project_id: Option<Value>,
    /// The theme the page is painted with (the PWA sends the owner's); absent: stock colours.
    theme: Option<super::PageTheme>,
}

/// A page as the API shows it.
fn site_json(site: &SiteRow, token: &str, app_slug: &str, app_name: &str) -> Value {
    json!({
        "id": site.id,
        "app_id": site.app_id,
        "app_slug": app_slug,
        "app_name": app_name,
        "url": url(token),
        "live": site.live,
        "bytes": site.bytes,
        "files": site.files,
        "created_at": site.created_at,
        "updated_at": site.updated_at,
    })
}

/// An app id from the path: anything but a number names no app (404, like an unknown one).
fn app_id(raw: &str) -> Result<i64> {
    raw.parse().map_err(|_| Domain::AppNotFound.into())
}

async fn live_app(state: &AppState, id: i64) -> Result<db::apps::AppRow> {
    db::apps::get(&state.db.read, id)
        .await?
        .filter(|a| a.deleted_at.is_none() && a.bundle_sha.is_some())
        .ok_or_else(|| Domain::AppNotFound.into())
}

/// `GET /api/apps/{id}/publish`: the app's page, 404 `site_not_found` when it has none.
#[tracing::instrument(level = "debug", skip_all, fields(app.id = %raw))]
async fn current(State(state): State<AppState>, _owner: Owner, Path(raw): Path<String>) -> Result<Json<Value>> {
    let id = app_id(&raw)?;
    let app = live_app(&state, id).await?;
    let site = db::published::by_app(&state.db.read, id).await?.ok_or(Domain::SiteNotFound)?;
    let token = publisher(&state).token(&site)?;
    Ok(Json(site_json(&site, &token, &app.slug, &app.name)))
}

/// `POST /api/apps/{id}/publish {live?, theme?}`: publishes the app (or refreshes its page's
/// copy, mode and theme, keeping the link); answers the page with its `url`.
#[tracing::instrument(level = "debug", skip_all, fields(app.id = %raw))]
async fn publish(
    State(state): State<AppState>,
    _owner: Owner,
    Path(raw): Path<String>,
    body: bytes::Bytes,
) -> Result<Json<Value>> {
    let id = app_id(&raw)?;
    let body: PublishBody = if body.iter().all(u8::is_ascii_whitespace) {
        PublishBody::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| Error::bad_request("invalid_request", e.to_string()))?
    };
    if body.project_id.as_ref().is_some_and(|p| !p.is_null()) {
        return Err(Error::bad_request("invalid_request", "This platform has no projects: leave project_id out."));
    }
    let app = live_app(&state, id).await?;
    let (site, token) = publisher(&state).publish(&app, body.live.unwrap_or(false), body.theme.as_ref()).await?;
    tracing::info!(app.id = id, live = site.live, bytes = site.bytes, files = site.files, "app published");
    Ok(Json(site_json(&site, &token, &app.slug, &app.name)))
}

/// `DELETE /api/apps/{id}/publish`: unpublishes (404 `site_not_found` when it was not).
#[tracing::instrument(level = "debug", skip_all, fields(app.id = %raw))]
async fn unpublish(State(state): State<AppState>, _owner: Owner, Path(raw): Path<String>) -> Result<Response> {
    let id = app_id(&raw)?;
    if !publisher(&state).unpublish(id).await? {
        return Err(Domain::SiteNotFound.into());
    }
    Ok(crate::api::no_content())
}

/// `GET /api/published-sites`: every page, newest first, and how many may be published.
#[tracing::instrument(level = "debug", skip_all)]
async fn list(State(state): State<AppState>, _owner: Owner) -> Result<Json<Value>> {
    let publisher = publisher(&state);
    let mut sites = Vec::new();
    for listed in db::published::list(&state.db.read).await? {
        let token = publisher.token(&listed.site)?;
        sites.push(site_json(&listed.site, &token, &listed.app_slug, &listed.app_name));
    }
    Ok(Json(json!({ "sites": sites, "max": MAX_SITES })))
}

/// `DELETE /api/published-sites/{id}`: unpublishes page `id`.
#[tracing::instrument(level = "debug", skip_all, fields(site.id = %raw))]
async fn remove(State(state): State<AppState>, _owner: Owner, Path(raw): Path<String>) -> Result<Response> {
    let id: i64 = raw.parse().map_err(|_| Domain::SiteNotFound)?;
    let site = db::published::get(&state.db.read, id).await?.ok_or(Domain::SiteNotFound)?;
    if !publisher(&state).unpublish(site.app_id).await? {
        return Err(Domain::SiteNotFound.into());
    }
    Ok(crate::api::no_content())
}
