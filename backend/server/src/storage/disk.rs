//! Blocking file operations of the storage trees: staged temp files, atomic commits, the
//! metadata sidecars, sizes and directory reads. Callers run these off the async threads.
//!
//! A sidecar lives at `<meta root>/<folders>/<name>@meta.json`. `@` never passes the path
//! whitelist, so a sidecar can never collide with a mirrored folder name.

use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use rand::RngCore;
use serde::{Deserialize, Serialize};

use super::etag::Stamp;
use super::path::{StoragePath, valid_segment};
use crate::error::{Error, Result};
use crate::safe_fs::{Dir, Kind};

/// What an API write recorded about a file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sidecar {
    pub content_type: String,
    pub tag: String,
    /// The file this sidecar describes; a different stamp means the file changed behind the API.
    pub stamp: Stamp,
}

fn sidecar_path(meta_root: &Path, rel: &StoragePath) -> PathBuf {
    let mut path = meta_root.to_path_buf();
    let segments: Vec<&str> = rel.segments().collect();
    path.extend(&segments[..segments.len() - 1]);
    path.push(format!("{}@meta.json", rel.file_name()));
    path
}

/// The sidecar of `rel`, if one exists and still describes the file with `stamp`.
pub fn current_sidecar(meta_root: &Path, rel: &StoragePath, stamp: &Stamp) -> Option<Sidecar> {
    let path = sidecar_path(meta_root, rel);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > 64 * 1024 {
        return None;
    }
    let sidecar: Sidecar = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    (sidecar.stamp == *stamp).then_some(sidecar)
}

/// The version tag and recorded type (if any) of the file at `rel` whose metadata is `meta`.
pub fn describe(meta_root: &Path, rel: &StoragePath, meta: &Metadata) -> (String, Option<String>) {
    describe_stamp(meta_root, rel, Stamp::of(meta))
}

/// [`describe`] for a file known by its stamp.
pub fn describe_stamp(meta_root: &Path, rel: &StoragePath, stamp: Stamp) -> (String, Option<String>) {
    match current_sidecar(meta_root, rel, &stamp) {
        Some(s) => (s.tag, Some(s.content_type)),
        None => (stamp.fallback_tag(), None),
    }
}

fn write_sidecar(meta_root: &Path, rel: &StoragePath, sidecar: &Sidecar) -> Result<()> {
    let path = sidecar_path(meta_root, rel);
    let dir = path.parent().ok_or_else(|| Error::Internal("sidecar without a folder".into()))?;
    std::fs::create_dir_all(dir)?;
    let body = serde_json::to_vec(sidecar).map_err(|e| Error::Internal(format!("sidecar encoding: {e}")))?;
    // Losing a sidecar in a crash only costs a fallback tag, so it is renamed into place
    // atomically but not fsynced. (The sidecars' folder is the server's own.)
    let folder = Dir::open(dir)?;
    let (mut file, temp) = Temp::create(&folder)?;
    file.write_all(&body)?;
    drop(file);
    let name = path.file_name().ok_or_else(|| Error::Internal("sidecar without a name".into()))?;
    temp.dir.rename(&temp.name, &folder, name)?;
    temp.disarm();
    Ok(())
}

/// Removes the sidecar of the file `rel` (if any).
pub fn remove_sidecar(meta_root: &Path, rel: &StoragePath) -> Result<()> {
    match std::fs::remove_file(sidecar_path(meta_root, rel)) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// Removes the sidecars of everything inside the folder `rel` (if any).
pub fn remove_sidecar_dir(meta_root: &Path, rel: &StoragePath) -> Result<()> {
    match std::fs::remove_dir_all(rel.under(meta_root)) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// Moves the sidecar(s) of `from` (a file, or a folder when `dir`) to `to`.
pub fn move_sidecars(meta_root: &Path, from: &StoragePath, to: &StoragePath, dir: bool) -> Result<()> {
    let (src, dst) = if dir {
        (from.under(meta_root), to.under(meta_root))
    } else {
        (sidecar_path(meta_root, from), sidecar_path(meta_root, to))
    };
    if std::fs::symlink_metadata(&src).is_err() {
        return Ok(());
    }
    if let Some(parent) = dst.parent() {
        std::fs::create_dir_all(parent)?;
    }
    // A stale sidecar at the destination would describe nothing; drop it first.
    let _ = if dir { std::fs::remove_dir_all(&dst) } else { std::fs::remove_file(&dst) };
    std::fs::rename(src, dst)?;
    Ok(())
}

/// How staged files start (`~` never passes the whitelist).
const TEMP_PREFIX: &str = ".~tmp-";

/// Removes staged files a crash left under `root` (only those older than `before`, so a write
/// staging right now keeps its file). The walk goes from folder descriptors and never follows
/// a link. Returns how many went.
pub fn remove_stale_temps(root: &Path, before: std::time::SystemTime) -> usize {
    let before_ns = before
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    let mut removed = 0;
    let Ok(top) = Dir::open(root) else { return 0 };
    let mut folders = vec![top];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = folder.entries(usize::MAX) else { continue };
        for entry in entries {
            match entry.kind {
                Kind::Dir => {
                    if let Ok(sub) = folder.sub(Path::new(&entry.name)) {
                        folders.push(sub);
                    }
                }
                Kind::File if entry.name.to_string_lossy().starts_with(TEMP_PREFIX) => {
                    let old = folder.stat(&entry.name).ok().flatten().is_some_and(|st| {
                        st.st_mtime.saturating_mul(1_000_000_000).saturating_add(st.st_mtime_nsec) < before_ns
                    });
                    if old && folder.remove_file(&entry.name).is_ok() {
                        removed += 1;
                    }
                }
                _ => {}
            }
        }
    }
    removed
}

/// A staged file that deletes itself unless it was committed. It is made in a folder reached
/// without following links and renamed from that folder's descriptor.
#[derive(Debug)]
pub struct Temp {
    pub dir: Dir,
    pub name: OsString,
    armed: bool,
}

impl Temp {
    /// Creates an empty `0600` temp file in `dir`; its name never passes the whitelist, so
    /// listings and reads never see it.
    pub fn create(dir: &Dir) -> Result<(File, Self)> {
        let mut bytes = [0u8; 8];
        rand::thread_rng().fill_bytes(&mut bytes);
        let name = OsString::from(format!("{TEMP_PREFIX}{}", hex::encode(bytes)));
        let file = dir.create_new(&name, STORED_FILE_MODE)?;
        Ok((file, Self { dir: dir.reopen()?, name, armed: true }))
    }

    /// Keeps the file (it was renamed into place).
    pub fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.dir.remove_file(&self.name);
        }
    }
}

