//! Copying an app's static assets out of a build and publishing them (no HTTP here: the
//! routes are in `mod.rs`).

use std::path::{Path, PathBuf};

use crate::apps::manifest::{self, MAX_STATIC_ASSETS};
use crate::error::{Error, Result};

/// Largest single static asset.
pub const MAX_ASSET_BYTES: u64 = 16 * 1024 * 1024;
/// Largest total of one app's static assets.
pub const MAX_ASSETS_TOTAL_BYTES: u64 = 64 * 1024 * 1024;

/// Where app `id`'s published assets live.
pub(super) fn assets_dir(data_dir: &Path, id: i64) -> PathBuf {
    data_dir.join("app-assets").join(id.to_string())
}

/// Assets copied out of a build, waiting to replace the published set.
pub struct Staged(Option<tempfile::TempDir>);

fn invalid(dest: &str, why: impl std::fmt::Display) -> Error {
    Error::unprocessable("manifest_invalid", format!("mobius.json › static_assets.{dest}: {why}"))
}

/// Copies each `(destination, source)` from the exported commit `tree` into a staging folder,
/// refusing links, folders, missing files and anything over the limits. A local apply also
/// names the app's folder (`apps/<slug>`, relative to `data_dir`) in `folder`: a source the
/// commit lacks because the app's own `.gitignore` keeps it out is taken from there (static
/// assets are install-managed, outside the app's history, as in the original), opened through
/// `safe_fs` (the agent writes that folder): no link followed, a regular file only.
pub async fn stage(data_dir: &Path, tree: &Path, folder: Option<&Path>, pairs: &[(String, String)]) -> Result<Staged> {
    if pairs.is_empty() {
        return Ok(Staged(None));
    }
    let build_root = data_dir.join("run").join("build");
    let (tree, pairs) = (tree.to_path_buf(), pairs.to_vec());
    let folder = match folder {
        Some(rel) => crate::safe_fs::Dir::open_under(data_dir, rel).ok(),
        None => None,
    };
    tokio::task::spawn_blocking(move || -> Result<Staged> {
        std::fs::create_dir_all(&build_root)?;
        let staging = tempfile::Builder::new().prefix("assets-").tempdir_in(&build_root)?;
        let mut total = 0u64;
        for (dest, src) in pairs.iter().take(MAX_STATIC_ASSETS) {
            let missing = || invalid(dest, format!("{src:?} is not a file of the app"));
            let Some(file) = contained(&tree, src) else {
                // Not committed: the folder's own, when the app's `.gitignore` leaves it out.
                let folder = folder.as_ref().ok_or_else(missing)?;
                if manifest::repo_path_problem(src).is_some() {
                    return Err(missing());
                }
                let (mut opened, meta) = folder.open_file(Path::new(src)).map_err(|_| missing())?;
                total += meta.len();
                if meta.len() > MAX_ASSET_BYTES {
                    return Err(invalid(dest, format!("{src:?} is larger than {} MiB", MAX_ASSET_BYTES >> 20)));
                }
                if total > MAX_ASSETS_TOTAL_BYTES {
                    return Err(invalid(
                        dest,
                        format!("the assets add up to more than {} MiB", MAX_ASSETS_TOTAL_BYTES >> 20),
                    ));
                }
                let target = staging.path().join(dest);
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                let mut out = std::fs::File::create(&target)?;
                std::io::copy(&mut std::io::Read::take(&mut opened, MAX_ASSET_BYTES), &mut out)?;
                continue;
            };
            let len = std::fs::metadata(&file)?.len();
            if len > MAX_ASSET_BYTES {
                return Err(invalid(dest, format!("{src:?} is larger than {} MiB", MAX_ASSET_BYTES >> 20)));
            }
            total += len;
            if total > MAX_ASSETS_TOTAL_BYTES {
                return Err(invalid(
                    dest,
                    format!("the assets add up to more than {} MiB", MAX_ASSETS_TOTAL_BYTES >> 20),
                ));
            }
            let target = staging.path().join(dest);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::copy(&file, &target)?;
        }
        Ok(Staged(Some(staging)))
    })
    .await
    .map_err(|e| Error::Internal(format!("asset task: {e}")))?
}

/// Replaces app `id`'s published assets with `staged` (an empty set removes them).
pub async fn publish(data_dir: &Path, id: i64, staged: Staged) -> Result<()> {
    let dir = assets_dir(data_dir, id);
    tokio::task::spawn_blocking(move || -> Result<()> {
        let old = dir.with_extension("old");
        let _ = std::fs::remove_dir_all(&old);
        if dir.exists() {
            std::fs::rename(&dir, &old)?;
        }
        if let Some(staging) = staged.0 {
            if let Some(parent) = dir.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::rename(staging.keep(), &dir)?;
        }
        let _ = std::fs::remove_dir_all(&old);
        Ok(())
    })
    .await
    .map_err(|e| Error::Internal(format!("asset task: {e}")))?
}

/// Removes a purged app's assets.
pub async fn remove(data_dir: &Path, id: i64) {
    let _ = tokio::fs::remove_dir_all(assets_dir(data_dir, id)).await;
}

/// A regular file at `rel` under `root`, reached without following links.
pub(super) fn contained(root: &Path, rel: &str) -> Option<PathBuf> {
    if manifest::repo_path_problem(rel).is_some() {
        return None;
    }
    let mut path = root.to_path_buf();
    for segment in rel.split('/') {
        path.push(segment);
        if std::fs::symlink_metadata(&path).ok()?.file_type().is_symlink() {
            return None;
        }
    }
    std::fs::symlink_metadata(&path).ok()?.is_file().then_some(path)
}
