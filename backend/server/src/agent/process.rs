//! Agent CLI subprocesses: own process group, whitelisted environment, the sandbox applied
//! before the CLI runs (`no_new_privs` always, Landlock when available), capped stdout lines,
//! a bounded stderr tail, and the whole group killed when the handle is dropped — with every
//! process that escaped the group (`setsid`, double fork, a cleared environment), which the
//! server finds because it is their child subreaper ([`become_subreaper`]) and they carry their
//! tree's label (`trees.rs`). The JSON-lines session both drivers speak over them is
//! `session.rs`.

use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

use mobius_sys::landlock::{self, Ruleset};

use super::trees::{Tree, Trees};
use crate::error::{Error, Result};
use crate::locks::Unpoisoned;

/// Longest stdout line accepted from a CLI; longer lines are skipped and reported.
pub const MAX_LINE_BYTES: usize = 10 * 1024 * 1024;
/// After its last message, how long a CLI gets to exit on its own once stdin closes.
pub(super) const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How long a CLI whose output ended gets to report its exit status.
pub(super) const EXIT_STATUS_WAIT: Duration = Duration::from_secs(1);
/// stderr lines quoted in the message of a CLI that ended early.
const EXIT_MESSAGE_LINES: usize = 8;
/// stderr lines kept for error messages.
const STDERR_TAIL_LINES: usize = 50;
/// Longest stderr line kept.
const MAX_STDERR_LINE_CHARS: usize = 1000;
/// Between SIGTERM and SIGKILL of the group.
pub const KILL_GRACE: Duration = Duration::from_millis(250);
/// Stdout lines buffered between the reader and the driver (each at most [`MAX_LINE_BYTES`]).
const LINE_QUEUE: usize = 32;

/// One line of a CLI's stdout.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete line (without the newline).
    Text(String),
    /// A line longer than [`MAX_LINE_BYTES`] was skipped; its length so far.
    Oversized(usize),
}

/// A stdout line as a driver sees it.
#[derive(Debug)]
pub enum Incoming {
    /// A JSON message.
    Json(serde_json::Value),
    /// A line that was skipped, and why (for the logs).
    Skipped(String),
}

/// Parses a line from `cli`; oversized and malformed lines become [`Incoming::Skipped`].
pub fn classify(line: Line, cli: &str) -> Incoming {
    match line {
        Line::Oversized(n) => Incoming::Skipped(format!("skipped a {n}-byte line from {cli}")),
        Line::Text(text) => match serde_json::from_str(&text) {
            Ok(value) => Incoming::Json(value),
            Err(_) => Incoming::Skipped(format!("ignored a malformed line from {cli}")),
        },
    }
}

/// The last lines a process wrote to stderr.
#[derive(Clone, Debug, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    /// The kept lines, oldest first, joined with newlines.
    pub fn text(&self) -> String {
        self.0.locked().iter().cloned().collect::<Vec<_>>().join("\n")
    }

    fn push(&self, line: String) {
        let mut lines = self.0.locked();
        if lines.len() == STDERR_TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line.chars().take(MAX_STDERR_LINE_CHARS).collect());
    }
}

/// A running CLI. Dropping it terminates the whole process group and what escaped it.
#[derive(Debug)]
pub struct AgentProcess {
    child: Child,
    pgid: Option<i32>,
    /// Its memory cgroup, when agents get one (removed once the process is gone).
    pub(super) cgroup: Option<super::ceiling::Cgroup>,
    /// Its tree: the label everything it starts carries, and its marker under `run/agents/`
    /// (the next boot kills the tree if the server dies). Swept, then dropped, at its end.
    pub(super) tree: Option<Tree>,
    /// Held until the process is gone (its group killed), e.g. its chat's [`Keeper::alive`].
    held: Option<Box<dyn std::fmt::Debug + Send + Sync>>,
}

/// What [`spawn`] hands back.
#[derive(Debug)]
pub struct Spawned {
    pub process: AgentProcess,
    pub stdin: ChildStdin,
    pub lines: mpsc::Receiver<Line>,
    pub stderr: StderrTail,
}

