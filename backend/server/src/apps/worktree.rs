//! The agent's app folders and the server's copies of them. `apps/<slug>/` belongs to the agent
//! (its sandbox writes it): libgit2 never opens it. Each app's repository lives in
//! `DATA_DIR/app-repos/<slug>/` (its `.git` and a copy of the worktree), out of the agent's
//! reach; [`copy_in`] brings the folder's regular files into that copy before git looks at it,
//! and [`copy_out`] writes back what a checkout changed. Both walk through `safe_fs`: no link
//! is followed (links are left out), no FIFO or device is opened, and the folder is bounded
//! ([`MAX_WORKTREE_BYTES`], [`MAX_WORKTREE_ENTRIES`]). Blocking: call from `spawn_blocking`.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::safe_fs::{self, Dir, Kind, Refused};

/// Where the apps' repositories live under `DATA_DIR`.
pub const REPOS_DIR: &str = "app-repos";
/// Where the agent's app folders live under `DATA_DIR`.
pub const APPS_DIR: &str = "apps";
/// Most bytes of regular files an app's folder may hold (what a fetch may bring).
pub const MAX_WORKTREE_BYTES: u64 = super::smart_http::MAX_FETCH_RESPONSE_BYTES;
/// Most files and folders an app's folder may hold.
pub const MAX_WORKTREE_ENTRIES: usize = 20_000;
/// Folders never copied: git's own, and what the platform keeps out of every app's history.
pub const SKIPPED_DIRS: &[&str] = &[".git", "node_modules", "dist", ".build", "__pycache__"];
/// Largest legacy `.git` folder moved out of an app's folder.
const MAX_LEGACY_GIT_BYTES: u64 = 512 * 1024 * 1024;
/// Most entries of a legacy `.git` folder.
const MAX_LEGACY_GIT_ENTRIES: usize = 200_000;
/// What of a legacy `.git` is never carried over: its config (replaced by the server's),
/// hooks, the index (rebuilt), links to other object stores and worktree pointers.
const LEGACY_GIT_SKIPPED: &[&str] =
    &["config", "hooks", "index", "info", "commondir", "gitdir", "worktrees", "modules"];
const LEGACY_OBJECTS_SKIPPED: &[&str] = &["alternates", "http-alternates"];

fn too_large() -> Error {
    Error::unprocessable(
        "source_too_large",
        format!(
            "The app's folder holds more than {} MiB or {MAX_WORKTREE_ENTRIES} files (node_modules and dist are left out).",
            MAX_WORKTREE_BYTES / (1024 * 1024)
        ),
    )
}

fn io_failed(what: &str) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| match safe_fs::refusal(&e) {
        Some(Refused::TooLarge(..) | Refused::TooManyEntries(..)) => too_large(),
        Some(refused) => Error::unprocessable("app_folder_unusable", format!("{what}: {refused}")),
        None => Error::Io(e),
    }
}

/// The server's copy of app `slug` (created when missing).
pub fn mirror_dir(data_dir: &Path, slug: &str) -> Result<Dir> {
    Ok(Dir::create_under(data_dir, &Path::new(REPOS_DIR).join(slug))?)
}

