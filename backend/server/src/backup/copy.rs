//! `mobius backup` and `mobius restore`: the plan of what a data directory holds, SQLite
//! snapshots (`VACUUM INTO`), file copies with their modes, and the manifest written last.

use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection};

use super::{BACKUP_FORMAT, BackupError, MAIN_DATABASE, MANIFEST_FILE, Manifest, io_error};

/// Folders (relative to the data dir) that hold only a running server's transient state:
/// its runtime files, the agent's scratch space, uploads still arriving.
/// So is the database copy a version on trial would be rolled back to (it serves that trial only).
const TRANSIENT_DIRS: &[&str] = &["run", "agent-scratch", "uploads/.staging", "platform/rollback"];

/// Companion files of a live SQLite database, never copied (the snapshot replaces them).
const SQLITE_SIDECARS: &[&str] = &["-wal", "-shm", "-journal"];

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// How long the snapshot waits for a lock held by the running server.
const SNAPSHOT_BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// One entry of a directory tree, relative to its root.
#[derive(Debug)]
enum Entry {
    Dir(PathBuf, u32),
    File(PathBuf, u32),
    Database(PathBuf, u32),
    Symlink(PathBuf, PathBuf),
}

/// Lists `root` (not following symlinks) for a backup: databases separately, live SQLite
/// companions, transient folders, sockets and `exclude` left out.
fn plan_backup(root: &Path, exclude: Option<&Path>) -> Result<Vec<Entry>, BackupError> {
    let mut entries = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        let dir = root.join(&rel);
        let read = match std::fs::read_dir(&dir) {
            Ok(read) => read,
            // A live server may remove a folder (a chat's scratch space) while we walk.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !rel.as_os_str().is_empty() => continue,
            Err(e) => return Err(io_error("cannot read", &dir)(e)),
        };
        let mut names: Vec<_> = read.filter_map(|e| e.ok().map(|e| e.file_name())).collect();
        names.sort();
        for name in names {
            let child_rel = rel.join(&name);
            let child = root.join(&child_rel);
            let Ok(meta) = std::fs::symlink_metadata(&child) else { continue };
            let mode = meta.permissions().mode() & 0o7777;
            if meta.file_type().is_symlink() {
                if let Ok(target) = std::fs::read_link(&child) {
                    entries.push(Entry::Symlink(child_rel, target));
                }
            } else if meta.is_dir() {
                let transient = TRANSIENT_DIRS.iter().any(|d| child_rel == Path::new(d));
                if transient || exclude.is_some_and(|ex| same_file(&child, ex)) {
                    continue;
                }
                entries.push(Entry::Dir(child_rel.clone(), mode));
                pending.push(child_rel);
            } else if meta.is_file() {
                if is_sqlite_sidecar(&child) {
                    continue;
                }
                if is_sqlite(&child) {
                    entries.push(Entry::Database(child_rel, mode));
                } else {
                    entries.push(Entry::File(child_rel, mode));
                }
            }
        }
    }
    Ok(entries)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// True for a file that starts with the SQLite header.
fn is_sqlite(path: &Path) -> bool {
    let mut magic = [0u8; 16];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok() && &magic == SQLITE_MAGIC
}

/// True for `x-wal`, `x-shm` or `x-journal` next to a SQLite database `x`.
fn is_sqlite_sidecar(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return false };
    SQLITE_SIDECARS
        .iter()
        .filter_map(|suffix| name.strip_suffix(suffix))
        .any(|base| !base.is_empty() && is_sqlite(&path.with_file_name(base)))
}

fn is_empty_dir(path: &Path) -> Result<bool, BackupError> {
    match std::fs::read_dir(path) {
        Ok(mut read) => Ok(read.next().is_none()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(io_error("cannot read", path)(e)),
    }
}

/// Writes a consistent snapshot of the database at `src` to the new file `dest`, while the
/// server keeps running (`VACUUM INTO` on a read-only connection).
pub(crate) async fn snapshot_database(src: &Path, dest: &Path) -> Result<(), BackupError> {
    let db_error = |what: &str| {
        let context = format!("{what} {}", src.display());
        move |source| BackupError::Db { context, source }
    };
    let mut conn = SqliteConnectOptions::new()
        .filename(src)
        .read_only(true)
        .busy_timeout(SNAPSHOT_BUSY_TIMEOUT)
        .connect()
        .await
        .map_err(db_error("cannot open the database"))?;
    let result = sqlx::query("VACUUM INTO ?")
        .bind(dest.to_string_lossy().into_owned())
        .execute(&mut conn)
        .await
        .map_err(db_error("cannot snapshot the database"));
    let _ = conn.close().await;
    result.map(|_| ())
}

/// Runs SQLite's `quick_check` on the database at `path`.
async fn check_database(path: &Path) -> Result<(), BackupError> {
    let db_error = |what: &str| {
        let context = format!("{what} {}", path.display());
        move |source| BackupError::Db { context, source }
    };
    let mut conn = SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .connect()
        .await
        .map_err(db_error("cannot open the backed-up database"))?;
    let verdict: Result<String, _> = sqlx::query_scalar("PRAGMA quick_check").fetch_one(&mut conn).await;
    let _ = conn.close().await;
    match verdict.map_err(db_error("cannot check the backed-up database"))? {
        ok if ok == "ok" => Ok(()),
        problem => Err(BackupError::Refused(format!("{} is damaged: {problem}", path.display()))),
    }
}

fn set_mode(path: &Path, mode: u32) -> Result<(), BackupError> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(io_error("cannot set the mode of", path))
}

