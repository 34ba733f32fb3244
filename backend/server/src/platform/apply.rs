//! Applying an update, the same from Settings and from `mobius update`: one at a time, a fresh
//! look at the feed, only a newer version, the release staged and verified, then marked
//! pending and the launcher asked to restart. The launcher backs the database up once the old
//! version has stopped, tries the new one and rolls it back if it does not become ready.

use std::path::Path;

use super::feed::{self, Feed};
use super::stage::{self, OnProgress, StageError};
use super::state::{ApplyLock, Pending, ReleaseState};
use super::{UpdateConfig, launcher};

/// The version running now: the release the launcher started, else this build.
pub fn running_version(config: &UpdateConfig) -> semver::Version {
    config.release.as_deref().and_then(|v| semver::Version::parse(v).ok()).unwrap_or_else(super::build_version)
}

/// Fetches the feed, downloads and verifies its release, marks it pending and asks the
/// launcher (`launcher_pid`) to restart into it. `expected`: the version the owner was shown
/// (refused when the feed now names another).
pub async fn apply(
    data_dir: &Path,
    config: &UpdateConfig,
    running: &semver::Version,
    launcher_pid: i32,
    expected: Option<&str>,
    on_progress: OnProgress<'_>,
) -> Result<Pending, StageError> {
    let _lock = ApplyLock::try_take(data_dir)
        .map_err(|e| StageError { code: "update_failed", message: format!("Cannot lock the platform folder: {e}") })?
        .ok_or_else(|| StageError {
            code: "update_in_progress",
            message: "An update is already being applied.".into(),
        })?;
    let url = config.feed.as_ref().ok_or_else(|| StageError {
        code: "updates_off",
        message: "Update checks are off (MOBIUS_UPDATE_FEED=off).".into(),
    })?;
    on_progress("checking", 0, 0);
    let feed = feed::fetch(url).await.map_err(|e| StageError { code: "feed_unavailable", message: e })?;
    check_newer(&feed, running, expected)?;
    let staged = stage::stage(data_dir, &config.trusted_keys(), &config.image_key, &feed, on_progress).await?;
    let pending = Pending {
        version: staged.manifest.version.clone(),
        from: running.to_string(),
        requested_at: crate::db::now_ms(),
    };
    let mut state = ReleaseState::load(data_dir);
    state.pending = Some(pending.clone());
    state
        .store(data_dir)
        .map_err(|e| StageError { code: "update_failed", message: format!("Cannot record the update: {e}") })?;
    on_progress("restarting", 0, 0);
    launcher::ask_restart(launcher_pid)
        .map_err(|e| StageError { code: "not_supervised", message: format!("Cannot reach the launcher: {e}") })?;
    tracing::info!(version = %pending.version, from = %pending.from, "update staged and verified; restarting into it");
    Ok(pending)
}

/// Refuses a feed that is not newer than `running`, or not the version the owner saw.
pub fn check_newer(feed: &Feed, running: &semver::Version, expected: Option<&str>) -> Result<(), StageError> {
    if feed.semver() <= *running {
        return Err(StageError { code: "up_to_date", message: format!("Version {running} is the newest release.") });
    }
    if let Some(expected) = expected
        && expected != feed.version
    {
        return Err(StageError {
            code: "release_changed",
            message: format!("The newest release is now {}, not {expected}; check again.", feed.version),
        });
    }
    Ok(())
}
