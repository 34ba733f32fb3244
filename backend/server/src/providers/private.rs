//! Secret files (credentials) written for the owner's eyes only.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::error::Result;

/// Writes a secret file with mode 0600 (atomically: temp file + rename).
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}
