//! Apply: validate the manifest → commit the source on the app's `main` → bundle the
//! committed tree → write `compiled/app-<id>-<sha256>.js` atomically → record it → announce.
//! Any failure leaves the previous bundle serving.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use mobius_bundler::{BundleOptions, Bundler, Diagnostics};
use serde::Serialize;
use serde_json::Value;
use sqlx::SqlitePool;

use super::git::{self, AppRepo, Source};
use super::manifest::{self, Manifest};
use crate::db::{self, apps::AppRow};
use crate::error::{Error, Result};
use crate::locks::KeyedLocks;
use crate::storage::Store;
use crate::writer::{WriteCommand, WriterHandle};

/// Deleted apps can be recovered this long.
pub const RECOVERY_WINDOW_MS: i64 = 7 * 24 * 3600 * 1000;

/// The files of the app runtime (in `Config::app_runtime_dir`) every bundle inlines.
pub const RUNTIME_FILES: &[&str] = &["mobius-runtime.js", "mobius-chat.js", "app-runtime-inject.js"];

/// Banner at the top of every bundle: the runtime ABI the frame expects.
pub const BUNDLE_BANNER: &str = "/* mobius-compiled-runtime-abi:1 */";

/// What an apply did.
#[derive(Debug, Serialize)]
pub struct Applied {
    /// `created`, `updated` or `unchanged`.
    pub mode: &'static str,
    pub app: AppRow,
    pub warnings: Vec<String>,
}

/// Compiles at once: one on a small machine keeps requests responsive.
const MAX_PARALLEL_COMPILES: usize = 1;

/// What applies, installs, updates and rebuilds use, handed over once at start-up.
pub struct Apps {
    pub data_dir: PathBuf,
    /// `mobius-runtime.js` and `app-runtime-inject.js`.
    pub runtime_dir: PathBuf,
    /// The libraries apps may import.
    pub node_modules: PathBuf,
    pub read: SqlitePool,
    pub writer: WriterHandle,
    /// App storage (seeded on first install, wiped on purge).
    pub storage: Arc<Store>,
    /// Applies, installs and updates of one app run one after the other.
    pub locks: KeyedLocks,
    /// The bundler, created on first use (it owns a few threads).
    bundler: OnceLock<Bundler>,
}

impl Apps {
    pub fn new(
        data_dir: PathBuf,
        runtime_dir: PathBuf,
        node_modules: PathBuf,
        read: SqlitePool,
        writer: WriterHandle,
        storage: Arc<Store>,
    ) -> Self {
        Self {
            data_dir,
            runtime_dir,
            node_modules,
            read,
            writer,
            storage,
            locks: KeyedLocks::default(),
            bundler: OnceLock::new(),
        }
    }

    /// The bundler, created on first use.
    pub fn bundler(&self) -> Result<&Bundler> {
        if let Some(b) = self.bundler.get() {
            return Ok(b);
        }
        let bundler = Bundler::new(MAX_PARALLEL_COMPILES)?;
        Ok(self.bundler.get_or_init(|| bundler))
    }

    /// Where app sources live: `DATA_DIR/apps`.
    pub fn apps_dir(&self) -> PathBuf {
        self.data_dir.join("apps")
    }

    /// Where bundles live: `DATA_DIR/compiled`.
    pub fn compiled_dir(&self) -> PathBuf {
        self.data_dir.join("compiled")
    }

    /// The bundle file of an app build.
    pub fn bundle_path(&self, id: i64, sha: &str) -> PathBuf {
        self.compiled_dir().join(format!("app-{id}-{sha}.js"))
    }

    /// The app's source folder; 404 when it does not exist (or is not a plain folder).
    pub fn source_dir(&self, slug: &str) -> Result<PathBuf> {
        if !manifest::valid_id(slug) {
            return Err(Error::bad_request("invalid_slug", format!("{slug:?} is not a valid app id.")));
        }
        match super::worktree::folder(&self.data_dir, slug)? {
            Some(_) => Ok(self.apps_dir().join(slug)),
            None => Err(Error::not_found(
                "app_source_missing",
                format!("There is no folder apps/{slug}/ with the app's mobius.json and index.jsx."),
            )),
        }
    }

