//! An installed app's life after install: update checks (daily, and when the owner opens the
//! Apps view), update previews, taking an update (a conflict with the owner's edits opens a
//! chat with the agent to resolve it), restoring an earlier version, uninstalling with or
//! without its data, and wiping its data alone.
//!
//! Updates and restores are built before any branch moves: a release that does not parse or
//! compile leaves the installed version running, its source untouched, and says why.

use std::path::Path;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde::Serialize;
use serde_json::Value;

use super::apply::{self, Applied, Installed, Snapshot};
use super::git::{self, ConflictFile, Plan, Source};
use super::review::{self, Permission, PermissionChange};

pub mod limits;
use crate::db::{self, apps::AppPatch, apps::AppRow, now_ms};
use crate::error::{Error, Result};
use crate::state::AppState;
use crate::writer::WriteCommand;
pub use limits::{Lifecycle, MAX_PARALLEL_REVIEWS};

/// Sources asked at once during an update check.
pub const MAX_PARALLEL_UPDATE_CHECKS: usize = 4;
/// How often every installed app's source is asked for a new release.
pub const UPDATE_CHECK_INTERVAL: Duration = Duration::from_secs(24 * 3600);
/// The first periodic check, after start-up.
const FIRST_UPDATE_CHECK_DELAY: Duration = Duration::from_secs(10 * 60);
/// A check asked for sooner than this after the last one answers from that one.
pub const MIN_RECHECK_INTERVAL: Duration = Duration::from_secs(60);
/// Longest one source may take to answer a check.
pub const UPDATE_CHECK_TIMEOUT: Duration = Duration::from_secs(30);

fn blocking_failed(e: tokio::task::JoinError) -> Error {
    Error::Internal(format!("app task: {e}"))
}

/// The source an app was installed from; 409 for apps built here.
fn source_of(data_dir: &Path, app: &AppRow) -> Result<(String, Source)> {
    let url = app.source_url.clone().ok_or_else(|| {
        Error::conflict(
            "not_installed",
            "This app was built here, not installed from a source; there is nothing to update from.",
        )
    })?;
    let source = apply::parse_source(data_dir, &url)?;
    Ok((url, source))
}

async fn check_source(source: &Source) -> Result<()> {
    if let Source::Url(url) = source {
        super::ssrf::check_url(url).await?;
    }
    Ok(())
}

/// What one check found.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    pub app_id: i64,
    pub available: bool,
    pub error: Option<String>,
}

async fn record_check(state: &AppState, id: i64, newer: Option<String>, error: Option<String>) {
    let patch = AppPatch { update_check: Some((newer, error, now_ms())), ..AppPatch::default() };
    if let Err(e) = state.writer.call(|ack| WriteCommand::AppPatch { id, patch, ack }).await {
        tracing::warn!(app.id = id, error = %e, "recording an update check failed");
    }
}

/// Asks one app's source whether it has a newer release, and records the answer.
pub async fn check_one(state: &AppState, app: &AppRow) -> Checked {
    let found = async {
        let (_, source) = source_of(&state.config.data_dir, app)?;
        check_source(&source).await?;
        let dir = state.apps.repo(&app.slug)?;
        let probe = tokio::task::spawn_blocking(move || -> Result<Option<String>> {
            let repo = dir.open()?;
            let probe = git::probe_release(&repo, &source)?;
            Ok(probe.is_new_for(&repo).then(|| probe.id()))
        });
        match tokio::time::timeout(UPDATE_CHECK_TIMEOUT, probe).await {
            Ok(joined) => joined.map_err(blocking_failed)?,
            Err(_) => Err(Error::Client {
                status: axum::http::StatusCode::GATEWAY_TIMEOUT,
                code: "source_timeout",
                message: "The source did not answer in time.".into(),
                retry_after_secs: None,
            }),
        }
    }
    .await;
    let (newer, error) = match found {
        Ok(newer) => (newer, None),
        Err(e) => (None, Some(e.to_string())),
    };
    record_check(state, app.id, newer.clone(), error.clone()).await;
    Checked { app_id: app.id, available: newer.is_some(), error }
}

/// What a check of every installed app found.
#[derive(Debug, Clone, Serialize)]
pub struct CheckSummary {
    /// False when the last check was recent enough to stand.
    pub ran: bool,
    pub checked: usize,
    pub available: usize,
    pub results: Vec<Checked>,
}

