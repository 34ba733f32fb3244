//! The operations on one storage tree — read, write, delete, move, list, wipe — with the
//! tree lock, the quota and the preconditions applied. Disk work runs on blocking threads.

use std::ffi::OsStr;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::Body;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use futures_util::StreamExt;
use serde::Serialize;
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use super::disk::{self, Sidecar, Temp};
use super::etag::{self, Preconditions, Stamp};
use super::group;
use super::path::{Found, Root, StoragePath, locate, prepare_parent, valid_segment, writable_target};
use super::store::Store;
use super::tree::{Tree, TreeState};
use super::{INLINE_CONTENT_BYTES, INLINE_PAGE_BYTES, INLINE_READ_BYTES, MAX_OBJECT_BYTES};
use crate::error::{Domain, Error, Result};
use crate::safe_fs::Dir;

/// Runs blocking disk work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Error::Internal(format!("storage task failed: {e}")))?
}

/// A request body on its way to disk.
pub(crate) enum Payload {
    /// Already received and validated (JSON documents, text).
    Bytes { bytes: Bytes, content_type: String },
    /// Raw bytes still arriving; streamed to the staged file.
    Stream { body: Body, content_type: String },
}

/// What a read found.
pub(crate) enum Read {
    NotModified { tag: String },
    Inline { tag: String, content_type: String, bytes: Vec<u8> },
    Stream { tag: String, content_type: String, file: File, size: u64 },
}

/// One listing entry.
#[derive(Debug, Serialize)]
pub(crate) struct Entry {
    name: String,
    path: String,
    #[serde(rename = "type")]
    kind: &'static str,
    size: u64,
    modified_at: i64,
    mime_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    etag: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<Value>,
}

/// One page of a listing.
#[derive(Debug, Serialize)]
pub(crate) struct Page {
    entries: Vec<Entry>,
    next_cursor: Option<String>,
}

/// How to page a listing.
#[derive(Debug, Clone)]
pub(crate) struct ListOptions {
    pub limit: usize,
    pub cursor: Option<String>,
    pub include_content: bool,
}

/// One tree of one data directory.
pub(crate) struct Ctx {
    store: Arc<Store>,
    tree: Tree,
    root: Root,
    meta: PathBuf,
}

impl Ctx {
    pub fn new(store: Arc<Store>, data_dir: &Path, tree: Tree) -> Self {
        Self { store, tree, root: tree.root(data_dir), meta: tree.meta_root(data_dir) }
    }

    /// The tree's usage, walking it on first use.
    async fn usage(&self, state: &mut TreeState) -> Result<u64> {
        if let Some(used) = state.used {
            return Ok(used);
        }
        let root = self.root.clone();
        let used = blocking(move || match root.open()? {
            Some(root) => disk::tree_size(&root),
            None => Ok(0),
        })
        .await?;
        state.used = Some(used);
        Ok(used)
    }

    /// The current tag of `rel` (`None` when missing).
    async fn current_tag(&self, rel: &StoragePath) -> Result<Option<String>> {
        let (root, meta, rel) = (self.root.clone(), self.meta.clone(), rel.clone());
        blocking(move || match locate(&root, &rel)?.found {
            Found::File(_, m) => Ok(Some(disk::describe(&meta, &rel, &m).0)),
            Found::Dir(_) => Err(Domain::IsADirectory.into()),
            Found::Missing => Ok(None),
        })
        .await
    }

    /// Reads `rel`; `if_none_match` may turn the answer into 304.
    pub async fn read(&self, rel: StoragePath, if_none_match: Option<String>) -> Result<Read> {
        let (root, meta) = (self.root.clone(), self.meta.clone());
        blocking(move || {
            // The file is opened by the walk itself (from the root's descriptor, no link
            // followed, a regular file only): what is served is what was checked.
            let Found::File(mut file, m) = locate(&root, &rel)?.found else {
                return Err(Domain::FileNotFound.into());
            };
            let (tag, recorded) = disk::describe(&meta, &rel, &m);
            if if_none_match.is_some_and(|h| etag::if_none_match_hits(&h, Some(&tag))) {
                return Ok(Read::NotModified { tag });
            }
            let content_type = match recorded {
                Some(t) => t,
                None => disk::guess_type(rel.file_name(), &disk::head(&file, 512)?).to_owned(),
            };
            if m.len() <= INLINE_READ_BYTES {
                let bytes = disk::read_small(&mut file, INLINE_READ_BYTES)?;
                Ok(Read::Inline { tag, content_type, bytes })
            } else {
                Ok(Read::Stream { tag, content_type, file, size: m.len() })
            }
        })
        .await
    }

