//! What a catalog lists, and the cache of the last one read (held in the shared state).

use std::time::Instant;

use serde::Serialize;

/// One app a catalog offers.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub id: String,
    pub name: String,
    pub description: String,
    pub version: Option<String>,
    pub author: Option<String>,
    /// The git source to review and install.
    pub source: String,
    pub categories: Vec<String>,
    pub keywords: Vec<String>,
    pub theme_color: Option<String>,
    /// The index it came from.
    pub index: String,
}

/// An index that could not be read, and why.
#[derive(Debug, Clone, Serialize)]
pub struct IndexError {
    pub index: String,
    pub message: String,
}

/// The merged catalog.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Catalog {
    pub apps: Vec<Entry>,
    pub errors: Vec<IndexError>,
}

/// The last catalog read, per set of indexes.
#[derive(Default)]
pub struct CatalogCache(pub(super) tokio::sync::Mutex<Option<(Vec<String>, Instant, Catalog)>>);