/// Checks every live app installed from a source, [`MAX_PARALLEL_UPDATE_CHECKS`] at a time.
/// Unless `force`, apps checked within [`MIN_RECHECK_INTERVAL`] are left out (their last answer
/// stands); checks asked for meanwhile wait for the running one.
pub async fn check_all(state: &AppState, force: bool) -> Result<CheckSummary> {
    let mut last = state.lifecycle.last_check.lock().await;
    let recent = now_ms() - MIN_RECHECK_INTERVAL.as_millis() as i64;
    let apps: Vec<AppRow> = db::apps::list(&state.db.read)
        .await?
        .into_iter()
        .filter(|a| a.source_url.is_some() && (force || a.update_checked_at.is_none_or(|at| at < recent)))
        .collect();
    if apps.is_empty() {
        return Ok(CheckSummary { ran: false, checked: 0, available: 0, results: Vec::new() });
    }
    let shared = state.clone();
    let results: Vec<Checked> = futures_util::stream::iter(apps)
        .map(move |app| {
            let state = shared.clone();
            async move { check_one(&state, &app).await }
        })
        .buffer_unordered(MAX_PARALLEL_UPDATE_CHECKS)
        .collect()
        .await;
    *last = Some(Instant::now());
    let available = results.iter().filter(|r| r.available).count();
    tracing::info!(checked = results.len(), available, "update check");
    Ok(CheckSummary { ran: true, checked: results.len(), available, results })
}

/// Checks for updates [`FIRST_UPDATE_CHECK_DELAY`] after start-up, then every
/// [`UPDATE_CHECK_INTERVAL`], until shutdown.
pub async fn check_periodically(state: AppState) {
    let mut stop = state.shutdown.clone();
    let mut wait = FIRST_UPDATE_CHECK_DELAY;
    loop {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = crate::shutdown::stopping(&mut stop) => return,
        }
        if let Err(e) = check_all(&state, true).await {
            tracing::warn!(error = %e, "the periodic update check failed");
        }
        wait = UPDATE_CHECK_INTERVAL;
    }
}

/// What taking a source's newest release would change.
#[derive(Debug, Clone, Serialize)]
pub struct Preview {
    /// The release previewed (apply with it to take exactly it).
    pub commit: String,
    pub up_to_date: bool,
    pub current_version: String,
    /// The release's `version`, when its manifest parses.
    pub version: Option<String>,
    pub name: Option<String>,
    #[serde(flatten)]
    pub diff: git::ReleaseDiff,
    /// Everything the release asks for, and how that differs from the installed version.
    pub permissions: Vec<Permission>,
    pub permission_changes: Vec<PermissionChange>,
    /// Why the release cannot be installed (its manifest does not parse), if so.
    pub manifest_error: Option<String>,
    /// A chat already resolving this release's conflict.
    pub resolver_chat_id: Option<String>,
}

/// Fetches the source's newest release into the app's repository and compares it with the
/// installed one. Nothing the app serves changes.
pub async fn preview(state: &AppState, app: &AppRow) -> Result<Preview> {
    let (_, source) = source_of(&state.config.data_dir, app)?;
    check_source(&source).await?;
    let _lock = state.apps.locks.lock(&app.slug).await;
    let dir = state.apps.repo(&app.slug)?;
    let installed = app.manifest.clone();
    let live = app.source_commit.clone();
    let (preview, newer) = tokio::task::spawn_blocking(move || -> Result<(Preview, Option<String>)> {
        let repo = dir.open()?;
        let release = git::fetch_release(&repo, &source)?;
        let diff = git::release_diff(&repo, release)?;
        let installed_code = live
            .as_deref()
            .and_then(|c| git2::Oid::from_str(c).ok())
            .map(|c| review::scan_code(&repo, c))
            .unwrap_or_default();
        let before = review::permissions(&installed, installed_code);
        let parsed = apply::release_manifest(&repo, release);
        let (version, name, permissions, manifest_error) = match &parsed {
            Ok(m) => (
                Some(m.version.clone()),
                Some(m.name.clone()),
                review::permissions(&m.document, review::scan_code(&repo, release)),
                None,
            ),
            Err(e) => (None, None, Vec::new(), Some(e.to_string())),
        };
        let probe = git::Probe::Commit(release);
        let up_to_date = !probe.is_new_for(&repo);
        let permission_changes =
            if parsed.is_ok() { review::permission_changes(&before, &permissions) } else { Vec::new() };
        let preview = Preview {
            commit: release.to_string(),
            up_to_date,
            current_version: String::new(),
            version,
            name,
            diff,
            permissions,
            permission_changes,
            manifest_error,
            resolver_chat_id: None,
        };
        Ok((preview, (!up_to_date).then(|| release.to_string())))
    })
    .await
    .map_err(blocking_failed)??;
    record_check(state, app.id, newer, None).await;
    let resolver_chat_id =
        app.resolver_chat_id.clone().filter(|_| app.resolver_commit.as_deref() == Some(preview.commit.as_str()));
    Ok(Preview { current_version: app.version.clone(), resolver_chat_id, ..preview })
}

