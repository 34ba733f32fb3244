//! Operations commands: `mobius backup` (a consistent copy of a live `DATA_DIR`),
//! `mobius restore` (into a stopped server's empty data directory) and `mobius healthcheck`
//! (the container's probe of the local server).
//!
//! A backup is a plain directory: every file of `DATA_DIR` with its mode, each SQLite
//! database as an online snapshot (`VACUUM INTO`) instead of its live file, WAL and shared
//! memory, and `mobius-backup.json`, written last, so an interrupted backup never restores.

mod args;
mod copy;
mod probe;

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use args::{backup_command, healthcheck_command, restore_command};
pub(crate) use copy::snapshot_database;
pub use copy::{backup, read_manifest, restore};
pub use probe::{local_address, probe};

/// The file that marks a directory as a complete backup.
pub const MANIFEST_FILE: &str = "mobius-backup.json";

/// Layout version of a backup directory; `restore` refuses any other.
pub const BACKUP_FORMAT: u32 = 1;

/// The main database, relative to `DATA_DIR`.
pub const MAIN_DATABASE: &str = "db/mobius.sqlite3";

/// Why a backup, restore or probe failed; printed as one line by the commands.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// The request cannot be carried out as asked (wrong or non-empty directory, not a backup).
    #[error("{0}")]
    Refused(String),
    /// A filesystem operation failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// SQLite refused to snapshot or check a database.
    #[error("{context}: {source}")]
    Db {
        context: String,
        #[source]
        source: sqlx::Error,
    },
}

pub(crate) fn io_error(context: impl std::fmt::Display, path: &Path) -> impl FnOnce(std::io::Error) -> BackupError {
    let context = format!("{context} {}", path.display());
    move |source| BackupError::Io { context, source }
}

/// What a backup holds, written to [`MANIFEST_FILE`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    /// [`BACKUP_FORMAT`] at the time of writing.
    pub format: u32,
    /// Unix milliseconds when the backup finished.
    pub created_at_ms: i64,
    /// The `mobius` version and build that wrote it.
    pub mobius_version: String,
    pub build_sha: String,
    /// SQLite databases, as paths relative to the data directory (the main one first).
    pub databases: Vec<String>,
    /// Regular files copied besides the databases, and their total size.
    pub files: u64,
    pub bytes: u64,
}
