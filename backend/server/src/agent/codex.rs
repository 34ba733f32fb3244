//! Codex (`codex app-server`) over JSON-RPC on stdio: `initialize` → `thread/start` or
//! `thread/resume` → `turn/start` (and, kept warm, further `turn/start`s on the thread); approvals and questions are server requests answered by
//! the server; `turn/interrupt` stops.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::LimitHit;
use super::models::ModelInfo;
use super::process;
use super::session::{self, JsonLinesSession, Next};
use super::{
    AgentEvent, AgentProvider, ApprovalPolicy, Ask, Control, Finish, FinishStatus, Prompt, ProviderKind, ProviderTurn,
    Reply, ToolImage, TurnRequest, Usage,
};
use crate::error::Result;
use crate::protocol::PlanWindow;
use crate::protocol::{Choice, QuestionItem, QuestionOption};

/// The Codex CLI.
#[derive(Clone, Debug)]
pub struct Codex {
    pub bin: PathBuf,
    /// A turn whose CLI prints nothing for this long after starting fails.
    pub start_timeout: Duration,
    /// Most stdout bytes one turn may produce.
    pub output_max: u64,
}

impl AgentProvider for Codex {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Codex
    }

    fn start(&self, mut request: TurnRequest) -> Result<ProviderTurn> {
        let mut args = config_overrides();
        args.extend(mcp_overrides(&request.mcp, request.approval));
        args.push("app-server".to_owned());
        let confine = request.confine.take();
        let keep = request.keep.take();
        let spawned = process::spawn(
            &self.bin,
            &args,
            &request.cwd,
            &request.env,
            Some(&request.trees),
            confine,
            request.memory.prepare(),
        )?;
        let (turn, io) = session::turn_channels();
        let limits = session::SessionLimits { start_timeout: self.start_timeout, output_max: self.output_max };
        let driver = session::spawn_driver(move |me| {
            drive(JsonLinesSession::new("Codex", spawned, io, limits, keep, me), request)
        });
        Ok(turn.with_driver(driver))
    }
}

/// Name of the model provider the server defines when Codex talks to another Responses
/// endpoint than OpenAI's (`MOBIUS_CODEX_BASE_URL`).
const ENDPOINT_PROVIDER: &str = "mobius";

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The `config.toml` the server writes into `CODEX_HOME` before every Codex process it
/// starts. `CODEX_HOME` is the agent's to write, so whatever it put there is replaced: no
/// `notify` program, no MCP server, no hooks, no plugins, no profile, no trusted project, no
/// other model provider. Codex reads it (and its `.rules`) when a thread starts, so an edit
/// made during a turn only ever reaches a process the server has prepared again. With
/// `base_url`, the model is asked at that Responses endpoint (`MOBIUS_CODEX_BASE_URL`).
pub fn config_toml(base_url: Option<&str>) -> String {
    let mut text = String::from(
        "# Written by Möbius before each Codex process; edits here do not last.\n\
         check_for_update_on_startup = false\n",
    );
    if base_url.is_some() {
        text.push_str(&format!("model_provider = \"{ENDPOINT_PROVIDER}\"\n"));
    }
    text.push_str("\n[analytics]\nenabled = false\n\n[otel]\nmetrics_exporter = \"none\"\n");
    text.push_str("\n[features]\n");
    for (feature, on) in FEATURES {
        text.push_str(&format!("{feature} = {on}\n"));
    }
    text.push_str("\n[features.multi_agent_v2]\n");
    for (key, value) in MULTI_AGENT {
        text.push_str(&format!("{key} = {value}\n"));
    }
    for (tool, on) in TOOLS {
        text.push_str(&format!("\n[tools.{tool}]\nenabled = {on}\n"));
    }
    if let Some(url) = base_url {
        text.push_str(&format!(
            "\n[model_providers.{ENDPOINT_PROVIDER}]\nname = \"Möbius endpoint\"\nbase_url = {}\nwire_api = \"responses\"\n",
            toml_string(url)
        ));
    }
    text
}

/// Features the server sets for every Codex process: questions reach the owner; hooks,
/// plugins and the MCP servers a skill asks for never run; Codex keeps no goal of its own.
///
/// `goals`: the pinned 0.171 offers the model `get_goal` / `create_goal` / `update_goal` by
/// default (their calls come only as `thread/goal/updated` notifications, no item), and while
/// a goal is active the app-server starts a turn by itself the moment one ends (`turn/started`
/// with the first turn as `rootTurnId`, the model told "Continue working toward the active
/// thread goal") until the model marks it complete — also after a `thread/resume`. Against the
/// scripted Responses server one `create_goal` brought 764 such turns in 30 s. Nobody would see
/// or stop them (a kept process's lines are dropped between turns), and one's `turn/completed`
/// could end the owner's next turn early (the parser takes any of the thread's as its end).
/// Off, the tools are not offered and a call made anyway is answered "unsupported call:
/// create_goal": a chat's goal is the `/goal` pin, which the plan tool (`TOOLS`) moves.
const FEATURES: [(&str, bool); 5] = [
    ("default_mode_request_user_input", true),
    ("goals", false),
    ("hooks", false),
    ("plugins", false),
    ("skill_mcp_dependency_install", false),
];

/// Built-in tools the server turns on for every Codex process. `update_plan` (the checklist
/// whose calls come back as `turn/plan/updated`, the plan card) is off by default in the
/// pinned 0.171: without `tools.update_plan.enabled` the model is never offered it, and a call
/// it makes anyway is answered "unsupported call" with no event (seen against the scripted
/// Responses server, which logs the `tools` of each request). Web search needs no switch: the
/// hosted `web_search` tool is offered by default.
const TOOLS: [(&str, bool); 1] = [("update_plan", true)];

/// Codex's sub-agents, as the original runs them (multi-agent v2): `spawn_agent`, `wait_agent`…
/// under the `agents` namespace, at most 4 sub-agent threads at once. They run as threads of
/// the same app-server process (its group, sandbox and memory ceiling), stream on the same
/// connection under their own thread id, and become subagent chips (`Parser::item_started`).
const MULTI_AGENT: [(&str, &str); 3] =
    [("enabled", "true"), ("tool_namespace", "\"agents\""), ("max_concurrent_threads_per_session", "4")];

/// What a process started by the server is told on its command line as well (a session
/// flag beats every file): the features and tools above and no `notify` program.
pub fn config_overrides() -> Vec<String> {
    let mut args = Vec::new();
    for (feature, on) in FEATURES {
        args.push("-c".to_owned());
        args.push(format!("features.{feature}={on}"));
    }
    for (key, value) in MULTI_AGENT {
        args.push("-c".to_owned());
        args.push(format!("features.multi_agent_v2.{key}={value}"));
    }
    for (tool, on) in TOOLS {
        args.push("-c".to_owned());
        args.push(format!("tools.{tool}.enabled={on}"));
    }
    args.push("-c".to_owned());
    args.push("notify=[]".to_owned());
    args
}

/// A turn's connectors as session flags (they beat every file): each an MCP server over
/// streamable HTTP at its broker URL, the bearer read from the agent token's variable (so no
/// token is on the command line). Unless the chat's policy is `full`, every tool call asks
/// (`prompt`: an `mcpServer/elicitation/request`, which becomes an approval card); Codex
/// would otherwise run them unasked. The model finds MCP tools through Codex's `tool_search`.
pub fn mcp_overrides(servers: &[super::McpServer], approval: ApprovalPolicy) -> Vec<String> {
    let mut args = Vec::new();
    for server in servers {
        args.push("-c".to_owned());
        args.push(format!("mcp_servers.{}.url={}", server.name, toml_string(&server.url)));
        args.push("-c".to_owned());
        args.push(format!("mcp_servers.{}.bearer_token_env_var={}", server.name, toml_string(super::MCP_TOKEN_VAR)));
        if approval != ApprovalPolicy::Full {
            args.push("-c".to_owned());
            args.push(format!("mcp_servers.{}.default_tools_approval_mode=\"prompt\"", server.name));
        }
    }
    args
}

/// Entries of `CODEX_HOME` the agent could plant to loosen approvals or run programs in a
/// later process (execpolicy rules that allow commands, hook definitions), removed before
/// each process starts.
const PLANTABLE: &[&str] = &["rules", "hooks.json"];

/// Prepares `CODEX_HOME` (a folder the agent can write) for a process: the server's
/// `config.toml` replaces whatever is there, and planted rules and hooks go. Nothing in it is
/// read and no link is followed.
pub fn prepare_home(home: &crate::safe_fs::Dir, base_url: Option<&str>) -> std::io::Result<()> {
    use std::ffi::OsStr;
    home.write(OsStr::new("config.toml"), config_toml(base_url).as_bytes(), 0o600)?;
    for name in PLANTABLE {
        home.remove_tree(OsStr::new(name))?;
    }
    Ok(())
}

/// Our request ids.
const ID_INITIALIZE: i64 = 1;
const ID_THREAD: i64 = 2;
const ID_TURN: i64 = 3;
const ID_INTERRUPT: i64 = 4;
/// Steering requests use ids from here up.
const ID_STEER_BASE: i64 = 100;