/// What taking an update did.
#[derive(Debug, Serialize)]
pub struct Updated {
    /// `updated`, `up_to_date` or `conflict`.
    pub mode: &'static str,
    pub conflict_paths: Vec<String>,
    /// The chat resolving a conflict (with the agent, primed with the conflicting files).
    pub resolver_chat_id: Option<String>,
    /// False when no agent is connected: the chat waits for the owner, with `draft` to send.
    pub resolver_started: bool,
    pub draft: Option<String>,
    pub app: AppRow,
    pub warnings: Vec<String>,
}

/// An error of a step that left the installed version running, said so.
fn kept_running(e: Error, what: &str) -> Error {
    match e {
        Error::Client { status, code, message, retry_after_secs } => Error::Client {
            status,
            code,
            message: format!("{what} {message} The installed version keeps running."),
            retry_after_secs,
        },
        other => other,
    }
}

/// Takes the source's newest release (with `expect`, only if it is still that commit). Local
/// edits are replayed on top; when they conflict, the worktree holds the merge with markers
/// and a chat with the agent opens to resolve it (the live app is untouched meanwhile).
pub async fn update(state: &AppState, app: &AppRow, expect: Option<String>) -> Result<Updated> {
    let (url, source) = source_of(&state.config.data_dir, app)?;
    check_source(&source).await?;
    let lock = state.apps.locks.lock(&app.slug).await;
    let dir = state.apps.repo(&app.slug)?;
    let plan_dir = dir.clone();
    let (release, plan, resolving) =
        tokio::task::spawn_blocking(move || -> Result<(git2::Oid, Plan, Option<git2::Oid>)> {
            let repo = plan_dir.open()?;
            let release = git::fetch_release(&repo, &source)?;
            if expect.as_deref().is_some_and(|e| e != release.to_string()) {
                return Err(apply::source_changed());
            }
            let resolving = git::resolving(&repo);
            if resolving == Some(release) {
                return Ok((release, Plan::Conflict(Vec::new()), resolving));
            }
            git::abandon_resolution(&repo)?;
            Ok((release, git::plan_update(&repo, release)?, None))
        })
        .await
        .map_err(blocking_failed)??;
    let unchanged = |mode| Updated {
        mode,
        conflict_paths: Vec::new(),
        resolver_chat_id: None,
        resolver_started: false,
        draft: None,
        app: app.clone(),
        warnings: Vec::new(),
    };
    match plan {
        Plan::UpToDate => {
            record_check(state, app.id, None, None).await;
            Ok(unchanged("up_to_date"))
        }
        Plan::Conflict(_) if resolving.is_some() && app.resolver_chat_id.is_some() => Ok(Updated {
            mode: "conflict",
            resolver_chat_id: app.resolver_chat_id.clone(),
            resolver_started: true,
            ..unchanged("conflict")
        }),
        Plan::Conflict(_) => {
            let begin_dir = dir.clone();
            let files = tokio::task::spawn_blocking(move || -> Result<Vec<ConflictFile>> {
                let repo = begin_dir.open()?;
                git::begin_resolution(&repo, release)
            })
            .await
            .map_err(blocking_failed)??;
            drop(lock);
            let (chat_id, started, draft) = open_resolver(state, app, &release.to_string(), &files).await?;
            let id = app.id;
            let patch =
                AppPatch { resolver: Some(Some((chat_id.clone(), release.to_string()))), ..AppPatch::default() };
            state.writer.call(|ack| WriteCommand::AppPatch { id, patch, ack }).await?;
            Ok(Updated {
                mode: "conflict",
                conflict_paths: files.into_iter().map(|f| f.path).collect(),
                resolver_chat_id: Some(chat_id),
                resolver_started: started,
                draft,
                ..unchanged("conflict")
            })
        }
        Plan::Ready(new_main) => {
            let slug = renamed_slug(state, app, &dir, new_main).await?;
            let moved = slug != app.slug;
            let _new_lock = if moved { Some(state.apps.locks.lock(&slug).await) } else { None };
            let installed = Installed { source: url, release: Some(release.to_string()), revive_nonce: None };
            let built = apply::apply_locked(
                &state.apps,
                &slug,
                None,
                Some(installed),
                Snapshot::Commit(new_main.to_string(), "update"),
            )
            .await;
            let applied = match built {
                Ok(applied) => applied,
                Err(e) => {
                    if moved {
                        let _ = state.apps.rename_sources(&slug, &app.slug).await;
                    }
                    return Err(kept_running(e, "The update was not applied:"));
                }
            };
            let repo_dir = git::RepoRef::new(&state.config.data_dir, &slug);
            tokio::task::spawn_blocking(move || -> Result<()> {
                let repo = repo_dir.open()?;
                git::finish_update(&repo, release, new_main)
            })
            .await
            .map_err(blocking_failed)??;
            let id = app.id;
            let patch =
                AppPatch { update_check: Some((None, None, now_ms())), resolver: Some(None), ..AppPatch::default() };
            state.writer.call(|ack| WriteCommand::AppPatch { id, patch, ack }).await?;
            let app = db::apps::get(&state.db.read, id).await?.unwrap_or(applied.app);
            Ok(Updated { app, warnings: applied.warnings, ..unchanged("updated") })
        }
    }
}

