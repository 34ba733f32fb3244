//! The lifecycle's bounds and state, held in the shared state (no route code here, so the
//! state can hold it without depending on the routes).

use std::time::Instant;

use tokio::sync::{Mutex, Semaphore};

/// Reviews fetched at once (each a fetch into a throwaway repository).
pub const MAX_PARALLEL_REVIEWS: usize = 2;

/// Bounds and state of the app lifecycle, shared by the routes.
pub struct Lifecycle {
    /// Limits concurrent reviews.
    pub reviews: Semaphore,
    /// Limits concurrent icon renders.
    pub icons: Semaphore,
    /// When the last update check finished; held while one runs.
    pub(super) last_check: Mutex<Option<Instant>>,
    /// The store's catalog, cached.
    pub catalog: crate::apps::catalog::entries::CatalogCache,
}

impl Default for Lifecycle {
    fn default() -> Self {
        Self {
            reviews: Semaphore::new(MAX_PARALLEL_REVIEWS),
            icons: Semaphore::new(crate::apps::icon::MAX_PARALLEL_ICON_RENDERS),
            last_check: Mutex::new(None),
            catalog: crate::apps::catalog::entries::CatalogCache::default(),
        }
    }
}
