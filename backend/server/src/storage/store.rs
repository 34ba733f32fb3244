//! The locks and quota of the storage trees of one data directory.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::group;
use super::tree::{Tree, TreeState};
use crate::locks::Unpoisoned;

/// One tree's write lock and the queue of its group commit.
pub(super) type Slot = (Arc<tokio::sync::Mutex<TreeState>>, Arc<Mutex<group::Queue>>);

/// The locks and quota of the storage trees under one data directory (one per server, in
/// `AppState`: everything that writes these files in this process must share it).
#[derive(Debug)]
pub struct Store {
    trees: Mutex<HashMap<Tree, Slot>>,
    app_quota: AtomicU64,
}

impl Store {
    /// A store whose apps may each keep `app_quota_bytes`.
    pub fn new(app_quota_bytes: u64) -> Arc<Self> {
        Arc::new(Self { trees: Mutex::default(), app_quota: AtomicU64::new(app_quota_bytes) })
    }

    /// Waits for, then holds, `tree`'s write lock.
    pub(super) async fn lock(&self, tree: Tree) -> tokio::sync::OwnedMutexGuard<TreeState> {
        self.slot(tree).0.lock_owned().await
    }

    /// `tree`'s lock (blocking tasks take it with `blocking_lock`) and group-commit queue.
    pub(super) fn slot(&self, tree: Tree) -> Slot {
        self.trees.locked().entry(tree).or_default().clone()
    }

    pub(super) fn quota(&self, tree: Tree) -> Option<u64> {
        match tree {
            Tree::App(_) => Some(self.app_quota.load(Ordering::Relaxed)),
            Tree::Shared | Tree::Published(_) => None,
        }
    }
}
