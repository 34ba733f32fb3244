//! Each app's source is its own git repository (git2): `upstream` holds released bytes as
//! installed, `main` is what is served (local edits on top). An app's repository is the
//! server's ([`AppRepo`]: `DATA_DIR/app-repos/<slug>/`, out of the agent's reach); the agent's
//! folder `apps/<slug>/` is its worktree only through `worktree.rs` (copied in before git
//! reads it, written back after a checkout, never opened by libgit2). Blocking: call from
//! `spawn_blocking`.

use std::collections::BTreeSet;
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

/// A repository with the worktree the server works in: an app's (its folder mirrored, see
/// the module doc) or a staging one of the server's own.
pub struct AppRepo {
    repo: Repository,
    /// The app's folder this repository's worktree mirrors: `(data_dir, slug)`.
    folder: Option<(PathBuf, String)>,
}

impl std::ops::Deref for AppRepo {
    type Target = Repository;
    fn deref(&self) -> &Repository {
        &self.repo
    }
}

impl AppRepo {
    /// App `slug`'s repository (in `DATA_DIR/app-repos/<slug>`, created when missing).
    pub fn open(data_dir: &Path, slug: &str) -> Result<AppRepo> {
        super::worktree::mirror_dir(data_dir, slug)?;
        let repo = open_or_init(&data_dir.join(super::worktree::REPOS_DIR).join(slug))?;
        Ok(AppRepo { repo, folder: Some((data_dir.to_path_buf(), slug.to_owned())) })
    }

    /// A repository of the server's own whose worktree is the only one (install staging).
    pub fn plain(repo: Repository) -> AppRepo {
        AppRepo { repo, folder: None }
    }

    /// The repository itself.
    pub fn into_inner(self) -> Repository {
        self.repo
    }

    fn mirror(&self) -> Result<crate::safe_fs::Dir> {
        let dir = self.repo.workdir().ok_or_else(|| Error::Internal("bare app repository".into()))?;
        Ok(crate::safe_fs::Dir::open(dir)?)
    }

    /// Brings the app folder's files into the worktree git reads.
    fn pull(&self) -> Result<()> {
        let Some((data_dir, slug)) = &self.folder else { return Ok(()) };
        let Some(folder) = super::worktree::folder(data_dir, slug)? else {
            return Err(Error::not_found(
                "app_source_missing",
                format!("There is no folder apps/{slug}/ with the app's mobius.json and index.jsx."),
            ));
        };
        super::worktree::copy_in(&folder, &self.mirror()?)
    }

    /// The worktree's files now (to tell what a checkout removes).
    fn snapshot(&self) -> Result<BTreeSet<PathBuf>> {
        if self.folder.is_none() {
            return Ok(BTreeSet::new());
        }
        super::worktree::files(&self.mirror()?)
    }

    /// Writes what a checkout changed (`before`: the files before it) into the app's folder.
    fn push(&self, before: &BTreeSet<PathBuf>) -> Result<()> {
        let Some((data_dir, slug)) = &self.folder else { return Ok(()) };
        let mirror = self.mirror()?;
        let after = super::worktree::files(&mirror)?;
        let removed: BTreeSet<PathBuf> = before.difference(&after).cloned().collect();
        let folder = crate::safe_fs::Dir::create_under(data_dir, &Path::new(super::worktree::APPS_DIR).join(slug))?;
        super::worktree::copy_out(&mirror, &folder, &removed)
    }

    /// Checks `f` out in the worktree, then writes the result into the app's folder.
    fn checkout(&self, f: impl FnOnce(&Repository) -> Result<()>) -> Result<()> {
        let before = self.snapshot()?;
        f(&self.repo)?;
        self.push(&before)
    }
}

/// Where an app's repository is (to open it on a blocking thread).
#[derive(Debug, Clone)]
pub struct RepoRef {
    data_dir: PathBuf,
    slug: String,
}

impl RepoRef {
    pub fn new(data_dir: &Path, slug: &str) -> Self {
        Self { data_dir: data_dir.to_path_buf(), slug: slug.to_owned() }
    }

