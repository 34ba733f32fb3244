//! The agent runtime: one seam ([`AgentProvider`]) over the real `claude` and `codex` CLIs,
//! their normalised events ([`AgentEvent`]), the fold of those events into chat events
//! (`fold.rs`), and the turn runner (`turn.rs`) that applies them to the live message and the
//! journal, controlled through a [`handle::TurnHandle`].
//!
//! Provider wire formats live only in `claude.rs` and `codex.rs`; everything else speaks
//! [`AgentEvent`].

pub mod ceiling;
pub mod claude;
pub mod codex;
pub mod diff;
pub mod fold;
pub mod handle;
pub mod handoff;
pub mod models;
pub mod notes;
pub mod park;
pub mod process;
pub mod prompt;
pub mod quiet;
pub mod registry;
pub mod resume;
pub mod sandbox;
pub mod schedule_ends;
pub mod session;
pub mod settings;
pub mod slots;
pub mod toolbox;
pub mod trees;
pub mod turn;
pub mod warm;
pub mod workspace;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::error::Result;
pub use crate::protocol::{ApprovalPolicy, ProviderKind};
use crate::protocol::{Choices, QuestionItem};

/// Everything a provider needs to run one turn.
#[derive(Debug)]
pub struct TurnRequest {
    /// The user's words for this turn (several queued messages are joined), with the list of
    /// attached files and their paths ([`InputFile::manifest`]).
    pub prompt: String,
    /// The files the messages of this turn attach (the CLI shows the images to the model).
    pub files: Vec<InputFile>,
    /// Composed system prompt (the agent's constitution + skills index).
    pub system_prompt: String,
    /// Provider session/thread to continue, if any.
    pub resume: Option<String>,
    pub model: Option<String>,
    /// Effort (reasoning) level; `None` leaves the CLI's default.
    pub effort: Option<String>,
    pub cwd: PathBuf,
    /// The complete environment of the process (nothing else is inherited).
    pub env: Vec<(String, String)>,
    pub approval: ApprovalPolicy,
    /// Plan first: the agent may only read until the owner approves its plan ([`Ask::Plan`]).
    pub plan: bool,
    /// The trees it starts its own in (its label, its marker under `DATA_DIR/run/agents`).
    pub trees: trees::Trees,
    /// Whether the agent may use tools (a quiet turn, `quiet.rs`, may not).
    pub tools: bool,
    /// The Landlock ruleset the CLI runs under (`None` when the sandbox is off).
    pub confine: Option<mobius_sys::landlock::Ruleset>,
    /// Keeps the process for the chat's next turn (`None`: it ends with this turn).
    pub keep: Option<Box<dyn Keeper>>,
    /// The memory ceiling the process is held to.
    pub memory: ceiling::MemoryCeiling,
    /// The MCP servers the CLI is told about: the broker's URL of each connector the chat may
    /// use (none for a quiet turn). Nothing else: `--strict-mcp-config` / the server's config.
    pub mcp: Vec<McpServer>,
}

/// An MCP server a CLI is told about: a connector's broker URL. The CLI authenticates with the
/// run's agent token, read from [`MCP_TOKEN_VAR`] in its environment; the connector's own
/// credential stays with the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServer {
    /// What the CLI names its tools by (`mcp__<name>__<tool>` for Claude).
    pub name: String,
    pub url: String,
}

/// The environment variable holding the bearer the CLIs send to the broker (the agent token).
pub const MCP_TOKEN_VAR: &str = "MOBIUS_AGENT_TOKEN";

/// One turn's input as a kept process receives it: the words (with the files' manifest) and the
/// files themselves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prompt {
    pub text: String,
    pub files: Vec<InputFile>,
    /// A plan-mode turn (see [`TurnRequest::plan`]).
    pub plan: bool,
}

/// A file the owner attached, as a turn hands it to the CLI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputFile {
    /// Where it is (the agent may read it).
    pub path: PathBuf,
    pub name: String,
    pub mime_type: String,
    pub size: u64,
    /// Picture size, for raster images the server decoded.
    pub dimensions: Option<(u32, u32)>,
    /// A raster image the model can look at (PNG, JPEG, WebP, GIF).
    pub image: bool,
    /// A smaller JPEG of the image, for models that cap image sizes.
    pub preview: Option<PathBuf>,
}

impl InputFile {
    /// The lines that tell the agent which files came with the message and where they are
    /// (images are also shown to the model; the rest it reads with its tools).
    pub fn manifest(files: &[InputFile]) -> String {
        if files.is_empty() {
            return String::new();
        }
        let mut text = String::from("\n\n[Files attached to this message:\n");
        for f in files {
            let size = if f.size >= 1 << 20 {
                format!("{:.1} MB", f.size as f64 / f64::from(1u32 << 20))
            } else {
                format!("{} KB", f.size.div_ceil(1024))
            };
            let dims = f.dimensions.map(|(w, h)| format!(", {w}×{h}")).unwrap_or_default();
            text.push_str(&format!("- {} ({}, {size}{dims}): {}\n", f.name, f.mime_type, f.path.display()));
        }
        text.push(']');
        text
    }
}

