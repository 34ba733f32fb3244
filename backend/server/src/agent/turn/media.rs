//! What a turn keeps beside its transcript: the images it shows (local Markdown images and
//! tool images copied into the chat's media, at most [`MAX_MEDIA_PER_TURN`]) and the text past
//! the inline caps, spilled to the block's overflow file.

use tracing::{info, warn};

use super::Turn;
use crate::agent::fold::MAX_TURN_OVERFLOW_BYTES;

/// Most images one turn copies into the chat's media.
pub(super) const MAX_MEDIA_PER_TURN: usize = 32;

impl Turn<'_> {
    /// A final text block whose Markdown images name files the agent wrote under `DATA_DIR`:
    /// each is copied into the chat's media and the link points there (the PWA cannot load a
    /// server path). Other links stay as they are.
    pub(super) async fn show_local_images(&mut self, mut content: String) -> String {
        let found = crate::uploads::media::local_images(&content);
        // From the end, so earlier ranges stay valid.
        for image in found.into_iter().rev() {
            if self.media_count >= MAX_MEDIA_PER_TURN {
                break;
            }
            let url = match self.media.get(&image.target) {
                Some(url) => url.clone(),
                None => {
                    let url =
                        self.agents.uploads.import_local(&self.agents.data_dir, &self.chat_id, &image.target).await;
                    self.media_count += 1;
                    self.media.insert(image.target.clone(), url.clone());
                    url
                }
            };
            if let Some(url) = url {
                content.replace_range(image.range, &url);
            }
        }
        content
    }

    /// Stores an image a tool returned as chat media; its URL, or `None` past the turn's cap
    /// or when it is not an image the chat can show.
    pub(super) async fn save_tool_image(&mut self, image: crate::agent::ToolImage) -> Option<String> {
        if self.media_count >= MAX_MEDIA_PER_TURN {
            return None;
        }
        self.media_count += 1;
        let uploads = &self.agents.uploads;
        match image {
            crate::agent::ToolImage::Bytes(bytes) => match uploads.save_media(&self.chat_id, &bytes, "tool").await {
                Ok(url) => Some(url),
                Err(e) => {
                    info!(error = %e, "a tool's image was not kept");
                    None
                }
            },
            crate::agent::ToolImage::Path(path) => {
                let target = path.to_string_lossy();
                uploads.import_local(&self.agents.data_dir, &self.chat_id, &target).await
            }
        }
    }

    /// Appends text past the inline caps to its block's overflow file (the first write of a
    /// turn starts the file afresh), up to [`MAX_TURN_OVERFLOW_BYTES`] and
    /// `MAX_OVERFLOW_FILES_PER_TURN` files per turn.
    pub(super) fn spill(&mut self, item_id: &str, rest: &str) {
        use std::io::Write;
        let room = usize::try_from(MAX_TURN_OVERFLOW_BYTES.saturating_sub(self.overflow_written)).unwrap_or(0);
        let take = &rest[..crate::agent::fold::floor_boundary(rest, room)];
        if take.is_empty() {
            return;
        }
        if !self.overflow.contains_key(item_id) {
            if self.overflow.len() >= crate::agent::fold::MAX_OVERFLOW_FILES_PER_TURN {
                return;
            }
            let path = crate::agent::fold::overflow_file(&self.agents.overflow_dir, &self.chat_id, item_id);
            let opened = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::OpenOptions::new().write(true).create(true).truncate(true).open(&path));
            match opened {
                Ok(file) => {
                    self.overflow.insert(item_id.to_owned(), file);
                }
                Err(e) => {
                    warn!(error = %e, "an overflow file could not be opened; the text past the cap is dropped");
                    self.overflow_written = MAX_TURN_OVERFLOW_BYTES;
                    return;
                }
            }
        }
        if let Some(file) = self.overflow.get_mut(item_id) {
            if let Err(e) = file.write_all(take.as_bytes()) {
                warn!(error = %e, "an overflow file could not be written");
            }
            self.overflow_written += take.len() as u64;
        }
    }
}
