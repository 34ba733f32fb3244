//! Platform updates: the release feed checked once a day (`feed.rs`), a release downloaded and
//! verified against the key baked into this binary (`verify.rs`, `stage.rs`), the state the
//! launcher and the server share on disk (`state.rs`), `mobius launch` — the image's entry
//! point, which starts the newest good version, tries a new one and rolls it back
//! (`launcher.rs`) —, applying an update from Settings or `mobius update` (`apply.rs`,
//! `command.rs`), what routes share and the daily check (`updates.rs`) and the routes
//! (`routes.rs`).
//!
//! Layout under `DATA_DIR/platform/`: `releases/<version>/` (a verified release: `mobius`,
//! `frontend/dist/`, `skill/`, and the signed `SHA256SUMS`, `SHA256SUMS.minisig`,
//! `release.json`), `releases/state.json`, `rollback/` (the database as it was before the
//! version on trial started), `feed.json` (the last check), `updates.json` (the owner's
//! switch), `launcher.pid`.

pub mod apply;
pub mod command;
pub mod feed;
pub mod launcher;
pub mod routes;
pub mod stage;
pub mod state;
pub mod updates;
pub mod verify;

use std::path::{Path, PathBuf};

pub use crate::config::updates::{
    DEFAULT_FEED_URL, DEFAULT_READY_TIMEOUT, IMAGE_KEY, RELEASE_PUBLIC_KEY, UpdateConfig, is_loopback_url,
};
pub use routes::router;
pub use updates::{Progress, Updates};

/// The version of this build.
pub fn build_version() -> semver::Version {
    semver::Version::parse(env!("CARGO_PKG_VERSION")).unwrap_or_else(|_| semver::Version::new(0, 0, 0))
}

/// The platform's folder in the data directory.
pub fn platform_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("platform")
}

/// Where verified releases live.
pub fn releases_dir(data_dir: &Path) -> PathBuf {
    platform_dir(data_dir).join("releases")
}
