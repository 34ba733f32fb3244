//! What routes use (`Updates`: the feed's last answer, an apply's progress, the owner's switch)
//! and the checks that fill it: now, and once a day.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

use super::UpdateConfig;
use super::feed::{self, CHECK_INTERVAL, CheckRecord, FIRST_CHECK_DELAY};
use crate::locks::Unpoisoned;

/// Where an update stands, for Settings (progress of the one running apply).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Progress {
    /// `checking`, `downloading`, `verifying`, `restarting`, or `failed`.
    pub phase: &'static str,
    pub version: String,
    /// Bytes downloaded so far and in all (when known).
    pub done_bytes: u64,
    pub total_bytes: u64,
    /// Why it failed (phase `failed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What routes use: the feed's last answer, the running apply's progress, the owner's switch.
#[derive(Clone)]
pub struct Updates(Arc<UpdatesInner>);

struct UpdatesInner {
    data_dir: PathBuf,
    config: UpdateConfig,
    progress: Mutex<Option<Progress>>,
    /// The last check, as kept in `feed.json` (read at start-up).
    check: Mutex<Option<CheckRecord>>,
    /// One check or apply at a time.
    busy: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Updates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Updates(..)")
    }
}

impl Updates {
    /// The handle for the data directory `data_dir`.
    pub fn new(data_dir: &Path, config: UpdateConfig) -> Self {
        let check = CheckRecord::load(data_dir);
        Self(Arc::new(UpdatesInner {
            data_dir: data_dir.to_path_buf(),
            config,
            progress: Mutex::new(None),
            check: Mutex::new(check),
            busy: tokio::sync::Mutex::new(()),
        }))
    }

    /// The configuration.
    pub fn config(&self) -> &UpdateConfig {
        &self.0.config
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.0.data_dir
    }

    /// The running apply's progress, if one runs (or the last one failed).
    pub fn progress(&self) -> Option<Progress> {
        self.0.progress.locked().clone()
    }

    pub(crate) fn set_progress(&self, progress: Option<Progress>) {
        *self.0.progress.locked() = progress;
    }

    /// The last check.
    pub fn last_check(&self) -> Option<CheckRecord> {
        self.0.check.locked().clone()
    }

    pub(crate) fn record_check(&self, record: CheckRecord) {
        record.store(&self.0.data_dir);
        *self.0.check.locked() = Some(record);
    }

    /// The owner's switch for daily checks (on unless turned off).
    pub fn auto_check(&self) -> bool {
        feed::auto_check(&self.0.data_dir)
    }

    /// Whether the server was started by `mobius launch` (restarts and updates need it).
    pub fn supervised(&self) -> bool {
        self.0.config.launcher_pid.is_some()
    }

    /// The lock a check or an apply holds; `None` when one is running.
    pub(crate) fn try_busy(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        self.0.busy.try_lock().ok()
    }

    /// Waits for the running check or apply, then holds the lock.
    pub(crate) async fn busy(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.0.busy.lock().await
    }
}

/// Checks the feed now and records the answer (an error is logged, never raised).
pub async fn check_now(updates: &Updates) -> CheckRecord {
    let record = match &updates.config().feed {
        None => {
            CheckRecord { checked_at: crate::db::now_ms(), feed: None, error: Some("update checks are off".into()) }
        }
        Some(url) => match feed::fetch(url).await {
            Ok(feed) => CheckRecord { checked_at: crate::db::now_ms(), feed: Some(feed), error: None },
            Err(e) => {
                tracing::info!(error = %e, "update check failed");
                CheckRecord { checked_at: crate::db::now_ms(), feed: None, error: Some(e) }
            }
        },
    };
    updates.record_check(record.clone());
    record
}

/// The daily check: sleeps until a day after the last one (and at least a minute after
/// start-up), checks when the owner's switch is on, until the server stops.
pub async fn check_daily(updates: Updates, mut stop: tokio::sync::watch::Receiver<bool>) {
    if updates.config().feed.is_none() {
        return;
    }
    let mut wait = FIRST_CHECK_DELAY;
    loop {
        if let Some(last) = updates.last_check() {
            let since = Duration::from_millis(u64::try_from(crate::db::now_ms() - last.checked_at).unwrap_or(0));
            wait = wait.max(CHECK_INTERVAL.saturating_sub(since));
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        if updates.auto_check() {
            let _busy = updates.busy().await;
            let fresh = updates.last_check().is_some_and(|l| {
                crate::db::now_ms() - l.checked_at
                    < i64::try_from(CHECK_INTERVAL.as_millis()).unwrap_or(i64::MAX) - 1000
            });
            if !fresh {
                check_now(&updates).await;
            }
        }
        wait = CHECK_INTERVAL;
    }
}