/// Copies one regular file, then gives it `mode`. `Ok(None)` when it vanished meanwhile, or is
/// no longer a regular file: the agent can write parts of the data folder, and a file it swaps
/// for a link, a FIFO or a device while the backup runs is left out (never followed, waited on,
/// or read without end).
fn copy_file(src: &Path, dest: &Path, mode: u32) -> Result<Option<u64>, BackupError> {
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(src);
    let mut from = match opened {
        Ok(file) if file.metadata().is_ok_and(|m| m.is_file()) => file,
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(nix::libc::ELOOP) => {
            return Ok(None);
        }
        Err(e) => return Err(io_error("cannot read", src)(e)),
    };
    let mut to = std::fs::File::create(dest).map_err(io_error("cannot create", dest))?;
    let bytes =
        std::io::copy(&mut from, &mut to).map_err(io_error(format!("cannot copy {} to", src.display()), dest))?;
    set_mode(dest, mode)?;
    Ok(Some(bytes))
}

/// Creates the folders, files and links of `entries` (databases excepted) from `src` under
/// `dest`. Folder modes are applied last so a read-only folder can still be filled.
/// Returns the number of files copied and their bytes.
fn copy_entries(
    src: &Path,
    dest: &Path,
    entries: &[Entry],
    owner: Option<(u32, u32)>,
) -> Result<(u64, u64), BackupError> {
    let (mut files, mut bytes) = (0, 0);
    for entry in entries {
        match entry {
            Entry::Dir(rel, _) => {
                let path = dest.join(rel);
                std::fs::create_dir_all(&path).map_err(io_error("cannot create", &path))?;
                set_mode(&path, 0o700)?;
            }
            Entry::File(rel, mode) => {
                if let Some(n) = copy_file(&src.join(rel), &dest.join(rel), *mode)? {
                    files += 1;
                    bytes += n;
                }
            }
            Entry::Symlink(rel, target) => {
                let path = dest.join(rel);
                std::os::unix::fs::symlink(target, &path).map_err(io_error("cannot create the link", &path))?;
            }
            Entry::Database(..) => {}
        }
        if let (Some(owner), Entry::File(rel, _) | Entry::Symlink(rel, _) | Entry::Dir(rel, _)) = (owner, entry) {
            take_owner(&dest.join(rel), owner)?;
        }
    }
    for entry in entries.iter().rev() {
        if let Entry::Dir(rel, mode) = entry {
            set_mode(&dest.join(rel), *mode)?;
        }
    }
    Ok((files, bytes))
}

/// Gives `path` to `(uid, gid)` when the restoring user may (root restoring into a data
/// directory that belongs to the service user); otherwise leaves it as created.
fn take_owner(path: &Path, (uid, gid): (u32, u32)) -> Result<(), BackupError> {
    let Ok(meta) = path.symlink_metadata() else { return Ok(()) };
    if meta.uid() == uid && meta.gid() == gid {
        return Ok(());
    }
    match std::os::unix::fs::lchown(path, Some(uid), Some(gid)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Ok(()),
        Err(e) => Err(io_error("cannot change the owner of", path)(e)),
    }
}