    /// Writes `rel` atomically through the tree's group commit (`group.rs`); returns the new
    /// tag once it is durable. A body already in memory is staged by the commit itself (so a
    /// superseded version never reaches the disk); a streamed body is staged as it arrives.
    pub async fn write(&self, rel: StoragePath, payload: Payload, pre: Preconditions) -> Result<String> {
        let (body, content_type) = match payload {
            Payload::Bytes { bytes, content_type } => {
                if bytes.len() as u64 > MAX_OBJECT_BYTES {
                    return Err(Domain::FileTooLarge.into());
                }
                (group::Body::InMemory(bytes), content_type)
            }
            Payload::Stream { body, content_type } => {
                // Fail fast before receiving a large body; the check that counts is the commit's.
                if !pre.is_empty() {
                    pre.check(self.current_tag(&rel).await?.as_deref())?;
                }
                let (root, r) = (self.root.clone(), rel.clone());
                let dir = blocking(move || prepare_parent(&root, &r)).await?;
                let (temp, stamp) = stage_stream(dir, body).await?;
                (group::Body::Staged(temp, stamp), content_type)
            }
        };
        let (done, answer) = tokio::sync::oneshot::channel();
        let (lock, queue) = self.store.slot(self.tree);
        if group::enqueue(&queue, group::Queued { rel, body, content_type, pre, done }) {
            let target = group::Target {
                root: self.root.clone(),
                meta: self.meta.clone(),
                quota: self.store.quota(self.tree),
                lock,
                queue,
            };
            tokio::task::spawn_blocking(move || group::lead(&target));
        }
        answer.await.map_err(|_| Error::Internal("the storage write was dropped".into()))?
    }

    /// Deletes the file `rel`.
    pub async fn delete(&self, rel: StoragePath, pre: Preconditions) -> Result<()> {
        let mut state = self.store.lock(self.tree).await;
        let (root, meta) = (self.root.clone(), self.meta.clone());
        let outcome = blocking(move || {
            let located = locate(&root, &rel)?;
            let (parent, m) = match (located.parent, located.found) {
                (Some(parent), Found::File(_, m)) => (parent, m),
                (_, Found::Dir(_)) => return Err(Domain::IsADirectory.into()),
                _ => return Err(Domain::FileNotFound.into()),
            };
            pre.check(Some(&disk::describe(&meta, &rel, &m).0))?;
            parent.remove_file(OsStr::new(&located.name))?;
            disk::remove_sidecar(&meta, &rel)?;
            disk::sync_dir(&parent)?;
            Ok(m.len())
        })
        .await;
        refund(&mut state, outcome)
    }

    /// Deletes the folder `rel` and everything in it.
    pub async fn delete_folder(&self, rel: StoragePath) -> Result<()> {
        let mut state = self.store.lock(self.tree).await;
        let (root, meta) = (self.root.clone(), self.meta.clone());
        let outcome = blocking(move || {
            let located = locate(&root, &rel)?;
            let (parent, dir) = match (located.parent, located.found) {
                (Some(parent), Found::Dir(dir)) => (parent, dir),
                (_, Found::File(..)) => {
                    return Err(Error::bad_request("not_a_directory", "This path is a file, not a folder."));
                }
                _ => return Err(Error::not_found("not_found", "There is no folder at this path.")),
            };
            let size = disk::tree_size(&dir)?;
            parent.remove_tree(OsStr::new(&located.name))?;
            disk::remove_sidecar_dir(&meta, &rel)?;
            disk::sync_dir(&parent)?;
            Ok(size)
        })
        .await;
        refund(&mut state, outcome)
    }