/// Starts `program` with exactly `env` (nothing inherited), in its own process group, with
/// `no_new_privs` set, its memory ceiling (`memory`: a cgroup it joins or an rlimit) and,
/// given a ruleset, confined by Landlock before it runs. With `trees`, it starts a tree of its
/// own there: everything it starts is found and killed with it, even after a restart.
pub fn spawn(
    program: &Path,
    args: &[String],
    cwd: &Path,
    env: &[(String, String)],
    trees: Option<&Trees>,
    confine: Option<Ruleset>,
    memory: super::ceiling::Applied,
) -> Result<Spawned> {
    let mut command = std::process::Command::new(program);
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut process = start(command, program, args, cwd, env, trees, confine, memory)?;
    let child = &mut process.child;
    let stdin = child.stdin.take().ok_or_else(|| Error::Internal("no stdin pipe".into()))?;
    let stdout = child.stdout.take().ok_or_else(|| Error::Internal("no stdout pipe".into()))?;
    let stderr_pipe = child.stderr.take().ok_or_else(|| Error::Internal("no stderr pipe".into()))?;
    let (tx, lines) = mpsc::channel(LINE_QUEUE);
    tokio::spawn(read_lines(stdout, tx));
    let stderr = StderrTail::default();
    let tail = stderr.clone();
    tokio::spawn(async move {
        let mut reader = BufReader::new(stderr_pipe).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            tail.push(line);
        }
    });
    Ok(Spawned { process, stdin, lines, stderr })
}

/// A job (an app's scheduled script) as [`spawn_job`] starts it.
#[derive(Debug)]
pub struct SpawnedJob {
    pub process: AgentProcess,
    /// stdout and stderr, interleaved as written, raw bytes: the caller bounds what it keeps.
    pub output: tokio::net::unix::pipe::Receiver,
}

/// Starts a job like [`spawn`] (own group, exactly `env`, `no_new_privs`, the ruleset, the
/// memory ceiling, its tree), with stdin from `/dev/null` and stdout and stderr into one pipe.
pub fn spawn_job(
    program: &Path,
    args: &[String],
    cwd: &Path,
    env: &[(String, String)],
    trees: Option<&Trees>,
    confine: Option<Ruleset>,
    memory: super::ceiling::Applied,
) -> Result<SpawnedJob> {
    let (reader, writer) = std::io::pipe()?;
    let mut command = std::process::Command::new(program);
    command.stdin(Stdio::null()).stdout(writer.try_clone()?).stderr(writer);
    // `start` drops the command (and with it the write ends this process held) once the child
    // runs, so the pipe ends when the job and everything it started have closed it.
    let process = start(command, program, args, cwd, env, trees, confine, memory)?;
    let output = tokio::net::unix::pipe::Receiver::from_owned_fd(std::os::fd::OwnedFd::from(reader))?;
    Ok(SpawnedJob { process, output })
}

/// A headless browser as [`spawn_browser`] starts it: its DevTools pipe's two ends.
#[derive(Debug)]
pub struct SpawnedBrowser {
    pub process: AgentProcess,
    /// What the browser reads (its descriptor 3): NUL-terminated DevTools commands.
    pub commands: tokio::net::unix::pipe::Sender,
    /// What the browser writes (its descriptor 4): NUL-terminated answers and events.
    pub answers: tokio::net::unix::pipe::Receiver,
    pub stderr: StderrTail,
}

/// Starts a browser like [`spawn`] (own group, exactly `env`, `no_new_privs`, the ruleset, the
/// memory ceiling, its tree) with `--remote-debugging-pipe`'s descriptors 3 and 4, stdin and
/// stdout from and to `/dev/null`, and the tail of its stderr kept.
#[allow(clippy::too_many_arguments)]
pub fn spawn_browser(
    program: &Path,
    args: &[String],
    cwd: &Path,
    env: &[(String, String)],
    trees: Option<&Trees>,
    confine: Option<Ruleset>,
    memory: super::ceiling::Applied,
) -> Result<SpawnedBrowser> {
    let (browser_reads, we_write) = std::io::pipe()?;
    let (we_read, browser_writes) = std::io::pipe()?;
    let mut command = std::process::Command::new(program);
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    mobius_sys::fds::hand_on_exec(
        &mut command,
        vec![(std::os::fd::OwnedFd::from(browser_reads), 3), (std::os::fd::OwnedFd::from(browser_writes), 4)],
    )?;
    // `start` drops the command, and with it this process's copies of the browser's ends.
    let mut process = start(command, program, args, cwd, env, trees, confine, memory)?;
    let stderr_pipe = process.child.stderr.take().ok_or_else(|| Error::Internal("no stderr pipe".into()))?;
    let stderr = StderrTail::default();
    let tail = stderr.clone();
    tokio::spawn(async move {
        let mut reader = BufReader::new(stderr_pipe).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            tail.push(line);
        }
    });
    let commands = tokio::net::unix::pipe::Sender::from_owned_fd(std::os::fd::OwnedFd::from(we_write))?;
    let answers = tokio::net::unix::pipe::Receiver::from_owned_fd(std::os::fd::OwnedFd::from(we_read))?;
    Ok(SpawnedBrowser { process, commands, answers, stderr })
}

