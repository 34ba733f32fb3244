//! The broker, `/api/mcp/{chat}/{connector}`: the only way a turn's CLI reaches a connector.
//! The CLI's MCP config names this URL and sends the run's agent token (from its environment,
//! never a connector credential); the broker checks that token is live and bound to the chat
//! in the URL (401 otherwise: an ended turn, another chat), that the connector is connected
//! and usable by that chat (404), then forwards the JSON-RPC request to the real server with
//! the connector's credential added and streams the answer back. Only MCP's own headers cross
//! (never the agent token); redirects are not followed; the upstream address is checked as
//! it resolves. Bounded: request 4 MiB, answer 256 MiB streamed, 120 s a call, 16 calls at once.
//! Logs the tool a call names, never a payload. The credential an upstream call carries is
//! `authorization` (also used at connect): an OAuth grant's access token is renewed here first,
//! and renewed once more when the connector answers 401 mid-call (the call is then sent again,
//! once; a second 401 marks the connector `needs_auth` and the CLI gets 502
//! `connector_needs_sign_in`).
//!
//! MCP's optional GET stream (server-initiated messages) is answered 405, which the protocol
//! allows; the CLIs then use POST answers only.
//!
//! A connector found to speak only the legacy HTTP+SSE transport (`legacy.rs`) is bridged: the
//! CLI still speaks streamable HTTP to the broker, which keeps one upstream stream per turn and
//! connector (16 at most), POSTs each message to the stream's endpoint and answers the CLI
//! with the answer that comes back on the stream (≤ 16 MiB, 120 s). The stream closes on the
//! CLI's `DELETE`, when the turn ends (looked for every 5 s while one is open) or when it breaks.

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures_util::StreamExt;
use serde_json::Value;

use crate::apps::smart_http::Refusal;
use crate::auth::Scope;
use crate::db::connectors::{ConnectorPatch, ConnectorRow};
use crate::error::{Error, Result};
use crate::state::AppState;
use crate::writer::WriteCommand;

/// Largest request the CLI may send through the broker.
pub const MAX_BROKER_REQUEST_BYTES: usize = 4 * 1024 * 1024;
/// Largest answer passed back for one call (streamed; the server never holds it).
pub const MAX_BROKER_RESPONSE_BYTES: u64 = 256 * 1024 * 1024;
/// One call, from sending to the answer's last byte.
pub const BROKER_CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a call waits for one of the broker's slots.
const PERMIT_WAIT: Duration = Duration::from_secs(10);
/// Longest tool name written to the log.
const MAX_LOGGED_NAME_CHARS: usize = 128;
/// Request headers passed to the connector (everything else, the agent token first, stays).
const FORWARDED_UP: [HeaderName; 5] = [
    header::CONTENT_TYPE,
    header::ACCEPT,
    HeaderName::from_static("mcp-session-id"),
    HeaderName::from_static("mcp-protocol-version"),
    HeaderName::from_static("last-event-id"),
];
/// Response headers passed back to the CLI.
const FORWARDED_DOWN: [HeaderName; 3] =
    [header::CONTENT_TYPE, HeaderName::from_static("mcp-session-id"), HeaderName::from_static("mcp-protocol-version")];

/// The broker routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new().route(
        "/mcp/{chat}/{id}",
        post(forward).delete(forward).get(no_stream).layer(DefaultBodyLimit::max(MAX_BROKER_REQUEST_BYTES)),
    )
}

fn refused() -> Error {
    Error::unauthorized("capability_refused", "This connector capability is not valid for this chat (anymore).")
}

/// The agent token of the request, live and bound to `chat`: its claims.
async fn check_capability(
    state: &AppState,
    parts: &axum::http::request::Parts,
    chat: &str,
) -> Result<crate::auth::Claims> {
    let token = crate::auth::bearer(parts).map_err(|_| refused())?;
    let claims = crate::auth::claims_of(parts, state, token).map_err(|_| refused())?;
    if claims.scope != Scope::Agent || claims.chat_id.as_deref() != Some(chat) {
        return Err(refused());
    }
    crate::auth::owner_claims(state, claims).await.map_err(|_| refused())
}