/// The agent's folder of app `slug`; `None` when there is no such plain folder.
pub fn folder(data_dir: &Path, slug: &str) -> Result<Option<Dir>> {
    match Dir::open_under(data_dir, &Path::new(APPS_DIR).join(slug)) {
        Ok(dir) => Ok(Some(dir)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound || safe_fs::refusal(&e).is_some() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// What a copy walked so far.
struct Budget {
    bytes: u64,
    entries: usize,
}

impl Budget {
    fn entry(&mut self) -> Result<()> {
        self.entries += 1;
        if self.entries > MAX_WORKTREE_ENTRIES { Err(too_large()) } else { Ok(()) }
    }

    fn bytes(&mut self, n: u64) -> Result<()> {
        self.bytes += n;
        if self.bytes > MAX_WORKTREE_BYTES { Err(too_large()) } else { Ok(()) }
    }
}

/// Makes the mirror's worktree (everything but `.git`) hold exactly the folder's regular files
/// and folders ([`SKIPPED_DIRS`] aside): changed files are written, missing ones removed.
/// Links, FIFOs, sockets and devices in the folder are left out.
pub fn copy_in(folder: &Dir, mirror: &Dir) -> Result<()> {
    let mut budget = Budget { bytes: 0, entries: 0 };
    copy_in_dir(folder, mirror, true, &mut budget)
}

fn copy_in_dir(from: &Dir, to: &Dir, top: bool, budget: &mut Budget) -> Result<()> {
    let entries = from.entries(MAX_WORKTREE_ENTRIES).map_err(io_failed("the app's folder"))?;
    let mut kept: BTreeSet<OsString> = BTreeSet::new();
    for entry in entries {
        let name = entry.name.as_os_str();
        if SKIPPED_DIRS.iter().any(|s| OsStr::new(s) == name) {
            continue;
        }
        match entry.kind {
            Kind::Dir => {
                budget.entry()?;
                let Ok(sub_from) = from.sub(Path::new(name)) else { continue };
                if to.kind(name)?.is_some_and(|k| k != Kind::Dir) {
                    to.remove_tree(name)?;
                }
                let sub_to = to.sub_or_create(Path::new(name))?;
                copy_in_dir(&sub_from, &sub_to, false, budget)?;
                kept.insert(entry.name);
            }
            Kind::File => {
                budget.entry()?;
                let room = MAX_WORKTREE_BYTES.saturating_sub(budget.bytes);
                let (bytes, mode) = match read_with_mode(from, name, room) {
                    Ok(read) => read,
                    Err(e) if matches!(safe_fs::refusal(&e), Some(Refused::TooLarge(..))) => return Err(too_large()),
                    // Swapped for a link or a FIFO meanwhile, or gone: left out.
                    Err(e) if safe_fs::refusal(&e).is_some() || e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(e.into()),
                };
                budget.bytes(bytes.len() as u64)?;
                put(to, name, &bytes, mode)?;
                kept.insert(entry.name);
            }
            Kind::Link | Kind::Special => {}
        }
    }
    for entry in to.entries(usize::MAX)? {
        let name = entry.name.as_os_str();
        if (top && name == ".git") || kept.contains(name) || SKIPPED_DIRS.iter().any(|s| OsStr::new(s) == name) {
            continue;
        }
        to.remove_tree(name)?;
    }
    Ok(())
}

fn read_with_mode(dir: &Dir, name: &OsStr, max: u64) -> std::io::Result<(Vec<u8>, u32)> {
    use std::io::Read;
    let (file, meta) = dir.open_file(Path::new(name))?;
    if meta.len() > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            Refused::TooLarge(name.to_string_lossy().into_owned(), max),
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            Refused::TooLarge(name.to_string_lossy().into_owned(), max),
        ));
    }
    Ok((bytes, meta.permissions().mode() & 0o777))
}

/// Writes `bytes` as `name` in `dir` unless a regular file with those bytes and mode is there.
fn put(dir: &Dir, name: &OsStr, bytes: &[u8], mode: u32) -> Result<()> {
    let same = match read_with_mode(dir, name, bytes.len() as u64) {
        Ok((current, current_mode)) => current == bytes && current_mode == mode,
        Err(_) => false,
    };
    if !same {
        if dir.kind(name)? == Some(Kind::Dir) {
            dir.remove_tree(name)?;
        }
        dir.write(name, bytes, mode)?;
    }
    Ok(())
}

/// The files of the mirror's worktree (`.git` aside), as relative paths.
pub fn files(mirror: &Dir) -> Result<BTreeSet<PathBuf>> {
    let mut out = BTreeSet::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        let dir = if rel.as_os_str().is_empty() { mirror.reopen()? } else { mirror.sub(&rel)? };
        for entry in dir.entries(usize::MAX)? {
            if rel.as_os_str().is_empty() && entry.name == ".git" {
                continue;
            }
            let path = rel.join(&entry.name);
            match entry.kind {
                Kind::Dir => pending.push(path),
                _ => {
                    out.insert(path);
                }
            }
        }
    }
    Ok(out)
}

