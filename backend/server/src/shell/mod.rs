//! The shell's own source, which the agent edits and rebuilds: seeded as a git repository into
//! `DATA_DIR/platform/shell/` (`source.rs`), built by `mobius shell rebuild` one at a time into
//! a new numbered folder `DATA_DIR/platform/shell-builds/<n>/` (`build.rs`), and served from
//! there once it built (`web.rs` asks [`Shell::served`] once per request, so the switch is
//! atomic). A new build is on trial until the owner's device reports it mounted
//! (`POST /api/shell/ready`); one that does not within `MOBIUS_SHELL_READY_SECS` of being loaded is rolled
//! back. The stock build (`MOBIUS_FRONTEND_DIR`) is always there to go back to (`/recovery`).
//! A new image's stock source is merged under the owner's edits at boot (`stock.rs`); what
//! that leaves to do once the server runs — a rebuild, a chat to resolve a conflict — is
//! `update.rs`'s.

pub mod build;
pub mod routes;
pub mod source;
pub mod stock;
pub mod update;
pub mod watch;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Domain, Error, Result};
use crate::events::Hub;
use crate::locks::{Unpoisoned, UnpoisonedRw};
use crate::protocol::SystemEvent;

/// The agent's copy of the source, in `DATA_DIR` (the sandbox grants it read-write).
pub const SOURCE_DIR: &str = "platform/shell";
/// The builds, the server's own.
const BUILDS_DIR: &str = "platform/shell-builds";
/// The server's copy of the source a build runs in (replaced by each build).
const WORK_DIR: &str = "platform/shell-work";
/// The server's own repository of the stock sources taken (see `stock.rs`).
const STOCK_REPO: &str = "platform/shell-stock.git";
/// Where a build writes before it is numbered.
const PARTIAL: &str = ".building";
const RECORD_FILE: &str = "builds.json";
/// Builds kept (the serving one is never removed).
pub const KEPT_BUILDS: usize = 10;
/// The largest `index.html` the server rewrites.
const MAX_INDEX_BYTES: u64 = 1024 * 1024;

/// One build of the shell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BuildInfo {
    /// Its number (its folder's name).
    pub n: u32,
    /// When it was built (unix ms).
    pub at: i64,
    /// The source's commit when it was built, if the folder is still a repository.
    pub commit: Option<String>,
    /// Whether a device reported it mounted.
    pub confirmed: bool,
    /// Why it was rolled back, if it was.
    pub failed: Option<String>,
    /// The chat whose agent built it (`None`: the owner, or the server after an update).
    #[serde(default)]
    pub chat: Option<String>,
}

/// A platform update whose merge with the owner's edits conflicted: the files hold markers
/// until the agent resolves them; a rebuild is refused until then.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Resolving {
    /// Files written with conflict markers.
    pub markers: Vec<String>,
    /// Files one side deleted and the other changed (or binary): the owner's side was kept.
    pub kept: Vec<String>,
    /// The chat opened to resolve it, once opened.
    pub chat: Option<String>,
    /// When the update was merged (unix ms).
    pub at: i64,
}

/// What the server remembers about builds (`platform/shell-builds/builds.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Record {
    /// The build being served (`None`: the stock one).
    serving: Option<u32>,
    /// What was served before the current build, for a rollback (`None`: stock).
    previous: Option<u32>,
    /// The number the next build gets.
    next: u32,
    /// Newest last.
    builds: Vec<BuildInfo>,
    /// A platform update's conflict being resolved.
    #[serde(default)]
    resolving: Option<Resolving>,
    /// A platform update was merged into the source of the build served: rebuild it.
    #[serde(default)]
    rebuild_after_update: bool,
}

/// What `web.rs` serves.
#[derive(Debug)]
pub struct Served {
    /// The build (`None`: stock).
    pub build: Option<u32>,
    /// Its folder.
    pub dir: PathBuf,
}

/// A build on trial: loaded by a device, waiting for it to report ready.
#[derive(Debug, Default)]
struct Trial {
    /// When its `index.html` was first served (the deadline runs from there).
    loaded: bool,
    /// The chat whose agent asked for it, told if it is rolled back.
    chat: Option<String>,
}