    /// Opens the repository (blocking).
    pub fn open(&self) -> Result<AppRepo> {
        AppRepo::open(&self.data_dir, &self.slug)
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    std::fs::canonicalize(a).ok().zip(std::fs::canonicalize(b).ok()).is_some_and(|(x, y)| x == y)
}

/// Makes sure the worktree's `.gitignore` carries the managed entries (the worktree is the
/// server's: an app's copy or a staging folder). `true` when it had to change.
fn ensure_ignores(dir: &Path) -> Result<bool> {
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
        return Ok(true);
    }
    Ok(false)
}

fn main_commit(repo: &Repository) -> Result<git2::Commit<'_>> {
    repo.find_reference(MAIN).and_then(|r| r.peel_to_commit()).map_err(git_err("reading main"))
}

/// Commits the worktree (for an app: its folder, copied in first) onto `main` when it differs
/// from it. Returns the `main` commit and whether a new commit was made.
pub fn commit_worktree(app: &AppRepo, message: &str) -> Result<(Oid, bool)> {
    app.pull()?;
    let repo = &app.repo;
    let dir = repo.workdir().ok_or_else(|| Error::Internal("bare app repository".into()))?.to_path_buf();
    if ensure_ignores(&dir)? && app.folder.is_some() {
        // The agent sees the managed lines in its folder too.
        app.push(&BTreeSet::new())?;
    }
    let mut index = repo.index().map_err(git_err("index"))?;
    index.add_all(["*"], IndexAddOption::DEFAULT, None).map_err(git_err("staging the source"))?;
    index.update_all(["*"], None).map_err(git_err("staging removals"))?;
    index.write().map_err(git_err("index"))?;
    let tree_id = index.write_tree().map_err(git_err("writing the tree"))?;
    let tree = repo.find_tree(tree_id).map_err(git_err("tree"))?;
    if let Some(release) = resolving(repo) {
        // An update's conflict was being resolved: once no marker is left, the result stands on
        // the release as one single-parent commit, and the release is taken.
        let unresolved = files_with_markers(repo, &tree);
        if !unresolved.is_empty() {
            return Err(Error::conflict(
                "update_unresolved",
                format!("Conflict markers are still in: {}. Resolve them, then apply again.", unresolved.join(", ")),
            ));
        }
        let release = repo.find_commit(release).map_err(git_err("the release being resolved"))?;
        let sig = signature()?;
        let id = repo
            .commit(None, &sig, &sig, "Local edits resolved on the new release", &tree, &[&release])
            .map_err(git_err("committing"))?;
        repo.reference(UPSTREAM, release.id(), true, "update resolved").map_err(git_err("upstream"))?;
        repo.reference(MAIN, id, true, "update resolved").map_err(git_err("main"))?;
        repo.find_reference(RESOLVING).and_then(|mut r| r.delete()).map_err(git_err("the release being resolved"))?;
        return Ok((id, true));
    }
    let parent = main_commit(repo)?;
    if parent.tree_id() == tree_id {
        return Ok((parent.id(), false));
    }
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

/// A file of a commit on an app repository's `main`, as `/api/storage/shared-git` serves it.
#[derive(Debug)]
pub struct MainBlob {
    /// The commit read (the one asked for, or `main`'s tip).
    pub commit: String,
    /// The blob's id (its content address).
    pub blob: String,
    pub bytes: Vec<u8>,
}

/// Reads `file` of `revision` (a full commit id, which must be `main` or one of its ancestors;
/// `None`: `main`'s tip) in the repository at `dir`, at most `max` bytes. `Ok(None)` when the
/// repository, the commit (on `main`) or the file is not there.
pub fn main_blob(dir: &Path, revision: Option<&str>, file: &str, max: usize) -> Result<Option<MainBlob>> {
    let ceiling = dir.parent().map(Path::to_path_buf).into_iter();
    let Ok(repo) = Repository::open_ext(dir, RepositoryOpenFlags::NO_SEARCH, ceiling) else { return Ok(None) };
    let Some(main) = repo.refname_to_id(MAIN).ok() else { return Ok(None) };
    let commit = match revision {
        None => main,
        Some(rev) => {
            let Ok(oid) = Oid::from_str(rev) else { return Ok(None) };
            let on_main = oid == main || repo.graph_descendant_of(main, oid).unwrap_or(false);
            if !on_main {
                return Ok(None);
            }
            oid
        }
    };
    let tree = match repo.find_commit(commit).and_then(|c| c.tree()) {
        Ok(tree) => tree,
        Err(_) => return Ok(None),
    };
    let Ok(entry) = tree.get_path(Path::new(file)) else { return Ok(None) };
    if entry.kind() != Some(git2::ObjectType::Blob) {
        return Ok(None);
    }
    let blob = repo.find_blob(entry.id()).map_err(git_err("blob"))?;
    if blob.size() > max {
        return Err(Error::too_large(
            "too_large",
            format!("{file} is larger than {} MiB, the most this route reads.", max / (1024 * 1024)),
        ));
    }
    Ok(Some(MainBlob { commit: commit.to_string(), blob: entry.id().to_string(), bytes: blob.content().to_vec() }))
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
pub fn adopt_release(app: &AppRepo, release: Oid) -> Result<()> {
    app.reference(UPSTREAM, release, true, "install").map_err(git_err("upstream"))?;
    app.reference(MAIN, release, true, "install").map_err(git_err("main"))?;
    checkout_main(app)
}

fn checkout_main(app: &AppRepo) -> Result<()> {
    app.checkout(|repo| {
        repo.set_head(MAIN).map_err(git_err("HEAD"))?;
        let mut checkout = CheckoutBuilder::new();
        checkout.force().remove_untracked(false);
        repo.checkout_head(Some(&mut checkout)).map_err(git_err("checking out"))
    })
}

/// What taking a release would do, worked out without moving any branch.
#[derive(Debug)]
pub enum Plan {
    /// The source has nothing new.
    UpToDate,
    /// `main` would become this commit: the release itself, or the owner's local edits
    /// replayed on it as one single-parent commit (not on any branch yet).
    Ready(Oid),
    /// Local edits and the release change the same lines in these files.
    Conflict(Vec<String>),
}

fn upstream_commit(repo: &Repository) -> Result<git2::Commit<'_>> {
    repo.find_reference(UPSTREAM).and_then(|r| r.peel_to_commit()).map_err(git_err("upstream"))
}

/// Works out how `release` would be taken (uncommitted edits in the worktree are committed to
/// `main` first so nothing is lost). Nothing the app serves changes.
pub fn plan_update(app: &AppRepo, release: Oid) -> Result<Plan> {
    commit_worktree(app, "Local edits")?;
    let repo = &app.repo;
    let old_upstream = upstream_commit(repo)?;
    let new_release = repo.find_commit(release).map_err(git_err("release"))?;
    if old_upstream.id() == release || old_upstream.tree_id() == new_release.tree_id() {
        return Ok(Plan::UpToDate);
    }
    let main = main_commit(repo)?;
    if main.tree_id() == old_upstream.tree_id() {
        return Ok(Plan::Ready(release));
    }
    let mut merged = merge_with_upstream(repo, &old_upstream, &main, &new_release)?;
    if merged.has_conflicts() {
        return Ok(Plan::Conflict(conflict_paths(&merged)?));
    }
    let tree_id = merged.write_tree_to(repo).map_err(git_err("writing the merge"))?;
    let tree = repo.find_tree(tree_id).map_err(git_err("tree"))?;
    let sig = signature()?;
    let replayed = repo
        .commit(None, &sig, &sig, "Local edits replayed on the new release", &tree, &[&new_release])
        .map_err(git_err("committing the update"))?;
    Ok(Plan::Ready(replayed))
}

fn merge_with_upstream(
    repo: &Repository,
    base: &git2::Commit<'_>,
    ours: &git2::Commit<'_>,
    theirs: &git2::Commit<'_>,
) -> Result<git2::Index> {
    let base = base.tree().map_err(git_err("tree"))?;
    let ours = ours.tree().map_err(git_err("tree"))?;
    let theirs = theirs.tree().map_err(git_err("tree"))?;
    repo.merge_trees(&base, &ours, &theirs, None).map_err(git_err("merging"))
}

fn conflict_paths(index: &git2::Index) -> Result<Vec<String>> {
    let mut paths: Vec<String> = index
        .conflicts()
        .map_err(git_err("conflicts"))?
        .filter_map(|c| c.ok())
        .filter_map(|c| c.our.or(c.their).or(c.ancestor))
        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// Takes a planned release: `upstream` becomes `release`, `main` becomes `new_main`, and the
/// worktree follows.
pub fn finish_update(app: &AppRepo, release: Oid, new_main: Oid) -> Result<()> {
    app.reference(UPSTREAM, release, true, "update").map_err(git_err("upstream"))?;
    app.reference(MAIN, new_main, true, "update").map_err(git_err("main"))?;
    checkout_main(app)
}

/// Where a release that conflicts with local edits waits while they are resolved.
const RESOLVING: &str = "refs/mobius/resolving";
/// Largest part of one conflicting file quoted to the resolver, and of all of them.
const MAX_QUOTED_CONFLICT_BYTES: usize = 16 * 1024;
const MAX_QUOTED_CONFLICTS_BYTES: usize = 64 * 1024;

/// A file the owner's edits and a release both changed, as the worktree now holds it (with
/// conflict markers; cut at [`MAX_QUOTED_CONFLICT_BYTES`]).
#[derive(Debug, Clone, serde::Serialize)]
pub struct ConflictFile {
    pub path: String,
    pub text: String,
    pub truncated: bool,
}

/// The release whose conflict is being resolved, if any.
pub fn resolving(repo: &Repository) -> Option<Oid> {
    repo.find_reference(RESOLVING).ok().and_then(|r| r.target())
}

/// Writes the merge of `release` into the worktree, conflicting hunks between markers, and
/// remembers the release: the next apply of the worktree completes the update (see
/// [`commit_worktree`]). What is served does not change. Returns the conflicting files.
pub fn begin_resolution(app: &AppRepo, release: Oid) -> Result<Vec<ConflictFile>> {
    commit_worktree(app, "Local edits")?;
    let repo = &app.repo;
    let old_upstream = upstream_commit(repo)?;
    let main = main_commit(repo)?;
    let new_release = repo.find_commit(release).map_err(git_err("release"))?;
    let mut merged = merge_with_upstream(repo, &old_upstream, &main, &new_release)?;
    let paths = conflict_paths(&merged)?;
    app.checkout(|repo| {
        let mut checkout = CheckoutBuilder::new();
        checkout.force().allow_conflicts(true).conflict_style_merge(true);
        repo.checkout_index(Some(&mut merged), Some(&mut checkout)).map_err(git_err("writing the merge"))
    })?;
    repo.reference(RESOLVING, release, true, "resolving").map_err(git_err("recording the release"))?;
    let dir = repo.workdir().ok_or_else(|| Error::Internal("bare app repository".into()))?.to_path_buf();
    let mut budget = MAX_QUOTED_CONFLICTS_BYTES;
    Ok(paths
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(dir.join(&path)).unwrap_or_default();
            let limit = MAX_QUOTED_CONFLICT_BYTES.min(budget);
            let mut text = String::from_utf8_lossy(&bytes).into_owned();
            let truncated = text.len() > limit;
            if truncated {
                let mut cut = limit;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
            }
            budget -= text.len();
            ConflictFile { path, text, truncated }
        })
        .collect())
}