/// The common part of [`spawn`] and [`spawn_job`]: environment, working directory, group,
/// its tree's label, memory ceiling, sandbox.
#[allow(clippy::too_many_arguments)]
fn start(
    mut std_command: std::process::Command,
    program: &Path,
    args: &[String],
    cwd: &Path,
    env: &[(String, String)],
    trees: Option<&Trees>,
    confine: Option<Ruleset>,
    memory: super::ceiling::Applied,
) -> Result<AgentProcess> {
    use std::os::unix::process::CommandExt;
    std_command
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .process_group(0);
    // Live before the fork: no sweep takes the child for a stray while it starts.
    let tree = match trees {
        Some(trees) => trees.open()?,
        None => None,
    };
    if let Some(tree) = &tree {
        mobius_sys::limits::label_on_exec(&mut std_command, tree.label());
    }
    let cgroup = match memory {
        super::ceiling::Applied::Cgroup(cgroup, procs) => {
            mobius_sys::limits::join_cgroup_on_exec(&mut std_command, procs);
            Some(cgroup)
        }
        super::ceiling::Applied::Rlimit(bytes) => {
            mobius_sys::limits::limit_data_on_exec(&mut std_command, bytes);
            None
        }
        super::ceiling::Applied::None => None,
    };
    match confine {
        Some(rules) => rules.restrict_on_exec(&mut std_command),
        None => landlock::no_new_privs_on_exec(&mut std_command),
    }
    let mut command = Command::from(std_command);
    command.kill_on_drop(true);
    let spawning = trees.map(Trees::spawning);
    let child = command.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => Error::conflict(
            "agent_cli_missing",
            format!("The agent CLI at {} could not be started ({e}). Install it or fix its path.", program.display()),
        ),
        _ => Error::Io(e),
    })?;
    if let (Some(tree), Some(pid)) = (&tree, child.id()) {
        tree.started(pid);
    }
    drop(spawning);
    drop(command);
    let pgid = child.id().and_then(|id| i32::try_from(id).ok());
    Ok(AgentProcess { child, pgid, cgroup, tree, held: None })
}

async fn read_lines(stdout: impl AsyncRead + Unpin, tx: mpsc::Sender<Line>) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut buf = Vec::new();
    loop {
        match read_capped_line(&mut reader, &mut buf, MAX_LINE_BYTES).await {
            Ok(None) => return,
            Ok(Some(line)) => {
                if tx.send(line).await.is_err() {
                    return;
                }
            }
            Err(_) => return,
        }
    }
}

/// Reads one `\n`-terminated line of at most `cap` bytes. A longer line is consumed and
/// reported as [`Line::Oversized`]. `Ok(None)` at end of input.
pub async fn read_capped_line<R: AsyncBufReadExt + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<Option<Line>> {
    buf.clear();
    let mut skipped = 0usize;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            if skipped > 0 {
                return Ok(Some(Line::Oversized(skipped)));
            }
            if buf.is_empty() {
                return Ok(None);
            }
            return Ok(Some(Line::Text(String::from_utf8_lossy(buf).into_owned())));
        }
        let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..i], i + 1),
            None => (available, available.len()),
        };
        let newline = done > chunk.len();
        if skipped > 0 || buf.len() + chunk.len() > cap {
            skipped += buf.len() + chunk.len();
            buf.clear();
        } else {
            buf.extend_from_slice(chunk);
        }
        reader.consume(done);
        if newline {
            if skipped > 0 {
                return Ok(Some(Line::Oversized(skipped)));
            }
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(Some(Line::Text(String::from_utf8_lossy(buf).into_owned())));
        }
    }
}

impl AgentProcess {
    /// Keeps `token` until the process is gone: dropped once its group has been killed.
    pub fn hold(&mut self, token: Box<dyn std::fmt::Debug + Send + Sync>) {
        self.held = Some(token);
    }

