//! The one task that stores notices and sends pushes, off every caller's path.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::deliver::{self, Device, Job, Outcome};
use super::notice::{self, Notice};
use super::{actions, crypto, presence};
use crate::config::Config;
use crate::db::{self, Db, now_ms};
use crate::error::{Error, Result};
use crate::protocol::{NotificationKind as Kind, PushPayload};
use crate::writer::{PushWrite, WriteCommand, WriterHandle};

/// The first pause after a device's push failed; doubles per failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(30);
const MAX_BACKOFF: Duration = Duration::from_secs(3600);
/// The sender (the child process that holds the HTTP client, connections and the parsed key)
/// is let go after this long without a notice.
const SENDER_IDLE: Duration = Duration::from_secs(10);
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

/// What routes and the worker share.
pub(super) struct Shared {
    /// `DATA_DIR/push/vapid.pem`: created on first use, read when a burst of pushes starts.
    vapid_path: PathBuf,
    /// The VAPID public key, once read.
    public_key: OnceLock<String>,
    /// The VAPID `sub` claim: `mailto:admin@<public host>`.
    pub subject: String,
    pub presence: presence::Presence,
    pub actions: actions::ActionTokens,
    /// Test configurations may push to `http://127.0.0.1` (the tests' push service):
    /// `Config::push_allow_loopback`.
    pub allow_loopback: bool,
    /// The `mobius` binary, run as `mobius push-deliver` to send (`Config::self_exe`).
    exe: PathBuf,
}

impl Shared {
    /// Nothing is read or built here: the key is loaded on first use.
    pub(super) fn new(config: &Config) -> Self {
        let host = config.public_origin.authority().split(':').next().unwrap_or("localhost").to_owned();
        Self {
            vapid_path: config.data_dir.join("push").join("vapid.pem"),
            public_key: OnceLock::new(),
            subject: format!("mailto:admin@{host}"),
            presence: presence::Presence::default(),
            actions: actions::ActionTokens::default(),
            allow_loopback: config.push_allow_loopback,
            exe: config.self_exe.clone(),
        }
    }

    /// The VAPID key pair, created (0600) the first time anything needs it.
    pub(super) fn vapid(&self) -> Result<crypto::Vapid> {
        let vapid = crypto::Vapid::load_or_create(&self.vapid_path)?;
        let _ = self.public_key.set(vapid.public_key().to_owned());
        Ok(vapid)
    }

    /// The VAPID public key browsers subscribe with.
    pub(super) fn public_key(&self) -> Result<String> {
        match self.public_key.get() {
            Some(key) => Ok(key.clone()),
            None => Ok(self.vapid()?.public_key().to_owned()),
        }
    }
}

/// A device whose pushes failed: skipped until `until`.
struct Backoff {
    failures: u32,
    until: Instant,
}

struct Worker {
    shared: Arc<Shared>,
    db: Db,
    writer: WriterHandle,
    /// The running `push-deliver` child, during a burst.
    sender: Option<deliver::Sender>,
    backoff: HashMap<i64, Backoff>,
}

