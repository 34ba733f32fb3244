//! `DATA_DIR/platform/releases/state.json`: which release is current, which one waits to be
//! tried, and how the last attempt ended. Written atomically (temp file + rename) by the server
//! or `mobius update` (a pending release) and by the launcher (everything else).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The state file, in the releases folder.
const STATE_FILE: &str = "state.json";

/// What the launcher and the server agree on.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReleaseState {
    /// A release that became ready after it was tried (`releases/<current>/`); none: the
    /// image's own binary.
    #[serde(default)]
    pub current: Option<String>,
    /// A verified release waiting to be tried at the next start.
    #[serde(default)]
    pub pending: Option<Pending>,
    /// How the last try ended.
    #[serde(default)]
    pub last: Option<Outcome>,
}

/// A release to try.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Pending {
    pub version: String,
    /// The version running when it was asked for.
    pub from: String,
    /// Unix milliseconds.
    pub requested_at: i64,
}

/// How a try ended.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Outcome {
    pub version: String,
    pub from: String,
    /// `applied`, `rolled_back` or `failed` (never started: its backup could not be taken).
    pub outcome: String,
    /// Why it was rolled back or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Unix milliseconds when it ended.
    pub at: i64,
    /// Milliseconds from stopping the previous version to the new one answering ready (applied),
    /// or to the previous version answering again (rolled back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub took_ms: Option<u64>,
}

fn path(data_dir: &Path) -> PathBuf {
    super::releases_dir(data_dir).join(STATE_FILE)
}

impl ReleaseState {
    /// The state on disk (the default when there is none or it cannot be read).
    pub fn load(data_dir: &Path) -> Self {
        match super::verify::read_small(&path(data_dir)) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "the release state is unreadable; starting from the image's version");
                Self::default()
            }),
            Err(_) => Self::default(),
        }
    }

    /// Writes the state atomically.
    pub fn store(&self, data_dir: &Path) -> std::io::Result<()> {
        let file = path(data_dir);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = file.with_extension("json.tmp");
        let mut out = std::fs::File::create(&tmp)?;
        out.write_all(&serde_json::to_vec_pretty(self).unwrap_or_default())?;
        out.sync_all()?;
        std::fs::rename(&tmp, &file)
    }
}

/// An exclusive lock on the platform folder for one apply at a time across processes (the
/// server's route, `mobius update`); released when dropped.
pub struct ApplyLock(#[allow(dead_code)] nix::fcntl::Flock<std::fs::File>);

impl ApplyLock {
    /// Takes the lock, or `None` when another process holds it.
    pub fn try_take(data_dir: &Path) -> std::io::Result<Option<Self>> {
        let dir = super::platform_dir(data_dir);
        std::fs::create_dir_all(&dir)?;
        let file =
            std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(dir.join(".apply.lock"))?;
        match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
            Ok(lock) => Ok(Some(Self(lock))),
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
            Err((_, e)) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_round_trips_and_a_missing_file_is_the_image() {
        let dir = tempfile::tempdir().expect("tmp");
        assert_eq!(ReleaseState::load(dir.path()), ReleaseState::default());
        let state = ReleaseState {
            current: Some("1.2.3".into()),
            pending: Some(Pending { version: "1.3.0".into(), from: "1.2.3".into(), requested_at: 5 }),
            last: None,
        };
        state.store(dir.path()).expect("store");
        assert_eq!(ReleaseState::load(dir.path()), state);
        std::fs::write(path(dir.path()), b"{not json").expect("garble");
        assert_eq!(ReleaseState::load(dir.path()), ReleaseState::default());
    }

    #[test]
    fn one_apply_at_a_time() {
        let dir = tempfile::tempdir().expect("tmp");
        let first = ApplyLock::try_take(dir.path()).expect("lock").expect("free");
        assert!(ApplyLock::try_take(dir.path()).expect("lock").is_none());
        drop(first);
        assert!(ApplyLock::try_take(dir.path()).expect("lock").is_some());
    }
}