/// `GET`: no server-initiated stream (MCP lets a server answer 405).
async fn no_stream(
    State(state): State<AppState>,
    Path((chat, _id)): Path<(String, i64)>,
    request: Request,
) -> Result<Response> {
    let (parts, _) = request.into_parts();
    check_capability(&state, &parts, &chat).await?;
    Err(Error::Client {
        status: StatusCode::METHOD_NOT_ALLOWED,
        code: "method_not_allowed",
        message: "The broker offers no server-initiated stream.".into(),
        retry_after_secs: None,
    })
}

/// The tool a JSON-RPC request calls, for the log (bounded; `None` for other methods).
fn called_tool(body: &[u8]) -> Option<String> {
    let message: Value = serde_json::from_slice(body).ok()?;
    if message.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    Some(message.pointer("/params/name")?.as_str()?.chars().take(MAX_LOGGED_NAME_CHARS).collect())
}

/// `POST`/`DELETE`: the call forwarded with the connector's credential, its answer streamed back.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat, connector.id = id))]
async fn forward(
    State(state): State<AppState>,
    Path((chat, id)): Path<(String, i64)>,
    request: Request,
) -> Result<Response> {
    let (parts, body) = request.into_parts();
    let claims = check_capability(&state, &parts, &chat).await?;
    let Some(row) = crate::db::connectors::for_chat(&state.db.read, &chat).await?.into_iter().find(|r| r.id == id)
    else {
        return Err(Error::not_found("connector_not_found", "This chat has no such connector."));
    };
    let body = axum::body::to_bytes(body, MAX_BROKER_REQUEST_BYTES).await.map_err(|_| {
        Error::too_large(
            "request_too_large",
            format!("A connector call is at most {} MiB.", MAX_BROKER_REQUEST_BYTES >> 20),
        )
    })?;
    let connectors = &state.connectors;
    let permit = connectors
        .permit(PERMIT_WAIT)
        .await
        .ok_or_else(|| Error::unavailable("broker_busy", "Too many connector calls at once; try again."))?;
    if let Some(tool) = called_tool(&body) {
        tracing::info!(chat.id = %chat, connector.id = id, connector = %row.name, tool = %tool, "connector tool call");
    }
    if row.transport == "sse" {
        let run = claims.run_id.clone().unwrap_or_default();
        let answer = legacy_forward(&state, &chat, &run, &parts.method, &row, &body).await;
        drop(permit);
        return answer;
    }
    let client = connectors.client()?;
    let send = |credential: Option<(HeaderName, HeaderValue)>| {
        let mut upstream = client.request(parts.method.clone(), &row.url).timeout(BROKER_CALL_TIMEOUT);
        for name in &FORWARDED_UP {
            if let Some(value) = parts.headers.get(name) {
                upstream = upstream.header(name.clone(), value.clone());
            }
        }
        if let Some((name, value)) = credential {
            upstream = upstream.header(name, value);
        }
        upstream.body(body.clone()).send()
    };
    let credential = authorization(&state, &row).await?;
    let refused = credential.as_ref().map(|(_, value)| value.clone());
    let mut answer = send(credential).await.map_err(|e| upstream_error(id, &e))?;
    // An OAuth connector that refuses its access token mid-call (revoked, or its server forgot
    // it): renewed once and the call sent once more; a second refusal needs the owner.
    if answer.status() == reqwest::StatusCode::UNAUTHORIZED && row.auth == "oauth" {
        drop(answer);
        tracing::info!(connector.id = id, "a connector refused its OAuth access token; renewing it once");
        let Ok(renewed) = renew_refused(&state, id, refused.as_ref()).await else {
            return Err(sign_in_again(&row.name));
        };
        answer = send(renewed).await.map_err(|e| upstream_error(id, &e))?;
        if answer.status() == reqwest::StatusCode::UNAUTHORIZED {
            tracing::info!(connector.id = id, "a connector refused its renewed OAuth access token");
            needs_sign_in(&state, id, "The connector refused its renewed sign-in (401): sign in again.").await?;
            return Err(sign_in_again(&row.name));
        }
    }
    let mut response = Response::builder().status(answer.status().as_u16());
    for name in &FORWARDED_DOWN {
        if let Some(value) = answer.headers().get(name) {
            response = response.header(name.clone(), value.clone());
        }
    }
    let mut sent: u64 = 0;
    let stream = answer.bytes_stream().map(move |chunk| {
        // The slot is held until the answer's last byte has gone.
        let _slot = &permit;
        let chunk = chunk.map_err(|e| {
            tracing::info!(connector.id = id, "a connector's answer broke off: {}", describe(&e));
            std::io::Error::other("the connector's answer broke off")
        })?;
        sent += chunk.len() as u64;
        if sent > MAX_BROKER_RESPONSE_BYTES {
            tracing::info!(connector.id = id, "a connector's answer passed the broker's limit; cut");
            return Err(std::io::Error::other("the connector's answer is too large"));
        }
        Ok(chunk)
    });
    response.body(Body::from_stream(stream)).map_err(|e| Error::Internal(format!("broker response: {e}")))
}

