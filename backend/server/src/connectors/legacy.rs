//! The legacy HTTP+SSE MCP transport (protocol 2024-11-05), for servers that never learned
//! streamable HTTP: a GET opens an event stream whose first `endpoint` event names the URL
//! messages are POSTed to; every answer comes back on that stream, matched here to its request
//! by JSON-RPC id. One `LegacySession` is one stream (one MCP session); the reader task that
//! routes its answers ends when the session is dropped, which closes the stream.
//!
//! Bounded: the endpoint must be on the stream's own origin (a server cannot send the broker
//! elsewhere); one event is at most [`MAX_EVENT_BYTES`]; at most [`MAX_PENDING`] requests wait
//! for answers at once; each call waits its `timeout`. A leaf: it knows nothing of connectors.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::locks::Unpoisoned;

/// Largest event read from the stream (one answer).
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;
/// Requests waiting for their answer at once, per session.
pub const MAX_PENDING: usize = 64;

type Pending = Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>;

/// Why a legacy exchange failed, in words for Settings and the CLI (never a payload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyError {
    pub message: String,
    /// The HTTP status the server answered, when it answered one.
    pub status: Option<u16>,
    /// The request did not finish in time.
    pub timed_out: bool,
}

fn error(message: impl Into<String>) -> LegacyError {
    LegacyError { message: message.into(), status: None, timed_out: false }
}

fn transport(e: &reqwest::Error) -> LegacyError {
    if let Some(refusal) = crate::apps::smart_http::Refusal::of(e) {
        return error(format!("that address may not be reached: {refusal}"));
    }
    if e.is_timeout() {
        return LegacyError { timed_out: true, ..error("the server did not answer in time") };
    }
    error("the server could not be reached")
}

