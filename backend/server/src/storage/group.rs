//! Group commit of every stored write (`PUT`); seeds, deletes and moves take the tree lock
//! directly.
//!
//! Writers queue on their tree; the first to find no leader becomes one and, on a blocking
//! thread, commits everything queued in batches: under the tree lock it decides each write in
//! arrival order (preconditions, quota) against the batch's running view of each path, then
//! stages (bodies still in memory), fsyncs and renames only the *last* accepted version of
//! each path; after the lock it
//! fsyncs the touched folders once, and only then answers every writer. A write superseded
//! within its batch was current for no reader, so skipping its bytes is indistinguishable from
//! writing them and immediately overwriting them: the answers are those of the writes applied
//! one after another, and all of them are durable when acknowledged. One app autosaving one
//! document from many places costs one fsync per batch instead of two per write.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::oneshot;

use super::disk::{self, Sidecar, Temp};
use super::etag::{self, Preconditions, Stamp};
use super::path::{Found, Root, StoragePath, locate, prepare_parent, writable_target};
use super::tree::TreeState;
use crate::error::{Domain, Error, Result};
use crate::locks::Unpoisoned;
use crate::safe_fs::Dir;

/// A write's bytes: still in memory (JSON, text) or already staged and sealed (streamed).
#[derive(Debug)]
pub(crate) enum Body {
    InMemory(Bytes),
    /// A superseded staged file is deleted when dropped.
    Staged(Temp, Stamp),
}

impl Body {
    fn size(&self) -> u64 {
        match self {
            Body::InMemory(bytes) => bytes.len() as u64,
            Body::Staged(_, stamp) => stamp.size,
        }
    }
}

/// One write waiting for its tree's next batch.
#[derive(Debug)]
pub(crate) struct Queued {
    pub rel: StoragePath,
    pub body: Body,
    pub content_type: String,
    pub pre: Preconditions,
    pub done: oneshot::Sender<Result<String>>,
}

/// A tree's queue of in-memory writes and whether a leader is draining it.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    pending: Vec<Queued>,
    leading: bool,
}

/// Where a tree's batches go and under which lock.
pub(crate) struct Target {
    pub root: Root,
    pub meta: std::path::PathBuf,
    pub quota: Option<u64>,
    pub lock: Arc<tokio::sync::Mutex<TreeState>>,
    pub queue: Arc<Mutex<Queue>>,
}

/// Queues `write`; returns `true` when the caller must start the leader ([`lead`]).
pub(crate) fn enqueue(queue: &Mutex<Queue>, write: Queued) -> bool {
    let mut q = queue.locked();
    q.pending.push(write);
    !std::mem::replace(&mut q.leading, true)
}

/// Clears the leader flag however the leader ends; a panicking leader fails what is queued
/// (dropped senders answer their writers) rather than leaving it waiting for nobody.
struct Leading<'a>(&'a Mutex<Queue>);

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        // A normal return already handed the flag back, and a new leader may hold it now.
        if std::thread::panicking() {
            let mut q = self.0.locked();
            q.leading = false;
            q.pending.clear();
        }
    }
}

/// Drains the queue batch by batch (runs on a blocking thread).
pub(crate) fn lead(target: &Target) {
    let _leading = Leading(&target.queue);
    loop {
        let batch = {
            let mut q = target.queue.locked();
            if q.pending.is_empty() {
                q.leading = false;
                return;
            }
            std::mem::take(&mut q.pending)
        };
        let mut state = target.lock.blocking_lock();
        let (answers, dirs) = commit(target, &mut state, batch);
        drop(state);
        let synced: std::result::Result<(), String> =
            dirs.iter().try_for_each(|dir| disk::sync_dir(dir).map_err(|e| format!("folder fsync failed: {e:?}")));
        for (done, answer) in answers {
            let answer = match (&synced, answer) {
                (Err(why), Ok(_)) => Err(Error::Internal(why.clone())),
                (_, answer) => answer,
            };
            let _ = done.send(answer);
        }
    }
}

/// What the batch has decided so far about one path.
struct View {
    rel: StoragePath,
    size: u64,
    tag: Option<String>,
    /// The last accepted version: what reaches the disk.
    last: Option<(Body, String)>,
}

type Answer = (oneshot::Sender<Result<String>>, Result<String>);