/// Stored files are the owner's alone.
const STORED_FILE_MODE: u32 = 0o600;

/// Flushes a staged file to disk with mode `0600` and returns its stamp.
pub fn seal(file: &File) -> Result<Stamp> {
    file.set_permissions(std::fs::Permissions::from_mode(STORED_FILE_MODE))?;
    file.sync_all()?;
    Ok(Stamp::of(&file.metadata()?))
}

/// Writes `bytes` to a sealed temp file in `dir`.
pub fn stage_bytes(dir: &Dir, bytes: &[u8]) -> Result<(Temp, Stamp)> {
    let (mut file, temp) = Temp::create(dir)?;
    file.write_all(bytes)?;
    let stamp = seal(&file)?;
    Ok((temp, stamp))
}

/// Renames a sealed temp file over `target` after recording its sidecar. A folder removed
/// while the file was staged answers 409. Returns the folder whose fsync makes the rename
/// durable: writers run it after releasing the tree lock, so concurrent writers share one
/// journal commit instead of queueing behind each other's (a later writer's fsync also covers
/// every earlier rename, as the journal commits in order).
pub fn commit(
    temp: Temp,
    parent: &Dir,
    name: &str,
    meta_root: &Path,
    rel: &StoragePath,
    sidecar: &Sidecar,
) -> Result<Dir> {
    // The sidecar goes first: until the rename, it describes an inode nobody sees, so
    // readers meanwhile get the old file with its fallback tag, never a wrong pairing.
    write_sidecar(meta_root, rel, sidecar)?;
    match temp.dir.rename(&temp.name, parent, OsStr::new(name)) {
        Ok(()) => temp.disarm(),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(Error::conflict("folder_removed", "The folder was removed while the file was being written."));
        }
        Err(e) => return Err(e.into()),
    }
    Ok(parent.reopen()?)
}

/// fsyncs a folder so a rename or unlink in it is durable.
pub fn sync_dir(dir: &Dir) -> Result<()> {
    Ok(dir.sync()?)
}

/// Total bytes of the regular files below `dir` (staged files excluded), walked from folder
/// descriptors, never following links.
pub fn tree_size(dir: &Dir) -> Result<u64> {
    let mut total = 0u64;
    let mut stack = vec![dir.reopen()?];
    while let Some(current) = stack.pop() {
        for entry in current.entries(usize::MAX)? {
            match entry.kind {
                Kind::Dir => match current.sub(Path::new(&entry.name)) {
                    Ok(sub) => stack.push(sub),
                    Err(e) if e.kind() == ErrorKind::NotFound => {}
                    // Swapped for a link meanwhile: not ours to count.
                    Err(e) if crate::safe_fs::refusal(&e).is_some() => {}
                    Err(e) => return Err(e.into()),
                },
                // Files still being staged are charged when they are committed, not before.
                Kind::File if !entry.name.as_encoded_bytes().starts_with(TEMP_PREFIX.as_bytes()) => {
                    if let Some(stat) = current.stat(&entry.name)? {
                        total = total.saturating_add(u64::try_from(stat.st_size).unwrap_or(0));
                    }
                }
                _ => {}
            }
        }
    }
    Ok(total)
}

/// One entry of a listed folder: a regular file or a folder.
#[derive(Debug)]
pub struct Listed {
    pub is_file: bool,
    pub stamp: Stamp,
}

