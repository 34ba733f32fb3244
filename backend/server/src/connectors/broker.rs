//! The broker, `/api/mcp/{chat}/{connector}`: the only way a turn's CLI reaches a connector.
//! The CLI's MCP config names this URL and sends the run's agent token (from its environment,
//! never a connector credential); the broker checks that token is live and bound to the chat
//! in the URL (401 otherwise: an ended turn, another chat), that the connector is connected
//! and usable by that chat (404), then forwards the JSON-RPC request to the real server with
//! the connector's credential added and streams the answer back. Only MCP's own headers cross
//! (never the agent token); redirects are not followed; the upstream address is checked as
//! it resolves. Bounded: request 4 MiB, answer 256 MiB streamed, 120 s a call, 16 calls at once.
//! Logs the tool a call names, never a payload. The credential an upstream call carries is
//! `authorization` (also used at connect): an OAuth grant's access token is renewed here first.
//!
//! MCP's optional GET stream (server-initiated messages) is answered 405, which the protocol
//! allows; the CLIs then use POST answers only.

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
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

/// The agent token of the request, live and bound to `chat`.
async fn check_capability(state: &AppState, parts: &axum::http::request::Parts, chat: &str) -> Result<()> {
    let token = crate::auth::bearer(parts).map_err(|_| refused())?;
    let claims = crate::auth::claims_of(parts, state, token).map_err(|_| refused())?;
    if claims.scope != Scope::Agent || claims.chat_id.as_deref() != Some(chat) {
        return Err(refused());
    }
    crate::auth::owner_claims(state, claims).await.map_err(|_| refused())?;
    Ok(())
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
    check_capability(&state, &parts, &chat).await?;
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
    let client = connectors.client()?;
    let mut upstream = client.request(parts.method.clone(), &row.url).timeout(BROKER_CALL_TIMEOUT);
    for name in &FORWARDED_UP {
        if let Some(value) = parts.headers.get(name) {
            upstream = upstream.header(name.clone(), value.clone());
        }
    }
    if let Some((name, value)) = authorization(&state, &row).await? {
        upstream = upstream.header(name, value);
    }
    let answer = upstream.body(body).send().await.map_err(|e| upstream_error(id, &e))?;
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
    let _one_at_a_time = state.connectors.flows.renewing().await;
    // Another call may have renewed it while this one waited.
    let row = crate::db::connectors::get(&state.db.read, row.id)
        .await?
        .ok_or_else(|| Error::not_found("connector_not_found", "No such connector."))?;
    let grant = super::oauth::Grant::of(&state.keys, &row)?;
    if !grant.needs_renewal(now) {
        return grant.header();
    }
    let id = row.id;
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
            let why = format!("{error}");
            let patch = ConnectorPatch {
                state: Some(("needs_auth".into(), Some(why.chars().take(300).collect()), None)),
                ..ConnectorPatch::default()
            };
            state.writer.call(|ack| WriteCommand::ConnectorUpdate { id, patch, ack }).await?;
            Err(error)
        }
    }
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