/// Gives up a resolution in progress: the worktree goes back to `main`.
pub fn abandon_resolution(app: &AppRepo) -> Result<()> {
    if resolving(app).is_none() {
        return Ok(());
    }
    app.find_reference(RESOLVING).and_then(|mut r| r.delete()).map_err(git_err("the release being resolved"))?;
    checkout_main(app)
}

/// True when `text` still holds a conflict marker at the start of a line.
fn has_conflict_markers(text: &[u8]) -> bool {
    text.split(|b| *b == b'\n').any(|line| line.starts_with(b"<<<<<<< ") || line.starts_with(b">>>>>>> "))
}

/// The files of `tree` (recursively) that still hold conflict markers.
fn files_with_markers(repo: &Repository, tree: &Tree<'_>) -> Vec<String> {
    let mut found = Vec::new();
    let _ = tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
        if entry.kind() == Some(ObjectType::Blob)
            && let Ok(blob) = repo.find_blob(entry.id())
            && !blob.is_binary()
            && has_conflict_markers(blob.content())
        {
            found.push(format!("{root}{}", entry.name().unwrap_or_default()));
        }
        git2::TreeWalkResult::Ok
    });
    found
}

/// Where every applied commit is recorded (its reflog is the app's list of live versions).
const LIVE: &str = "refs/mobius/live";