/// A legacy stream opened at most this long.
const LEGACY_OPEN_TIMEOUT: Duration = Duration::from_secs(20);
/// The protocol version of the legacy transport (what the broker asks for when it starts a
/// session itself).
const LEGACY_PROTOCOL_VERSION: &str = "2024-11-05";
/// Legacy streams open at once, over all turns.
pub const MAX_LEGACY_STREAMS: usize = 16;
/// How often the streams of ended turns are looked for (only while one is open).
const LEGACY_SWEEP_EVERY: Duration = Duration::from_secs(5);

/// A call to a legacy HTTP+SSE connector: the CLI speaks streamable HTTP to the broker, which
/// holds one stream per turn and connector (opened by the first call, opened anew by an
/// `initialize`, closed by the CLI's `DELETE` or when the turn ends), POSTs each message to the
/// stream's endpoint and answers with the answer that comes back on the stream.
async fn legacy_forward(
    state: &AppState,
    chat: &str,
    run: &str,
    method: &axum::http::Method,
    row: &ConnectorRow,
    body: &[u8],
) -> Result<Response> {
    let key = (run.to_owned(), row.id);
    if *method == axum::http::Method::DELETE {
        state.connectors.legacy.lock().await.remove(&key);
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    let message: Value = serde_json::from_slice(body)
        .ok()
        .filter(Value::is_object)
        .ok_or_else(|| Error::bad_request("invalid_message", "A connector call is one JSON-RPC message."))?;
    let credential = authorization(state, row).await?;
    let client = state.connectors.client()?;
    let fresh = message.get("method").and_then(Value::as_str) == Some("initialize");
    let stream = legacy_stream(state, key.clone(), chat, row, credential.as_ref(), fresh).await?;
    match stream.call(client, credential.as_ref(), &message, BROKER_CALL_TIMEOUT).await {
        Ok(Some(answer)) => Ok(axum::Json(answer).into_response()),
        Ok(None) => Ok(StatusCode::ACCEPTED.into_response()),
        Err(e) => {
            if !stream.is_open() {
                let mut streams = state.connectors.legacy.lock().await;
                if streams.get(&key).is_some_and(|(_, s)| std::sync::Arc::ptr_eq(s, &stream)) {
                    streams.remove(&key);
                }
            }
            tracing::info!(connector.id = row.id, "a legacy connector call failed: {}", e.message);
            Err(if e.timed_out {
                Error::gateway_timeout("connector_timeout", "The connector did not answer in time.")
            } else {
                Error::bad_gateway("connector_unreachable", format!("The connector failed: {}.", e.message))
            })
        }
    }
}

/// The open legacy stream of `key`, opened now when there is none (or `fresh` asks for a new
/// session); 503 `broker_busy` past [`MAX_LEGACY_STREAMS`].
async fn legacy_stream(
    state: &AppState,
    key: (String, i64),
    chat: &str,
    row: &ConnectorRow,
    credential: Option<&(HeaderName, HeaderValue)>,
    fresh: bool,
) -> Result<std::sync::Arc<super::legacy::LegacySession>> {
    {
        let mut streams = state.connectors.legacy.lock().await;
        streams.retain(|_, (_, s)| s.is_open());
        if fresh {
            streams.remove(&key);
        } else if let Some((_, stream)) = streams.get(&key) {
            return Ok(stream.clone());
        }
        if streams.len() >= MAX_LEGACY_STREAMS {
            return Err(Error::unavailable("broker_busy", "Too many connector streams are open; try again."));
        }
    }
    let client = state.connectors.client()?;
    let opened =
        super::legacy::LegacySession::open(client, &row.url, credential, LEGACY_OPEN_TIMEOUT).await.map_err(|e| {
            tracing::info!(connector.id = row.id, "a legacy connector's stream did not open: {}", e.message);
            Error::bad_gateway("connector_unreachable", format!("The connector's stream did not open: {}.", e.message))
        })?;
    if !fresh {
        // A stream opened for a call that is not the CLI's `initialize` (its turn's stream was
        // closed and a kept CLI goes on): the broker starts the session itself.
        let hello = serde_json::json!({
            "jsonrpc": "2.0", "id": "mobius-initialize", "method": "initialize",
            "params": {
                "protocolVersion": LEGACY_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "mobius", "version": env!("CARGO_PKG_VERSION")},
            },
        });
        let done = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        for message in [hello, done] {
            opened.call(client, credential, &message, LEGACY_OPEN_TIMEOUT).await.map_err(|e| {
                tracing::info!(connector.id = row.id, "a legacy connector's session did not start: {}", e.message);
                Error::bad_gateway(
                    "connector_unreachable",
                    format!("The connector's session did not start: {}.", e.message),
                )
            })?;
        }
    }
    let opened = std::sync::Arc::new(opened);
    let mut streams = state.connectors.legacy.lock().await;
    if !fresh && let Some((_, stream)) = streams.get(&key) {
        // Another call opened one meanwhile: that one is kept, this one closes.
        return Ok(stream.clone());
    }
    streams.insert(key, (chat.to_owned(), opened.clone()));
    tracing::info!(connector.id = row.id, "a legacy connector's stream was opened");
    if !state.connectors.sweeping.swap(true, std::sync::atomic::Ordering::SeqCst) {
        tokio::spawn(sweep_legacy(state.clone()));
    }
    Ok(opened)
}

