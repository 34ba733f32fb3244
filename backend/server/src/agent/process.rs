//! Agent CLI subprocesses: own process group, whitelisted environment, capped stdout lines,
//! a bounded stderr tail, and the whole group killed when the handle is dropped; and the
//! JSON-lines session both drivers speak over them ([`JsonLinesSession`]).

use std::collections::VecDeque;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, oneshot};

use super::{AgentEvent, Ask, Control, Finish, Reply};
use crate::error::{Error, Result};

/// Longest stdout line accepted from a CLI; longer lines are skipped and reported.
pub const MAX_LINE_BYTES: usize = 10 * 1024 * 1024;
/// After its last message, how long a CLI gets to exit on its own once stdin closes.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How long a CLI whose output ended gets to report its exit status.
const EXIT_STATUS_WAIT: Duration = Duration::from_secs(1);
/// stderr lines quoted in the message of a CLI that ended early.
const EXIT_MESSAGE_LINES: usize = 8;
/// stderr lines kept for error messages.
const STDERR_TAIL_LINES: usize = 50;
/// Longest stderr line kept.
const MAX_STDERR_LINE_CHARS: usize = 1000;
/// Between SIGTERM and SIGKILL of the group.
pub const KILL_GRACE: Duration = Duration::from_millis(250);

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
        self.0.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect::<Vec<_>>().join("\n")
    }

    fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if lines.len() == STDERR_TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line.chars().take(MAX_STDERR_LINE_CHARS).collect());
    }
}

/// A running CLI. Dropping it terminates the whole process group.
#[derive(Debug)]
pub struct AgentProcess {
    child: Child,
    pgid: Option<i32>,
    /// `DATA_DIR/run/agents/<pgid>`: lets the next boot kill this group if the server dies.
    marker: Option<std::path::PathBuf>,
}

/// What [`spawn`] hands back.
#[derive(Debug)]
pub struct Spawned {
    pub process: AgentProcess,
    pub stdin: ChildStdin,
    pub lines: mpsc::Receiver<Line>,
    pub stderr: StderrTail,
}

/// Starts `program` with exactly `env` (nothing inherited), in its own process group. With
/// `pid_dir`, the group id is recorded there until the process is gone.
pub fn spawn(
    program: &Path,
    args: &[String],
    cwd: &Path,
    env: &[(String, String)],
    pid_dir: Option<&Path>,
) -> Result<Spawned> {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => Error::conflict(
            "agent_cli_missing",
            format!("The agent CLI at {} could not be started ({e}). Install it or fix its path.", program.display()),
        ),
        _ => Error::Io(e),
    })?;
    let pgid = child.id().and_then(|id| i32::try_from(id).ok());
    let marker = match (pid_dir, pgid) {
        (Some(dir), Some(pgid)) => {
            std::fs::create_dir_all(dir)?;
            let path = dir.join(pgid.to_string());
            std::fs::write(&path, b"")?;
            Some(path)
        }
        _ => None,
    };
    let stdin = child.stdin.take().ok_or_else(|| Error::Internal("no stdin pipe".into()))?;
    let stdout = child.stdout.take().ok_or_else(|| Error::Internal("no stdout pipe".into()))?;
    let stderr_pipe = child.stderr.take().ok_or_else(|| Error::Internal("no stderr pipe".into()))?;
    let (tx, lines) = mpsc::channel(256);
    tokio::spawn(read_lines(stdout, tx));
    let stderr = StderrTail::default();
    let tail = stderr.clone();
    tokio::spawn(async move {
        let mut reader = BufReader::new(stderr_pipe).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            tail.push(line);
        }
    });
    Ok(Spawned { process: AgentProcess { child, pgid, marker }, stdin, lines, stderr })
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
    /// Waits for the process to exit, at most `timeout`; `None` if it is still running.
    pub async fn wait_timeout(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        tokio::time::timeout(timeout, self.child.wait()).await.ok().and_then(|r| r.ok())
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
        if let Some(marker) = self.marker.take() {
            let _ = std::fs::remove_file(marker);
        }
    }
}

