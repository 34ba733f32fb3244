//! Platform updates of the shell's source: when the image's stock source is not the one the
//! owner's copy (`platform/shell/`) last took, the owner's edits are carried over as a three-way
//! merge onto the new stock.
//!
//! Everything git does here happens in the server's own bare repository
//! (`platform/shell-stock.git`, outside the agent's grant), whose `refs/heads/stock` is the
//! history of the stock sources this server took — its tip is the merge base. The owner's copy
//! is never opened with libgit2 (the agent writes its `.git`: a `core.worktree`, an `include`,
//! a hook or an alternate there would be trusted): its files are read through `safe_fs` into a
//! tree of the server's repository, merged in memory, and the result is written back through
//! `safe_fs`, file by file, as uncommitted changes of the owner's working tree. A conflicting
//! hunk is written between markers (`<<<<<<< your edits` / `>>>>>>> new stock`) for the agent
//! to resolve; the owner's repository itself is left as the agent keeps it. Blocking: call off
//! the async threads.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use git2::{IndexEntry, MergeFileOptions, Oid, Repository, RepositoryOpenFlags, Signature};

use super::source::{self, CopyError};
use crate::safe_fs::{Dir, Kind};

/// The history of the stock sources taken; its tip is what the owner's copy is based on.
pub const STOCK_REF: &str = "refs/heads/stock";
/// Largest part of one conflicting file quoted to the agent, and of all of them.
pub const MAX_QUOTED_CONFLICT_BYTES: usize = 16 * 1024;
pub const MAX_QUOTED_CONFLICTS_BYTES: usize = 64 * 1024;
/// The labels of the two sides in a conflicting file.
const OURS: &str = "your edits";
const THEIRS: &str = "new stock";

/// What a boot found and did.
#[derive(Debug, PartialEq, Eq)]
pub enum Update {
    /// The stock source is the one already taken.
    UpToDate,
    /// First run with a stock history: the current stock is recorded as the base.
    Recorded,
    /// The owner's copy had no edits: it is now the new stock.
    FastForwarded,
    /// The owner's edits were merged onto the new stock without conflict.
    Merged,
    /// Some files conflict; they were written with markers (`markers`), or one side was kept
    /// (`kept`: a file one side deleted and the other changed, or a binary file).
    Conflicted { markers: Vec<String>, kept: Vec<String> },
}

fn git_io(e: git2::Error) -> CopyError {
    CopyError::Io(std::io::Error::other(e.message().to_owned()))
}

/// Opens the server's repository, creating it (bare) the first time.
pub fn open_repo(path: &Path) -> Result<Repository, CopyError> {
    let ceiling = path.parent().into_iter();
    match Repository::open_ext(path, RepositoryOpenFlags::NO_SEARCH | RepositoryOpenFlags::BARE, ceiling) {
        Ok(repo) => Ok(repo),
        Err(_) => {
            let mut options = git2::RepositoryInitOptions::new();
            options.bare(true).initial_head("stock");
            Repository::init_opts(path, &options).map_err(git_io)
        }
    }
}

