//! The JSON-lines session both CLI drivers speak over an agent process (`process.rs`): the
//! turn's channels, the driver task, lines read and classified, control requests and their
//! replies, the start timeout, the output ceiling and the memory-ceiling check, and the end of
//! the process folded into the turn's finish.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use super::process::{
    AgentProcess, EXIT_GRACE, EXIT_STATUS_WAIT, Incoming, Line, Spawned, StderrTail, classify, exit_message,
};
use super::trees::Tree;
use super::{AgentEvent, Ask, Control, Finish, Keeper, Parked, Reply, TurnIo};

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

/// Events buffered between a driver and its turn.
const EVENT_QUEUE: usize = 256;
/// Instructions buffered between a turn and its driver.
const CONTROL_QUEUE: usize = 8;

/// The turn's half of a new turn's channels, before its driver exists.
#[derive(Debug)]
pub struct TurnHalf {
    events: mpsc::Receiver<AgentEvent>,
    control: mpsc::Sender<Control>,
    released: Arc<AtomicBool>,
}

impl TurnHalf {
    /// The turn, guarding `driver`: dropped before the driver released the process, it
    /// aborts the driver (and the CLI dies with it).
    pub fn with_driver(self, driver: AbortHandle) -> super::ProviderTurn {
        let guard = super::DriverGuard::new(driver, self.released);
        super::ProviderTurn { events: self.events, control: self.control, guard }
    }
}

/// A new turn's channels: the turn's half and the driver's half.
pub fn turn_channels() -> (TurnHalf, TurnIo) {
    let (events_tx, events) = mpsc::channel(EVENT_QUEUE);
    let (control, control_rx) = mpsc::channel(CONTROL_QUEUE);
    let released = Arc::new(AtomicBool::new(false));
    (
        TurnHalf { events, control, released: released.clone() },
        TurnIo { events: events_tx, control: control_rx, released },
    )
}

/// Spawns a driver task that is handed its own abort handle (a kept process's later turns
/// abort the same task when they are dropped mid-turn).
pub fn spawn_driver<F, Fut>(driver: F) -> AbortHandle
where
    F: FnOnce(AbortHandle) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = oneshot::channel::<AbortHandle>();
    let handle = tokio::spawn(async move {
        if let Ok(me) = rx.await {
            driver(me).await;
        }
    });
    let abort = handle.abort_handle();
    let _ = tx.send(abort.clone());
    abort
}

/// One CLI process that speaks JSON lines on stdio (Claude's stream-json, Codex's
/// JSON-RPC), over one or more turns: writing messages, reading them (oversized and
/// malformed lines become warnings), decisions the turn owes the CLI, control from the turn,
/// the start timeout, the end of a turn (and, with a [`Keeper`], waiting warm for the next
/// one), and the end of the process. The drivers keep only their protocol.
pub struct JsonLinesSession<R> {
    cli: &'static str,
    process: AgentProcess,
    stdin: ChildStdin,
    /// False after a failed write: the CLI is gone, nothing more is written.
    stdin_ok: bool,
    lines: mpsc::Receiver<Line>,
    stderr: StderrTail,
    io: TurnIo,
    replies: FuturesUnordered<PendingReply<R>>,
    heard: bool,
    start_timeout: Duration,
    start_deadline: Pin<Box<tokio::time::Sleep>>,
    /// Where the process waits between turns (`None`: one turn, then it ends).
    keeper: Option<Box<dyn Keeper>>,
    /// This driver's task, for the guards of later turns.
    driver: AbortHandle,
    /// Most stdout bytes one turn may produce, and what this turn produced so far.
    output_max: u64,
    output: u64,
    /// Memory kills seen in the process's cgroup.
    oom_kills: u64,
}

/// How often a process with a cgroup is checked for memory kills.
const OOM_CHECK_EVERY: Duration = Duration::from_secs(1);

/// The ceilings of a session's turns.
#[derive(Clone, Copy, Debug)]
pub struct SessionLimits {
    /// A turn whose CLI prints nothing for this long after starting fails.
    pub start_timeout: Duration,
    /// Most stdout bytes one turn may produce.
    pub output_max: u64,
}