/// Kills agent process groups left behind by a server that died without cleaning up. Only
/// groups whose leader still carries this data dir in its environment are touched.
pub fn reap_orphans(pid_dir: &Path, data_dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(pid_dir) else { return 0 };
    let needle = format!("MOBIUS_DATA_DIR={}", data_dir.display()).into_bytes();
    let mut killed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if let Some(pgid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) {
            let environ = std::fs::read(format!("/proc/{pgid}/environ")).unwrap_or_default();
            if environ.split(|b| *b == 0).any(|var| var == needle.as_slice()) {
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
                killed += 1;
            }
        }
        let _ = std::fs::remove_file(path);
    }
    killed
}

/// What a [`JsonLinesSession`] hands its driver next.
#[derive(Debug)]
pub enum Next<R> {
    /// A JSON message from the CLI.
    Message(Value),
    /// The CLI's output ended before the turn did: what to tell the owner.
    Closed(String),
    /// The decision on an earlier [`JsonLinesSession::ask`], ready to send back.
    Reply(R),
    /// An instruction from the turn; `None` when the turn went away.
    Control(Option<Control>),
    /// The CLI said nothing within its start timeout.
    StartTimedOut,
}

type PendingReply<R> = Pin<Box<dyn Future<Output = R> + Send>>;

/// One turn of a CLI that speaks JSON lines on stdio (Claude's stream-json, Codex's
/// JSON-RPC): writing messages, reading them (oversized and malformed lines become warnings),
/// decisions the turn owes the CLI, control from the turn, the start timeout, and the end.
/// The drivers keep only their protocol.
pub struct JsonLinesSession<R> {
    cli: &'static str,
    process: AgentProcess,
    stdin: ChildStdin,
    /// False after a failed write: the CLI is gone, nothing more is written.
    stdin_ok: bool,
    lines: mpsc::Receiver<Line>,
    stderr: StderrTail,
    events: mpsc::Sender<AgentEvent>,
    control: mpsc::Receiver<Control>,
    replies: FuturesUnordered<PendingReply<R>>,
    heard: bool,
    start_timeout: Duration,
    start_deadline: Pin<Box<tokio::time::Sleep>>,
}