/// The `thread/start` (or `thread/resume`) request for a turn.
pub fn thread_request(request: &TurnRequest) -> Value {
    // Codex's own sandbox runs inside ours (Landlock): `danger-full-access` means "nothing
    // more than the server's sandbox", `workspace-write` also keeps writes in the workspace
    // and the network off unless the owner approves.
    let (approval, sandbox) = match request.approval {
        ApprovalPolicy::Full => ("never", "danger-full-access"),
        ApprovalPolicy::Workspace => ("on-request", "workspace-write"),
        ApprovalPolicy::Ask => ("untrusted", "danger-full-access"),
    };
    // Codex always offers its tools; a tool-less turn gets a read-only sandbox and no approvals.
    let (approval, sandbox) = if request.tools { (approval, sandbox) } else { ("never", "read-only") };
    let mut params = json!({
        "cwd": request.cwd.display().to_string(),
        "approvalPolicy": approval,
        "sandbox": sandbox,
        "developerInstructions": request.system_prompt,
    });
    if let Some(model) = &request.model {
        params["model"] = model.clone().into();
    }
    match &request.resume {
        Some(thread) => {
            params["threadId"] = thread.clone().into();
            json!({ "id": ID_THREAD, "method": "thread/resume", "params": params })
        }
        None => json!({ "id": ID_THREAD, "method": "thread/start", "params": params }),
    }
}

/// What one stdout message means.
#[derive(Debug)]
pub enum Parsed {
    Events(Vec<AgentEvent>),
    /// The thread is ready: start the turn on it.
    ThreadReady(String),
    /// `turn/start` answered with the turn id.
    TurnStarted(String),
    /// A server request that needs a decision.
    Request {
        id: Value,
        ask: Ask,
        questions_by_text: HashMap<String, String>,
    },
    /// Codex asks whether an MCP tool may run (an elicitation): answered `accept`/`decline`.
    McpApproval {
        id: Value,
        ask: Ask,
    },
    /// A server request we do not handle.
    Unhandled {
        id: Value,
    },
    /// The answer to one of our steering requests.
    SteerAnswered {
        error: Option<String>,
    },
    Finished(Finish),
}

/// Turns app-server messages into [`AgentEvent`]s. Pure: no I/O.
#[derive(Debug, Default)]
pub struct Parser {
    thread: Option<String>,
    /// What this turn's model requests used (the sum of each update's `last`).
    usage: Option<Usage>,
    /// The plan's windows as last reported (kept across turns: a usage limit's reset).
    windows: Vec<PlanWindow>,
    /// Command output streamed so far per item, so the final output is not sent twice.
    streamed: HashMap<String, bool>,
    /// Turns of this thread that already ended (the latest few): a late notification of one
    /// (an interrupted turn's error, say) must not end the turn that runs now.
    ended: std::collections::VecDeque<String>,
    /// The sub-agents Codex started (multi-agent), by their own thread id.
    agents: HashMap<String, SubAgent>,
}

/// A sub-agent Codex started: its own thread streams on the same connection. Its steps go
/// under the call that started it (the chip), its words are its report, and its turn's end
/// ends that call, not ours.
#[derive(Debug)]
struct SubAgent {
    /// The `subAgentActivity` item that started it: the chip's tool call.
    call: String,
    /// What it said last: the report shown in the chip.
    report: String,
    /// Its call has not ended yet.
    open: bool,
    /// Its turn running now: a stop interrupts it too (Codex 0.171 interrupts only the turn
    /// it is asked to; the sub-agent would go on working in the kept process).
    turn: Option<String>,
}

/// Ended turn ids remembered per thread.
const ENDED_TURNS_KEPT: usize = 8;
/// Sub-agents followed in one process (Codex bounds its own; past this they are not shown).
const MAX_SUB_AGENTS: usize = 64;
/// Characters kept of a sub-agent's report (the fold bounds the output again).
const MAX_REPORT_CHARS: usize = 64 * 1024;

impl Parser {
    /// A usage-limit refusal, with its reset: the exhausted window's (the limit's headers come
    /// as an `account/rateLimits/updated` just before), else unknown. (The message's "try again
    /// at 4:21 PM" is in the CLI's local time and minute-rounded: not used.)
    fn limit_hit(&self, error: &Value) -> Option<LimitHit> {
        let info = error.get("codexErrorInfo").and_then(Value::as_str)?;
        if info != "usageLimitExceeded" {
            return None;
        }
        let exhausted = self
            .windows
            .iter()
            .filter(|w| w.used_percent.is_some_and(|u| u >= 100.0))
            .filter_map(|w| w.resets_at)
            .min();
        Some(LimitHit { resets_at: exhausted })
    }

    /// Forgets what belonged to the previous turn (the thread stays).
    pub fn next_turn(&mut self) {
        self.usage = None;
        self.streamed.clear();
    }

    /// Interprets one message from the app-server.
    pub fn parse(&mut self, msg: &Value) -> Parsed {
        let method = msg.get("method").and_then(Value::as_str);
        let id = msg.get("id").cloned();
        match (method, id) {
            (Some(method), Some(id)) => self.server_request(method, id, msg.get("params").unwrap_or(&Value::Null)),
            (None, Some(id)) => self.response(&id, msg),
            (Some(method), None) => self.notification(method, msg.get("params").unwrap_or(&Value::Null)),
            (None, None) => Parsed::Events(Vec::new()),
        }
    }

    fn response(&mut self, id: &Value, msg: &Value) -> Parsed {
        if id.as_i64().is_some_and(|i| i >= ID_STEER_BASE) {
            let error =
                msg.get("error").map(|e| e.get("message").and_then(Value::as_str).unwrap_or("refused").to_owned());
            return Parsed::SteerAnswered { error };
        }
        if let Some(error) = msg.get("error") {
            let message = error.get("message").and_then(Value::as_str).unwrap_or("request failed");
            return match id.as_i64() {
                Some(ID_INTERRUPT) => Parsed::Events(Vec::new()),
                Some(ID_THREAD) => {
                    Parsed::Finished(Finish::failed(format!("Codex could not open the conversation: {message}")))
                }
                _ => Parsed::Finished(Finish::failed(format!("Codex refused the request: {message}"))),
            };
        }
        let result = msg.get("result").unwrap_or(&Value::Null);
        match id.as_i64() {
            Some(ID_THREAD) => {
                let thread = result.pointer("/thread/id").and_then(Value::as_str).unwrap_or_default().to_owned();
                self.thread = Some(thread.clone());
                Parsed::ThreadReady(thread)
            }
            Some(ID_TURN) => {
                Parsed::TurnStarted(result.pointer("/turn/id").and_then(Value::as_str).unwrap_or_default().to_owned())
            }
            _ => Parsed::Events(Vec::new()),
        }
    }

    fn notification(&mut self, method: &str, p: &Value) -> Parsed {
        // Another thread than ours is a sub-agent's (or nobody's we know: left alone).
        if let (Some(thread), Some(ours)) = (p.get("threadId").and_then(Value::as_str), self.thread.as_deref())
            && thread != ours
        {
            let thread = thread.to_owned();
            return Parsed::Events(self.sub_agent_notification(&thread, method, p));
        }
        let turn = p.get("turnId").or_else(|| p.pointer("/turn/id")).and_then(Value::as_str);
        if turn.is_some_and(|t| self.ended.iter().any(|e| e == t)) {
            return Parsed::Events(Vec::new());
        }
        let parsed = self.notification_of_turn(method, p);
        if let (Parsed::Finished(_), Some(turn)) = (&parsed, turn) {
            if self.ended.len() == ENDED_TURNS_KEPT {
                self.ended.pop_front();
            }
            self.ended.push_back(turn.to_owned());
        }
        parsed
    }

