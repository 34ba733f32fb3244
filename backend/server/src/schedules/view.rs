//! A job's own view of the data directory: the folder its `DATA_DIR` names,
//! `DATA_DIR/run/jobs/<run>/`, made by the server before the job starts and removed when it ends.
//!
//! Jobs written for the original read `$DATA_DIR/service-token.txt` (the original's 90-day owner
//! token) and write their logs under `$DATA_DIR/cron-logs/`. Here no owner-grade token is ever on
//! disk: the view's `service-token.txt` holds the run's own token (`auth::job_token`: app-scoped,
//! accepted only while this run is its app's running job), and the view holds nothing else but
//! links to what the job may already reach (its app's folder, its state folder) and its own
//! `cron-logs/`, whose files are added to the run's log when it ends ([`View::cron_logs`]).
//!
//! A per-run folder rather than a private mount namespace: Landlock cannot remap a path, and
//! unprivileged user namespaces (what a mount namespace needs without root) are refused by
//! Docker's default seccomp profile, where this server runs. The view is in `run/`, which the
//! agent cannot write, so nothing in it was planted; the server opens it only through `safe_fs`.

use std::ffi::OsStr;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::safe_fs::{Dir, Kind};

/// Where the views are: `DATA_DIR/run/jobs/<run id>/`.
pub const VIEW_DIR: &str = "run/jobs";
/// The token file the original's jobs read.
pub const TOKEN_FILE: &str = "service-token.txt";
/// The folder of the view the job may write its logs to.
pub const CRON_LOGS: &str = "cron-logs";
/// What the run's log takes from `cron-logs/` in all (the newest bytes of each file).
pub const MAX_CRON_LOG_BYTES: u64 = 256 * 1024;
/// Files of `cron-logs/` looked at, at most.
const MAX_CRON_LOG_FILES: usize = 32;
/// Folders deep below `cron-logs/` that are looked into.
const MAX_CRON_LOG_DEPTH: usize = 4;
/// Entries of one folder of `cron-logs/` read, at most.
const MAX_CRON_LOG_ENTRIES: usize = 256;

/// A run's view; removed (with its token file) when dropped.
#[derive(Debug)]
pub struct View {
    data_dir: PathBuf,
    run_id: i64,
    path: PathBuf,
}

/// What a view links to.
pub struct Links<'a> {
    pub app_id: i64,
    pub slug: &'a str,
    /// The app's source folder (`DATA_DIR/apps/<slug>`).
    pub source: &'a Path,
    /// The job's state folder (`DATA_DIR/apps/<id>/job-state`).
    pub state: &'a Path,
}

impl View {
    /// Makes run `run_id`'s view, holding `token` in `service-token.txt` (mode 0600) and the links
    /// of `links`: `apps/<slug>` → the app's folder, `apps/<id>/job-state` → its state folder
    /// (the original's paths below `$DATA_DIR`), and an empty `cron-logs/`.
    pub fn create(data_dir: &Path, run_id: i64, token: &str, links: &Links<'_>) -> std::io::Result<View> {
        let views = Dir::create_under(data_dir, Path::new(VIEW_DIR))?;
        let name = run_id.to_string();
        // Left by a server that stopped before removing it (run ids are never reused).
        views.remove_tree(OsStr::new(&name))?;
        let view = View { data_dir: data_dir.to_path_buf(), run_id, path: data_dir.join(VIEW_DIR).join(&name) };
        let dir = views.sub_or_create(Path::new(&name))?;
        // Not synced: the file dies with the run (a crash removes it at the next start).
        dir.create_new(OsStr::new(TOKEN_FILE), 0o600)?.write_all(format!("{token}\n").as_bytes())?;
        dir.sub_or_create(Path::new(CRON_LOGS))?;
        let apps = dir.sub_or_create(Path::new("apps"))?;
        apps.symlink(OsStr::new(links.slug), links.source)?;
        apps.sub_or_create(Path::new(&links.app_id.to_string()))?.symlink(OsStr::new("job-state"), links.state)?;
        Ok(view)
    }

    /// The view's folder: the job's `DATA_DIR`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder the job may write to (`cron-logs/`).
    pub fn writable(&self) -> PathBuf {
        self.path.join(CRON_LOGS)
    }

    /// What the job wrote under `cron-logs/`, each file under a header naming it, in name order:
    /// regular files only (never through a link), at most [`MAX_CRON_LOG_BYTES`] in all, the
    /// newest bytes of a longer file. Empty when it wrote nothing.
    pub fn cron_logs(&self) -> Vec<u8> {
        let Ok(root) =
            Dir::open_under(&self.data_dir, &Path::new(VIEW_DIR).join(self.run_id.to_string()).join(CRON_LOGS))
        else {
            return Vec::new();
        };
        let mut files = Vec::new();
        collect(&root, PathBuf::new(), 0, &mut files);
        files.sort();
        let mut out = Vec::new();
        let mut left = MAX_CRON_LOG_BYTES;
        for rel in files {
            if left == 0 {
                out.extend_from_slice(b"\n[more cron-logs files were left out]\n");
                break;
            }
            let Ok((mut file, meta)) = root.open_file(&rel) else { continue };
            let header = format!("\n--- $DATA_DIR/{CRON_LOGS}/{} ---\n", rel.display());
            let skip = meta.len().saturating_sub(left);
            if skip > 0 && file.seek(SeekFrom::Start(skip)).is_err() {
                continue;
            }
            let mut bytes = Vec::new();
            if file.take(left).read_to_end(&mut bytes).is_err() {
                continue;
            }
            out.extend_from_slice(header.as_bytes());
            if skip > 0 {
                out.extend_from_slice(format!("[the first {skip} bytes were left out]\n").as_bytes());
            }
            left = left.saturating_sub(bytes.len() as u64);
            out.extend_from_slice(&bytes);
        }
        out
    }
}

