//! Each app's source is its own git repository (git2): `upstream` holds released bytes as
//! installed, `main` is what is served (local edits on top). Blocking: call from
//! `spawn_blocking`.

use std::path::{Path, PathBuf};

use git2::{
    FetchOptions, IndexAddOption, ObjectType, Oid, RemoteRedirect, Repository, RepositoryInitOptions,
    RepositoryOpenFlags, Signature, Tree, build::CheckoutBuilder,
};

use super::smart_http::{self, FetchPolicy};
use crate::error::{Error, Result};

const NAME: &str = "Mobius";
const EMAIL: &str = "mobius@localhost";
const MAIN: &str = "refs/heads/main";
const UPSTREAM: &str = "refs/heads/upstream";
/// Entries the platform keeps out of every app's history.
const MANAGED_IGNORES: &[&str] = &["node_modules/", "dist/", ".build/", "*.bak", "__pycache__/", ".DS_Store"];

fn git_err(context: &str) -> impl Fn(git2::Error) -> Error + '_ {
    move |e| Error::unprocessable("source_repository_error", format!("{context}: {}", e.message()))
}

fn signature() -> Result<Signature<'static>> {
    Signature::now(NAME, EMAIL).map_err(git_err("git identity"))
}

/// Opens the repository at exactly `dir` (never a parent's), creating it with an empty root
/// commit shared by `upstream` and `main` when there is none.
pub fn open_or_init(dir: &Path) -> Result<Repository> {
    let ceiling = dir.parent().map(Path::to_path_buf).into_iter();
    if let Ok(repo) = Repository::open_ext(dir, RepositoryOpenFlags::NO_SEARCH, ceiling)
        && repo.workdir().is_some_and(|w| same_dir(w, dir))
    {
        return Ok(repo);
    }
    let mut opts = RepositoryInitOptions::new();
    opts.initial_head("main").no_reinit(false);
    let repo = Repository::init_opts(dir, &opts).map_err(git_err("creating the app's repository"))?;
    {
        let tree_id = repo.treebuilder(None).and_then(|b| b.write()).map_err(git_err("empty tree"))?;
        let tree = repo.find_tree(tree_id).map_err(git_err("empty tree"))?;
        let sig = signature()?;
        let root = repo.commit(None, &sig, &sig, "Start", &tree, &[]).map_err(git_err("root commit"))?;
        repo.reference(MAIN, root, true, "start").map_err(git_err("main branch"))?;
        repo.reference(UPSTREAM, root, true, "start").map_err(git_err("upstream branch"))?;
        repo.set_head(MAIN).map_err(git_err("HEAD"))?;
    }
    Ok(repo)
}

fn same_dir(a: &Path, b: &Path) -> bool {
    std::fs::canonicalize(a).ok().zip(std::fs::canonicalize(b).ok()).is_some_and(|(x, y)| x == y)
}

/// Makes sure the worktree's `.gitignore` carries the managed entries.
fn ensure_ignores(dir: &Path) -> Result<()> {
    let path = dir.join(".gitignore");
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    let missing: Vec<&str> =
        MANAGED_IGNORES.iter().copied().filter(|l| !current.lines().any(|c| c.trim() == *l)).collect();
    if !missing.is_empty() {
        let mut text = current;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        for line in missing {
            text.push_str(line);
            text.push('\n');
        }
        std::fs::write(path, text)?;
    }
    Ok(())
}

fn main_commit(repo: &Repository) -> Result<git2::Commit<'_>> {
    repo.find_reference(MAIN).and_then(|r| r.peel_to_commit()).map_err(git_err("reading main"))
}

/// Commits the worktree onto `main` when it differs from it. Returns the `main` commit and
/// whether a new commit was made.
pub fn commit_worktree(repo: &Repository, message: &str) -> Result<(Oid, bool)> {
    let dir = repo.workdir().ok_or_else(|| Error::Internal("bare app repository".into()))?.to_path_buf();
    ensure_ignores(&dir)?;
    let mut index = repo.index().map_err(git_err("index"))?;
    index.add_all(["*"], IndexAddOption::DEFAULT, None).map_err(git_err("staging the source"))?;
    index.update_all(["*"], None).map_err(git_err("staging removals"))?;
    index.write().map_err(git_err("index"))?;
    let tree_id = index.write_tree().map_err(git_err("writing the tree"))?;
    let parent = main_commit(repo)?;
    if parent.tree_id() == tree_id {
        return Ok((parent.id(), false));
    }
    let tree = repo.find_tree(tree_id).map_err(git_err("tree"))?;
    let sig = signature()?;
    let id = repo.commit(Some(MAIN), &sig, &sig, message, &tree, &[&parent]).map_err(git_err("committing"))?;
    Ok((id, true))
}

