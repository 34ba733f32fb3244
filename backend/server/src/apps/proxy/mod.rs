//! `/api/proxy`: outbound HTTP for mini-apps (their opaque frame can reach no other host).
//!
//! The original's rules: http(s) only, no credentials in the URL, public addresses only —
//! checked by `smart_http`'s resolver as each connection resolves, so the address checked is
//! the address connected to. Only `Host` and a fixed `User-Agent` go upstream (no client
//! header is forwarded); redirects are not followed (the 3xx comes back without `Location`);
//! the answer keeps the upstream status and `Content-Type` plus only `Retry-After` and the
//! `X-RateLimit-*` headers. Bounded: request body 512 KiB, response 2 MiB, 15 s in all,
//! 10 s to connect, [`client::MAX_CONCURRENT_PROXY_REQUESTS`] at once.
//!
//! Fixed on purpose (the original truncated an oversized body silently and answered every
//! transport failure 502): a body over 2 MiB is refused with 502 `proxy_response_too_large`
//! and a slow upstream with 504 `proxy_timeout`.

pub mod client;

use super::smart_http::{FetchPolicy, Refusal};
use crate::auth::Principal;
use crate::error::{Error, Result};
use crate::state::AppState;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use reqwest::Url;
use serde::Deserialize;

/// Largest body an app may send upstream.
pub const MAX_PROXY_REQUEST_BYTES: usize = 512 * 1024;
/// Largest JSON envelope of a POST (the body inside is checked against the limit above).
const MAX_PROXY_ENVELOPE_BYTES: usize = 6 * MAX_PROXY_REQUEST_BYTES + 64 * 1024;
/// Largest upstream body passed back.
pub const MAX_PROXY_RESPONSE_BYTES: usize = 2 * 1024 * 1024;
/// Longest accepted URL.
const MAX_URL_CHARS: usize = 8 * 1024;
/// Upstream response headers passed back besides `Content-Type`.
const FORWARDED: &[&str] =
    &["retry-after", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "x-ratelimit-used"];

/// The proxy routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    // The JSON envelope may escape the 512 KiB body to several times its size.
    Router::new().route(
        "/proxy",
        get(proxy_get).post(proxy_post).layer(axum::extract::DefaultBodyLimit::max(MAX_PROXY_ENVELOPE_BYTES)),
    )
}

#[derive(Deserialize)]
struct GetQuery {
    url: Option<String>,
}

#[derive(Deserialize)]
struct PostIn {
    url: Option<String>,
    #[serde(default)]
    body: String,
    content_type: Option<String>,
}

fn not_allowed(why: &str) -> Error {
    Error::bad_request("proxy_not_allowed", format!("That address may not be fetched: {why}."))
}

fn policy(state: &AppState) -> FetchPolicy {
    FetchPolicy::proxy(state.config.proxy_allow_loopback)
}

/// Parses and checks the target before anything connects.
fn target(state: &AppState, raw: Option<&str>) -> Result<Url> {
    let raw = raw
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .ok_or_else(|| Error::bad_request("invalid_url", "Give the address to fetch: /api/proxy?url=https://…"))?;
    if raw.len() > MAX_URL_CHARS {
        return Err(Error::bad_request("invalid_url", "That address is too long."));
    }
    let url = Url::parse(raw).map_err(|_| Error::bad_request("invalid_url", "That is not a valid URL."))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Error::bad_request("invalid_url", "Only http:// and https:// addresses can be fetched."));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Error::bad_request("invalid_url", "Addresses with credentials in them cannot be fetched."));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(Error::bad_request("invalid_url", "That address has no host."));
    }
    if let Some(why) = policy(state).refuse_url(&url) {
        return Err(not_allowed(&why));
    }
    Ok(url)
}

/// `GET /api/proxy?url=` (owner or app token).
#[tracing::instrument(level = "debug", skip_all)]
async fn proxy_get(State(state): State<AppState>, _who: Principal, Query(q): Query<GetQuery>) -> Result<Response> {
    let url = target(&state, q.url.as_deref())?;
    let client = state.proxy.client(&policy(&state))?;
    forward(&state, client.get(url)).await
}

