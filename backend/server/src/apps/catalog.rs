//! The store: catalog indexes (a setting; the default is the original product's public
//! catalog) merged into one list the shell and store apps browse and search. Each entry
//! names a git source; installing one goes through the same review as a pasted link.
//!
//! An index is the original's `catalog.json` (`{schema: 1, apps: [{id, name, description,
//! repo, manifest?, categories?, keywords?}]}`); an entry may also name its `source` (a git URL
//! or, for local catalogs, a folder). Indexes are `https://` URLs fetched through the proxy's
//! public-only client, or absolute paths of `.json` files on the server (tests, local mirrors).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::db;
use crate::error::{Error, Result};
use crate::state::AppState;
use crate::writer::WriteCommand;

/// The original product's public catalog.
pub const DEFAULT_CATALOG_INDEX: &str = "https://raw.githubusercontent.com/mobius-os/app-store/main/catalog.json";
/// Indexes the owner may list.
pub const MAX_CATALOG_INDEXES: usize = 8;
/// Largest index document read.
pub const MAX_CATALOG_INDEX_BYTES: usize = 2 * 1024 * 1024;
/// Entries kept per index.
pub const MAX_CATALOG_ENTRIES: usize = 500;
/// How long a fetched catalog is reused.
pub const CATALOG_TTL: Duration = Duration::from_secs(10 * 60);
/// Longest accepted index address.
const MAX_INDEX_CHARS: usize = 2048;
/// Longest text kept per entry field.
const MAX_FIELD_CHARS: usize = 600;

pub mod entries;
pub use entries::{Catalog, CatalogCache, Entry, IndexError};

/// The indexes in force.
pub async fn indexes(state: &AppState) -> Result<Vec<String>> {
    let stored = db::owner::catalog_indexes(&state.db.read).await?;
    Ok(stored
        .and_then(|s| serde_json::from_str::<Vec<String>>(&s).ok())
        .unwrap_or_else(|| vec![DEFAULT_CATALOG_INDEX.to_owned()]))
}

/// Folders of the operating system no catalog is read from.
const SYSTEM_FOLDERS: &[&str] = &["/proc", "/sys", "/dev", "/run", "/boot", "/etc", "/root", "/var/lib", "/var/log"];

/// Checks an index address: an `https://` URL, or an absolute path of a `.json` file outside
/// the data folder and the system's folders.
pub fn check_index(state: &AppState, index: &str) -> Result<String> {
    let index = index.trim();
    let bad =
        |why: &str| Error::bad_request("invalid_catalog_index", format!("{index:?} is not a catalog index: {why}."));
    if index.is_empty() || index.len() > MAX_INDEX_CHARS || index.chars().any(char::is_control) {
        return Err(bad("give an https:// address or a .json file's absolute path"));
    }
    if index.starts_with("https://") {
        return Ok(index.to_owned());
    }
    if !index.starts_with('/') || !index.ends_with(".json") {
        return Err(bad("give an https:// address or a .json file's absolute path"));
    }
    let path = std::fs::canonicalize(index).map_err(|_| bad("that file does not exist"))?;
    let data_dir = std::fs::canonicalize(&state.config.data_dir).unwrap_or_else(|_| state.config.data_dir.clone());
    if path.starts_with(&data_dir) || SYSTEM_FOLDERS.iter().any(|f| path.starts_with(f)) {
        return Err(bad("Möbius does not read catalogs from its own or the system's folders"));
    }
    Ok(index.to_owned())
}

/// Stores the owner's indexes (`None` or an empty list: the default catalog).
pub async fn set_indexes(state: &AppState, list: Option<Vec<String>>) -> Result<Vec<String>> {
    let list = list.unwrap_or_default();
    if list.len() > MAX_CATALOG_INDEXES {
        return Err(Error::bad_request(
            "too_many_catalog_indexes",
            format!("List at most {MAX_CATALOG_INDEXES} catalogs."),
        ));
    }
    let mut checked = Vec::new();
    for index in &list {
        let index = check_index(state, index)?;
        if !checked.contains(&index) {
            checked.push(index);
        }
    }
    let stored = (!checked.is_empty()).then(|| serde_json::to_string(&checked).unwrap_or_default());
    state.writer.call(|ack| WriteCommand::SetCatalogIndexes { indexes: stored, ack }).await?;
    *state.lifecycle.catalog.0.lock().await = None;
    indexes(state).await
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str)
        .map(|s| s.trim().chars().take(MAX_FIELD_CHARS).collect::<String>())
        .filter(|s| !s.is_empty())
}

fn words(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array).into_iter().flatten().filter_map(|w| text(Some(w))).take(32).collect()
}

