//! `mobius launch`: the image's entry point. It binds the listener once and hands it to the
//! server it starts (`mobius serve` of the newest good version: a verified release in
//! `DATA_DIR/platform/releases/`, or its own binary — the image's, always the fallback), so
//! connections wait in the backlog while versions change. On SIGHUP (an update or a restart
//! asked from Settings or `mobius update`) it stops the server, and when a release is pending:
//! backs the database up (`VACUUM INTO`, with nothing writing), verifies the release against its
//! own baked key, starts it and gives it `MOBIUS_UPDATE_READY_TIMEOUT_SECS` to answer
//! `/api/ready`. A version that exits, fails its migrations or stays unready is killed, the
//! database is put back, the previous version starts again and `state.json` says why. SIGTERM
//! and SIGINT are passed on; the launcher exits with the server's status.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncBufReadExt;
use tokio::signal::unix::{SignalKind, signal};

use super::state::{Outcome, ReleaseState};
use super::verify::{self, BINARY_FILE};
use super::{IMAGE_KEY, UpdateConfig, build_version, platform_dir, releases_dir};
use crate::config::Config;
use crate::locks::Unpoisoned;

/// How long a server has to stop after SIGTERM before it is killed (it exits by itself in 10).
const STOP_GRACE: Duration = Duration::from_secs(15);
/// Readiness is asked this often while a server starts.
const READY_POLL: Duration = Duration::from_millis(100);
/// Restart delays after a server exits on its own: doubling from the first to the last.
const FIRST_RESTART_DELAY: Duration = Duration::from_secs(1);
const MAX_RESTART_DELAY: Duration = Duration::from_secs(30);
/// A server up this long resets the restart delay.
const HEALTHY_AFTER: Duration = Duration::from_secs(60);
/// Log lines of the server kept to explain a failed start.
const KEPT_LOG_LINES: usize = 12;
const KEPT_LINE_CHARS: usize = 300;
/// The readiness reason of a failed migration (`app::describe_init_error`).
const MIGRATION_FAILED: &str = "database migration failed";

/// The pid file, in the platform folder.
const PID_FILE: &str = "launcher.pid";

/// Asks the launcher `pid` to restart its server (and try a pending release).
pub fn ask_restart(pid: i32) -> std::io::Result<()> {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGHUP)
        .map_err(std::io::Error::from)
}

/// The launcher running for `data_dir`, if one is: its pid file names a live `mobius launch`.
pub fn running_launcher(data_dir: &Path) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(platform_dir(data_dir).join(PID_FILE)).ok()?.trim().parse().ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let mut words = cmdline.split(|b| *b == 0);
    words.next();
    words.any(|w| w == b"launch").then_some(pid)
}

/// `mobius launch`.
pub fn launch_command() -> ExitCode {
    let config = match Config::from_env().and_then(|c| c.check_serve().map(|()| c)) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("mobius: {e}");
            return ExitCode::from(2);
        }
    };
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(&config.log_filter))
        .with_target(false)
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .compact()
        .init();
    let listener = match std::net::TcpListener::bind(config.bind) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("mobius: cannot listen on {}: {e}", config.bind);
            return ExitCode::FAILURE;
        }
    };
    let fd = match mobius_sys::listener::share_with_children(&listener) {
        Ok(fd) => fd,
        Err(e) => {
            eprintln!("mobius: cannot share the listener: {e}");
            return ExitCode::FAILURE;
        }
    };
    let addr = listener.local_addr().map(crate::backup::local_address).unwrap_or(config.bind);
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mobius: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let launcher = Launcher { data_dir: config.data_dir.clone(), updates: config.updates.clone(), fd, addr };
    let code = runtime.block_on(launcher.run());
    drop(listener);
    code
}

struct Launcher {
    data_dir: PathBuf,
    updates: UpdateConfig,
    fd: i32,
    addr: SocketAddr,
}

/// What to start.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Choice {
    /// The image's own binary.
    Baked,
    /// A good release.
    Release(String),
    /// A pending release, on trial.
    Trial(super::state::Pending),
}