/// Writes the files of `commit` into the empty folder `dest` (symlinks are skipped).
pub fn export_commit(repo: &Repository, commit: Oid, dest: &Path) -> Result<()> {
    let tree = repo.find_commit(commit).and_then(|c| c.tree()).map_err(git_err("reading the commit"))?;
    export_tree(repo, &tree, dest)
}

fn export_tree(repo: &Repository, tree: &Tree<'_>, dest: &Path) -> Result<()> {
    std::fs::create_dir_all(dest)?;
    for entry in tree.iter() {
        let Some(name) = entry.name() else { continue };
        if name.contains('/') || name == ".." || name == "." {
            continue;
        }
        let path = dest.join(name);
        match entry.kind() {
            Some(ObjectType::Tree) => {
                let sub = repo.find_tree(entry.id()).map_err(git_err("tree"))?;
                export_tree(repo, &sub, &path)?;
            }
            Some(ObjectType::Blob) if entry.filemode() != 0o120000 => {
                let blob = repo.find_blob(entry.id()).map_err(git_err("blob"))?;
                std::fs::write(&path, blob.content())?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Reads one file of a commit's tree, if present.
pub fn read_file(repo: &Repository, commit: Oid, path: &str) -> Result<Option<Vec<u8>>> {
    let tree = repo.find_commit(commit).and_then(|c| c.tree()).map_err(git_err("reading the commit"))?;
    match tree.get_path(Path::new(path)) {
        Ok(entry) => {
            let blob = repo.find_blob(entry.id()).map_err(git_err("blob"))?;
            Ok(Some(blob.content().to_vec()))
        }
        Err(_) => Ok(None),
    }
}

/// Where an app comes from: a local folder (a git repository or plain files) or a URL.
#[derive(Debug, Clone)]
pub enum Source {
    Path(PathBuf),
    Url(String),
}

/// Brings the source's current release into `repo` and returns its commit (not yet on any
/// branch of ours). Plain folders are snapshotted as a commit on top of `upstream`. URLs are
/// fetched over `smart_http` under the public policy.
pub fn fetch_release(repo: &Repository, source: &Source) -> Result<Oid> {
    fetch_release_with(repo, source, &FetchPolicy::public())
}

/// [`fetch_release`] under `policy` (tests reach a loopback server with a looser one).
pub(super) fn fetch_release_with(repo: &Repository, source: &Source, policy: &FetchPolicy) -> Result<Oid> {
    // Before libgit2 may look up any transport, local ones included (see `register`).
    smart_http::register()?;
    let url = match source {
        // Other schemes would reach libgit2's own transports (git://), outside smart_http.
        Source::Url(url) if !url.starts_with("https://") && !url.starts_with("http://") => {
            return Err(super::ssrf::refused("only https:// URLs"));
        }
        Source::Url(url) => url.clone(),
        Source::Path(path) => {
            check_local_size(path)?;
            let is_repo =
                Repository::open_ext(path, RepositoryOpenFlags::NO_SEARCH, std::iter::empty::<&Path>()).is_ok();
            if !is_repo {
                return snapshot_plain_dir(repo, path);
            }
            path.display().to_string()
        }
    };
    let mut remote = repo.remote_anonymous(&url).map_err(git_err("the source"))?;
    let mut opts = FetchOptions::new();
    // Redirects are the transport's business (smart_http.rs); libgit2's own setting is moot.
    opts.follow_redirects(RemoteRedirect::None).depth(0);
    let mut fetch = || remote.fetch(&["+HEAD:refs/mobius/incoming"], Some(&mut opts), None);
    match source {
        Source::Url(_) => {
            let session = smart_http::Session::new(policy)?;
            session.run(fetch).map_err(|e| session.failure().unwrap_or_else(|| git_err("fetching the source")(e)))?;
        }
        Source::Path(_) => fetch().map_err(git_err("fetching the source"))?,
    }
    let incoming = repo
        .find_reference("refs/mobius/incoming")
        .and_then(|r| r.peel_to_commit())
        .map_err(git_err("the fetched release"))?;
    Ok(incoming.id())
}

/// Largest local folder an app is installed from, `.git` included (as much as a URL fetch may
/// bring).
pub const MAX_LOCAL_SOURCE_BYTES: u64 = smart_http::MAX_FETCH_RESPONSE_BYTES;
/// Most files and folders in it.
pub const MAX_LOCAL_SOURCE_ENTRIES: usize = 20_000;
/// Entries of a plain folder that never become part of an app.
const PLAIN_SKIPPED: &[&str] = &[".git", "node_modules"];

fn unreadable(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::bad_request("invalid_source", format!("Möbius cannot read {}: {e}", path.display()))
}

/// Refuses a local source over the size limits, walking it without following links and
/// stopping at the first limit crossed.
fn check_local_size(dir: &Path) -> Result<()> {
    let (mut bytes, mut entries) = (0u64, 0usize);
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).map_err(unreadable(&folder))? {
            let entry = entry.map_err(unreadable(&folder))?;
            let kind = entry.file_type().map_err(unreadable(&folder))?;
            entries += 1;
            if kind.is_dir() {
                folders.push(entry.path());
            } else if kind.is_file() {
                bytes += entry.metadata().map_err(unreadable(&folder))?.len();
            }
            if bytes > MAX_LOCAL_SOURCE_BYTES || entries > MAX_LOCAL_SOURCE_ENTRIES {
                return Err(Error::unprocessable(
                    "source_too_large",
                    format!(
                        "That folder holds more than {} MiB or {MAX_LOCAL_SOURCE_ENTRIES} files.",
                        MAX_LOCAL_SOURCE_BYTES / (1024 * 1024)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A plain folder becomes a commit whose parent is the current `upstream`: its regular files
/// (links and anything else skipped, and `.git` and `node_modules`), written into `repo`.
fn snapshot_plain_dir(repo: &Repository, dir: &Path) -> Result<Oid> {
    let tree_id = write_plain_tree(repo, dir)?;
    let tree = repo.find_tree(tree_id).map_err(git_err("tree"))?;
    let parent = repo.find_reference(UPSTREAM).and_then(|r| r.peel_to_commit()).map_err(git_err("upstream"))?;
    let sig = signature()?;
    repo.commit(None, &sig, &sig, "Release", &tree, &[&parent]).map_err(git_err("committing the release"))
}

fn write_plain_tree(repo: &Repository, dir: &Path) -> Result<Oid> {
    use std::os::unix::fs::PermissionsExt;
    let mut builder = repo.treebuilder(None).map_err(git_err("tree"))?;
    for entry in std::fs::read_dir(dir).map_err(unreadable(dir))? {
        let entry = entry.map_err(unreadable(dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str().filter(|n| !PLAIN_SKIPPED.contains(n)) else { continue };
        let kind = entry.file_type().map_err(unreadable(dir))?;
        let path = entry.path();
        if kind.is_dir() {
            let sub = write_plain_tree(repo, &path)?;
            if !repo.find_tree(sub).map_err(git_err("tree"))?.is_empty() {
                builder.insert(name, sub, 0o040000).map_err(git_err("tree"))?;
            }
        } else if kind.is_file() {
            let bytes = std::fs::read(&path).map_err(unreadable(&path))?;
            let blob = repo.blob(&bytes).map_err(git_err("storing a file"))?;
            let executable = entry.metadata().map_err(unreadable(&path))?.permissions().mode() & 0o111 != 0;
            builder.insert(name, blob, if executable { 0o100755 } else { 0o100644 }).map_err(git_err("tree"))?;
        }
    }
    builder.write().map_err(git_err("writing the tree"))
}

/// Points `main` and `upstream` at `release` and checks it out (a fresh install).
pub fn adopt_release(repo: &Repository, release: Oid) -> Result<()> {
    repo.reference(UPSTREAM, release, true, "install").map_err(git_err("upstream"))?;
    repo.reference(MAIN, release, true, "install").map_err(git_err("main"))?;
    checkout_main(repo)
}

fn checkout_main(repo: &Repository) -> Result<()> {
    repo.set_head(MAIN).map_err(git_err("HEAD"))?;
    let mut checkout = CheckoutBuilder::new();
    checkout.force().remove_untracked(false);
    repo.checkout_head(Some(&mut checkout)).map_err(git_err("checking out"))
}

/// What an update did.
#[derive(Debug)]
pub enum Update {
    /// The source has nothing new.
    UpToDate,
    /// `main` now holds the new release (with local edits replayed on top, if any).
    Applied(Oid),
    /// Local edits and the new release touch the same lines; nothing changed.
    Conflict(Vec<String>),
}

/// Takes the new release onto `upstream` and replays local edits on top as one single-parent
/// commit. Uncommitted edits in the worktree are committed to `main` first so nothing is lost.
pub fn update(repo: &Repository, release: Oid) -> Result<Update> {
    commit_worktree(repo, "Local edits")?;
    let old_upstream = repo.find_reference(UPSTREAM).and_then(|r| r.peel_to_commit()).map_err(git_err("upstream"))?;
    if old_upstream.id() == release {
        return Ok(Update::UpToDate);
    }
    let main = main_commit(repo)?;
    let new_release = repo.find_commit(release).map_err(git_err("release"))?;
    let new_main = if main.id() == old_upstream.id() {
        release
    } else {
        let base = old_upstream.tree().map_err(git_err("tree"))?;
        let ours = main.tree().map_err(git_err("tree"))?;
        let theirs = new_release.tree().map_err(git_err("tree"))?;
        let mut merged = repo.merge_trees(&base, &ours, &theirs, None).map_err(git_err("merging"))?;
        if merged.has_conflicts() {
            let mut paths: Vec<String> = merged
                .conflicts()
                .map_err(git_err("conflicts"))?
                .filter_map(|c| c.ok())
                .filter_map(|c| c.our.or(c.their).or(c.ancestor))
                .map(|e| String::from_utf8_lossy(&e.path).into_owned())
                .collect();
            paths.sort();
            paths.dedup();
            return Ok(Update::Conflict(paths));
        }
        let tree_id = merged.write_tree_to(repo).map_err(git_err("writing the merge"))?;
        let tree = repo.find_tree(tree_id).map_err(git_err("tree"))?;
        let sig = signature()?;
        repo.commit(None, &sig, &sig, "Local edits replayed on the new release", &tree, &[&new_release])
            .map_err(git_err("committing the update"))?
    };
    repo.reference(UPSTREAM, release, true, "update").map_err(git_err("upstream"))?;
    repo.reference(MAIN, new_main, true, "update").map_err(git_err("main"))?;
    checkout_main(repo)?;
    Ok(Update::Applied(new_main))
}

/// Where every applied commit is recorded (its reflog is the app's list of live versions).
const LIVE: &str = "refs/mobius/live";

/// Records `commit` as the version now being served.
pub fn mark_live(repo: &Repository, commit: Oid) -> Result<()> {
    if repo.find_reference(LIVE).ok().and_then(|r| r.target()) == Some(commit) {
        return Ok(());
    }
    // Keep a reflog for our own ref too (git logs only branches by default).
    repo.config()
        .and_then(|mut c| c.set_str("core.logAllRefUpdates", "always"))
        .map_err(git_err("repository config"))?;
    repo.reference(LIVE, commit, true, "applied").map_err(git_err("recording the live version"))?;
    Ok(())
}

/// Versions that were live, newest first (from the reflog of [`LIVE`]).
fn live_versions(repo: &Repository) -> Vec<Oid> {
    let Ok(log) = repo.reflog(LIVE) else { return Vec::new() };
    let mut seen = Vec::new();
    for entry in log.iter() {
        let id = entry.id_new();
        if !seen.contains(&id) {
            seen.push(id);
        }
    }
    seen
}

/// Moves `main` back to `target` — a version that was live before, or an earlier commit of
/// `main` — and checks it out. Without a target: the version live before the current one.
/// Returns the new `main`.
pub fn rollback(repo: &Repository, target: Option<&str>) -> Result<Oid> {
    commit_worktree(repo, "Local edits")?;
    let main = main_commit(repo)?;
    let live = live_versions(repo);
    let target = match target {
        Some(sha) => {
            Oid::from_str(sha).map_err(|_| Error::bad_request("invalid_commit", "That is not a commit id."))?
        }
        None => *live.get(1).ok_or_else(|| Error::conflict("nothing_to_undo", "This app has no earlier version."))?,
    };
    let earlier = live.contains(&target) || repo.graph_descendant_of(main.id(), target).map_err(git_err("history"))?;
    if !earlier {
        return Err(Error::bad_request("invalid_commit", "That commit is not an earlier version of this app."));
    }
    if repo.find_commit(target).map_err(git_err("history"))?.parent_count() == 0 {
        return Err(Error::conflict("nothing_to_undo", "This app has no earlier version."));
    }
    repo.reference(MAIN, target, true, "undo").map_err(git_err("main"))?;
    checkout_main(repo)?;
    Ok(target)
}

/// `(sha, message, time)` of `main`'s history, newest first.
pub fn history(repo: &Repository, limit: usize) -> Result<Vec<(String, String, i64)>> {
    let mut walk = repo.revwalk().map_err(git_err("history"))?;
    walk.push_ref(MAIN).map_err(git_err("history"))?;
    let mut out = Vec::new();
    for oid in walk.take(limit) {
        let oid = oid.map_err(git_err("history"))?;
        let commit = repo.find_commit(oid).map_err(git_err("history"))?;
        if commit.parent_count() == 0 {
            continue;
        }
        out.push((oid.to_string(), commit.summary().unwrap_or_default().to_owned(), commit.time().seconds() * 1000));
    }
    Ok(out)
}

/// The commit `upstream` points at.
pub fn upstream(repo: &Repository) -> Option<Oid> {
    repo.find_reference(UPSTREAM).ok().and_then(|r| r.target())
}