    /// App `slug`'s repository (the server's, out of the agent's reach), to open on a blocking
    /// thread; 404 when the app has no folder.
    pub fn repo(&self, slug: &str) -> Result<git::RepoRef> {
        self.source_dir(slug)?;
        Ok(git::RepoRef::new(&self.data_dir, slug))
    }

    /// Moves app `from`'s folder and repository to `to` (a release renamed the app).
    pub async fn rename_sources(&self, from: &str, to: &str) -> Result<()> {
        for root in [super::worktree::APPS_DIR, super::worktree::REPOS_DIR] {
            let base = self.data_dir.join(root);
            match tokio::fs::rename(base.join(from), base.join(to)).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && root == super::worktree::REPOS_DIR => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Removes app `slug`'s folder and its repository (no link followed).
    pub fn remove_sources(&self, slug: &str) {
        for root in [super::worktree::APPS_DIR, super::worktree::REPOS_DIR] {
            if let Ok(dir) = crate::safe_fs::Dir::open_under(&self.data_dir, Path::new(root)) {
                let _ = dir.remove_tree(std::ffi::OsStr::new(slug));
            }
        }
    }

    /// Moves the repositories apps kept in their folders (`apps/<slug>/.git`, where the agent
    /// could write them) to the server's own `app-repos/`, once, before anything opens them.
    pub fn migrate_legacy_repos(&self) -> Result<usize> {
        let Ok(apps) = crate::safe_fs::Dir::open_under(&self.data_dir, Path::new(super::worktree::APPS_DIR)) else {
            return Ok(0);
        };
        let mut moved = 0;
        for entry in apps.entries(usize::MAX)? {
            let Some(slug) = entry.name.to_str().filter(|s| manifest::valid_id(s)) else { continue };
            let Some(folder) = super::worktree::folder(&self.data_dir, slug)? else { continue };
            let mirror = super::worktree::mirror_dir(&self.data_dir, slug)?;
            if mirror.kind(std::ffi::OsStr::new(".git"))?.is_some() {
                continue;
            }
            match super::worktree::migrate_legacy_git(&folder, &mirror) {
                Ok(true) => {
                    moved += 1;
                    // The copy of the worktree the repository's checkout expects.
                    super::worktree::copy_in(&folder, &mirror)?;
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(slug, error = %e, "an app's old repository could not be moved; it starts afresh");
                    let _ = mirror.remove_tree(std::ffi::OsStr::new(".git"));
                }
            }
        }
        Ok(moved)
    }
}

/// A compile failure as an API error: 422 with the rendered diagnostics.
fn compile_error(diagnostics: &Diagnostics) -> Error {
    Error::unprocessable("compile_failed", format!("The app did not compile:\n{diagnostics}"))
}

/// Which version of an app's source an apply builds, and why (recorded in its history:
/// `install`, `update`, `restore`, `apply`, `rebuild`).
#[derive(Debug, Clone)]
pub enum Snapshot {
    /// The folder as it is now, committed on `main` first (what the agent asks for).
    Worktree(&'static str),
    /// A given commit, which need not be on `main` yet: the live commit again with the
    /// current runtime (a start-up rebuild), or an update or restore built before `main`
    /// moves to it. The folder's uncommitted edits stay unpublished.
    Commit(String, &'static str),
}

impl Snapshot {
    fn why(&self) -> &'static str {
        match self {
            Snapshot::Worktree(why) | Snapshot::Commit(_, why) => why,
        }
    }
}

/// The runtime's own modules (`runtime/*.js` next to `mobius-runtime.js`, which imports them).
pub const RUNTIME_MODULES_DIR: &str = "runtime";

/// A hash of everything the bundler inlines besides the app: the runtime files (`RUNTIME_FILES`
/// and every module under `runtime/`, by name) and the ABI banner. A bundle built with another
/// fingerprint is outdated.
pub fn runtime_fingerprint(apps: &Apps) -> Result<String> {
    use sha2::{Digest, Sha256};
    let runtime = &apps.runtime_dir;
    let mut hash = Sha256::new();
    hash.update(BUNDLE_BANNER.as_bytes());
    for file in RUNTIME_FILES {
        hash.update(std::fs::read(runtime.join(file))?);
    }
    let mut modules: Vec<std::path::PathBuf> = match std::fs::read_dir(runtime.join(RUNTIME_MODULES_DIR)) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "js") && p.is_file())
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    modules.sort();
    for path in modules {
        hash.update(path.file_name().map(|n| n.as_encoded_bytes()).unwrap_or_default());
        hash.update([0]);
        hash.update(std::fs::read(&path)?);
    }
    Ok(hex::encode(hash.finalize()))
}

/// Applies `apps/<slug>/`. The caller holds the app's lock.
pub async fn apply_locked(
    apps: &Apps,
    slug: &str,
    chat_id: Option<String>,
    installed_from: Option<Installed>,
    from: Snapshot,
) -> Result<Applied> {
    apps.source_dir(slug)?;
    if matches!(from, Snapshot::Worktree(_)) {
        manifest::parse(&read_folder_manifest(apps, slug).await?, slug)?;
    }
    let why = from.why();
    let local = matches!(from, Snapshot::Worktree(_));
    let build_root = apps.data_dir.join("run").join("build");
    std::fs::create_dir_all(&build_root)?;
    let message = format!("Apply {slug}");
    let snapshot = {
        let (data_dir, slug) = (apps.data_dir.clone(), slug.to_owned());
        tokio::task::spawn_blocking(move || -> Result<(String, tempfile::TempDir)> {
            let repo = AppRepo::open(&data_dir, &slug)?;
            let commit = match from {
                Snapshot::Worktree(_) => git::commit_worktree(&repo, &message)?.0,
                Snapshot::Commit(commit, _) => {
                    git2::Oid::from_str(&commit).map_err(|e| Error::Internal(e.to_string()))?
                }
            };
            let tmp = tempfile::Builder::new().prefix("apply-").tempdir_in(&build_root)?;
            git::export_commit(&repo, commit, tmp.path())?;
            Ok((commit.to_string(), tmp))
        })
        .await
        .map_err(|e| Error::Internal(format!("apply task: {e}")))??
    };
    let (commit, tree_dir) = snapshot;
    // The committed manifest is the one that counts (the worktree may have moved on).
    let manifest_text = read_manifest(tree_dir.path()).await?;
    let manifest = manifest::parse(&manifest_text, slug)?;
    if !tokio::fs::try_exists(tree_dir.path().join("index.jsx")).await.unwrap_or(false) {
        return Err(Error::unprocessable(
            "entry_missing",
            "index.jsx is missing: it must `export default` a React component.",
        ));
    }
    let mut warnings = manifest.warnings.clone();
    let mut existing = db::apps::by_slug(&apps.read, slug).await?;
    if existing.is_none()
        && let Some(previous) = &manifest.previous_id
    {
        existing =
            adopt(apps, slug, previous, installed_from.as_ref().map(|i| i.source.as_str()), &mut warnings).await?;
    }
    let runtime = runtime_fingerprint(apps)?;
    let revive_nonce = installed_from.as_ref().and_then(|i| i.revive_nonce.clone());
    if let Some(app) = &existing {
        if app.deleted_at.is_some() && revive_nonce.is_none() {
            return Err(Error::conflict("app_deleted", "This app is deleted; recover it before applying again."));
        }
        if app.source_commit.as_deref() == Some(commit.as_str())
            && app.runtime_sha.as_deref() == Some(runtime.as_str())
            && let Some(sha) = &app.bundle_sha
            && apps.bundle_path(app.id, sha).is_file()
            && installed_from.is_none()
        {
            return Ok(Applied { mode: "unchanged", app: app.clone(), warnings });
        }
    }
    let bundler = apps.bundler()?;
    let compiled = bundler.bundle(&bundle_options(apps, tree_dir.path())).await;
    crate::memory::trim_after_compiles(bundler);
    let bundle = compiled.map_err(|d| compile_error(&d))?;
    let folder = Path::new("apps").join(slug);
    let assets = super::assets::files::stage(
        &apps.data_dir,
        tree_dir.path(),
        local.then_some(folder.as_path()),
        &manifest.static_assets,
    )
    .await?;
    let created = existing.as_ref().is_none_or(|a| a.bundle_sha.is_none());
    // A first build that fails leaves nothing behind, unless it brings back an uninstalled app
    // whose data the owner kept (then its row and data stay as they were).
    let undo_on_failure = created && existing.as_ref().is_none_or(|a| a.deleted_at.is_none());
    let id = match &existing {
        Some(app) => app.id,
        None => {
            let nonce = uuid::Uuid::new_v4().simple().to_string();
            let (slug, name) = (slug.to_owned(), manifest.name.clone());
            apps.writer.call(|ack| WriteCommand::AppReserve { slug, name, nonce, ack }).await?
        }
    };
    let path = apps.bundle_path(id, &bundle.sha256);
    // A first build is all or nothing: its bundle, its seeded storage and assets, its row.
    let mut assets = Some(assets);
    let first_build = async {
        write_atomically(&path, bundle.code.as_bytes()).await?;
        if created {
            if !manifest.storage_seeds.is_empty() {
                // From the committed tree (the server's export), like the bundle.
                let tree = tree_dir.path();
                crate::storage::write_seeds(apps.storage.clone(), &apps.data_dir, id, tree, &manifest.storage_seeds)
                    .await?;
            }
            if let Some(assets) = assets.take() {
                super::assets::files::publish(&apps.data_dir, id, assets).await?;
            }
        }
        Ok::<_, Error>(())
    };
    let built = first_build.await;
    drop(tree_dir);
    if let Err(e) = built {
        if undo_on_failure {
            forget_first_build(apps, id, &path).await;
        }
        return Err(e);
    }
    let (source_url, upstream_commit) = installed_from.map(|i| (i.source, i.release)).unzip();
    let mut applied = record_fields(&manifest, &bundle.sha256, &commit, chat_id, source_url, upstream_commit.flatten());
    applied.runtime_sha = runtime;
    applied.revive_nonce = revive_nonce;
    if let Err(e) = apps.writer.call(|ack| WriteCommand::AppRecordApply { id, applied, created, ack }).await {
        if undo_on_failure {
            forget_first_build(apps, id, &path).await;
        }
        return Err(e);
    }
    if existing.as_ref().and_then(|a| a.source_commit.as_deref()) != Some(commit.as_str()) {
        let (data_dir, repo_slug, commit) = (apps.data_dir.clone(), slug.to_owned(), commit.clone());
        let marked = tokio::task::spawn_blocking(move || -> Result<()> {
            let repo = AppRepo::open(&data_dir, &repo_slug)?;
            let oid = git2::Oid::from_str(&commit).map_err(|e| Error::Internal(e.to_string()))?;
            git::mark_live(&repo, oid, why)
        })
        .await
        .map_err(|e| Error::Internal(format!("apply task: {e}")))
        .and_then(|r| r);
        // The build is live already: a missing entry in the undo list is not worth failing it.
        if let Err(e) = marked {
            tracing::warn!(app.id = id, slug, error = %e, "could not record the live version for undo");
        }
    }
    if let Some(assets) = assets {
        super::assets::files::publish(&apps.data_dir, id, assets).await?;
    }
    if let Some(old) = existing.as_ref().and_then(|a| a.bundle_sha.clone())
        && old != bundle.sha256
    {
        let _ = tokio::fs::remove_file(apps.bundle_path(id, &old)).await;
        super::icon::remove_rendered(&apps.compiled_dir(), id, &old);
    }
    let app = db::apps::get(&apps.read, id).await?.ok_or_else(|| Error::Internal("applied app vanished".into()))?;
    warnings.extend(bundle.warnings.iter().map(ToString::to_string));
    tracing::info!(app.id = id, slug, created, "app applied");
    Ok(Applied { mode: if created { "created" } else { "updated" }, app, warnings })
}

/// Adopts the live app `previous` for the new id `slug` (its row, data and settings carry over):
/// an install only adopts an app installed from the same source; a local apply adopts any.
async fn adopt(
    apps: &Apps,
    slug: &str,
    previous: &str,
    source: Option<&str>,
    warnings: &mut Vec<String>,
) -> Result<Option<AppRow>> {
    let Some(prev) = db::apps::by_slug(&apps.read, previous).await? else {
        warnings.push(format!("mobius.json › previous_id: no app {previous:?} is installed; nothing adopted"));
        return Ok(None);
    };
    if prev.deleted_at.is_some() || prev.bundle_sha.is_none() {
        warnings.push(format!("mobius.json › previous_id: the app {previous:?} is deleted; nothing adopted"));
        return Ok(None);
    }
    if let Some(source) = source
        && prev.source_url.as_deref() != Some(source)
    {
        warnings.push(format!(
            "mobius.json › previous_id: the app {previous:?} was installed from elsewhere; nothing adopted"
        ));
        return Ok(None);
    }
    let id = prev.id;
    let new_slug = slug.to_owned();
    apps.writer.call(|ack| WriteCommand::AppAdopt { id, slug: new_slug, ack }).await?;
    warnings.push(format!(
        "mobius.json › previous_id: this app continues {previous:?} (app {id}): its data and settings carry over; \
         the folder apps/{previous}/ is no longer used"
    ));
    tracing::info!(app.id = id, from = previous, to = slug, "app adopted under a new id");
    db::apps::get(&apps.read, id).await
}

/// Undoes a failed first build: its bundle, its storage, its assets and its reserved row go, so
/// the id (slug) is free again.
async fn forget_first_build(apps: &Apps, id: i64, bundle: &Path) {
    let _ = tokio::fs::remove_file(bundle).await;
    super::assets::files::remove(&apps.data_dir, id).await;
    if let Err(e) = crate::storage::remove_app_data(apps.storage.clone(), &apps.data_dir, id).await {
        tracing::warn!(app.id = id, error = %e, "removing a failed first build's storage failed");
    }
    if let Err(e) = apps.writer.call(|ack| WriteCommand::AppForgetUnbuilt { id, ack }).await {
        tracing::warn!(app.id = id, error = %e, "forgetting a failed first build failed");
    }
}

/// Applies with the app's lock held (concurrent applies of one app run one after the other).
pub async fn apply(apps: &Apps, slug: &str, chat_id: Option<String>) -> Result<Applied> {
    let _lock = apps.locks.lock(slug).await;
    apply_locked(apps, slug, chat_id, None, Snapshot::Worktree("apply")).await
}

fn record_fields(
    m: &Manifest,
    sha: &str,
    commit: &str,
    chat_id: Option<String>,
    source_url: Option<String>,
    upstream_commit: Option<String>,
) -> db::apps::Applied {
    db::apps::Applied {
        slug: m.id.clone(),
        manifest: serde_json::to_string(&m.document).unwrap_or_default(),
        name: m.name.clone(),
        description: m.description.clone(),
        version: m.version.clone(),
        bundle_sha: sha.to_owned(),
        source_commit: commit.to_owned(),
        upstream_commit,
        source_url,
        chat_id,
        theme_color: m.theme_color.clone(),
        background_color: m.background_color.clone(),
        display: m.display.clone(),
        offline_capable: m.offline_capable,
        cross_app_access: m.cross_app_access.clone(),
        share_with_apps: m.share_with_apps.clone(),
        permissions: Value::Object(m.permissions.clone()).to_string(),
        // The caller stamps the runtime it built with.
        runtime_sha: String::new(),
        revive_nonce: None,
        schedule: m.schedule.clone(),
    }
}

/// The text of a manifest read from `dir` (a folder the server owns: an exported commit).
async fn read_manifest(dir: &Path) -> Result<String> {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || manifest_text(crate::safe_fs::Dir::open(&dir).map_err(Error::Io)))
        .await
        .map_err(|e| Error::Internal(format!("manifest task: {e}")))?
}

