//! The agent's images in the chat: published with `mobius media publish` (bytes over the
//! API), written under `DATA_DIR` and put in a reply as a Markdown image (copied into the
//! chat's media when the text block is final, and the link rewritten), or returned by a tool
//! (bytes from the CLI). All become chat media served by `/api/chats/<id>/media/<file>`.

use std::path::{Path, PathBuf};

use sha2::Digest;

use super::sniff::{self, Raster, Sniffed};
use super::{Kind, Uploads};
use crate::error::{Domain, Error, Result};

/// Folders of `DATA_DIR` whose images a reply may show (the agent's own working folders);
/// `agent-scratch/<chat>` and `workspace/<chat>` are added per chat (a relative path is the
/// workspace's). Nothing else the server can read is reachable.
const SHOWABLE_DIRS: &[&str] = &["apps", "app-data", "shared", "agent-home"];
/// Local images one text block imports at most.
pub const MAX_IMAGES_PER_BLOCK: usize = 8;

/// The URL of a chat's media file.
pub fn media_url(chat_id: &str, name: &str) -> String {
    format!("/api/chats/{chat_id}/media/{name}")
}

/// A local image link in Markdown text: the byte range of its target and the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalImage {
    pub range: std::ops::Range<usize>,
    pub target: String,
}

/// The Markdown images of `text` (`![alt](target)`, `![alt](<target> "title")`) whose target
/// is a local path (absolute, `file://`, or relative), not a URL or an API path.
pub fn local_images(text: &str) -> Vec<LocalImage> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(start) = text[from..].find("![").map(|i| i + from) {
        from = start + 2;
        let Some(close) = text[from..].find("](").map(|i| i + from) else { break };
        if text[from..close].contains('\n') {
            continue;
        }
        let open = close + 2;
        let (begin, end) = if text[open..].starts_with('<') {
            match text[open + 1..].find('>') {
                Some(i) => (open + 1, open + 1 + i),
                None => continue,
            }
        } else {
            let len = text[open..].find([')', ' ', '\n', '\t']).unwrap_or(text.len() - open);
            (open, open + len)
        };
        let target = &text[begin..end];
        from = end;
        if is_local(target) {
            found.push(LocalImage { range: begin..end, target: target.to_owned() });
        }
        if found.len() >= MAX_IMAGES_PER_BLOCK {
            break;
        }
    }
    found
}

fn is_local(target: &str) -> bool {
    let lower = target.to_ascii_lowercase();
    if lower.starts_with("file://") {
        return true;
    }
    let scheme = lower
        .split_once(':')
        .is_some_and(|(s, _)| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '+'));
    !target.is_empty() && !target.starts_with("/api/") && !target.starts_with('#') && !scheme
}

impl Uploads {
    /// Copies the image at `target` (as a reply names it: absolute, `file://` or relative to
    /// `data_dir`) into chat `chat_id`'s media, if it is an image in one of the agent's own
    /// folders under `data_dir`; answers its media URL.
    pub async fn import_local(&self, data_dir: &Path, chat_id: &str, target: &str) -> Option<String> {
        let rel = showable(data_dir, chat_id, target)?;
        let bytes = match read_showable(data_dir, &rel, self.max_file_bytes).await {
            Ok(bytes) if !bytes.is_empty() => bytes,
            Ok(_) => return None,
            Err(e) => {
                tracing::info!(chat.id = chat_id, error = %e, "a reply's local image was not read");
                return None;
            }
        };
        let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("image").to_owned();
        match self.save_media(chat_id, &bytes, &name).await {
            Ok(url) => Some(url),
            Err(e) => {
                tracing::info!(chat.id = chat_id, error = %e, "a reply's local image was not shown");
                None
            }
        }
    }

    /// Stores `bytes` (a raster image, else 415) as chat media named after `name`; answers
    /// its URL.
    pub async fn save_media(&self, chat_id: &str, bytes: &[u8], name: &str) -> Result<String> {
        let raster = raster_of(bytes)?;
        if bytes.len() as u64 > self.max_file_bytes {
            return Err(too_large(name, self.max_file_bytes));
        }
        let mut staged = self.stage().await?;
        staged.write(bytes).await?;
        let digest: [u8; 32] = sha2::Sha256::digest(bytes).into();
        let name = media_name(name, &digest);
        let stored = self.store(chat_id, Kind::Media, staged, &name, raster.mime(), Some(raster)).await?;
        Ok(media_url(chat_id, &stored.name))
    }
}

/// The name a media file is stored under: `<stem>-<first 8 hex of the bytes' SHA-256>` (the
/// type's extension follows), so two images of one name differ and one image keeps its name.
pub fn media_name(source: &str, sha256: &[u8]) -> String {
    let stem = source.rsplit_once('.').map_or(source, |(s, _)| s);
    let stem: String = stem.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_')).take(40).collect();
    let stem = if stem.is_empty() { "image".to_owned() } else { stem };
    format!("{stem}-{}", hex::encode(&sha256[..sha256.len().min(4)]))
}

/// The raster type of image bytes; 415 for anything else.
pub fn raster_of(bytes: &[u8]) -> Result<Raster> {
    match sniff::sniff(&bytes[..bytes.len().min(sniff::SNIFF_BYTES)], "") {
        Sniffed::Image(raster) => Ok(raster),
        _ => Err(Domain::UnsupportedType("Only PNG, JPEG, WebP and GIF images can be shown in a chat.").into()),
    }
}

/// The refusal of file `name` past the limit of `max` bytes.
pub fn too_large(name: &str, max: u64) -> Error {
    Domain::UploadTooLarge(name.to_owned(), max >> 20).into()
}