/// A started server.
struct Child {
    process: tokio::process::Child,
    log: Arc<Mutex<VecDeque<String>>>,
    /// The task copying its stderr into `log`, until the pipe closes.
    tee: Option<tokio::task::JoinHandle<()>>,
    version: String,
}

/// Why the launcher stopped waiting on its server.
enum Event {
    /// The server exited by itself.
    Exited(std::process::ExitStatus),
    /// SIGHUP: restart (and try what is pending).
    Restart,
    /// SIGTERM or SIGINT: stop.
    Stop,
}

impl Launcher {
    async fn run(self) -> ExitCode {
        let pid_file = platform_dir(&self.data_dir).join(PID_FILE);
        if let Err(e) = std::fs::create_dir_all(platform_dir(&self.data_dir))
            .and_then(|()| std::fs::write(&pid_file, std::process::id().to_string()))
        {
            tracing::warn!(error = %e, "cannot write the launcher's pid file; `mobius update` will not find it");
        }
        let (mut hup, mut term, mut int) =
            match (signal(SignalKind::hangup()), signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
                (Ok(h), Ok(t), Ok(i)) => (h, t, i),
                _ => {
                    eprintln!("mobius: cannot listen for signals");
                    return ExitCode::FAILURE;
                }
            };
        tracing::info!(addr = %self.addr, version = %build_version(), "launcher listening");
        let mut delay = FIRST_RESTART_DELAY;
        // When a restart was asked for: the moment, to time how long the change took.
        let mut restart_at: Option<Instant> = None;
        loop {
            let choice = self.choose();
            let child = match &choice {
                Choice::Trial(pending) => match self.try_release(pending, restart_at.take()).await {
                    Some(child) => child,
                    None => continue,
                },
                other => match self.spawn(other) {
                    Ok(child) => child,
                    Err(e) => {
                        tracing::error!(error = %e, "cannot start the server");
                        if matches!(other, Choice::Release(_)) {
                            self.forget_current(&format!("it could not be started: {e}"));
                            continue;
                        }
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(MAX_RESTART_DELAY);
                        continue;
                    }
                },
            };
            let started = Instant::now();
            let mut child = child;
            let event = tokio::select! {
                status = child.process.wait() => match status {
                    Ok(status) => Event::Exited(status),
                    Err(_) => Event::Stop,
                },
                _ = hup.recv() => Event::Restart,
                _ = term.recv() => Event::Stop,
                _ = int.recv() => Event::Stop,
            };
            match event {
                Event::Restart => {
                    tracing::info!(version = %child.version, "restart asked for; stopping the server");
                    restart_at = Some(Instant::now());
                    stop(&mut child).await;
                    delay = FIRST_RESTART_DELAY;
                }
                Event::Stop => {
                    let status = stop(&mut child).await;
                    let _ = std::fs::remove_file(&pid_file);
                    return ExitCode::from(
                        status.and_then(|s| s.code()).and_then(|c| u8::try_from(c).ok()).unwrap_or(0),
                    );
                }
                Event::Exited(status) => {
                    tracing::warn!(version = %child.version, %status, "the server exited; starting it again");
                    if started.elapsed() > HEALTHY_AFTER {
                        delay = FIRST_RESTART_DELAY;
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = term.recv() => return ExitCode::from(0),
                        _ = int.recv() => return ExitCode::from(0),
                    }
                    delay = (delay * 2).min(MAX_RESTART_DELAY);
                }
            }
        }
    }

    /// The newest good version, or the pending one to try.
    fn choose(&self) -> Choice {
        let mut state = ReleaseState::load(&self.data_dir);
        let baked = build_version();
        let newer = |v: &str| semver::Version::parse(v).is_ok_and(|v| v > baked);
        if let Some(pending) = state.pending.clone() {
            if newer(&pending.version) {
                return Choice::Trial(pending);
            }
            // The image was replaced by one as new as the release meanwhile: nothing to try.
            state.last = Some(Outcome {
                version: pending.version.clone(),
                from: pending.from,
                outcome: "failed".into(),
                reason: Some(format!("the image's own version {baked} is as new; it runs instead")),
                at: crate::db::now_ms(),
                took_ms: None,
            });
            state.pending = None;
            let _ = state.store(&self.data_dir);
            let _ = std::fs::remove_dir_all(releases_dir(&self.data_dir).join(&pending.version));
        }
        match state.current {
            Some(current) if newer(&current) => Choice::Release(current),
            Some(_) => {
                // An image as new as the current release: the image's binary wins, the release goes.
                self.prune(None);
                let _ = ReleaseState { current: None, ..state }.store(&self.data_dir);
                Choice::Baked
            }
            None => Choice::Baked,
        }
    }