/// The shell: what is served, the builds, one rebuild at a time.
pub struct Shell {
    data_dir: PathBuf,
    stock_dist: PathBuf,
    stock_source: Option<PathBuf>,
    node_modules: PathBuf,
    ready_timeout: Duration,
    served: RwLock<Arc<Served>>,
    record: Mutex<Record>,
    trial: Mutex<Option<Trial>>,
    building: tokio::sync::Mutex<()>,
    changing: tokio::sync::Mutex<()>,
    hub: Arc<Hub>,
    builder: build::Builder,
    push: Arc<crate::push::Push>,
    /// Edits of the source the watcher saw, and how many of them the last build started after.
    edits: AtomicU64,
    tried: AtomicU64,
    /// What runs once the server is ready (seed, stock merge, watcher) is done.
    prepared: std::sync::atomic::AtomicBool,
}

/// A rebuild's answer.
#[derive(Debug, Serialize)]
pub struct Rebuilt {
    pub build: BuildInfo,
    /// The build's output (its warnings), bounded.
    pub output: String,
}

/// The state `/api/shell` shows.
#[derive(Debug, Serialize)]
pub struct Status {
    pub editable: bool,
    pub serving: Option<u32>,
    pub building: bool,
    /// Newest first.
    pub builds: Vec<BuildInfo>,
    /// A platform update's conflict waiting for the agent, if any.
    pub resolving: Option<Resolving>,
    /// Whether what follows a boot (the source's seed, a platform update's merge, the
    /// watcher's start: `update::after_boot`) is done.
    pub prepared: bool,
}