/// The entries of `dir` a client may address (whitelisted names, files and folders only, no
/// links, no special files), sorted by name.
pub fn read_entries(dir: &Dir) -> Result<Vec<(String, Listed)>> {
    let mut out = Vec::new();
    for entry in dir.entries(usize::MAX)? {
        let Ok(name) = entry.name.into_string() else { continue };
        if !valid_segment(&name) || !matches!(entry.kind, Kind::File | Kind::Dir) {
            continue;
        }
        let Some(stat) = dir.stat(OsStr::new(&name))? else { continue };
        let kind = crate::safe_fs::Kind::of_stat(&stat);
        if matches!(kind, Kind::File | Kind::Dir) {
            out.push((name, Listed { is_file: kind == Kind::File, stamp: Stamp::of_stat(&stat) }));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Reads at most `limit` bytes from the start of `file` (without moving its cursor).
pub fn head(file: &File, limit: usize) -> Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; limit];
    let mut filled = 0;
    while filled < limit {
        match file.read_at(&mut buf[filled..], filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

/// Reads a whole small file, refusing more than `limit` bytes.
pub fn read_small(file: &mut File, limit: u64) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    file.take(limit + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(Error::Internal("file grew while being read".into()));
    }
    Ok(buf)
}

/// The type to serve a file with when no write recorded one: by extension, else by content.
pub fn guess_type(name: &str, head: &[u8]) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "json" => "application/json",
        "txt" | "log" | "text" => TEXT_PLAIN,
        "md" | "markdown" => "text/markdown; charset=utf-8",
        "csv" => "text/csv; charset=utf-8",
        "tsv" => "text/tab-separated-values; charset=utf-8",
        "html" | "htm" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" | "mjs" | "jsx" => "text/javascript; charset=utf-8",
        "xml" => "application/xml",
        "yaml" | "yml" => "application/yaml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "avif" => "image/avif",
        "ico" => "image/x-icon",
        "pdf" => "application/pdf",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "ogg" => "audio/ogg",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "wasm" => "application/wasm",
        "zip" => "application/zip",
        _ if looks_like_text(head) => TEXT_PLAIN,
        _ => "application/octet-stream",
    }
}

/// The type of plain text files.
pub const TEXT_PLAIN: &str = "text/plain; charset=utf-8";

fn looks_like_text(head: &[u8]) -> bool {
    if head.contains(&0) {
        return false;
    }
    match std::str::from_utf8(head) {
        Ok(_) => true,
        // A multi-byte character cut off by the sample's end is still text.
        Err(e) => e.error_len().is_none() && head.len() - e.valid_up_to() < 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sidecar_only_describes_the_file_it_was_written_for() {
        let dir = tempfile::tempdir().expect("tmp");
        let tree = super::super::path::Root { data_dir: dir.path().to_path_buf(), rel: "tree".into() };
        let root = tree.path();
        let meta = dir.path().join("meta");
        std::fs::create_dir_all(&root).expect("mkdir");
        let rel = StoragePath::parse("a/b.bin").expect("valid");
        let parent_dir = super::super::path::prepare_parent(&tree, &rel).expect("parent");
        let parent = parent_dir.path().to_path_buf();
        let (temp, stamp) = stage_bytes(&parent_dir, b"hello").expect("stage");
        let sidecar = Sidecar { content_type: "image/png".into(), tag: "v1".into(), stamp };
        sync_dir(&commit(temp, &parent_dir, "b.bin", &meta, &rel, &sidecar).expect("commit")).expect("sync");
        let file_meta = std::fs::metadata(rel.under(&root)).expect("stat");
        assert_eq!(describe(&meta, &rel, &file_meta), ("v1".into(), Some("image/png".into())));
        assert_eq!(file_meta.permissions().mode() & 0o777, 0o600);
        // Rewritten behind the API's back: the sidecar no longer applies.
        std::fs::remove_file(rel.under(&root)).expect("rm");
        std::fs::write(rel.under(&root), b"other bytes").expect("write");
        let file_meta = std::fs::metadata(rel.under(&root)).expect("stat");
        let (tag, recorded) = describe(&meta, &rel, &file_meta);
        assert!(tag.starts_with('f'), "{tag}");
        assert_eq!(recorded, None);
        // Nothing but the committed file is left in the folder.
        let names: Vec<_> = std::fs::read_dir(&parent).expect("ls").map(|e| e.expect("entry").file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("b.bin")]);
    }

    #[test]
    fn guesses_follow_extension_then_content() {
        assert_eq!(guess_type("x.JSON", b""), "application/json");
        assert_eq!(guess_type("x.png", b"\x89PNG"), "image/png");
        assert_eq!(guess_type("notes", "héllo".as_bytes()), TEXT_PLAIN);
        assert_eq!(guess_type("blob", b"\x00\x01\x02"), "application/octet-stream");
        assert_eq!(guess_type("blob", b"\xff\xfe"), "application/octet-stream");
    }
}
