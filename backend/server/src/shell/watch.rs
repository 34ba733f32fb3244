//! The watcher of the shell's source (`DATA_DIR/platform/shell/`): edits rebuild the shell
//! once they settle, so an owner who asked for a change sees it without the agent remembering
//! `mobius shell rebuild`.
//!
//! - inotify (`notify`), no polling: idle, it is one blocked thread and one parked task.
//! - Each folder of the source is watched on its own (not recursively, no link followed), except
//!   `.git`, `node_modules` and `dist` at the top; at most [`MAX_WATCHED_DIRS`]. The set is
//!   brought up to date after each quiet spell, so a new folder is watched from then on (the
//!   folder's creation itself is an edit, so nothing made in it is missed by the rebuild).
//! - Debounced and coalesced: a rebuild starts once the source has been quiet for the configured
//!   spell (`MOBIUS_SHELL_WATCH_MS`, 2 s), however many edits came before.
//! - Never while a turn runs: the agent edits in steps, and a half-done edit is not worth a build.
//!   The rebuild waits for the end of every running turn (then for a quiet spell again), and
//!   happens only if the source changed since the last build started — so a turn that ran
//!   `mobius shell rebuild` after its last edit causes none.
//! - Never two builds at once: one that is refused because a build runs waits for it to end and
//!   asks again (the edits-since question decides).
//! - A build that fails keeps the current shell; the owner is notified with its errors, from the
//!   chat whose turn made the last edit when one turn was running (tapping it opens that chat,
//!   where the agent can be asked to fix it; a turn that wants the errors itself runs `mobius
//!   shell rebuild`). That chat is also the build's, told if the new shell is rolled back. A conflict left by a platform update
//!   is the resolver chat's business: no notification.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use super::Shell;
use crate::agent::turn::Agents;
use crate::error::{Domain, Error};
use crate::locks::Unpoisoned;
use crate::protocol::ChatId;
use crate::safe_fs::{Dir, Kind};

/// Folders of the source watched, at most (the rest is still rebuilt, just not watched).
pub const MAX_WATCHED_DIRS: usize = 2_000;
/// Entries of one folder looked at, at most.
const MAX_DIR_ENTRIES: usize = 5_000;
/// Deepest folder watched.
const MAX_DEPTH: usize = 32;
/// Top-level names never watched: the repository, packages, output.
const IGNORED_AT_TOP: &[&str] = &[".git", "node_modules", "dist"];

/// Starts watching the source (watched when this returns). A watcher that cannot start is
/// logged: rebuilds then happen on `mobius shell rebuild` only.
pub async fn start(shell: Arc<Shell>, agents: Arc<Agents>, quiet: Duration) {
    let root = shell.source_path();
    let (poke, mut poked) = mpsc::channel::<()>(1);
    // The chat whose turn made the last edit (when one turn ran): the build is its own, so a
    // failure or a rollback is told from it.
    let edited_in: Arc<std::sync::Mutex<Option<ChatId>>> = Arc::default();
    let seen = {
        let (shell, root, poke, agents, edited_in) =
            (shell.clone(), root.clone(), poke.clone(), agents.clone(), edited_in.clone());
        move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            if matches!(event.kind, notify::EventKind::Access(_)) || !event.paths.iter().any(|p| counts(&root, p)) {
                return;
            }
            *edited_in.locked() = agents.turns.only_running();
            shell.note_edit();
            let _ = poke.try_send(());
        }
    };
    let config = notify::Config::default().with_follow_symlinks(false);
    let mut watcher = match <notify::RecommendedWatcher as notify::Watcher>::new(seen, config) {
        Ok(w) => w,
        Err(e) => {
            warn!(error = %e, "the shell's source is not watched; rebuilds need `mobius shell rebuild`");
            return;
        }
    };
    let mut watched = rewatch(&mut watcher, Vec::new(), &root).await;
    info!(folders = watched.len(), "watching the shell's source");
    tokio::spawn(async move {
        while poked.recv().await.is_some() {
            loop {
                settle(&mut poked, quiet).await;
                if agents.turns.is_empty() {
                    break;
                }
                agents.turns.none_running().await;
            }
            watched = rewatch(&mut watcher, watched, &root).await;
            if !shell.edited_since_build() {
                continue;
            }
            let chat = edited_in.locked().clone();
            match shell.rebuild(chat.as_ref().map(ToString::to_string)).await {
                Ok(built) => info!(build = built.build.n, "the shell was rebuilt after edits of its source"),
                Err(Error::Domain(Domain::ShellBuildRunning)) => {
                    shell.build_ended().await;
                    let _ = poke.try_send(());
                }
                Err(Error::Domain(Domain::ShellConflictUnresolved(files))) => {
                    debug!(files, "not rebuilt: the platform update's conflict is not resolved");
                }
                Err(e) => {
                    let why = e.client_message().unwrap_or_else(|| e.to_string());
                    warn!(error = %e, "the shell's rebuild after edits failed");
                    shell.tell_owner(chat, "The shell's rebuild failed", why);
                }
            }
        }
    });
}

