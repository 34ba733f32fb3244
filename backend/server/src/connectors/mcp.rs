//! The server's own MCP client, for connect time only: `initialize`, then `tools/list` (paged)
//! over streamable HTTP, each answer JSON or an SSE stream, bounded in bytes and time. A server
//! that refuses streamable HTTP's `initialize` POST with a 4xx (other than 401/403) is tried
//! with the legacy HTTP+SSE transport (`legacy.rs`); which one answered is stored with the
//! connector, and the broker speaks it.

use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use serde::Serialize;
use serde_json::{Value, json};

/// The protocol version the server asks for (servers may answer an older one).
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// Longest answer read at connect.
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// Tools kept of one connector (the rest are left out and said so).
pub const MAX_TOOLS: usize = 128;
/// `tools/list` pages read at most.
const MAX_PAGES: usize = 8;
/// One connect request, all of it.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// Longest tool description kept.
const MAX_DESCRIPTION_CHARS: usize = 1000;
/// Longest tool name kept (longer ones are left out).
const MAX_TOOL_NAME_CHARS: usize = 128;

/// A tool as Settings shows it.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Tool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The server's `readOnlyHint` annotation.
    #[serde(default)]
    pub read_only: bool,
}

/// Why a connect failed, in words for Settings (never a secret or a payload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure(pub String);

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn fail(why: impl Into<String>) -> Failure {
    Failure(why.into())
}

/// How a connector's server is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP (2025-03-26 on): each message POSTed, answered in its response.
    Streamable,
    /// The legacy HTTP+SSE transport (2024-11-05): answers come on one event stream.
    Sse,
}

impl Transport {
    /// As stored (`connectors.transport`).
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Streamable => "streamable",
            Transport::Sse => "sse",
        }
    }
}

/// One conversation with a server: its session id once `initialize` gave one, or the legacy
/// transport's open stream.
pub struct Session<'a> {
    client: &'a reqwest::Client,
    url: &'a str,
    credential: Option<(HeaderName, HeaderValue)>,
    session: Option<HeaderValue>,
    legacy: Option<super::legacy::LegacySession>,
    /// `initialize` was refused with a 4xx that says "not this transport".
    not_streamable: bool,
    next_id: i64,
}

impl<'a> Session<'a> {
    pub fn new(client: &'a reqwest::Client, url: &'a str, credential: Option<(HeaderName, HeaderValue)>) -> Self {
        Self { client, url, credential, session: None, legacy: None, not_streamable: false, next_id: 1 }
    }

    /// A session over the legacy transport: its stream opened now.
    async fn legacy(
        client: &'a reqwest::Client,
        url: &'a str,
        credential: Option<(HeaderName, HeaderValue)>,
    ) -> Result<Self, Failure> {
        let stream = super::legacy::LegacySession::open(client, url, credential.as_ref(), CONNECT_TIMEOUT)
            .await
            .map_err(|e| fail(e.message))?;
        Ok(Self { legacy: Some(stream), ..Self::new(client, url, credential) })
    }

    /// Sends `message` over the legacy stream: its answer, for a request.
    async fn legacy_call(&self, message: &Value) -> Result<Option<Value>, Failure> {
        let Some(stream) = &self.legacy else { return Err(fail("no stream is open")) };
        stream.call(self.client, self.credential.as_ref(), message, CONNECT_TIMEOUT).await.map_err(|e| fail(e.message))
    }

    fn request(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut request = self
            .client
            .post(self.url)
            .timeout(CONNECT_TIMEOUT)
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .header("mcp-protocol-version", PROTOCOL_VERSION)
            .json(body);
        if let Some((name, value)) = &self.credential {
            request = request.header(name.clone(), value.clone());
        }
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session.clone());
        }
        request
    }

    /// Sends a notification (no answer awaited beyond its status).
    async fn notify(&self, method: &str) -> Result<(), Failure> {
        if self.legacy.is_some() {
            return self.legacy_call(&json!({"jsonrpc": "2.0", "method": method})).await.map(|_| ());
        }
        let response = self.request(&json!({"jsonrpc": "2.0", "method": method})).send().await.map_err(transport)?;
        if !response.status().is_success() {
            return Err(fail(format!("the server answered {} to {method}", response.status().as_u16())));
        }
        Ok(())
    }

    /// Calls `method` and returns its `result`.
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value, Failure> {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if self.legacy.is_some() {
            let message = self.legacy_call(&request).await?.ok_or_else(|| fail(format!("{method} got no answer")))?;
            return result_of(method, &message);
        }
        let response = self.request(&request).send().await.map_err(transport)?;
        let status = response.status();
        if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
            return Err(fail(format!("the server refused the credential ({})", status.as_u16())));
        }
        if !status.is_success() {
            self.not_streamable = method == "initialize" && status.is_client_error();
            return Err(fail(format!("the server answered {} to {method}", status.as_u16())));
        }
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.session = Some(session.clone());
        }
        let sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        let message = if sse { read_sse(response, id).await? } else { read_json(response).await? };
        result_of(method, &message)
    }

    /// Ends the session on the server (best effort: a server may not support it). A legacy
    /// session ends with its stream, closed as it is dropped.
    pub async fn close(self) {
        if let Some(session) = &self.session {
            let mut request = self.client.delete(self.url).timeout(CONNECT_TIMEOUT).header("mcp-session-id", session);
            if let Some((name, value)) = &self.credential {
                request = request.header(name.clone(), value.clone());
            }
            let _ = request.send().await;
        }
    }
}