/// Writes the mirror's files into the agent's folder (those that differ; whatever the folder
/// has at such a path — a link, a FIFO — is replaced, never written through) and removes from
/// it the paths in `removed` (files a checkout took away).
pub fn copy_out(mirror: &Dir, folder: &Dir, removed: &BTreeSet<PathBuf>) -> Result<()> {
    for rel in files(mirror)? {
        let (parent, name) = split(&rel);
        let source = if parent.as_os_str().is_empty() { mirror.reopen()? } else { mirror.sub(parent)? };
        let (bytes, mode) = read_with_mode(&source, name, MAX_WORKTREE_BYTES)?;
        let target = folder_dir(folder, parent)?;
        put(&target, name, &bytes, mode)?;
    }
    for rel in removed {
        let (parent, name) = split(rel);
        let target = if parent.as_os_str().is_empty() { folder.reopen() } else { folder.sub(parent) };
        if let Ok(target) = target {
            target.remove_tree(name)?;
        }
    }
    Ok(())
}

/// The folder `rel` of the agent's folder, created; a file or link in the way is removed.
fn folder_dir(folder: &Dir, rel: &Path) -> Result<Dir> {
    let mut dir = folder.reopen()?;
    for part in rel.iter() {
        if dir.kind(part)?.is_some_and(|k| k != Kind::Dir) {
            dir.remove_tree(part)?;
        }
        dir = dir.sub_or_create(Path::new(part))?;
    }
    Ok(dir)
}

fn split(rel: &Path) -> (&Path, &OsStr) {
    (rel.parent().unwrap_or(Path::new("")), rel.file_name().unwrap_or_default())
}

/// Moves the `.git` an app folder held before repositories moved out of the agent's reach into
/// the server's copy: only folders and regular files, within bounds, without its config, hooks
/// or anything pointing elsewhere; then removes it from the folder. `false` when there was none.
pub fn migrate_legacy_git(folder: &Dir, mirror: &Dir) -> Result<bool> {
    if folder.kind(OsStr::new(".git"))? != Some(Kind::Dir) {
        return Ok(false);
    }
    let from = folder.sub(Path::new(".git"))?;
    if mirror.kind(OsStr::new(".git"))?.is_some() {
        mirror.remove_tree(OsStr::new(".git"))?;
    }
    let to = mirror.sub_or_create(Path::new(".git"))?;
    let mut budget = (0u64, 0usize);
    copy_git(&from, &to, 0, &mut budget)?;
    to.write(
        OsStr::new("config"),
        b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = always\n",
        0o600,
    )?;
    folder.remove_tree(OsStr::new(".git"))?;
    Ok(true)
}