impl<R: Send + 'static> JsonLinesSession<R> {
    /// A session over a freshly spawned CLI.
    pub fn new(
        cli: &'static str,
        spawned: Spawned,
        io: TurnIo,
        limits: SessionLimits,
        keeper: Option<Box<dyn Keeper>>,
        driver: AbortHandle,
    ) -> Self {
        let SessionLimits { start_timeout, output_max } = limits;
        let Spawned { mut process, stdin, lines, stderr } = spawned;
        if let Some(keeper) = &keeper {
            process.hold(keeper.alive());
        }
        Self {
            cli,
            process,
            stdin,
            stdin_ok: true,
            lines,
            stderr,
            io,
            replies: FuturesUnordered::new(),
            heard: false,
            start_timeout,
            start_deadline: Box::pin(tokio::time::sleep(start_timeout)),
            keeper,
            driver,
            output_max,
            output: 0,
            oom_kills: 0,
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
        let _ = self.io.events.send(event).await;
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
        let watch_memory = self.process.cgroup.is_some();
        loop {
            tokio::select! {
                line = self.lines.recv() => match line {
                    None => {
                        let status = self.process.wait_timeout(EXIT_STATUS_WAIT).await;
                        if let Some(message) = self.memory_kill() {
                            return Next::Closed(message);
                        }
                        return Next::Closed(exit_message(self.cli, status, &self.stderr.text()));
                    }
                    Some(line) => {
                        self.heard = true;
                        self.output += match &line {
                            Line::Text(text) => text.len() as u64 + 1,
                            Line::Oversized(n) => *n as u64,
                        };
                        if self.output > self.output_max {
                            return Next::Closed(format!(
                                "{} wrote more than {} MiB in this turn and was stopped \
                                 (MOBIUS_AGENT_OUTPUT_MAX_MB). Send a message to continue.",
                                self.cli,
                                self.output_max >> 20
                            ));
                        }
                        match classify(line, self.cli) {
                            Incoming::Json(value) => return Next::Message(value),
                            Incoming::Skipped(why) => self.emit(AgentEvent::Warning(why)).await,
                        }
                    }
                },
                Some(reply) = self.replies.next(), if !self.replies.is_empty() => return Next::Reply(reply),
                command = self.io.control.recv() => return Next::Control(command),
                () = &mut self.start_deadline, if !self.heard => return Next::StartTimedOut,
                () = tokio::time::sleep(OOM_CHECK_EVERY), if watch_memory => {
                    if let Some(message) = self.memory_kill() {
                        return Next::Closed(message);
                    }
                }
            }
        }
    }

    /// The owner's message when the kernel killed one of the process's tree for passing its
    /// memory ceiling since the last look (cgroup ceilings only).
    fn memory_kill(&mut self) -> Option<String> {
        let cgroup = self.process.cgroup.as_ref()?;
        let kills = cgroup.oom_kills();
        if kills <= self.oom_kills {
            return None;
        }
        self.oom_kills = kills;
        Some(format!(
            "The agent's processes used more than their {} MiB of memory and the turn was stopped \
             (MOBIUS_AGENT_MEMORY_MAX_MB). Send a message to continue.",
            cgroup.max_bytes() >> 20
        ))
    }

    /// The message for a CLI that stayed silent past its start timeout.
    pub fn silent_message(&self) -> String {
        format!("{} did not respond within {} s.", self.cli, self.start_timeout.as_secs())
    }

    /// Ends the current turn with `finish`. When the process can go on (`reusable`, still
    /// running, and a keeper to park it with), it is parked: it waits for its next turn,
    /// sweeps what escaped its group meanwhile, and returns the next turn's prompt. `None`
    /// when it was not kept, retired, idle too long or died: the caller then [`close`]s it.
    ///
    /// [`close`]: JsonLinesSession::close
    pub async fn end_turn(&mut self, finish: Finish, reusable: bool) -> Option<super::Prompt> {
        let keep = reusable && self.stdin_ok && self.keeper.is_some() && self.process.running();
        let session = finish.session_id.clone();
        let Some(keeper) = self.keeper.as_ref().filter(|_| keep) else {
            let _ = self.io.events.send(AgentEvent::Finished(finish)).await;
            return None;
        };
        // Parked before the turn hears its end, so the chat's next turn finds it kept.
        self.io.released.store(true, Ordering::SeqCst);
        let (handoff, mut arrivals) = mpsc::channel(1);
        let ticket = keeper.park(Parked { handoff, driver: self.driver.clone(), pid: self.process.pid(), session });
        let _ = self.io.events.send(AgentEvent::Finished(finish)).await;
        // What escaped the CLI's tree during the turn goes now, as it would with the group.
        if let Some((trees, label)) = self.process.tree.as_ref().map(Tree::handle) {
            let spare = self.process.pid();
            tokio::task::spawn_blocking(move || trees.sweep(label, spare));
        }
        let idle = tokio::time::sleep(keeper.idle());
        tokio::pin!(idle);
        loop {
            tokio::select! {
                next = arrivals.recv() => {
                    let next = next?;
                    if !self.process.running() {
                        let _ = next.taken.send(false);
                        return None;
                    }
                    self.io = next.io;
                    self.output = 0;
                    self.replies = FuturesUnordered::new();
                    self.heard = false;
                    self.start_deadline = Box::pin(tokio::time::sleep(self.start_timeout));
                    // The turn gave up waiting: nobody would read this turn.
                    return next.taken.send(true).is_ok().then_some(next.prompt);
                }
                () = &mut idle => {
                    keeper.forget(ticket);
                    return None;
                }
                line = self.lines.recv() => {
                    if line.is_none() {
                        keeper.forget(ticket);
                        return None;
                    }
                }
            }
        }
    }

    /// Ends the process: closes stdin so the CLI can finish writing its session and exit on
    /// its own, then terminates its process group.
    pub async fn close(self) {
        let Self { mut process, stdin, .. } = self;
        drop(stdin);
        let _ = process.wait_timeout(EXIT_GRACE).await;
        process.terminate().await;
    }
}