/// Takes the stock source in `stock` for the owner's copy in `shell` (the server's repository
/// at `repo`): see [`Update`]. `version`: the stock's name in its commit message.
pub fn reconcile(repo: &Path, stock: &Path, shell: &Dir, version: &str) -> Result<Update, CopyError> {
    let repo = open_repo(repo)?;
    let new_stock = source::tree_of(&repo, &Dir::open(stock)?, true)?;
    let who = Signature::now("Mobius", "mobius@localhost").map_err(git_io)?;
    let message = format!("Stock shell {version}");
    let tip = repo.find_reference(STOCK_REF).ok().and_then(|r| r.peel_to_commit().ok());
    let Some(tip) = tip else {
        // The owner's copy was seeded before this history existed (or just now): from the
        // stock this image carries, the best base there is.
        let tree = repo.find_tree(new_stock).map_err(git_io)?;
        repo.commit(Some(STOCK_REF), &who, &who, &message, &tree, &[]).map_err(git_io)?;
        return Ok(Update::Recorded);
    };
    if tip.tree_id() == new_stock {
        return Ok(Update::UpToDate);
    }
    let base = tip.tree().map_err(git_io)?;
    let ours_id = source::tree_of(&repo, shell, false)?;
    let ours = repo.find_tree(ours_id).map_err(git_io)?;
    let theirs = repo.find_tree(new_stock).map_err(git_io)?;
    let untouched = ours_id == base.id();
    let merged = repo.merge_trees(&base, &ours, &theirs, None).map_err(git_io)?;

    // What each file of the owner's copy is to hold.
    let mut wanted: BTreeMap<Vec<u8>, Content> = BTreeMap::new();
    for entry in merged.iter() {
        if stage_of(&entry) == 0 {
            wanted.insert(entry.path.clone(), Content::Blob(entry.id));
        }
    }
    let (mut markers, mut kept) = (Vec::new(), Vec::new());
    for conflict in merged.conflicts().map_err(git_io)? {
        let conflict = conflict.map_err(git_io)?;
        let (ancestor, our, their) = (conflict.ancestor, conflict.our, conflict.their);
        match (our, their) {
            (Some(our), Some(their)) if !binary(&repo, &our) && !binary(&repo, &their) => {
                let ancestor = match ancestor {
                    Some(a) => a,
                    None => empty_like(repo.blob(b"").map_err(git_io)?, &our),
                };
                let mut options = MergeFileOptions::new();
                options.our_label(OURS).their_label(THEIRS).style_standard(true);
                let file = repo.merge_file_from_index(&ancestor, &our, &their, Some(&mut options)).map_err(git_io)?;
                markers.push(shown(&our.path));
                wanted.insert(our.path.clone(), Content::Bytes(file.content().to_vec()));
            }
            (Some(our), _) => {
                kept.push(shown(&our.path));
                wanted.insert(our.path.clone(), Content::Blob(our.id));
            }
            (None, Some(their)) => kept.push(shown(&their.path)),
            (None, None) => {}
        }
    }
    let mut have: BTreeMap<Vec<u8>, Oid> = BTreeMap::new();
    ours.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
        if entry.kind() == Some(git2::ObjectType::Blob) {
            let mut path = root.as_bytes().to_vec();
            path.extend_from_slice(entry.name_bytes());
            have.insert(path, entry.id());
        }
        git2::TreeWalkResult::Ok
    })
    .map_err(git_io)?;
    apply(&repo, shell, &have, &wanted)?;
    let new_tip = repo.find_tree(new_stock).map_err(git_io)?;
    repo.commit(Some(STOCK_REF), &who, &who, &message, &new_tip, &[&tip]).map_err(git_io)?;
    Ok(if !markers.is_empty() || !kept.is_empty() {
        Update::Conflicted { markers, kept }
    } else if untouched {
        Update::FastForwarded
    } else {
        Update::Merged
    })
}

enum Content {
    Blob(Oid),
    Bytes(Vec<u8>),
}

/// An entry for `id` at `like`'s path (the empty ancestor of a file both sides added).
fn empty_like(id: Oid, like: &IndexEntry) -> IndexEntry {
    IndexEntry {
        ctime: git2::IndexTime::new(0, 0),
        mtime: git2::IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode: like.mode,
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        flags: 0,
        flags_extended: 0,
        path: like.path.clone(),
    }
}

fn stage_of(entry: &IndexEntry) -> u16 {
    (entry.flags >> 12) & 3
}

fn binary(repo: &Repository, entry: &IndexEntry) -> bool {
    !repo.find_blob(entry.id).is_ok_and(|b| !b.is_binary())
}

