//! Operations commands: `mobius backup` (a consistent copy of a live `DATA_DIR`),
//! `mobius restore` (into a stopped server's empty data directory) and `mobius healthcheck`
//! (the container's probe of the local server).
//!
//! A backup is a plain directory: every file of `DATA_DIR` with its mode, each SQLite
//! database as an online snapshot (`VACUUM INTO`) instead of its live file, WAL and shared
//! memory, and `mobius-backup.json`, written last, so an interrupted backup never restores.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection};

use crate::config::Config;

/// The file that marks a directory as a complete backup.
pub const MANIFEST_FILE: &str = "mobius-backup.json";
/// Layout version of a backup directory; `restore` refuses any other.
pub const BACKUP_FORMAT: u32 = 1;
/// The main database, relative to `DATA_DIR`.
pub const MAIN_DATABASE: &str = "db/mobius.sqlite3";
/// Top-level folders that hold only a running server's transient state.
const TRANSIENT_DIRS: &[&str] = &["run", "agent-scratch"];
/// Companion files of a live SQLite database, never copied (the snapshot replaces them).
const SQLITE_SIDECARS: &[&str] = &["-wal", "-shm", "-journal"];
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// How long the snapshot waits for a lock held by the running server.
const SNAPSHOT_BUSY_TIMEOUT: Duration = Duration::from_secs(30);
/// The health probe gives up after this long (connect, send and receive each).
const HEALTHCHECK_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest health response read.
const MAX_HEALTH_RESPONSE_BYTES: u64 = 64 * 1024;

/// Why a backup, restore or probe failed; printed as one line by the commands.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// The request cannot be carried out as asked (wrong or non-empty directory, not a backup).
    #[error("{0}")]
    Refused(String),
    /// A filesystem operation failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// SQLite refused to snapshot or check a database.
    #[error("{context}: {source}")]
    Db {
        context: String,
        #[source]
        source: sqlx::Error,
    },
}

fn io_error(context: impl std::fmt::Display, path: &Path) -> impl FnOnce(std::io::Error) -> BackupError {
    let context = format!("{context} {}", path.display());
    move |source| BackupError::Io { context, source }
}

