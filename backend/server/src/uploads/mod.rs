//! Chat files: what the owner attaches to a chat and the images the agent shows in it.
//!
//! Bytes arrive as a stream and go straight to a staging file ([`Staged`]), counted against
//! the per-file limit and the quota as they come; the first bytes decide the type
//! (`sniff.rs`); images lose their metadata, get their orientation applied and a preview
//! (`image.rs`, on blocking threads); a server-chosen name (`names.rs`) is linked into
//! `DATA_DIR/uploads/<chat>/files|media/` and only then recorded through the writer. Whatever
//! fails or is dropped on the way removes what it wrote. `media.rs` turns the agent's images
//! (published, written under `DATA_DIR`, returned by a tool) into chat media; `routes.rs`
//! serves all of it with media tokens.

pub mod image;
pub mod media;
pub mod names;
pub mod routes;
pub mod sniff;
pub mod workspace;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use sqlx::SqlitePool;
use tokio::io::AsyncWriteExt;

use crate::db::{self, now_ms, uploads::ChatFile};
use crate::error::{Domain, Error, Result};
use crate::locks::KeyedLocks;
use crate::writer::{WriteCommand, WriterHandle};
use sniff::{Raster, SNIFF_BYTES};

/// The folder of `DATA_DIR` that holds chat files.
pub const UPLOADS_DIR: &str = "uploads";
/// Staged files, one per transfer in progress (emptied at start-up).
const STAGING_DIR: &str = ".staging";
/// Files one message (and one upload request) carries at most.
pub const MAX_FILES_PER_MESSAGE: usize = 10;
/// Numbered variants tried when a chat already has a file's name.
const MAX_NAME_VARIANTS: u32 = 999;

/// Whose file it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Attached by the owner.
    Upload,
    /// Shown by the agent.
    Media,
}

impl Kind {
    /// The stored name of the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Upload => "upload",
            Kind::Media => "media",
        }
    }

    fn folder(self) -> &'static str {
        match self {
            Kind::Upload => "files",
            Kind::Media => "media",
        }
    }

    /// The route segment that serves it.
    pub fn route(self) -> &'static str {
        match self {
            Kind::Upload => "uploads",
            Kind::Media => "media",
        }
    }
}

/// A chat file as the API shows it (the original's upload shape, plus what the PWA needs).
#[derive(Debug, Clone, Serialize)]
pub struct FileInfo {
    pub name: String,
    /// Where the agent reads it.
    pub path: String,
    pub size: i64,
    pub mime_type: String,
    /// Unix milliseconds.
    pub uploaded_at: i64,
    /// `/api/chats/<id>/uploads/<name>` (or `/media/`): add a media token to load it.
    pub url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<i64>,
    /// A small preview exists (`?preview=true`).
    pub preview: bool,
}

/// Chat files on disk and their limits; what routes and turns use.
#[derive(Debug)]
pub struct Uploads {
    /// `DATA_DIR/uploads`.
    root: PathBuf,
    /// Largest file, in bytes.
    pub max_file_bytes: u64,
    /// All chat files together, in bytes.
    pub quota_bytes: u64,
    /// Bytes of transfers in progress (counted against the quota before they are stored).
    in_flight: Arc<AtomicU64>,
    /// Images processed at once.
    images: tokio::sync::Semaphore,
    /// Name choices of one chat never interleave.
    names: KeyedLocks,
    read: SqlitePool,
    writer: WriterHandle,
}

impl Uploads {
    /// The chat files under `data_dir`.
    pub fn new(data_dir: &Path, max_file_bytes: u64, quota_bytes: u64, read: SqlitePool, writer: WriterHandle) -> Self {
        Self {
            root: data_dir.join(UPLOADS_DIR),
            max_file_bytes,
            quota_bytes,
            in_flight: Arc::default(),
            images: tokio::sync::Semaphore::new(image::MAX_PARALLEL_IMAGES),
            names: KeyedLocks::default(),
            read,
            writer,
        }
    }

    /// The folder of one chat's files.
    pub fn chat_dir(&self, chat_id: &str) -> PathBuf {
        self.root.join(chat_id)
    }

    /// Where a stored file is.
    pub fn path(&self, chat_id: &str, kind: Kind, name: &str) -> PathBuf {
        self.chat_dir(chat_id).join(kind.folder()).join(name)
    }

    /// Where a stored file's preview is.
    pub fn preview_path(&self, chat_id: &str, kind: Kind, name: &str) -> PathBuf {
        self.chat_dir(chat_id).join("previews").join(format!("{}-{name}.jpg", kind.as_str()))
    }