/// Decides and applies one batch under the tree lock; returns the answers and the folders
/// to fsync before sending them.
fn commit(target: &Target, state: &mut TreeState, batch: Vec<Queued>) -> (Vec<Answer>, Vec<Dir>) {
    let measured = || -> Result<u64> {
        match target.root.open()? {
            Some(root) => disk::tree_size(&root),
            None => Ok(0),
        }
    };
    let mut used = match state.used {
        Some(used) => used,
        None => match measured() {
            Ok(used) => used,
            Err(e) => {
                let why = format!("could not measure the storage tree: {e:?}");
                return (batch.into_iter().map(|q| (q.done, Err(Error::Internal(why.clone())))).collect(), Vec::new());
            }
        },
    };
    let mut views: Vec<View> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    // (answer, index of the view it depends on when accepted)
    let mut answers: Vec<(Answer, Option<usize>)> = Vec::with_capacity(batch.len());
    for q in batch {
        let slot = match index.get(q.rel.as_str()) {
            Some(&i) => i,
            None => match first_view(&target.root, &target.meta, &q.rel) {
                Ok(view) => {
                    index.insert(q.rel.as_str().to_owned(), views.len());
                    views.push(view);
                    views.len() - 1
                }
                Err(e) => {
                    answers.push(((q.done, Err(e)), None));
                    continue;
                }
            },
        };
        let view = &mut views[slot];
        if let Err(e) = q.pre.check(view.tag.as_deref()) {
            answers.push(((q.done, Err(e)), None));
            continue;
        }
        let size = q.body.size();
        let new_used = used.saturating_sub(view.size).saturating_add(size);
        // A write that does not grow the tree is always allowed, even over the quota.
        if let Some(quota) = target.quota
            && size > view.size
            && new_used > quota
        {
            answers.push(((q.done, Err(Domain::QuotaExceeded.into())), None));
            continue;
        }
        let tag = etag::fresh_tag();
        used = new_used;
        view.size = size;
        view.tag = Some(tag.clone());
        view.last = Some((q.body, q.content_type));
        answers.push(((q.done, Ok(tag)), Some(slot)));
    }
    let mut dirs: Vec<Dir> = Vec::new();
    let mut failed: HashMap<usize, Error> = HashMap::new();
    for (i, view) in views.iter_mut().enumerate() {
        let Some((body, content_type)) = view.last.take() else { continue };
        let tag = view.tag.clone().unwrap_or_default();
        match apply(&target.root, &target.meta, &view.rel, body, content_type, tag) {
            Ok(dir) => {
                if !dirs.iter().any(|d| d.path() == dir.path()) {
                    dirs.push(dir);
                }
            }
            Err(e) => {
                failed.insert(i, e);
            }
        }
    }
    // A failed path may have left the tree partly changed: count it again next time.
    state.used = if failed.is_empty() { Some(used) } else { None };
    let answers = answers
        .into_iter()
        .map(|((done, answer), slot)| match slot.and_then(|i| failed.get(&i)) {
            Some(e) => (done, Err(replicate(e))),
            None => (done, answer),
        })
        .collect();
    (answers, dirs)
}

/// The state of `rel` before the batch touches it.
fn first_view(root: &Root, meta: &Path, rel: &StoragePath) -> Result<View> {
    let (size, tag) = match locate(root, rel)?.found {
        Found::Missing => (0, None),
        Found::File(_, m) => (m.len(), Some(disk::describe(meta, rel, &m).0)),
        Found::Dir(_) => return Err(Domain::IsADirectory.into()),
    };
    Ok(View { rel: rel.clone(), size, tag, last: None })
}

/// Stages (if still in memory), seals and renames the final version of one path; returns
/// its folder.
fn apply(root: &Root, meta: &Path, rel: &StoragePath, body: Body, content_type: String, tag: String) -> Result<Dir> {
    let dir = prepare_parent(root, rel)?;
    // An earlier path of this batch may have made this one a folder's name.
    writable_target(&dir, rel.file_name())?;
    let (temp, stamp) = match body {
        Body::InMemory(bytes) => disk::stage_bytes(&dir, &bytes)?,
        Body::Staged(temp, stamp) => (temp, stamp),
    };
    disk::commit(temp, &dir, rel.file_name(), meta, rel, &Sidecar { content_type, tag, stamp })
}

/// A copy of `e` for each write of a path that failed.
fn replicate(e: &Error) -> Error {
    match e {
        Error::Client { status, code, message, retry_after_secs } => {
            Error::Client { status: *status, code, message: message.clone(), retry_after_secs: *retry_after_secs }
        }
        Error::Domain(d) => Error::Domain(d.clone()),
        other => Error::Internal(format!("storage write failed: {other:?}")),
    }
}