    /// Starts the server of `choice` on the shared listener, after verifying a release.
    fn spawn(&self, choice: &Choice) -> Result<Child, String> {
        let (bin, release) = match choice {
            Choice::Baked => (std::env::current_exe().map_err(|e| e.to_string())?, None),
            Choice::Release(v) | Choice::Trial(super::state::Pending { version: v, .. }) => {
                let dir = releases_dir(&self.data_dir).join(v);
                verify::verify_release_dir(&dir, &self.updates.trusted_keys(), v)?;
                (dir.join(BINARY_FILE), Some((v.clone(), dir)))
            }
        };
        let mut command = tokio::process::Command::new(&bin);
        command
            .arg("serve")
            .env("MOBIUS_LISTEN_FD", self.fd.to_string())
            .env("MOBIUS_LAUNCHER_PID", std::process::id().to_string())
            .env("MOBIUS_IMAGE_KEY", IMAGE_KEY)
            .env_remove("MOBIUS_RELEASE")
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let version = match &release {
            Some((v, dir)) => {
                command.env("MOBIUS_RELEASE", v);
                let dist = dir.join("frontend/dist");
                command.env("MOBIUS_FRONTEND_DIR", &dist);
                if dist.join("mobius-runtime.js").is_file() {
                    command.env("MOBIUS_APP_RUNTIME_DIR", &dist);
                }
                if dir.join("skill/core.md").is_file() {
                    command.env("MOBIUS_SKILL_DIR", dir.join("skill"));
                }
                v.clone()
            }
            None => build_version().to_string(),
        };
        let mut process = command.spawn().map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        let log = Arc::new(Mutex::new(VecDeque::new()));
        let tee = process.stderr.take().map(|stderr| tokio::spawn(tee(stderr, log.clone())));
        tracing::info!(%version, pid = process.id().unwrap_or(0), "server started");
        Ok(Child { process, log, tee, version })
    }

    /// Tries `pending`: database backed up, release started, ready in time — or rolled back.
    /// Returns the running server, or `None` when the previous version must start instead.
    async fn try_release(&self, pending: &super::state::Pending, asked_at: Option<Instant>) -> Option<Child> {
        let began = asked_at.unwrap_or_else(Instant::now);
        let snapshot = match self.back_up(pending).await {
            Ok(snapshot) => snapshot,
            Err(e) => {
                self.finish(pending, "failed", Some(format!("the database could not be backed up first: {e}")), None);
                return None;
            }
        };
        let mut child = match self.spawn(&Choice::Trial(pending.clone())) {
            Ok(child) => child,
            Err(e) => {
                self.roll_back(pending, snapshot.as_deref(), &format!("it could not be started: {e}"), began);
                return None;
            }
        };
        match self.wait_ready(&mut child).await {
            Ok(()) => {
                let took = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
                tracing::info!(version = %pending.version, took_ms = took, "the new version is ready");
                self.finish(pending, "applied", None, Some(took));
                self.prune(Some(&pending.version));
                Some(child)
            }
            Err(reason) => {
                tracing::error!(version = %pending.version, %reason, "the new version failed to start; rolling back");
                stop(&mut child).await;
                self.roll_back(pending, snapshot.as_deref(), &reason, began);
                None
            }
        }
    }