/// `target`'s path relative to `data_dir` if it names a file in one of the agent's folders
/// (lexically: no `..`; links are refused when it is read, see [`read_showable`]).
fn showable(data_dir: &Path, chat_id: &str, target: &str) -> Option<PathBuf> {
    use std::path::Component;
    let target = target.strip_prefix("file://").unwrap_or(target);
    let (rel, relative) = match Path::new(target).strip_prefix(data_dir) {
        Ok(rel) => (rel.to_path_buf(), false),
        Err(_) if Path::new(target).is_absolute() => return None,
        Err(_) => (PathBuf::from(target), true),
    };
    let parts: Vec<&std::ffi::OsStr> = rel
        .components()
        .map(|c| match c {
            Component::Normal(part) => Some(Some(part)),
            Component::CurDir => Some(None),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    let first = parts.first()?.to_str()?;
    let own = |folder: &str| first == folder && parts.get(1).is_some_and(|c| *c == chat_id) && parts.len() > 2;
    if SHOWABLE_DIRS.contains(&first) && parts.len() > 1
        || own("agent-scratch")
        || own(crate::agent::workspace::WORKSPACE_DIR)
    {
        return Some(parts.iter().collect());
    }
    // Any other relative path is the chat's workspace's: the turn's working folder.
    relative.then(|| crate::agent::workspace::path(Path::new(""), chat_id).join(parts.iter().collect::<PathBuf>()))
}

/// The bytes of the showable file `rel` of `data_dir`, at most `max`: reached without following
/// any link, a regular file only (a FIFO or device is refused, never waited on).
async fn read_showable(data_dir: &Path, rel: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let (data_dir, rel) = (data_dir.to_path_buf(), rel.to_path_buf());
    tokio::task::spawn_blocking(move || crate::safe_fs::Dir::open(&data_dir)?.read(&rel, max))
        .await
        .map_err(std::io::Error::other)?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_image_links_are_found_and_urls_left_alone() {
        let text = "Here: ![chart](apps/x/chart.png) and ![a](/data/agent-home/b.jpg \"t\") \
                    ![w](https://example.com/x.png) ![p](/api/chats/c/media/m.png) ![d](data:image/png;base64,AAAA) ![f](<file:///d/a b.png>)";
        let found: Vec<String> = local_images(text).into_iter().map(|i| i.target).collect();
        assert_eq!(found, vec!["apps/x/chart.png", "/data/agent-home/b.jpg", "file:///d/a b.png"]);
        let first = &local_images(text)[0];
        assert_eq!(&text[first.range.clone()], "apps/x/chart.png");
        assert!(local_images("no images ![broken](").is_empty());
    }

    #[tokio::test]
    async fn only_images_in_the_agents_folders_can_be_shown() {
        let dir = tempfile::tempdir().expect("tmp");
        let data = std::fs::canonicalize(dir.path()).expect("canon");
        for (folder, file) in [("apps/a", "ok.png"), ("db", "secret.png"), ("agent-scratch/other", "x.png")] {
            std::fs::create_dir_all(data.join(folder)).expect("dir");
            std::fs::write(data.join(folder).join(file), b"x").expect("file");
        }
        std::os::unix::fs::symlink(data.join("db/secret.png"), data.join("apps/a/link.png")).expect("link");
        std::os::unix::fs::symlink(data.join("db"), data.join("apps/dblink")).expect("folder link");
        std::os::unix::fs::symlink("/dev/zero", data.join("apps/a/zero.png")).expect("zero");
        nix::unistd::mkfifo(&data.join("apps/a/pipe.png"), nix::sys::stat::Mode::from_bits_truncate(0o600))
            .expect("fifo");
        let read = |target: &str| {
            let rel = showable(&data, "c1", target);
            let data = data.clone();
            async move {
                match rel {
                    Some(rel) => read_showable(&data, &rel, 1 << 20).await.ok(),
                    None => None,
                }
            }
        };
        assert_eq!(read("apps/a/ok.png").await.as_deref(), Some(&b"x"[..]));
        assert!(read(&format!("{}/apps/a/ok.png", data.display())).await.is_some());
        assert!(read("db/secret.png").await.is_none());
        assert!(read("apps/../db/secret.png").await.is_none());
        assert!(read("apps/a/link.png").await.is_none(), "a link out is never followed");
        assert!(read("apps/dblink/secret.png").await.is_none(), "nor a folder link");
        assert!(
            read("apps/a/zero.png").await.is_none() && read("apps/a/pipe.png").await.is_none(),
            "no device, no FIFO"
        );
        assert!(read("agent-scratch/other/x.png").await.is_none(), "another chat's scratch");
        // A relative path is the chat's workspace's; a link planted there is not followed.
        std::fs::create_dir_all(data.join("workspace/c1")).expect("workspace");
        std::fs::write(data.join("workspace/c1/chart.png"), b"c").expect("chart");
        std::os::unix::fs::symlink("../../db", data.join("workspace/c1/db")).expect("planted link");
        assert_eq!(read("chart.png").await.as_deref(), Some(&b"c"[..]));
        assert_eq!(read("./chart.png").await.as_deref(), Some(&b"c"[..]));
        assert!(read(&format!("{}/workspace/c1/chart.png", data.display())).await.is_some());
        assert!(read("db/secret.png").await.is_none(), "the workspace's db link is not followed");
        assert!(read(&format!("{}/workspace/c2/chart.png", data.display())).await.is_none(), "another chat's");
    }
}