impl Shell {
    /// Reads the record and picks what to serve (a build whose folder is gone or incomplete
    /// serves stock). Blocking.
    pub fn load(
        config: &crate::config::Config,
        hub: Arc<Hub>,
        builder: build::Builder,
        push: Arc<crate::push::Push>,
    ) -> Result<Shell> {
        let data_dir = config.data_dir.clone();
        let builds = data_dir.join(BUILDS_DIR);
        std::fs::create_dir_all(&builds)?;
        let mut record: Record = std::fs::read(builds.join(RECORD_FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        if let Some(n) = record.serving
            && !builds.join(n.to_string()).join("index.html").is_file()
        {
            tracing::warn!(build = n, "the shell build being served is gone; serving the stock shell");
            record.serving = None;
        }
        let served = Served {
            build: record.serving,
            dir: record.serving.map_or_else(|| config.frontend_dir.clone(), |n| builds.join(n.to_string())),
        };
        // A build never confirmed before the restart is on trial again.
        let trial = record
            .serving
            .and_then(|n| record.builds.iter().find(|b| b.n == n))
            .filter(|b| !b.confirmed)
            .map(|_| Trial::default());
        Ok(Shell {
            data_dir,
            stock_dist: config.frontend_dir.clone(),
            stock_source: config.shell_source.clone(),
            node_modules: std::fs::canonicalize(&config.shell_node_modules)
                .unwrap_or_else(|_| config.shell_node_modules.clone()),
            ready_timeout: config.shell_ready_timeout,
            served: RwLock::new(Arc::new(served)),
            record: Mutex::new(record),
            trial: Mutex::new(trial),
            building: tokio::sync::Mutex::new(()),
            changing: tokio::sync::Mutex::new(()),
            hub,
            builder,
            push,
            edits: AtomicU64::new(0),
            tried: AtomicU64::new(0),
            prepared: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Seeds the source on first boot and takes a new image's stock source into it (a copy,
    /// a merge and commits: tens of milliseconds or more, so it runs once the server is ready,
    /// from `update::after_boot`, never on the boot path; nothing served depends on it).
    /// Blocking.
    pub fn take_source(&self) -> Result<()> {
        let Some(stock) = &self.stock_source else { return Ok(()) };
        match source::seed(stock, &self.data_dir, Path::new(SOURCE_DIR)) {
            Ok(true) => tracing::info!("the shell's source was seeded into {SOURCE_DIR}"),
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "the shell's source could not be seeded"),
        }
        // The merge runs without the record's lock; only what it decides is written back.
        let mut taken = self.record.locked().clone();
        if take_stock(stock, &self.data_dir, &mut taken) {
            let mut record = self.record.locked();
            record.rebuild_after_update = taken.rebuild_after_update;
            record.resolving = taken.resolving;
            write_record(&self.data_dir.join(BUILDS_DIR).join(RECORD_FILE), &record)?;
        }
        Ok(())
    }

    /// The agent's copy of the source.
    pub fn source_path(&self) -> PathBuf {
        self.data_dir.join(SOURCE_DIR)
    }

    /// The watcher saw the source change.
    pub fn note_edit(&self) {
        self.edits.fetch_add(1, Ordering::SeqCst);
    }

    /// Whether the source changed since the last build started (the watcher's question).
    pub fn edited_since_build(&self) -> bool {
        self.edits.load(Ordering::SeqCst) > self.tried.load(Ordering::SeqCst)
    }

    /// Returns once no rebuild runs.
    pub async fn build_ended(&self) {
        drop(self.building.lock().await);
    }

    /// Tells the owner something about the shell (a notification of kind `agent`), from `chat`
    /// when there is one (tapping it opens that chat).
    pub fn tell_owner(&self, chat: Option<crate::protocol::ChatId>, title: &str, body: String) {
        let source = match chat {
            Some(chat) => crate::push::Source::Chat(chat),
            None => crate::push::Source::Owner { source_type: "shell".into(), source_id: None },
        };
        self.push.notify(crate::push::Notice::new(crate::protocol::NotificationKind::Agent, source, title, Some(body)));
    }

    /// What is served now.
    pub fn served(&self) -> Arc<Served> {
        self.served.read_locked().clone()
    }

    /// The stock build, served whenever a build's folder is missing.
    pub fn stock(&self) -> Arc<Served> {
        Arc::new(Served { build: None, dir: self.stock_dist.clone() })
    }

    /// Folders an `/assets/` file missing from the served build may come from: a device still
    /// on an earlier build loads its lazy chunks after a switch (they are content-hashed).
    pub fn asset_fallbacks(&self) -> Vec<PathBuf> {
        let serving = self.served().build;
        let builds = self.data_dir.join(BUILDS_DIR);
        let record = self.record.locked();
        let mut dirs: Vec<PathBuf> =
            record.builds.iter().rev().filter(|b| Some(b.n) != serving).map(|b| builds.join(b.n.to_string())).collect();
        if serving.is_some() {
            dirs.insert(0, self.stock_dist.clone());
        }
        dirs
    }

    /// The state Settings and `/recovery` show.
    pub fn status(&self) -> Status {
        let record = self.record.locked();
        Status {
            editable: self.stock_source.is_some(),
            serving: record.serving,
            building: self.building.try_lock().is_err(),
            builds: record.builds.iter().rev().cloned().collect(),
            resolving: record.resolving.clone(),
            prepared: self.prepared.load(Ordering::SeqCst),
        }
    }

    /// What follows a boot is done (`update::after_boot`).
    pub fn mark_prepared(&self) {
        self.prepared.store(true, Ordering::SeqCst);
    }

    /// A conflict left by a platform update whose resolver chat is not open yet.
    pub fn resolver_to_open(&self) -> Option<Resolving> {
        self.record.locked().resolving.clone().filter(|r| r.chat.is_none())
    }

    /// Remembers the chat opened to resolve the update's conflict.
    pub async fn set_resolver_chat(&self, chat: String) -> Result<()> {
        let record = {
            let mut record = self.record.locked();
            if let Some(r) = record.resolving.as_mut() {
                r.chat = Some(chat);
            }
            record.clone()
        };
        self.save(record).await
    }

    /// Whether a platform update merged into the served build's source waits for its rebuild;
    /// cleared (and saved) as it is answered, so a rebuild that fails is not retried at every boot.
    pub async fn take_rebuild_after_update(&self) -> Result<bool> {
        let record = {
            let mut record = self.record.locked();
            if !std::mem::take(&mut record.rebuild_after_update) {
                return Ok(false);
            }
            record.clone()
        };
        self.save(record).await?;
        Ok(true)
    }

    /// The files of the source, read through `safe_fs` (for the resolver's message). Blocking.
    pub fn source_dir(&self) -> std::io::Result<crate::safe_fs::Dir> {
        crate::safe_fs::Dir::open_under(&self.data_dir, Path::new(SOURCE_DIR))
    }

    /// `index.html` of what is served: a build's carries its number
    /// (`<meta name="mobius-shell-build">`), which the shell reports when it mounted. A build
    /// on trial starts its deadline here, the first time a device loads it.
    pub fn note_loaded(self: &Arc<Self>, build: Option<u32>) {
        let Some(n) = build else { return };
        let start = {
            let mut trial = self.trial.locked();
            match trial.as_mut() {
                Some(t) if !t.loaded => {
                    t.loaded = true;
                    true
                }
                _ => false,
            }
        };
        if start {
            let this = self.clone();
            let wait = self.ready_timeout;
            tokio::spawn(async move {
                tokio::time::sleep(wait).await;
                this.trial_expired(n).await;
            });
        }
    }

    /// A device reports build `n` mounted: it is confirmed.
    pub async fn ready(&self, n: u32) -> Result<bool> {
        let _one = self.changing.lock().await;
        if self.served().build != Some(n) {
            return Ok(false);
        }
        let was_on_trial = self.trial.locked().take().is_some();
        let record = {
            let mut record = self.record.locked();
            if let Some(b) = record.builds.iter_mut().find(|b| b.n == n) {
                b.confirmed = true;
            }
            record.clone()
        };
        if was_on_trial {
            self.save(record).await?;
        }
        Ok(true)
    }

    async fn trial_expired(self: &Arc<Self>, n: u32) {
        let _one = self.changing.lock().await;
        if self.served().build != Some(n) {
            return;
        }
        let Some(trial) = self.trial.locked().take() else { return };
        let why = format!(
            "The new shell (build {n}) did not start on the owner's device within {} s (it threw or hung at start-up), so the previous one is served again.",
            self.ready_timeout.as_secs()
        );
        tracing::warn!(build = n, "the new shell did not report ready; rolled back");
        let record = {
            let mut record = self.record.locked();
            let back = record.previous.filter(|p| *p != n);
            if let Some(b) = record.builds.iter_mut().find(|b| b.n == n) {
                b.failed = Some(why.clone());
            }
            record.serving = back;
            record.previous = None;
            record.clone()
        };
        if let Err(e) = self.save(record.clone()).await {
            tracing::warn!(error = %e, "the shell's record could not be saved");
        }
        self.switch(record.serving, Some(why.clone()));
        let source = match trial.chat.as_deref().and_then(crate::protocol::ChatId::parse) {
            Some(chat) => crate::push::Source::Chat(chat),
            None => crate::push::Source::Owner { source_type: "shell".into(), source_id: Some(n.to_string()) },
        };
        self.push.notify(crate::push::Notice::new(
            crate::protocol::NotificationKind::Agent,
            source,
            "The new shell was rolled back",
            Some(why),
        ));
    }

    /// Builds the agent's source; on success serves the new build (on trial) and tells every
    /// device. `chat`: the chat whose agent asked. A second call while one runs is refused.
    pub async fn rebuild(self: &Arc<Self>, chat: Option<String>) -> Result<Rebuilt> {
        if self.stock_source.is_none() {
            return Err(Domain::ShellNotEditable.into());
        }
        let Ok(_building) = self.building.try_lock() else {
            return Err(Domain::ShellBuildRunning.into());
        };
        // Every edit seen so far is in what this build reads (or refuses).
        self.tried.store(self.edits.load(Ordering::SeqCst), Ordering::SeqCst);
        let resolving = self.record.locked().resolving.as_ref().map(|r| r.markers.clone());
        if let Some(files) = resolving {
            let data_dir = self.data_dir.clone();
            let left = tokio::task::spawn_blocking(move || -> Result<Vec<String>> {
                let dir = crate::safe_fs::Dir::open_under(&data_dir, Path::new(SOURCE_DIR))?;
                Ok(stock::unresolved(&dir, &files))
            })
            .await
            .map_err(join_err)??;
            if !left.is_empty() {
                return Err(Domain::ShellConflictUnresolved(left.join(", ")).into());
            }
        }
        let data_dir = self.data_dir.clone();
        let node_modules = self.node_modules.clone();
        let (work, out, commit) =
            tokio::task::spawn_blocking(move || prepare(&data_dir, &node_modules)).await.map_err(join_err)??;
        let outcome = self.builder.run(&work, &out, &self.node_modules).await.map_err(Domain::ShellBuildFailed)?;
        // The build's processes are gone (its group and tree killed): its output no longer moves.
        let checked = {
            let out = out.clone();
            tokio::task::spawn_blocking(move || check_output(&out)).await.map_err(join_err)?
        };
        let refusal = match (outcome.ok, checked) {
            (true, Ok(())) => None,
            (true, Err(why)) => Some(Domain::ShellBuildFailed(why)),
            (false, _) => Some(Domain::ShellBuildFailed(outcome.output.clone())),
        };
        if let Some(refusal) = refusal {
            let partial = out.clone();
            let _ = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(partial)).await;
            return Err(refusal.into());
        }
        let _one = self.changing.lock().await;
        let (info, record) = {
            let mut record = self.record.locked();
            let n = record.next.max(record.builds.iter().map(|b| b.n + 1).max().unwrap_or(1)).max(1);
            let info =
                BuildInfo { n, at: crate::db::now_ms(), commit, confirmed: false, failed: None, chat: chat.clone() };
            record.next = n + 1;
            // Whatever a platform update left to do, this build did.
            record.resolving = None;
            record.rebuild_after_update = false;
            record.previous = record.serving;
            record.serving = Some(n);
            record.builds.push(info.clone());
            (info, record.clone())
        };
        let n = info.n;
        let builds = self.data_dir.join(BUILDS_DIR);
        let pruned = tokio::task::spawn_blocking(move || -> Result<Record> {
            let target = builds.join(n.to_string());
            if target.exists() {
                std::fs::remove_dir_all(&target)?;
            }
            mark_index(&out, n)?;
            std::fs::rename(&out, &target)?;
            Ok(prune(&builds, record))
        })
        .await
        .map_err(join_err)??;
        *self.record.locked() = pruned.clone();
        self.save(pruned).await?;
        *self.trial.locked() = Some(Trial { loaded: false, chat });
        self.switch(Some(n), None);
        Ok(Rebuilt { build: info, output: outcome.output })
    }

    /// Serves build `n` (`None`: stock), as the owner chose (Settings, `/recovery`).
    pub async fn use_build(&self, n: Option<u32>) -> Result<()> {
        let _one = self.changing.lock().await;
        let record = {
            let mut record = self.record.locked();
            if let Some(n) = n {
                let dir = self.data_dir.join(BUILDS_DIR).join(n.to_string());
                if !record.builds.iter().any(|b| b.n == n) || !dir.join("index.html").is_file() {
                    return Err(Domain::ShellBuildNotFound.into());
                }
                // The owner chose it: it is not on trial.
                if let Some(b) = record.builds.iter_mut().find(|b| b.n == n) {
                    b.confirmed = true;
                    b.failed = None;
                }
            }
            record.previous = None;
            record.serving = n;
            record.clone()
        };
        self.trial.locked().take();
        self.save(record).await?;
        self.switch(n, None);
        Ok(())
    }

    fn switch(&self, build: Option<u32>, reason: Option<String>) {
        let dir = build.map_or_else(|| self.stock_dist.clone(), |n| self.data_dir.join(BUILDS_DIR).join(n.to_string()));
        *self.served.write_locked() = Arc::new(Served { build, dir });
        if let Ok(data) = serde_json::to_string(&SystemEvent::ShellUpdated { build, reason }) {
            self.hub.publish_system(data);
        }
    }

    async fn save(&self, record: Record) -> Result<()> {
        let file = self.data_dir.join(BUILDS_DIR).join(RECORD_FILE);
        tokio::task::spawn_blocking(move || write_record(&file, &record)).await.map_err(join_err)?
    }
}

fn write_record(file: &Path, record: &Record) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(record).map_err(|e| Error::Internal(e.to_string()))?;
    let tmp = file.with_extension("json.tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, file)?;
    Ok(())
}

/// Takes a new image's stock source into the owner's copy (`stock::reconcile`) and notes in
/// `record` what is left to do: the served build's rebuild after a merge, or a conflict to
/// resolve. Returns whether `record` changed. A failure is logged and changes nothing: the
/// stock's history did not move, so the next boot tries again.
fn take_stock(stock: &Path, data_dir: &Path, record: &mut Record) -> bool {
    let shell = match crate::safe_fs::Dir::open_under(data_dir, Path::new(SOURCE_DIR)) {
        Ok(dir) => dir,
        Err(e) => {
            tracing::warn!(error = %e, "the shell's source cannot be opened; the platform update is not merged");
            return false;
        }
    };
    let version = env!("CARGO_PKG_VERSION");
    match stock::reconcile(&data_dir.join(STOCK_REPO), stock, &shell, version) {
        Ok(stock::Update::UpToDate | stock::Update::Recorded) => false,
        Ok(stock::Update::FastForwarded | stock::Update::Merged) => {
            tracing::info!("the new stock shell was merged into the owner's source");
            // Serving stock (the image's own build): nothing to build until the owner asks.
            record.rebuild_after_update = record.serving.is_some();
            true
        }
        Ok(stock::Update::Conflicted { markers, kept }) => {
            tracing::warn!(files = markers.len() + kept.len(), "the new stock shell conflicts with the owner's edits");
            let mut resolving = record.resolving.take().unwrap_or_else(|| Resolving {
                markers: Vec::new(),
                kept: Vec::new(),
                chat: None,
                at: 0,
            });
            resolving.markers.extend(markers);
            resolving.markers.sort();
            resolving.markers.dedup();
            resolving.kept = kept;
            resolving.chat = None;
            resolving.at = crate::db::now_ms();
            record.resolving = Some(resolving);
            record.rebuild_after_update = false;
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, "the new stock shell could not be merged into the owner's source");
            false
        }
    }
}

/// Copies the agent's source into a fresh work folder (refusing links and special files),
/// links the toolchain's packages in, clears the output folder. Returns the work and output folders and
/// the source's commit.
fn prepare(data_dir: &Path, node_modules: &Path) -> Result<(PathBuf, PathBuf, Option<String>)> {
    let platform = crate::safe_fs::Dir::create_under(data_dir, Path::new("platform"))?;
    // The build (the agent's code) wrote in both: removed without following a link.
    platform.remove_tree(WORK_DIR.trim_start_matches("platform/").as_ref())?;
    let builds = crate::safe_fs::Dir::create_under(data_dir, Path::new(BUILDS_DIR))?;
    builds.remove_tree(PARTIAL.as_ref())?;
    let source = crate::safe_fs::Dir::open_under(data_dir, Path::new(SOURCE_DIR))
        .map_err(|e| Domain::ShellSourceRefused(format!("{SOURCE_DIR} cannot be opened ({e})")))?;
    let work = data_dir.join(WORK_DIR);
    source::copy_source(&source, &work).map_err(|e| match e {
        source::CopyError::Refused(why) => Error::from(Domain::ShellSourceRefused(why)),
        source::CopyError::Io(e) => Error::Io(e),
    })?;
    link_packages(node_modules, &work.join("node_modules"))?;
    std::fs::create_dir(work.join(".tmp"))?;
    let out = data_dir.join(BUILDS_DIR).join(PARTIAL);
    std::fs::create_dir(&out)?;
    let commit = commit_of(&source);
    Ok((work, out, commit))
}

/// A `node_modules` folder of the build's own holding a link to each package of the toolchain:
/// packages resolve (to their real place), and vite's temporary files (`node_modules/.vite-temp`,
/// the bundled config) land in the build's folder, not in the toolchain it may only read.
fn link_packages(toolchain: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir(to)?;
    for entry in std::fs::read_dir(toolchain)? {
        let name = entry?.file_name();
        if name.as_encoded_bytes().starts_with(b".") {
            continue;
        }
        std::os::unix::fs::symlink(toolchain.join(&name), to.join(&name))?;
    }
    Ok(())
}

/// The source's current commit, read from its `HEAD` and ref files through `safe_fs` (the
/// folder is the agent's: never opened with libgit2).
fn commit_of(source: &crate::safe_fs::Dir) -> Option<String> {
    let head = source.read(Path::new(".git/HEAD"), 256).ok()?;
    let head = String::from_utf8(head).ok()?;
    let head = head.trim();
    let id = match head.strip_prefix("ref: ") {
        Some(reference) if reference.starts_with("refs/heads/") && !reference.contains("..") => {
            let bytes = source.read(&Path::new(".git").join(reference), 256).ok()?;
            String::from_utf8(bytes).ok()?.trim().to_owned()
        }
        Some(_) => return None,
        None => head.to_owned(),
    };
    (id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit())).then_some(id)
}

/// A build's output is usable: an `index.html`, and only regular files and folders (the PWA
/// host follows links; the build could plant one to anything the server may read).
fn check_output(out: &Path) -> std::result::Result<(), String> {
    let dir = crate::safe_fs::Dir::open(out).map_err(|e| format!("the build's output cannot be read ({e})"))?;
    match dir.kind("index.html".as_ref()) {
        Ok(Some(crate::safe_fs::Kind::File)) => {}
        _ => return Err("the build wrote no index.html".into()),
    }
    source::check_plain(&dir).map_err(|e| e.to_string())
}

/// Puts the build's number in its `index.html`, for the ready beacon.
fn mark_index(out: &Path, n: u32) -> Result<()> {
    let dir = crate::safe_fs::Dir::open(out)?;
    let bytes = dir.read("index.html".as_ref(), MAX_INDEX_BYTES)?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let meta = format!("<meta name=\"mobius-shell-build\" content=\"{n}\">");
    let marked = match text.find("<head>") {
        Some(at) => format!("{}{meta}{}", &text[..at + 6], &text[at + 6..]),
        None => format!("{meta}{text}"),
    };
    // Checked a plain file, in a folder nothing writes to any more.
    dir.write("index.html".as_ref(), marked.as_bytes(), 0o600)?;

    Ok(())
}

/// Keeps the newest [`KEPT_BUILDS`] builds and the one served; removes the others' folders.
fn prune(builds: &Path, mut record: Record) -> Record {
    while record.builds.len() > KEPT_BUILDS {
        let Some(at) = record.builds.iter().position(|b| Some(b.n) != record.serving && Some(b.n) != record.previous)
        else {
            break;
        };
        let gone = record.builds.remove(at);
        if let Err(e) = std::fs::remove_dir_all(builds.join(gone.n.to_string())) {
            tracing::warn!(build = gone.n, error = %e, "an old shell build could not be removed");
        }
    }
    record
}

fn join_err(e: tokio::task::JoinError) -> Error {
    Error::Internal(format!("shell task: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_number_goes_into_the_head_of_its_index() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("index.html"), "<!doctype html><html><head><title>x</title></head></html>")
            .expect("write");
        mark_index(dir.path(), 7).expect("mark");
        let text = std::fs::read_to_string(dir.path().join("index.html")).expect("read");
        assert!(text.contains("<head><meta name=\"mobius-shell-build\" content=\"7\"><title>"), "{text}");
    }

    #[test]
    fn pruning_keeps_the_newest_and_the_served_builds() {
        let dir = tempfile::tempdir().expect("tmp");
        let builds: Vec<BuildInfo> = (1..=KEPT_BUILDS as u32 + 3)
            .map(|n| {
                std::fs::create_dir(dir.path().join(n.to_string())).expect("mkdir");
                BuildInfo { n, at: 0, commit: None, confirmed: true, failed: None, chat: None }
            })
            .collect();
        let record = Record { serving: Some(2), previous: None, next: 14, builds, ..Record::default() };
        let kept = prune(dir.path(), record);
        let numbers: Vec<u32> = kept.builds.iter().map(|b| b.n).collect();
        assert_eq!(numbers.len(), KEPT_BUILDS);
        assert!(numbers.contains(&2), "the served build stays: {numbers:?}");
        assert!(!numbers.contains(&1) && !numbers.contains(&3) && !numbers.contains(&4));
        assert!(!dir.path().join("1").exists() && dir.path().join("2").exists());
    }
}
