//! SQLite access: connection options and pragmas, migrations, the read pool, and all SQL.
//!
//! Writes happen only inside the writer actor (`crate::writer`) on its own connection;
//! request handlers read through [`Db::read`].

pub mod apps;
pub mod chat_list;
pub mod chats;
pub mod embeds;
pub mod journal;
pub mod messages;
pub mod notes;
pub mod owner;
pub mod push;
pub mod queue;
pub mod runs;
pub mod schedules;
pub mod search;
pub mod uploads;
pub mod usage;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{ConnectOptions, SqliteConnection};

use crate::error::Result;

/// How long a connection waits on a lock held by another connection or process.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Upper bound on the WAL file kept after a checkpoint while writes go on (when they stop,
/// the writer truncates it to nothing: `writer::actor::CHECKPOINT_AFTER_IDLE`).
const JOURNAL_SIZE_LIMIT_BYTES: u64 = 4 * 1024 * 1024;
/// Read connections; the machine this targets has two cores.
const MAX_READ_CONNECTIONS: u32 = 4;

/// The migrations embedded in the binary (`backend/server/migrations`).
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Read access to the database. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Db {
    /// Pool of `query_only` connections for handlers.
    pub read: SqlitePool,
}

fn options(path: &Path) -> Result<SqliteConnectOptions> {
    let url = format!("sqlite://{}", path.display());
    Ok(SqliteConnectOptions::from_str(&url)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .foreign_keys(true)
        .busy_timeout(BUSY_TIMEOUT)
        .pragma("journal_size_limit", JOURNAL_SIZE_LIMIT_BYTES.to_string())
        .statement_cache_capacity(128))
}

/// Opens the single write connection, creating the file (and its folder) if needed.
pub async fn open_writer(path: &Path) -> Result<SqliteConnection> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    Ok(options(path)?.connect().await?)
}

/// Applies every embedded migration not yet recorded in the database, on `conn` (the writer's,
/// before the writer starts: no other connection needs opening for it). Each migration commits
/// with `synchronous = NORMAL`: no fsync per migration (a first boot applies them all), and
/// none is lost that matters — the next commit with `FULL` syncs the WAL they are in, and
/// until then a crash only means they run again.
pub async fn migrate(conn: &mut SqliteConnection) -> Result<()> {
    sqlx::query("PRAGMA synchronous = NORMAL").execute(&mut *conn).await?;
    let result = MIGRATOR.run_direct(&mut *conn).await;
    sqlx::query("PRAGMA synchronous = FULL").execute(&mut *conn).await?;
    result?;
    Ok(())
}

/// Opens the read pool. Call after [`migrate`] so readers never see a half-built schema.
pub async fn open_read_pool(path: &Path) -> Result<Db> {
    let read = SqlitePoolOptions::new()
        .max_connections(MAX_READ_CONNECTIONS)
        .min_connections(1)
        .acquire_timeout(Duration::from_secs(10))
        .idle_timeout(Some(Duration::from_secs(300)))
        .connect_with(options(path)?.pragma("query_only", "ON"))
        .await?;
    Ok(Db { read })
}

/// Milliseconds since the unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