/// `POST /api/proxy {url, body, content_type}` (owner or app token; same-site or the frame).
#[tracing::instrument(level = "debug", skip_all)]
async fn proxy_post(
    State(state): State<AppState>,
    _who: Principal,
    body: std::result::Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response> {
    let body = body.map_err(|_| too_large_request())?;
    let Json(input): Json<PostIn> = Json::from_bytes(&body)
        .map_err(|_| Error::bad_request("invalid_request", "Send JSON: {\"url\", \"body\", \"content_type\"}."))?;
    if input.body.len() > MAX_PROXY_REQUEST_BYTES {
        return Err(too_large_request());
    }
    let url = target(&state, input.url.as_deref())?;
    let content_type = input.content_type.unwrap_or_else(|| "application/x-www-form-urlencoded".into());
    let content_type = HeaderValue::from_str(&content_type)
        .map_err(|_| Error::bad_request("invalid_request", "content_type is not a valid header value."))?;
    let client = state.proxy.client(&policy(&state))?;
    forward(&state, client.post(url).header(header::CONTENT_TYPE, content_type).body(input.body)).await
}

fn too_large_request() -> Error {
    Error::too_large("proxy_body_too_large", format!("The body is limited to {} KiB.", MAX_PROXY_REQUEST_BYTES >> 10))
}

fn too_large_response() -> Error {
    Error::bad_gateway(
        "proxy_response_too_large",
        format!("The answer is larger than {} MiB, the most the proxy passes on.", MAX_PROXY_RESPONSE_BYTES >> 20),
    )
}

/// Sends `request` within the time limit and passes the answer back.
async fn forward(state: &AppState, request: reqwest::RequestBuilder) -> Result<Response> {
    let _permit = state
        .proxy
        .permit()
        .await
        .ok_or_else(|| Error::unavailable("proxy_unavailable", "The proxy is shutting down."))?;
    let limit = state.config.proxy_timeout;
    let exchange = async {
        let mut upstream = request.send().await.map_err(|e| transport_error(&e))?;
        if upstream.content_length().is_some_and(|n| n > MAX_PROXY_RESPONSE_BYTES as u64) {
            return Err(too_large_response());
        }
        let mut body = Vec::with_capacity(upstream.content_length().map_or(0, |n| n as usize));
        while let Some(chunk) = upstream.chunk().await.map_err(|e| transport_error(&e))? {
            if body.len() + chunk.len() > MAX_PROXY_RESPONSE_BYTES {
                return Err(too_large_response());
            }
            body.extend_from_slice(&chunk);
        }
        Ok((upstream.status(), upstream.headers().clone(), body))
    };
    let (status, headers, body) = tokio::time::timeout(limit, exchange).await.map_err(|_| {
        Error::gateway_timeout(
            "proxy_timeout",
            format!("The site did not answer within {} s.", limit.as_secs_f32().ceil() as u64),
        )
    })??;
    Ok(answer(status, &headers, body))
}

/// Fetches a public `https://` document for the server itself (a store catalog index) with the
/// proxy's client and rules: 2xx only, at most `max_bytes`, within the proxy's time limit.
pub async fn fetch_public(state: &AppState, raw: &str, max_bytes: usize) -> Result<Vec<u8>> {
    let url = target(state, Some(raw))?;
    let client = state.proxy.client(&policy(state))?;
    let _permit = state
        .proxy
        .permit()
        .await
        .ok_or_else(|| Error::unavailable("proxy_unavailable", "The proxy is shutting down."))?;
    let too_large = || Error::bad_gateway("document_too_large", format!("It is larger than {} KiB.", max_bytes >> 10));
    let exchange = async {
        let mut upstream = client.get(url).send().await.map_err(|e| transport_error(&e))?;
        if !upstream.status().is_success() {
            return Err(Error::bad_gateway("document_unavailable", format!("It answered {}.", upstream.status())));
        }
        let mut body = Vec::new();
        while let Some(chunk) = upstream.chunk().await.map_err(|e| transport_error(&e))? {
            if body.len() + chunk.len() > max_bytes {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    };
    tokio::time::timeout(state.config.proxy_timeout, exchange)
        .await
        .map_err(|_| Error::gateway_timeout("proxy_timeout", "It did not answer in time."))?
}

fn transport_error(e: &reqwest::Error) -> Error {
    match Refusal::of(e) {
        Some(Refusal::NotAllowed(why)) => not_allowed(why),
        Some(Refusal::Unresolvable(host)) => {
            Error::bad_request("proxy_host_unresolvable", format!("{host} does not resolve."))
        }
        None if e.is_timeout() => Error::gateway_timeout("proxy_timeout", "The site did not answer in time."),
        None => {
            // The causes only: the error's own text carries the whole URL (and its query).
            let host = e.url().and_then(Url::host_str).unwrap_or("the site").to_owned();
            Error::bad_gateway("proxy_unreachable", format!("{host} could not be reached."))
        }
    }
}

fn answer(status: reqwest::StatusCode, upstream: &reqwest::header::HeaderMap, body: Vec<u8>) -> Response {
    let status = StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut response = (status, Body::from(body)).into_response();
    let h: &mut HeaderMap = response.headers_mut();
    let content_type = upstream
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| HeaderValue::from_bytes(v.as_bytes()).ok())
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    h.insert(header::CONTENT_TYPE, content_type);
    for name in FORWARDED {
        if let Some(value) = upstream.get(*name).and_then(|v| HeaderValue::from_bytes(v.as_bytes()).ok()) {
            h.insert(HeaderName::from_static(name), value);
        }
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // Never rendered as a page of this origin, whatever the upstream claims to be.
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox; default-src 'none'"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}