/// Closes the legacy streams of turns that ended, every [`LEGACY_SWEEP_EVERY`], while any is
/// open (then it ends; the next stream opened starts it again).
async fn sweep_legacy(state: AppState) {
    let mut every = tokio::time::interval(LEGACY_SWEEP_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let open: Vec<((String, i64), String)> =
            state.connectors.legacy.lock().await.iter().map(|(k, (chat, _))| (k.clone(), chat.clone())).collect();
        let mut ended = Vec::new();
        for (key, chat) in open {
            let live = state.agents.turns.served_by(&chat, &key.0)
                || crate::db::runs::run_is_running_read(&state.db.read, &key.0).await.unwrap_or(true);
            if !live {
                ended.push(key);
            }
        }
        let mut streams = state.connectors.legacy.lock().await;
        for key in ended {
            if streams.remove(&key).is_some() {
                tracing::info!(connector.id = key.1, "a legacy connector's stream was closed with its turn");
            }
        }
        streams.retain(|_, (_, s)| s.is_open());
        if streams.is_empty() {
            state.connectors.sweeping.store(false, std::sync::atomic::Ordering::SeqCst);
            return;
        }
    }
}

fn describe(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() { "timed out" } else { "transport error" }
}

fn upstream_error(id: i64, e: &reqwest::Error) -> Error {
    if let Some(refusal) = Refusal::of(e) {
        tracing::info!(connector.id = id, "a connector's address was refused: {refusal}");
        return Error::bad_gateway(
            "connector_not_allowed",
            format!("The connector's address may not be reached: {refusal}."),
        );
    }
    if e.is_timeout() {
        return Error::gateway_timeout("connector_timeout", "The connector did not answer in time.");
    }
    tracing::info!(connector.id = id, "a connector could not be reached: {}", describe(e));
    Error::bad_gateway("connector_unreachable", "The connector could not be reached.")
}