/// The manifest in the agent's folder of `slug` (checked before anything is committed), and
/// that an `index.jsx` is there: read through `safe_fs`, so a planted link, FIFO or device is
/// refused with a clear error, never followed or waited on.
async fn read_folder_manifest(apps: &Apps, slug: &str) -> Result<String> {
    let (data_dir, slug) = (apps.data_dir.clone(), slug.to_owned());
    tokio::task::spawn_blocking(move || {
        let folder = super::worktree::folder(&data_dir, &slug)?
            .ok_or_else(|| Error::unprocessable("manifest_missing", "mobius.json is missing from the app's folder."))?;
        let text = manifest_text(Ok(folder.reopen()?))?;
        if folder.kind(std::ffi::OsStr::new("index.jsx"))? != Some(crate::safe_fs::Kind::File) {
            return Err(Error::unprocessable(
                "entry_missing",
                "index.jsx is missing (or is not a plain file): it must `export default` a React component.",
            ));
        }
        Ok(text)
    })
    .await
    .map_err(|e| Error::Internal(format!("manifest task: {e}")))?
}

fn manifest_text(dir: Result<crate::safe_fs::Dir>) -> Result<String> {
    let bytes = match dir?.read(Path::new("mobius.json"), manifest::MAX_MANIFEST_BYTES as u64) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::unprocessable("manifest_missing", "mobius.json is missing from the app's folder."));
        }
        Err(e) => {
            return Err(match crate::safe_fs::refusal(&e) {
                Some(crate::safe_fs::Refused::TooLarge(..)) => {
                    Error::unprocessable("manifest_invalid", "mobius.json is larger than 64 KiB.")
                }
                Some(_) => Error::unprocessable(
                    "manifest_invalid",
                    "mobius.json is not a plain file (a link, a pipe or a device is never read).",
                ),
                None => Error::Io(e),
            });
        }
    };
    String::from_utf8(bytes).map_err(|_| Error::unprocessable("manifest_invalid", "mobius.json is not UTF-8 text."))
}