    /// Waits for the process to exit.
    pub async fn wait(&mut self) -> Option<std::process::ExitStatus> {
        self.child.wait().await.ok()
    }

    /// Waits for the process to exit, at most `timeout`; `None` if it is still running.
    pub async fn wait_timeout(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        tokio::time::timeout(timeout, self.child.wait()).await.ok().and_then(|r| r.ok())
    }

    /// True while the CLI runs (an exited one is reaped here).
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The CLI's process id (its group id too).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Sends `signal` to the whole process group.
    pub fn signal_group(&self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(Pid::from_raw(pgid), signal);
        }
    }

    /// SIGTERM to the group, then SIGKILL after [`KILL_GRACE`] if anything is left.
    pub async fn terminate(mut self) {
        self.signal_group(Signal::SIGTERM);
        if self.wait_timeout(KILL_GRACE).await.is_none() {
            self.signal_group(Signal::SIGKILL);
            let _ = self.wait_timeout(Duration::from_secs(2)).await;
        }
        // Children may have outlived the leader: make sure the group is gone.
        self.signal_group(Signal::SIGKILL);
        self.pgid = None;
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill_all();
        }
        if let Some(tree) = self.tree.take() {
            // Everything the tree started, wherever it went; then its label and marker go.
            let _ = tokio::task::spawn_blocking(move || tree.sweep()).await;
        }
        self.held = None;
    }
}

/// Makes this process the child subreaper of everything it starts: a process that leaves its
/// group (`setsid`) and loses its parent (double fork) is reparented here instead of to init,
/// so the end of its turn finds it. Returns false where the kernel refuses.
pub fn become_subreaper() -> bool {
    nix::sys::prctl::set_child_subreaper(true).is_ok()
}

