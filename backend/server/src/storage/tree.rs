//! One storage tree (an app's, or the shared one) and what its write lock guards.

use std::path::{Path, PathBuf};

use super::{app_data_dir, shared_dir};

/// One storage tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Tree {
    App(i64),
    Shared,
}

impl Tree {
    pub(super) fn root(self, data_dir: &Path) -> PathBuf {
        match self {
            Tree::App(id) => app_data_dir(data_dir, id),
            Tree::Shared => shared_dir(data_dir),
        }
    }

    pub(super) fn meta_root(self, data_dir: &Path) -> PathBuf {
        let meta = data_dir.join(".storage-meta");
        match self {
            Tree::App(id) => meta.join("apps").join(id.to_string()),
            Tree::Shared => meta.join("shared"),
        }
    }
}

/// What a tree's lock guards besides the files themselves.
#[derive(Debug, Default)]
pub(crate) struct TreeState {
    /// Bytes stored in the tree: walked once, then charged and refunded by every write.
    pub(super) used: Option<u64>,
}