fn bundle_options(apps: &Apps, dir: &Path) -> BundleOptions {
    let runtime = &apps.runtime_dir;
    BundleOptions {
        app_dir: dir.to_path_buf(),
        entry: "index.jsx".into(),
        node_modules: vec![apps.node_modules.clone()],
        aliases: vec![("mobius-runtime".into(), runtime.join("mobius-runtime.js"))],
        inject: Some(runtime.join("app-runtime-inject.js")),
        banner: Some(BUNDLE_BANNER.into()),
    }
}

/// Writes `bytes` to `path` via a temp file in the same folder, fsyncing file and folder.
pub async fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let path = path.to_path_buf();
    let bytes = bytes.to_vec();
    tokio::task::spawn_blocking(move || -> Result<()> {
        let dir = path.parent().ok_or_else(|| Error::Internal("bundle path has no folder".into()))?;
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(&bytes)?;
        tmp.as_file().sync_all()?;
        tmp.persist(&path).map_err(|e| Error::Io(e.error))?;
        std::fs::File::open(dir)?.sync_all()?;
        Ok(())
    })
    .await
    .map_err(|e| Error::Internal(format!("write task: {e}")))?
}

/// Where an installed app came from, for an apply that installs or updates it.
#[derive(Debug, Clone)]
pub struct Installed {
    /// The source as the owner gave it (URL or folder).
    pub source: String,
    /// The release commit taken (becomes `upstream_commit`).
    pub release: Option<String>,
    /// Set when the install brings back a deleted app of the same id: its new install nonce.
    pub revive_nonce: Option<String>,
}