/// An image a tool returned.
#[derive(Debug)]
pub enum ToolImage {
    /// The bytes the CLI printed (Claude's tool results carry them).
    Bytes(Vec<u8>),
    /// A file the tool looked at (Codex's `view_image`); shown only from the agent's folders.
    Path(PathBuf),
}

/// Token counts of a turn.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Usage {
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
}

/// How a provider turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FinishStatus {
    Completed,
    Failed,
    Interrupted,
}

/// The terminal event of a provider turn.
#[derive(Clone, Debug)]
pub struct Finish {
    pub status: FinishStatus,
    pub error: Option<String>,
    pub usage: Option<Usage>,
    pub cost_usd: Option<f64>,
    pub session_id: Option<String>,
    /// What the owner must fix before a retry can work (a refused key, no quota left).
    pub fix: Option<crate::protocol::ErrorFix>,
    /// The turn ended on the plan's usage limit.
    pub limit: Option<LimitHit>,
}

/// A turn refused because the plan's usage limit was reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitHit {
    /// When the limit resets (unix ms), when the provider says.
    pub resets_at: Option<i64>,
}

impl Finish {
    /// A failure with a message for the owner.
    pub fn failed(message: impl Into<String>) -> Self {
        Self {
            status: FinishStatus::Failed,
            error: Some(message.into()),
            usage: None,
            cost_usd: None,
            session_id: None,
            fix: None,
            limit: None,
        }
    }

    /// The owner stopped the turn (what a stopped run records).
    pub fn stopped() -> Self {
        Self { status: FinishStatus::Interrupted, error: None, ..Self::failed("") }
    }
}

/// Something the agent needs the owner (or the approval policy) to decide.
#[derive(Debug)]
pub enum Ask {
    /// Clarifying questions.
    Question { questions: Vec<QuestionItem> },
    /// Permission to use a tool.
    Approval { tool: String, input: Value, reason: Option<String> },
    /// A plan-mode turn's proposed plan (Markdown), to approve before the agent acts.
    Plan { plan: String },
}

/// The decision sent back to the provider.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Answers keyed by question text: `{"Which color?": "Blue"}` (multi-select: a list).
    Answers(Choices),
    Allow,
    /// Allow, and the same tool again without asking for the rest of the chat.
    AllowAlways,
    Deny(String),
    /// The plan is approved, as this text (the owner may have edited it): carry it out.
    Plan(String),
}

/// A normalised provider event.
#[derive(Debug)]
pub enum AgentEvent {
    /// The provider's session/thread id (for resuming later turns).
    Session(String),
    /// A piece of assistant text for item `item_id`.
    Text { item_id: String, delta: String },
    /// The authoritative full text of an item (repairs dropped deltas).
    TextFinal { item_id: String, text: String },
    /// A piece of reasoning text.
    Thinking { item_id: String, delta: String },
    /// A tool call began; `input` is a short human summary. `parent`: the subagent call that
    /// made it (Claude's `parent_tool_use_id`); `subagent`: on a subagent call, its agent type.
    ToolStart { id: String, name: String, input: String, parent: Option<String>, subagent: Option<String> },
    /// A started call's input summary, known only once it ended (a Codex web search).
    ToolInput { id: String, input: String },
    /// The files a tool call changes, as whole diffs from its input (the fold bounds them).
    ToolFiles { id: String, files: Vec<crate::protocol::FileDiff> },
    /// The agent's plan as it stands now (the fold bounds it).
    Plan(crate::protocol::PlanCard),
    /// Web pages a tool call brought back (`url`, `title`), as the CLI reported them; the fold
    /// keeps http(s) ones, bounded.
    ToolSources { id: String, sources: Vec<(String, Option<String>)> },
    /// Tool output: the whole output, or a piece to append.
    ToolOutput { id: String, text: String, append: bool, exit_code: Option<i64> },
    /// The tool returned an image.
    ToolImage { id: String, image: ToolImage },
    /// A tool call ended; `interrupted` when it ended because the host interrupted the step
    /// (a steer), not because it failed.
    ToolEnd { id: String, is_error: bool, interrupted: bool },
    /// A decision is needed; answer through `reply` (dropping it denies).
    Ask { ask: Ask, reply: oneshot::Sender<Reply> },
    /// Running token usage.
    Usage(Usage),
    /// The plan's allowance windows, as the CLI just reported them.
    Limits(Vec<crate::protocol::PlanWindow>),
    /// A non-fatal problem worth showing in the logs.
    Warning(String),
    /// The CLI is retrying a failed model request.
    Retrying { attempt: u32, max_retries: u32, reason: String },
    /// The CLI took the steering message into the running turn.
    SteerAccepted,
    /// The CLI could not take the steering message (it stays for the queue).
    SteerRejected(String),
    /// The turn is over.
    Finished(Finish),
}

/// Instructions from the turn to a running provider.
#[derive(Debug)]
pub enum Control {
    /// Stop the current turn (Claude control `interrupt`, Codex `turn/interrupt`).
    Interrupt,
    /// Add the owner's words to the running turn (Codex `turn/steer`; Claude: interrupt,
    /// then continue the same session with the new message).
    Steer(String),
}

