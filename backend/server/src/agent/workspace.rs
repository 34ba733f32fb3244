//! The agent's workspace: each chat's own writable folder, `DATA_DIR/workspace/<chat>/`, the
//! working directory of its turns. "Write me hello.txt" lands there; the owner sees and downloads
//! what is in it from the chat's info sheet (`chats/files.rs`); it goes when the chat is purged.
//!
//! Per chat, not shared: what a chat made stays with the chat the owner asked in (the info sheet
//! shows it, deleting the chat takes it), and two chats working at once never overwrite each
//! other's `out.pdf`. What is meant to outlive a chat goes to `shared/` or an app.
//!
//! The skills' paths relative to the data directory (`apps/<slug>`, `shared/…`) keep working:
//! the workspace holds links by those names to the data directory's folders (relative, so a
//! restored backup keeps them). The server never follows them: it reads the workspace through
//! `safe_fs`, and the sandbox decides what a link leads to by where it ends, not where it starts.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::safe_fs::Dir;

/// The folder of `DATA_DIR` that holds the chats' workspaces.
pub const WORKSPACE_DIR: &str = "workspace";
/// Folders of `DATA_DIR` a workspace links to by their own names.
pub const LINKED: &[&str] = &["apps", "app-data", "shared", "skills", "memory", "theme", "agent-home"];

/// `DATA_DIR/workspace/<chat>`.
pub fn path(data_dir: &Path, chat_id: &str) -> PathBuf {
    data_dir.join(WORKSPACE_DIR).join(chat_id)
}

/// Creates the chat's workspace (and its links, where the agent has not put something else by
/// that name) and returns its path.
pub fn prepare(data_dir: &Path, chat_id: &str) -> std::io::Result<PathBuf> {
    let dir = Dir::create_under(data_dir, &Path::new(WORKSPACE_DIR).join(chat_id))?;
    for name in LINKED {
        Dir::create_under(data_dir, Path::new(name))?;
        dir.symlink(OsStr::new(name), &Path::new("../..").join(name))?;
    }
    Ok(path(data_dir, chat_id))
}

/// The folders a workspace's links lead to, for a turn whose working directory is `cwd`
/// (none when `cwd` is not a workspace): the approval policies count them as the workspace.
pub fn linked_dirs(cwd: &Path) -> Vec<PathBuf> {
    match cwd.parent() {
        Some(parent) if parent.file_name().is_some_and(|n| n == WORKSPACE_DIR) => match parent.parent() {
            Some(data) => LINKED.iter().map(|name| data.join(name)).collect(),
            None => Vec::new(),
        },
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workspace_links_the_skills_folders_and_keeps_what_the_agent_put_there() {
        let root = tempfile::tempdir().expect("tmp");
        let data = root.path();
        std::fs::create_dir_all(data.join("workspace/c1")).expect("mkdir");
        // The agent made a folder of its own called `memory`: it stays.
        std::fs::create_dir(data.join("workspace/c1/memory")).expect("mkdir");
        let ws = prepare(data, "c1").expect("prepare");
        assert_eq!(ws, data.join("workspace/c1"));
        std::fs::write(data.join("apps/hello.txt"), "hi").expect("write");
        assert_eq!(std::fs::read_to_string(ws.join("apps/hello.txt")).expect("through the link"), "hi");
        assert_eq!(std::fs::read_link(ws.join("shared")).expect("link"), Path::new("../../shared"));
        assert!(std::fs::symlink_metadata(ws.join("memory")).expect("meta").is_dir(), "left as it was");
        prepare(data, "c1").expect("again");
        assert_eq!(linked_dirs(&ws), LINKED.iter().map(|n| data.join(n)).collect::<Vec<_>>());
        assert!(linked_dirs(data).is_empty(), "the data dir is no workspace");
    }
}
