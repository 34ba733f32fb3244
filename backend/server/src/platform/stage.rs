//! Downloading a release into `DATA_DIR/platform/releases/<version>/`: enough free space first,
//! the signed checksums verified before anything big is fetched, every file checked, the binary
//! unpacked and checked again, the PWA bundle unpacked (only `frontend/dist/` and `skill/`). A
//! staging folder holds it until all of it is verified; any failure deletes it, and the running
//! version is never touched.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::feed::{Feed, client};
use super::verify::{self, BINARY_FILE, MANIFEST_FILE, ReleaseManifest, SIGNATURE_FILE, SUMS_FILE, Sums};

/// Largest compressed binary downloaded.
const MAX_BINARY_DOWNLOAD_BYTES: u64 = 256 << 20;
/// Largest unpacked binary.
const MAX_BINARY_BYTES: u64 = 512 << 20;
/// Largest PWA bundle downloaded, and what it may unpack to.
const MAX_BUNDLE_DOWNLOAD_BYTES: u64 = 128 << 20;
const MAX_BUNDLE_UNPACKED_BYTES: u64 = 512 << 20;
const MAX_BUNDLE_ENTRIES: usize = 20_000;
/// A download that receives nothing for this long is given up.
const STALL_TIMEOUT: Duration = Duration::from_secs(60);
/// A whole download gives up after this long.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Free space kept beyond what the release needs.
const FREE_SPACE_MARGIN_BYTES: u64 = 64 << 20;
/// What the free-space check assumes when the feed does not give sizes.
const ASSUMED_RELEASE_BYTES: u64 = 160 << 20;

/// Why a release was not staged: a stable code (the API's) and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageError {
    pub code: &'static str,
    pub message: String,
}

impl StageError {
    fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }

    fn io(context: &str, e: &std::io::Error) -> Self {
        if e.raw_os_error() == Some(nix::libc::ENOSPC) || e.kind() == std::io::ErrorKind::StorageFull {
            Self::new("insufficient_storage", format!("The disk filled up while {context}; nothing was changed."))
        } else {
            Self::new("update_failed", format!("Could not finish {context}: {e}"))
        }
    }
}

impl std::fmt::Display for StageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A verified release, in place.
#[derive(Debug, Clone)]
pub struct Staged {
    pub manifest: ReleaseManifest,
    pub dir: PathBuf,
}