/// Backs up the data directory `data_dir` into `dest` (a new or empty directory, made
/// private) while a server may be running on it.
pub async fn backup(data_dir: &Path, dest: &Path) -> Result<Manifest, BackupError> {
    let main_db = data_dir.join(MAIN_DATABASE);
    if !main_db.is_file() {
        return Err(BackupError::Refused(format!(
            "{} has no database ({MAIN_DATABASE}); is DATA_DIR right?",
            data_dir.display()
        )));
    }
    if !is_empty_dir(dest)? {
        return Err(BackupError::Refused(format!("{} is not empty; back up into a new directory", dest.display())));
    }
    std::fs::create_dir_all(dest).map_err(io_error("cannot create", dest))?;
    set_mode(dest, 0o700)?;

    let (root, exclude) = (data_dir.to_path_buf(), dest.to_path_buf());
    let entries = blocking(move || plan_backup(&root, Some(&exclude))).await?;
    // Folders first (snapshots need their parent), then databases, main first: the files
    // copied after it may be newer than it, never older.
    let dirs: Vec<Entry> = entries
        .iter()
        .filter_map(|e| if let Entry::Dir(p, _) = e { Some(Entry::Dir(p.clone(), 0o700)) } else { None })
        .collect();
    let (d, s) = (dest.to_path_buf(), data_dir.to_path_buf());
    blocking(move || copy_entries(&s, &d, &dirs, None)).await?;
    let mut databases: Vec<(&PathBuf, u32)> =
        entries.iter().filter_map(|e| if let Entry::Database(p, m) = e { Some((p, *m)) } else { None }).collect();
    databases.sort_by_key(|(p, _)| p.as_path() != Path::new(MAIN_DATABASE));
    if databases.first().is_none_or(|(p, _)| p.as_path() != Path::new(MAIN_DATABASE)) {
        return Err(BackupError::Refused(format!("{} is not a SQLite database", main_db.display())));
    }
    for (rel, mode) in &databases {
        let target = dest.join(rel);
        snapshot_database(&data_dir.join(rel), &target).await?;
        set_mode(&target, *mode)?;
    }
    let database_names = databases.iter().map(|(p, _)| p.to_string_lossy().into_owned()).collect();

    let (d, s) = (dest.to_path_buf(), data_dir.to_path_buf());
    let (files, bytes) = blocking(move || copy_entries(&s, &d, &entries, None)).await?;
    let manifest = Manifest {
        format: BACKUP_FORMAT,
        created_at_ms: crate::db::now_ms(),
        mobius_version: env!("CARGO_PKG_VERSION").to_owned(),
        build_sha: crate::ops::BUILD_SHA.to_owned(),
        databases: database_names,
        files,
        bytes,
    };
    write_manifest(dest, &manifest)?;
    Ok(manifest)
}

fn write_manifest(dest: &Path, manifest: &Manifest) -> Result<(), BackupError> {
    let path = dest.join(MANIFEST_FILE);
    let json = serde_json::to_vec_pretty(manifest)
        .map_err(|e| BackupError::Refused(format!("cannot encode the manifest: {e}")))?;
    let tmp = dest.join(format!(".{MANIFEST_FILE}.tmp"));
    let mut file = std::fs::File::create(&tmp).map_err(io_error("cannot write", &tmp))?;
    file.write_all(&json).and_then(|()| file.sync_all()).map_err(io_error("cannot write", &tmp))?;
    std::fs::rename(&tmp, &path).map_err(io_error("cannot write", &path))
}

/// Reads and checks the manifest of the backup at `dir`.
pub fn read_manifest(dir: &Path) -> Result<Manifest, BackupError> {
    let path = dir.join(MANIFEST_FILE);
    let raw = match std::fs::read(&path) {
        Ok(raw) => raw,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(BackupError::Refused(format!(
                "{} is not a complete Möbius backup (no {MANIFEST_FILE})",
                dir.display()
            )));
        }
        Err(e) => return Err(io_error("cannot read", &path)(e)),
    };
    let manifest: Manifest = serde_json::from_slice(&raw)
        .map_err(|e| BackupError::Refused(format!("{} is not a valid backup manifest: {e}", path.display())))?;
    if manifest.format != BACKUP_FORMAT {
        return Err(BackupError::Refused(format!(
            "{} has backup format {}; this mobius reads format {BACKUP_FORMAT}",
            dir.display(),
            manifest.format
        )));
    }
    let sound = |rel: &String| {
        let p = Path::new(rel);
        p.is_relative() && p.components().all(|c| matches!(c, std::path::Component::Normal(_)))
    };
    if manifest.databases.first().map(String::as_str) != Some(MAIN_DATABASE) || !manifest.databases.iter().all(sound) {
        return Err(BackupError::Refused(format!("{} lists unexpected databases", path.display())));
    }
    Ok(manifest)
}