/// Waits until no edit came for `quiet`.
async fn settle(poked: &mut mpsc::Receiver<()>, quiet: Duration) {
    loop {
        // allow-sleep: the quiet spell is what is waited for (a debounce).
        tokio::time::sleep(quiet).await;
        if poked.try_recv().is_err() {
            return;
        }
    }
}

/// Whether an event's path is one a build reads (not under an ignored top-level name).
fn counts(root: &Path, path: &Path) -> bool {
    match path.strip_prefix(root) {
        Ok(rel) => rel.components().next().is_none_or(|first| !IGNORED_AT_TOP.iter().any(|i| first.as_os_str() == *i)),
        Err(_) => false,
    }
}

/// Brings the watched folders up to date with the source's folders.
async fn rewatch(watcher: &mut notify::RecommendedWatcher, watched: Vec<PathBuf>, root: &Path) -> Vec<PathBuf> {
    use notify::Watcher;
    let scan_root = root.to_path_buf();
    let folders = match tokio::task::spawn_blocking(move || folders(&scan_root)).await {
        Ok(Ok(folders)) => folders,
        Ok(Err(e)) => {
            warn!(error = %e, "the shell's source cannot be scanned");
            return watched;
        }
        Err(_) => return watched,
    };
    for gone in watched.iter().filter(|f| !folders.contains(f)) {
        let _ = watcher.unwatch(gone);
    }
    let mut now = Vec::with_capacity(folders.len());
    for folder in folders {
        if watched.contains(&folder) || watcher.watch(&folder, notify::RecursiveMode::NonRecursive).is_ok() {
            now.push(folder);
        }
    }
    now
}

/// The source's folders (itself first), through `safe_fs`: no link followed, the ignored
/// names skipped, at most [`MAX_WATCHED_DIRS`].
fn folders(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found = vec![root.to_path_buf()];
    let mut stack = vec![(Dir::open(root)?, root.to_path_buf(), 0usize)];
    while let Some((dir, path, depth)) = stack.pop() {
        if depth >= MAX_DEPTH {
            continue;
        }
        for entry in dir.entries(MAX_DIR_ENTRIES)? {
            if entry.kind != Kind::Dir || (depth == 0 && IGNORED_AT_TOP.iter().any(|i| entry.name == *i)) {
                continue;
            }
            if found.len() >= MAX_WATCHED_DIRS {
                return Ok(found);
            }
            let Ok(sub) = dir.sub(entry.name.as_ref()) else { continue };
            let sub_path = path.join(&entry.name);
            found.push(sub_path.clone());
            stack.push((sub, sub_path, depth + 1));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_packages_and_output_are_not_edits() {
        let root = Path::new("/data/platform/shell");
        assert!(counts(root, Path::new("/data/platform/shell/src/main.tsx")));
        assert!(counts(root, Path::new("/data/platform/shell")));
        assert!(counts(root, Path::new("/data/platform/shell/src/.git/x")), "only at the top");
        for ignored in [".git/index", "node_modules/x/y.js", "dist/index.html", ".git"] {
            assert!(!counts(root, &root.join(ignored)), "{ignored}");
        }
        assert!(!counts(root, Path::new("/data/platform/shell-work/src/main.tsx")));
    }

    #[test]
    fn folders_skip_the_ignored_names_and_links() {
        let tmp = tempfile::tempdir().expect("tmp");
        for dir in ["src/components", ".git/objects", "node_modules/vite", "dist/assets"] {
            std::fs::create_dir_all(tmp.path().join(dir)).expect("mkdir");
        }
        std::os::unix::fs::symlink("/etc", tmp.path().join("src/etc")).expect("link");
        let mut found: Vec<String> = folders(tmp.path())
            .expect("scan")
            .iter()
            .map(|p| p.strip_prefix(tmp.path()).expect("under").display().to_string())
            .collect();
        found.sort();
        assert_eq!(found, ["", "src", "src/components"]);
    }
}