/// The regular files below `dir` (relative to the root), bounded in number, depth and entries.
fn collect(dir: &Dir, rel: PathBuf, depth: usize, files: &mut Vec<PathBuf>) {
    let Ok(entries) = dir.entries(MAX_CRON_LOG_ENTRIES) else { return };
    for entry in entries {
        if files.len() >= MAX_CRON_LOG_FILES {
            return;
        }
        match entry.kind {
            Kind::File => files.push(rel.join(&entry.name)),
            Kind::Dir if depth < MAX_CRON_LOG_DEPTH => {
                if let Ok(sub) = dir.sub(Path::new(&entry.name)) {
                    collect(&sub, rel.join(&entry.name), depth + 1, files);
                }
            }
            _ => {}
        }
    }
}

impl Drop for View {
    fn drop(&mut self) {
        let removed = Dir::open_under(&self.data_dir, Path::new(VIEW_DIR))
            .and_then(|views| views.remove_tree(OsStr::new(&self.run_id.to_string())));
        if let Err(e) = removed {
            tracing::warn!(error = %e, run.id = self.run_id, "a job's view folder could not be removed");
        }
    }
}

/// Removes the views a stopped server left (at start-up, before any job runs).
pub fn remove_stale(data_dir: &Path) {
    if let Ok(run) = Dir::open_under(data_dir, Path::new("run"))
        && let Err(e) = run.remove_tree(OsStr::new("jobs"))
    {
        tracing::warn!(error = %e, "old job view folders could not be removed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_holds_the_token_and_links_and_goes_with_its_run() {
        let root = tempfile::tempdir().expect("tmp");
        let data = root.path();
        std::fs::create_dir_all(data.join("apps/notes")).expect("app");
        std::fs::create_dir_all(data.join("apps/7/job-state")).expect("state");
        std::fs::write(data.join("apps/notes/job.sh"), "echo hi").expect("job");
        let links =
            Links { app_id: 7, slug: "notes", source: &data.join("apps/notes"), state: &data.join("apps/7/job-state") };
        let view = View::create(data, 42, "tok", &links).expect("view");
        let at = data.join("run/jobs/42");
        assert_eq!(view.path(), at);
        assert_eq!(std::fs::read_to_string(at.join("service-token.txt")).expect("token"), "tok\n");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(at.join("service-token.txt")).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(at.join("apps/notes/job.sh")).expect("through the link"), "echo hi");
        assert!(at.join("apps/7/job-state").is_dir());
        assert!(!at.join("secret.key").exists() && !at.join("apps/other").exists());
        assert!(view.cron_logs().is_empty(), "nothing written");
        drop(view);
        assert!(!at.exists(), "removed with its run");
        assert!(data.join("apps/notes/job.sh").exists(), "links removed, never followed");
    }

    #[test]
    fn cron_logs_are_read_bounded_and_never_through_a_link() {
        let root = tempfile::tempdir().expect("tmp");
        let data = root.path();
        std::fs::create_dir_all(data.join("apps/notes")).expect("app");
        std::fs::write(data.join("secret.key"), "SECRET").expect("secret");
        let links = Links { app_id: 7, slug: "notes", source: &data.join("apps/notes"), state: &data.join("state") };
        let view = View::create(data, 1, "tok", &links).expect("view");
        let logs = view.writable();
        std::fs::create_dir_all(logs.join("daily")).expect("mkdir");
        std::fs::write(logs.join("app-jobs.log"), "started\nfinished\n").expect("log");
        std::fs::write(logs.join("daily/big.log"), vec![b'x'; (MAX_CRON_LOG_BYTES + 10) as usize]).expect("big");
        std::os::unix::fs::symlink(data.join("secret.key"), logs.join("leak.log")).expect("link");
        let out = String::from_utf8(view.cron_logs()).expect("utf8");
        assert!(out.contains("--- $DATA_DIR/cron-logs/app-jobs.log ---\nstarted\nfinished\n"), "{out}");
        assert!(!out.contains("SECRET"), "a link is never followed");
        assert!(out.contains("--- $DATA_DIR/cron-logs/daily/big.log ---"), "{}", &out[..200.min(out.len())]);
        let x = out.bytes().filter(|b| *b == b'x').count() as u64;
        assert!(x < MAX_CRON_LOG_BYTES, "bounded: {x}");
        assert!(out.contains("bytes were left out"));
    }
}