/// What a backup holds, written to [`MANIFEST_FILE`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    /// [`BACKUP_FORMAT`] at the time of writing.
    pub format: u32,
    /// Unix milliseconds when the backup finished.
    pub created_at_ms: i64,
    /// The `mobius` version and build that wrote it.
    pub mobius_version: String,
    pub build_sha: String,
    /// SQLite databases, as paths relative to the data directory (the main one first).
    pub databases: Vec<String>,
    /// Regular files copied besides the databases, and their total size.
    pub files: u64,
    pub bytes: u64,
}

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
                let transient = rel.as_os_str().is_empty() && TRANSIENT_DIRS.iter().any(|d| name == *d);
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
async fn snapshot_database(src: &Path, dest: &Path) -> Result<(), BackupError> {
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

/// Copies one regular file, then gives it `mode`. `Ok(None)` when it vanished meanwhile.
fn copy_file(src: &Path, dest: &Path, mode: u32) -> Result<Option<u64>, BackupError> {
    match std::fs::copy(src, dest) {
        Ok(bytes) => {
            set_mode(dest, mode)?;
            Ok(Some(bytes))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && src.symlink_metadata().is_err() => Ok(None),
        Err(e) => Err(io_error(format!("cannot copy {} to", src.display()), dest)(e)),
    }
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

/// The loopback address to reach a server bound to `bind` from the same machine.
pub fn local_address(bind: SocketAddr) -> SocketAddr {
    let ip = match bind.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, bind.port())
}

/// GETs `path` from the server at `addr` (plain HTTP/1.0, no TLS) and returns the body of a
/// 200 answer; anything else is an error that says what came back.
pub fn probe(addr: SocketAddr, path: &str) -> Result<String, String> {
    let mut stream =
        TcpStream::connect_timeout(&addr, HEALTHCHECK_TIMEOUT).map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    let io = |e: std::io::Error| format!("no answer from {addr}: {e}");
    stream.set_read_timeout(Some(HEALTHCHECK_TIMEOUT)).map_err(io)?;
    stream.set_write_timeout(Some(HEALTHCHECK_TIMEOUT)).map_err(io)?;
    let request = format!(
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nUser-Agent: mobius-healthcheck\r\nAccept: application/json\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).map_err(io)?;
    let mut raw = Vec::new();
    stream.take(MAX_HEALTH_RESPONSE_BYTES).read_to_end(&mut raw).map_err(io)?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.lines().next().and_then(|line| line.split_whitespace().nth(1)).unwrap_or("");
    if status == "200" {
        Ok(body.to_owned())
    } else if status.is_empty() {
        Err(format!("{addr} did not answer with HTTP"))
    } else {
        Err(format!("GET {path} answered {status}: {}", body.trim()))
    }
}

/// Parsed `--name VALUE` / `--name=VALUE` options and flags.
#[derive(Debug, Default)]
struct Options {
    values: Vec<(String, String)>,
    flags: Vec<String>,
    positional: Vec<String>,
}

impl Options {
    fn parse(args: &[String], valued: &[&str]) -> Result<Self, String> {
        let mut out = Self::default();
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            if let Some((name, value)) = arg.split_once('=').filter(|(n, _)| n.starts_with("--")) {
                if !valued.contains(&name) {
                    return Err(format!("unknown option {name}"));
                }
                out.values.push((name.to_owned(), value.to_owned()));
            } else if valued.contains(&arg.as_str()) {
                let value = it.next().ok_or_else(|| format!("{arg} needs a value"))?;
                out.values.push((arg.clone(), value.clone()));
            } else if arg.starts_with('-') {
                out.flags.push(arg.clone());
            } else {
                out.positional.push(arg.clone());
            }
        }
        Ok(out)
    }

    fn value(&self, name: &str) -> Option<&str> {
        self.values.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn flag(&self, names: &[&str]) -> bool {
        self.flags.iter().any(|f| names.contains(&f.as_str()))
    }

    fn unknown_flag(&self, known: &[&str]) -> Option<&str> {
        self.flags.iter().map(String::as_str).find(|f| !known.contains(f))
    }
}

const BACKUP_HELP: &str = "mobius backup --to DIR
    Copies DATA_DIR (the server may be running) into DIR, a new or empty directory:
    SQLite databases as consistent snapshots, every other file with its mode.
";
const RESTORE_HELP: &str = "mobius restore --from BACKUP_DIR --to DATA_DIR [--force]
    Restores a backup into DATA_DIR, which must be empty or missing. Stop the server first.
    --force deletes the current contents of DATA_DIR before restoring.
";
const HEALTHCHECK_HELP: &str = "mobius healthcheck [PATH]
    GETs PATH (default /api/ready) from the server at MOBIUS_BIND on this machine, prints
    the answer and exits 0 when it is 200, else 1.
";

fn usage(help: &str, problem: Option<String>) -> ExitCode {
    match problem {
        Some(problem) => {
            eprintln!("mobius: {problem}\n\nusage: {help}");
            ExitCode::from(2)
        }
        None => {
            print!("{help}");
            ExitCode::SUCCESS
        }
    }
}

fn run_async<T>(work: impl std::future::Future<Output = Result<T, BackupError>>) -> Result<T, BackupError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| BackupError::Io { context: "cannot start the async runtime".into(), source: e })?
        .block_on(work)
}

fn describe(manifest: &Manifest) -> String {
    let db = match manifest.databases.len() {
        1 => "1 database".to_owned(),
        n => format!("{n} databases"),
    };
    format!("{db} and {} files ({:.1} MiB)", manifest.files, manifest.bytes as f64 / (1024.0 * 1024.0))
}