/// Records `commit` as the version now being served, saying why (`install`, `update`,
/// `restore`, `apply`) and which release it stood on (so a restore can stand on it again).
pub fn mark_live(repo: &Repository, commit: Oid, why: &str) -> Result<()> {
    if repo.find_reference(LIVE).ok().and_then(|r| r.target()) == Some(commit) {
        return Ok(());
    }
    // Keep a reflog for our own ref too (git logs only branches by default).
    repo.config()
        .and_then(|mut c| c.set_str("core.logAllRefUpdates", "always"))
        .map_err(git_err("repository config"))?;
    let on = upstream(repo).map(|u| u.to_string()).unwrap_or_default();
    repo.reference(LIVE, commit, true, &format!("{why} upstream={on}"))
        .map_err(git_err("recording the live version"))?;
    Ok(())
}

/// One version that was live: its commit, when it went live, why, and the release it stood on.
#[derive(Debug, Clone)]
pub struct LiveVersion {
    pub commit: Oid,
    pub at_ms: i64,
    pub why: String,
    pub upstream: Option<Oid>,
}

/// Versions that went live, newest first (from the reflog of [`LIVE`]), each once (its latest).
fn live_versions(repo: &Repository) -> Vec<LiveVersion> {
    let Ok(log) = repo.reflog(LIVE) else { return Vec::new() };
    let mut seen: Vec<LiveVersion> = Vec::new();
    for entry in log.iter() {
        let commit = entry.id_new();
        if commit.is_zero() || seen.iter().any(|v| v.commit == commit) {
            continue;
        }
        let message = entry.message().unwrap_or_default();
        let (why, on) = message.split_once(" upstream=").unwrap_or((message, ""));
        seen.push(LiveVersion {
            commit,
            at_ms: entry.committer().when().seconds() * 1000,
            why: why.to_owned(),
            upstream: Oid::from_str(on).ok(),
        });
    }
    seen
}