/// Installs an app from a git source (a local path or an https URL) and applies it. With
/// `expect`, the source's release must still be that commit (the one the owner reviewed), else
/// 409 `source_changed`. An app of the same id that was uninstalled comes back with its id,
/// data and secrets (its earlier source folder is replaced).
pub async fn install(apps: &Apps, source: Source, label: String, expect: Option<String>) -> Result<Applied> {
    if let Source::Url(url) = &source {
        super::ssrf::check_url(url).await?;
    }
    // Fetched and checked out in a staging repository of the server's own (not in `apps/`,
    // where the agent could tamper with it meanwhile).
    let installs = apps.data_dir.join("run").join("installs");
    std::fs::create_dir_all(&installs)?;
    let staging = tempfile::Builder::new().prefix("install-").tempdir_in(&installs)?;
    let staging_path = staging.path().to_path_buf();
    let (slug, release) = {
        let source = source.clone();
        tokio::task::spawn_blocking(move || -> Result<(String, String)> {
            let repo = git::open_or_init(&staging_path)?;
            let release = git::fetch_release(&repo, &source)?;
            if expect.as_deref().is_some_and(|e| e != release.to_string()) {
                return Err(source_changed());
            }
            let manifest = release_manifest(&repo, release)?;
            git::adopt_release(&AppRepo::plain(repo), release)?;
            Ok((manifest.id, release.to_string()))
        })
        .await
        .map_err(|e| Error::Internal(format!("install task: {e}")))??
    };
    let _lock = apps.locks.lock(&slug).await;
    let target = apps.apps_dir().join(&slug);
    let repo_dir = apps.data_dir.join(super::worktree::REPOS_DIR).join(&slug);
    let earlier = db::apps::by_slug(&apps.read, &slug).await?;
    let revive = earlier.as_ref().is_some_and(|a| a.deleted_at.is_some());
    // A row without a build is a first install that failed: its id is free again.
    let taken = earlier.as_ref().is_some_and(|a| a.deleted_at.is_none() && a.bundle_sha.is_some());
    let present = std::fs::symlink_metadata(&target).is_ok() || std::fs::symlink_metadata(&repo_dir).is_ok();
    if taken || (present && !revive) {
        return Err(Error::conflict(
            "app_exists",
            format!("An app with the id {slug:?} is already installed; update it instead."),
        ));
    }
    if revive {
        // The uninstalled app's source gives way to the new install (its data stays).
        apps.remove_sources(&slug);
    }
    {
        let kept = staging.keep();
        let (data_dir, slug) = (apps.data_dir.clone(), slug.clone());
        tokio::task::spawn_blocking(move || -> Result<()> {
            std::fs::create_dir_all(data_dir.join(super::worktree::REPOS_DIR))?;
            std::fs::rename(&kept, data_dir.join(super::worktree::REPOS_DIR).join(&slug))?;
            let mirror = super::worktree::mirror_dir(&data_dir, &slug)?;
            let folder =
                crate::safe_fs::Dir::create_under(&data_dir, &Path::new(super::worktree::APPS_DIR).join(&slug))?;
            super::worktree::copy_out(&mirror, &folder, &std::collections::BTreeSet::new())
        })
        .await
        .map_err(|e| Error::Internal(format!("install task: {e}")))??;
    }
    let installed = Installed {
        source: label,
        release: Some(release),
        revive_nonce: revive.then(|| uuid::Uuid::new_v4().simple().to_string()),
    };
    match apply_locked(apps, &slug, None, Some(installed), Snapshot::Worktree("install")).await {
        Ok(applied) => Ok(applied),
        Err(e) => {
            // A failed first build leaves nothing behind.
            apps.remove_sources(&slug);
            Err(e)
        }
    }
}