/// When the planned release renames the app (its `id` changed and `previous_id` names the old
/// one), moves the folder to the new id and answers it (the apply then adopts the old row).
async fn renamed_slug(state: &AppState, app: &AppRow, dir: &git::RepoRef, commit: git2::Oid) -> Result<String> {
    let read_dir = dir.clone();
    let text = tokio::task::spawn_blocking(move || -> Result<Option<Vec<u8>>> {
        let repo = read_dir.open()?;
        git::read_file(&repo, commit, "mobius.json")
    })
    .await
    .map_err(blocking_failed)??
    .unwrap_or_default();
    let value: Value = serde_json::from_slice(&text).unwrap_or_default();
    let (Some(id), Some(previous)) =
        (value.get("id").and_then(Value::as_str), value.get("previous_id").and_then(Value::as_str))
    else {
        return Ok(app.slug.clone());
    };
    if id == app.slug || previous != app.slug || !super::manifest::valid_id(id) {
        return Ok(app.slug.clone());
    }
    let target = state.apps.apps_dir().join(id);
    let repo = state.config.data_dir.join(super::worktree::REPOS_DIR).join(id);
    let present = std::fs::symlink_metadata(&target).is_ok() || std::fs::symlink_metadata(&repo).is_ok();
    if present || db::apps::by_slug(&state.db.read, id).await?.is_some() {
        return Err(Error::conflict(
            "app_exists",
            format!("The new release renames this app to {id:?}, which is already taken."),
        ));
    }
    state.apps.rename_sources(&app.slug, id).await?;
    Ok(id.to_owned())
}

/// Opens the chat that resolves a conflicting update: the agent gets the conflicting files (as
/// the worktree now holds them, between markers) and what to do.
async fn open_resolver(
    state: &AppState,
    app: &AppRow,
    release: &str,
    files: &[ConflictFile],
) -> Result<(String, bool, Option<String>)> {
    let names: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let content = format!(
        "Please finish updating {name}: the new release and my own changes edit the same lines in {list}. \
         Keep what both meant, then apply the app again.",
        name = app.name,
        list = names.join(", "),
    );
    let mut context = format!(
        "<update_conflict app={slug:?} release={release:?}>\n\
         The app's folder is apps/{slug}/. Its new release was merged with the owner's local edits there; \
         these files conflict and hold git conflict markers (<<<<<<< local edits ======= new release >>>>>>>). \
         Edit each so that it keeps both intents and has no markers left, then run `mobius app apply {slug}`. \
         That apply completes the update; until then the installed version keeps running.\n",
        slug = app.slug,
    );
    for file in files {
        context.push_str(&format!(
            "\n--- {}{} ---\n{}\n",
            file.path,
            if file.truncated { " (cut short)" } else { "" },
            file.text
        ));
    }
    context.push_str("</update_conflict>");
    let title = format!("Resolve the update of {}", app.name);
    let (chat_id, started) = crate::chats::open_primed_chat(state, &title, content.clone(), context.clone()).await?;
    let draft = (!started).then(|| format!("{content}\n\n{context}"));
    Ok((chat_id.to_string(), started, draft))
}

