//! Manifest `storage_seeds`: initial files an app's storage gets on apply, never overwriting
//! what is already there.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::disk::guess_type;
use super::files::{Ctx, blocking};
use super::path::StoragePath;
use super::store::Store;
use super::tree::Tree;
use crate::error::{Error, Result};

/// At most this many seeds per manifest.
pub const MAX_SEEDS: usize = 64;
/// Largest single seed.
pub const MAX_SEED_BYTES: u64 = 4 * 1024 * 1024;
/// Largest total of all seeds of one manifest.
pub const MAX_SEEDS_TOTAL_BYTES: u64 = 32 * 1024 * 1024;

fn invalid(message: String) -> Error {
    Error::bad_request("invalid_seed", message)
}

/// Rewrites a client error about `dest` as an `invalid_seed` naming it.
fn about(dest: &str, e: Error) -> Error {
    match e {
        e @ (Error::Client { .. } | Error::Domain(_)) => {
            invalid(format!("storage_seeds[{dest:?}]: {}", e.client_message().unwrap_or_default()))
        }
        other => other,
    }
}

/// Writes app `app_id`'s manifest seeds: for each `dest → value`, if `dest` does not exist
/// yet, a string value copies that file from `source_dir` (no links, no escaping it) and
/// any other value is stored as an inline JSON document. Every seed is checked before
/// anything is written.
pub async fn write_seeds(
    store: std::sync::Arc<Store>,
    data_dir: &Path,
    app_id: i64,
    source_dir: &Path,
    seeds: &Map<String, Value>,
) -> Result<()> {
    if seeds.len() > MAX_SEEDS {
        return Err(invalid(format!("A manifest may declare at most {MAX_SEEDS} storage seeds.")));
    }
    let source_dir: PathBuf = source_dir.to_path_buf();
    let seeds: Vec<(String, Value)> = seeds.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let files = blocking(move || {
        let mut total = 0u64;
        let mut files = Vec::with_capacity(seeds.len());
        for (dest, value) in seeds {
            let rel = StoragePath::parse(&dest).map_err(|e| about(&dest, e))?;
            let (bytes, content_type) = match &value {
                Value::String(src) => {
                    let bytes = read_source(&source_dir, src).map_err(|e| about(&dest, e))?;
                    let content_type = guess_type(rel.file_name(), &bytes[..bytes.len().min(512)]).to_owned();
                    (bytes, content_type)
                }
                other => {
                    let bytes =
                        serde_json::to_vec(other).map_err(|e| Error::Internal(format!("seed encoding failed: {e}")))?;
                    (bytes, "application/json".to_owned())
                }
            };
            if bytes.len() as u64 > MAX_SEED_BYTES {
                return Err(invalid(format!("storage_seeds[{dest:?}] is larger than 4 MiB.")));
            }
            total += bytes.len() as u64;
            if total > MAX_SEEDS_TOTAL_BYTES {
                return Err(invalid("The storage seeds add up to more than 32 MiB.".into()));
            }
            files.push((rel, bytes, content_type));
        }
        Ok(files)
    })
    .await?;
    Ctx::new(store, data_dir, Tree::App(app_id)).write_if_absent(files).await
}

/// Reads the seed file `src` (relative to `source_dir`, whitelisted; through `safe_fs`: no
/// link anywhere, a regular file only, at most [`MAX_SEED_BYTES`]).
fn read_source(source_dir: &Path, src: &str) -> Result<Vec<u8>> {
    let rel = StoragePath::parse(src)?;
    let not_a_file =
        || Error::bad_request("invalid_seed", format!("The seed source {src:?} is not a file in the app."));
    let dir = crate::safe_fs::Dir::open(source_dir)?;
    match dir.read(Path::new(rel.as_str()), MAX_SEED_BYTES) {
        Ok(bytes) => Ok(bytes),
        Err(e) if matches!(crate::safe_fs::refusal(&e), Some(crate::safe_fs::Refused::TooLarge(..))) => {
            Err(Error::bad_request("invalid_seed", "The seed source is larger than 4 MiB."))
        }
        Err(e) if crate::safe_fs::refusal(&e).is_some() || e.kind() == std::io::ErrorKind::NotFound => {
            Err(not_a_file())
        }
        Err(e) => Err(e.into()),
    }
}
