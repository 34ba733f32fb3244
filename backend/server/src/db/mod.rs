//! SQLite access: connection options and pragmas, migrations, the read pool, and all SQL.
//!
//! Writes happen only inside the writer actor (`crate::writer`) on its own connection;
//! request handlers read through [`Db::read`].

pub mod activity;
pub mod apps;
pub mod chat_list;
pub mod chats;
pub mod connectors;
pub mod embeds;
pub mod github;
pub mod goals;
pub mod journal;
pub mod messages;
pub mod notes;
pub mod owner;
pub mod published;
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

/// A provider column reads as a [`ProviderKind`] (its id, `claude` or `codex`): rows carry the
/// type, so nothing above `db/` parses a provider string. Only `ProviderKind::id` ever writes
/// one; anything else in the column is an error, not a silent "no provider".
impl sqlx::Type<sqlx::Sqlite> for crate::protocol::ProviderKind {
    fn type_info() -> sqlx::sqlite::SqliteTypeInfo {
        <str as sqlx::Type<sqlx::Sqlite>>::type_info()
    }

    fn compatible(ty: &sqlx::sqlite::SqliteTypeInfo) -> bool {
        <str as sqlx::Type<sqlx::Sqlite>>::compatible(ty)
    }
}

impl<'r> sqlx::Decode<'r, sqlx::Sqlite> for crate::protocol::ProviderKind {
    fn decode(value: sqlx::sqlite::SqliteValueRef<'r>) -> std::result::Result<Self, sqlx::error::BoxDynError> {
        let id = <&str as sqlx::Decode<sqlx::Sqlite>>::decode(value)?;
        crate::protocol::ProviderKind::parse(id).ok_or_else(|| format!("unknown provider {id:?}").into())
    }
}

impl<'q> sqlx::Encode<'q, sqlx::Sqlite> for crate::protocol::ProviderKind {
    fn encode_by_ref(
        &self,
        buf: &mut Vec<sqlx::sqlite::SqliteArgumentValue<'q>>,
    ) -> std::result::Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        <&str as sqlx::Encode<sqlx::Sqlite>>::encode(self.id(), buf)
    }
}

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

/// Opens the single write connection; where there is no database yet, it starts as
/// [`FRESH_IMAGE`] (see [`place_fresh_image`]).
pub async fn open_writer(path: &Path) -> Result<SqliteConnection> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    if !path.exists() {
        // A file write and two fsyncs: off the async threads (the listener answers meanwhile).
        let owned = path.to_owned();
        tokio::task::spawn_blocking(move || place_fresh_image(&owned))
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))??;
    }
    // Statement journals in memory: a statement that writes many rows inside a transaction (an
    // import's 128-row inserts) journals every page it changes so it can be undone alone, and
    // past 64 KiB SQLite spills that journal to a temporary file: ~1,100 extra writes for a
    // 2,000-message import. Readers keep the default (their sorts may spill to disk).
    Ok(options(path)?.pragma("temp_store", "memory").connect().await?)
}

/// A new database as every migration leaves it, in WAL mode, with sqlx's ledger recording each
/// migration as applied (same checksums): built from `backend/server/schema/fresh.sql` by
/// `scripts/fresh-schema`, gzipped (330 KB of mostly empty pages, 10 KB).
const FRESH_IMAGE: &[u8] = include_bytes!("../../schema/fresh.sqlite3.gz");