/// `mobius backup --to DIR`.
pub fn backup_command(args: &[String]) -> ExitCode {
    let options = match Options::parse(args, &["--to"]) {
        Ok(o) if o.flag(&["-h", "--help"]) => return usage(BACKUP_HELP, None),
        Ok(o) => o,
        Err(e) => return usage(BACKUP_HELP, Some(e)),
    };
    if let Some(flag) = options.unknown_flag(&[]) {
        return usage(BACKUP_HELP, Some(format!("unknown option {flag}")));
    }
    let Some(dest) = options.value("--to").map(PathBuf::from) else {
        return usage(BACKUP_HELP, Some("--to DIR is required".into()));
    };
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("mobius: {e}");
            return ExitCode::from(2);
        }
    };
    match run_async(backup(&config.data_dir, &dest)) {
        Ok(manifest) => {
            println!("backed up {} from {} to {}", describe(&manifest), config.data_dir.display(), dest.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mobius backup: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `mobius restore --from BACKUP_DIR --to DATA_DIR [--force]`.
pub fn restore_command(args: &[String]) -> ExitCode {
    let options = match Options::parse(args, &["--from", "--to"]) {
        Ok(o) if o.flag(&["-h", "--help"]) => return usage(RESTORE_HELP, None),
        Ok(o) => o,
        Err(e) => return usage(RESTORE_HELP, Some(e)),
    };
    if let Some(flag) = options.unknown_flag(&["--force"]) {
        return usage(RESTORE_HELP, Some(format!("unknown option {flag}")));
    }
    let (Some(from), Some(to)) = (options.value("--from"), options.value("--to")) else {
        return usage(RESTORE_HELP, Some("--from BACKUP_DIR and --to DATA_DIR are required".into()));
    };
    match run_async(restore(Path::new(from), Path::new(to), options.flag(&["--force"]))) {
        Ok(manifest) => {
            println!("restored {} from {from} into {to}", describe(&manifest));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mobius restore: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `mobius healthcheck [PATH]`: the container's `HEALTHCHECK`.
pub fn healthcheck_command(args: &[String]) -> ExitCode {
    let options = match Options::parse(args, &[]) {
        Ok(o) if o.flag(&["-h", "--help"]) => return usage(HEALTHCHECK_HELP, None),
        Ok(o) => o,
        Err(e) => return usage(HEALTHCHECK_HELP, Some(e)),
    };
    if let Some(flag) = options.unknown_flag(&[]) {
        return usage(HEALTHCHECK_HELP, Some(format!("unknown option {flag}")));
    }
    let path = options.positional.first().map_or("/api/ready", String::as_str);
    if !path.starts_with('/') || path.contains(char::is_whitespace) || options.positional.len() > 1 {
        return usage(HEALTHCHECK_HELP, Some(format!("{path:?} is not a path like /api/ready")));
    }
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("mobius: {e}");
            return ExitCode::from(2);
        }
    };
    match probe(local_address(config.bind), path) {
        Ok(body) => {
            println!("{}", body.trim_end());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mobius healthcheck: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn options_take_values_in_both_spellings_and_keep_flags_apart() {
        let o = Options::parse(&args(&["--from", "/b", "--to=/d", "--force"]), &["--from", "--to"]).expect("parse");
        assert_eq!(o.value("--from"), Some("/b"));
        assert_eq!(o.value("--to"), Some("/d"));
        assert!(o.flag(&["--force"]));
        assert_eq!(o.unknown_flag(&["--force"]), None);
        assert!(Options::parse(&args(&["--to"]), &["--to"]).is_err(), "a missing value is an error");
        assert!(Options::parse(&args(&["--bogus=1"]), &["--to"]).is_err());
    }

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

    #[test]
    fn the_probe_targets_loopback_for_a_wildcard_bind() {
        let v4: SocketAddr = "0.0.0.0:8000".parse().expect("addr");
        assert_eq!(local_address(v4).to_string(), "127.0.0.1:8000");
        let v6: SocketAddr = "[::]:8000".parse().expect("addr");
        assert_eq!(local_address(v6).to_string(), "[::1]:8000");
        let fixed: SocketAddr = "10.1.2.3:9000".parse().expect("addr");
        assert_eq!(local_address(fixed), fixed);
    }

    #[test]
    fn the_probe_reports_a_closed_port() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        let err = probe(SocketAddr::from(([127, 0, 0, 1], port)), "/api/ready").expect_err("nothing listens");
        assert!(err.contains("cannot connect"), "{err}");
    }
}