/// The entries of one index document (malformed entries are skipped).
pub fn parse_index(index: &str, bytes: &[u8]) -> Result<Vec<Entry>> {
    let doc: Value = serde_json::from_slice(bytes)
        .map_err(|e| Error::bad_gateway("catalog_invalid", format!("The catalog is not valid JSON: {e}.")))?;
    let apps = doc
        .get("apps")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::bad_gateway("catalog_invalid", "The catalog has no `apps` list."))?;
    let empty = Map::new();
    Ok(apps
        .iter()
        .take(MAX_CATALOG_ENTRIES)
        .filter_map(|app| {
            let app = app.as_object()?;
            let manifest = app.get("manifest").and_then(Value::as_object).unwrap_or(&empty);
            let id = text(app.get("id")).filter(|id| super::manifest::valid_id(id))?;
            let source = text(app.get("source")).or_else(|| {
                text(app.get("repo"))
                    .filter(|r| {
                        r.split('/').count() == 2
                            && !r.starts_with('.')
                            && !r.contains("..")
                            && r.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b))
                    })
                    .map(|repo| format!("https://github.com/{repo}.git"))
            })?;
            let author = match manifest.get("author") {
                Some(Value::Object(o)) => text(o.get("name")),
                other => text(other),
            };
            Some(Entry {
                name: text(app.get("name")).or_else(|| text(manifest.get("name"))).unwrap_or_else(|| id.clone()),
                description: text(app.get("description"))
                    .or_else(|| text(manifest.get("description")))
                    .unwrap_or_default(),
                version: text(manifest.get("version")),
                author,
                categories: words(app.get("categories")),
                keywords: words(app.get("keywords")),
                theme_color: text(manifest.get("theme_color")).filter(|c| c.len() == 7 && c.starts_with('#')),
                index: index.to_owned(),
                source,
                id,
            })
        })
        .collect())
}

async fn read_index(state: &AppState, index: &str) -> Result<Vec<u8>> {
    if index.starts_with("https://") {
        return super::proxy::fetch_public(state, index, MAX_CATALOG_INDEX_BYTES).await;
    }
    let path = Path::new(index).to_path_buf();
    let meta = tokio::fs::metadata(&path)
        .await
        .map_err(|_| Error::bad_gateway("catalog_unavailable", "The catalog file cannot be read."))?;
    if meta.len() > MAX_CATALOG_INDEX_BYTES as u64 {
        return Err(Error::bad_gateway("document_too_large", "The catalog file is too large."));
    }
    Ok(tokio::fs::read(&path).await?)
}

/// The merged catalog of every index (fetched at most every [`CATALOG_TTL`] unless `refresh`).
/// An index that fails is reported in `errors`; the others still count.
pub async fn catalog(state: &AppState, refresh: bool) -> Result<Catalog> {
    let list = indexes(state).await?;
    let mut cache = state.lifecycle.catalog.0.lock().await;
    if !refresh
        && let Some((cached_for, at, catalog)) = cache.as_ref()
        && *cached_for == list
        && at.elapsed() < CATALOG_TTL
    {
        return Ok(catalog.clone());
    }
    let mut catalog = Catalog::default();
    for index in &list {
        match read_index(state, index).await.and_then(|bytes| parse_index(index, &bytes)) {
            Ok(entries) => {
                for entry in entries {
                    if !catalog.apps.iter().any(|a| a.id == entry.id) {
                        catalog.apps.push(entry);
                    }
                }
            }
            Err(e) => catalog.errors.push(IndexError { index: index.clone(), message: e.to_string() }),
        }
    }
    *cache = Some((list, Instant::now(), catalog.clone()));
    Ok(catalog)
}

/// True when `entry` matches every word of `query` (name, description, keywords, categories).
pub fn matches(entry: &Entry, query: &str) -> bool {
    let haystack = format!(
        "{} {} {} {} {}",
        entry.id,
        entry.name,
        entry.description,
        entry.keywords.join(" "),
        entry.categories.join(" ")
    )
    .to_lowercase();
    query.to_lowercase().split_whitespace().all(|w| haystack.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_originals_catalog_shape_is_read_and_bad_entries_skipped() {
        let doc = br#"{"schema":1,"apps":[
            {"id":"memory","name":"Memory","description":"Facts.","repo":"mobius-os/app-memory",
             "categories":["system"],"keywords":["notes"],"manifest":{"version":"2.1.5","author":"mobius-os"}},
            {"id":"local","source":"/srv/apps/local","manifest":{"name":"Local","description":"Here."}},
            {"id":"Bad Id","repo":"x/y"},
            {"id":"norepo"},
            {"id":"evil","repo":"../../etc"}
        ]}"#;
        let entries = parse_index("https://example.com/catalog.json", doc).expect("parses");
        let ids: Vec<&str> = entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["memory", "local"]);
        assert_eq!(entries[0].source, "https://github.com/mobius-os/app-memory.git");
        assert_eq!(entries[0].version.as_deref(), Some("2.1.5"));
        assert_eq!(entries[1].name, "Local");
        assert!(matches(&entries[0], "NOTES system"));
        assert!(!matches(&entries[0], "kanban"));
        assert!(parse_index("x", b"{}").is_err());
    }
}