/// The validated `mobius.json` of a release (its own `id` names its folder).
pub fn release_manifest(repo: &git2::Repository, release: git2::Oid) -> Result<Manifest> {
    let bytes = git::read_file(repo, release, "mobius.json")?
        .ok_or_else(|| Error::unprocessable("manifest_missing", "The source has no mobius.json at its root."))?;
    if bytes.len() > manifest::MAX_MANIFEST_BYTES {
        return Err(Error::unprocessable("manifest_invalid", "mobius.json is larger than 64 KiB."));
    }
    let text =
        String::from_utf8(bytes).map_err(|_| Error::unprocessable("manifest_invalid", "mobius.json is not UTF-8."))?;
    let id = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_owned))
        .ok_or_else(|| Error::unprocessable("manifest_invalid", "mobius.json has no id (or is not valid JSON)."))?;
    let parsed = manifest::parse(&text, &id)?;
    if git::read_file(repo, release, "index.jsx")?.is_none() {
        return Err(Error::unprocessable("entry_missing", "The source has no index.jsx at its root."));
    }
    Ok(parsed)
}

/// The source moved on since the owner reviewed it.
pub fn source_changed() -> Error {
    Error::conflict(
        "source_changed",
        "The source has a newer release than the one you reviewed; review it again before installing.",
    )
}

