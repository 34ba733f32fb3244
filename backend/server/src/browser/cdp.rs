//! The Chrome DevTools Protocol over `--remote-debugging-pipe`: JSON messages, each ended by a
//! NUL byte, commands on the browser's descriptor 3 and answers and events on its descriptor 4.
//! One owner drives it in order, so there are no tasks and no shared state: a command waits for
//! its answer, queuing the events that come first for [`Cdp::event`].

use std::collections::VecDeque;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Largest message read: a screenshot's base64 (the PNG cap and a third more) with room.
pub const MAX_MESSAGE_BYTES: usize = 24 << 20;
/// Events kept while a command waits for its answer; the oldest go first beyond it.
const MAX_QUEUED_EVENTS: usize = 4096;
/// Bytes read from the pipe at a time.
const READ_CHUNK: usize = 64 * 1024;

/// What went wrong on the pipe.
#[derive(Debug, thiserror::Error)]
pub enum CdpError {
    #[error("the browser closed its DevTools pipe")]
    Closed,
    #[error("a DevTools message was larger than {MAX_MESSAGE_BYTES} bytes")]
    TooLarge,
    #[error("the browser sent a message that is not JSON: {0}")]
    NotJson(String),
    #[error("{method} failed: {message}")]
    Refused { method: String, message: String },
    #[error("the DevTools pipe failed: {0}")]
    Io(#[from] std::io::Error),
}

/// One command, as written on the pipe: its JSON and the NUL that ends it.
pub fn encode(id: u64, session: Option<&str>, method: &str, params: Value) -> Vec<u8> {
    let mut message = json!({ "id": id, "method": method, "params": params });
    if let Some(session) = session {
        message["sessionId"] = Value::from(session);
    }
    let mut bytes = serde_json::to_vec(&message).unwrap_or_default();
    bytes.push(0);
    bytes
}

/// Splits what the pipe gives into messages at their NULs, bounded in size.
#[derive(Debug, Default)]
pub struct Framer {
    buf: Vec<u8>,
    /// Bytes of `buf` already known to hold no NUL.
    scanned: usize,
}

impl Framer {
    /// Adds bytes read from the pipe.
    pub fn extend(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole message, if one is complete; an error once a message outgrows the cap.
    pub fn next_message(&mut self) -> Result<Option<Vec<u8>>, CdpError> {
        match self.buf[self.scanned..].iter().position(|&b| b == 0) {
            Some(at) => {
                let end = self.scanned + at;
                if end > MAX_MESSAGE_BYTES {
                    return Err(CdpError::TooLarge);
                }
                let message = self.buf[..end].to_vec();
                self.buf.drain(..=end);
                self.scanned = 0;
                Ok(Some(message))
            }
            None if self.buf.len() > MAX_MESSAGE_BYTES => Err(CdpError::TooLarge),
            None => {
                self.scanned = self.buf.len();
                Ok(None)
            }
        }
    }
}

/// A DevTools connection to one browser.
pub struct Cdp {
    commands: tokio::net::unix::pipe::Sender,
    answers: tokio::net::unix::pipe::Receiver,
    framer: Framer,
    next_id: u64,
    events: VecDeque<Value>,
}

impl Cdp {
    pub fn new(commands: tokio::net::unix::pipe::Sender, answers: tokio::net::unix::pipe::Receiver) -> Self {
        Self { commands, answers, framer: Framer::default(), next_id: 1, events: VecDeque::new() }
    }

    /// Sends `method` (to the page `session`, or the browser) and waits for its result. The
    /// caller bounds the wait.
    pub async fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Result<Value, CdpError> {
        let id = self.next_id;
        self.next_id += 1;
        self.commands.write_all(&encode(id, session, method, params)).await?;
        loop {
            let mut message = self.read_message().await?;
            if message.get("id").and_then(Value::as_u64) == Some(id) {
                if let Some(error) = message.get("error") {
                    let text = error["message"].as_str().unwrap_or("unknown error");
                    return Err(CdpError::Refused { method: method.to_owned(), message: text.to_owned() });
                }
                return Ok(message["result"].take());
            }
            if message.get("method").is_some() {
                if self.events.len() == MAX_QUEUED_EVENTS {
                    self.events.pop_front();
                }
                self.events.push_back(message);
            }
        }
    }

    /// The next event (`{method, params, sessionId}`), queued or read now.
    pub async fn event(&mut self) -> Result<Value, CdpError> {
        if let Some(event) = self.events.pop_front() {
            return Ok(event);
        }
        loop {
            let message = self.read_message().await?;
            if message.get("method").is_some() {
                return Ok(message);
            }
        }
    }