/// A restore worked out without moving any branch: the commit `main` would become (the
/// earlier version's files on top of the current `main`, so nothing is lost) and the release
/// `upstream` goes back to (what that version stood on).
#[derive(Debug, Clone, Copy)]
pub struct RestorePlan {
    pub commit: Oid,
    pub upstream: Oid,
}

/// Plans a restore of `target` — a version that was live before, or an earlier commit of
/// `main` — or, without a target, of the version live before the current one. Uncommitted
/// edits are committed first; a resolution in progress is given up.
pub fn plan_restore(app: &AppRepo, target: Option<&str>) -> Result<RestorePlan> {
    abandon_resolution(app)?;
    commit_worktree(app, "Local edits")?;
    let repo = &app.repo;
    let main = main_commit(repo)?;
    let live = live_versions(repo);
    let target = match target {
        Some(sha) => {
            Oid::from_str(sha).map_err(|_| Error::bad_request("invalid_commit", "That is not a commit id."))?
        }
        None => live
            .get(1)
            .map(|v| v.commit)
            .ok_or_else(|| Error::conflict("nothing_to_undo", "This app has no earlier version."))?,
    };
    let known = live.iter().find(|v| v.commit == target);
    let exists = repo.find_commit(target).is_ok();
    let earlier = exists && (known.is_some() || repo.graph_descendant_of(main.id(), target).unwrap_or(false));
    let found = repo.find_commit(target).ok().filter(|_| earlier);
    let Some(version) = found else {
        return Err(Error::bad_request("invalid_commit", "That commit is not an earlier version of this app."));
    };
    if version.parent_count() == 0 {
        return Err(Error::conflict("nothing_to_undo", "This app has no earlier version."));
    }
    let current = upstream_commit(repo)?;
    let upstream = match known.and_then(|v| v.upstream) {
        Some(on) if repo.find_commit(on).is_ok() => on,
        _ => repo.merge_base(target, current.id()).unwrap_or(current.id()),
    };
    let tree = version.tree().map_err(git_err("tree"))?;
    let sig = signature()?;
    let when = utc_date(version.time().seconds());
    let commit = repo
        .commit(None, &sig, &sig, &format!("Restore the version of {when}"), &tree, &[&main])
        .map_err(git_err("committing the restore"))?;
    Ok(RestorePlan { commit, upstream })
}