    /// Copies the database (nothing writes to it now) to `rollback/`, once per pending release.
    async fn back_up(&self, pending: &super::state::Pending) -> Result<Option<PathBuf>, String> {
        let db = self.data_dir.join(crate::backup::MAIN_DATABASE);
        let dir = platform_dir(&self.data_dir).join("rollback");
        let snapshot = dir.join(format!("before-{}-{}.sqlite3", pending.version, pending.requested_at));
        if snapshot.is_file() {
            // Taken by an earlier try that the launcher did not see through.
            return Ok(Some(snapshot));
        }
        if !db.is_file() {
            return Ok(None);
        }
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let partial = dir.join(".partial.sqlite3");
        crate::backup::snapshot_database(&db, &partial).await.map_err(|e| e.to_string())?;
        std::fs::rename(&partial, &snapshot).map_err(|e| e.to_string())?;
        Ok(Some(snapshot))
    }

    /// Waits until the server answers ready; fails when it exits, reports a failed migration,
    /// or is not ready in time.
    async fn wait_ready(&self, child: &mut Child) -> Result<(), String> {
        let deadline = Instant::now() + self.updates.ready_timeout;
        let mut last_reason = String::from("no answer");
        loop {
            let addr = self.addr;
            let probe = tokio::task::spawn_blocking(move || crate::backup::probe(addr, "/api/ready"));
            let answer = tokio::select! {
                status = child.process.wait() => {
                    let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                    // Its last words may still be in the pipe: read them first (a process it
                    // left behind may hold the pipe open, so not for long).
                    if let Some(tee) = child.tee.take() {
                        let _ = tokio::time::timeout(TEE_DRAIN, tee).await;
                    }
                    return Err(format!("it exited at start ({status}){}", child.log_tail()));
                }
                answer = probe => answer.unwrap_or_else(|e| Err(e.to_string())),
                _ = tokio::time::sleep_until(deadline.into()) => Err(last_reason.clone()),
            };
            match answer {
                Ok(_) => return Ok(()),
                Err(reason) if migration_failed(&reason).is_some() => {
                    return Err(format!("its {}", migration_failed(&reason).unwrap_or(reason)));
                }
                Err(reason) => last_reason = reason,
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "it was not ready after {} s ({last_reason}){}",
                    self.updates.ready_timeout.as_secs(),
                    child.log_tail()
                ));
            }
            tokio::time::sleep(READY_POLL).await;
        }
    }

    /// Puts the database back, forgets the release, records why.
    fn roll_back(&self, pending: &super::state::Pending, snapshot: Option<&Path>, reason: &str, began: Instant) {
        if let Err(e) = restore_database(&self.data_dir, snapshot) {
            tracing::error!(error = %e, "the database could not be put back; restore it from a backup");
        }
        let _ = std::fs::remove_dir_all(releases_dir(&self.data_dir).join(&pending.version));
        let took = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.finish(pending, "rolled_back", Some(reason.to_owned()), Some(took));
    }

    /// Clears the pending release and records how its try ended.
    fn finish(&self, pending: &super::state::Pending, outcome: &str, reason: Option<String>, took_ms: Option<u64>) {
        let mut state = ReleaseState::load(&self.data_dir);
        if outcome == "applied" {
            state.current = Some(pending.version.clone());
        }
        state.pending = None;
        state.last = Some(Outcome {
            version: pending.version.clone(),
            from: pending.from.clone(),
            outcome: outcome.to_owned(),
            reason,
            at: crate::db::now_ms(),
            took_ms,
        });
        if let Err(e) = state.store(&self.data_dir) {
            tracing::error!(error = %e, "cannot record the update's outcome");
        }
    }

    /// A good release that no longer verifies or starts: back to the image's binary.
    fn forget_current(&self, reason: &str) {
        let mut state = ReleaseState::load(&self.data_dir);
        tracing::error!(release = ?state.current, %reason, "the current release is unusable; the image's version runs");
        if let Some(current) = state.current.take() {
            state.last = Some(Outcome {
                version: current.clone(),
                from: current,
                outcome: "failed".into(),
                reason: Some(reason.to_owned()),
                at: crate::db::now_ms(),
                took_ms: None,
            });
        }
        let _ = state.store(&self.data_dir);
    }

    /// Deletes every release folder but `keep` (and staging folders older than a day).
    fn prune(&self, keep: Option<&str>) {
        let Ok(entries) = std::fs::read_dir(releases_dir(&self.data_dir)) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_release = semver::Version::parse(&name).is_ok();
            if is_release && Some(name.as_str()) != keep && entry.path().is_dir() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

impl Child {
    /// The server's last log lines, for a failure's reason.
    fn log_tail(&self) -> String {
        let lines = self.log.locked();
        if lines.is_empty() {
            return String::new();
        }
        format!("; its last log lines:\n{}", lines.iter().cloned().collect::<Vec<_>>().join("\n"))
    }
}

/// How long a server that exited gets for the rest of its log to be read.
const TEE_DRAIN: Duration = Duration::from_secs(2);

/// Passes the server's log on to ours, keeping its last lines.
async fn tee(stderr: tokio::process::ChildStderr, kept: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        eprintln!("{line}");
        let mut kept = kept.locked();
        if kept.len() == KEPT_LOG_LINES {
            kept.pop_front();
        }
        kept.push_back(line.chars().take(KEPT_LINE_CHARS).collect());
    }
}