/// Rebuilds, from its live commit, every live app whose bundle was built with another
/// runtime (a platform update changed `mobius-runtime.js`), one at a time after start-up. An
/// app that no longer compiles keeps its old bundle; the owner's "seen" mark follows the
/// rebuild, so it does not show as an unseen update.
pub async fn rebuild_outdated(apps: Arc<Apps>) {
    // No app was ever applied here: nothing to check (and no start-up work for a fresh server).
    if !apps.apps_dir().is_dir() {
        return;
    }
    let runtime = match runtime_fingerprint(&apps) {
        Ok(runtime) => runtime,
        Err(e) => return tracing::warn!(error = %e, "the app runtime files are unreadable; apps are not rebuilt"),
    };
    let rows = match db::apps::list(&apps.read).await {
        Ok(apps) => apps,
        Err(e) => return tracing::warn!(error = %e, "could not list apps to rebuild"),
    };
    for app in rows.into_iter().filter(|a| a.runtime_sha.as_deref() != Some(runtime.as_str())) {
        let Some(commit) = app.source_commit.clone() else { continue };
        let _lock = apps.locks.lock(&app.slug).await;
        match apply_locked(&apps, &app.slug, None, None, Snapshot::Commit(commit, "rebuild")).await {
            Ok(applied) => {
                tracing::info!(app.id = app.id, slug = %app.slug, "app rebuilt for the current runtime");
                if app.seen_sha.is_some() && app.seen_sha == app.bundle_sha {
                    let patch = db::apps::AppPatch { seen_sha: applied.app.bundle_sha, ..Default::default() };
                    let id = app.id;
                    let _ = apps.writer.call(|ack| WriteCommand::AppPatch { id, patch, ack }).await;
                }
            }
            Err(e) => {
                tracing::warn!(app.id = app.id, slug = %app.slug, error = %e, "could not rebuild the app for the current runtime; it keeps its bundle")
            }
        }
    }
}