/// Writes [`FRESH_IMAGE`] as the database at `path` when nothing is there (neither the file
/// nor its WAL): a first boot then runs no DDL (fifty-seven statements were ~4 ms of SQLite CPU)
/// and no conversion to WAL (four fsyncs). The image goes to a synced temporary file, linked into
/// place only if `path` is still free, then the folder is synced: a crash leaves either no
/// database or a whole one. Migrations newer than the image then run as usual ([`migrate`]).
fn place_fresh_image(path: &Path) -> std::io::Result<()> {
    use std::io::{Read, Write};
    let free = |p: &Path| matches!(std::fs::symlink_metadata(p), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    if !free(path) || !free(Path::new(&wal)) {
        return Ok(());
    }
    let mut image = Vec::with_capacity(512 * 1024);
    flate2::read::GzDecoder::new(FRESH_IMAGE).take(64 << 20).read_to_end(&mut image)?;
    let mut staged = path.as_os_str().to_owned();
    staged.push(".fresh");
    let staged = std::path::PathBuf::from(staged);
    let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).open(&staged)?;
    file.write_all(&image)?;
    file.sync_all()?;
    drop(file);
    match std::fs::hard_link(&staged, path) {
        Ok(()) => std::fs::remove_file(&staged)?,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            // Another start got there first: its database stands.
            std::fs::remove_file(&staged)?;
            return Ok(());
        }
        // A filesystem without hard links: renamed instead (still only where nothing is).
        Err(_) if free(path) => std::fs::rename(&staged, path)?,
        Err(_) => {
            std::fs::remove_file(&staged)?;
            return Ok(());
        }
    }
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Applies every embedded migration not yet recorded in the database, on `conn` (the writer's,
/// before the writer starts: no other connection needs opening for it). Each migration commits
/// with `synchronous = NORMAL`: no fsync per migration, and none is lost that matters — the
/// next commit with `FULL` syncs the WAL they are in, and until then a crash only means they
/// run again. A database started from [`FRESH_IMAGE`] has them all (sqlx checks the ledger's
/// checksums against the migrations and finds nothing to apply); one left empty by something
/// else gets them one by one.
pub async fn migrate(conn: &mut SqliteConnection) -> Result<()> {
    sqlx::query("PRAGMA synchronous = NORMAL").execute(&mut *conn).await?;
    let result = MIGRATOR.run_direct(&mut *conn).await;
    sqlx::query("PRAGMA synchronous = FULL").execute(&mut *conn).await?;
    Ok(result?)
}

/// The read pool, opening no connection yet: each opens when a read first needs it, and
/// closes after five idle minutes. Call after [`migrate`] so readers never see a half-built
/// schema.
pub fn open_read_pool(path: &Path) -> Result<Db> {
    let read = SqlitePoolOptions::new()
        .max_connections(MAX_READ_CONNECTIONS)
        .min_connections(0)
        .acquire_timeout(Duration::from_secs(10))
        .idle_timeout(Some(Duration::from_secs(300)))
        .connect_lazy_with(options(path)?.pragma("query_only", "ON"));
    Ok(Db { read })
}

/// Milliseconds since the unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_migration_has_a_version_of_its_own() {
        // Two branches can each add "the next" migration; sqlx would then record one version
        // twice and refuse to start.
        let versions: Vec<i64> = MIGRATOR.iter().map(|m| m.version).collect();
        assert!(versions.len() > 15, "{versions:?}");
        assert!(versions.windows(2).all(|w| w[0] < w[1]), "duplicate or unordered versions: {versions:?}");
    }

    /// The migrations of another release: the embedded ones whose file name `keep` accepts,
    /// copied under `dir`, and `extra` (file name, SQL) beside them.
    async fn release(dir: &Path, keep: impl Fn(&str) -> bool, extra: Option<(&str, &str)>) -> sqlx::migrate::Migrator {
        let folder = dir.join("migrations");
        std::fs::create_dir_all(&folder).expect("folder");
        for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations")).expect("migrations") {
            let entry = entry.expect("entry");
            if keep(&entry.file_name().to_string_lossy()) {
                std::fs::copy(entry.path(), folder.join(entry.file_name())).expect("copy");
            }
        }
        if let Some((name, sql)) = extra {
            std::fs::write(folder.join(name), sql).expect("the extra migration");
        }
        sqlx::migrate::Migrator::new(folder.as_path()).await.expect("migrator")
    }

    /// Everything a schema is made of, and the migrations recorded as applied.
    async fn shape(
        conn: &mut SqliteConnection,
    ) -> (Vec<(String, String, String, Option<String>)>, Vec<(i64, Vec<u8>)>) {
        let schema = sqlx::query_as("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
            .fetch_all(&mut *conn)
            .await
            .expect("schema");
        let ledger = sqlx::query_as("SELECT version, checksum FROM _sqlx_migrations WHERE success ORDER BY version")
            .fetch_all(&mut *conn)
            .await
            .expect("ledger");
        (schema, ledger)
    }

    /// A database the migrations build one by one, on an empty file (no image is placed over
    /// an existing file).
    async fn one_by_one(path: &Path) -> SqliteConnection {
        std::fs::File::create(path).expect("an empty file");
        let mut conn = open_writer(path).await.expect("open");
        migrate(&mut conn).await.expect("migrations one by one");
        conn
    }

    #[tokio::test]
    async fn the_fresh_image_is_what_the_migrations_build() {
        let dir = tempfile::tempdir().expect("tmp");
        let mut one_by_one = one_by_one(&dir.path().join("a.sqlite3")).await;
        let path = dir.path().join("b.sqlite3");
        let mut fresh = open_writer(&path).await.expect("b");
        assert!(std::fs::metadata(&path).expect("placed").len() > 100_000, "the image is in place");
        let mode: String = sqlx::query_scalar("PRAGMA journal_mode").fetch_one(&mut fresh).await.expect("mode");
        assert_eq!(mode, "wal");
        let placed = shape(&mut fresh).await;
        migrate(&mut fresh).await.expect("nothing to apply");
        let (a, b) = (shape(&mut one_by_one).await, shape(&mut fresh).await);
        assert_eq!(b, placed, "the image lacks a migration: run scripts/fresh-schema");
        assert!(a.0.len() > 40, "{} schema objects", a.0.len());
        assert_eq!(a.0, b.0, "the image holds another schema than the migrations build: run scripts/fresh-schema");
        assert_eq!(a.1, b.1, "the same migrations are recorded, with the same checksums: run scripts/fresh-schema");
        let check: String = sqlx::query_scalar("PRAGMA integrity_check").fetch_one(&mut fresh).await.expect("check");
        assert_eq!(check, "ok");
        // And it opens again as it is, nothing placed over it.
        drop(fresh);
        let mut again = open_writer(&path).await.expect("reopen");
        migrate(&mut again).await.expect("nothing to apply");
        assert_eq!(shape(&mut again).await, b);
        assert!(!dir.path().join("b.sqlite3.fresh").exists(), "no staged copy is left");
    }

    #[tokio::test]
    async fn no_image_is_placed_over_a_database_or_its_wal() {
        let dir = tempfile::tempdir().expect("tmp");
        // A file that is there, even empty, is the database: migrations build it.
        let path = dir.path().join("empty.sqlite3");
        std::fs::File::create(&path).expect("empty");
        place_fresh_image(&path).expect("place");
        assert_eq!(std::fs::metadata(&path).expect("file").len(), 0);
        // A WAL without its database is left to SQLite as well.
        let orphan = dir.path().join("orphan.sqlite3");
        std::fs::write(dir.path().join("orphan.sqlite3-wal"), b"wal").expect("wal");
        place_fresh_image(&orphan).expect("place");
        assert!(!orphan.exists());
        // Nothing there: the image.
        let new = dir.path().join("new.sqlite3");
        place_fresh_image(&new).expect("place");
        assert!(std::fs::read(&new).expect("image").starts_with(b"SQLite format 3\0"));
    }

    #[tokio::test]
    async fn a_database_built_fresh_takes_the_next_migration() {
        let dir = tempfile::tempdir().expect("tmp");
        let mut conn = open_writer(&dir.path().join("fresh.sqlite3")).await.expect("create");
        migrate(&mut conn).await.expect("the image needs nothing");
        // A release with one migration more: sqlx checks the recorded checksums of every earlier
        // one against the files (a wrong checksum in the fresh ledger fails here), then runs it.
        let next = release(
            dir.path(),
            |_| true,
            Some((
                "9999_next.sql",
                "CREATE TABLE next_one (id INTEGER PRIMARY KEY);\nALTER TABLE chats ADD COLUMN next_one INTEGER;\n",
            )),
        )
        .await;
        next.run_direct(&mut conn).await.expect("the next migration runs on a fresh database");
        assert!(columns(&mut conn, "chats").await.contains(&"next_one".to_owned()));
        assert!(!columns(&mut conn, "next_one").await.is_empty());
        let recorded: Vec<i64> = sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
            .fetch_all(&mut conn)
            .await
            .expect("ledger");
        let expected: Vec<i64> = MIGRATOR.iter().map(|m| m.version).chain([9999]).collect();
        assert_eq!(recorded, expected);
    }

    #[tokio::test]
    async fn a_chats_approval_policy_survives_the_column_that_admits_workspace() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("old.sqlite3");
        // A database as the server left it before migration 0041.
        let old = release(dir.path(), |name| name < "0041", None).await;
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options(&path).expect("options"))
            .await
            .expect("pool");
        old.run(&pool).await.expect("the migrations before 0041");
        for (id, policy) in [("a", "ask"), ("f", "full")] {
            sqlx::query(
                "INSERT INTO chats (id, approval_policy, created_at, updated_at, activity_at) VALUES (?, ?, 1, 1, 1)",
            )
            .bind(id)
            .bind(policy)
            .execute(&pool)
            .await
            .expect("insert");
        }
        let refused = sqlx::query("UPDATE chats SET approval_policy = 'workspace' WHERE id = 'a'").execute(&pool).await;
        assert!(refused.is_err(), "the old column refuses workspace");
        pool.close().await;
        let mut conn = open_writer(&path).await.expect("open");
        migrate(&mut conn).await.expect("0041 and later");
        let kept: Vec<(String, String)> = sqlx::query_as("SELECT id, approval_policy FROM chats ORDER BY id")
            .fetch_all(&mut conn)
            .await
            .expect("rows");
        assert_eq!(kept, [("a".to_owned(), "ask".to_owned()), ("f".to_owned(), "full".to_owned())]);
        sqlx::query("UPDATE chats SET approval_policy = 'workspace' WHERE id = 'a'")
            .execute(&mut conn)
            .await
            .expect("workspace is a policy now");
        assert!(
            sqlx::query("UPDATE chats SET approval_policy = 'yolo'").execute(&mut conn).await.is_err(),
            "others are not"
        );
    }

    /// The column names of `table`.
    async fn columns(conn: &mut SqliteConnection, table: &str) -> Vec<String> {
        sqlx::query_scalar(&format!("SELECT name FROM pragma_table_info('{table}')"))
            .fetch_all(conn)
            .await
            .expect("columns")
    }

    #[tokio::test]
    async fn each_migration_runs_in_a_transaction_so_a_failed_one_leaves_the_schema_as_it_was() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("db/mobius.sqlite3");
        let mut writer = open_writer(&path).await.expect("create");
        migrate(&mut writer).await.expect("the embedded migrations");
        drop(writer);
        // The next migration creates a table, adds a column, then fails half-way.
        let broken = release(
            dir.path(),
            |_| true,
            Some((
                "9999_broken.sql",
                "CREATE TABLE half_done (id INTEGER PRIMARY KEY);\n\
                 ALTER TABLE chats ADD COLUMN half_done INTEGER;\n\
                 INSERT INTO no_such_table VALUES (1);\n",
            )),
        )
        .await;
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options(&path).expect("options"))
            .await
            .expect("pool");
        let mut conn = pool.acquire().await.expect("conn");
        let before = columns(&mut conn, "chats").await;
        drop(conn);
        assert!(broken.run(&pool).await.is_err(), "the broken migration fails");
        let mut conn = pool.acquire().await.expect("conn");
        assert_eq!(columns(&mut conn, "chats").await, before, "its ALTER was rolled back");
        assert!(columns(&mut conn, "half_done").await.is_empty(), "its CREATE was rolled back");
        let recorded: Option<i64> = sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE version = 9999")
            .fetch_optional(&mut *conn)
            .await
            .expect("ledger");
        assert_eq!(recorded, None, "it is not recorded as applied");
        drop(conn);
        pool.close().await;
        // The server still opens the database with the migrations it knows.
        let mut writer = open_writer(&path).await.expect("open");
        migrate(&mut writer).await.expect("the old schema is intact");
    }
}