/// Restores the backup at `from` into the data directory `to`, which must be empty (or
/// missing) unless `force`, in which case its contents are deleted first. The server must
/// not be running on `to`. Restored entries take the owner of `to` when allowed.
pub async fn restore(from: &Path, to: &Path, force: bool) -> Result<Manifest, BackupError> {
    let manifest = read_manifest(from)?;
    for rel in &manifest.databases {
        check_database(&from.join(rel)).await?;
    }
    if !is_empty_dir(to)? {
        if !force {
            return Err(BackupError::Refused(format!(
                "{} is not empty; stop the server and pass --force to replace its contents",
                to.display()
            )));
        }
        let target = to.to_path_buf();
        blocking(move || clear_dir(&target)).await?;
    }
    std::fs::create_dir_all(to).map_err(io_error("cannot create", to))?;
    let meta = std::fs::metadata(to).map_err(io_error("cannot read", to))?;
    let owner = (meta.uid(), meta.gid());

    let (src, dest) = (from.to_path_buf(), to.to_path_buf());
    let databases = manifest.databases.clone();
    blocking(move || {
        let listed = |p: &Path| databases.iter().any(|d| Path::new(d) == p);
        let entries: Vec<Entry> = plan_backup(&src, None)?
            .into_iter()
            .filter(|e| !matches!(e, Entry::File(p, _) if p.as_os_str() == MANIFEST_FILE))
            .map(|e| match e {
                Entry::Database(p, mode) if !listed(&p) => Entry::File(p, mode),
                other => other,
            })
            .collect();
        copy_entries(&src, &dest, &entries, Some(owner))?;
        // The databases go in last, each under a temporary name then renamed, so a restore
        // that stops half-way never leaves a database beside files it does not match.
        for rel in &databases {
            let (from_db, to_db) = (src.join(rel), dest.join(rel));
            let tmp = to_db.with_file_name(format!(
                ".{}.restoring",
                to_db.file_name().map_or("db".into(), |n| n.to_string_lossy())
            ));
            let mode = std::fs::metadata(&from_db).map_err(io_error("cannot read", &from_db))?.permissions().mode();
            if let Some(parent) = to_db.parent() {
                std::fs::create_dir_all(parent).map_err(io_error("cannot create", parent))?;
            }
            copy_file(&from_db, &tmp, mode & 0o7777)?;
            std::fs::File::open(&tmp).and_then(|f| f.sync_all()).map_err(io_error("cannot write", &tmp))?;
            take_owner(&tmp, owner)?;
            std::fs::rename(&tmp, &to_db).map_err(io_error("cannot write", &to_db))?;
        }
        Ok(())
    })
    .await?;
    Ok(manifest)
}

/// Deletes everything inside `dir`, keeping `dir` itself (it may be a mount point).
fn clear_dir(dir: &Path) -> Result<(), BackupError> {
    for entry in std::fs::read_dir(dir).map_err(io_error("cannot read", dir))? {
        let path = entry.map_err(io_error("cannot read", dir))?.path();
        let meta = path.symlink_metadata().map_err(io_error("cannot read", &path))?;
        let removed = if meta.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
        removed.map_err(io_error("cannot remove", &path))?;
    }
    Ok(())
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, BackupError> + Send + 'static,
) -> Result<T, BackupError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| BackupError::Refused(format!("the copy was interrupted: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_companions_are_recognised_only_next_to_a_database() {
        let dir = tempfile::tempdir().expect("tmp");
        let mut header = SQLITE_MAGIC.to_vec();
        header.extend([0u8; 84]);
        std::fs::write(dir.path().join("x.sqlite3"), &header).expect("db");
        std::fs::write(dir.path().join("x.sqlite3-wal"), b"wal").expect("wal");
        std::fs::write(dir.path().join("notes-wal"), b"just a file").expect("file");
        assert!(is_sqlite(&dir.path().join("x.sqlite3")));
        assert!(is_sqlite_sidecar(&dir.path().join("x.sqlite3-wal")));
        assert!(!is_sqlite_sidecar(&dir.path().join("notes-wal")));
        assert!(!is_sqlite(&dir.path().join("notes-wal")));
    }

    #[test]
    fn the_plan_leaves_out_transient_state_and_the_destination() {
        let dir = tempfile::tempdir().expect("tmp");
        for sub in ["run/agents", "agent-scratch/c1", "apps/a", "backups/now", "shared/run"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        std::fs::write(dir.path().join("apps/a/index.jsx"), b"x").expect("file");
        std::fs::write(dir.path().join("run/agents/123"), b"").expect("pid");
        let entries = plan_backup(dir.path(), Some(&dir.path().join("backups/now"))).expect("plan");
        let paths: Vec<String> = entries
            .iter()
            .map(|e| match e {
                Entry::Dir(p, _) | Entry::File(p, _) | Entry::Database(p, _) | Entry::Symlink(p, _) => {
                    p.to_string_lossy().into_owned()
                }
            })
            .collect();
        assert!(paths.contains(&"apps/a/index.jsx".to_owned()), "{paths:?}");
        assert!(paths.contains(&"shared/run".to_owned()), "only top-level run/ is transient: {paths:?}");
        assert!(paths.contains(&"backups".to_owned()), "{paths:?}");
        assert!(!paths.iter().any(|p| p.starts_with("run") || p.starts_with("agent-scratch")), "{paths:?}");
        assert!(!paths.iter().any(|p| p.starts_with("backups/now")), "{paths:?}");
    }
}