/// The `result` of a JSON-RPC answer, or its error in words.
fn result_of(method: &str, message: &Value) -> Result<Value, Failure> {
    if let Some(error) = message.get("error") {
        let text = error.get("message").and_then(Value::as_str).unwrap_or("an error");
        return Err(fail(format!("{method} failed: {}", text.chars().take(200).collect::<String>())));
    }
    message.get("result").cloned().ok_or_else(|| fail(format!("{method} answered without a result")))
}

fn transport(e: reqwest::Error) -> Failure {
    if let Some(refusal) = crate::apps::smart_http::Refusal::of(&e) {
        return fail(format!("that address may not be reached: {refusal}"));
    }
    if e.is_timeout() {
        return fail("the server did not answer in time");
    }
    fail("the server could not be reached")
}

async fn bounded_body(response: reqwest::Response) -> Result<Vec<u8>, Failure> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(transport)?;
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(fail(format!("the server's answer is larger than {} KiB", MAX_ANSWER_BYTES / 1024)));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

async fn read_json(response: reqwest::Response) -> Result<Value, Failure> {
    let body = bounded_body(response).await?;
    serde_json::from_slice(&body).map_err(|_| fail("the server's answer is not JSON-RPC"))
}

/// Reads SSE events until the JSON-RPC answer with `id` (requests and notifications the server
/// sends first are skipped).
async fn read_sse(response: reqwest::Response, id: i64) -> Result<Value, Failure> {
    let mut stream = response.bytes_stream();
    let mut buffer: Vec<u8> = Vec::new();
    let mut read = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(transport)?;
        read += chunk.len();
        if read > MAX_ANSWER_BYTES {
            return Err(fail(format!("the server's answer is larger than {} KiB", MAX_ANSWER_BYTES / 1024)));
        }
        buffer.extend_from_slice(&chunk);
        while let Some(end) = event_end(&buffer) {
            let event: Vec<u8> = buffer.drain(..end.1).collect();
            let text = String::from_utf8_lossy(&event[..end.0]);
            let data: Vec<&str> = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            if data.is_empty() {
                continue;
            }
            let Ok(message) = serde_json::from_str::<Value>(&data.join("\n")) else {
                return Err(fail("the server's answer is not JSON-RPC"));
            };
            if message.get("id").and_then(Value::as_i64) == Some(id) {
                return Ok(message);
            }
        }
    }
    Err(fail("the server's stream ended without an answer"))
}

/// Where the first complete SSE event in `buffer` ends: (end of its text, end with separator).
fn event_end(buffer: &[u8]) -> Option<(usize, usize)> {
    let lf = buffer.windows(2).position(|w| w == b"\n\n").map(|i| (i, i + 2));
    let crlf = buffer.windows(4).position(|w| w == b"\r\n\r\n").map(|i| (i, i + 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

fn initialize_params() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "mobius", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// Connects and lists the server's tools: `(tools, whether the list was cut, the transport that
/// answered)`. Streamable HTTP first; a 4xx to its `initialize` (other than 401/403) tries the
/// legacy HTTP+SSE transport at the same URL.
pub async fn list_tools(
    client: &reqwest::Client,
    url: &str,
    credential: Option<(HeaderName, HeaderValue)>,
) -> Result<(Vec<Tool>, bool, Transport), Failure> {
    let mut session = Session::new(client, url, credential.clone());
    let (mut session, transport) = match session.call("initialize", initialize_params()).await {
        Ok(_) => (session, Transport::Streamable),
        Err(refused) if session.not_streamable => {
            session.close().await;
            let mut legacy = match Session::legacy(client, url, credential).await {
                Ok(legacy) => legacy,
                // Neither transport: say why the first one failed, and the second.
                Err(also) => return Err(fail(format!("{refused}; as a legacy SSE server: {also}"))),
            };
            legacy.call("initialize", initialize_params()).await?;
            (legacy, Transport::Sse)
        }
        Err(failure) => {
            session.close().await;
            return Err(failure);
        }
    };
    let result = async {
        session.notify("notifications/initialized").await?;
        let mut tools = Vec::new();
        let mut cut = false;
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = session.call("tools/list", params).await?;
            let listed = page.get("tools").and_then(Value::as_array).ok_or_else(|| fail("tools/list gave no tools"))?;
            for tool in listed {
                let Some(name) = tool.get("name").and_then(Value::as_str) else { continue };
                if name.is_empty() || name.chars().count() > MAX_TOOL_NAME_CHARS {
                    continue;
                }
                if tools.len() == MAX_TOOLS {
                    cut = true;
                    break;
                }
                tools.push(Tool {
                    name: name.to_owned(),
                    description: tool
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .chars()
                        .take(MAX_DESCRIPTION_CHARS)
                        .collect(),
                    read_only: tool.pointer("/annotations/readOnlyHint").and_then(Value::as_bool).unwrap_or(false),
                });
            }
            cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
            if cut || cursor.is_none() {
                break;
            }
        }
        Ok((tools, cut || cursor.is_some(), transport))
    }
    .await;
    session.close().await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_sse_event_ends_at_a_blank_line_of_either_kind() {
        assert_eq!(event_end(b"data: {}\n\nrest"), Some((8, 10)));
        assert_eq!(event_end(b"data: {}\r\n\r\n"), Some((8, 12)));
        assert_eq!(event_end(b"data: {}\n"), None);
    }
}