/// A commit time as `YYYY-MM-DD HH:MM UTC` (a time past jiff's range, ±9999 years, as the epoch).
fn utc_date(secs: i64) -> String {
    let at = jiff::Timestamp::from_second(secs).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    at.strftime("%Y-%m-%d %H:%M UTC").to_string()
}

/// Takes a planned restore: `main` and `upstream` move and the worktree follows.
pub fn finish_restore(app: &AppRepo, plan: RestorePlan) -> Result<()> {
    app.reference(UPSTREAM, plan.upstream, true, "restore").map_err(git_err("upstream"))?;
    app.reference(MAIN, plan.commit, true, "restore").map_err(git_err("main"))?;
    checkout_main(app)
}

/// One entry of an app's version history.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HistoryEntry {
    pub commit: String,
    /// When it went live (unix ms).
    pub at: i64,
    /// `install`, `update`, `restore` or `apply` (an edit built here).
    pub kind: String,
    /// The commit's own summary.
    pub message: String,
    /// `version` of its `mobius.json`.
    pub version: Option<String>,
    /// Files changed since the version before it (at most [`MAX_HISTORY_FILES`] named).
    pub files: Vec<String>,
    pub files_changed: usize,
}

/// Files named per history entry.
pub const MAX_HISTORY_FILES: usize = 20;

/// The versions that went live, newest first, at most `limit`.
pub fn history(repo: &Repository, limit: usize) -> Result<Vec<HistoryEntry>> {
    let live = live_versions(repo);
    let mut out = Vec::new();
    for (i, version) in live.iter().take(limit).enumerate() {
        let Ok(commit) = repo.find_commit(version.commit) else { continue };
        let tree = commit.tree().ok();
        let before = live.get(i + 1).and_then(|v| repo.find_commit(v.commit).ok()).and_then(|c| c.tree().ok());
        let (files, files_changed) = match repo.diff_tree_to_tree(before.as_ref(), tree.as_ref(), None) {
            Ok(diff) => {
                let names: Vec<String> = diff
                    .deltas()
                    .filter_map(|d| d.new_file().path().or(d.old_file().path()).map(|p| p.display().to_string()))
                    .collect();
                let count = names.len();
                (names.into_iter().take(MAX_HISTORY_FILES).collect(), count)
            }
            Err(_) => (Vec::new(), 0),
        };
        let version_of = read_file(repo, version.commit, "mobius.json").ok().flatten().and_then(|bytes| {
            serde_json::from_slice::<serde_json::Value>(&bytes)
                .ok()
                .and_then(|m| m.get("version").and_then(serde_json::Value::as_str).map(str::to_owned))
        });
        let kind = match version.why.as_str() {
            "install" | "update" | "restore" => version.why.clone(),
            _ => "apply".to_owned(),
        };
        out.push(HistoryEntry {
            commit: version.commit.to_string(),
            at: version.at_ms,
            kind,
            message: commit.summary().unwrap_or_default().to_owned(),
            version: version_of,
            files,
            files_changed,
        });
    }
    Ok(out)
}