/// Folders of the operating system no app is installed from (they, and everything in them).
const SYSTEM_FOLDERS: &[&str] = &[
    "/proc", "/sys", "/dev", "/run", "/boot", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/usr",
    "/var/lib", "/var/log", "/var/run", "/root",
];

/// `https://…` or an absolute local folder: never `data_dir`, anything inside it or holding it
/// (the platform's own state and secrets), nor a system folder.
pub fn parse_source(data_dir: &Path, source: &str) -> Result<Source> {
    let source = source.trim();
    if source.starts_with("https://") {
        return Ok(Source::Url(source.to_owned()));
    }
    if source.starts_with('/') && !source.contains('\0') {
        let path = std::fs::canonicalize(source)
            .map_err(|_| Error::bad_request("invalid_source", "That folder does not exist."))?;
        if !path.is_dir() {
            return Err(Error::bad_request("invalid_source", "The source must be a folder or a git repository."));
        }
        let data_dir = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
        if path.starts_with(&data_dir) || data_dir.starts_with(&path) {
            return Err(Error::bad_request(
                "invalid_source",
                "Apps cannot be installed from Möbius's own data folder (or a folder holding it).",
            ));
        }
        if path == Path::new("/") || SYSTEM_FOLDERS.iter().any(|system| path.starts_with(system)) {
            return Err(Error::bad_request("invalid_source", "Apps cannot be installed from a system folder."));
        }
        return Ok(Source::Path(path));
    }
    Err(Error::bad_request("invalid_source", "Install from an https:// git URL or an absolute folder path."))
}