    /// The API's view of a stored row.
    pub fn info(&self, file: &ChatFile) -> FileInfo {
        let kind = if file.kind == Kind::Media.as_str() { Kind::Media } else { Kind::Upload };
        FileInfo {
            name: file.name.clone(),
            path: self.path(&file.chat_id, kind, &file.name).display().to_string(),
            size: file.size,
            mime_type: file.mime_type.clone(),
            uploaded_at: file.created_at,
            url: format!("/api/chats/{}/{}/{}", file.chat_id, kind.route(), file.name),
            width: file.width,
            height: file.height,
            preview: file.preview,
        }
    }

    /// A new staging file for one transfer; it is removed unless stored.
    pub async fn stage(&self) -> Result<Staged> {
        let dir = self.root.join(STAGING_DIR);
        tokio::fs::create_dir_all(&dir).await?;
        let path = dir.join(uuid::Uuid::new_v4().simple().to_string());
        let file = tokio::fs::File::create(&path).await?;
        Ok(Staged {
            path,
            file: Some(file),
            size: 0,
            head: Vec::with_capacity(SNIFF_BYTES),
            in_flight: self.in_flight.clone(),
            digest: None,
        })
    }

    /// [`Uploads::stage`], also hashing the bytes as they come ([`Staged::sha256`]).
    pub async fn stage_hashed(&self) -> Result<Staged> {
        let mut staged = self.stage().await?;
        staged.digest = Some(sha2::Sha256::default());
        Ok(staged)
    }

    /// Bytes of transfers in progress.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Bytes stored in all chats plus transfers in progress.
    pub async fn used(&self) -> Result<u64> {
        Ok(db::uploads::total_size(&self.read).await?.saturating_add(self.in_flight.load(Ordering::Relaxed)))
    }

    /// Removes staging files a crash left behind (at start-up).
    pub async fn sweep_staging(&self) {
        let _ = tokio::fs::remove_dir_all(self.root.join(STAGING_DIR)).await;
    }

    /// Stores a complete staged file as chat file `kind` named after `client_name`: an image
    /// (`raster`) is stripped, oriented and previewed first. Answers the stored row.
    pub async fn store(
        &self,
        chat_id: &str,
        kind: Kind,
        mut staged: Staged,
        client_name: &str,
        mime: &str,
        raster: Option<Raster>,
    ) -> Result<ChatFile> {
        staged.finish().await?;
        let mut size = staged.size;
        let mut dims = None;
        let mut preview = None;
        if let Some(raster) = raster {
            let bytes = tokio::fs::read(&staged.path).await?;
            let done = image::process_blocking(&self.images, bytes, raster)
                .await
                .map_err(|e| Domain::UnreadableImage(client_name.to_owned(), e))?;
            if let Some(bytes) = done.replacement {
                size = bytes.len() as u64;
                write_synced(&staged.path, &bytes).await?;
            }
            dims = done.size;
            preview = done.preview;
        }
        let name = names::safe_name(client_name, raster.map(Raster::extension))
            .map_err(|bad| Domain::InvalidFileName(bad.message()))?;
        let _names = self.names.lock(chat_id).await;
        let name = self.free_name(chat_id, kind, &name).await?;
        let target = self.path(chat_id, kind, &name);
        if let Some(dir) = target.parent() {
            tokio::fs::create_dir_all(dir).await?;
        }
        let preview_file = self.preview_path(chat_id, kind, &name);
        if let Some(bytes) = &preview {
            if let Some(dir) = preview_file.parent() {
                tokio::fs::create_dir_all(dir).await?;
            }
            write_synced(&preview_file, bytes).await?;
        }
        // A file left by a crash between this rename and the row is replaced, never shown.
        tokio::fs::rename(&staged.path, &target).await?;
        staged.keep();
        let row = ChatFile {
            chat_id: chat_id.to_owned(),
            kind: kind.as_str().to_owned(),
            name,
            mime_type: mime.to_owned(),
            size: i64::try_from(size).unwrap_or(i64::MAX),
            width: dims.map(|d| i64::from(d.0)),
            height: dims.map(|d| i64::from(d.1)),
            preview: preview.is_some(),
            created_at: now_ms(),
        };
        let file = row.clone();
        let quota = self.quota_bytes;
        if let Err(e) = self.writer.call(|ack| WriteCommand::FileAdd { file, quota, ack }).await {
            let _ = tokio::fs::remove_file(&target).await;
            let _ = tokio::fs::remove_file(&preview_file).await;
            return Err(e);
        }
        Ok(row)
    }