/// The commit `upstream` points at.
pub fn upstream(repo: &Repository) -> Option<Oid> {
    repo.find_reference(UPSTREAM).ok().and_then(|r| r.target())
}

/// What a source's newest release is, learnt as cheaply as possible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// The commit a git source's `HEAD` names.
    Commit(Oid),
    /// The tree a plain folder's files make.
    Tree(Oid),
}

impl Probe {
    /// True when this release is not the one `repo`'s `upstream` holds.
    pub fn is_new_for(&self, repo: &Repository) -> bool {
        let Ok(current) = upstream_commit(repo) else { return true };
        match *self {
            Probe::Commit(commit) => {
                commit != current.id() && !repo.find_commit(commit).is_ok_and(|c| c.tree_id() == current.tree_id())
            }
            Probe::Tree(tree) => tree != current.tree_id(),
        }
    }

    /// The id as text.
    pub fn id(&self) -> String {
        match self {
            Probe::Commit(id) | Probe::Tree(id) => id.to_string(),
        }
    }
}

/// Asks the source which release is newest without fetching it: the `HEAD` a git server
/// advertises (over `smart_http` under the public policy), a local repository's `HEAD`, or
/// the tree of a plain folder's files (written into `repo`).
pub fn probe_release(repo: &Repository, source: &Source) -> Result<Probe> {
    probe_release_with(repo, source, &FetchPolicy::public())
}

/// [`probe_release`] under `policy`.
pub(super) fn probe_release_with(repo: &Repository, source: &Source, policy: &FetchPolicy) -> Result<Probe> {
    smart_http::register()?;
    match source {
        Source::Url(url) if !url.starts_with("https://") && !url.starts_with("http://") => {
            Err(super::ssrf::refused("only https:// URLs"))
        }
        Source::Url(url) => {
            let session = smart_http::Session::new(policy)?;
            let head = session
                .run(|| {
                    let mut remote = git2::Remote::create_detached(url.as_str())?;
                    remote.connect(git2::Direction::Fetch)?;
                    let head = remote.list()?.iter().find(|h| h.name() == "HEAD").map(|h| h.oid());
                    let _ = remote.disconnect();
                    Ok(head)
                })
                .map_err(|e| session.failure().unwrap_or_else(|| git_err("asking the source")(e)))?;
            head.map(Probe::Commit).ok_or_else(|| {
                Error::unprocessable("source_not_git", "The source does not advertise a HEAD to install from.")
            })
        }
        Source::Path(path) => {
            match Repository::open_ext(path, RepositoryOpenFlags::NO_SEARCH, std::iter::empty::<&Path>()) {
                Ok(source) => {
                    let head = source.head().and_then(|h| h.peel_to_commit()).map_err(git_err("the source's HEAD"))?;
                    Ok(Probe::Commit(head.id()))
                }
                Err(_) => {
                    let snapshot = snapshot_plain_dir(repo, path)?;
                    let tree = repo.find_commit(snapshot).map_err(git_err("the snapshot"))?.tree_id();
                    Ok(Probe::Tree(tree))
                }
            }
        }
    }
}

/// What a release changes against the installed one: its commits (newest first), the files
/// it changes with line counts, and whether it would conflict with local edits.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReleaseDiff {
    pub commits: Vec<CommitInfo>,
    /// More commits than listed.
    pub more_commits: bool,
    pub files: Vec<FileChange>,
    /// More files than listed.
    pub more_files: bool,
    /// The owner (or the agent) changed the app since the installed release.
    pub local_edits: bool,
    /// Files both sides change (taking the release would need a resolution).
    pub conflict_paths: Vec<String>,
}

/// A commit as the update preview lists it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CommitInfo {
    pub commit: String,
    pub summary: String,
    pub author: String,
    pub at: i64,
}

/// A file a release changes.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FileChange {
    pub path: String,
    /// `added`, `deleted`, `modified` or `renamed`.
    pub status: &'static str,
    pub additions: usize,
    pub deletions: usize,
}

