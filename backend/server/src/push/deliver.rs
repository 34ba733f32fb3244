//! Web Push delivery in a helper process (`mobius push-deliver`), so that the server never
//! holds the HTTP client, TLS, the VAPID key schedule or the encryption code: a burst of
//! pushes maps them into a short-lived child, and all of it goes when the child exits (the
//! server's own memory after a burst stays where it was).
//!
//! The worker ([`Sender`]) starts the child on a burst's first push and keeps it for the
//! burst. They speak JSON lines: the child's first line from the worker is a [`Setup`], then
//! each [`Job`] (one notification's plaintext for some devices) is answered by one [`Reply`]
//! line with an [`Outcome`] per device, in order. The child exits when its input closes (the
//! worker dropped it after a quiet spell) or after [`CHILD_IDLE`] without a job; the worker
//! kills it when a reply is late or malformed.

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::{crypto, notice};
use crate::apps::smart_http::{FetchPolicy, checked_resolver};
use crate::db::now_ms;
use crate::error::{Error, Result};
use crate::protocol::NotificationKind as Kind;

/// Pushes in flight at once (per job).
const MAX_PARALLEL_SENDS: usize = 8;
/// One push request, connect to answer.
const SEND_TIMEOUT: Duration = Duration::from_secs(15);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A child that has had no job this long exits by itself (the worker drops it sooner).
const CHILD_IDLE: Duration = Duration::from_secs(60);
/// Longest line either side accepts (a job carries one notification of a few KiB and at most
/// every subscription: endpoints are ≤ 2 KiB each).
const MAX_LINE_BYTES: u64 = 4 * 1024 * 1024;
const USER_AGENT: &str = "Mobius/1.0 (web push)";

/// What the child needs before its first job.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Setup {
    /// `DATA_DIR/push/vapid.pem` (the worker created it).
    pub vapid_path: PathBuf,
    /// The VAPID `sub` claim.
    pub subject: String,
    /// Plain-http loopback endpoints allowed (tests only).
    pub allow_loopback: bool,
}

/// One device to push to.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Device {
    pub id: i64,
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
}

/// One notification for some devices.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Job {
    pub devices: Vec<Device>,
    pub kind: Kind,
    /// What the `Topic` header is made from (a newer push with it replaces an older one on the
    /// device).
    pub topic_key: Option<String>,
    /// The JSON the device decrypts.
    pub payload: String,
}

/// What a device's push service said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub(super) enum Outcome {
    Accepted,
    /// 404/410 (or an endpoint or keys that can never work): the subscription is gone.
    Gone,
    Failed {
        why: String,
    },
}

/// The child's answer to one [`Job`]: an outcome per device, in the job's order.
#[derive(Debug, Serialize, Deserialize)]
struct Reply {
    outcomes: Vec<Outcome>,
}

/// The worker's side: one running child.
pub(super) struct Sender {
    _child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Sender {
    /// Starts `exe push-deliver` and hands it `setup`. The child gets no environment: nothing
    /// of the server's (secrets included) is its business.
    pub(super) async fn start(exe: &Path, setup: &Setup) -> Result<Self> {
        let mut child = Command::new(exe)
            .arg("push-deliver")
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| Error::Internal(format!("cannot start the push sender {}: {e}", exe.display())))?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Error::Internal("the push sender has no pipes".into()));
        };
        let mut sender = Self { _child: child, input, output: BufReader::new(output) };
        sender.write_line(setup).await?;
        Ok(sender)
    }

    /// Sends `job` and waits for its outcomes; an error means the child is of no further use.
    pub(super) async fn deliver(&mut self, job: &Job) -> Result<Vec<Outcome>> {
        self.write_line(job).await?;
        // The child sends MAX_PARALLEL_SENDS at a time, each bounded by SEND_TIMEOUT.
        let rounds = u32::try_from(job.devices.len().div_ceil(MAX_PARALLEL_SENDS)).unwrap_or(u32::MAX).max(1);
        let deadline = (SEND_TIMEOUT + CONNECT_TIMEOUT).saturating_mul(rounds) + Duration::from_secs(5);
        let line = tokio::time::timeout(deadline, read_line(&mut self.output))
            .await
            .map_err(|_| Error::Internal("the push sender did not answer in time".into()))??
            .ok_or_else(|| Error::Internal("the push sender exited".into()))?;
        let reply: Reply = serde_json::from_str(&line)
            .map_err(|e| Error::Internal(format!("the push sender answered nonsense: {e}")))?;
        if reply.outcomes.len() != job.devices.len() {
            return Err(Error::Internal("the push sender answered for other devices".into()));
        }
        Ok(reply.outcomes)
    }

    async fn write_line(&mut self, value: &impl Serialize) -> Result<()> {
        let mut line = serde_json::to_vec(value).map_err(|e| Error::Internal(e.to_string()))?;
        line.push(b'\n');
        self.input.write_all(&line).await?;
        self.input.flush().await?;
        Ok(())
    }
}

/// One line (without its newline), `None` at the end of input; a line over [`MAX_LINE_BYTES`]
/// is an error.
async fn read_line(reader: &mut (impl AsyncBufRead + Unpin)) -> Result<Option<String>> {
    let mut line = String::new();
    let n = reader.take(MAX_LINE_BYTES + 1).read_line(&mut line).await?;
    if n == 0 {
        return Ok(None);
    }
    if !line.ends_with('\n') {
        return Err(Error::Internal("a push line is too long or cut short".into()));
    }
    line.pop();
    Ok(Some(line))
}