    fn notification_of_turn(&mut self, method: &str, p: &Value) -> Parsed {
        let s = |path: &str| p.pointer(path).and_then(Value::as_str).unwrap_or_default().to_owned();
        let mut events = Vec::new();
        match method {
            "item/agentMessage/delta" => events.push(AgentEvent::Text { item_id: s("/itemId"), delta: s("/delta") }),
            "item/reasoning/summaryTextDelta" | "item/reasoning/textDelta" => {
                events.push(AgentEvent::Thinking { item_id: s("/itemId"), delta: s("/delta") });
            }
            "item/commandExecution/outputDelta" => {
                let item = s("/itemId");
                self.streamed.insert(item.clone(), true);
                events.push(AgentEvent::ToolOutput { id: item, text: s("/delta"), append: true, exit_code: None });
            }
            "item/started" => self.item_started(p.get("item").unwrap_or(&Value::Null), None, &mut events),
            "item/completed" => self.item_completed(p.get("item").unwrap_or(&Value::Null), &mut events),
            "thread/tokenUsage/updated" => self.add_usage(p, &mut events),
            "account/rateLimits/updated" => {
                let limits = p.get("rateLimits").unwrap_or(&Value::Null);
                let windows: Vec<PlanWindow> = ["primary", "secondary"]
                    .iter()
                    .filter_map(|id| limits.get(*id).filter(|w| w.is_object()).map(|w| codex_window(id, w)))
                    .collect();
                if !windows.is_empty() {
                    self.windows.clone_from(&windows);
                    events.push(AgentEvent::Limits(windows));
                }
            }
            "error" => {
                let will_retry = p.get("willRetry").and_then(Value::as_bool).unwrap_or(false);
                let message = p.pointer("/error/message").and_then(Value::as_str).unwrap_or("Codex reported an error.");
                if will_retry {
                    events.push(AgentEvent::Warning(message.to_owned()));
                } else {
                    let mut finish =
                        Finish::failed(message.to_owned()).with_usage(self.usage.clone(), self.thread.clone());
                    finish.limit = self.limit_hit(p.get("error").unwrap_or(&Value::Null));
                    return Parsed::Finished(finish);
                }
            }
            "turn/plan/updated" => {
                use crate::protocol::{PlanCard, PlanStatus, PlanStep};
                let steps = p
                    .get("plan")
                    .and_then(Value::as_array)
                    .map(|plan| {
                        plan.iter()
                            .filter_map(|step| {
                                let text = step.get("step").and_then(Value::as_str)?.to_owned();
                                let status = match step.get("status").and_then(Value::as_str) {
                                    Some("completed") => PlanStatus::Completed,
                                    Some("inProgress") => PlanStatus::InProgress,
                                    _ => PlanStatus::Pending,
                                };
                                Some(PlanStep { text, status })
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let explanation = p.get("explanation").and_then(Value::as_str).map(str::to_owned);
                events.push(AgentEvent::Plan(PlanCard { steps, explanation, ..PlanCard::default() }));
            }
            "turn/completed" => {
                let turn = p.get("turn").unwrap_or(&Value::Null);
                let (status, error) = match turn.get("status").and_then(Value::as_str) {
                    Some("completed") => (FinishStatus::Completed, None),
                    Some("interrupted") => (FinishStatus::Interrupted, None),
                    _ => (
                        FinishStatus::Failed,
                        Some(
                            turn.pointer("/error/message")
                                .and_then(Value::as_str)
                                .unwrap_or("The Codex turn failed.")
                                .to_owned(),
                        ),
                    ),
                };
                let limit = turn.get("error").and_then(|e| self.limit_hit(e));
                return Parsed::Finished(Finish {
                    status,
                    error,
                    usage: self.usage.clone(),
                    cost_usd: None,
                    session_id: self.thread.clone(),
                    fix: None,
                    limit,
                });
            }
            _ => {}
        }
        Parsed::Events(events)
    }

    /// `last` of a token usage update is one model request; a turn makes several (and so do
    /// its sub-agents, whose requests count for the turn too).
    fn add_usage(&mut self, p: &Value, events: &mut Vec<AgentEvent>) {
        if let Some(last) = p.pointer("/tokenUsage/last") {
            let n = |k: &str| last.get(k).and_then(Value::as_i64).unwrap_or(0);
            let mut usage = self.usage.clone().unwrap_or_default();
            usage.input_tokens += n("inputTokens");
            usage.output_tokens += n("outputTokens");
            usage.cache_read_tokens += n("cachedInputTokens");
            usage.cache_write_tokens += n("cacheWriteInputTokens");
            self.usage = Some(usage.clone());
            events.push(AgentEvent::Usage(usage));
        }
    }

    /// A started item of our thread (`parent`: none) or of a sub-agent's (`parent`: the call
    /// that started it). A `subAgentActivity` that starts an agent is a subagent call: its
    /// thread is remembered, and the call stays running until that thread's turn ends.
    fn item_started(&mut self, item: &Value, parent: Option<&str>, events: &mut Vec<AgentEvent>) {
        let kind = item.get("kind").and_then(Value::as_str);
        if item.get("type").and_then(Value::as_str) != Some("subAgentActivity") || kind != Some("started") {
            return item_started(item, parent, events);
        }
        let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        let (id, thread) = (s("id"), s("agentThreadId"));
        if id.is_empty()
            || thread.is_empty()
            || self.agents.contains_key(&thread)
            || self.agents.len() >= MAX_SUB_AGENTS
        {
            return;
        }
        // The agent's path (the root agent's name — Codex calls it `root` — then the task's:
        // `…/find_config`) → "find config": the task name is all Codex says of the task.
        let path = s("agentPath");
        let task = path.rsplit('/').next().unwrap_or_default().replace('_', " ");
        events.push(AgentEvent::ToolStart {
            id: id.clone(),
            name: "Agent".to_owned(),
            input: super::summarize_input("Agent", &json!({ "description": task })),
            parent: parent.map(str::to_owned),
            subagent: None,
        });
        self.agents.insert(thread, SubAgent { call: id, report: String::new(), open: true, turn: None });
    }

    /// The sub-agents' turns running now, as (thread, turn): a stop interrupts them with ours.
    pub fn sub_agent_turns(&self) -> Vec<(String, String)> {
        self.agents.iter().filter_map(|(thread, a)| Some((thread.clone(), a.turn.clone()?))).collect()
    }

    /// What a sub-agent's thread reports: its tool steps under its call, its words kept as the
    /// report, its turn's end as its call's end. Its plan is not the turn's plan, and its
    /// errors end only its own call.
    fn sub_agent_notification(&mut self, thread: &str, method: &str, p: &Value) -> Vec<AgentEvent> {
        let Some(call) = self.agents.get(thread).map(|a| a.call.clone()) else { return Vec::new() };
        let item = p.get("item").unwrap_or(&Value::Null);
        let mut events = Vec::new();
        match method {
            "item/commandExecution/outputDelta" => {
                let id = p.get("itemId").and_then(Value::as_str).unwrap_or_default().to_owned();
                let text = p.get("delta").and_then(Value::as_str).unwrap_or_default().to_owned();
                self.streamed.insert(id.clone(), true);
                events.push(AgentEvent::ToolOutput { id, text, append: true, exit_code: None });
            }
            "item/started" => self.item_started(item, Some(&call), &mut events),
            "item/completed" if item.get("type").and_then(Value::as_str) == Some("agentMessage") => {
                let text = item.get("text").and_then(Value::as_str).unwrap_or_default();
                if let Some(agent) = self.agents.get_mut(thread)
                    && !text.trim().is_empty()
                {
                    agent.report = text.chars().take(MAX_REPORT_CHARS).collect();
                }
            }
            "item/completed" => self.item_completed(item, &mut events),
            "thread/tokenUsage/updated" => self.add_usage(p, &mut events),
            "turn/started" => {
                if let Some(agent) = self.agents.get_mut(thread) {
                    agent.turn = p.pointer("/turn/id").and_then(Value::as_str).map(str::to_owned);
                }
            }
            "turn/completed" => {
                if let Some(agent) = self.agents.get_mut(thread) {
                    agent.turn = None;
                }
                let status = p.pointer("/turn/status").and_then(Value::as_str);
                let error = p.pointer("/turn/error/message").and_then(Value::as_str);
                self.end_sub_agent(thread, status, error, &mut events);
            }
            _ => {}
        }
        events
    }

    /// Ends a sub-agent's call (once): its report as the call's output.
    fn end_sub_agent(&mut self, thread: &str, status: Option<&str>, error: Option<&str>, events: &mut Vec<AgentEvent>) {
        let Some(agent) = self.agents.get_mut(thread).filter(|a| a.open) else { return };
        agent.open = false;
        let report = match error {
            Some(error) if agent.report.is_empty() => error.to_owned(),
            _ => agent.report.clone(),
        };
        let id = agent.call.clone();
        if !report.is_empty() {
            events.push(AgentEvent::ToolOutput { id: id.clone(), text: report, append: false, exit_code: None });
        }
        let interrupted = status == Some("interrupted");
        let is_error = interrupted || !matches!(status, Some("completed") | None);
        events.push(AgentEvent::ToolEnd { id, is_error, interrupted });
    }

    fn item_completed(&mut self, item: &Value, events: &mut Vec<AgentEvent>) {
        let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        let id = s("id");
        match s("type").as_str() {
            "agentMessage" => events.push(AgentEvent::TextFinal { item_id: id, text: s("text") }),
            "commandExecution" => {
                let exit_code = item.get("exitCode").and_then(Value::as_i64);
                let failed = s("status") == "failed" || exit_code.is_some_and(|c| c != 0);
                let output = item.get("aggregatedOutput").and_then(Value::as_str);
                if let Some(output) = output {
                    events.push(AgentEvent::ToolOutput {
                        id: id.clone(),
                        text: output.to_owned(),
                        append: false,
                        exit_code,
                    });
                } else if !self.streamed.contains_key(&id) && exit_code.is_some() {
                    events.push(AgentEvent::ToolOutput {
                        id: id.clone(),
                        text: String::new(),
                        append: false,
                        exit_code,
                    });
                }
                events.push(AgentEvent::ToolEnd { id, is_error: failed, interrupted: false });
            }
            "fileChange" => {
                let summary = file_change_summary(item);
                events.push(AgentEvent::ToolOutput { id: id.clone(), text: summary, append: false, exit_code: None });
                events.push(AgentEvent::ToolEnd {
                    id,
                    is_error: s("status") == "failed" || s("status") == "declined",
                    interrupted: false,
                });
            }
            "imageView" => {
                let path = s("path");
                if !path.is_empty() {
                    events.push(AgentEvent::ToolImage { id: id.clone(), image: ToolImage::Path(path.into()) });
                }
                events.push(AgentEvent::ToolEnd { id, is_error: s("status") == "failed", interrupted: false });
            }
            "mcpToolCall" => {
                let text = mcp_result_text(item);
                if !text.is_empty() {
                    events.push(AgentEvent::ToolOutput { id: id.clone(), text, append: false, exit_code: None });
                }
                events.push(AgentEvent::ToolEnd { id, is_error: s("status") == "failed", interrupted: false });
            }
            "webSearch" => {
                // Streamed from the Responses API, the search starts before its action is known
                // (`query` "", action `other`); the finished item says what it searched or
                // opened (`query` is Codex's own line for it: the words, the URL, "'x' in URL").
                let query = s("query");
                if !query.is_empty() {
                    events.push(AgentEvent::ToolInput { id: id.clone(), input: query });
                }
                // A page Codex opened (or searched in) is a source. A plain search names none:
                // Codex 0.171 keeps neither the search's `sources` nor the reply's `url_citation`
                // annotations (its `agentMessage` is text only), so no title reaches us either.
                let url = item.pointer("/action/url").and_then(Value::as_str).filter(|u| !u.is_empty());
                if let Some(url) = url {
                    events.push(AgentEvent::ToolSources { id: id.clone(), sources: vec![(url.to_owned(), None)] });
                }
                events.push(AgentEvent::ToolEnd { id, is_error: s("status") == "failed", interrupted: false });
            }
            "dynamicToolCall" => {
                events.push(AgentEvent::ToolEnd { id, is_error: s("status") == "failed", interrupted: false });
            }
            // A sub-agent that ended (or was interrupted) without its turn's end reaching us.
            "subAgentActivity" => {
                let status = match item.get("kind").and_then(Value::as_str) {
                    Some("completed") => Some("completed"),
                    Some("interrupted") => Some("interrupted"),
                    _ => return,
                };
                self.end_sub_agent(&s("agentThreadId"), status, None, events);
            }
            "collabAgentToolCall" => {
                // What the agents it names last said (a `wait` brings their reports back).
                let said: Vec<&str> = item
                    .get("agentsStates")
                    .and_then(Value::as_object)
                    .map(|states| states.values().filter_map(|s| s.get("message").and_then(Value::as_str)).collect())
                    .unwrap_or_default();
                if !said.is_empty() {
                    let text = said.join("\n\n");
                    events.push(AgentEvent::ToolOutput { id: id.clone(), text, append: false, exit_code: None });
                }
                events.push(AgentEvent::ToolEnd { id, is_error: s("status") == "failed", interrupted: false });
            }
            _ => {}
        }
    }

    fn server_request(&mut self, method: &str, id: Value, p: &Value) -> Parsed {
        match method {
            "item/commandExecution/requestApproval" => {
                let command = p.get("command").and_then(Value::as_str).unwrap_or_default();
                let reason = p.get("reason").and_then(Value::as_str).map(str::to_owned);
                Parsed::Request {
                    id,
                    ask: Ask::Approval { tool: "Bash".into(), input: json!({ "command": command }), reason },
                    questions_by_text: HashMap::new(),
                }
            }
            "item/fileChange/requestApproval" => {
                let reason = p.get("reason").and_then(Value::as_str).map(str::to_owned);
                Parsed::Request {
                    id,
                    ask: Ask::Approval { tool: "Edit".into(), input: json!({ "item": p.get("itemId") }), reason },
                    questions_by_text: HashMap::new(),
                }
            }
            "item/tool/requestUserInput" => {
                let mut by_text = HashMap::new();
                let questions: Vec<QuestionItem> = p
                    .get("questions")
                    .and_then(Value::as_array)
                    .map(|qs| {
                        qs.iter()
                            .map(|q| {
                                let text = q.get("question").and_then(Value::as_str).unwrap_or_default().to_owned();
                                let qid = q.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
                                by_text.insert(text.clone(), qid.clone());
                                QuestionItem {
                                    id: Some(qid),
                                    question: text,
                                    header: q.get("header").and_then(Value::as_str).map(str::to_owned),
                                    options: q
                                        .get("options")
                                        .and_then(|o| Vec::<QuestionOption>::deserialize(o).ok())
                                        .unwrap_or_default(),
                                    multi_select: false,
                                }
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                Parsed::Request { id, ask: Ask::Question { questions }, questions_by_text: by_text }
            }
            "mcpServer/elicitation/request"
                if p.pointer("/_meta/codex_approval_kind").and_then(Value::as_str) == Some("mcp_tool_call") =>
            {
                let server = p.get("serverName").and_then(Value::as_str).unwrap_or_default();
                let tool = p.pointer("/_meta/tool_name").and_then(Value::as_str).unwrap_or_default();
                let input = p.pointer("/_meta/tool_params").cloned().unwrap_or_else(|| json!({}));
                // Named as Claude Code names it, so "allow for this chat" means one thing.
                Parsed::McpApproval {
                    id,
                    ask: Ask::Approval { tool: format!("mcp__{server}__{tool}"), input, reason: None },
                }
            }
            _ => {
                tracing::info!(method, "Codex asked something this host does not answer");
                Parsed::Unhandled { id }
            }
        }
    }
}

/// One Codex plan window (`primary`, `secondary`).
fn codex_window(id: &str, w: &Value) -> PlanWindow {
    let minutes = w.get("windowDurationMins").and_then(Value::as_i64);
    let label = match minutes {
        Some(300) => "5-hour".to_owned(),
        Some(10080) => "Weekly".to_owned(),
        Some(m) if m % 1440 == 0 => format!("{}-day", m / 1440),
        Some(m) if m % 60 == 0 => format!("{}-hour", m / 60),
        Some(m) => format!("{m}-minute"),
        None => id.to_owned(),
    };
    PlanWindow {
        id: id.to_owned(),
        label,
        used_percent: w.get("usedPercent").and_then(Value::as_f64),
        resets_at: w.get("resetsAt").and_then(Value::as_i64).map(|s| s.saturating_mul(1000)),
        status: None,
    }
}

impl Finish {
    fn with_usage(mut self, usage: Option<Usage>, session: Option<String>) -> Self {
        self.usage = usage;
        self.session_id = session;
        self
    }
}

/// A started tool item as a tool call (`parent`: the sub-agent call it was made under).
fn item_started(item: &Value, parent: Option<&str>, events: &mut Vec<AgentEvent>) {
    let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    let id = s("id");
    let start = |name: &str, input: String| AgentEvent::ToolStart {
        id: id.clone(),
        name: name.to_owned(),
        input,
        parent: parent.map(str::to_owned),
        subagent: None,
    };
    match s("type").as_str() {
        "commandExecution" => {
            let command = item
                .pointer("/commandActions/0/command")
                .and_then(Value::as_str)
                .map_or_else(|| s("command"), str::to_owned);
            events.push(start("Bash", super::summarize_input("Bash", &json!({ "command": command }))));
        }
        "fileChange" => {
            let paths: Vec<String> = item
                .get("changes")
                .and_then(Value::as_array)
                .map(|c| c.iter().filter_map(|c| c.get("path").and_then(Value::as_str)).map(str::to_owned).collect())
                .unwrap_or_default();
            events.push(start("Edit", paths.join(", ")));
            let files = change_files(item);
            if !files.is_empty() {
                events.push(AgentEvent::ToolFiles { id: id.clone(), files });
            }
        }
        "mcpToolCall" => {
            let name = format!("{}:{}", s("server"), s("tool"));
            let input = item.get("arguments").map(|a| super::summarize_input(&name, a)).unwrap_or_default();
            events.push(start(&name, input));
        }
        "webSearch" => events.push(start("WebSearch", super::summarize_input("WebSearch", item))),
        "imageView" => events.push(start("ViewImage", s("path"))),
        // Talking to sub-agents (`wait`, `sendMessage`, `closeAgent`…; spawning is a
        // `subAgentActivity`): one step each, named by what it did.
        "collabAgentToolCall" => events.push(start("Agents", s("tool"))),
        _ => {}
    }
}

/// What an MCP tool call answered: its text blocks, else its error's message.
fn mcp_result_text(item: &Value) -> String {
    let texts: Vec<&str> = item
        .pointer("/result/content")
        .and_then(Value::as_array)
        .map(|blocks| blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect())
        .unwrap_or_default();
    if !texts.is_empty() {
        return texts.join("\n");
    }
    item.pointer("/error/message").and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// The diffs of a `fileChange` item: each change's `diff` is the unified diff of an update and
/// the whole content of an added or deleted file.
fn change_files(item: &Value) -> Vec<crate::protocol::FileDiff> {
    use crate::protocol::FileChange;
    let Some(changes) = item.get("changes").and_then(Value::as_array) else { return Vec::new() };
    changes
        .iter()
        .filter_map(|c| {
            let path = c.get("path").and_then(Value::as_str)?;
            let diff = c.get("diff").and_then(Value::as_str).unwrap_or_default();
            let (change, sign) = match c.pointer("/kind/type").and_then(Value::as_str) {
                Some("add") => (FileChange::Add, Some('+')),
                Some("delete") => (FileChange::Delete, Some('-')),
                _ => (FileChange::Update, None),
            };
            let shown = c.pointer("/kind/move_path").and_then(Value::as_str).unwrap_or(path);
            if super::diff::is_binary(diff) {
                return Some(super::diff::binary(shown, change));
            }
            let lines = match sign {
                Some(sign) => super::diff::whole(diff, sign),
                None => super::diff::unified(diff),
            };
            Some(super::diff::file(shown, change, lines))
        })
        .collect()
}

fn file_change_summary(item: &Value) -> String {
    item.get("changes")
        .and_then(Value::as_array)
        .map(|changes| {
            changes
                .iter()
                .map(|c| {
                    let kind = c.pointer("/kind/type").and_then(Value::as_str).unwrap_or("update");
                    let path = c.get("path").and_then(Value::as_str).unwrap_or_default();
                    format!("{kind} {path}")
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The JSON-RPC result for a decision on a server request.
pub fn reply_result(ask_is_question: bool, reply: &Reply, questions_by_text: &HashMap<String, String>) -> Value {
    if ask_is_question {
        let mut answers = Map::new();
        if let Reply::Answers(given) = reply {
            for (question, answer) in given {
                let id = questions_by_text.get(question).cloned().unwrap_or_else(|| question.clone());
                let list: Vec<String> = match answer {
                    Choice::Many(items) => items.clone(),
                    Choice::One(one) => vec![one.clone()],
                };
                answers.insert(id, json!({ "answers": list }));
            }
        }
        return json!({ "answers": answers });
    }
    let decision = match reply {
        Reply::Allow | Reply::Answers(_) | Reply::Plan(_) => "accept",
        Reply::AllowAlways => "acceptForSession",
        Reply::Deny(_) => "decline",
    };
    json!({ "decision": decision })
}

/// The answer to an MCP tool approval (an elicitation with an empty form).
pub fn mcp_approval_result(reply: &Reply) -> Value {
    let action = match reply {
        Reply::Allow | Reply::AllowAlways | Reply::Answers(_) | Reply::Plan(_) => "accept",
        Reply::Deny(_) => "decline",
    };
    json!({ "action": action, "content": {} })
}

/// Runs the process's turns on one thread: `thread/start` (or `thread/resume`) for the first,
/// then (kept warm between turns) a further `turn/start` on the same thread for each next one.
async fn drive(mut session: JsonLinesSession<(Value, Value)>, request: TurnRequest) {
    let mut parser = Parser::default();
    session
        .send(&json!({ "id": ID_INITIALIZE, "method": "initialize",
            "params": { "clientInfo": { "name": "mobius", "version": env!("CARGO_PKG_VERSION") } } }))
        .await;
    session.send(&json!({ "method": "initialized" })).await;
    session.send(&thread_request(&request)).await;
    let mut thread: Option<String> = None;
    let mut prompt = Prompt { text: request.prompt, files: request.files, plan: request.plan };
    let mut policy = Policy { approval: request.approval, planning: false };
    loop {
        let start = Start { effort: request.effort.as_deref(), policy: policy.next(prompt.plan) };
        if let Some(id) = &thread {
            session.emit(AgentEvent::Session(id.clone())).await;
            session.send(&turn_start(id, &prompt, &start)).await;
        }
        parser.next_turn();
        let finish = turn(&mut session, &mut parser, &mut thread, &prompt, &start, &mut policy).await;
        let reusable = finish.status != FinishStatus::Failed && thread.is_some();
        match session.end_turn(finish, reusable).await {
            Some(next) => prompt = next,
            None => break,
        }
    }
    session.close().await;
}

/// What a Codex plan turn is told first: the app-server has no plan mode of its own, so the
/// turn runs read-only and is asked for a plan, which arrives as its answer.
const PLAN_REQUEST: &str = "[Plan mode: change nothing yet. Look at what you need (read-only), then answer with a \
    concise step-by-step plan in Markdown for the owner to approve. You will carry it out once they approve it.]";
/// What continues the turn once the owner approved the plan.
const PLAN_APPROVED: &str = "The owner approved the plan below. Carry it out now.";
/// What asks for another plan after the owner rejected one.
const PLAN_REJECTED: &str = "The owner rejected the plan. Revise it and answer with the new plan only.";

/// The policy overrides a turn sends: read-only while planning, and the chat's own policy again
/// after a plan (a `turn/start` override stays for the thread's later turns).
#[derive(Debug)]
struct Policy {
    approval: ApprovalPolicy,
    /// The thread runs under the plan overrides now.
    planning: bool,
}

impl Policy {
    /// The overrides for a turn that plans (`plan`) or not; `None`: the thread's are right.
    fn next(&mut self, plan: bool) -> Option<Value> {
        let overrides = match (plan, self.planning) {
            (true, _) => Some(json!({ "approvalPolicy": "never", "sandboxPolicy": { "type": "readOnly" } })),
            (false, true) => Some(self.own()),
            (false, false) => None,
        };
        self.planning = plan;
        overrides
    }

    /// The chat's own policy, as `turn/start` overrides (what `thread_request` sets).
    fn own(&self) -> Value {
        let (approval, sandbox) = match self.approval {
            ApprovalPolicy::Full => ("never", "dangerFullAccess"),
            ApprovalPolicy::Workspace => ("on-request", "workspaceWrite"),
            ApprovalPolicy::Ask => ("untrusted", "dangerFullAccess"),
        };
        json!({ "approvalPolicy": approval, "sandboxPolicy": { "type": sandbox } })
    }
}

/// How one `turn/start` goes beyond its words.
struct Start<'a> {
    effort: Option<&'a str>,
    /// Policy overrides (`approvalPolicy`, `sandboxPolicy`), if this turn changes them.
    policy: Option<Value>,
}

/// A `turn/start` on `thread`: the words (after the plan request, for a plan turn), then each
/// attached image as a local image (Codex reads and sizes it itself; other files are named in
/// the words).
fn turn_start(thread: &str, prompt: &Prompt, start: &Start<'_>) -> Value {
    let text = if prompt.plan { format!("{PLAN_REQUEST}\n\n{}", prompt.text) } else { prompt.text.clone() };
    let mut input = vec![json!({ "type": "text", "text": text })];
    for file in prompt.files.iter().filter(|f| f.image) {
        input.push(json!({ "type": "localImage", "path": file.path.display().to_string() }));
    }
    let mut request =
        json!({ "id": ID_TURN, "method": "turn/start", "params": { "threadId": thread, "input": input } });
    if let Some(effort) = start.effort {
        request["params"]["effort"] = effort.into();
    }
    if let Some(Value::Object(overrides)) = &start.policy {
        for (key, value) in overrides {
            request["params"][key] = value.clone();
        }
    }
    request
}

/// The owner's decision on a plan, as the turn loop reads it back (no JSON-RPC id: the plan
/// card is the host's own question, not a server request).
fn plan_decision(reply: &Reply) -> Value {
    match reply {
        Reply::Plan(plan) => json!({ "approved": plan }),
        Reply::Deny(reason) => json!({ "rejected": reason }),
        _ => json!({ "rejected": "" }),
    }
}

/// The `turn/start` that follows the owner's decision on a plan: carry it out under the
/// chat's own policy, or plan again (read-only still) with the reason.
fn after_plan(thread: &str, decision: &Value, effort: Option<&str>, policy: &mut Policy) -> Value {
    let (text, plan) = match decision.get("approved").and_then(Value::as_str) {
        Some(plan) => (format!("{PLAN_APPROVED}\n\n{plan}"), false),
        None => {
            let reason = decision.get("rejected").and_then(Value::as_str).unwrap_or_default();
            (format!("{PLAN_REJECTED}\n\n{reason}").trim_end().to_owned(), true)
        }
    };
    let start = Start { effort, policy: policy.next(plan) };
    // The plan request is not repeated: the rejection asks for the plan itself.
    turn_start(thread, &Prompt { text, files: Vec::new(), plan: false }, &start)
}

/// One turn, until `turn/completed` (the first also opens the thread, then starts the turn).
async fn turn(
    session: &mut JsonLinesSession<(Value, Value)>,
    parser: &mut Parser,
    thread: &mut Option<String>,
    prompt: &Prompt,
    start: &Start<'_>,
    policy: &mut Policy,
) -> Finish {
    let mut turn: Option<String> = None;
    let mut interrupt_wanted = false;
    let mut next_steer_id = ID_STEER_BASE;
    // The answer of the turn so far: a plan turn's plan.
    let mut answer = String::new();
    loop {
        match session.next().await {
            Next::Closed(message) => return Finish::failed(message),
            Next::StartTimedOut => return Finish::failed(session.silent_message()),
            Next::Message(value) => match parser.parse(&value) {
                Parsed::Events(list) => {
                    for event in list {
                        if let AgentEvent::TextFinal { text, .. } = &event {
                            answer.clone_from(text);
                        }
                        session.emit(event).await;
                    }
                }
                Parsed::ThreadReady(id) => {
                    session.emit(AgentEvent::Session(id.clone())).await;
                    session.send(&turn_start(&id, prompt, start)).await;
                    *thread = Some(id);
                }
                Parsed::TurnStarted(id) => {
                    turn = Some(id);
                    if interrupt_wanted {
                        session.send(&interrupt(thread, &turn)).await;
                    }
                }
                Parsed::Request { id, ask, questions_by_text } => {
                    let is_question = matches!(ask, Ask::Question { .. });
                    session.ask(ask, move |reply| (id, reply_result(is_question, &reply, &questions_by_text))).await;
                }
                Parsed::McpApproval { id, ask } => {
                    session.ask(ask, move |reply| (id, mcp_approval_result(&reply))).await;
                }
                Parsed::Unhandled { id } => {
                    session
                        .send(
                            &json!({ "id": id, "error": { "code": -32601, "message": "not supported by this host" } }),
                        )
                        .await;
                }
                Parsed::SteerAnswered { error: None } => session.emit(AgentEvent::SteerAccepted).await,
                Parsed::SteerAnswered { error: Some(e) } => session.emit(AgentEvent::SteerRejected(e)).await,
                Parsed::Finished(finish) => {
                    let plan = std::mem::take(&mut answer);
                    if !policy.planning || finish.status != FinishStatus::Completed || plan.trim().is_empty() {
                        return finish;
                    }
                    // A plan turn answered with its plan: the owner decides, and the run goes on.
                    turn = None;
                    session.ask(Ask::Plan { plan }, |reply| (Value::Null, plan_decision(&reply))).await;
                }
            },
            Next::Reply((Value::Null, _)) if interrupt_wanted => {
                return Finish { session_id: thread.clone(), ..Finish::stopped() };
            }
            Next::Reply((Value::Null, decision)) => match thread.as_deref() {
                Some(id) => session.send(&after_plan(id, &decision, start.effort, policy)).await,
                None => return Finish::failed("The Codex thread went away."),
            },
            Next::Reply((id, result)) => session.send(&json!({ "id": id, "result": result })).await,
            Next::Control(Some(Control::Interrupt)) => {
                interrupt_wanted = true;
                if turn.is_some() {
                    session.send(&interrupt(thread, &turn)).await;
                }
                for (agent, agent_turn) in parser.sub_agent_turns() {
                    session.send(&interrupt(&Some(agent), &Some(agent_turn))).await;
                }
            }
            Next::Control(Some(Control::Steer(text))) => match (thread.as_ref(), &turn) {
                (Some(thread_id), Some(turn_id)) if !interrupt_wanted => {
                    let steer = json!({ "id": next_steer_id, "method": "turn/steer", "params": {
                        "threadId": thread_id, "expectedTurnId": turn_id, "input": [{ "type": "text", "text": text }] } });
                    next_steer_id += 1;
                    session.send(&steer).await;
                }
                _ => session.emit(AgentEvent::SteerRejected("the turn has not started yet".into())).await,
            },
            Next::Control(None) => return Finish::failed("The turn went away."),
        }
    }
}

/// How long `model/list` may take (a short-lived app-server answers from its catalogue).
const MODEL_LIST_WAIT: Duration = Duration::from_secs(20);
/// Most models kept from the list.
const MAX_MODELS: usize = 64;

/// The models the app-server offers (`model/list`, its bundled catalogue), asked of a
/// short-lived `codex app-server` with `env` (its `CODEX_HOME`) in `cwd`.
pub async fn list_models(
    bin: &std::path::Path,
    cwd: &std::path::Path,
    env: &[(String, String)],
) -> Result<Vec<ModelInfo>> {
    let mut args = config_overrides();
    args.push("app-server".to_owned());
    let spawned = process::spawn(bin, &args, cwd, env, None, None, super::ceiling::Applied::None)?;
    let process::Spawned { process, mut stdin, mut lines, .. } = spawned;
    let ask = async {
        use tokio::io::AsyncWriteExt;
        let requests = [
            json!({ "id": 1, "method": "initialize", "params": { "clientInfo": { "name": "mobius", "version": env!("CARGO_PKG_VERSION") } } }),
            json!({ "method": "initialized" }),
            json!({ "id": 2, "method": "model/list", "params": { "limit": MAX_MODELS } }),
        ];
        for request in requests {
            stdin.write_all(format!("{request}\n").as_bytes()).await?;
        }
        stdin.flush().await?;
        while let Some(line) = lines.recv().await {
            let process::Incoming::Json(msg) = process::classify(line, "Codex") else { continue };
            if msg.get("id").and_then(Value::as_i64) != Some(2) {
                continue;
            }
            if let Some(error) = msg.pointer("/error/message").and_then(Value::as_str) {
                return Err(crate::error::Error::Internal(format!("codex model/list: {error}")));
            }
            return Ok(models_of(msg.pointer("/result/data").unwrap_or(&Value::Null)));
        }
        Err(crate::error::Error::Internal("codex app-server ended without listing its models".into()))
    };
    let listed = tokio::time::timeout(MODEL_LIST_WAIT, ask)
        .await
        .unwrap_or_else(|_| Err(crate::error::Error::Internal("codex model/list timed out".into())));
    drop(stdin);
    process.terminate().await;
    listed
}

/// The visible models of a `model/list` answer.
pub fn models_of(data: &Value) -> Vec<ModelInfo> {
    let Some(list) = data.as_array() else { return Vec::new() };
    list.iter()
        .filter(|m| !m.get("hidden").and_then(Value::as_bool).unwrap_or(false))
        .filter_map(|m| {
            let id = m.get("model").or_else(|| m.get("id")).and_then(Value::as_str)?.to_owned();
            let efforts = m
                .get("supportedReasoningEfforts")
                .and_then(Value::as_array)
                .map(|l| {
                    l.iter()
                        .filter_map(|e| e.get("reasoningEffort").and_then(Value::as_str))
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            Some(ModelInfo {
                label: m.get("displayName").and_then(Value::as_str).unwrap_or(&id).to_owned(),
                id,
                provider: ProviderKind::Codex,
                available: true,
                effort_levels: efforts,
                default_effort: m.get("defaultReasoningEffort").and_then(Value::as_str).map(str::to_owned),
                is_default: m.get("isDefault").and_then(Value::as_bool).unwrap_or(false),
            })
        })
        .take(MAX_MODELS)
        .collect()
}

/// What is offered when the CLI cannot be asked: the model the pinned CLI is configured with.
pub fn fallback_models() -> Vec<ModelInfo> {
    vec![ModelInfo {
        id: "gpt-5.5".into(),
        label: "GPT-5.5".into(),
        provider: ProviderKind::Codex,
        available: false,
        effort_levels: ["low", "medium", "high", "xhigh"].iter().map(|e| (*e).to_owned()).collect(),
        default_effort: Some("medium".into()),
        is_default: false,
    }]
}

fn interrupt(thread: &Option<String>, turn: &Option<String>) -> Value {
    json!({ "id": ID_INTERRUPT, "method": "turn/interrupt", "params": { "threadId": thread, "turnId": turn } })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_change_items_become_diffs() {
        let item = json!({"id": "c1", "type": "fileChange", "changes": [
            {"path": "/w/new.txt", "kind": {"type": "add"}, "diff": "hello\nworld\n"},
            {"path": "/w/a.rs", "kind": {"type": "update", "move_path": null}, "diff": "@@ -1 +1 @@\n-a\n+b\n"},
            {"path": "/w/old.txt", "kind": {"type": "delete"}, "diff": "bye\n"},
            {"kind": {"type": "add"}, "diff": "no path"}
        ]});
        let mut events = Vec::new();
        item_started(&item, None, &mut events);
        let Some(AgentEvent::ToolFiles { files, .. }) = events.get(1) else { panic!("{events:?}") };
        let shown: Vec<_> = files.iter().map(|f| (f.path.as_str(), f.added, f.removed)).collect();
        assert_eq!(shown, [("/w/new.txt", 2, 0), ("/w/a.rs", 1, 1), ("/w/old.txt", 0, 1)]);
        assert_eq!(files[1].diff, "@@ -1 +1 @@\n-a\n+b\n");
    }

    #[test]
    fn attached_images_are_local_image_items_and_other_files_stay_in_the_words() {
        let image = super::super::InputFile {
            path: "/data/uploads/c/files/a.png".into(),
            name: "a.png".into(),
            mime_type: "image/png".into(),
            size: 3,
            dimensions: Some((4, 3)),
            image: true,
            preview: None,
        };
        let doc = super::super::InputFile {
            image: false,
            name: "d.txt".into(),
            path: "/data/uploads/c/files/d.txt".into(),
            ..image.clone()
        };
        let prompt = Prompt { text: "look".into(), files: vec![image, doc], plan: false };
        assert_eq!(
            turn_start("th", &prompt, &Start { effort: None, policy: None })["params"]["input"],
            json!([{ "type": "text", "text": "look" }, { "type": "localImage", "path": "/data/uploads/c/files/a.png" }])
        );
    }

    #[test]
    fn a_plan_turn_runs_read_only_and_its_decision_continues_or_replans() {
        let mut policy = Policy { approval: ApprovalPolicy::Workspace, planning: false };
        assert_eq!(policy.next(false), None, "an ordinary turn keeps the thread's policy");
        let plan = Prompt { text: "add tests".into(), files: Vec::new(), plan: true };
        let start = Start { effort: None, policy: policy.next(true) };
        let request = turn_start("th", &plan, &start);
        assert_eq!(request["params"]["sandboxPolicy"], json!({"type": "readOnly"}));
        assert_eq!(request["params"]["approvalPolicy"], "never");
        let text = request["params"]["input"][0]["text"].as_str().expect("text");
        assert!(text.starts_with("[Plan mode") && text.ends_with("add tests"), "{text}");

        let rejected = after_plan("th", &plan_decision(&Reply::Deny("smaller".into())), None, &mut policy);
        assert_eq!(rejected["params"]["sandboxPolicy"]["type"], "readOnly", "still planning");
        assert!(rejected["params"]["input"][0]["text"].as_str().expect("text").ends_with("smaller"));
        let approved = after_plan("th", &plan_decision(&Reply::Plan("1. edited".into())), Some("high"), &mut policy);
        assert_eq!(approved["params"]["sandboxPolicy"], json!({"type": "workspaceWrite"}), "the chat's own again");
        assert_eq!(approved["params"]["approvalPolicy"], "on-request");
        assert_eq!(approved["params"]["effort"], "high");
        assert!(approved["params"]["input"][0]["text"].as_str().expect("text").ends_with("1. edited"));
        assert_eq!(policy.next(false), None, "already back");
    }

    fn sample() -> Vec<Value> {
        let path = crate::config::checkout_root().join("tests/fixtures/codex-app-server-sample.jsonl");
        std::fs::read_to_string(path)
            .expect("fixture")
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("json"))
            .filter(|v| v["dir"] == "out")
            .map(|v| v["msg"].clone())
            .collect()
    }

    #[test]
    fn the_recorded_session_yields_thread_text_tools_approvals_and_three_turn_ends() {
        let mut parser = Parser::default();
        let (mut texts, mut tools, mut approvals, mut finishes, mut threads) =
            (Vec::new(), Vec::new(), 0, Vec::new(), 0);
        for msg in sample() {
            match parser.parse(&msg) {
                Parsed::Events(list) => {
                    for e in list {
                        match e {
                            AgentEvent::TextFinal { text, .. } => texts.push(text),
                            AgentEvent::ToolStart { name, .. } => tools.push(name),
                            _ => {}
                        }
                    }
                }
                Parsed::ThreadReady(id) => {
                    assert!(!id.is_empty());
                    threads += 1;
                }
                Parsed::Request { ask: Ask::Approval { .. }, .. } => approvals += 1,
                Parsed::Finished(f) => finishes.push(f.status),
                _ => {}
            }
        }
        assert_eq!(threads, 1);
        assert_eq!(tools, vec!["Edit", "Bash"]);
        assert_eq!(approvals, 2);
        assert!(texts.contains(&"Creating hello.txt.".to_owned()) && texts.contains(&"done".to_owned()));
        assert_eq!(finishes, vec![FinishStatus::Completed, FinishStatus::Interrupted, FinishStatus::Completed]);
    }

    #[test]
    fn questions_round_trip_through_their_ids() {
        let mut parser = Parser::default();
        let msg = json!({"id": 7, "method": "item/tool/requestUserInput", "params": {"questions": [
            {"id": "color", "header": "Color", "question": "Which color?", "options": [{"label": "Blue", "description": ""}]}
        ], "isBlocking": true, "itemId": "i", "threadId": "t", "turnId": "u"}});
        let Parsed::Request { id, ask: Ask::Question { questions }, questions_by_text } = parser.parse(&msg) else {
            panic!("expected a question");
        };
        assert_eq!(id, json!(7));
        assert_eq!(questions[0].question, "Which color?");
        let mut answers = crate::protocol::Choices::new();
        answers.insert("Which color?".into(), Choice::One("Blue".into()));
        let result = reply_result(true, &Reply::Answers(answers), &questions_by_text);
        assert_eq!(result, json!({"answers": {"color": {"answers": ["Blue"]}}}));
        assert_eq!(reply_result(false, &Reply::Deny("no".into()), &HashMap::new()), json!({"decision": "decline"}));
    }

    #[test]
    fn failures_and_retries_are_told_apart() {
        let mut parser = Parser::default();
        let retry = json!({"method": "error", "params": {"error": {"message": "Reconnecting 1/5"}, "willRetry": true}});
        assert!(matches!(parser.parse(&retry), Parsed::Events(e) if matches!(e[0], AgentEvent::Warning(_))));
        let fatal = json!({"method": "error", "params": {"error": {"message": "quota exceeded"}, "willRetry": false}});
        assert!(matches!(parser.parse(&fatal), Parsed::Finished(Finish { status: FinishStatus::Failed, .. })));
        let failed_turn =
            json!({"method": "turn/completed", "params": {"turn": {"status": "failed", "error": {"message": "boom"}}}});
        match parser.parse(&failed_turn) {
            Parsed::Finished(f) => assert_eq!(f.error.as_deref(), Some("boom")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn usage_is_summed_per_turn_and_a_usage_limit_takes_the_exhausted_windows_reset() {
        let mut parser = Parser::default();
        let tokens = |n: i64| {
            json!({"method":"thread/tokenUsage/updated","params":{"tokenUsage":{
            "total":{"inputTokens":999,"outputTokens":999},"last":{"inputTokens":n,"outputTokens":1}}}})
        };
        parser.parse(&tokens(10));
        parser.parse(&tokens(20));
        let done = json!({"method":"turn/completed","params":{"turn":{"status":"completed"}}});
        let Parsed::Finished(f) = parser.parse(&done) else { panic!("finished") };
        assert_eq!(f.usage.map(|u| (u.input_tokens, u.output_tokens)), Some((30, 2)));
        parser.next_turn();
        let limits = json!({"method":"account/rateLimits/updated","params":{"rateLimits":{
            "primary":{"usedPercent":100,"windowDurationMins":300,"resetsAt":1796404744},
            "secondary":{"usedPercent":40,"windowDurationMins":10080,"resetsAt":1796487544}}}});
        let Parsed::Events(events) = parser.parse(&limits) else { panic!("events") };
        assert!(
            matches!(&events[0], AgentEvent::Limits(w) if w.len() == 2 && w[0].label == "5-hour" && w[1].label == "Weekly")
        );
        let error = json!({"method":"error","params":{"error":{"message":"You've hit your usage limit.",
            "codexErrorInfo":"usageLimitExceeded"},"willRetry":false}});
        let Parsed::Finished(f) = parser.parse(&error) else { panic!("finished") };
        assert_eq!(f.limit, Some(LimitHit { resets_at: Some(1_796_404_744_000) }));
        let other = json!({"method":"error","params":{"error":{"message":"bad","codexErrorInfo":"badRequest"},"willRetry":false}});
        assert!(matches!(parser.parse(&other), Parsed::Finished(f) if f.limit.is_none()));
    }

    /// The `webSearch` items of the real Codex 0.171 when the Responses stream adds a
    /// `web_search_call` before its action is known, as the API does (recorded against the
    /// scripted server): the start names nothing, the end says what was searched or opened.
    fn web_search(id: &str, phase: &str, query: &str, action: &Value) -> Value {
        json!({"method": format!("item/{phase}"), "params": {"item": {"type": "webSearch", "id": id,
            "query": query, "action": action, "results": null}, "turnId": "t1"}})
    }

    #[test]
    fn a_web_search_fills_in_what_it_searched_when_it_ends_and_an_opened_page_is_a_source() {
        let mut parser = Parser::default();
        let events = |parsed: Parsed| match parsed {
            Parsed::Events(events) => events,
            other => panic!("{other:?}"),
        };
        let started = events(parser.parse(&web_search("ws_1", "started", "", &json!({"type": "other"}))));
        assert!(
            matches!(&started[..], [AgentEvent::ToolStart { name, input, .. }] if name == "WebSearch" && input.is_empty())
        );
        let search = json!({"type": "search", "query": "tokio select macro", "queries": null});
        let ended = events(parser.parse(&web_search("ws_1", "completed", "tokio select macro", &search)));
        assert!(
            matches!(&ended[..], [AgentEvent::ToolInput { id, input }, AgentEvent::ToolEnd { is_error: false, .. }]
            if id == "ws_1" && input == "tokio select macro"),
            "a plain search names no source: {ended:?}"
        );

        let url = "https://tokio.rs/tokio/tutorial/select";
        for (id, query, action) in [
            ("ws_2", url.to_owned(), json!({"type": "openPage", "url": url})),
            ("ws_3", format!("'cancel' in {url}"), json!({"type": "findInPage", "url": url, "pattern": "cancel"})),
        ] {
            let ended = events(parser.parse(&web_search(id, "completed", &query, &action)));
            assert!(matches!(&ended[0], AgentEvent::ToolInput { input, .. } if *input == query), "{ended:?}");
            assert!(
                matches!(&ended[1], AgentEvent::ToolSources { sources, .. } if sources == &[(url.to_owned(), None)]),
                "{ended:?}"
            );
        }
        // A search that began with its words keeps them (bounded like every summary).
        let long = "q ".repeat(300);
        let started = events(parser.parse(&web_search("ws_4", "started", &long, &search)));
        assert!(matches!(&started[0], AgentEvent::ToolStart { input, .. } if input.chars().count() <= 200));
    }

    #[test]
    fn a_sub_agents_thread_becomes_a_chip_with_its_steps_and_report_and_never_ends_the_turn() {
        // The notifications of a real Codex 0.171 turn (multi-agent v2) that spawned an agent,
        // waited for it, and went on (recorded against the scripted server), trimmed.
        let mut parser = Parser::default();
        assert!(matches!(
            parser.parse(&json!({"id": ID_THREAD, "result": {"thread": {"id": "th"}}})),
            Parsed::ThreadReady(_)
        ));
        let note = |method: &str, thread: &str, params: Value| {
            let mut params = params;
            params["threadId"] = json!(thread);
            json!({ "method": method, "params": params })
        };
        let spawn = json!({"item": {"type": "subAgentActivity", "id": "call_a", "kind": "started",
            "agentThreadId": "ch", "agentPath": "/main-agent/find_config", "model": "gpt-5.5"}, "turnId": "t1"});
        let command = json!({"type": "commandExecution", "id": "c1", "command": "/bin/bash -lc 'cat a.toml'",
            "commandActions": [], "status": "inProgress", "aggregatedOutput": null, "exitCode": null});
        let done_command = json!({"type": "commandExecution", "id": "c1", "command": "/bin/bash -lc 'cat a.toml'",
            "status": "completed", "aggregatedOutput": "port = 1\n", "exitCode": 0});
        let wait = json!({"type": "collabAgentToolCall", "id": "w1", "tool": "wait", "status": "inProgress",
            "senderThreadId": "th", "receiverThreadIds": [], "agentsStates": {}});
        let script = [
            note("item/started", "th", spawn.clone()),
            note("item/completed", "th", spawn),
            note("turn/started", "ch", json!({"turn": {"id": "t2", "status": "inProgress"}})),
            note("item/started", "th", json!({"item": wait, "turnId": "t1"})),
        ];
        let mut events = Vec::new();
        let mut feed = |parser: &mut Parser, script: &[Value]| {
            for msg in script {
                match parser.parse(msg) {
                    Parsed::Events(more) => events.extend(more),
                    other => panic!("a sub-agent's message ended or asked something: {other:?} for {msg}"),
                }
            }
        };
        feed(&mut parser, &script);
        // A stop now interrupts the sub-agent's turn too.
        assert_eq!(parser.sub_agent_turns(), [("ch".to_owned(), "t2".to_owned())]);
        let script = [
            note("item/started", "ch", json!({"item": command, "turnId": "t2"})),
            note("item/commandExecution/outputDelta", "ch", json!({"itemId": "c1", "delta": "port", "turnId": "t2"})),
            note("item/completed", "ch", json!({"item": done_command, "turnId": "t2"})),
            note("item/agentMessage/delta", "ch", json!({"itemId": "m1", "delta": "Its ", "turnId": "t2"})),
            note(
                "item/completed",
                "ch",
                json!({"item": {"type": "agentMessage", "id": "m1", "text": "It is in a.toml"}, "turnId": "t2"}),
            ),
            note("turn/plan/updated", "ch", json!({"turnId": "t2", "plan": [{"step": "x", "status": "pending"}]})),
            note("turn/completed", "ch", json!({"turn": {"id": "t2", "status": "completed"}})),
            note(
                "item/completed",
                "th",
                json!({"item": {"type": "subAgentActivity", "id": "call_b", "kind": "completed",
                "agentThreadId": "ch", "agentPath": "/main-agent/find_config"}, "turnId": "t1"}),
            ),
            note(
                "item/completed",
                "th",
                json!({"item": {"type": "collabAgentToolCall", "id": "w1", "tool": "wait",
                "status": "completed", "agentsStates": {"ch": {"status": "completed", "message": "It is in a.toml"}}}, "turnId": "t1"}),
            ),
            note("item/started", "elsewhere", json!({"item": command, "turnId": "t9"})),
            note("turn/completed", "elsewhere", json!({"turn": {"id": "t9", "status": "failed"}})),
        ];
        feed(&mut parser, &script);
        assert!(parser.sub_agent_turns().is_empty(), "its turn ended");
        let shown: Vec<String> = events
            .iter()
            .map(|e| match e {
                AgentEvent::ToolStart { id, name, input, parent, .. } => {
                    format!("start {id} {name} {input:?} {parent:?}")
                }
                AgentEvent::ToolOutput { id, text, append, .. } => format!("output {id} {text:?} {append}"),
                AgentEvent::ToolEnd { id, is_error, .. } => format!("end {id} {is_error}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            shown,
            [
                r#"start call_a Agent "find config" None"#,
                r#"start w1 Agents "wait" None"#,
                r#"start c1 Bash "/bin/bash -lc 'cat a.toml'" Some("call_a")"#,
                r#"output c1 "port" true"#,
                r#"output c1 "port = 1\n" false"#,
                "end c1 false",
                r#"output call_a "It is in a.toml" false"#,
                "end call_a false",
                r#"output w1 "It is in a.toml" false"#,
                "end w1 false",
            ]
        );
        // Our own turn still ends ours.
        let done = json!({"method": "turn/completed", "params": {"threadId": "th", "turn": {"id": "t1", "status": "completed"}}});
        assert!(matches!(parser.parse(&done), Parsed::Finished(f) if f.status == FinishStatus::Completed));
    }

    #[test]
    fn a_late_notification_of_an_ended_turn_does_not_end_the_next_one() {
        let mut parser = Parser::default();
        let interrupted = json!({"method":"turn/completed","params":{"turn":{"id":"t1","status":"interrupted"}}});
        assert!(matches!(parser.parse(&interrupted), Parsed::Finished(f) if f.status == FinishStatus::Interrupted));
        parser.next_turn();
        let late =
            json!({"method":"error","params":{"error":{"message":"stream closed"},"willRetry":false,"turnId":"t1"}});
        assert!(matches!(parser.parse(&late), Parsed::Events(e) if e.is_empty()), "the old turn's error is dropped");
        let own = json!({"method":"turn/completed","params":{"turn":{"id":"t2","status":"completed"}}});
        assert!(matches!(parser.parse(&own), Parsed::Finished(f) if f.status == FinishStatus::Completed));
    }

    #[test]
    fn resume_uses_thread_resume_and_full_access_never_asks() {
        let request = TurnRequest {
            prompt: "hi".into(),
            files: Vec::new(),
            system_prompt: "be good".into(),
            resume: Some("thr-1".into()),
            model: None,
            effort: None,
            cwd: "/data".into(),
            env: vec![],
            approval: ApprovalPolicy::Full,
            plan: false,
            trees: crate::agent::trees::Trees::new("/data/run/agents".into(), false),
            tools: true,
            confine: None,
            keep: None,
            memory: crate::agent::ceiling::MemoryCeiling::detect(None),
            mcp: Vec::new(),
        };
        let r = thread_request(&request);
        assert_eq!(r["method"], "thread/resume");
        assert_eq!(r["params"]["threadId"], "thr-1");
        assert_eq!(r["params"]["approvalPolicy"], "never");
        let ask = TurnRequest { resume: None, approval: ApprovalPolicy::Ask, ..request };
        let r = thread_request(&ask);
        assert_eq!(r["method"], "thread/start");
        assert_eq!(r["params"]["approvalPolicy"], "untrusted");
        let quiet = TurnRequest { tools: false, ..ask };
        let r = thread_request(&quiet);
        assert_eq!((&r["params"]["sandbox"], &r["params"]["approvalPolicy"]), (&json!("read-only"), &json!("never")));
        let workspace = TurnRequest { approval: ApprovalPolicy::Workspace, tools: true, ..quiet };
        let r = thread_request(&workspace);
        assert_eq!(
            (r["params"]["approvalPolicy"].as_str(), r["params"]["sandbox"].as_str()),
            (Some("on-request"), Some("workspace-write"))
        );
    }

    #[test]
    fn codex_goals_are_off_in_the_written_config_and_on_the_command_line() {
        // With goals on, Codex 0.171 starts turns by itself while a goal is active (`FEATURES`).
        let args = config_overrides();
        assert!(args.windows(2).any(|w| w == ["-c", "features.goals=false"]), "{args:?}");
        let toml = config_toml(None);
        let features = toml.split("\n[features]\n").nth(1).and_then(|t| t.split("\n[").next()).expect("features");
        assert!(features.lines().any(|l| l == "goals = false"), "{toml}");
    }

    #[test]
    fn connectors_reach_codex_as_session_flags_naming_the_token_variable() {
        let servers = [crate::agent::McpServer { name: "notes".into(), url: "http://127.0.0.1:1/api/mcp/c/1".into() }];
        assert_eq!(
            mcp_overrides(&servers, ApprovalPolicy::Full),
            [
                "-c",
                "mcp_servers.notes.url=\"http://127.0.0.1:1/api/mcp/c/1\"",
                "-c",
                "mcp_servers.notes.bearer_token_env_var=\"MOBIUS_AGENT_TOKEN\""
            ]
        );
    }

    #[test]
    fn an_mcp_tool_approval_becomes_a_card_and_its_answer_an_elicitation_result() {
        let mut parser = Parser::default();
        let msg = json!({"id": 9, "method": "mcpServer/elicitation/request", "params": {"serverName": "notes",
            "mode": "form", "_meta": {"codex_approval_kind": "mcp_tool_call", "tool_name": "save",
            "tool_params": {"text": "x"}}, "message": "Allow?", "requestedSchema": {"type": "object"}}});
        let Parsed::McpApproval { id, ask: Ask::Approval { tool, input, .. } } = parser.parse(&msg) else {
            panic!("not an MCP approval");
        };
        assert_eq!((id, tool.as_str(), input), (json!(9), "mcp__notes__save", json!({"text": "x"})));
        assert_eq!(mcp_approval_result(&Reply::Allow), json!({"action": "accept", "content": {}}));
        assert_eq!(mcp_approval_result(&Reply::Deny(String::new())), json!({"action": "decline", "content": {}}));
        let ask = mcp_overrides(&[crate::agent::McpServer { name: "n".into(), url: "u".into() }], ApprovalPolicy::Ask);
        assert!(ask.contains(&"mcp_servers.n.default_tools_approval_mode=\"prompt\"".to_owned()));
    }
}