/// Commits listed in an update preview.
pub const MAX_PREVIEW_COMMITS: usize = 50;
/// Files listed in an update preview.
pub const MAX_PREVIEW_FILES: usize = 200;

/// Compares `release` with the installed release (`upstream`). Uncommitted edits in the
/// worktree are committed to `main` first (unless a resolution is in progress), so the
/// conflict check sees them.
pub fn release_diff(app: &AppRepo, release: Oid) -> Result<ReleaseDiff> {
    if resolving(app).is_none() {
        commit_worktree(app, "Local edits")?;
    }
    let repo = &app.repo;
    let installed = upstream_commit(repo)?;
    let new_release = repo.find_commit(release).map_err(git_err("release"))?;
    let mut walk = repo.revwalk().map_err(git_err("history"))?;
    walk.push(release).map_err(git_err("history"))?;
    let _ = walk.hide(installed.id());
    let mut commits = Vec::new();
    let mut more_commits = false;
    for oid in walk {
        let oid = oid.map_err(git_err("history"))?;
        if commits.len() == MAX_PREVIEW_COMMITS {
            more_commits = true;
            break;
        }
        let commit = repo.find_commit(oid).map_err(git_err("history"))?;
        if commit.parent_count() == 0 && commit.tree().is_ok_and(|t| t.is_empty()) {
            continue;
        }
        commits.push(CommitInfo {
            commit: oid.to_string(),
            summary: commit.summary().unwrap_or_default().to_owned(),
            author: commit.author().name().unwrap_or_default().to_owned(),
            at: commit.time().seconds() * 1000,
        });
    }
    let old_tree = installed.tree().map_err(git_err("tree"))?;
    let new_tree = new_release.tree().map_err(git_err("tree"))?;
    let mut diff = repo.diff_tree_to_tree(Some(&old_tree), Some(&new_tree), None).map_err(git_err("diff"))?;
    let _ = diff.find_similar(None);
    let mut files = Vec::new();
    let deltas = diff.deltas().len();
    for i in 0..deltas.min(MAX_PREVIEW_FILES) {
        let Some(delta) = diff.get_delta(i) else { continue };
        let path =
            delta.new_file().path().or(delta.old_file().path()).map(|p| p.display().to_string()).unwrap_or_default();
        let status = match delta.status() {
            git2::Delta::Added => "added",
            git2::Delta::Deleted => "deleted",
            git2::Delta::Renamed => "renamed",
            _ => "modified",
        };
        let (additions, deletions) = git2::Patch::from_diff(&diff, i)
            .ok()
            .flatten()
            .and_then(|p| p.line_stats().ok())
            .map_or((0, 0), |(_, add, del)| (add, del));
        files.push(FileChange { path, status, additions, deletions });
    }
    let main = main_commit(repo)?;
    // The platform's own `.gitignore` lines are not the owner's edits.
    let local_edits = repo
        .diff_tree_to_tree(Some(&old_tree), main.tree().ok().as_ref(), None)
        .map(|d| d.deltas().any(|delta| delta.new_file().path().is_none_or(|p| p != Path::new(".gitignore"))))
        .unwrap_or(true);
    let conflict_paths = if local_edits {
        let merged = merge_with_upstream(repo, &installed, &main, &new_release)?;
        if merged.has_conflicts() { conflict_paths(&merged)? } else { Vec::new() }
    } else {
        Vec::new()
    };
    Ok(ReleaseDiff {
        commits,
        more_commits,
        files,
        more_files: deltas > MAX_PREVIEW_FILES,
        local_edits,
        conflict_paths,
    })
}

/// The author a commit names.
pub fn commit_author(repo: &Repository, commit: Oid) -> Option<String> {
    repo.find_commit(commit).ok().and_then(|c| c.author().name().map(str::to_owned)).filter(|n| !n.is_empty())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_commit_time_reads_as_a_utc_date() {
        assert_eq!(super::utc_date(0), "1970-01-01 00:00 UTC");
        assert_eq!(super::utc_date(951_782_400 + 3_660), "2000-02-29 01:01 UTC");
    }
}
