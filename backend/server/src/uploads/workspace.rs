//! What the agent made in a chat's workspace (`agent/workspace.rs`), as the owner sees it in the
//! chat's info sheet: the files, newest first, and each one's bytes. Read through `safe_fs`
//! (the agent writes there): no link is followed — the workspace's own links to `apps/` and the
//! rest are left out, as is anything the agent planted — regular files only, every walk bounded.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::agent::workspace::WORKSPACE_DIR;
use crate::safe_fs::{Dir, Kind};

/// Files listed at most (the newest); the answer says when there were more.
pub const MAX_LISTED_FILES: usize = 500;
/// Folders below the workspace walked at most this deep.
const MAX_DEPTH: usize = 8;
/// Entries one folder may hold to be walked (a bigger one is left out).
const MAX_FOLDER_ENTRIES: usize = 5000;
/// Folders walked at most, in all.
const MAX_FOLDERS: usize = 2000;
/// Folders of tooling, not of results: not listed (their files are still the agent's).
const SKIPPED_FOLDERS: &[&str] = &["node_modules", "__pycache__"];

/// One file of the workspace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkspaceFile {
    /// Relative to the workspace, `/`-separated.
    pub path: String,
    pub size: u64,
    /// Last change, Unix milliseconds.
    pub modified: i64,
}

/// The workspace's files and whether some were left out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WorkspaceList {
    pub files: Vec<WorkspaceFile>,
    pub truncated: bool,
}

/// The files of `chat_id`'s workspace (none when it does not exist yet). Blocking.
pub fn list(data_dir: &Path, chat_id: &str) -> std::io::Result<WorkspaceList> {
    let root = match Dir::open_under(data_dir, &Path::new(WORKSPACE_DIR).join(chat_id)) {
        Ok(dir) => dir,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(WorkspaceList::default()),
        Err(e) => return Err(e),
    };
    let mut out = WorkspaceList::default();
    let mut folders = 0;
    let mut stack: Vec<(Dir, PathBuf, usize)> = vec![(root, PathBuf::new(), 0)];
    while let Some((dir, rel, depth)) = stack.pop() {
        folders += 1;
        let entries = match dir.entries(MAX_FOLDER_ENTRIES) {
            Ok(entries) => entries,
            Err(e) if crate::safe_fs::refusal(&e).is_some() => {
                out.truncated = true;
                continue;
            }
            Err(e) => return Err(e),
        };
        for entry in entries {
            let name = entry.name.as_os_str();
            let path = rel.join(name);
            match entry.kind {
                Kind::File => {
                    let Some(stat) = dir.stat(name)? else { continue };
                    out.files.push(WorkspaceFile {
                        path: path.to_string_lossy().into_owned(),
                        size: u64::try_from(stat.st_size).unwrap_or(0),
                        modified: stat.st_mtime.saturating_mul(1000) + stat.st_mtime_nsec / 1_000_000,
                    });
                }
                Kind::Dir if is_skipped(name) => {}
                Kind::Dir if depth + 1 > MAX_DEPTH || folders + stack.len() >= MAX_FOLDERS => out.truncated = true,
                Kind::Dir => match dir.sub(Path::new(name)) {
                    Ok(sub) => stack.push((sub, path, depth + 1)),
                    Err(e) if crate::safe_fs::refusal(&e).is_some() => {}
                    Err(e) => return Err(e),
                },
                // Links (the workspace's own to `apps/`… among them), FIFOs, sockets, devices.
                _ => {}
            }
        }
    }
    out.files.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| a.path.cmp(&b.path)));
    if out.files.len() > MAX_LISTED_FILES {
        out.files.truncate(MAX_LISTED_FILES);
        out.truncated = true;
    }
    Ok(out)
}

fn is_skipped(name: &OsStr) -> bool {
    name.to_str().is_none_or(|n| n.starts_with('.') || SKIPPED_FOLDERS.contains(&n))
}

/// The file `rel` of `chat_id`'s workspace, opened for reading without following any link:
/// a regular file only. Blocking.
pub fn open(data_dir: &Path, chat_id: &str, rel: &Path) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
    Dir::open_under(data_dir, &Path::new(WORKSPACE_DIR).join(chat_id))?.open_file(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_shows_the_agents_files_and_never_follows_a_link() {
        let root = tempfile::tempdir().expect("tmp");
        let data = root.path();
        assert_eq!(list(data, "c1").expect("none yet"), WorkspaceList::default());
        crate::agent::workspace::prepare(data, "c1").expect("prepare");
        let ws = data.join("workspace/c1");
        std::fs::write(data.join("apps/app.txt"), "not listed").expect("app file");
        std::fs::write(data.join("secret.key"), "k").expect("key");
        std::fs::create_dir_all(ws.join("out/.venv")).expect("dirs");
        std::fs::create_dir_all(ws.join("node_modules/x")).expect("dirs");
        std::fs::write(ws.join("hello.txt"), "hi").expect("write");
        std::fs::write(ws.join("out/chart.png"), "png").expect("write");
        std::fs::write(ws.join("out/.venv/pyvenv.cfg"), "x").expect("write");
        std::fs::write(ws.join("node_modules/x/i.js"), "x").expect("write");
        std::os::unix::fs::symlink("../../secret.key", ws.join("key.txt")).expect("planted");
        let listed = list(data, "c1").expect("list");
        let mut paths: Vec<&str> = listed.files.iter().map(|f| f.path.as_str()).collect();
        paths.sort_unstable();
        assert_eq!(paths, ["hello.txt", "out/chart.png"]);
        assert!(!listed.truncated);
        let (_, meta) = open(data, "c1", Path::new("out/chart.png")).expect("open");
        assert_eq!(meta.len(), 3);
        for bad in ["key.txt", "apps/app.txt", "../c2/x", "out", "/etc/passwd"] {
            assert!(open(data, "c1", Path::new(bad)).is_err(), "{bad} must not open");
        }
    }
}