fn copy_git(from: &Dir, to: &Dir, depth: usize, budget: &mut (u64, usize)) -> Result<()> {
    let failed = |e: std::io::Error| io_failed("the app's old .git")(e);
    for entry in from.entries(MAX_LEGACY_GIT_ENTRIES).map_err(failed)? {
        let name = entry.name.as_os_str();
        let skipped: &[&str] = match depth {
            0 => LEGACY_GIT_SKIPPED,
            _ if from.path().ends_with("objects/info") => LEGACY_OBJECTS_SKIPPED,
            _ => &[],
        };
        if skipped.iter().any(|s| OsStr::new(s) == name) {
            continue;
        }
        budget.1 += 1;
        if budget.1 > MAX_LEGACY_GIT_ENTRIES {
            return Err(too_large());
        }
        match entry.kind {
            Kind::Dir if depth < 8 => {
                let sub_from = from.sub(Path::new(name)).map_err(failed)?;
                let sub_to = to.sub_or_create(Path::new(name))?;
                copy_git(&sub_from, &sub_to, depth + 1, budget)?;
            }
            Kind::File => {
                let room = MAX_LEGACY_GIT_BYTES.saturating_sub(budget.0);
                let (bytes, mode) = read_with_mode(from, name, room).map_err(failed)?;
                budget.0 += bytes.len() as u64;
                to.write(name, &bytes, mode | 0o600)?;
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn only_regular_files_come_in_and_what_a_checkout_changed_goes_out_without_following_links() {
        let tmp = tempfile::tempdir().expect("tmp");
        let data = tmp.path();
        std::fs::write(data.join("secret.key"), b"signing key").expect("secret");
        let app = data.join("apps/notes");
        std::fs::create_dir_all(app.join("src")).expect("app");
        std::fs::create_dir_all(app.join("node_modules/x")).expect("node_modules");
        std::fs::write(app.join("index.jsx"), b"export default 1").expect("index");
        std::fs::write(app.join("src/a.js"), b"a").expect("a");
        symlink(data.join("secret.key"), app.join("key.txt")).expect("link");
        symlink("/dev/zero", app.join(".gitignore")).expect("zero");
        nix::unistd::mkfifo(&app.join("pipe"), nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("fifo");
        let folder = folder(data, "notes").expect("folder").expect("exists");
        let mirror = mirror_dir(data, "notes").expect("mirror");
        copy_in(&folder, &mirror).expect("copy in");
        let copied = files(&mirror).expect("files");
        let want: BTreeSet<PathBuf> = ["index.jsx", "src/a.js"].iter().map(PathBuf::from).collect();
        assert_eq!(copied, want, "links, the FIFO and node_modules stay out");
        // A checkout changed a file and removed one; the agent meanwhile made src/a.js a link.
        let repo = data.join("app-repos/notes");
        std::fs::write(repo.join("index.jsx"), b"export default 2").expect("edit");
        std::fs::remove_file(app.join("src/a.js")).expect("rm");
        symlink(data.join("secret.key"), app.join("src/a.js")).expect("link");
        let removed: BTreeSet<PathBuf> = [PathBuf::from("src/a.js")].into_iter().collect();
        std::fs::remove_file(repo.join("src/a.js")).expect("rm in mirror");
        copy_out(&mirror, &folder, &removed).expect("copy out");
        assert_eq!(std::fs::read(app.join("index.jsx")).expect("index"), b"export default 2");
        assert!(std::fs::symlink_metadata(app.join("src/a.js")).is_err(), "the link was removed, not followed");
        assert_eq!(std::fs::read(data.join("secret.key")).expect("secret"), b"signing key");
        assert!(app.join("node_modules/x").is_dir(), "what never came in is left alone");
    }

    #[test]
    fn a_legacy_git_moves_out_without_its_config_hooks_or_links() {
        let tmp = tempfile::tempdir().expect("tmp");
        let data = tmp.path();
        let git = data.join("apps/a/.git");
        std::fs::create_dir_all(git.join("objects/info")).expect("objects");
        std::fs::create_dir_all(git.join("hooks")).expect("hooks");
        std::fs::create_dir_all(git.join("refs/heads")).expect("refs");
        std::fs::write(git.join("HEAD"), b"ref: refs/heads/main\n").expect("head");
        std::fs::write(git.join("config"), b"[core]\n\tworktree = /\n").expect("config");
        std::fs::write(git.join("hooks/post-commit"), b"#!/bin/sh\n").expect("hook");
        std::fs::write(git.join("objects/info/alternates"), b"/elsewhere\n").expect("alternates");
        symlink(data.join("secret.key"), git.join("packed-refs")).expect("link");
        let folder = folder(data, "a").expect("folder").expect("exists");
        let mirror = mirror_dir(data, "a").expect("mirror");
        assert!(migrate_legacy_git(&folder, &mirror).expect("migrate"));
        let moved = data.join("app-repos/a/.git");
        assert_eq!(std::fs::read(moved.join("HEAD")).expect("head"), b"ref: refs/heads/main\n");
        assert!(!std::fs::read_to_string(moved.join("config")).expect("config").contains("worktree"));
        assert!(!moved.join("hooks").exists() && !moved.join("objects/info/alternates").exists());
        assert!(std::fs::symlink_metadata(moved.join("packed-refs")).is_err());
        assert!(!git.exists(), "the folder no longer holds a repository");
        assert!(!migrate_legacy_git(&folder, &mirror).expect("again"));
    }
}
