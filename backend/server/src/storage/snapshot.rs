//! The copy of an app's stored files a published page shows (`DATA_DIR/published/<generation>/`:
//! `data/` the files, `meta/` their sidecars): taken under the app tree's lock, so no API write
//! lands halfway through it, each file with the type and version it had, bounded in bytes and
//! files. The source is walked like every storage read (from folder descriptors, no link
//! followed, regular files only); what the agent wrote behind the API is copied as it is.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use super::disk::{self, Sidecar, Temp};
use super::files::blocking;
use super::path::StoragePath;
use super::store::Store;
use super::tree::Tree;
use crate::error::{Domain, Result};
use crate::safe_fs::Dir;

/// Most bytes a published copy of an app's data may hold.
pub const MAX_SNAPSHOT_BYTES: u64 = 64 * 1024 * 1024;
/// Most files a published copy of an app's data may hold.
pub const MAX_SNAPSHOT_FILES: u64 = 5_000;

/// What a copy holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Copied {
    pub bytes: u64,
    pub files: u64,
}

/// Copies app `app_id`'s stored files into the published tree `generation` (created here; the
/// caller removes the generation's folder when this fails). Refused with `snapshot_too_large`
/// past [`MAX_SNAPSHOT_BYTES`] or [`MAX_SNAPSHOT_FILES`].
pub async fn copy_app_tree(store: Arc<Store>, data_dir: &Path, app_id: i64, generation: i64) -> Result<Copied> {
    copy_bounded(store, data_dir, app_id, generation, MAX_SNAPSHOT_BYTES, MAX_SNAPSHOT_FILES).await
}

async fn copy_bounded(
    store: Arc<Store>,
    data_dir: &Path,
    app_id: i64,
    generation: i64,
    max_bytes: u64,
    max_files: u64,
) -> Result<Copied> {
    let _writes_wait = store.lock(Tree::App(app_id)).await;
    let (from, from_meta) = (Tree::App(app_id).root(data_dir), Tree::App(app_id).meta_root(data_dir));
    let to = Tree::Published(generation);
    let (to_root, to_meta) = (to.root(data_dir), to.meta_root(data_dir));
    blocking(move || {
        let dest = to_root.create()?;
        let mut copied = Copied::default();
        let Some(source) = from.open()? else { return Ok(copied) };
        let too_large = || Domain::SnapshotTooLarge(max_bytes / (1024 * 1024), max_files);
        let mut stack: Vec<(Dir, Dir, Option<StoragePath>)> = vec![(source, dest, None)];
        while let Some((source, dest, prefix)) = stack.pop() {
            for (name, listed) in disk::read_entries(&source)? {
                let rel = StoragePath::child(prefix.as_ref(), &name);
                if !listed.is_file {
                    let below = source.sub(Path::new(&name))?;
                    let made = dest.sub_or_create(Path::new(&name))?;
                    stack.push((below, made, Some(rel)));
                    continue;
                }
                copied.files += 1;
                if copied.files > max_files || copied.bytes.saturating_add(listed.stamp.size) > max_bytes {
                    return Err(too_large().into());
                }
                let (file, meta) = source.open_file(Path::new(&name))?;
                let (tag, recorded) = disk::describe(&from_meta, &rel, &meta);
                let content_type = match recorded {
                    Some(t) => t,
                    None => disk::guess_type(&name, &disk::head(&file, 512)?).to_owned(),
                };
                let left = max_bytes.saturating_sub(copied.bytes);
                let (mut out, temp) = Temp::create(&dest)?;
                // A file growing behind the API meanwhile is cut off by the budget, not followed.
                let n = std::io::copy(&mut file.take(left.saturating_add(1)), &mut out)?;
                if n > left {
                    return Err(too_large().into());
                }
                copied.bytes += n;
                let stamp = disk::seal(&out)?;
                disk::commit(temp, &dest, &name, &to_meta, &rel, &Sidecar { content_type, tag, stamp })?;
            }
        }
        Ok(copied)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::files::{Ctx, Read};

    fn write(root: &Path, rel: &str, bytes: &[u8]) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, bytes).expect("write");
    }

    #[tokio::test]
    async fn a_copy_holds_every_file_and_reads_like_the_original() {
        let dir = tempfile::tempdir().expect("tempdir");
        let app = dir.path().join("app-data/7");
        write(&app, "notes/a.json", br#"{"a":1}"#);
        write(&app, "b.txt", b"hello");
        let store = Store::new(u64::MAX);
        let copied = copy_app_tree(store.clone(), dir.path(), 7, 42).await.expect("copy");
        assert_eq!(copied, Copied { bytes: 12, files: 2 });
        let ctx = Ctx::new(store, dir.path(), Tree::Published(42));
        let read = ctx.read(StoragePath::parse("notes/a.json").expect("path"), None).await.expect("read");
        let Read::Inline { bytes, content_type, .. } = read else { panic!("inline read") };
        assert_eq!(bytes, br#"{"a":1}"#);
        assert_eq!(content_type, "application/json");
        // The original changing later does not change the copy.
        write(&app, "b.txt", b"changed");
        let read = ctx.read(StoragePath::parse("b.txt").expect("path"), None).await.expect("read");
        let Read::Inline { bytes, .. } = read else { panic!("inline read") };
        assert_eq!(bytes, b"hello");
    }

    #[tokio::test]
    async fn a_copy_past_its_bounds_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let app = dir.path().join("app-data/3");
        write(&app, "a.bin", &[0u8; 600]);
        write(&app, "b.bin", &[0u8; 600]);
        let store = Store::new(u64::MAX);
        let err = copy_bounded(store.clone(), dir.path(), 3, 1, 1000, 10).await.expect_err("too many bytes");
        assert!(matches!(err, crate::error::Error::Domain(Domain::SnapshotTooLarge(..))), "{err:?}");
        let err = copy_bounded(store, dir.path(), 3, 2, 10_000, 1).await.expect_err("too many files");
        assert!(matches!(err, crate::error::Error::Domain(Domain::SnapshotTooLarge(..))), "{err:?}");
    }

    #[tokio::test]
    async fn a_link_in_the_app_tree_is_not_followed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let app = dir.path().join("app-data/5");
        write(&app, "ok.txt", b"ok");
        write(dir.path(), "secret.txt", b"server secret");
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), app.join("leak.txt")).expect("symlink");
        let store = Store::new(u64::MAX);
        let copied = copy_app_tree(store, dir.path(), 5, 9).await.expect("copy");
        assert_eq!(copied.files, 1);
        assert!(!dir.path().join("published/9/data/leak.txt").exists());
    }
}