    /// Renames the file or folder `from` to `to`, which must not exist.
    pub async fn rename(&self, from: StoragePath, to: StoragePath) -> Result<()> {
        let mut state = self.store.lock(self.tree).await;
        let (root, meta) = (self.root.clone(), self.meta.clone());
        let outcome = blocking(move || {
            let source = locate(&root, &from)?;
            let (src_parent, is_dir) = match (source.parent, source.found) {
                (Some(parent), Found::File(..)) => (parent, false),
                (Some(parent), Found::Dir(_)) => (parent, true),
                _ => return Err(Error::not_found("not_found", "There is nothing at `from`.")),
            };
            let Found::Missing = locate(&root, &to)?.found else {
                return Err(Error::conflict("destination_exists", "Something already exists at `to`."));
            };
            if to.is_inside(&from) {
                return Err(Error::bad_request("invalid_move", "A folder cannot be moved inside itself."));
            }
            let dst_parent = prepare_parent(&root, &to)?;
            writable_target(&dst_parent, to.file_name())?;
            src_parent.rename(OsStr::new(&source.name), &dst_parent, OsStr::new(to.file_name()))?;
            disk::move_sidecars(&meta, &from, &to, is_dir)?;
            disk::sync_dir(&dst_parent)?;
            disk::sync_dir(&src_parent)?;
            Ok(())
        })
        .await;
        if let Err(e) = &outcome {
            forget_usage_on_failure(&mut state, e);
        }
        outcome
    }

    /// One page of the folder `prefix` (the root when `None`); a missing folder is empty.
    pub async fn list(&self, prefix: Option<StoragePath>, options: ListOptions) -> Result<Page> {
        let after = match &options.cursor {
            None => None,
            Some(c) => Some(decode_cursor(c)?),
        };
        let (root, meta) = (self.root.clone(), self.meta.clone());
        blocking(move || {
            let empty = Page { entries: Vec::new(), next_cursor: None };
            let dir = match &prefix {
                None => match root.open()? {
                    Some(dir) => dir,
                    None => return Ok(empty),
                },
                Some(p) => match locate(&root, p)?.found {
                    Found::Dir(dir) => dir,
                    Found::Missing => return Ok(empty),
                    Found::File(..) => {
                        return Err(Error::bad_request("not_a_directory", "This path is a file, not a folder."));
                    }
                },
            };
            let mut all = disk::read_entries(&dir)?;
            if let Some(after) = &after {
                all.retain(|(name, _)| name.as_str() > after.as_str());
            }
            let more = all.len() > options.limit;
            all.truncate(options.limit);
            let next_cursor = more.then(|| all.last().map(|(name, _)| URL_SAFE_NO_PAD.encode(name))).flatten();
            let mut budget = INLINE_PAGE_BYTES;
            let mut entries = Vec::with_capacity(all.len());
            for (name, m) in all {
                let rel = StoragePath::child(prefix.as_ref(), &name);
                let modified_at = m.stamp.modified_ms();
                let mut entry = Entry {
                    path: rel.as_str().to_owned(),
                    name,
                    kind: "dir",
                    size: 0,
                    modified_at,
                    mime_type: None,
                    etag: None,
                    content: None,
                };
                if m.is_file {
                    let (tag, recorded) = disk::describe_stamp(&meta, &rel, m.stamp);
                    // Opened from the listed folder's descriptor (no link, no FIFO).
                    let opened = dir.open_file(Path::new(&entry.name)).ok().map(|(file, _)| file);
                    let mime = match recorded {
                        Some(t) => t,
                        None => {
                            let head = opened.as_ref().and_then(|f| disk::head(f, 512).ok()).unwrap_or_default();
                            disk::guess_type(&entry.name, &head).to_owned()
                        }
                    };
                    let size = m.stamp.size;
                    if options.include_content && size <= INLINE_CONTENT_BYTES && size <= budget {
                        entry.content = opened.and_then(|file| inline_content(file, &mime, m.stamp));
                        if entry.content.is_some() {
                            budget -= size;
                        }
                    }
                    entry.kind = "file";
                    entry.size = size;
                    entry.mime_type = Some(mime);
                    entry.etag = Some(etag::quoted(&tag));
                }
                entries.push(entry);
            }
            Ok(Page { entries, next_cursor })
        })
        .await
    }

