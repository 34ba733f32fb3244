//! File storage for mini-apps: each app's own tree (`DATA_DIR/app-data/<id>/`), the shared
//! tree (`DATA_DIR/shared/`), their metadata sidecars (`DATA_DIR/.storage-meta/`), the
//! `/api/storage/...` routes, per-app write locks and quotas, and manifest storage seeds.
//!
//! Invariants: every client path passes [`path::StoragePath`] and is walked without
//! following links; every mutation of a tree happens under that tree's lock (so `If-Match`
//! is a real compare-and-swap and the quota count stays exact); writes are staged in the
//! target folder and renamed into place, so reads need no lock.

mod disk;
mod etag;
mod files;
mod group;
pub mod path;
mod routes;
mod seeds;
pub mod snapshot;
mod store;
mod tree;

use std::path::{Path, PathBuf};

pub use disk::guess_type;
pub use files::remove_app_data;
pub use routes::{ListQ, SiteData, list_site, read_site, router};
pub use seeds::write_seeds;
pub use store::Store;

/// Largest single stored object.
pub const MAX_OBJECT_BYTES: u64 = 50 * 1024 * 1024;
/// Reads up to this size are answered from memory; larger ones are streamed.
pub const INLINE_READ_BYTES: u64 = 256 * 1024;
/// Listing page size: default and maximum.
pub const LIST_DEFAULT: usize = 100;
pub const LIST_MAX: usize = 500;
/// `include_content` inlines files up to this size, and at most this much per page.
pub const INLINE_CONTENT_BYTES: u64 = 64 * 1024;
pub const INLINE_PAGE_BYTES: u64 = 1024 * 1024;
/// Request bodies on the storage routes (a 50 MiB object plus a JSON envelope's overhead).
pub const MAX_BODY_BYTES: usize = MAX_OBJECT_BYTES as usize + 1024 * 1024;

/// Where app `app_id`'s runtime files live (apart from its source).
pub fn app_data_dir(data_dir: &Path, app_id: i64) -> PathBuf {
    data_dir.join("app-data").join(app_id.to_string())
}

/// The shared tree every app may read and only the owner may change.
pub fn shared_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("shared")
}

/// After start-up: removes the staged files a crash left in app and shared storage and their
/// sidecars (files staged by this process are newer than `booted` and stay).
pub async fn remove_leftover_temps(data_dir: PathBuf, booted: std::time::SystemTime) {
    let roots = [data_dir.join("app-data"), shared_dir(&data_dir), data_dir.join(".storage-meta")];
    // A server that never stored a file has nothing to look at (and starts no thread for it).
    if !roots.iter().any(|root| root.is_dir()) {
        return;
    }
    let removed = tokio::task::spawn_blocking(move || {
        roots.iter().map(|root| disk::remove_stale_temps(root, booted)).sum::<usize>()
    })
    .await
    .unwrap_or(0);
    if removed > 0 {
        tracing::info!(removed, "removed files a crash left half-written in app storage");
    }
}