pub(super) async fn run(mut rx: mpsc::Receiver<Box<Notice>>, shared: Arc<Shared>, db: Db, writer: WriterHandle) {
    let mut worker = Worker { shared, db, writer, sender: None, backoff: HashMap::new() };
    loop {
        let next = if worker.sender.is_some() {
            match tokio::time::timeout(SENDER_IDLE, rx.recv()).await {
                Ok(next) => next,
                Err(_idle) => {
                    // Pushes come in bursts: between them, keep no child (its connections, TLS
                    // roots and key go with it), and give the freed memory back.
                    worker.sender = None;
                    crate::memory::trim_now();
                    continue;
                }
            }
        } else {
            rx.recv().await
        };
        let Some(notice) = next else { return };
        if let Err(e) = worker.handle(*notice).await {
            warn!(error = %e, "a notification could not be delivered");
        }
    }
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
            notice.title = notice::clip(title.as_deref().unwrap_or("Möbius"), notice::MAX_TITLE_CHARS);
        }
        let watched = notice::suppressed_while_watched(notice.kind)
            && notice.source.chat().is_some_and(|chat| self.shared.presence.watching(chat));
        // A question answered before its notice got here (an answer in the chat is quick) is
        // kept as read and not pushed: the answer already marked the chat's questions read.
        let answered = match (&notice.question, notice.source.chat()) {
            (Some(question), Some(chat)) => db::chats::get(&self.db.read, chat)
                .await?
                .is_none_or(|c| c.pending_question_id.as_deref() != Some(question.as_str())),
            _ => false,
        };
        let watched = watched || answered;
        let (source_type, source_id) = notice.source.attribution();
        let quiet = QUIET_SOURCE_TYPES.contains(&source_type.trim().to_ascii_lowercase().as_str());
        let target = notice.target.clone().or_else(|| notice.source.default_target());
        let mut token = None;
        if let Some(decision) = &notice.decision {
            let choices = decision.choices.iter().map(|(a, answers)| (a.action.clone(), answers.clone())).collect();
            token = Some(self.shared.actions.mint(&decision.chat_id, &decision.question_id, choices)?);
            notice.actions = decision.choices.iter().map(|(a, _)| a.clone()).collect();
        }
        let id = match notice.stored_id.take() {
            Some(id) => id,
            None => {
                let actions = if notice.actions.is_empty() {
                    None
                } else {
                    Some(serde_json::to_string(&notice.actions).map_err(|e| Error::Internal(e.to_string()))?)
                };
                let row = db::push::Notification {
                    id: uuid::Uuid::new_v4().to_string(),
                    kind: notice.kind,
                    source_type,
                    source_id,
                    title: notice.title.clone(),
                    body: notice.body.clone(),
                    icon: notice.icon.clone(),
                    target: target.clone(),
                    actions,
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
        let tag = notice.source.topic_key();
        let decision = notice.decision.take();
        let payload = PushPayload {
            id,
            title: std::mem::take(&mut notice.title),
            body: notice.body.take(),
            icon: notice.icon.take(),
            target,
            actions: std::mem::take(&mut notice.actions),
            kind: notice.kind,
            tag,
            chat_id: decision.as_ref().map(|d| d.chat_id.clone()),
            question_id: decision.map(|d| d.question_id),
            action_token: token,
        };
        let plaintext = serde_json::to_string(&payload).map_err(|e| Error::Internal(e.to_string()))?;
        self.push(&notice, plaintext).await
    }

    async fn write(&self, op: PushWrite) -> Result<u64> {
        self.writer.call(|ack| WriteCommand::Push { op, ack }).await
    }

    /// The burst's child, started (with the VAPID key created first) when there is none.
    async fn sender(&mut self) -> Result<&mut deliver::Sender> {
        if self.sender.is_none() {
            // Created here when missing (the child only reads it): one writer of the key file.
            if !self.shared.vapid_path.exists() {
                self.shared.vapid()?;
            }
            let setup = deliver::Setup {
                vapid_path: self.shared.vapid_path.clone(),
                subject: self.shared.subject.clone(),
                allow_loopback: self.shared.allow_loopback,
            };
            self.sender = Some(deliver::Sender::start(&self.shared.exe, &setup).await?);
        }
        self.sender.as_mut().ok_or_else(|| Error::Internal("no push sender".into()))
    }

    /// Sends `plaintext` to every device not backing off; prunes gone ones.
    async fn push(&mut self, notice: &Notice, plaintext: String) -> Result<()> {
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
        let job = Job {
            devices: devices
                .iter()
                .map(|d| Device {
                    id: d.id,
                    endpoint: d.endpoint.clone(),
                    p256dh: d.p256dh.clone(),
                    auth: d.auth.clone(),
                })
                .collect(),
            kind: notice.kind,
            topic_key: notice.source.topic_key(),
            payload: plaintext,
        };
        let outcomes = match self.sender().await?.deliver(&job).await {
            Ok(outcomes) => outcomes,
            Err(e) => {
                // Of no further use: the next burst starts a new one.
                self.sender = None;
                let why = e.to_string();
                devices.iter().map(|_| Outcome::Failed { why: why.clone() }).collect()
            }
        };
        let results = devices.into_iter().zip(outcomes);
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
                Outcome::Failed { why } => {
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