/// "X exited with status N: <stderr tail>" for a CLI that ended without finishing the turn.
pub fn exit_message(cli: &str, status: Option<std::process::ExitStatus>, stderr: &str) -> String {
    let how = match status.and_then(|s| s.code()) {
        Some(code) => format!("{cli} exited with status {code} before finishing the turn"),
        None => format!("{cli} stopped before finishing the turn"),
    };
    let tail: String = stderr
        .lines()
        .rev()
        .take(EXIT_MESSAGE_LINES)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join("\n");
    if tail.trim().is_empty() { format!("{how}.") } else { format!("{how}:\n{tail}") }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let tree = self.tree.take();
        if let Some(pgid) = self.pgid.take() {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGTERM);
            let held = self.held.take();
            std::thread::spawn(move || {
                std::thread::sleep(KILL_GRACE);
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
                if let Some(tree) = tree {
                    tree.sweep();
                }
                drop(held);
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines_of(input: &[u8], cap: usize) -> Vec<Line> {
        let mut reader = BufReader::with_capacity(7, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        while let Some(line) = read_capped_line(&mut reader, &mut buf, cap).await.expect("read") {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn lines_are_split_and_oversized_ones_skipped_without_losing_the_next() {
        let input = b"short\r\n0123456789abcdef\nnext\nlast-without-newline";
        let lines = lines_of(input, 10).await;
        assert_eq!(
            lines,
            vec![Line::Text("short".into()), Line::Oversized(16), Line::Text("next".into()), Line::Oversized(20)]
        );
        let ok = lines_of(b"a\nbb\n", 10).await;
        assert_eq!(ok, vec![Line::Text("a".into()), Line::Text("bb".into())]);
    }

    /// Waits until `pid` has exited (or is a zombie); false if it is still running after 5 s.
    async fn gone(pid: i32) -> bool {
        for _ in 0..500 {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if state.is_empty() || state.contains(") Z ") || state.contains(") X ") {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    /// The pids a script wrote into `dir`, one file each, once all `names` are there.
    async fn pids_in(dir: &Path, names: &[&str]) -> Vec<i32> {
        let mut out = Vec::new();
        for name in names {
            let path = dir.join(name);
            let mut pid = None;
            for _ in 0..500 {
                pid = std::fs::read_to_string(&path).ok().and_then(|t| t.trim().parse().ok());
                if pid.is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            out.push(pid.unwrap_or_else(|| panic!("{name} was never written")));
        }
        out
    }

    fn sh(script: &str, dir: &Path, trees: &Trees) -> Spawned {
        let env = vec![
            ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
            ("MOBIUS_DATA_DIR".to_owned(), dir.display().to_string()),
            ("MOBIUS_RUN_ID".to_owned(), "r1".to_owned()),
        ];
        spawn(
            Path::new("/bin/bash"),
            &["-c".into(), script.into()],
            dir,
            &env,
            Some(trees),
            None,
            super::super::ceiling::Applied::None,
        )
        .expect("spawn")
    }

    /// Escapes a tree tries: a cleared environment, the run's variable unset, a new session
    /// after a double fork, a grandchild of a process that left, a lowered label. Each writes
    /// its pid into a file named after it.
    const ESCAPES: &str = r#"
( env -i setsid sleep 300 & echo $! > cleared )
( env -u MOBIUS_RUN_ID -u MOBIUS_DATA_DIR setsid sleep 300 & echo $! > unset )
( setsid bash -c 'sleep 300 & echo $! > grandchild; wait' & )
( setsid bash -c 'ulimit -Hx 5; exec sleep 300' & echo $! > lowered )
echo started"#;
    const ESCAPED: [&str; 4] = ["cleared", "unset", "grandchild", "lowered"];

    #[tokio::test]
    async fn escapees_die_with_their_tree_whatever_they_did_to_their_environment_session_or_label() {
        assert!(become_subreaper(), "the kernel refused PR_SET_CHILD_SUBREAPER");
        let dir = tempfile::tempdir().expect("tmp");
        let trees = Trees::new(dir.path().join("agents"), false);
        let mut spawned = sh(ESCAPES, dir.path(), &trees);
        assert_eq!(spawned.lines.recv().await, Some(Line::Text("started".into())));
        let escaped = pids_in(dir.path(), &ESCAPED).await;
        let leader = i32::try_from(spawned.process.pid().expect("pid")).expect("pid");
        // They left the group (a setsid takes effect as it starts).
        for _ in 0..200 {
            if escaped.iter().all(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                    s[s.rfind(')').unwrap_or(0) + 1..].split_whitespace().nth(2) != Some(&leader.to_string())
                })
            }) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        spawned.process.terminate().await;
        for (name, pid) in ESCAPED.iter().zip(&escaped) {
            assert!(gone(*pid).await, "the {name} escapee {pid} outlived its tree");
        }
        assert_eq!(std::fs::read_dir(dir.path().join("agents")).expect("markers").count(), 0, "marker removed");
    }

    #[tokio::test]
    async fn orphans_of_a_dead_server_are_killed_at_the_next_boot() {
        assert!(become_subreaper(), "the kernel refused PR_SET_CHILD_SUBREAPER");
        let dir = tempfile::tempdir().expect("tmp");
        let pids = dir.path().join("agents");
        let trees = Trees::new(pids.clone(), false);
        let mut spawned = sh(ESCAPES, dir.path(), &trees);
        assert_eq!(spawned.lines.recv().await, Some(Line::Text("started".into())));
        let escaped = pids_in(dir.path(), &ESCAPED[..2]).await;
        let leader = i32::try_from(spawned.process.pid().expect("pid")).expect("pid");
        // Simulate the server dying: forget the handle (and the tree) without their cleanup.
        std::mem::forget(spawned.process);
        // A marker of an older release (a bare group id) is removed, not acted on.
        std::fs::write(pids.join("1"), b"").expect("marker");
        // The next start: a registry of its own, reading the markers left behind.
        let next = Trees::new(pids.clone(), false);
        assert!(tokio::task::spawn_blocking(move || next.reap_orphans()).await.expect("reap") >= 3);
        assert_eq!(std::fs::read_dir(&pids).expect("pids").count(), 0);
        assert!(gone(leader).await, "the orphaned CLI survived");
        for pid in escaped {
            assert!(gone(pid).await, "the orphaned escapee {pid} survived");
        }
    }

    #[tokio::test]
    async fn between_warm_turns_escapees_are_swept_and_the_kept_tree_is_left_alone() {
        assert!(become_subreaper(), "the kernel refused PR_SET_CHILD_SUBREAPER");
        let dir = tempfile::tempdir().expect("tmp");
        let trees = Trees::new(dir.path().join("agents"), false);
        // An escapee (new session, double fork), a background process of the group, and one
        // that left the session but is still the CLI's own child.
        let script = "( setsid sleep 300 & echo $! > escapee ) ; sleep 300 & echo $! > member; \
                      setsid sleep 300 & echo $! > own; echo started; wait";
        let mut spawned = sh(script, dir.path(), &trees);
        assert_eq!(spawned.lines.recv().await, Some(Line::Text("started".into())));
        let [escapee, member, own] = pids_in(dir.path(), &["escapee", "member", "own"]).await[..] else {
            panic!("three pids")
        };
        let (trees, label) = spawned.process.tree.as_ref().expect("tree").handle();
        let spare = spawned.process.pid();
        let killed = tokio::task::spawn_blocking(move || trees.sweep(label, spare)).await.expect("sweep");
        assert!(killed >= 1, "the escapee was swept");
        assert!(gone(escapee).await, "the setsid escapee {escapee} outlived the turn");
        for pid in [member, own] {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            assert!(!stat.is_empty() && !stat.contains(") Z "), "the kept CLI's own process {pid} lives on");
        }
        assert!(spawned.process.running(), "and so does the CLI");
        spawned.process.terminate().await;
        assert!(gone(member).await && gone(own).await);
    }

    #[tokio::test]
    async fn ending_one_tree_leaves_another_running_tree_whole() {
        assert!(become_subreaper(), "the kernel refused PR_SET_CHILD_SUBREAPER");
        let dir = tempfile::tempdir().expect("tmp");
        let trees = Trees::new(dir.path().join("agents"), false);
        let mut other =
            sh("( setsid sleep 300 & echo $! > other-escapee ); echo started; exec sleep 300", dir.path(), &trees);
        assert_eq!(other.lines.recv().await, Some(Line::Text("started".into())));
        let [other_escapee] = pids_in(dir.path(), &["other-escapee"]).await[..] else { panic!("one pid") };
        let mut ending = sh("( setsid sleep 300 & echo $! > escapee ); echo started", dir.path(), &trees);
        assert_eq!(ending.lines.recv().await, Some(Line::Text("started".into())));
        let [escapee] = pids_in(dir.path(), &["escapee"]).await[..] else { panic!("one pid") };
        ending.process.terminate().await;
        assert!(gone(escapee).await);
        assert!(other.process.running(), "the other tree's CLI runs on");
        let stat = std::fs::read_to_string(format!("/proc/{other_escapee}/stat")).unwrap_or_default();
        assert!(!stat.is_empty() && !stat.contains(") Z "), "and what it started is its own to end");
        other.process.terminate().await;
        assert!(gone(other_escapee).await);
    }

    #[tokio::test]
    async fn a_missing_binary_is_a_clear_error() {
        let err = spawn(
            Path::new("/nonexistent/claude"),
            &[],
            Path::new("/"),
            &[],
            None,
            None,
            super::super::ceiling::Applied::None,
        )
        .expect_err("missing");
        assert_eq!(err.code(), "agent_cli_missing");
    }

    #[tokio::test]
    async fn dropping_the_process_kills_its_whole_group() {
        let dir = tempfile::tempdir().expect("tmp");
        let pidfile = dir.path().join("child.pid");
        let script = format!("sleep 30 & echo $! > {}; echo started; wait", pidfile.display());
        let trees = Trees::new(dir.path().join("pids"), false);
        let mut spawned = spawn(
            Path::new("/bin/sh"),
            &["-c".into(), script],
            dir.path(),
            &[("PATH".into(), "/usr/bin:/bin".into())],
            Some(&trees),
            None,
            super::super::ceiling::Applied::None,
        )
        .expect("spawn");
        assert_eq!(std::fs::read_dir(dir.path().join("pids")).expect("pids").count(), 1);
        assert_eq!(spawned.lines.recv().await, Some(Line::Text("started".into())));
        let child_pid: i32 = std::fs::read_to_string(&pidfile).expect("pid").trim().parse().expect("int");
        spawned.process.terminate().await;
        assert_eq!(std::fs::read_dir(dir.path().join("pids")).expect("pids").count(), 0, "marker removed");
        // The grandchild (`sleep`) was in the same group and is gone too.
        // Signals are delivered asynchronously; give the kernel a moment, then look.
        let mut state = String::new();
        for _ in 0..100 {
            state = std::fs::read_to_string(format!("/proc/{child_pid}/stat")).unwrap_or_default();
            if state.is_empty() || state.contains(") Z ") || state.contains(") X ") {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("grandchild {child_pid} survived: {state}");
    }
}