/// Who push requests may reach: https to public addresses; test configurations also plain
/// http to loopback (the tests' push service).
pub(super) fn policy(allow_loopback: bool) -> FetchPolicy {
    FetchPolicy::proxy(allow_loopback)
}

/// `mobius push-deliver`: the child. Reads a [`Setup`] and then [`Job`]s on stdin, answers
/// each on stdout.
pub fn deliver_command() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mobius push-deliver: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(child_loop()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mobius push-deliver: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn child_loop() -> Result<()> {
    let mut input = BufReader::new(tokio::io::stdin());
    let mut output = tokio::io::stdout();
    let Some(first) = read_line(&mut input).await? else { return Ok(()) };
    let setup: Setup = serde_json::from_str(&first).map_err(|e| Error::Internal(format!("bad setup: {e}")))?;
    let vapid = crypto::Vapid::load_or_create(&setup.vapid_path)?;
    let client = reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(SEND_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .referer(false)
        .dns_resolver(checked_resolver(&policy(setup.allow_loopback)))
        .build()
        .map_err(|e| Error::Internal(format!("push client: {e}")))?;
    let pusher = Pusher { client, vapid, subject: setup.subject };
    loop {
        let line = match tokio::time::timeout(CHILD_IDLE, read_line(&mut input)).await {
            Ok(line) => line?,
            Err(_idle) => return Ok(()),
        };
        let Some(line) = line else { return Ok(()) };
        let job: Job = serde_json::from_str(&line).map_err(|e| Error::Internal(format!("bad job: {e}")))?;
        let topic = job.topic_key.as_deref().map(crypto::topic);
        let topic = topic.as_deref();
        let outcomes = futures_util::stream::iter(&job.devices)
            .map(|device| pusher.send(device, job.kind, topic, job.payload.as_bytes()))
            .buffered(MAX_PARALLEL_SENDS)
            .collect::<Vec<_>>()
            .await;
        let mut reply = serde_json::to_vec(&Reply { outcomes }).map_err(|e| Error::Internal(e.to_string()))?;
        reply.push(b'\n');
        output.write_all(&reply).await?;
        output.flush().await?;
    }
}

/// What the child sends with.
struct Pusher {
    client: reqwest::Client,
    vapid: crypto::Vapid,
    subject: String,
}

impl Pusher {
    /// Encrypts `plaintext` for `device` and posts it to its push service.
    async fn send(&self, device: &Device, kind: Kind, topic: Option<&str>, plaintext: &[u8]) -> Outcome {
        let Some(keys) = crypto::ClientKeys::decode(&device.p256dh, &device.auth) else {
            return Outcome::Gone;
        };
        let Ok(url) = reqwest::Url::parse(&device.endpoint) else { return Outcome::Gone };
        let failed = |why: String| Outcome::Failed { why };
        let body = match crypto::encrypt(&keys, plaintext) {
            Ok(body) => body,
            Err(e) => return failed(e.to_string()),
        };
        let audience = url.origin().ascii_serialization();
        let authorization = match self.vapid.authorization(&audience, &self.subject, now_ms() / 1000) {
            Ok(a) => a,
            Err(e) => return failed(e.to_string()),
        };
        let mut request = self
            .client
            .post(url)
            .header("TTL", notice::ttl(kind).as_secs().to_string())
            .header("Urgency", notice::urgency(kind))
            .header("Content-Encoding", "aes128gcm")
            .header("Content-Type", "application/octet-stream")
            .header("Authorization", authorization)
            .body(body);
        if let Some(topic) = topic {
            request = request.header("Topic", topic);
        }
        match request.send().await {
            Ok(response) => match response.status().as_u16() {
                200..=299 => Outcome::Accepted,
                404 | 410 => Outcome::Gone,
                status => failed(format!("push service answered {status}")),
            },
            Err(e) => failed(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_bounded_and_the_end_of_input_is_none() {
        let mut ok = BufReader::new(&b"{\"a\":1}\nrest"[..]);
        assert_eq!(read_line(&mut ok).await.expect("line").as_deref(), Some("{\"a\":1}"));
        assert!(read_line(&mut ok).await.is_err(), "a line cut short by the end of input");
        let mut empty = BufReader::new(&b""[..]);
        assert_eq!(read_line(&mut empty).await.expect("end"), None);
        let long = vec![b'x'; usize::try_from(MAX_LINE_BYTES).expect("fits") + 10];
        assert!(read_line(&mut BufReader::new(&long[..])).await.is_err(), "an endless line");
    }

    #[test]
    fn outcomes_travel_as_tagged_json() {
        let reply = Reply { outcomes: vec![Outcome::Accepted, Outcome::Gone, Outcome::Failed { why: "503".into() }] };
        let text = serde_json::to_string(&reply).expect("json");
        assert_eq!(text, r#"{"outcomes":[{"result":"accepted"},{"result":"gone"},{"result":"failed","why":"503"}]}"#);
        let back: Reply = serde_json::from_str(&text).expect("back");
        assert_eq!(back.outcomes, reply.outcomes);
    }
}
