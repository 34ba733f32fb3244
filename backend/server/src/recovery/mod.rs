//! `/recovery`: a page built into the binary (not the PWA, which the agent may change) where the
//! owner signs in and puts the platform's look back: the theme reset to stock or to one of its
//! versions, and the shell (the screens the agent rebuilds, `shell/`) back to one of its builds
//! or to the stock one, which is always there. It uses only the public API and loads no theme; signing in there is the device's
//! session, handed to the shell (same origin), whose remembered theme it forgets on a change.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::state::AppState;

const PAGE: &str = include_str!("page.html");
/// The page's own policy, stricter than the shell's: its one script, its inline style, this
/// origin's API, nothing else (no frames, no forms posted anywhere, never framed).
const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; \
img-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'; object-src 'none'";
const SCRIPT: &str = include_str!("recovery.js");

/// The routes (outside `/api`).
pub fn router() -> Router<AppState> {
    Router::new().route("/recovery", get(page)).route("/recovery/recovery.js", get(script))
}

fn with(kind: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[tracing::instrument(level = "debug", skip_all)]
async fn page() -> Response {
    let mut response = with("text/html; charset=utf-8", PAGE);
    response.headers_mut().insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(PAGE_CSP));
    response
}

#[tracing::instrument(level = "debug", skip_all)]
async fn script() -> Response {
    with("text/javascript; charset=utf-8", SCRIPT)
}
