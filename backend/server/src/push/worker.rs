//! The one task that stores notices and sends pushes, off every caller's path.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::{Kind, Notice, Shared, crypto};
use crate::apps::smart_http::{FetchPolicy, checked_resolver};
use crate::db::{self, Db, now_ms};
use crate::error::{Error, Result};
use crate::writer::push::PushWrite;
use crate::writer::{WriteCommand, WriterHandle};

/// Pushes in flight at once.
const MAX_PARALLEL_SENDS: usize = 8;
/// One push request, connect to answer.
const SEND_TIMEOUT: Duration = Duration::from_secs(15);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The first pause after a device's push failed; doubles per failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(30);
const MAX_BACKOFF: Duration = Duration::from_secs(3600);
/// The HTTP client (and its connections) is dropped after this long without a notice.
const CLIENT_IDLE: Duration = Duration::from_secs(10);
/// `last_ok_at` is refreshed at most this often per device (one write, not one per push).
const DELIVERED_MARK_EVERY_MS: i64 = 3600 * 1000;
/// Sources that never push (maintenance noise; only the type decides), as in the original.
const QUIET_SOURCE_TYPES: &[&str] = &[
    "platform_conflict",
    "platform_update",
    "shell",
    "shell_rebuild",
    "shell_rebuilding",
    "shell_rebuilt",
    "shell_rebuild_failed",
];
const USER_AGENT: &str = "Mobius/1.0 (web push)";

/// A device whose pushes failed: skipped until `until`.
struct Backoff {
    failures: u32,
    until: Instant,
}

struct Worker {
    shared: Arc<Shared>,
    db: Db,
    writer: WriterHandle,
    client: Option<reqwest::Client>,
    backoff: HashMap<i64, Backoff>,
}

pub(super) async fn run(mut rx: mpsc::Receiver<Notice>, shared: Arc<Shared>, db: Db, writer: WriterHandle) {
    let mut worker = Worker { shared, db, writer, client: None, backoff: HashMap::new() };
    loop {
        let next = if worker.client.is_some() {
            match tokio::time::timeout(CLIENT_IDLE, rx.recv()).await {
                Ok(next) => next,
                Err(_idle) => {
                    // Pushes come in bursts: between them, keep nothing (connections, TLS state).
                    worker.client = None;
                    let _ = tokio::task::spawn_blocking(mobius_sys::return_freed_memory).await;
                    continue;
                }
            }
        } else {
            rx.recv().await
        };
        let Some(notice) = next else { return };
        if let Err(e) = worker.handle(notice).await {
            warn!(error = %e, "a notification could not be delivered");
        }
    }
}

/// What a device's push service said.
enum Outcome {
    Accepted,
    /// 404/410: the subscription is gone for good.
    Gone,
    Failed(String),
}

impl Worker {
    async fn handle(&mut self, mut notice: Notice) -> Result<()> {
        if notice.kind != Kind::Test
            && db::push::disabled_kinds(&self.db.read).await?.iter().any(|k| k == notice.kind.as_str())
        {
            debug!(kind = notice.kind.as_str(), "notification switched off");
            return Ok(());
        }
        if notice.title.is_empty() {
            let title = match notice.source.chat() {
                Some(chat) => db::push::chat_title(&self.db.read, chat).await?.filter(|t| !t.trim().is_empty()),
                None => None,
            };
            notice.title = super::clip(title.as_deref().unwrap_or("Möbius"), super::MAX_TITLE_CHARS);
        }
        let watched = notice.kind.suppressed_while_watched()
            && notice.source.chat().is_some_and(|chat| self.shared.presence.watching(chat));
        let (source_type, source_id) = notice.source.attribution();
        let quiet = QUIET_SOURCE_TYPES.contains(&source_type.trim().to_ascii_lowercase().as_str());
        let target = notice.target.clone().or_else(|| notice.source.default_target());
        let mut token = None;
        if let Some(decision) = &notice.decision {
            let choices = decision.choices.iter().map(|(a, answers)| (a.action.clone(), answers.clone())).collect();
            token = Some(self.shared.actions.mint(&decision.chat_id, &decision.question_id, choices)?);
            notice.actions = decision.choices.iter().map(|(a, _)| a.clone()).collect();
        }
        let actions = (!notice.actions.is_empty()).then(|| json!(notice.actions));
        let id = match notice.stored_id.take() {
            Some(id) => id,
            None => {
                let row = db::push::Notification {
                    id: uuid::Uuid::new_v4().to_string(),
                    kind: notice.kind.as_str().to_owned(),
                    source_type,
                    source_id,
                    title: notice.title.clone(),
                    body: notice.body.clone(),
                    icon: notice.icon.clone(),
                    target: target.clone(),
                    actions: actions.as_ref().map(Value::to_string),
                    sent_at: now_ms(),
                    clicked_at: None,
                    // Seen already: the owner watched it happen.
                    read_at: watched.then(now_ms),
                };
                let id = row.id.clone();
                self.write(PushWrite::Store(Box::new(row))).await?;
                id
            }
        };
        if watched || quiet {
            debug!(watched, quiet, "notification stored without a push");
            return Ok(());
        }
        let mut payload = json!({
            "id": id,
            "title": notice.title,
            "body": notice.body,
            "icon": notice.icon,
            "target": target,
            "actions": notice.actions,
            "kind": notice.kind,
            "tag": notice.source.topic_key(),
        });
        if let (Some(decision), Some(token)) = (&notice.decision, token) {
            payload["chat_id"] = json!(decision.chat_id);
            payload["question_id"] = json!(decision.question_id);
            payload["action_token"] = json!(token);
        }
        self.push(&notice, payload.to_string().as_bytes()).await
    }