/// One open stream and the URL its messages go to.
#[derive(Debug)]
pub struct LegacySession {
    endpoint: reqwest::Url,
    pending: Pending,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for LegacySession {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl LegacySession {
    /// Opens the stream at `url` and reads its `endpoint` event (within `timeout`).
    pub async fn open(
        client: &reqwest::Client,
        url: &str,
        credential: Option<&(HeaderName, HeaderValue)>,
        timeout: Duration,
    ) -> Result<Self, LegacyError> {
        let base = reqwest::Url::parse(url).map_err(|_| error("the connector's URL is not valid"))?;
        // No request timeout: the stream lives as long as the session; only its start is timed.
        let mut request = client.get(base.clone()).header(ACCEPT, "text/event-stream");
        if let Some((name, value)) = credential {
            request = request.header(name.clone(), value.clone());
        }
        let response = tokio::time::timeout(timeout, request.send())
            .await
            .map_err(|_| LegacyError { timed_out: true, ..error("the server did not open its event stream in time") })?
            .map_err(|e| transport(&e))?;
        let status = response.status();
        if !status.is_success() {
            let message = if matches!(status.as_u16(), 401 | 403) {
                format!("the server refused the credential ({})", status.as_u16())
            } else {
                format!("the server answered {} to its event stream", status.as_u16())
            };
            return Err(LegacyError { status: Some(status.as_u16()), ..error(message) });
        }
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if !is_sse {
            return Err(error("the server's stream is not an event stream"));
        }
        let mut events = Events::new(response);
        let first = tokio::time::timeout(timeout, events.next())
            .await
            .map_err(|_| LegacyError {
                timed_out: true,
                ..error("the server did not name its message endpoint in time")
            })?
            .ok_or_else(|| error("the server's stream ended before naming its message endpoint"))??;
        if first.name != "endpoint" {
            return Err(error("the server's stream did not start with its message endpoint"));
        }
        let endpoint = base.join(first.data.trim()).map_err(|_| error("the server's message endpoint is not a URL"))?;
        if endpoint.origin() != base.origin() {
            return Err(error("the server's message endpoint is on another origin"));
        }
        let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
        let routes = pending.clone();
        let reader = tokio::spawn(async move {
            while let Some(Ok(event)) = events.next().await {
                if !matches!(event.name.as_str(), "" | "message") {
                    continue;
                }
                let Ok(message) = serde_json::from_str::<Value>(&event.data) else { continue };
                // Answers only: requests and notifications from the server have a method.
                if message.get("method").is_some() {
                    continue;
                }
                let Some(key) = message.get("id").map(Value::to_string) else { continue };
                let waiting = routes.locked().remove(&key);
                if let Some(waiting) = waiting {
                    let _ = waiting.send(message);
                }
            }
            // The stream ended: every request still waiting learns it now.
            routes.locked().clear();
        });
        Ok(Self { endpoint, pending, reader })
    }

    /// Whether the stream is still open.
    pub fn is_open(&self) -> bool {
        !self.reader.is_finished()
    }

    /// Sends one JSON-RPC message and, for a request, waits for its answer on the stream
    /// (within `timeout`); a notification or a response to the server answers `None`.
    pub async fn call(
        &self,
        client: &reqwest::Client,
        credential: Option<&(HeaderName, HeaderValue)>,
        message: &Value,
        timeout: Duration,
    ) -> Result<Option<Value>, LegacyError> {
        if !message.is_object() {
            return Err(error("only single JSON-RPC messages can be sent"));
        }
        let key = match (message.get("method"), message.get("id")) {
            (Some(_), Some(id)) if !id.is_null() => Some(id.to_string()),
            _ => None,
        };
        let answer = match &key {
            Some(key) => {
                if !self.is_open() {
                    return Err(error("the server's event stream is closed"));
                }
                let (sender, receiver) = oneshot::channel();
                let mut pending = self.pending.locked();
                if pending.len() >= MAX_PENDING {
                    return Err(error("too many requests are waiting for this server"));
                }
                if pending.insert(key.clone(), sender).is_some() {
                    return Err(error("a request with this id is waiting already"));
                }
                Some(receiver)
            }
            None => None,
        };
        let forget = || {
            if let Some(key) = &key {
                self.pending.locked().remove(key);
            }
        };
        let mut request = client.post(self.endpoint.clone()).timeout(timeout).json(message);
        if let Some((name, value)) = credential {
            request = request.header(name.clone(), value.clone());
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => {
                forget();
                return Err(transport(&e));
            }
        };
        let status = response.status();
        drop(response);
        if !status.is_success() {
            forget();
            return Err(LegacyError {
                status: Some(status.as_u16()),
                ..error(format!("the server answered {} to a message", status.as_u16()))
            });
        }
        let Some(receiver) = answer else { return Ok(None) };
        match tokio::time::timeout(timeout, receiver).await {
            Ok(Ok(message)) => Ok(Some(message)),
            Ok(Err(_)) => Err(error("the server's event stream ended before its answer")),
            Err(_) => {
                forget();
                Err(LegacyError { timed_out: true, ..error("the server did not answer in time") })
            }
        }
    }
}

/// One server-sent event.
#[derive(Debug, PartialEq, Eq)]
struct Event {
    name: String,
    data: String,
}

/// The events of a response body, each at most [`MAX_EVENT_BYTES`].
struct Events {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: Vec<u8>,
}

impl Events {
    fn new(response: reqwest::Response) -> Self {
        Self { body: response.bytes_stream().boxed(), buffer: Vec::new() }
    }

    /// The next event; `None` when the stream ended.
    async fn next(&mut self) -> Option<Result<Event, LegacyError>> {
        loop {
            if let Some(event) = take_event(&mut self.buffer) {
                if event.name.is_empty() && event.data.is_empty() {
                    continue;
                }
                return Some(Ok(event));
            }
            if self.buffer.len() > MAX_EVENT_BYTES {
                return Some(Err(error(format!("an event is larger than {} MiB", MAX_EVENT_BYTES >> 20))));
            }
            match self.body.next().await? {
                Ok(chunk) => self.buffer.extend_from_slice(&chunk),
                Err(e) => return Some(Err(transport(&e))),
            }
        }
    }
}

/// Takes the first complete event (up to a blank line) off `buffer`: its `event:` name and its
/// `data:` lines joined; comments and other fields are skipped.
fn take_event(buffer: &mut Vec<u8>) -> Option<Event> {
    let lf = buffer.windows(2).position(|w| w == b"\n\n").map(|i| (i, i + 2));
    let crlf = buffer.windows(4).position(|w| w == b"\r\n\r\n").map(|i| (i, i + 4));
    let (end, next) = match (lf, crlf) {
        (Some(a), Some(b)) => {
            if a.0 <= b.0 {
                a
            } else {
                b
            }
        }
        (a, b) => a.or(b)?,
    };
    let raw: Vec<u8> = buffer.drain(..next).collect();
    let text = String::from_utf8_lossy(&raw[..end]);
    let (mut name, mut data) = (String::new(), Vec::new());
    for line in text.lines() {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => name = value.to_owned(),
            "data" => data.push(value),
            _ => {}
        }
    }
    Some(Event { name, data: data.join("\n") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_one_at_a_time_with_their_name_and_data() {
        let mut buffer =
            b"event: endpoint\ndata: /messages?s=1\n\n: a comment\n\ndata: {\"a\":\r\ndata: 1}\r\n\r\nevent: mess"
                .to_vec();
        assert_eq!(take_event(&mut buffer), Some(Event { name: "endpoint".into(), data: "/messages?s=1".into() }));
        assert_eq!(take_event(&mut buffer), Some(Event { name: String::new(), data: String::new() }));
        assert_eq!(take_event(&mut buffer), Some(Event { name: String::new(), data: "{\"a\":\n1}".into() }));
        assert_eq!(take_event(&mut buffer), None, "an unfinished event waits for more");
        assert_eq!(buffer, b"event: mess");
    }
}