    /// Removes the whole tree and its sidecars.
    pub async fn wipe(&self) -> Result<()> {
        let mut state = self.store.lock(self.tree).await;
        let (root, meta) = (self.root.clone(), self.meta.clone());
        let outcome = blocking(move || {
            // The root is removed from its parent's descriptor, never followed (a link the
            // agent put in its place goes, not what it points at).
            let parent = root.rel.parent().unwrap_or(Path::new(""));
            let name = root.rel.file_name().unwrap_or_default();
            match Dir::open_under(&root.data_dir, parent) {
                Ok(parent) => {
                    parent.remove_tree(name)?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
            match std::fs::remove_dir_all(&meta) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                _ => {}
            }
            Ok(())
        })
        .await;
        state.used = if outcome.is_ok() { Some(0) } else { None };
        outcome
    }

    /// Writes several new files under one lock hold, skipping any path that already exists.
    pub async fn write_if_absent(&self, files: Vec<(StoragePath, Vec<u8>, String)>) -> Result<()> {
        let mut state = self.store.lock(self.tree).await;
        let mut used = self.usage(&mut state).await?;
        let quota = self.store.quota(self.tree);
        let (root, meta) = (self.root.clone(), self.meta.clone());
        let outcome = blocking(move || {
            for (rel, bytes, content_type) in files {
                if !matches!(locate(&root, &rel)?.found, Found::Missing) {
                    continue;
                }
                let size = bytes.len() as u64;
                if quota.is_some_and(|q| used.saturating_add(size) > q) {
                    return Err(Domain::QuotaExceeded.into());
                }
                let dir = prepare_parent(&root, &rel)?;
                writable_target(&dir, rel.file_name())?;
                let (temp, stamp) = disk::stage_bytes(&dir, &bytes)?;
                let sidecar = Sidecar { content_type, tag: etag::fresh_tag(), stamp };
                disk::sync_dir(&disk::commit(temp, &dir, rel.file_name(), &meta, &rel, &sidecar)?)?;
                used = used.saturating_add(size);
            }
            Ok(used)
        })
        .await;
        match outcome {
            Ok(used) => {
                state.used = Some(used);
                Ok(())
            }
            Err(e) => {
                // Some seeds may have landed before the failure: count again next time.
                state.used = None;
                Err(e)
            }
        }
    }
}

/// After a failed mutation whose effect on disk is unknown, the usage is walked again.
fn forget_usage_on_failure(state: &mut TreeState, e: &Error) {
    if !matches!(e, Error::Client { .. } | Error::Domain(_)) {
        state.used = None;
    }
}

/// Applies a deletion's refund (or forgets the usage if the deletion failed midway).
fn refund(state: &mut TreeState, outcome: Result<u64>) -> Result<()> {
    match outcome {
        Ok(freed) => {
            state.used = state.used.map(|u| u.saturating_sub(freed));
            Ok(())
        }
        Err(e) => {
            forget_usage_on_failure(state, &e);
            Err(e)
        }
    }
}

/// The JSON value or text of a small listed file (if it is still the file that was listed).
fn inline_content(mut file: File, mime: &str, stamp: Stamp) -> Option<Value> {
    if Stamp::of(&file.metadata().ok()?) != stamp {
        return None;
    }
    let bytes = disk::read_small(&mut file, INLINE_CONTENT_BYTES).ok()?;
    let essence = mime.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("application/json") {
        serde_json::from_slice(&bytes).ok()
    } else if essence.starts_with("text/") {
        String::from_utf8(bytes).ok().map(Value::String)
    } else {
        None
    }
}

fn decode_cursor(cursor: &str) -> Result<String> {
    URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .filter(|name| valid_segment(name))
        .ok_or_else(|| Error::bad_request("invalid_cursor", "The cursor is not one this server issued."))
}

/// Streams a body into a sealed temp file in `dir`.
async fn stage_stream(dir: Dir, body: Body) -> Result<(Temp, Stamp)> {
    let (file, temp) = blocking(move || Temp::create(&dir)).await?;
    let mut file = tokio::fs::File::from_std(file);
    let mut stream = body.into_data_stream();
    let mut size = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| Error::bad_request("body_incomplete", "The request body was cut off."))?;
        size += chunk.len() as u64;
        if size > MAX_OBJECT_BYTES {
            return Err(Domain::FileTooLarge.into());
        }
        file.write_all(&chunk).await?;
    }
    file.flush().await?;
    let file = file.into_std().await;
    let stamp = blocking(move || disk::seal(&file)).await?;
    Ok((temp, stamp))
}

/// Deletes every stored file of app `app_id` (its source is untouched).
pub async fn remove_app_data(store: Arc<Store>, data_dir: &Path, app_id: i64) -> Result<()> {
    Ctx::new(store, data_dir, Tree::App(app_id)).wipe().await
}