/// A started provider turn: its events and a control channel. Dropping it before its driver
/// kept the process for a later turn aborts the driver, which kills the process group.
pub struct ProviderTurn {
    pub events: mpsc::Receiver<AgentEvent>,
    pub control: mpsc::Sender<Control>,
    pub(crate) guard: DriverGuard,
}

impl ProviderTurn {
    /// True when the turn runs on a process kept from an earlier turn.
    pub fn warm(&self) -> bool {
        self.guard.warm
    }
}

/// Aborts a turn's driver when the turn goes before the driver released its process.
pub struct DriverGuard {
    driver: tokio::task::AbortHandle,
    released: std::sync::Arc<std::sync::atomic::AtomicBool>,
    warm: bool,
}

impl DriverGuard {
    pub(crate) fn new(
        driver: tokio::task::AbortHandle,
        released: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> Self {
        Self { driver, released, warm: false }
    }
}

impl Drop for DriverGuard {
    fn drop(&mut self) {
        if !self.released.load(std::sync::atomic::Ordering::SeqCst) {
            self.driver.abort();
        }
    }
}

/// The driver's half of one turn's channels (the turn holds the other half, a
/// [`ProviderTurn`]).
#[derive(Debug)]
pub struct TurnIo {
    pub events: mpsc::Sender<AgentEvent>,
    pub control: mpsc::Receiver<Control>,
    /// Set by the driver once it keeps the process for a later turn: the turn's end then
    /// leaves the process alone instead of killing it.
    pub released: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// The next turn handed to a kept process.
#[derive(Debug)]
pub struct NextTurn {
    /// The owner's words and files.
    pub prompt: Prompt,
    pub io: TurnIo,
    /// Answered `true` when the process takes the turn, `false` when it cannot (it died):
    /// the turn then starts a new process.
    pub taken: oneshot::Sender<bool>,
}

/// A parked process as its keeper sees it.
#[derive(Debug)]
pub struct Parked {
    /// Where the next turn arrives; dropping the sender retires the process.
    pub handoff: mpsc::Sender<NextTurn>,
    pub driver: tokio::task::AbortHandle,
    pub pid: Option<u32>,
    /// The provider session the process holds.
    pub session: Option<String>,
}

/// Keeps a CLI process between turns (`warm.rs`); its driver (`process.rs`) parks with it.
pub trait Keeper: Send + Sync + std::fmt::Debug {
    /// Parks a process; the ticket names this parking for [`Keeper::forget`].
    fn park(&self, parked: Parked) -> u64;
    /// The parked process left by itself (idle, or it died).
    fn forget(&self, ticket: u64);
    /// How long a parked process waits for its next turn.
    fn idle(&self) -> std::time::Duration;
    /// A token the process holds until it is gone: while it is held and the process is not
    /// parked, a new process for the chat waits ([`warm::WarmPool::settle`]).
    fn alive(&self) -> Box<dyn std::fmt::Debug + Send + Sync>;
}

/// The seam over the agent CLIs.
pub trait AgentProvider: Send + Sync {
    /// Which CLI this is.
    fn kind(&self) -> ProviderKind;
    /// Spawns the CLI and starts the turn; events arrive on the returned channel.
    fn start(&self, request: TurnRequest) -> Result<ProviderTurn>;
    /// The model a quiet turn (a chat note) asks for: the provider's cheapest; `None` leaves
    /// the CLI's own default.
    fn cheapest_model(&self) -> Option<&'static str> {
        None
    }
}

/// Where the markers of running agent process trees are.
pub fn agent_pid_dir(data_dir: &std::path::Path) -> PathBuf {
    data_dir.join("run").join("agents")
}

/// Short, single-line summary of a tool input for the tool block header.
pub fn summarize_input(tool: &str, input: &Value) -> String {
    let pick = |keys: &[&str]| keys.iter().find_map(|k| input.get(*k).and_then(Value::as_str)).map(str::to_owned);
    let text = match tool {
        "Bash" => pick(&["command"]),
        "Write" | "Edit" | "MultiEdit" | "Read" | "NotebookEdit" => pick(&["file_path", "path", "notebook_path"]),
        "Glob" | "Grep" => pick(&["pattern"]),
        "WebFetch" => pick(&["url"]),
        "WebSearch" => pick(&["query"]),
        "Task" | "Agent" => pick(&["description", "prompt"]),
        "TaskCreate" => pick(&["subject"]),
        _ => None,
    };
    let text = text.unwrap_or_else(|| match input {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    });
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 200 {
        format!("{}…", one_line.chars().take(199).collect::<String>())
    } else {
        one_line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn input_summaries_pick_the_meaningful_field_and_stay_short() {
        assert_eq!(summarize_input("Bash", &json!({"command": "ls  -la\n/data"})), "ls -la /data");
        assert_eq!(summarize_input("Write", &json!({"file_path": "/data/a.txt", "content": "x"})), "/data/a.txt");
        let long = summarize_input("Other", &json!({"blob": "y".repeat(500)}));
        assert!(long.chars().count() <= 200 && long.ends_with('…'));
    }
}