    async fn read_message(&mut self) -> Result<Value, CdpError> {
        loop {
            if let Some(bytes) = self.framer.next_message()? {
                return serde_json::from_slice(&bytes).map_err(|e| CdpError::NotJson(e.to_string()));
            }
            let mut chunk = vec![0u8; READ_CHUNK];
            let n = self.answers.read(&mut chunk).await?;
            if n == 0 {
                return Err(CdpError::Closed);
            }
            self.framer.extend(&chunk[..n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_json_ended_by_one_nul() {
        let bytes = encode(7, Some("S1"), "Page.navigate", json!({ "url": "http://127.0.0.1:1/" }));
        assert_eq!(bytes.last(), Some(&0));
        assert_eq!(bytes.iter().filter(|&&b| b == 0).count(), 1, "no NUL inside the JSON");
        let parsed: Value = serde_json::from_slice(&bytes[..bytes.len() - 1]).expect("json");
        assert_eq!(
            parsed,
            json!({ "id": 7, "sessionId": "S1", "method": "Page.navigate", "params": { "url": "http://127.0.0.1:1/" } })
        );
        let command = encode(1, None, "Browser.getVersion", json!({}));
        let browser: Value = serde_json::from_slice(command.strip_suffix(&[0]).expect("nul")).expect("json");
        assert!(browser.get("sessionId").is_none(), "browser commands carry no session");
    }

    #[test]
    fn messages_split_at_nuls_across_reads() {
        let mut framer = Framer::default();
        framer.extend(b"{\"id\":1}\0{\"met");
        assert_eq!(framer.next_message().expect("ok").as_deref(), Some(&b"{\"id\":1}"[..]));
        assert_eq!(framer.next_message().expect("ok"), None, "half a message waits");
        framer.extend(b"hod\":\"A\"}\0\0");
        assert_eq!(framer.next_message().expect("ok").as_deref(), Some(&b"{\"method\":\"A\"}"[..]));
        assert_eq!(framer.next_message().expect("ok").as_deref(), Some(&b""[..]), "an empty message is one");
        assert_eq!(framer.next_message().expect("ok"), None);
    }

    #[test]
    fn a_message_past_the_cap_is_refused_before_it_ends() {
        let mut framer = Framer::default();
        let chunk = vec![b'x'; 1 << 20];
        let mut refused = false;
        for _ in 0..=(MAX_MESSAGE_BYTES >> 20) {
            framer.extend(&chunk);
            if matches!(framer.next_message(), Err(CdpError::TooLarge)) {
                refused = true;
                break;
            }
        }
        assert!(refused, "refused without waiting for the NUL");
    }

    #[tokio::test]
    async fn a_call_answers_its_own_id_and_keeps_the_events_before_it() {
        let (browser_reads, we_write) = std::io::pipe().expect("pipe");
        let (we_read, browser_writes) = std::io::pipe().expect("pipe");
        let mut cdp = Cdp::new(
            tokio::net::unix::pipe::Sender::from_owned_fd(we_write.into()).expect("sender"),
            tokio::net::unix::pipe::Receiver::from_owned_fd(we_read.into()).expect("receiver"),
        );
        // The "browser": reads one command, answers an event, another id's answer, then its own.
        let browser = std::thread::spawn(move || {
            use std::io::{Read, Write};
            let mut reads = browser_reads;
            let mut writes = browser_writes;
            let mut got = Vec::new();
            let mut byte = [0u8; 1];
            while reads.read(&mut byte).expect("read") == 1 && byte[0] != 0 {
                got.push(byte[0]);
            }
            let command: Value = serde_json::from_slice(&got).expect("json");
            let id = command["id"].as_u64().expect("id");
            let reply = format!(
                "{{\"method\":\"Page.loadEventFired\",\"params\":{{}}}}\0{{\"id\":999,\"result\":{{}}}}\0{{\"id\":{id},\"result\":{{\"ok\":true}}}}\0"
            );
            writes.write_all(reply.as_bytes()).expect("write");
            command
        });
        let result = cdp.call(None, "Page.enable", json!({})).await.expect("answer");
        assert_eq!(result, json!({ "ok": true }));
        assert_eq!(browser.join().expect("browser")["method"], "Page.enable");
        let event = cdp.event().await.expect("queued event");
        assert_eq!(event["method"], "Page.loadEventFired");
        assert!(matches!(cdp.event().await, Err(CdpError::Closed)), "the browser's end closed");
    }
}
