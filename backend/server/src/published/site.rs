//! `/sites/<token>/…`: a published page, for anyone with the link (outside `/api`: no gate, no
//! cookie or bearer read — nothing of the owner's is accepted here, and nothing else of the
//! server answers under this prefix).
//!
//! - `/sites/<token>/` the page: the app frame document served alone, `app-frame.js` as its own
//!   read-only host (no token in it), sandboxed into an opaque origin by its CSP, which lets it
//!   connect to this page's prefix only;
//! - `/sites/<token>/module.js` the app's module as it was published;
//! - `/sites/<token>/data/<path>`, `/sites/<token>/list[/<prefix>]` its data, read only: the copy
//!   made at publish, or the app's storage as it is now for a `live` page.
//!
//! Every answer is `no-store` (an unpublished page is gone at once, from every cache) and
//! `no-referrer` (the link is the capability: it never leaves in a `Referer`). An unknown, revoked
//! or malformed token, and any other path, is the same 404.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{any, get};
use serde_json::json;

use super::{module_path, plausible_token, token_hash};
use crate::db::{self, published::SiteRow};
use crate::error::{Error, Result};
use crate::state::AppState;
use crate::storage::{ListQ, SiteData};

/// Sandbox flags of a published page (the original's: scripts and forms run in an opaque
/// origin; popups it opens stay sandboxed).
const SITE_SANDBOX: &str = "allow-scripts allow-forms allow-popups";

/// The routes under `/sites` (merged outside `/api`).
pub fn router() -> Router<AppState> {
    let sites = Router::new()
        .route(
            "/{token}",
            get(|Path(token): Path<String>| async move {
                if !plausible_token(&token) {
                    return Err(gone());
                }
                Ok(Redirect::permanent(&super::url(&token)))
            }),
        )
        .route("/{token}/", get(page))
        .route("/{token}/module.js", get(module))
        .route("/{token}/data/{*path}", get(data))
        .route("/{token}/list", get(list_root))
        .route("/{token}/list/", get(list_root))
        .route("/{token}/list/{*prefix}", get(list))
        .fallback(|| async { private(gone().into_response()) })
        .method_not_allowed_fallback(|| async { private(gone().into_response()) });
    let nothing = || async { private(gone().into_response()) };
    // `/sites` and `/sites/` themselves are no nested path: answered here, never by the PWA host.
    Router::new().nest("/sites", sites).route("/sites", any(nothing)).route("/sites/", any(nothing))
}

/// The one answer for everything that is not a published page.
fn gone() -> Error {
    Error::not_found("not_found", "There is no published page here (it may have been unpublished).")
}

/// The page `token` names, if it is published (and its app still installed).
async fn site(state: &AppState, token: &str) -> Result<SiteRow> {
    if !plausible_token(token) {
        return Err(gone());
    }
    db::published::by_token_hash(&state.db.read, &token_hash(token)).await?.ok_or_else(gone)
}

/// The headers every answer under `/sites` carries.
fn private(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert("x-robots-tag", HeaderValue::from_static("noindex, nofollow"));
    response
}

/// What the page fetches: readable from its opaque origin (`Origin: null`), never with credentials.
fn fetchable(response: Response) -> Response {
    let mut response = private(response);
    let h = response.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    // `getWithVersion` reads the version.
    h.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static("etag"));
    response
}

fn answer(result: Result<Response>) -> Response {
    fetchable(result.unwrap_or_else(IntoResponse::into_response))
}

/// `GET /sites/<token>/`: the page.
#[tracing::instrument(level = "debug", skip_all)]
async fn page(State(state): State<AppState>, Path(token): Path<String>, headers: HeaderMap) -> Response {
    let built = async {
        let site = site(&state, &token).await?;
        let app = db::apps::get(&state.db.read, site.app_id).await?.ok_or_else(gone)?;
        let origin = crate::apps::request_origin(&state, &headers);
        let base = format!("{origin}{}", super::url(&token));
        let mut config = json!({
            "appId": app.id,
            "name": app.name,
            "origin": origin,
            "site": { "base": base, "live": site.live },
        });
        if let Some(css) = super::theme_css(&state.config.data_dir, site.generation).await {
            config["theme"] = json!({ "themeCss": css });
        }
        let html = crate::apps::frame_document(&state, &app.name, &origin, &config)?;
        let csp = format!(
            "sandbox {SITE_SANDBOX}; default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval' 'wasm-unsafe-eval' blob:; \
             style-src 'unsafe-inline' blob:; img-src {base} data: blob:; font-src data:; media-src {base} data: blob:; \
             connect-src {base}; worker-src blob:; frame-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'; \
             frame-ancestors 'self'"
        );
        let mut response = axum::response::Html(html).into_response();
        let csp = HeaderValue::from_str(&csp).map_err(|_| Error::Internal("site CSP".into()))?;
        response.headers_mut().insert(header::CONTENT_SECURITY_POLICY, csp);
        Ok::<_, Error>(response)
    };
    let response = match built.await {
        Ok(response) => response,
        Err(e) if e.status() == StatusCode::NOT_FOUND => (
            StatusCode::NOT_FOUND,
            axum::response::Html(
                "<!doctype html><meta charset=\"utf-8\"><title>Not published</title>\
                 <p style=\"font:16px system-ui;margin:2rem\">There is no published page here (it may have been unpublished).</p>",
            ),
        )
            .into_response(),
        Err(e) => e.into_response(),
    };
    private(response)
}

/// `GET /sites/<token>/module.js`: the module as it was published.
#[tracing::instrument(level = "debug", skip_all)]
async fn module(State(state): State<AppState>, Path(token): Path<String>) -> Response {
    answer(
        async {
            let site = site(&state, &token).await?;
            let bytes = tokio::fs::read(module_path(&state.config.data_dir, site.generation))
                .await
                .map_err(|_| Error::unavailable("bundle_missing", "This page's copy of the app is missing."))?;
            let mut response = bytes.into_response();
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/javascript; charset=utf-8"));
            Ok(response)
        }
        .await,
    )
}

fn data_of(site: &SiteRow) -> SiteData {
    if site.live { SiteData::Live(site.app_id) } else { SiteData::Snapshot(site.generation) }
}

/// `GET /sites/<token>/data/<path>`: one stored file, read only.
#[tracing::instrument(level = "debug", skip_all)]
async fn data(
    State(state): State<AppState>,
    Path((token, path)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    answer(
        async {
            let site = site(&state, &token).await?;
            crate::storage::read_site(&state, data_of(&site), &path, &headers).await
        }
        .await,
    )
}

/// `GET /sites/<token>/list[/]`: the root folder's entries.
#[tracing::instrument(level = "debug", skip_all)]
async fn list_root(State(state): State<AppState>, Path(token): Path<String>, q: ListQ) -> Response {
    listing(&state, &token, "", q).await
}

/// `GET /sites/<token>/list/<prefix>`: a folder's entries.
#[tracing::instrument(level = "debug", skip_all)]
async fn list(State(state): State<AppState>, Path((token, prefix)): Path<(String, String)>, q: ListQ) -> Response {
    listing(&state, &token, &prefix, q).await
}

async fn listing(state: &AppState, token: &str, prefix: &str, q: ListQ) -> Response {
    answer(
        async {
            let site = site(state, token).await?;
            Ok(crate::storage::list_site(state, data_of(&site), prefix, q).await?.into_response())
        }
        .await,
    )
}