impl<R: Send + 'static> JsonLinesSession<R> {
    /// A session over a freshly spawned CLI.
    pub fn new(
        cli: &'static str,
        spawned: Spawned,
        events: mpsc::Sender<AgentEvent>,
        control: mpsc::Receiver<Control>,
        start_timeout: Duration,
    ) -> Self {
        let Spawned { process, stdin, lines, stderr } = spawned;
        Self {
            cli,
            process,
            stdin,
            stdin_ok: true,
            lines,
            stderr,
            events,
            control,
            replies: FuturesUnordered::new(),
            heard: false,
            start_timeout,
            start_deadline: Box::pin(tokio::time::sleep(start_timeout)),
        }
    }

    /// Writes one message as a line. After a failed write the CLI is gone; later writes are
    /// skipped and the end shows up as [`Next::Closed`].
    pub async fn send(&mut self, message: &Value) {
        if !self.stdin_ok {
            return;
        }
        let mut line = message.to_string();
        line.push('\n');
        self.stdin_ok = self.stdin.write_all(line.as_bytes()).await.is_ok() && self.stdin.flush().await.is_ok();
    }

    /// Hands an event to the turn.
    pub async fn emit(&mut self, event: AgentEvent) {
        let _ = self.events.send(event).await;
    }

    /// Asks the turn to decide; `answer` turns the decision (a denial if the turn goes away)
    /// into what [`Next::Reply`] yields.
    pub async fn ask(&mut self, ask: Ask, answer: impl FnOnce(Reply) -> R + Send + 'static) {
        let (reply, decided) = oneshot::channel();
        self.emit(AgentEvent::Ask { ask, reply }).await;
        self.replies.push(Box::pin(async move {
            answer(decided.await.unwrap_or_else(|_| Reply::Deny("Stopped by the owner.".into())))
        }));
    }

    /// True while a decision is still owed to the CLI.
    pub fn waiting(&self) -> bool {
        !self.replies.is_empty()
    }

    /// The next thing the driver must handle.
    pub async fn next(&mut self) -> Next<R> {
        loop {
            tokio::select! {
                line = self.lines.recv() => match line {
                    None => {
                        let status = self.process.wait_timeout(EXIT_STATUS_WAIT).await;
                        return Next::Closed(exit_message(self.cli, status, &self.stderr.text()));
                    }
                    Some(line) => {
                        self.heard = true;
                        match classify(line, self.cli) {
                            Incoming::Json(value) => return Next::Message(value),
                            Incoming::Skipped(why) => self.emit(AgentEvent::Warning(why)).await,
                        }
                    }
                },
                Some(reply) = self.replies.next(), if !self.replies.is_empty() => return Next::Reply(reply),
                command = self.control.recv() => return Next::Control(command),
                () = &mut self.start_deadline, if !self.heard => return Next::StartTimedOut,
            }
        }
    }

    /// The message for a CLI that stayed silent past its start timeout.
    pub fn silent_message(&self) -> String {
        format!("{} did not respond within {} s.", self.cli, self.start_timeout.as_secs())
    }

    /// Ends the turn: reports `finish`, closes stdin so the CLI can finish writing its session
    /// and exit on its own, then terminates its process group.
    pub async fn finish(self, finish: Finish) {
        let Self { mut process, stdin, events, .. } = self;
        let _ = events.send(AgentEvent::Finished(finish)).await;
        drop(stdin);
        let _ = process.wait_timeout(EXIT_GRACE).await;
        process.terminate().await;
    }
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
        if let Some(marker) = self.marker.take() {
            let _ = std::fs::remove_file(marker);
        }
        if let Some(pgid) = self.pgid.take() {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGTERM);
            std::thread::spawn(move || {
                std::thread::sleep(KILL_GRACE);
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
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

    #[tokio::test]
    async fn orphans_of_a_dead_server_are_killed_at_the_next_boot() {
        let dir = tempfile::tempdir().expect("tmp");
        let pids = dir.path().join("pids");
        let data = dir.path().join("data");
        let env = vec![
            ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
            ("MOBIUS_DATA_DIR".to_owned(), data.display().to_string()),
        ];
        let spawned =
            spawn(Path::new("/bin/sh"), &["-c".into(), "echo up; sleep 30".into()], dir.path(), &env, Some(&pids))
                .expect("spawn");
        let mut lines = spawned.lines;
        assert_eq!(lines.recv().await, Some(Line::Text("up".into())));
        // Simulate the server dying: forget the handle without running its cleanup.
        std::mem::forget(spawned.process);
        // A marker for an unrelated process (pid 1) must not be acted on.
        std::fs::write(pids.join("1"), b"").expect("marker");
        assert_eq!(reap_orphans(&pids, &data), 1);
        assert_eq!(std::fs::read_dir(&pids).expect("pids").count(), 0);
    }

    #[tokio::test]
    async fn a_missing_binary_is_a_clear_error() {
        let err = spawn(Path::new("/nonexistent/claude"), &[], Path::new("/"), &[], None).expect_err("missing");
        assert_eq!(err.code(), "agent_cli_missing");
    }

    #[tokio::test]
    async fn dropping_the_process_kills_its_whole_group() {
        let dir = tempfile::tempdir().expect("tmp");
        let pidfile = dir.path().join("child.pid");
        let script = format!("sleep 30 & echo $! > {}; echo started; wait", pidfile.display());
        let mut spawned = spawn(
            Path::new("/bin/sh"),
            &["-c".into(), script],
            dir.path(),
            &[("PATH".into(), "/usr/bin:/bin".into())],
            Some(&dir.path().join("pids")),
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
