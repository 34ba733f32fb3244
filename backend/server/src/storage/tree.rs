//! One storage tree (an app's, or the shared one) and what its write lock guards.

use std::path::{Path, PathBuf};

use super::path::Root;

/// One storage tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Tree {
    App(i64),
    Shared,
    /// The copy of an app's tree a published page reads (`published/<generation>/data`): only
    /// ever written by [`super::snapshot`], read by the page's data route.
    Published(i64),
}

impl Tree {
    /// The tree's root (`app-data/<id>`, `shared`), reached without following links.
    pub(super) fn root(self, data_dir: &Path) -> Root {
        let rel = match self {
            Tree::App(id) => Path::new("app-data").join(id.to_string()),
            Tree::Shared => PathBuf::from("shared"),
            Tree::Published(generation) => Path::new("published").join(generation.to_string()).join("data"),
        };
        Root { data_dir: data_dir.to_path_buf(), rel }
    }

    pub(super) fn meta_root(self, data_dir: &Path) -> PathBuf {
        let meta = data_dir.join(".storage-meta");
        match self {
            Tree::Published(generation) => data_dir.join("published").join(generation.to_string()).join("meta"),
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