/// Restores an earlier version (without `commit`: the one live before the current one). It is
/// built first; one that does not build leaves the current version running and says why.
pub async fn restore(state: &AppState, app: &AppRow, commit: Option<String>) -> Result<Applied> {
    let _lock = state.apps.locks.lock(&app.slug).await;
    let dir = state.apps.repo(&app.slug)?;
    let plan_dir = dir.clone();
    let plan = tokio::task::spawn_blocking(move || -> Result<git::RestorePlan> {
        let repo = plan_dir.open()?;
        git::plan_restore(&repo, commit.as_deref())
    })
    .await
    .map_err(blocking_failed)??;
    let applied =
        apply::apply_locked(&state.apps, &app.slug, None, None, Snapshot::Commit(plan.commit.to_string(), "restore"))
            .await
            .map_err(|e| kept_running(e, "That version does not build here:"))?;
    tokio::task::spawn_blocking(move || -> Result<()> {
        let repo = dir.open()?;
        git::finish_restore(&repo, plan)
    })
    .await
    .map_err(blocking_failed)??;
    if app.resolver_chat_id.is_some() {
        let id = app.id;
        let patch = AppPatch { resolver: Some(None), ..AppPatch::default() };
        state.writer.call(|ack| WriteCommand::AppPatch { id, patch, ack }).await?;
    }
    Ok(applied)
}

/// The version history of an app, newest first.
pub async fn history(state: &AppState, app: &AppRow) -> Result<Vec<git::HistoryEntry>> {
    let dir = state.apps.repo(&app.slug)?;
    tokio::task::spawn_blocking(move || -> Result<Vec<git::HistoryEntry>> {
        let repo = dir.open()?;
        git::history(&repo, MAX_HISTORY_ENTRIES)
    })
    .await
    .map_err(blocking_failed)?
}

/// Versions listed in an app's history.
pub const MAX_HISTORY_ENTRIES: usize = 50;

/// Uninstalls an app (recoverable for the recovery window). `keep_data: false` deletes its
/// storage and secrets at once; otherwise they stay, and installing the same app again
/// brings them back.
pub async fn uninstall(state: &AppState, app: &AppRow, keep_data: bool) -> Result<()> {
    let id = app.id;
    let patch = AppPatch { deleted_at: Some(Some(now_ms())), ..AppPatch::default() };
    state.writer.call(|ack| WriteCommand::AppPatch { id, patch, ack }).await?;
    // Its schedule stops being due with the deletion; a job still running goes now.
    state.schedules.stop_app(id, "The app was uninstalled while its job ran; the job was stopped.");
    if !keep_data {
        crate::storage::remove_app_data(state.storage.clone(), &state.config.data_dir, id).await?;
        state.writer.call(|ack| WriteCommand::AppDeleteSecrets { app_id: id, ack }).await?;
    }
    tracing::info!(app.id = id, slug = %app.slug, keep_data, "app uninstalled");
    Ok(())
}

/// Deletes everything an app stored and writes its starting documents again, as on a fresh
/// install (its secrets stay).
pub async fn delete_data(state: &AppState, app: &AppRow) -> Result<()> {
    let _lock = state.apps.locks.lock(&app.slug).await;
    crate::storage::remove_app_data(state.storage.clone(), &state.config.data_dir, app.id).await?;
    if let Some(seeds) = app.manifest.storage_seeds.as_ref().filter(|s| !s.is_empty())
        && let Ok(dir) = state.apps.source_dir(&app.slug)
    {
        crate::storage::write_seeds(state.storage.clone(), &state.config.data_dir, app.id, &dir, seeds).await?;
    }
    tracing::info!(app.id = app.id, slug = %app.slug, "app data deleted");
    Ok(())
}