/// The reason of a readiness answer that says the database migration failed (the 503 body the
/// probe quotes), if it says so.
fn migration_failed(probe_error: &str) -> Option<String> {
    let body = &probe_error[probe_error.find('{')?..];
    let reason = serde_json::from_str::<serde_json::Value>(body).ok()?["reason"].as_str()?.to_owned();
    reason.starts_with(MIGRATION_FAILED).then_some(reason)
}

/// SIGTERM, then SIGKILL after [`STOP_GRACE`]; returns how it ended.
async fn stop(child: &mut Child) -> Option<std::process::ExitStatus> {
    if let Some(pid) = child.process.id().and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
    }
    match tokio::time::timeout(STOP_GRACE, child.process.wait()).await {
        Ok(status) => status.ok(),
        Err(_) => {
            tracing::warn!(version = %child.version, "the server did not stop in time; killing it");
            let _ = child.process.kill().await;
            child.process.wait().await.ok()
        }
    }
}

/// Replaces the database with `snapshot` (none: there was no database), its WAL and shared
/// memory removed first so none of the failed version's writes is replayed into it.
fn restore_database(data_dir: &Path, snapshot: Option<&Path>) -> std::io::Result<()> {
    let db = data_dir.join(crate::backup::MAIN_DATABASE);
    for suffix in ["-wal", "-shm"] {
        match std::fs::remove_file(format!("{}{suffix}", db.display())) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    match snapshot {
        None => match std::fs::remove_file(&db) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        },
        Some(snapshot) => {
            let tmp = db.with_extension("sqlite3.restoring");
            std::fs::copy(snapshot, &tmp)?;
            std::fs::File::open(&tmp)?.sync_all()?;
            std::fs::rename(&tmp, &db)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_migration_is_told_from_a_slow_start() {
        let failed = r#"GET /api/ready answered 503: {"ready":false,"reason":"database migration failed: while executing migration 18: no such table: x"}"#;
        assert_eq!(
            migration_failed(failed).as_deref(),
            Some("database migration failed: while executing migration 18: no such table: x")
        );
        let starting = r#"GET /api/ready answered 503: {"ready":false,"reason":"running database migrations"}"#;
        assert_eq!(migration_failed(starting), None);
        assert_eq!(migration_failed("cannot connect to 127.0.0.1:1: refused"), None);
    }

    #[test]
    fn a_restored_database_replaces_the_failed_versions_files() {
        let dir = tempfile::tempdir().expect("tmp");
        let db = dir.path().join(crate::backup::MAIN_DATABASE);
        std::fs::create_dir_all(db.parent().expect("parent")).expect("db dir");
        std::fs::write(&db, b"migrated by the new version").expect("db");
        std::fs::write(format!("{}-wal", db.display()), b"its log").expect("wal");
        let snapshot = dir.path().join("before.sqlite3");
        std::fs::write(&snapshot, b"as it was").expect("snapshot");
        restore_database(dir.path(), Some(&snapshot)).expect("restore");
        assert_eq!(std::fs::read(&db).expect("db"), b"as it was");
        assert!(!std::path::Path::new(&format!("{}-wal", db.display())).exists(), "no WAL of the failed version");
        restore_database(dir.path(), None).expect("no database before");
        assert!(!db.exists());
    }
}