    /// The first variant of `name` no file of the chat has (on disk a leftover without a row
    /// does not count: it is replaced).
    async fn free_name(&self, chat_id: &str, kind: Kind, name: &str) -> Result<String> {
        for n in 1..=MAX_NAME_VARIANTS {
            let candidate = if n == 1 { name.to_owned() } else { names::numbered(name, n) };
            if db::uploads::get(&self.read, chat_id, kind.as_str(), &candidate).await?.is_none() {
                return Ok(candidate);
            }
        }
        Err(Domain::FileNameTaken.into())
    }

    /// Removes a chat file (its row first, then its bytes and preview): whether there was one.
    pub async fn remove(&self, chat_id: &str, kind: Kind, name: &str) -> Result<bool> {
        let chat = crate::protocol::ChatId::from(chat_id.to_owned());
        let owned = name.to_owned();
        let kind_name = kind.as_str();
        let existed = self
            .writer
            .call(|ack| WriteCommand::FileRemove { chat_id: chat, kind: kind_name, name: owned, ack })
            .await?;
        let _ = tokio::fs::remove_file(self.path(chat_id, kind, name)).await;
        let _ = tokio::fs::remove_file(self.preview_path(chat_id, kind, name)).await;
        Ok(existed)
    }

    /// Removes the folder of a purged chat.
    pub async fn remove_chat(&self, chat_id: &str) {
        let dir = self.chat_dir(chat_id);
        if let Err(e) = tokio::fs::remove_dir_all(&dir).await
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(chat.id = chat_id, error = %e, "a purged chat's files could not be removed");
        }
    }

    /// The stored row of an upload, if the chat has it.
    pub async fn get(&self, chat_id: &str, kind: Kind, name: &str) -> Result<Option<ChatFile>> {
        db::uploads::get(&self.read, chat_id, kind.as_str(), name).await
    }

    /// The chat's files of `kind`, oldest first.
    pub async fn list(&self, chat_id: &str, kind: Kind) -> Result<Vec<ChatFile>> {
        db::uploads::list(&self.read, chat_id, kind.as_str()).await
    }
}

/// Writes `bytes` to `path` and syncs it.
async fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = tokio::fs::File::create(path).await?;
    file.write_all(bytes).await?;
    file.sync_data().await
}

/// A transfer in progress: its staging file (removed on drop unless stored), its size, its
/// first bytes (to sniff) and its share of the quota's in-flight bytes.
#[derive(Debug)]
pub struct Staged {
    path: PathBuf,
    file: Option<tokio::fs::File>,
    /// Bytes written so far.
    pub size: u64,
    /// The first [`SNIFF_BYTES`] bytes.
    pub head: Vec<u8>,
    in_flight: Arc<AtomicU64>,
    /// SHA-256 of the bytes so far, when asked for.
    digest: Option<sha2::Sha256>,
}

impl Staged {
    /// Appends a chunk.
    pub async fn write(&mut self, chunk: &[u8]) -> Result<()> {
        if self.head.len() < SNIFF_BYTES {
            let take = chunk.len().min(SNIFF_BYTES - self.head.len());
            self.head.extend_from_slice(&chunk[..take]);
        }
        let file = self.file.as_mut().ok_or_else(|| Error::Internal("a finished staging file was written".into()))?;
        file.write_all(chunk).await?;
        if let Some(digest) = self.digest.as_mut() {
            sha2::Digest::update(digest, chunk);
        }
        self.size += chunk.len() as u64;
        self.in_flight.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// The SHA-256 of the bytes written (of a [`Uploads::stage_hashed`] transfer; else empty).
    pub fn sha256(&self) -> Vec<u8> {
        self.digest.clone().map(|d| sha2::Digest::finalize(d).to_vec()).unwrap_or_default()
    }

    /// Flushes and syncs the bytes (before they are stored).
    async fn finish(&mut self) -> Result<()> {
        if let Some(mut file) = self.file.take() {
            file.flush().await?;
            file.sync_data().await?;
        }
        Ok(())
    }

    /// The file now belongs to the chat: do not remove it.
    fn keep(&mut self) {
        self.path = PathBuf::new();
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        self.in_flight.fetch_sub(self.size, Ordering::Relaxed);
        if !self.path.as_os_str().is_empty() {
            // One unlink; a transfer that failed or was abandoned leaves nothing behind.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