fn shown(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

/// Makes the owner's copy hold `wanted` where it held `have`: files gone from it removed, new
/// or changed ones written (renamed into place, never through a link), through `safe_fs`.
fn apply(
    repo: &Repository,
    shell: &Dir,
    have: &BTreeMap<Vec<u8>, Oid>,
    wanted: &BTreeMap<Vec<u8>, Content>,
) -> Result<(), CopyError> {
    for path in have.keys().filter(|p| !wanted.contains_key(*p)) {
        let (parent, name) = split(path);
        match shell.sub(parent) {
            Ok(dir) => {
                dir.remove_file(name)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    for (path, content) in wanted {
        let bytes = match content {
            Content::Blob(id) if have.get(path) == Some(id) => continue,
            Content::Blob(id) => repo.find_blob(*id).map_err(git_io)?.content().to_vec(),
            Content::Bytes(bytes) => bytes.clone(),
        };
        let (parent, name) = split(path);
        let dir = shell.sub_or_create(parent)?;
        if dir.kind(name)? == Some(Kind::Dir) {
            dir.remove_tree(name)?;
        }
        dir.write(name, &bytes, 0o644)?;
    }
    Ok(())
}

fn split(path: &[u8]) -> (&Path, &OsStr) {
    let path = Path::new(OsStr::from_bytes(path));
    (path.parent().unwrap_or(Path::new("")), path.file_name().unwrap_or_default())
}

/// True when `text` still holds a conflict marker at the start of a line.
pub fn has_markers(text: &[u8]) -> bool {
    text.split(|b| *b == b'\n').any(|line| line.starts_with(b"<<<<<<< ") || line.starts_with(b">>>>>>> "))
}

/// Which of `files` (paths in the owner's copy) still hold conflict markers.
pub fn unresolved(shell: &Dir, files: &[String]) -> Vec<String> {
    files
        .iter()
        .filter(|f| {
            shell
                .read_optional(Path::new(f.as_str()), source::MAX_SOURCE_BYTES)
                .ok()
                .flatten()
                .is_some_and(|b| has_markers(&b))
        })
        .cloned()
        .collect()
}

/// The conflicting files as they are now (bounded), for the resolver's first message.
pub fn quoted(shell: &Dir, files: &[String]) -> String {
    let mut out = String::new();
    let mut budget = MAX_QUOTED_CONFLICTS_BYTES;
    for file in files {
        let bytes = shell.read_optional(Path::new(file.as_str()), source::MAX_SOURCE_BYTES).ok().flatten();
        let mut text = String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned();
        let limit = MAX_QUOTED_CONFLICT_BYTES.min(budget);
        let cut = text.len() > limit;
        if cut {
            let mut at = limit;
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            text.truncate(at);
        }
        budget -= text.len();
        out.push_str(&format!("\n--- {file}{} ---\n{text}\n", if cut { " (cut short)" } else { "" }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Setup {
        _tmp: tempfile::TempDir,
        stock: std::path::PathBuf,
        data: std::path::PathBuf,
        repo: std::path::PathBuf,
    }

    impl Setup {
        fn new() -> Setup {
            let tmp = tempfile::tempdir().expect("tmp");
            let stock = tmp.path().join("stock");
            std::fs::create_dir_all(stock.join("src")).expect("mkdir");
            std::fs::write(stock.join("index.html"), "<title>stock</title>\n").expect("write");
            std::fs::write(stock.join("src/main.js"), "one\ntwo\nthree\nfour\nfive\n").expect("write");
            std::fs::write(stock.join("src/old.js"), "old\n").expect("write");
            let data = tmp.path().join("data");
            assert!(source::seed(&stock, &data, Path::new("platform/shell")).expect("seed"));
            let repo = data.join("platform/shell-stock.git");
            let setup = Setup { stock, data, repo, _tmp: tmp };
            assert_eq!(setup.reconcile(), Update::Recorded);
            setup
        }
        fn shell(&self) -> std::path::PathBuf {
            self.data.join("platform/shell")
        }
        fn reconcile(&self) -> Update {
            let shell = Dir::open(&self.shell()).expect("open");
            reconcile(&self.repo, &self.stock, &shell, "test").expect("reconcile")
        }
        fn read(&self, rel: &str) -> String {
            std::fs::read_to_string(self.shell().join(rel)).unwrap_or_default()
        }
    }

    #[test]
    fn an_untouched_copy_is_fast_forwarded_to_the_new_stock() {
        let s = Setup::new();
        assert_eq!(s.reconcile(), Update::UpToDate);
        std::fs::write(s.stock.join("src/main.js"), "one\ntwo\nTHREE\nfour\nfive\n").expect("write");
        std::fs::remove_file(s.stock.join("src/old.js")).expect("rm");
        std::fs::write(s.stock.join("src/new.js"), "new\n").expect("write");
        assert_eq!(s.reconcile(), Update::FastForwarded);
        assert_eq!(s.read("src/main.js"), "one\ntwo\nTHREE\nfour\nfive\n");
        assert!(!s.shell().join("src/old.js").exists(), "a file the stock dropped is gone");
        assert_eq!(s.read("src/new.js"), "new\n");
        assert_eq!(s.reconcile(), Update::UpToDate, "taken once");
    }

    #[test]
    fn edits_apart_from_the_stock_change_are_merged_and_kept() {
        let s = Setup::new();
        std::fs::write(s.shell().join("src/main.js"), "ONE\ntwo\nthree\nfour\nfive\n").expect("edit");
        std::fs::write(s.shell().join("src/mine.js"), "mine\n").expect("add");
        std::fs::write(s.stock.join("src/main.js"), "one\ntwo\nthree\nfour\nFIVE\n").expect("write");
        assert_eq!(s.reconcile(), Update::Merged);
        assert_eq!(s.read("src/main.js"), "ONE\ntwo\nthree\nfour\nFIVE\n");
        assert_eq!(s.read("src/mine.js"), "mine\n");
    }

    #[test]
    fn edits_of_the_same_lines_are_left_between_markers() {
        let s = Setup::new();
        std::fs::write(s.shell().join("src/main.js"), "one\ntwo\nmine\nfour\nfive\n").expect("edit");
        std::fs::write(s.shell().join("src/old.js"), "old, edited\n").expect("edit");
        std::fs::write(s.stock.join("src/main.js"), "one\ntwo\ntheirs\nfour\nfive\n").expect("write");
        std::fs::remove_file(s.stock.join("src/old.js")).expect("rm");
        let Update::Conflicted { markers, kept } = s.reconcile() else { panic!("not a conflict") };
        assert_eq!((markers, kept), (vec!["src/main.js".to_owned()], vec!["src/old.js".to_owned()]));
        let text = s.read("src/main.js");
        assert!(text.contains("<<<<<<< your edits\nmine\n=======\ntheirs\n>>>>>>> new stock"), "{text}");
        assert_eq!(s.read("src/old.js"), "old, edited\n", "the owner's edit of a file the stock dropped stays");
        let shell = Dir::open(&s.shell()).expect("open");
        assert_eq!(unresolved(&shell, &["src/main.js".into()]), vec!["src/main.js".to_owned()]);
        std::fs::write(s.shell().join("src/main.js"), "one\ntwo\nmine and theirs\nfour\nfive\n").expect("resolve");
        assert!(unresolved(&shell, &["src/main.js".into()]).is_empty());
    }

    #[test]
    fn the_owner_repository_s_config_and_hooks_are_never_read_or_run() {
        let s = Setup::new();
        let elsewhere = s.data.join("elsewhere");
        std::fs::create_dir_all(&elsewhere).expect("mkdir");
        let git = s.shell().join(".git");
        std::fs::write(
            git.join("config"),
            format!("[core]\n\tworktree = {}\n\tbare = true\n[include]\n\tpath = /nonexistent\n", elsewhere.display()),
        )
        .expect("config");
        let ran = s.data.join("hook-ran");
        for hook in ["post-checkout", "post-merge", "pre-commit", "post-commit", "reference-transaction"] {
            let path = git.join("hooks").join(hook);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, format!("#!/bin/sh\ntouch {}\n", ran.display())).expect("hook");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        std::fs::write(s.shell().join("src/mine.js"), "mine\n").expect("add");
        std::fs::write(s.stock.join("src/main.js"), "one\ntwo\nthree\nfour\nFIVE\n").expect("write");
        assert_eq!(s.reconcile(), Update::Merged);
        assert!(s.read("src/main.js").contains("FIVE"), "merged into the real working tree");
        assert_eq!(std::fs::read_dir(&elsewhere).expect("read").count(), 0, "core.worktree was not followed");
        assert!(!ran.exists(), "no hook ran");
        assert!(std::fs::read_to_string(git.join("config")).expect("config").contains("worktree"), "left as it was");
    }
}