/// Progress reports: bytes done and in all.
pub type OnProgress<'a> = &'a (dyn Fn(&'static str, u64, u64) + Send + Sync);

/// Downloads and verifies the release `feed` describes, for this architecture.
pub async fn stage(
    data_dir: &Path,
    keys: &[minisign_verify::PublicKey],
    image_key: &str,
    feed: &Feed,
    on_progress: OnProgress<'_>,
) -> Result<Staged, StageError> {
    let releases = super::releases_dir(data_dir);
    std::fs::create_dir_all(&releases).map_err(|e| StageError::io("preparing the releases folder", &e))?;
    let staging = releases.join(format!(".staging-{}-{}", feed.version, uuid::Uuid::new_v4().simple()));
    std::fs::create_dir(&staging).map_err(|e| StageError::io("preparing the download", &e))?;
    let result = stage_into(&staging, data_dir, keys, image_key, feed, on_progress).await;
    match result {
        Ok(manifest) => {
            let dir = releases.join(&feed.version);
            if dir.exists() {
                let _ = std::fs::remove_dir_all(&dir);
            }
            match std::fs::rename(&staging, &dir) {
                Ok(()) => Ok(Staged { manifest, dir }),
                Err(e) => {
                    let _ = std::fs::remove_dir_all(&staging);
                    Err(StageError::io("putting the release in place", &e))
                }
            }
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            tracing::warn!(version = %feed.version, code = e.code, error = %e.message, "release refused and deleted");
            Err(e)
        }
    }
}

async fn stage_into(
    staging: &Path,
    data_dir: &Path,
    keys: &[minisign_verify::PublicKey],
    image_key: &str,
    feed: &Feed,
    on_progress: OnProgress<'_>,
) -> Result<ReleaseManifest, StageError> {
    let arch = verify::this_arch();
    let binary_asset = format!("mobius-{arch}-linux.gz");
    let known: u64 = feed.assets.values().sum();
    let total = if known == 0 { ASSUMED_RELEASE_BYTES } else { known };
    check_free_space(data_dir, total)?;
    let base = reqwest::Url::parse(&feed.base_url)
        .map_err(|e| StageError::new("update_failed", format!("The release's address is invalid: {e}")))?;
    let http = client(DOWNLOAD_TIMEOUT).map_err(|e| StageError::new("update_failed", e))?;

    on_progress("verifying", 0, total);
    let sums_bytes = fetch_small(&http, &base, SUMS_FILE).await?;
    let signature = fetch_small(&http, &base, SIGNATURE_FILE).await?;
    let signature = String::from_utf8(signature)
        .map_err(|_| StageError::new("signature_invalid", "The release's signature is not text."))?;
    let sums = verify::verify_sums(&sums_bytes, &signature, keys, &feed.version)
        .map_err(|e| StageError::new("signature_invalid", format!("The release was refused: {e}.")))?;
    let manifest_bytes = fetch_small(&http, &base, MANIFEST_FILE).await?;
    sums.check_bytes(MANIFEST_FILE, &manifest_bytes)
        .map_err(|e| StageError::new("checksum_mismatch", format!("The release was refused: {e}.")))?;
    let manifest = verify::parse_manifest(&manifest_bytes, &feed.version)
        .map_err(|e| StageError::new("checksum_mismatch", format!("The release was refused: {e}.")))?;
    if manifest.image_key != image_key {
        return Err(StageError::new(
            "image_required",
            format!(
                "Version {} changes what the image holds (agent CLIs, Node or the app libraries), so it cannot be \
                 applied in place: pull the new image instead (docker compose pull && docker compose up -d).",
                manifest.version
            ),
        ));
    }
    let binary = manifest
        .binaries
        .get(arch)
        .filter(|b| b.asset == binary_asset)
        .ok_or_else(|| StageError::new("release_unavailable", format!("The release has no binary for {arch}.")))?
        .clone();
    for (name, bytes) in
        [(SUMS_FILE, &sums_bytes), (SIGNATURE_FILE, &signature.into_bytes()), (MANIFEST_FILE, &manifest_bytes)]
    {
        std::fs::write(staging.join(name), bytes).map_err(|e| StageError::io("saving the release", &e))?;
    }

    // The binary: downloaded, its checksum checked, unpacked, its own digest checked.
    let gz = staging.join(format!("{BINARY_FILE}.gz"));
    let mut done = 0;
    download(&http, &base, &binary_asset, &gz, MAX_BINARY_DOWNLOAD_BYTES, &sums, &mut |n| {
        done += n;
        on_progress("downloading", done, total);
    })
    .await?;
    let target = staging.join(BINARY_FILE);
    let (gz2, target2, want) = (gz.clone(), target.clone(), binary.sha256.clone());
    tokio::task::spawn_blocking(move || unpack_binary(&gz2, &target2, &want))
        .await
        .map_err(|e| StageError::new("update_failed", format!("Unpacking stopped: {e}")))??;
    let _ = std::fs::remove_file(&gz);

    // The PWA and skills.
    let bundle = staging.join("pwa.tar.gz");
    download(&http, &base, &manifest.pwa.asset, &bundle, MAX_BUNDLE_DOWNLOAD_BYTES, &sums, &mut |n| {
        done += n;
        on_progress("downloading", done, total);
    })
    .await?;
    let (bundle2, staging2) = (bundle.clone(), staging.to_path_buf());
    tokio::task::spawn_blocking(move || unpack_bundle(&bundle2, &staging2))
        .await
        .map_err(|e| StageError::new("update_failed", format!("Unpacking stopped: {e}")))??;
    let _ = std::fs::remove_file(&bundle);
    on_progress("verifying", total, total);
    Ok(manifest)
}

/// Refuses early when the disk cannot hold the release (downloaded and unpacked) and a copy of
/// the database besides the margin.
fn check_free_space(data_dir: &Path, release_bytes: u64) -> Result<(), StageError> {
    let db = std::fs::metadata(data_dir.join(crate::backup::MAIN_DATABASE)).map(|m| m.len()).unwrap_or(0);
    let need = release_bytes.saturating_mul(3).saturating_add(db).saturating_add(FREE_SPACE_MARGIN_BYTES);
    let stat = nix::sys::statvfs::statvfs(data_dir)
        .map_err(|e| StageError::new("update_failed", format!("Cannot tell the free disk space: {e}")))?;
    let free = stat.blocks_available().saturating_mul(stat.fragment_size());
    if free < need {
        return Err(StageError::new(
            "insufficient_storage",
            format!("The update needs {} MiB of free disk space; {} MiB are free.", need >> 20, free >> 20),
        ));
    }
    Ok(())
}

async fn fetch_small(http: &reqwest::Client, base: &reqwest::Url, name: &str) -> Result<Vec<u8>, StageError> {
    let url = base.join(name).map_err(|e| StageError::new("update_failed", format!("Bad release address: {e}")))?;
    let mut response = http.get(url).send().await.map_err(unreachable)?;
    if !response.status().is_success() {
        return Err(StageError::new(
            "release_unavailable",
            format!("The release's {name} answered {}.", response.status()),
        ));
    }
    let mut body = Vec::new();
    while let Some(chunk) = next_chunk(&mut response).await? {
        if (body.len() + chunk.len()) as u64 > verify::MAX_SMALL_FILE_BYTES {
            return Err(StageError::new("checksum_mismatch", format!("The release's {name} is too large.")));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn unreachable(e: reqwest::Error) -> StageError {
    StageError::new("release_unavailable", format!("The release could not be downloaded: {e}"))
}

async fn next_chunk(response: &mut reqwest::Response) -> Result<Option<bytes::Bytes>, StageError> {
    match tokio::time::timeout(STALL_TIMEOUT, response.chunk()).await {
        Ok(Ok(chunk)) => Ok(chunk),
        Ok(Err(e)) => Err(unreachable(e)),
        Err(_) => Err(StageError::new("release_unavailable", "The download stalled.")),
    }
}

/// Streams `name` into `dest` (at most `cap` bytes), then checks it against `sums`.
async fn download(
    http: &reqwest::Client,
    base: &reqwest::Url,
    name: &str,
    dest: &Path,
    cap: u64,
    sums: &Sums,
    on_bytes: &mut (dyn FnMut(u64) + Send),
) -> Result<(), StageError> {
    let url = base.join(name).map_err(|e| StageError::new("update_failed", format!("Bad release address: {e}")))?;
    let mut response = http.get(url).send().await.map_err(unreachable)?;
    if !response.status().is_success() {
        return Err(StageError::new(
            "release_unavailable",
            format!("The release's {name} answered {}.", response.status()),
        ));
    }
    let mut file = std::fs::File::create(dest).map_err(|e| StageError::io("downloading the release", &e))?;
    let mut hasher = Sha256::new();
    let mut written = 0u64;
    while let Some(chunk) = next_chunk(&mut response).await? {
        written += chunk.len() as u64;
        if written > cap {
            return Err(StageError::new(
                "checksum_mismatch",
                format!("The release's {name} is larger than {} MiB.", cap >> 20),
            ));
        }
        hasher.update(&chunk);
        file.write_all(&chunk).map_err(|e| StageError::io("downloading the release", &e))?;
        on_bytes(chunk.len() as u64);
    }
    file.sync_all().map_err(|e| StageError::io("downloading the release", &e))?;
    sums.check_digest(name, &hex::encode(hasher.finalize()))
        .map_err(|e| StageError::new("checksum_mismatch", format!("The release was refused: {e}.")))
}

/// Gunzips the binary (capped), checks its digest, makes it executable.
fn unpack_binary(gz: &Path, target: &Path, want: &str) -> Result<(), StageError> {
    let input = std::fs::File::open(gz).map_err(|e| StageError::io("unpacking the binary", &e))?;
    let mut decoder = flate2::read::GzDecoder::new(input).take(MAX_BINARY_BYTES + 1);
    let mut out = std::fs::File::create(target).map_err(|e| StageError::io("unpacking the binary", &e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    loop {
        let n = decoder
            .read(&mut buf)
            .map_err(|e| StageError::new("checksum_mismatch", format!("The binary is not a valid archive: {e}")))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_BINARY_BYTES {
            return Err(StageError::new("checksum_mismatch", "The unpacked binary is too large."));
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(|e| StageError::io("unpacking the binary", &e))?;
    }
    out.sync_all().map_err(|e| StageError::io("unpacking the binary", &e))?;
    if hex::encode(hasher.finalize()) != want {
        return Err(StageError::new(
            "checksum_mismatch",
            "The release was refused: its binary does not match its signed digest.",
        ));
    }
    std::fs::set_permissions(target, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| StageError::io("unpacking the binary", &e))
}

/// Unpacks the PWA bundle into `dest`: only folders and regular files under `frontend/dist/`
/// and `skill/`, within the size and count caps.
fn unpack_bundle(bundle: &Path, dest: &Path) -> Result<(), StageError> {
    let input = std::fs::File::open(bundle).map_err(|e| StageError::io("unpacking the PWA", &e))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(input));
    let bad = |why: String| StageError::new("checksum_mismatch", format!("The PWA bundle was refused: {why}."));
    let (mut count, mut bytes) = (0usize, 0u64);
    let entries = archive.entries().map_err(|e| bad(e.to_string()))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| bad(e.to_string()))?;
        count += 1;
        bytes += entry.header().size().unwrap_or(0);
        if count > MAX_BUNDLE_ENTRIES || bytes > MAX_BUNDLE_UNPACKED_BYTES {
            return Err(bad("it is too large".into()));
        }
        let path = entry.path().map_err(|e| bad(e.to_string()))?.into_owned();
        let plain = path.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        let inside = path.starts_with("frontend/dist")
            || path.starts_with("skill")
            || path.starts_with("./frontend/dist")
            || path.starts_with("./skill");
        let kind = entry.header().entry_type();
        if !plain || !inside || !(kind.is_file() || kind.is_dir()) {
            return Err(bad(format!("it holds {}", path.display())));
        }
        entry.set_preserve_permissions(false);
        entry.unpack_in(dest).map_err(|e| StageError::io("unpacking the PWA", &e))?;
    }
    if !dest.join("frontend/dist/index.html").is_file() {
        return Err(bad("it has no frontend/dist/index.html".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_larger_than_the_free_space_is_refused_before_downloading() {
        let dir = tempfile::tempdir().expect("tmp");
        let err = check_free_space(dir.path(), u64::MAX / 8).expect_err("too large");
        assert_eq!(err.code, "insufficient_storage");
        assert!(err.message.contains("MiB"), "{}", err.message);
        assert!(check_free_space(dir.path(), 1).is_ok());
    }

    #[test]
    fn a_full_disk_is_reported_as_such() {
        let full = std::io::Error::from_raw_os_error(nix::libc::ENOSPC);
        assert_eq!(StageError::io("downloading the release", &full).code, "insufficient_storage");
        let other = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(StageError::io("downloading the release", &other).code, "update_failed");
    }

    #[test]
    fn a_bundle_with_anything_but_the_pwa_and_skills_is_refused() {
        let dir = tempfile::tempdir().expect("tmp");
        let bundle = |entries: &[(&str, &[u8])]| {
            let mut tar = tar::Builder::new(Vec::new());
            for (path, bytes) in entries {
                let mut header = tar::Header::new_gnu();
                header.set_size(bytes.len() as u64);
                header.set_mode(0o644);
                tar.append_data(&mut header, path, *bytes).expect("append");
            }
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(&tar.into_inner().expect("tar")).expect("gzip");
            let path = dir.path().join("bundle.tar.gz");
            std::fs::write(&path, gz.finish().expect("gzip")).expect("write");
            path
        };
        let good = bundle(&[("frontend/dist/index.html", b"<!doctype html>"), ("skill/core.md", b"# core")]);
        let out = dir.path().join("good");
        std::fs::create_dir(&out).expect("dir");
        unpack_bundle(&good, &out).expect("the PWA and the skills");
        assert!(out.join("frontend/dist/index.html").is_file());
        let stray = bundle(&[("frontend/dist/index.html", b"x"), ("etc/cron.d/evil", b"x")]);
        let out = dir.path().join("stray");
        std::fs::create_dir(&out).expect("dir");
        assert_eq!(unpack_bundle(&stray, &out).expect_err("stray").code, "checksum_mismatch");
        assert!(!out.join("etc").exists());
        let empty = bundle(&[("skill/core.md", b"x")]);
        let out = dir.path().join("empty");
        std::fs::create_dir(&out).expect("dir");
        assert!(unpack_bundle(&empty, &out).is_err(), "no index.html");
    }
}