    async fn write(&self, op: PushWrite) -> Result<u64> {
        self.writer.call(|ack| WriteCommand::Push { op, ack }).await
    }

    fn client(&mut self) -> Result<reqwest::Client> {
        if let Some(client) = &self.client {
            return Ok(client.clone());
        }
        let client = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(SEND_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .referer(false)
            .dns_resolver(checked_resolver(&policy(self.shared.allow_loopback)))
            .build()
            .map_err(|e| Error::Internal(format!("push client: {e}")))?;
        self.client = Some(client.clone());
        Ok(client)
    }

    /// Sends `plaintext` to every device not backing off; prunes gone ones.
    async fn push(&mut self, notice: &Notice, plaintext: &[u8]) -> Result<()> {
        let now = Instant::now();
        let devices: Vec<_> = db::push::subscriptions(&self.db.read)
            .await?
            .into_iter()
            .filter(|s| self.backoff.get(&s.id).is_none_or(|b| b.until <= now))
            // An app's subscription gets only that app's notifications (never a question's
            // action token, never another source's news).
            .filter(|s| s.app_id.is_none() || s.app_id == notice.source.app())
            .collect();
        if devices.is_empty() {
            return Ok(());
        }
        let client = self.client()?;
        let topic = notice.source.topic_key().map(|k| crypto::topic(&k));
        let (kind, shared) = (notice.kind, self.shared.clone());
        let results: Vec<_> = futures_util::stream::iter(devices)
            .map(|device| {
                let (client, topic, shared) = (client.clone(), topic.clone(), shared.clone());
                async move {
                    let outcome = send(&client, &shared, &device, kind, topic.as_deref(), plaintext).await;
                    (device, outcome)
                }
            })
            .buffer_unordered(MAX_PARALLEL_SENDS)
            .collect()
            .await;
        for (device, outcome) in results {
            match outcome {
                Outcome::Accepted => {
                    self.backoff.remove(&device.id);
                    if device.last_ok_at.is_none_or(|t| now_ms() - t >= DELIVERED_MARK_EVERY_MS) {
                        self.write(PushWrite::Delivered(device.id)).await?;
                    }
                }
                Outcome::Gone => {
                    info!(device = device.id, "push subscription expired; removed");
                    self.backoff.remove(&device.id);
                    self.write(PushWrite::Unsubscribe(device.endpoint, None)).await?;
                }
                Outcome::Failed(why) => {
                    let failures = self.backoff.get(&device.id).map_or(1, |b| b.failures.saturating_add(1));
                    let pause = FIRST_BACKOFF.saturating_mul(1 << failures.saturating_sub(1).min(7)).min(MAX_BACKOFF);
                    warn!(device = device.id, failures, pause_secs = pause.as_secs(), %why, "push failed; backing off");
                    self.backoff.insert(device.id, Backoff { failures, until: Instant::now() + pause });
                }
            }
        }
        Ok(())
    }
}

/// Who push requests may reach: https to public addresses; test configurations also plain
/// http to loopback (the tests' push service).
pub(super) fn policy(allow_loopback: bool) -> FetchPolicy {
    FetchPolicy::proxy(allow_loopback)
}

async fn send(
    client: &reqwest::Client,
    shared: &Shared,
    device: &db::push::Subscription,
    kind: Kind,
    topic: Option<&str>,
    plaintext: &[u8],
) -> Outcome {
    let Some(keys) = crypto::ClientKeys::decode(&device.p256dh, &device.auth) else {
        return Outcome::Gone;
    };
    let Ok(url) = reqwest::Url::parse(&device.endpoint) else { return Outcome::Gone };
    let body = match crypto::encrypt(&keys, plaintext) {
        Ok(body) => body,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let audience = url.origin().ascii_serialization();
    let now_secs = now_ms() / 1000;
    let authorization = match shared.vapid.authorization(&audience, &shared.subject, now_secs) {
        Ok(a) => a,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let mut request = client
        .post(url)
        .header("TTL", kind.ttl_secs().to_string())
        .header("Urgency", kind.urgency())
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
            status => Outcome::Failed(format!("push service answered {status}")),
        },
        Err(e) => Outcome::Failed(e.to_string()),
    }
}