/// The header an upstream call to `row`'s server carries, if any: its bearer/header secret, or
/// its OAuth access token — renewed first when it is about to run out (one renewal at a time;
/// a renewal that fails marks the connector as needing a new sign-in).
pub async fn authorization(state: &AppState, row: &ConnectorRow) -> Result<Option<(HeaderName, HeaderValue)>> {
    if row.auth != "oauth" {
        return super::credential(&state.keys, row);
    }
    let now = crate::db::now_ms() / 1000;
    let grant = super::oauth::Grant::of(&state.keys, row)?;
    if !grant.needs_renewal(now) {
        return grant.header();
    }
    renew(state, row.id, |grant| !grant.needs_renewal(now)).await
}

/// Renews connector `id`'s OAuth access token now (the connector refused the one it had):
/// unless another call renewed it meanwhile, which `refused` (the header that was refused)
/// tells.
async fn renew_refused(
    state: &AppState,
    id: i64,
    refused: Option<&HeaderValue>,
) -> Result<Option<(HeaderName, HeaderValue)>> {
    renew(state, id, |grant| grant.header().ok().flatten().is_some_and(|(_, value)| Some(&value) != refused)).await
}

/// Renews connector `id`'s access token under the renewal lock, unless the grant read again
/// once the lock is held is `good` already (another call renewed it while this one waited). A
/// refused renewal marks the connector `needs_auth` with the reason.
async fn renew(
    state: &AppState,
    id: i64,
    good: impl Fn(&super::oauth::Grant) -> bool,
) -> Result<Option<(HeaderName, HeaderValue)>> {
    let _one_at_a_time = state.connectors.flows.renewing().await;
    let row = crate::db::connectors::get(&state.db.read, id)
        .await?
        .ok_or_else(|| Error::not_found("connector_not_found", "No such connector."))?;
    let grant = super::oauth::Grant::of(&state.keys, &row)?;
    if good(&grant) {
        return grant.header();
    }
    let now = crate::db::now_ms() / 1000;
    match super::oauth::renew(&state.connectors.outbound()?, &grant, &row.url, now).await {
        Ok(renewed) => {
            let patch = ConnectorPatch {
                secret: Some(Some(renewed.seal(&state.keys, &row.name)?)),
                ..ConnectorPatch::default()
            };
            state.writer.call(|ack| WriteCommand::ConnectorUpdate { id, patch, ack }).await?;
            tracing::info!(connector.id = id, "a connector's OAuth access token was renewed");
            renewed.header()
        }
        Err(error) => {
            needs_sign_in(state, id, &format!("{error}")).await?;
            Err(error)
        }
    }
}

/// Marks connector `id` as needing the owner to sign in again, with the reason.
async fn needs_sign_in(state: &AppState, id: i64, why: &str) -> Result<()> {
    let patch = ConnectorPatch {
        state: Some(("needs_auth".into(), Some(why.chars().take(300).collect()), None)),
        ..ConnectorPatch::default()
    };
    state.writer.call(|ack| WriteCommand::ConnectorUpdate { id, patch, ack }).await?;
    Ok(())
}

/// What the CLI gets when an OAuth connector keeps refusing: the owner must sign in again.
fn sign_in_again(name: &str) -> Error {
    Error::bad_gateway(
        "connector_needs_sign_in",
        format!(
            "The connector {name} refused its sign-in, even renewed: the owner must sign in to it again in Settings › Connectors. Tell them; do not retry."
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_tools_call_names_a_tool_for_the_log() {
        assert_eq!(
            called_tool(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"x":"secret"}}}"#),
            Some("echo".into())
        );
        assert_eq!(called_tool(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#), None);
        assert_eq!(called_tool(b"not json"), None);
    }
}
