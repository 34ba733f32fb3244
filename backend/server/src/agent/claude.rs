//! Claude Code (`claude`) over its stream-json control protocol: a process per chat kept
//! between turns when the warm pool allows (each turn a further user message), permission prompts (`can_use_tool`) answered by the server, `interrupt` to stop.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::LimitHit;
use super::models::ModelInfo;
use super::process;
use super::session::{self, JsonLinesSession, Next};
use super::{
    AgentEvent, AgentProvider, Ask, Control, Finish, FinishStatus, InputFile, Prompt, ProviderKind, ProviderTurn,
    Reply, ToolImage, TurnRequest, Usage, summarize_input,
};
use crate::error::Result;
use crate::protocol::PlanWindow;
use crate::protocol::QuestionItem;

/// The Claude Code CLI.
#[derive(Clone, Debug)]
pub struct Claude {
    pub bin: PathBuf,
    /// A turn whose CLI prints nothing for this long after starting fails.
    pub start_timeout: Duration,
    /// Most stdout bytes one turn may produce.
    pub output_max: u64,
}

impl AgentProvider for Claude {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Claude
    }

    fn start(&self, mut request: TurnRequest) -> Result<ProviderTurn> {
        let confine = request.confine.take();
        let keep = request.keep.take();
        let spawned = process::spawn(
            &self.bin,
            &args(&request),
            &request.cwd,
            &env(&request),
            Some(&request.trees),
            confine,
            request.memory.prepare(),
        )?;
        let (turn, io) = session::turn_channels();
        let limits = session::SessionLimits { start_timeout: self.start_timeout, output_max: self.output_max };
        let modes = Modes { base: base_mode(request.approval), now: start_mode(&request).to_owned() };
        let prompt = Prompt { text: request.prompt, files: request.files, plan: request.plan };
        // A session resumed by a new process: the card starts from the task list the CLI kept.
        let saved = request.resume.clone().filter(|_| request.tools).and_then(|session| {
            let config = request.env.iter().find(|(k, _)| k == "CLAUDE_CONFIG_DIR").map(|(_, v)| PathBuf::from(v))?;
            Some((config, session))
        });
        let driver = session::spawn_driver(move |me| {
            drive(JsonLinesSession::new("Claude Code", spawned, io, limits, keep, me), prompt, modes, saved)
        });
        Ok(turn.with_driver(driver))
    }

    fn cheapest_model(&self) -> Option<&'static str> {
        Some("haiku")
    }
}

/// The settings every Claude Code process gets on its command line (a flag, not a file the
/// agent could edit).
pub const SERVER_SETTINGS: &str = r#"{"disableAllHooks":true}"#;

/// Claude Code 2.1 offers its task tools (TaskCreate / TaskUpdate / TaskList / TaskGet: the plan
/// card and a goal's pin follow them) only to older models unless asked; newer ones get no plan
/// tool at all. A turn with tools asks for them.
const TASK_TOOLS_ENV: (&str, &str) = ("CLAUDE_CODE_ENABLE_TODO_TOOLS", "1");

/// The environment of a turn's process: the turn's own, and the task tools asked for.
fn env(request: &TurnRequest) -> Vec<(String, String)> {
    let mut env = request.env.clone();
    if request.tools {
        env.push((TASK_TOOLS_ENV.0.to_owned(), TASK_TOOLS_ENV.1.to_owned()));
    }
    env
}

/// The command line for one turn.
pub fn args(request: &TurnRequest) -> Vec<String> {
    let mut args: Vec<String> = [
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--permission-prompt-tool",
        "stdio",
        // The config folder (`CLAUDE_CONFIG_DIR`) is the agent's to write: no settings file
        // (user, project or local) is read, so none can add hooks, allow tools or change the
        // permission mode; no MCP server but the server's own (none) starts; and the
        // server's settings turn every hook off.
        "--setting-sources",
        "",
        "--strict-mcp-config",
        "--settings",
        SERVER_SETTINGS,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    if start_mode(request) != DEFAULT_MODE {
        // Workspace: edits in the working directory go ahead; everything else asks (a card).
        // Plan: the agent reads and plans, then proposes the plan (ExitPlanMode).
        args.push("--permission-mode".into());
        args.push(start_mode(request).into());
    }
    if request.approval == super::ApprovalPolicy::Workspace {
        // The folders the workspace links to (`apps/`, `shared/`…) are the workspace too.
        for dir in super::workspace::linked_dirs(&request.cwd) {
            args.push(format!("--add-dir={}", dir.display()));
        }
    }
    if !request.system_prompt.is_empty() {
        args.push("--append-system-prompt".into());
        args.push(request.system_prompt.clone());
    }
    if !request.tools {
        // Claude Code's way of offering the model no tool at all.
        args.push("--tools".into());
        args.push(String::new());
    }
    if let Some(session) = &request.resume {
        args.push("--resume".into());
        args.push(session.clone());
    }
    if let Some(model) = &request.model {
        args.push("--model".into());
        args.push(model.clone());
    }
    if let Some(effort) = &request.effort {
        args.push("--effort".into());
        args.push(effort.clone());
    }
    if let Some(config) = mcp_config(&request.mcp) {
        args.push("--mcp-config".into());
        args.push(config);
    }
    args
}

/// Claude Code's permission mode when nothing is set.
const DEFAULT_MODE: &str = "default";
/// Its plan mode: read-only tools, then ExitPlanMode with the plan.
const PLAN_MODE: &str = "plan";

/// The permission mode a chat's approval policy runs in outside plan mode (under `full` and
/// `ask` the server answers each prompt; under `workspace` edits go ahead unasked).
fn base_mode(approval: super::ApprovalPolicy) -> &'static str {
    if approval == super::ApprovalPolicy::Workspace { "acceptEdits" } else { DEFAULT_MODE }
}

/// The mode a process starts its first turn in.
fn start_mode(request: &TurnRequest) -> &'static str {
    if request.plan { PLAN_MODE } else { base_mode(request.approval) }
}

/// The permission mode a process is in, and the one its policy wants outside plan mode.
#[derive(Debug)]
struct Modes {
    base: &'static str,
    now: String,
}

impl Modes {
    /// The `set_permission_mode` request that puts the process in the mode `plan` asks for, if
    /// it is not in it already (a kept process's next turn, a plan turn that ended unapproved).
    fn switch_for(&mut self, plan: bool) -> Option<Value> {
        let wanted = if plan { PLAN_MODE } else { self.base };
        (self.now != wanted).then(|| {
            self.now = wanted.to_owned();
            json!({ "type": "control_request", "request_id": format!("mobius-mode-{wanted}"),
                "request": { "subtype": "set_permission_mode", "mode": wanted } })
        })
    }
}

/// The `--mcp-config` of a turn: each connector as an HTTP server at its broker URL, with the
/// agent token as bearer, expanded by Claude Code from its environment (`${VAR}`), so the
/// command line holds no token. `None` when the chat has no connector.
pub fn mcp_config(servers: &[super::McpServer]) -> Option<String> {
    if servers.is_empty() {
        return None;
    }
    let bearer = format!("Bearer ${{{}}}", super::MCP_TOKEN_VAR);
    let servers: serde_json::Map<String, serde_json::Value> = servers
        .iter()
        .map(|s| {
            (s.name.clone(), serde_json::json!({"type": "http", "url": s.url, "headers": {"Authorization": bearer}}))
        })
        .collect();
    Some(serde_json::json!({ "mcpServers": servers }).to_string())
}

/// Claude Code's `--effort` levels.
const EFFORT_LEVELS: [&str; 5] = ["low", "medium", "high", "xhigh", "max"];

/// The models Claude Code takes by alias (it cannot list them without spending a request):
/// a maintained list, each alias naming the newest model of its family.
pub fn models() -> Vec<ModelInfo> {
    let model = |id: &str, label: &str, efforts: &[&str]| ModelInfo {
        id: id.to_owned(),
        label: label.to_owned(),
        provider: ProviderKind::Claude,
        available: true,
        effort_levels: efforts.iter().map(|e| (*e).to_owned()).collect(),
        default_effort: None,
        is_default: false,
    };
    vec![
        model("opus", "Claude Opus", &EFFORT_LEVELS),
        model("sonnet", "Claude Sonnet", &EFFORT_LEVELS),
        model("haiku", "Claude Haiku", &[]),
    ]
}

/// What one stdout line means.
#[derive(Debug)]
pub enum Parsed {
    Events(Vec<AgentEvent>),
    /// A `can_use_tool` permission prompt to answer.
    Permission {
        request_id: String,
        tool: String,
        input: Value,
    },
    /// A control request we do not handle (answered with an error so the CLI never waits).
    OtherRequest {
        request_id: String,
    },
    Finished(Finish),
}

/// Turns stream-json lines into [`AgentEvent`]s. Pure: no I/O. One parser serves a process's
/// turns ([`Parser::next_turn`] between them): its task list outlives a turn.
#[derive(Debug, Default)]
pub struct Parser {
    /// Claude Code's task list (TaskCreate/TaskUpdate…) as the plan card shows it: the CLI
    /// keeps it for the session, so a "go on" turn moves the same plan.
    pub tasks: Tasks,
    /// Subagent calls started in the background whose tool result was only the launch notice:
    /// they end when the CLI's `task_notification` says so.
    background: HashSet<String>,
    /// Assistant lines seen per message id (each carries one content block, in order).
    blocks_seen: HashMap<String, usize>,
    current_message: String,
    session: Option<String>,
    /// Set when the host sent `interrupt`; the error result that follows is a stop, not a failure.
    pub interrupt_sent: bool,
    /// A rate-limit event said `rejected`, with the reset (unix ms) when it gave one.
    rejected: Option<Option<i64>>,
    /// The plan the model wrote into its last ExitPlanMode call.
    proposed_plan: Option<String>,
}

/// How the owner reads a Claude plan window's id.
fn window_label(id: &str) -> String {
    match id {
        "five_hour" => "5-hour".to_owned(),
        "seven_day" => "Weekly".to_owned(),
        "seven_day_opus" => "Weekly (Opus)".to_owned(),
        "seven_day_sonnet" => "Weekly (Sonnet)".to_owned(),
        other => other.replace('_', " "),
    }
}

impl Parser {
    /// Forgets what belonged to the turn that ended (its messages, its interrupt, its limit,
    /// its background calls and task calls left without a result: the turn closed their
    /// blocks), keeping the session's task list.
    pub fn next_turn(&mut self) {
        let list = std::mem::take(&mut self.tasks.list);
        *self = Self { tasks: Tasks { list, ..Tasks::default() }, ..Self::default() };
    }

    /// The plan an ExitPlanMode prompt proposes: Claude Code puts its plan file's content in
    /// the prompt's `plan` (empty when the model wrote no file), so the plan the model gave in
    /// the call itself stands in; with neither, the card names the plan file.
    pub fn plan_of(&self, input: &Value) -> String {
        let given = str_at(input, &["plan"]).trim();
        let written = self.proposed_plan.as_deref().map(str::trim).unwrap_or_default();
        let file = str_at(input, &["planFilePath"]);
        match (given, written) {
            ("", "") if !file.is_empty() => format!("The plan is in `{file}`."),
            ("", written) => written.to_owned(),
            (given, _) => given.to_owned(),
        }
    }

    /// Interprets one parsed stdout line.
    pub fn parse(&mut self, line: &Value) -> Parsed {
        let mut events = Vec::new();
        if let Some(session) = line.get("session_id").and_then(Value::as_str)
            && !session.is_empty()
            && self.session.as_deref() != Some(session)
            && line.get("type").and_then(Value::as_str) != Some("control_request")
        {
            self.session = Some(session.to_owned());
            events.push(AgentEvent::Session(session.to_owned()));
        }
        match line.get("type").and_then(Value::as_str).unwrap_or_default() {
            // A subagent's words stream too; its report comes back as its call's result.
            "stream_event" if subagent_of(line).is_some() => {}
            "stream_event" => self.stream_event(line.get("event").unwrap_or(&Value::Null), &mut events),
            "assistant" => self.assistant(line, &mut events),
            "user" => self.tool_results(line, &mut events),
            "control_request" => {
                let request_id = str_at(line, &["request_id"]).to_owned();
                let request = line.get("request").unwrap_or(&Value::Null);
                if str_at(request, &["subtype"]) == "can_use_tool" {
                    return Parsed::Permission {
                        request_id,
                        tool: str_at(request, &["tool_name"]).to_owned(),
                        input: request.get("input").cloned().unwrap_or(Value::Object(Map::new())),
                    };
                }
                return Parsed::OtherRequest { request_id };
            }
            "control_response" if str_at(line, &["response", "subtype"]) == "error" => {
                let error = str_at(line, &["response", "error"]);
                events.push(AgentEvent::Warning(format!("a control request was refused: {error}")));
            }
            "result" => return Parsed::Finished(self.result(line)),
            "rate_limit_event" => events.append(&mut self.rate_limit(line)),
            "system" if str_at(line, &["subtype"]) == "task_notification" => self.task_notification(line, &mut events),
            "system" if str_at(line, &["subtype"]) == "api_retry" => {
                return match self.api_retry(line) {
                    Parsed::Events(mut retry) => {
                        events.append(&mut retry);
                        Parsed::Events(events)
                    }
                    finished => finished,
                };
            }
            _ => {}
        }
        Parsed::Events(events)
    }

    fn stream_event(&mut self, event: &Value, events: &mut Vec<AgentEvent>) {
        match str_at(event, &["type"]) {
            "message_start" => self.current_message = str_at(event, &["message", "id"]).to_owned(),
            "content_block_delta" => {
                let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
                let item_id = format!("{}:{index}", self.current_message);
                let delta = event.get("delta").unwrap_or(&Value::Null);
                match str_at(delta, &["type"]) {
                    "text_delta" => {
                        events.push(AgentEvent::Text { item_id, delta: str_at(delta, &["text"]).to_owned() });
                    }
                    "thinking_delta" => {
                        events.push(AgentEvent::Thinking { item_id, delta: str_at(delta, &["thinking"]).to_owned() });
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    fn assistant(&mut self, line: &Value, events: &mut Vec<AgentEvent>) {
        // A subagent's (a Task/Agent call's) own steps: folded under its call. Its text is not
        // the reply (its report is the call's result) and its todo list is not the turn's plan.
        let parent = subagent_of(line);
        let message = line.get("message").unwrap_or(&Value::Null);
        let id = str_at(message, &["id"]).to_owned();
        let Some(blocks) = message.get("content").and_then(Value::as_array) else { return };
        for block in blocks {
            let counter = self.blocks_seen.entry(id.clone()).or_insert(0);
            let index = *counter;
            *counter += 1;
            match str_at(block, &["type"]) {
                "text" if parent.is_some() => {}
                "text" => events.push(AgentEvent::TextFinal {
                    item_id: format!("{id}:{index}"),
                    text: str_at(block, &["text"]).to_owned(),
                }),
                "tool_use" => {
                    let name = str_at(block, &["name"]).to_owned();
                    let input = block.get("input").cloned().unwrap_or(Value::Null);
                    let tool_id = str_at(block, &["id"]).to_owned();
                    let files = edit_files(&name, &input);
                    let fetched = (name == "WebFetch").then(|| str_at(&input, &["url"]).to_owned());
                    let subagent = matches!(name.as_str(), "Task" | "Agent")
                        .then(|| str_at(&input, &["subagent_type"]).to_owned())
                        .filter(|t| !t.is_empty());
                    events.push(AgentEvent::ToolStart {
                        id: tool_id.clone(),
                        input: summarize_input(&name, &input),
                        name,
                        parent: parent.clone(),
                        subagent,
                    });
                    if !files.is_empty() {
                        events.push(AgentEvent::ToolFiles { id: tool_id.clone(), files });
                    }
                    if parent.is_none() {
                        if let Some(plan) = todo_plan(str_at(block, &["name"]), &input) {
                            events.push(AgentEvent::Plan(plan));
                        }
                        // A task tool changes the list once its result says how (a new task's id).
                        self.tasks.call(&tool_id, str_at(block, &["name"]), &input);
                    }
                    if str_at(block, &["name"]) == "ExitPlanMode" {
                        self.proposed_plan = Some(str_at(&input, &["plan"]).to_owned());
                    }
                    if let Some(url) = fetched.filter(|u| !u.is_empty()) {
                        events.push(AgentEvent::ToolSources { id: tool_id, sources: vec![(url, None)] });
                    }
                }
                _ => {}
            }
        }
    }

    fn result(&mut self, line: &Value) -> Finish {
        let is_error = line.get("is_error").and_then(Value::as_bool).unwrap_or(false);
        let usage = line.get("usage").map(|u| Usage {
            input_tokens: int_at(u, "input_tokens"),
            output_tokens: int_at(u, "output_tokens"),
            cache_read_tokens: int_at(u, "cache_read_input_tokens"),
            cache_write_tokens: int_at(u, "cache_creation_input_tokens"),
        });
        let status = match (is_error, self.interrupt_sent) {
            (false, _) => FinishStatus::Completed,
            (true, true) => FinishStatus::Interrupted,
            (true, false) => FinishStatus::Failed,
        };
        let error = (status == FinishStatus::Failed).then(|| result_error(line));
        // A refusal on the plan's limit: the rate-limit event before it says until when.
        let limited = status == FinishStatus::Failed
            && (line.get("api_error_status").and_then(Value::as_i64) == Some(429) || self.rejected.is_some());
        let limit = limited.then(|| LimitHit { resets_at: self.rejected.flatten() });
        Finish {
            status,
            error,
            usage,
            cost_usd: line.get("total_cost_usd").and_then(Value::as_f64),
            session_id: line.get("session_id").and_then(Value::as_str).map(str::to_owned).or(self.session.clone()),
            fix: None,
            limit,
        }
    }

    /// `rate_limit_event` (subscription logins only): the plan's windows; a `rejected` status
    /// is remembered for the error result that follows.
    fn rate_limit(&mut self, line: &Value) -> Vec<AgentEvent> {
        let info = line.get("rate_limit_info").unwrap_or(&Value::Null);
        let status = info.get("status").and_then(Value::as_str).map(str::to_owned);
        let secs_to_ms = |v: Option<&Value>| v.and_then(Value::as_i64).map(|s| s.saturating_mul(1000));
        if status.as_deref() == Some("rejected") {
            self.rejected = Some(secs_to_ms(info.get("resetsAt")));
        }
        let mut windows = Vec::new();
        if let Some(unified) = info.get("unifiedWindows").and_then(Value::as_object) {
            for (id, w) in unified {
                windows.push(PlanWindow {
                    id: id.clone(),
                    label: window_label(id),
                    used_percent: w.get("utilization").and_then(Value::as_f64).map(|u| (u * 100.0).clamp(0.0, 100.0)),
                    resets_at: secs_to_ms(w.get("resetsAt")),
                    status: w.get("status").and_then(Value::as_str).map(str::to_owned).or_else(|| status.clone()),
                });
            }
        } else if let Some(kind) = info.get("rateLimitType").and_then(Value::as_str) {
            windows.push(PlanWindow {
                id: kind.to_owned(),
                label: window_label(kind),
                used_percent: info.get("utilization").and_then(Value::as_f64).map(|u| (u * 100.0).clamp(0.0, 100.0)),
                resets_at: secs_to_ms(info.get("resetsAt")),
                status,
            });
        }
        if windows.is_empty() { Vec::new() } else { vec![AgentEvent::Limits(windows)] }
    }

    /// `system/api_retry`: Claude Code retries every failed request up to ten times with a
    /// growing delay, also ones a retry cannot mend. A refused credential or an exhausted
    /// balance ends the turn at once, with the fix; anything else is shown as it retries.
    fn api_retry(&self, line: &Value) -> Parsed {
        let status = line.get("error_status").and_then(Value::as_u64);
        let reason = str_at(line, &["error"]);
        let refused = matches!(status, Some(401 | 403)) || reason == "authentication_failed";
        let unpaid = status == Some(402) || reason == "billing_error";
        if refused || unpaid {
            let what = if refused {
                "Anthropic refused the API key or login"
            } else {
                "The Anthropic account has no credit left"
            };
            let code = status.map(|s| format!(" (HTTP {s})")).unwrap_or_default();
            let mut finish = Finish::failed(format!("{what}{code}. Check the Claude connection in Settings."));
            finish.fix = Some(crate::protocol::ErrorFix::ProviderSettings);
            finish.session_id = self.session.clone();
            return Parsed::Finished(finish);
        }
        let number = |key: &str| line.get(key).and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()).unwrap_or(0);
        let reason = match (reason, status) {
            ("", Some(code)) => format!("HTTP {code}"),
            ("", None) => "the request failed".to_owned(),
            (reason, _) => reason.replace('_', " "),
        };
        Parsed::Events(vec![AgentEvent::Retrying {
            attempt: number("attempt"),
            max_retries: number("max_retries"),
            reason,
        }])
    }
}

/// The subagent call a line belongs to: Claude Code marks a Task/Agent call's own messages with
/// that call's id (`null` on the main agent's).
fn subagent_of(line: &Value) -> Option<String> {
    line.get("parent_tool_use_id").and_then(Value::as_str).filter(|p| !p.is_empty()).map(str::to_owned)
}

fn result_error(line: &Value) -> String {
    if let Some(errors) = line.get("errors").and_then(Value::as_array) {
        let texts: Vec<String> = errors
            .iter()
            .map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_owned))
            .filter(|t| !t.contains("[ede_diagnostic]"))
            .collect();
        if !texts.is_empty() {
            return texts.join("; ");
        }
    }
    if let Some(text) = line.get("result").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        return text.to_owned();
    }
    match line.get("api_error_status").and_then(Value::as_i64) {
        Some(status) => format!("The model API answered with HTTP {status}."),
        None => format!("The turn failed ({}).", str_at(line, &["subtype"])),
    }
}

impl Parser {
    /// Tool results of a `user` line. After our interrupt, a failed tool was cut short by it (the
    /// CLI reports "interrupted by user" as an error result). A task tool's result moves the
    /// plan; a subagent started in the background stays running until its notification.
    fn tool_results(&mut self, line: &Value, events: &mut Vec<AgentEvent>) {
        let Some(content) = line.pointer("/message/content").and_then(Value::as_array) else { return };
        let structured = line.get("tool_use_result").unwrap_or(&Value::Null);
        for item in content {
            if str_at(item, &["type"]) != "tool_result" {
                continue;
            }
            let id = str_at(item, &["tool_use_id"]).to_owned();
            let is_error = item.get("is_error").and_then(Value::as_bool).unwrap_or(false);
            let text = match item.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => {
                    parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
                }
                _ => String::new(),
            };
            let sources = search_results(line, &text);
            if !sources.is_empty() {
                events.push(AgentEvent::ToolSources { id: id.clone(), sources });
            }
            let plan = self.tasks.result(&id, is_error, structured, &text);
            events.push(AgentEvent::ToolOutput {
                id: id.clone(),
                text,
                append: false,
                exit_code: is_error.then_some(1),
            });
            for image in tool_images(item) {
                events.push(AgentEvent::ToolImage { id: id.clone(), image: ToolImage::Bytes(image) });
            }
            // An Agent call's launch notice (`isAsync`: only an agent's; a background command or
            // workflow is not held, it may run past any turn).
            let launched = !is_error
                && subagent_of(line).is_none()
                && structured.get("isAsync").and_then(Value::as_bool) == Some(true);
            if launched && self.background.len() < MAX_BACKGROUND_AGENTS {
                self.background.insert(id);
            } else {
                events.push(AgentEvent::ToolEnd { id, is_error, interrupted: is_error && self.interrupt_sent });
            }
            if let Some(plan) = plan {
                events.push(AgentEvent::Plan(plan));
            }
        }
    }

    /// `system/task_notification`: a background task ended. For a subagent started in the
    /// background its call ends now, with the agent's report as its result when there is one.
    fn task_notification(&mut self, line: &Value, events: &mut Vec<AgentEvent>) {
        let id = str_at(line, &["tool_use_id"]);
        if !self.background.remove(id) {
            return;
        }
        let summary = str_at(line, &["summary"]);
        if !summary.is_empty() {
            events.push(AgentEvent::ToolOutput {
                id: id.to_owned(),
                text: summary.to_owned(),
                append: false,
                exit_code: None,
            });
        }
        let status = str_at(line, &["status"]);
        events.push(AgentEvent::ToolEnd {
            id: id.to_owned(),
            is_error: status != "completed",
            interrupted: matches!(status, "killed" | "stopped"),
        });
    }
}

/// Subagents of one turn followed to their end in the background (more end when launched).
const MAX_BACKGROUND_AGENTS: usize = 64;

/// The base64 images of a tool result (`Read` of a picture, a screenshot tool).
fn tool_images(item: &Value) -> Vec<Vec<u8>> {
    use base64::Engine;
    let Some(parts) = item.get("content").and_then(Value::as_array) else { return Vec::new() };
    parts
        .iter()
        .filter(|p| str_at(p, &["type"]) == "image" && str_at(p, &["source", "type"]) == "base64")
        .filter_map(|p| base64::engine::general_purpose::STANDARD.decode(str_at(p, &["source", "data"])).ok())
        .collect()
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    let mut cur = v;
    for key in path {
        match cur.get(key) {
            Some(next) => cur = next,
            None => return "",
        }
    }
    cur.as_str().unwrap_or_default()
}

fn int_at(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

/// The `control_response` for a permission prompt.
pub fn permission_response(request_id: &str, input: &Value, reply: &Reply, base_mode: &str) -> Value {
    let decision = match reply {
        Reply::Answers(answers) => {
            let mut updated = input.as_object().cloned().unwrap_or_default();
            updated.insert("answers".into(), serde_json::to_value(answers).unwrap_or(Value::Null));
            json!({ "behavior": "allow", "updatedInput": updated })
        }
        Reply::Allow | Reply::AllowAlways => json!({ "behavior": "allow", "updatedInput": input }),
        Reply::Deny(message) => json!({ "behavior": "deny", "message": message }),
        Reply::Plan(plan) => {
            // ExitPlanMode approved (as the owner edited it): the session leaves plan mode for
            // the policy's own, and the same turn goes on to carry the plan out.
            let mut updated = input.as_object().cloned().unwrap_or_default();
            if !plan.is_empty() {
                updated.insert("plan".into(), Value::String(plan.clone()));
            }
            json!({ "behavior": "allow", "updatedInput": updated,
                "updatedPermissions": [{ "type": "setMode", "mode": base_mode, "destination": "session" }] })
        }
    };
    json!({ "type": "control_response", "response": { "subtype": "success", "request_id": request_id, "response": decision } })
}

/// Runs the process's turns: the first one's prompt, then (kept warm between turns) each
/// next turn's, sent as a further user message on stdin.
async fn drive(
    mut session: JsonLinesSession<(String, Value, Reply)>,
    mut prompt: Prompt,
    mut modes: Modes,
    saved: Option<(PathBuf, String)>,
) {
    session
        .send(&json!({ "type": "control_request", "request_id": "mobius-init", "request": { "subtype": "initialize", "hooks": null } }))
        .await;
    // One parser for the process's turns: the session's task list outlives a turn.
    let mut parser = Parser::default();
    if let Some((config, id)) = saved {
        parser.tasks = tokio::task::spawn_blocking(move || Tasks::saved(&config, &id)).await.unwrap_or_default();
    }
    loop {
        if let Some(switch) = modes.switch_for(prompt.plan) {
            session.send(&switch).await;
        }
        session.send(&user_message(user_content(&prompt.text, &prompt.files).await)).await;
        let finish = turn(&mut session, &mut modes, &mut parser).await;
        // A failed turn may have left the CLI in any state: it is not reused. Nor is one with a
        // background agent still at work (the turn was stopped): what it says later belongs to
        // no turn, and stopping the process stops it.
        let reusable = finish.status != FinishStatus::Failed && parser.background.is_empty();
        match session.end_turn(finish, reusable).await {
            Some(next) => prompt = next,
            None => break,
        }
    }
    session.close().await;
}

/// One turn, from the prompt just sent to its result.
async fn turn(
    session: &mut JsonLinesSession<(String, Value, Reply)>,
    modes: &mut Modes,
    parser: &mut Parser,
) -> Finish {
    parser.next_turn();
    // Words to continue with once the interrupt we sent for them has ended the current step.
    let mut steer: Option<String> = None;
    // The main agent's result while subagents it started in the background still work: the
    // CLI tells of their end and goes on by itself, so the turn waits for that and ends then.
    let mut held: Option<Finish> = None;
    loop {
        match session.next().await {
            Next::Closed(message) => return Finish::failed(message),
            Next::StartTimedOut => return Finish::failed(session.silent_message()),
            Next::Message(value) => match parser.parse(&value) {
                Parsed::Events(list) => {
                    for event in list {
                        session.emit(event).await;
                    }
                }
                Parsed::Permission { request_id, tool, input } => {
                    let ask = if tool == "AskUserQuestion" {
                        Ask::Question { questions: questions_of(&input) }
                    } else if tool == "ExitPlanMode" {
                        Ask::Plan { plan: parser.plan_of(&input) }
                    } else {
                        Ask::Approval { tool, input: input.clone(), reason: None }
                    };
                    session.ask(ask, move |reply| (request_id, input, reply)).await;
                }
                Parsed::OtherRequest { request_id } => {
                    session
                        .send(&json!({ "type": "control_response", "response": {
                            "subtype": "error", "request_id": request_id, "error": "not supported by this host" } }))
                        .await;
                }
                Parsed::Finished(finish) => match steer.take() {
                    Some(text) if finish.status != FinishStatus::Failed => {
                        parser.interrupt_sent = false;
                        session.send(&user_message(Value::String(text))).await;
                        session.emit(AgentEvent::SteerAccepted).await;
                    }
                    Some(_) => {
                        session.emit(AgentEvent::SteerRejected("the step failed".into())).await;
                        return finish;
                    }
                    None if finish.status == FinishStatus::Completed && !parser.background.is_empty() => {
                        if parser.interrupt_sent {
                            // The owner stopped the turn as the main agent finished: the
                            // background agents are stopped with it, not waited for.
                            let mut finish = after(held.take(), finish);
                            finish.status = FinishStatus::Interrupted;
                            return finish;
                        }
                        held = Some(after(held.take(), finish));
                    }
                    None => return after(held.take(), finish),
                },
            },
            Next::Reply((request_id, input, reply)) => {
                session.send(&permission_response(&request_id, &input, &reply, modes.base)).await;
                if matches!(reply, Reply::Plan(_)) {
                    modes.now = modes.base.to_owned();
                }
            }
            Next::Control(Some(Control::Interrupt)) if held.is_some() => {
                // Only background agents work: the turn ends now (and the process with them).
                let mut finish = after(held.take(), Finish::failed(""));
                finish.status = FinishStatus::Interrupted;
                finish.error = None;
                return finish;
            }
            Next::Control(Some(Control::Steer(text))) if held.is_some() => {
                // The main agent is idle: the words go in as its next message.
                session.send(&user_message(Value::String(text))).await;
                session.emit(AgentEvent::SteerAccepted).await;
            }
            Next::Control(Some(Control::Interrupt)) => {
                parser.interrupt_sent = true;
                if steer.take().is_some() {
                    session.emit(AgentEvent::SteerRejected("the turn was stopped".into())).await;
                }
                session.send(&interrupt("mobius-interrupt")).await;
            }
            Next::Control(Some(Control::Steer(text))) => {
                if steer.is_some() || session.waiting() {
                    session.emit(AgentEvent::SteerRejected("the agent is waiting on the owner".into())).await;
                } else {
                    // Claude Code takes new words between turns: end this step, then go on.
                    parser.interrupt_sent = true;
                    steer = Some(text);
                    session.send(&interrupt("mobius-steer")).await;
                }
            }
            Next::Control(None) => {
                // The turn went away: nothing is waiting for this process any more.
                return Finish::failed("The turn went away.");
            }
        }
    }
}

/// A turn's end after results `earlier` held back: the tokens of both, the later one's word
/// on the rest (Claude Code's cost is the process's running total).
fn after(earlier: Option<Finish>, mut last: Finish) -> Finish {
    let Some(earlier) = earlier else { return last };
    if let Some(before) = earlier.usage {
        let usage = last.usage.get_or_insert(Usage::default());
        usage.input_tokens += before.input_tokens;
        usage.output_tokens += before.output_tokens;
        usage.cache_read_tokens += before.cache_read_tokens;
        usage.cache_write_tokens += before.cache_write_tokens;
    }
    last.cost_usd = last.cost_usd.or(earlier.cost_usd);
    last.session_id = last.session_id.or(earlier.session_id);
    last
}

fn user_message(content: Value) -> Value {
    json!({ "type": "user", "message": { "role": "user", "content": content }, "parent_tool_use_id": null, "session_id": "" })
}

/// Largest image sent as it is: the Messages API takes 5 MB per image, counted in base64.
const MAX_INLINE_IMAGE_BYTES: u64 = 3_750_000;
/// Longest side the Messages API takes.
const MAX_IMAGE_SIDE: u32 = 8000;
/// Images one turn shows the model, and their bytes in all (past it, previews go instead).
const MAX_IMAGES_PER_TURN: usize = 20;
const MAX_IMAGE_BYTES_PER_TURN: u64 = 15 * 1024 * 1024;

/// A user message's content: plain words, or, with images attached, one base64 image block
/// per image (the original when the API takes it, else the server's preview) then the words.
pub async fn user_content(prompt: &str, files: &[InputFile]) -> Value {
    use base64::Engine;
    let mut blocks = Vec::new();
    let mut budget = MAX_IMAGE_BYTES_PER_TURN;
    for file in files.iter().filter(|f| f.image).take(MAX_IMAGES_PER_TURN) {
        let fits = file.size <= MAX_INLINE_IMAGE_BYTES.min(budget)
            && file.dimensions.is_none_or(|(w, h)| w.max(h) <= MAX_IMAGE_SIDE);
        let (path, mime) = match (&file.preview, fits) {
            (_, true) => (&file.path, file.mime_type.as_str()),
            (Some(preview), false) => (preview, "image/jpeg"),
            (None, false) => continue,
        };
        let Ok(bytes) = tokio::fs::read(path).await else { continue };
        budget = budget.saturating_sub(bytes.len() as u64);
        let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
        blocks.push(json!({ "type": "image", "source": { "type": "base64", "media_type": mime, "data": data } }));
    }
    if blocks.is_empty() {
        return Value::String(prompt.to_owned());
    }
    blocks.push(json!({ "type": "text", "text": prompt }));
    Value::Array(blocks)
}

fn interrupt(request_id: &str) -> Value {
    json!({ "type": "control_request", "request_id": request_id, "request": { "subtype": "interrupt" } })
}

/// The questions of an `AskUserQuestion` call, as cards show them (unreadable ones are left out).
fn questions_of(input: &Value) -> Vec<QuestionItem> {
    input
        .get("questions")
        .and_then(Value::as_array)
        .map(|qs| qs.iter().filter_map(|q| QuestionItem::deserialize(q).ok()).collect())
        .unwrap_or_default()
}

/// The plan in a `TodoWrite` call's input: `todos: [{content, status}]` (`status` one of
/// `pending`, `in_progress`, `completed`). Other tools, or a malformed input, have none.
fn todo_plan(tool: &str, input: &Value) -> Option<crate::protocol::PlanCard> {
    use crate::protocol::{PlanCard, PlanStatus, PlanStep};
    if tool != "TodoWrite" {
        return None;
    }
    let steps = input
        .get("todos")?
        .as_array()?
        .iter()
        .filter_map(|todo| {
            let text = todo.get("content").and_then(Value::as_str)?.to_owned();
            let status = match todo.get("status").and_then(Value::as_str) {
                Some("completed") => PlanStatus::Completed,
                Some("in_progress") => PlanStatus::InProgress,
                _ => PlanStatus::Pending,
            };
            Some(PlanStep { text, status })
        })
        .collect();
    Some(PlanCard { steps, ..PlanCard::default() })
}

/// Most tasks kept of a session's task list (more creations are left out of the card).
const MAX_TASKS: usize = 200;
/// Longest task subject kept, in characters.
const MAX_TASK_SUBJECT_CHARS: usize = 500;
/// Task tool calls waiting for their result (more are not followed).
const MAX_PENDING_TASK_CALLS: usize = 64;
/// Entries of a session's saved task folder read at most (more: none is read).
const MAX_SAVED_TASK_ENTRIES: usize = 2 * MAX_TASKS + 16;
/// Largest saved task file read, in bytes.
const MAX_TASK_FILE_BYTES: u64 = 64 * 1024;

/// One task of Claude Code's task list.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Task {
    id: String,
    subject: String,
    status: crate::protocol::PlanStatus,
}

/// Claude Code's task list (its `TaskCreate` / `TaskUpdate` / `TaskList` / `TaskGet` tools,
/// which replaced `TodoWrite`), folded from the calls and their results into the plan card.
/// A call changes the list only once its result says it happened: TaskCreate's result carries
/// the new task's id; TaskList's and TaskGet's carry the CLI's own state, which the card then
/// follows (the way back after the card missed something, e.g. a new process resuming a session).
#[derive(Debug, Default)]
pub struct Tasks {
    /// In the CLI's order (by id).
    list: Vec<Task>,
    /// Task tool calls waiting for their result: call id → (tool, input).
    pending: HashMap<String, (String, Value)>,
}

impl Tasks {
    /// The list Claude Code kept for `session` in its config folder (`tasks/<session>/<id>.json`,
    /// the agent's to write: opened through `safe_fs`, bounded, anything unreadable left out),
    /// for a new process resuming the session. Empty when there is none.
    pub fn saved(config: &std::path::Path, session: &str) -> Tasks {
        let mut tasks = Tasks::default();
        let plain = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
        if session.is_empty() || session.len() > 128 || !session.chars().all(plain) {
            return tasks;
        }
        let Ok(dir) = crate::safe_fs::Dir::open_under(config, &std::path::Path::new("tasks").join(session)) else {
            return tasks;
        };
        let Ok(entries) = dir.entries(MAX_SAVED_TASK_ENTRIES) else { return tasks };
        let mut ids: Vec<u64> = entries
            .iter()
            .filter(|e| e.kind == crate::safe_fs::Kind::File)
            .filter_map(|e| e.name.to_str()?.strip_suffix(".json")?.parse().ok())
            .collect();
        ids.sort_unstable();
        for id in ids.into_iter().take(MAX_TASKS) {
            let Ok(bytes) = dir.read(std::path::Path::new(&format!("{id}.json")), MAX_TASK_FILE_BYTES) else {
                continue;
            };
            if let Some(task) = serde_json::from_slice::<Value>(&bytes).ok().as_ref().and_then(listed_task) {
                tasks.upsert(task);
            }
        }
        tasks
    }

    /// A tool call of the main agent: a task tool's is kept until its result.
    pub fn call(&mut self, id: &str, tool: &str, input: &Value) {
        if matches!(tool, "TaskCreate" | "TaskUpdate" | "TaskList" | "TaskGet")
            && self.pending.len() < MAX_PENDING_TASK_CALLS
        {
            self.pending.insert(id.to_owned(), (tool.to_owned(), input.clone()));
        }
    }

    /// A tool result (`structured`: the line's `tool_use_result`): the plan as it stands now
    /// when a task tool's result changed the list; `None` otherwise (another tool, a failed or
    /// malformed call, nothing new).
    pub fn result(
        &mut self,
        id: &str,
        is_error: bool,
        structured: &Value,
        text: &str,
    ) -> Option<crate::protocol::PlanCard> {
        let (tool, input) = self.pending.remove(id)?;
        if is_error || structured.get("success").and_then(Value::as_bool) == Some(false) {
            return None;
        }
        let before = self.list.clone();
        match tool.as_str() {
            "TaskCreate" => {
                let task = structured.get("task").unwrap_or(&Value::Null);
                let id = task_id(task.get("id")).or_else(|| created_id(text));
                let subject = task.get("subject").or_else(|| input.get("subject")).and_then(Value::as_str);
                if let (Some(id), Some(subject)) = (id, subject) {
                    self.upsert(Task {
                        id,
                        subject: subject_of(subject),
                        status: crate::protocol::PlanStatus::Pending,
                    });
                }
            }
            "TaskUpdate" => self.update(&input),
            "TaskList" => {
                // The CLI's whole list: the card follows it.
                if let Some(tasks) = structured.get("tasks").and_then(Value::as_array) {
                    self.list.clear();
                    for task in tasks {
                        if let Some(task) = listed_task(task) {
                            self.upsert(task);
                        }
                    }
                }
            }
            "TaskGet" => match structured.get("task") {
                Some(Value::Null) => {
                    if let Some(gone) = task_id(input.get("taskId")) {
                        self.list.retain(|t| t.id != gone);
                    }
                }
                Some(task) => {
                    if let Some(task) = listed_task(task) {
                        self.upsert(task);
                    }
                }
                None => {}
            },
            _ => {}
        }
        (self.list != before).then(|| crate::protocol::PlanCard {
            steps: self
                .list
                .iter()
                .map(|t| crate::protocol::PlanStep { text: t.subject.clone(), status: t.status })
                .collect(),
            ..crate::protocol::PlanCard::default()
        })
    }

    /// A TaskUpdate that succeeded: a new status or subject, or `deleted`. A task the list does
    /// not know is added only when the update names its subject (its place is its id's).
    fn update(&mut self, input: &Value) {
        use crate::protocol::PlanStatus;
        let Some(id) = task_id(input.get("taskId")) else { return };
        let status = match input.get("status").and_then(Value::as_str) {
            Some("deleted") => {
                self.list.retain(|t| t.id != id);
                return;
            }
            Some("pending") => Some(PlanStatus::Pending),
            Some("in_progress") => Some(PlanStatus::InProgress),
            Some("completed") => Some(PlanStatus::Completed),
            _ => None,
        };
        let subject = input.get("subject").and_then(Value::as_str).map(subject_of).filter(|s| !s.is_empty());
        match self.list.iter_mut().find(|t| t.id == id) {
            Some(task) => {
                if let Some(status) = status {
                    task.status = status;
                }
                if let Some(subject) = subject {
                    task.subject = subject;
                }
            }
            None => {
                if let Some(subject) = subject {
                    self.upsert(Task { id, subject, status: status.unwrap_or_default() });
                }
            }
        }
    }

    /// Puts a task in its place (ids are numbers the CLI counts up; others go last), replacing
    /// one with the same id. A full list takes no new task.
    fn upsert(&mut self, task: Task) {
        if let Some(known) = self.list.iter_mut().find(|t| t.id == task.id) {
            *known = task;
            return;
        }
        if self.list.len() >= MAX_TASKS {
            return;
        }
        let key = |id: &str| id.parse::<u64>().ok();
        let at = match key(&task.id) {
            Some(n) => self.list.iter().position(|t| key(&t.id).is_none_or(|m| m > n)).unwrap_or(self.list.len()),
            None => self.list.len(),
        };
        self.list.insert(at, task);
    }
}

/// A task id as Claude Code gives it (a string; a number is taken too), bounded.
fn task_id(value: Option<&Value>) -> Option<String> {
    let id = match value? {
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    (!id.is_empty() && id.len() <= 64).then_some(id)
}

/// The id in TaskCreate's result text ("Task #3 created successfully: …"), when the line has no
/// structured result.
fn created_id(text: &str) -> Option<String> {
    let rest = text.strip_prefix("Task #")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    (!digits.is_empty() && rest[digits.len()..].starts_with(" created")).then_some(digits)
}

fn subject_of(text: &str) -> String {
    text.trim().chars().take(MAX_TASK_SUBJECT_CHARS).collect()
}

/// A task as TaskList / TaskGet report it (`{id, subject, status}`).
fn listed_task(task: &Value) -> Option<Task> {
    use crate::protocol::PlanStatus;
    let status = match task.get("status").and_then(Value::as_str)? {
        "pending" => PlanStatus::Pending,
        "in_progress" => PlanStatus::InProgress,
        "completed" => PlanStatus::Completed,
        _ => return None,
    };
    Some(Task { id: task_id(task.get("id"))?, subject: subject_of(task.get("subject")?.as_str()?), status })
}

/// The pages a WebSearch result lists: the line's structured `tool_use_result.results[].content`
/// (`{title, url}`), else the `Links: [...]` JSON of the result's text ("Web search results for
/// query: …"). Any other tool's result has none.
fn search_results(line: &Value, text: &str) -> Vec<(String, Option<String>)> {
    let pair = |v: &Value| {
        let url = v.get("url").and_then(Value::as_str)?;
        Some((url.to_owned(), v.get("title").and_then(Value::as_str).map(str::to_owned)))
    };
    if let Some(results) = line.pointer("/tool_use_result/results").and_then(Value::as_array) {
        let found: Vec<_> = results
            .iter()
            .filter_map(|r| r.get("content").and_then(Value::as_array))
            .flatten()
            .filter_map(pair)
            .collect();
        if !found.is_empty() {
            return found;
        }
    }
    if !text.starts_with("Web search results for query:") {
        return Vec::new();
    }
    let Some(start) = text.find("Links: [").map(|at| at + "Links: ".len()) else { return Vec::new() };
    // The array ends at the first `]` after which the text parses; try each in turn (few).
    let rest = &text[start..];
    rest.match_indices(']')
        .take(64)
        .find_map(|(end, _)| serde_json::from_str::<Vec<Value>>(&rest[..=end]).ok())
        .map(|links| links.iter().filter_map(pair).collect())
        .unwrap_or_default()
}

/// The diffs of Claude's file tools from their input: `Edit` (`old_string` → `new_string`),
/// `MultiEdit` (its `edits`, one hunk each), `Write` (`content`, all added). Anything else, or
/// an input without those fields, has none (the block shows as any tool's).
fn edit_files(tool: &str, input: &Value) -> Vec<crate::protocol::FileDiff> {
    use crate::protocol::FileChange;
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let Some(path) = text(input, "file_path") else { return Vec::new() };
    let pairs: Vec<(String, String)> = match tool {
        "Edit" => match (text(input, "old_string"), text(input, "new_string")) {
            (Some(old), Some(new)) => vec![(old, new)],
            _ => return Vec::new(),
        },
        "MultiEdit" => input
            .get("edits")
            .and_then(Value::as_array)
            .map(|edits| edits.iter().filter_map(|e| Some((text(e, "old_string")?, text(e, "new_string")?))).collect())
            .unwrap_or_default(),
        "Write" => {
            let Some(content) = text(input, "content") else { return Vec::new() };
            if super::diff::is_binary(&content) {
                return vec![super::diff::binary(&path, FileChange::Write)];
            }
            return vec![super::diff::file(&path, FileChange::Write, super::diff::whole(&content, '+'))];
        }
        _ => return Vec::new(),
    };
    if pairs.is_empty() {
        return Vec::new();
    }
    if pairs.iter().any(|(old, new)| super::diff::is_binary(old) || super::diff::is_binary(new)) {
        return vec![super::diff::binary(&path, FileChange::Update)];
    }
    let mut diff = String::new();
    for (old, new) in &pairs {
        if pairs.len() > 1 {
            diff.push_str("@@\n");
        }
        super::diff::between(old, new, &mut diff);
    }
    vec![super::diff::file(&path, FileChange::Update, diff)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn todo_write_is_a_plan() {
        let input = json!({"todos": [
            {"content": "Read", "status": "completed", "activeForm": "Reading"},
            {"content": "Edit", "status": "in_progress"},
            {"content": "Test", "status": "pending"},
            {"status": "pending"}
        ]});
        let plan = todo_plan("TodoWrite", &input).expect("plan");
        let shown: Vec<_> = plan.steps.iter().map(|s| (s.text.as_str(), s.status)).collect();
        use crate::protocol::PlanStatus::*;
        assert_eq!(shown, [("Read", Completed), ("Edit", InProgress), ("Test", Pending)]);
        assert!(todo_plan("TodoWrite", &json!({"todos": "x"})).is_none());
        assert!(todo_plan("Bash", &input).is_none());
    }

    /// A task tool's call (of the main agent, or of subagent `parent`) and its result line.
    fn task_call(id: &str, tool: &str, input: Value, parent: Option<&str>) -> Value {
        json!({"type": "assistant", "parent_tool_use_id": parent, "message": {"id": format!("m-{id}"), "content": [
            {"type": "tool_use", "id": id, "name": tool, "input": input}]}})
    }
    fn task_result(id: &str, structured: Value, text: &str, is_error: bool) -> Value {
        json!({"type": "user", "tool_use_result": structured, "message": {"content": [
            {"type": "tool_result", "tool_use_id": id, "content": text, "is_error": is_error}]}})
    }
    /// The plans the lines gave, each as (step, status) pairs.
    fn plans(parser: &mut Parser, lines: &[Value]) -> Vec<Vec<(String, crate::protocol::PlanStatus)>> {
        run(lines, parser)
            .0
            .into_iter()
            .filter_map(|e| match e {
                AgentEvent::Plan(plan) => Some(plan.steps.into_iter().map(|s| (s.text, s.status)).collect()),
                _ => None,
            })
            .collect()
    }
    fn step(text: &str, status: crate::protocol::PlanStatus) -> (String, crate::protocol::PlanStatus) {
        (text.to_owned(), status)
    }

    #[test]
    fn task_tools_fold_into_the_plan_as_their_results_say() {
        use crate::protocol::PlanStatus::*;
        let mut parser = Parser::default();
        // Two creations called in parallel, their results in the other order: ids set the order.
        let lines = [
            task_call("c1", "TaskCreate", json!({"subject": "Draft the outline", "description": "d"}), None),
            task_call("c2", "TaskCreate", json!({"subject": "Write the notes", "description": "d"}), None),
            task_result(
                "c2",
                json!({"task": {"id": "2", "subject": "Write the notes"}}),
                "Task #2 created successfully: Write the notes",
                false,
            ),
            task_result(
                "c1",
                json!({"task": {"id": "1", "subject": "Draft the outline"}}),
                "Task #1 created successfully: Draft the outline",
                false,
            ),
            task_call("u1", "TaskUpdate", json!({"taskId": "1", "status": "in_progress"}), None),
            task_result(
                "u1",
                json!({"success": true, "taskId": "1", "updatedFields": ["status"]}),
                "Updated task #1 status",
                false,
            ),
        ];
        let seen = plans(&mut parser, &lines);
        assert_eq!(seen.len(), 3, "each change is a plan: {seen:?}");
        assert_eq!(seen[0], [step("Write the notes", Pending)]);
        assert_eq!(seen[1], [step("Draft the outline", Pending), step("Write the notes", Pending)]);
        assert_eq!(seen[2], [step("Draft the outline", InProgress), step("Write the notes", Pending)]);

        // The next turn of the same process moves the same plan: done, renamed, deleted.
        parser.next_turn();
        let lines = [
            task_call("u2", "TaskUpdate", json!({"taskId": "1", "status": "completed"}), None),
            task_result("u2", json!({"success": true}), "Updated task #1 status", false),
            task_call(
                "u3",
                "TaskUpdate",
                json!({"taskId": "2", "subject": "Write the final notes", "status": "in_progress"}),
                None,
            ),
            task_result("u3", json!({"success": true}), "Updated task #2 subject, status", false),
            // A creation with no structured result: the id is in the text.
            task_call("c3", "TaskCreate", json!({"subject": "Review them", "description": "d"}), None),
            task_result("c3", Value::Null, "Task #3 created successfully: Review them", false),
            task_call("d1", "TaskUpdate", json!({"taskId": "1", "status": "deleted"}), None),
            task_result("d1", json!({"success": true}), "Updated task #1 deleted", false),
        ];
        let seen = plans(&mut parser, &lines);
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert_eq!(seen[0][0], step("Draft the outline", Completed));
        assert_eq!(seen[1][1], step("Write the final notes", InProgress));
        assert_eq!(seen[2].len(), 3);
        assert_eq!(seen[3], [step("Write the final notes", InProgress), step("Review them", Pending)]);
    }

    #[test]
    fn unknown_failed_or_malformed_task_calls_change_nothing() {
        use crate::protocol::PlanStatus::*;
        let mut parser = Parser::default();
        let create = [
            task_call("c1", "TaskCreate", json!({"subject": "One", "description": "d"}), None),
            task_result(
                "c1",
                json!({"task": {"id": "1", "subject": "One"}}),
                "Task #1 created successfully: One",
                false,
            ),
        ];
        assert_eq!(plans(&mut parser, &create).len(), 1);
        let nothing = [
            // An id the list does not know, without a subject to show.
            task_call("u1", "TaskUpdate", json!({"taskId": "9", "status": "completed"}), None),
            task_result("u1", json!({"success": true}), "Updated task #9 status", false),
            // The CLI refused it.
            task_call("u2", "TaskUpdate", json!({"taskId": "1", "status": "completed"}), None),
            task_result("u2", json!({"success": false, "error": "Task not found"}), "Task not found", false),
            task_call("u3", "TaskUpdate", json!({"taskId": "1", "status": "completed"}), None),
            task_result("u3", Value::Null, "<tool_use_error>Error: No such tool available</tool_use_error>", true),
            // Malformed input: no id, an id of the wrong type, a status it does not have.
            task_call("u4", "TaskUpdate", json!({"status": "completed"}), None),
            task_result("u4", json!({"success": true}), "", false),
            task_call("u5", "TaskUpdate", json!({"taskId": ["1"], "status": "completed"}), None),
            task_result("u5", json!({"success": true}), "", false),
            task_call("u6", "TaskUpdate", json!({"taskId": "1", "status": "finished"}), None),
            task_result("u6", json!({"success": true}), "", false),
            task_call("c2", "TaskCreate", json!({"description": "no subject"}), None),
            task_result("c2", json!({"task": {"id": "2"}}), "", false),
            task_call("c3", "TaskCreate", json!({"subject": "No id anywhere"}), None),
            task_result("c3", json!({}), "created", false),
            task_call("l1", "TaskList", json!({}), None),
            task_result("l1", json!({"tasks": "many"}), "", false),
            // A result for no call of ours, and a subagent's own task calls.
            task_result(
                "zz",
                json!({"task": {"id": "5", "subject": "Stray"}}),
                "Task #5 created successfully: Stray",
                false,
            ),
            task_call("s1", "TaskCreate", json!({"subject": "Sub"}), Some("agent-1")),
            task_result(
                "s1",
                json!({"task": {"id": "6", "subject": "Sub"}}),
                "Task #6 created successfully: Sub",
                false,
            ),
            // Listing what the card already shows.
            task_call("l2", "TaskList", json!({}), None),
            task_result(
                "l2",
                json!({"tasks": [{"id": "1", "subject": "One", "status": "pending", "blockedBy": []}]}),
                "#1 [pending] One",
                false,
            ),
        ];
        assert_eq!(plans(&mut parser, &nothing), Vec::<Vec<_>>::new());
        // An update naming its subject adds the task the card missed; a listing replaces the card.
        let mended = [
            task_call("u7", "TaskUpdate", json!({"taskId": "3", "subject": "Three", "status": "in_progress"}), None),
            task_result("u7", json!({"success": true}), "Updated task #3 subject, status", false),
            task_call("l3", "TaskList", json!({}), None),
            task_result(
                "l3",
                json!({"tasks": [
                {"id": "1", "subject": "One", "status": "completed"},
                {"id": "2", "subject": "Two", "status": "pending"},
                {"id": "x", "subject": "Bad status", "status": "deleted"}]}),
                "",
                false,
            ),
            task_call("g1", "TaskGet", json!({"taskId": "2"}), None),
            task_result("g1", json!({"task": null}), "Task not found", false),
        ];
        let seen = plans(&mut parser, &mended);
        assert_eq!(seen[0], [step("One", Pending), step("Three", InProgress)]);
        assert_eq!(seen[1], [step("One", Completed), step("Two", Pending)]);
        assert_eq!(seen[2], [step("One", Completed)]);
        // A fresh process's parser knows no task.
        assert!(Parser::default().tasks.list.is_empty());
    }

    #[test]
    fn the_task_list_is_bounded() {
        let mut parser = Parser::default();
        let long = "x".repeat(MAX_TASK_SUBJECT_CHARS + 100);
        let mut lines = Vec::new();
        for n in 1..=MAX_TASKS + 5 {
            let id = format!("c{n}");
            lines.push(task_call(&id, "TaskCreate", json!({"subject": long, "description": "d"}), None));
            lines.push(task_result(&id, json!({"task": {"id": n.to_string(), "subject": long}}), "", false));
        }
        let seen = plans(&mut parser, &lines);
        assert_eq!(seen.len(), MAX_TASKS, "creations past the cap change nothing");
        let last = seen.last().expect("a plan");
        assert_eq!(last.len(), MAX_TASKS);
        assert!(last.iter().all(|(text, _)| text.chars().count() == MAX_TASK_SUBJECT_CHARS));
        // Calls whose results never come are not kept without end.
        for n in 0..MAX_PENDING_TASK_CALLS * 2 {
            parser.parse(&task_call(&format!("p{n}"), "TaskUpdate", json!({"taskId": "1"}), None));
        }
        assert_eq!(parser.tasks.pending.len(), MAX_PENDING_TASK_CALLS);
    }

    #[test]
    fn a_resumed_session_starts_from_the_task_list_the_cli_kept() {
        use crate::protocol::PlanStatus::*;
        let config = tempfile::tempdir().expect("tmp");
        let folder = config.path().join("tasks/s-1");
        std::fs::create_dir_all(&folder).expect("folder");
        let task = |id: &str, subject: &str, status: &str| {
            json!({"id": id, "subject": subject, "description": "d", "status": status, "blocks": [], "blockedBy": []})
                .to_string()
        };
        std::fs::write(folder.join("10.json"), task("10", "Ten", "pending")).expect("10");
        std::fs::write(folder.join("2.json"), task("2", "Two", "completed")).expect("2");
        std::fs::write(folder.join("3.json"), "{not json").expect("3");
        std::fs::write(folder.join("4.json"), task("4", "Four", "deleted")).expect("4");
        std::fs::write(folder.join(".lock"), "").expect("lock");
        std::fs::write(folder.join("5.json"), "x".repeat(usize::try_from(MAX_TASK_FILE_BYTES).expect("size") + 1))
            .expect("5");
        std::os::unix::fs::symlink(folder.join("2.json"), folder.join("6.json")).expect("link");
        let tasks = Tasks::saved(config.path(), "s-1");
        let shown: Vec<_> = tasks.list.iter().map(|t| (t.subject.as_str(), t.status)).collect();
        assert_eq!(shown, [("Two", Completed), ("Ten", Pending)], "in id order; broken, large, linked files left out");
        assert!(Tasks::saved(config.path(), "none").list.is_empty());
        assert!(Tasks::saved(config.path(), "../tasks/s-1").list.is_empty(), "a session id is a name, not a path");
        // The resumed process's next update moves the saved list.
        let mut parser = Parser { tasks, ..Parser::default() };
        let lines = [
            task_call("u1", "TaskUpdate", json!({"taskId": "10", "status": "completed"}), None),
            task_result("u1", json!({"success": true}), "Updated task #10 status", false),
        ];
        assert_eq!(plans(&mut parser, &lines), [vec![step("Two", Completed), step("Ten", Completed)]]);
    }

    #[test]
    fn a_turn_with_tools_asks_for_the_task_tools() {
        let request = |tools| TurnRequest {
            prompt: "hi".into(),
            files: Vec::new(),
            system_prompt: String::new(),
            resume: None,
            model: None,
            effort: None,
            cwd: "/data".into(),
            env: vec![("HOME".into(), "/data".into())],
            approval: super::super::ApprovalPolicy::Full,
            plan: false,
            trees: crate::agent::trees::Trees::new("/data/run/agents".into(), false),
            tools,
            confine: None,
            keep: None,
            memory: crate::agent::ceiling::MemoryCeiling::detect(None),
            mcp: Vec::new(),
        };
        let asked = |tools| env(&request(tools)).iter().any(|(k, v)| k == "CLAUDE_CODE_ENABLE_TODO_TOOLS" && v == "1");
        assert!(asked(true));
        assert!(!asked(false), "a tool-less turn asks for no tool");
        assert_eq!(env(&request(true))[0], ("HOME".to_owned(), "/data".to_owned()));
    }

    #[test]
    fn a_background_subagent_runs_until_its_notification_says_it_ended() {
        let mut parser = Parser::default();
        let agent = |id: &str| {
            json!({"type": "assistant", "parent_tool_use_id": null, "message": {"id": format!("m-{id}"), "content": [
                {"type": "tool_use", "id": id, "name": "Agent", "input": {"description": "Count", "prompt": "p", "subagent_type": "general-purpose"}}]}})
        };
        let launched = |id: &str| {
            json!({"type": "user", "parent_tool_use_id": null,
                "tool_use_result": {"isAsync": true, "status": "async_launched", "agentId": "ab1"},
                "message": {"content": [{"type": "tool_result", "tool_use_id": id, "content": [{"type": "text", "text": "Async agent launched successfully."}]}]}})
        };
        let notified = |id: &str, status: &str| {
            json!({"type": "system", "subtype": "task_notification", "task_id": "ab1", "tool_use_id": id,
                "status": status, "summary": "There are no notes yet.", "summary_is_report": true})
        };
        let ends = |events: &[AgentEvent]| -> Vec<(String, bool, bool)> {
            events
                .iter()
                .filter_map(|e| match e {
                    AgentEvent::ToolEnd { id, is_error, interrupted } => Some((id.clone(), *is_error, *interrupted)),
                    _ => None,
                })
                .collect()
        };
        let started = json!({"type": "system", "subtype": "task_started", "task_id": "ab1", "tool_use_id": "a1", "is_backgrounded": true});
        let (events, _, _) = run(&[agent("a1"), started, launched("a1")], &mut parser);
        assert!(ends(&events).is_empty(), "launched is not done: {events:?}");
        assert!(events.iter().any(|e| matches!(e, AgentEvent::ToolOutput { id, .. } if id == "a1")));
        // Its own steps come meanwhile; then the notification ends the call with the report.
        let step = json!({"type": "user", "parent_tool_use_id": "a1", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "b1", "content": "(no output)"}]}});
        let (events, _, _) = run(&[step, notified("zz", "completed"), notified("a1", "completed")], &mut parser);
        assert_eq!(ends(&events), [("b1".to_owned(), false, false), ("a1".to_owned(), false, false)]);
        assert!(events.iter().any(
            |e| matches!(e, AgentEvent::ToolOutput { id, text, .. } if id == "a1" && text == "There are no notes yet.")
        ));
        let (events, _, _) = run(&[notified("a1", "completed")], &mut parser);
        assert!(events.is_empty(), "told once: {events:?}");
        // A failed and a stopped one; a call that waited for its agent ends with its result.
        let (events, _, _) = run(&[agent("a2"), launched("a2"), notified("a2", "failed")], &mut parser);
        assert_eq!(ends(&events), [("a2".to_owned(), true, false)]);
        let (events, _, _) = run(&[agent("a3"), launched("a3"), notified("a3", "killed")], &mut parser);
        assert_eq!(ends(&events), [("a3".to_owned(), true, true)]);
        let waited = json!({"type": "user", "parent_tool_use_id": null, "tool_use_result": {"status": "completed"},
            "message": {"content": [{"type": "tool_result", "tool_use_id": "a4", "content": "the report"}]}});
        let (events, _, _) = run(&[agent("a4"), waited], &mut parser);
        assert_eq!(ends(&events), [("a4".to_owned(), false, false)]);
        // A workflow or a command in the background is not held: it may outlive any turn.
        let workflow = json!({"type": "user", "parent_tool_use_id": null, "tool_use_result": {"status": "async_launched", "taskId": "w"},
            "message": {"content": [{"type": "tool_result", "tool_use_id": "w1", "content": "started"}]}});
        let shell = json!({"type": "user", "parent_tool_use_id": null, "tool_use_result": {"backgroundTaskId": "b"},
            "message": {"content": [{"type": "tool_result", "tool_use_id": "s1", "content": "running"}]}});
        let (events, _, _) = run(&[workflow, shell], &mut parser);
        assert_eq!(ends(&events), [("w1".to_owned(), false, false), ("s1".to_owned(), false, false)]);
        // A turn that ended first closed the call: the next turn follows none of them.
        let (events, _, _) = run(&[agent("a5"), launched("a5")], &mut parser);
        assert!(ends(&events).is_empty());
        parser.next_turn();
        let (events, _, _) = run(&[notified("a5", "completed")], &mut parser);
        assert!(events.is_empty());

        // The results of a turn that waited for its background agents add up.
        let result = |tokens: i64, cost: f64| Finish {
            usage: Some(Usage { input_tokens: tokens, output_tokens: 1, ..Usage::default() }),
            cost_usd: Some(cost),
            ..Finish::failed("")
        };
        let both =
            after(Some(result(100, 0.5)), Finish { status: FinishStatus::Completed, error: None, ..result(20, 0.7) });
        assert_eq!(
            (both.status, both.usage.map(|u| (u.input_tokens, u.output_tokens))),
            (FinishStatus::Completed, Some((120, 2)))
        );
        assert_eq!(both.cost_usd, Some(0.7), "the CLI's running total");
        assert_eq!(after(None, result(5, 0.1)).usage.map(|u| u.input_tokens), Some(5));
    }

    #[test]
    fn a_subagents_steps_are_marked_with_its_call_and_its_words_and_todos_left_out() {
        let mut parser = Parser::default();
        let lines = [
            json!({"type": "assistant", "parent_tool_use_id": null, "message": {"id": "m1", "content": [
                {"type": "tool_use", "id": "a1", "name": "Agent",
                 "input": {"description": "Find the config", "prompt": "Look", "subagent_type": "Explore"}}]}}),
            json!({"type": "stream_event", "parent_tool_use_id": "a1",
                   "event": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "sub"}}}),
            json!({"type": "assistant", "parent_tool_use_id": "a1", "message": {"id": "m2", "content": [
                {"type": "text", "text": "Looking around."},
                {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "/w/a.toml"}},
                {"type": "tool_use", "id": "t1", "name": "TodoWrite", "input": {"todos": [{"content": "x", "status": "pending"}]}}]}}),
            json!({"type": "user", "parent_tool_use_id": "a1", "message": {"content": [
                {"type": "tool_result", "tool_use_id": "r1", "content": "k = 1"}]}}),
        ];
        let (events, _, _) = run(&lines, &mut parser);
        let starts: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ToolStart { id, parent, subagent, .. } => {
                    Some((id.as_str(), parent.clone(), subagent.clone()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            starts,
            [
                ("a1", None, Some("Explore".to_owned())),
                ("r1", Some("a1".to_owned()), None),
                ("t1", Some("a1".to_owned()), None)
            ]
        );
        assert!(
            !events.iter().any(|e| matches!(e, AgentEvent::Text { .. } | AgentEvent::TextFinal { .. })),
            "{events:?}"
        );
        assert!(!events.iter().any(|e| matches!(e, AgentEvent::Plan(_))), "a subagent's todos are not the plan");
        assert!(events.iter().any(|e| matches!(e, AgentEvent::ToolEnd { id, .. } if id == "r1")));
    }

    #[test]
    fn web_search_results_and_fetches_become_sources() {
        let text = "Web search results for query: \"rust\"\n\nLinks: [{\"title\":\"The Rust [book]\",\"url\":\"https://doc.rust-lang.org/book/\"},{\"title\":\"Rust\",\"url\":\"https://www.rust-lang.org/\"}]\n\nMore text]";
        let found = search_results(&json!({}), text);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0], ("https://doc.rust-lang.org/book/".to_owned(), Some("The Rust [book]".to_owned())));
        let structured = json!({"tool_use_result": {"results": [{"tool_use_id": "x", "content": [{"title": "T", "url": "https://t.example/"}]}, "summary"]}});
        assert_eq!(
            search_results(&structured, "whatever"),
            vec![("https://t.example/".to_owned(), Some("T".to_owned()))]
        );
        assert!(
            search_results(&json!({}), "Links: [{\"url\":\"https://x.example\"}]").is_empty(),
            "not a search result"
        );
    }

    #[test]
    fn edit_tools_become_diffs_and_other_input_none() {
        let edit = edit_files("Edit", &json!({"file_path": "/w/a.txt", "old_string": "a\nb", "new_string": "a\nc"}));
        assert_eq!((edit[0].diff.as_str(), edit[0].added, edit[0].removed), (" a\n-b\n+c\n", 1, 1));
        let multi = edit_files(
            "MultiEdit",
            &json!({"file_path": "/w/a.txt", "edits": [{"old_string": "x", "new_string": "y"}, {"old_string": "p", "new_string": ""}]}),
        );
        assert_eq!(multi[0].diff, "@@\n-x\n+y\n@@\n-p\n");
        let write = edit_files("Write", &json!({"file_path": "/w/n.txt", "content": "one\ntwo\n"}));
        assert_eq!((write[0].change, write[0].added), (crate::protocol::FileChange::Write, 2));
        assert!(edit_files("Write", &json!({"file_path": "/w/i.png", "content": "\u{0}PNG"}))[0].binary);
        assert!(edit_files("Edit", &json!({"file_path": "/w/a.txt", "old_string": 3})).is_empty());
        assert!(edit_files("Bash", &json!({"command": "ls"})).is_empty());
    }

    fn file(dir: &std::path::Path, name: &str, bytes: &[u8], dims: (u32, u32), preview: Option<&[u8]>) -> InputFile {
        std::fs::write(dir.join(name), bytes).expect("file");
        let preview = preview.map(|p| {
            let path = dir.join(format!("{name}.preview.jpg"));
            std::fs::write(&path, p).expect("preview");
            path
        });
        InputFile {
            path: dir.join(name),
            name: name.into(),
            mime_type: "image/png".into(),
            size: bytes.len() as u64,
            dimensions: Some(dims),
            image: true,
            preview,
        }
    }

    #[tokio::test]
    async fn images_go_as_base64_blocks_before_the_words_and_oversized_ones_as_their_preview() {
        use base64::Engine;
        let dir = tempfile::tempdir().expect("tmp");
        assert_eq!(user_content("hi", &[]).await, Value::String("hi".into()), "no files: plain words");
        let small = file(dir.path(), "a.png", b"small-png", (40, 30), Some(b"prev-a"));
        let huge = file(dir.path(), "b.png", b"huge-png", (9000, 100), Some(b"prev-b"));
        let unseen = file(dir.path(), "c.png", b"huge", (9000, 100), None);
        let doc =
            InputFile { image: false, mime_type: "text/plain".into(), ..file(dir.path(), "d.txt", b"x", (0, 0), None) };
        let content = user_content("look", &[small, huge, unseen, doc]).await;
        let blocks = content.as_array().expect("blocks");
        let data = |i: usize| {
            base64::engine::general_purpose::STANDARD
                .decode(blocks[i]["source"]["data"].as_str().expect("data"))
                .expect("b64")
        };
        assert_eq!(blocks.len(), 3, "two images (the third has no preview to send), then the words: {content}");
        assert_eq!(
            (blocks[0]["type"].as_str(), blocks[0]["source"]["media_type"].as_str()),
            (Some("image"), Some("image/png"))
        );
        assert_eq!(data(0), b"small-png");
        assert_eq!(blocks[1]["source"]["media_type"], "image/jpeg", "too large a side: the preview goes");
        assert_eq!(data(1), b"prev-b");
        assert_eq!(blocks[2], json!({ "type": "text", "text": "look" }));
    }

    #[test]
    fn a_tool_results_images_become_tool_images() {
        let line = json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[
            {"type":"text","text":"read it"},
            {"type":"image","source":{"type":"base64","media_type":"image/png","data":"aGVsbG8="}}]}]}});
        let mut events = Vec::new();
        Parser::default().tool_results(&line, &mut events);
        assert!(
            matches!(&events[1], AgentEvent::ToolImage { id, image: ToolImage::Bytes(b) } if id == "t1" && b == b"hello")
        );
        assert!(matches!(&events[2], AgentEvent::ToolEnd { .. }));
    }

    fn sample(name: &str) -> Vec<Value> {
        let path = crate::config::checkout_root().join("tests/fixtures").join(name);
        std::fs::read_to_string(path)
            .expect("fixture")
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("json"))
            .map(|v| if v.get("dir").is_some() { v } else { json!({ "dir": "out", "msg": v }) })
            .filter(|v| v["dir"] == "out")
            .map(|v| v["msg"].clone())
            .collect()
    }

    fn run(lines: &[Value], parser: &mut Parser) -> (Vec<AgentEvent>, Vec<(String, String)>, Vec<Finish>) {
        let (mut events, mut permissions, mut finishes) = (Vec::new(), Vec::new(), Vec::new());
        for line in lines {
            match parser.parse(line) {
                Parsed::Events(e) => events.extend(e),
                Parsed::Permission { request_id, tool, .. } => permissions.push((request_id, tool)),
                Parsed::OtherRequest { .. } => {}
                Parsed::Finished(f) => finishes.push(f),
            }
        }
        (events, permissions, finishes)
    }

    #[test]
    fn a_recorded_turn_yields_session_text_tool_and_result() {
        let mut parser = Parser::default();
        let (events, permissions, finishes) = run(&sample("claude-stream-sample.jsonl"), &mut parser);
        assert!(permissions.is_empty());
        assert!(matches!(&events[0], AgentEvent::Session(s) if s.len() > 10));
        assert!(events.iter().any(|e| matches!(e, AgentEvent::ToolStart { name, input, .. } if name == "Write" && input.ends_with("hello.txt"))));
        assert!(events.iter().any(|e| matches!(e, AgentEvent::ToolEnd { is_error: false, .. })));
        assert!(events.iter().any(|e| matches!(e, AgentEvent::TextFinal { text, .. } if text == "done")));
        assert_eq!(finishes.len(), 1);
        assert_eq!(finishes[0].status, FinishStatus::Completed);
        assert!(finishes[0].cost_usd.is_some() && finishes[0].usage.as_ref().is_some_and(|u| u.input_tokens > 0));
    }

    #[test]
    fn the_control_sample_covers_permissions_questions_denials_and_interrupts() {
        let mut parser = Parser::default();
        let lines = sample("claude-control-sample.jsonl");
        let (events, permissions, finishes) = run(&lines, &mut parser);
        let tools: Vec<&str> = permissions.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(tools, vec!["Write", "Bash", "AskUserQuestion"]);
        assert!(
            events.iter().any(|e| matches!(e, AgentEvent::ToolEnd { is_error: true, .. })),
            "denied Bash is an error"
        );
        // The interrupted turn's result is an error; without our interrupt flag it reads as a failure.
        assert_eq!(finishes.iter().filter(|f| f.status == FinishStatus::Failed).count(), 1);
        assert_eq!(finishes.iter().filter(|f| f.status == FinishStatus::Completed).count(), 4);
        let mut interrupted = Parser { interrupt_sent: true, ..Parser::default() };
        // A tool that fails after our interrupt was cut short by it, not broken.
        let failed_tool = lines
            .iter()
            .find(|l| l["type"] == "user" && l.to_string().contains("\"is_error\":true"))
            .expect("a failed tool result");
        let interrupted_flag = |parser: &mut Parser| match parser.parse(failed_tool) {
            Parsed::Events(events) => events.iter().find_map(|e| match e {
                AgentEvent::ToolEnd { is_error: true, interrupted, .. } => Some(*interrupted),
                _ => None,
            }),
            _ => None,
        };
        assert_eq!(interrupted_flag(&mut Parser::default()), Some(false));
        assert_eq!(interrupted_flag(&mut Parser { interrupt_sent: true, ..Parser::default() }), Some(true));
        let interrupted_result =
            lines.iter().find(|l| l["type"] == "result" && l["is_error"] == true).expect("error result");
        assert!(matches!(
            interrupted.parse(interrupted_result),
            Parsed::Finished(Finish { status: FinishStatus::Interrupted, .. })
        ));
    }

    #[test]
    fn partial_message_deltas_become_text_and_thinking_with_stable_item_ids() {
        let mut parser = Parser::default();
        let lines = vec![
            json!({"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}},"session_id":"s1"}),
            json!({"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}}),
            json!({"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hel"}}}),
            json!({"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"lo"}}}),
            json!({"type":"assistant","message":{"id":"m1","content":[{"type":"thinking","thinking":"hmm"}]}}),
            json!({"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Hello"}]}}),
        ];
        let (events, _, _) = run(&lines, &mut parser);
        let ids: Vec<String> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Text { item_id, .. } | AgentEvent::TextFinal { item_id, .. } => Some(item_id.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(ids, vec!["m1:1", "m1:1", "m1:1"]);
        assert!(events.iter().any(|e| matches!(e, AgentEvent::Thinking { item_id, .. } if item_id == "m1:0")));
    }

    #[test]
    fn the_workspace_policy_accepts_edits_and_asks_for_the_rest() {
        let request = |approval| TurnRequest {
            prompt: "hi".into(),
            files: Vec::new(),
            system_prompt: String::new(),
            resume: None,
            model: None,
            effort: None,
            cwd: "/data".into(),
            env: vec![],
            approval,
            plan: false,
            trees: crate::agent::trees::Trees::new("/data/run/agents".into(), false),
            tools: true,
            confine: None,
            keep: None,
            memory: crate::agent::ceiling::MemoryCeiling::detect(None),
            mcp: Vec::new(),
        };
        let mode = |approval| {
            let args = args(&request(approval));
            args.iter().position(|a| a == "--permission-mode").map(|i| args[i + 1].clone())
        };
        assert_eq!(mode(super::super::ApprovalPolicy::Workspace).as_deref(), Some("acceptEdits"));
        assert_eq!(mode(super::super::ApprovalPolicy::Ask), None, "ask: Claude's default mode asks for everything");
        assert_eq!(mode(super::super::ApprovalPolicy::Full), None, "full: the server allows each prompt");
        assert!(args(&request(super::super::ApprovalPolicy::Full)).contains(&"stdio".to_owned()));
        let plan = TurnRequest { plan: true, ..request(super::super::ApprovalPolicy::Workspace) };
        let plan_args = args(&plan);
        let i = plan_args.iter().position(|a| a == "--permission-mode").expect("a mode");
        assert_eq!(plan_args[i + 1], "plan", "a plan turn starts in plan mode");
        assert_eq!(plan_args.iter().filter(|a| *a == "--permission-mode").count(), 1);
    }

    #[test]
    fn plan_mode_is_switched_per_turn_and_an_approved_plan_leaves_it() {
        let mut modes = Modes { base: "acceptEdits", now: "acceptEdits".into() };
        assert!(modes.switch_for(false).is_none(), "already in the policy's mode");
        let switch = modes.switch_for(true).expect("into plan mode");
        assert_eq!(switch["request"], json!({"subtype": "set_permission_mode", "mode": "plan"}));
        assert!(modes.switch_for(true).is_none(), "a second plan turn stays");
        assert_eq!(modes.switch_for(false).expect("back")["request"]["mode"], "acceptEdits");

        let mut parser = Parser::default();
        let ask = json!({"type":"control_request","request_id":"r9","request":{"subtype":"can_use_tool",
            "tool_name":"ExitPlanMode","input":{"plan":"1. Read\n2. Write"}}});
        let Parsed::Permission { tool, input, .. } = parser.parse(&ask) else { panic!("a permission prompt") };
        assert_eq!(tool, "ExitPlanMode");
        assert_eq!(parser.plan_of(&input), "1. Read\n2. Write");
        let call = json!({"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"t1",
            "name":"ExitPlanMode","input":{"plan":"from the model"}}]}});
        parser.parse(&call);
        assert_eq!(parser.plan_of(&json!({"plan": ""})), "from the model", "no plan file: the call's own plan");
        let approved = permission_response("r9", &input, &Reply::Plan("1. Read\n2. Write tests".into()), "default");
        let decision = &approved["response"]["response"];
        assert_eq!(decision["behavior"], "allow");
        assert_eq!(decision["updatedInput"]["plan"], "1. Read\n2. Write tests", "the owner's edit");
        assert_eq!(
            decision["updatedPermissions"][0],
            json!({"type":"setMode","mode":"default","destination":"session"})
        );
        let refused = json!({"type":"control_response","response":{"subtype":"error","request_id":"x","error":"nope"}});
        let Parsed::Events(events) = parser.parse(&refused) else { panic!("events") };
        assert!(matches!(&events[..], [AgentEvent::Warning(w)] if w.contains("nope")));
    }

    #[test]
    fn error_results_carry_a_readable_message() {
        let mut parser = Parser::default();
        let line = json!({"type":"result","subtype":"error_during_execution","is_error":true,"api_error_status":400,"errors":["[ede_diagnostic] x","bad request"]});
        match parser.parse(&line) {
            Parsed::Finished(f) => {
                assert_eq!(f.status, FinishStatus::Failed);
                assert_eq!(f.error.as_deref(), Some("bad request"));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn a_refused_key_ends_the_turn_at_once_and_other_retries_are_shown() {
        let mut parser = Parser::default();
        let retry = |status: u64, error: &str| json!({"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":1232,"error_status":status,"error":error,"session_id":"s1"});
        match parser.parse(&retry(401, "authentication_failed")) {
            Parsed::Finished(f) => {
                assert_eq!(f.status, FinishStatus::Failed);
                assert_eq!(f.fix, Some(crate::protocol::ErrorFix::ProviderSettings));
                assert!(f.error.as_deref().is_some_and(|e| e.contains("HTTP 401")), "{:?}", f.error);
            }
            _ => panic!("a refused key must end the turn"),
        }
        assert!(matches!(parser.parse(&retry(402, "billing_error")), Parsed::Finished(f) if f.fix.is_some()));
        match parser.parse(&retry(529, "overloaded")) {
            Parsed::Events(events) => assert!(events.iter().any(|e| matches!(e,
                AgentEvent::Retrying { attempt: 2, max_retries: 10, reason } if reason == "overloaded"))),
            _ => panic!("an overloaded model is retried"),
        }
    }

    #[test]
    fn rate_limit_events_give_the_plan_windows_and_a_refusal_its_reset() {
        let mut parser = Parser::default();
        let event = json!({"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1796404688,
            "rateLimitType":"five_hour","unifiedWindows":{"five_hour":{"utilization":0.91,"resetsAt":1796404688},
            "seven_day":{"utilization":0.42,"resetsAt":1796487488}}},"session_id":"s1"});
        let Parsed::Events(events) = parser.parse(&event) else { panic!("events") };
        let windows = events.iter().find_map(|e| match e {
            AgentEvent::Limits(w) => Some(w.clone()),
            _ => None,
        });
        let windows = windows.expect("windows");
        let five = windows.iter().find(|w| w.id == "five_hour").expect("5-hour");
        assert_eq!((five.label.as_str(), five.resets_at), ("5-hour", Some(1_796_404_688_000)));
        assert!(five.used_percent.is_some_and(|u| (u - 91.0).abs() < 1e-9));
        let rejected = json!({"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1796401217,
            "rateLimitType":"five_hour"}});
        parser.parse(&rejected);
        let result = json!({"type":"result","subtype":"success","is_error":true,"api_error_status":429,
            "result":"You've hit your 5-hour limit","session_id":"s1"});
        let Parsed::Finished(finish) = parser.parse(&result) else { panic!("finished") };
        assert_eq!(finish.status, FinishStatus::Failed);
        assert_eq!(finish.limit, Some(LimitHit { resets_at: Some(1_796_401_217_000) }));
        let plain = json!({"type":"result","subtype":"error_during_execution","is_error":true,"api_error_status":400});
        assert!(matches!(Parser::default().parse(&plain), Parsed::Finished(f) if f.limit.is_none()));
    }

    #[test]
    fn answers_are_sent_back_inside_the_updated_input() {
        let input = json!({"questions":[{"question":"Which color?"}]});
        let mut answers = crate::protocol::Choices::new();
        answers.insert("Which color?".into(), crate::protocol::Choice::One("Blue".into()));
        let response = permission_response("r1", &input, &Reply::Answers(answers), "default");
        assert_eq!(response["response"]["response"]["updatedInput"]["answers"]["Which color?"], "Blue");
        assert_eq!(response["response"]["request_id"], "r1");
        let deny = permission_response("r2", &input, &Reply::Deny("no".into()), "default");
        assert_eq!(deny["response"]["response"]["behavior"], "deny");
    }

    #[test]
    fn connectors_reach_claude_as_broker_urls_with_the_token_left_to_its_environment() {
        assert_eq!(mcp_config(&[]), None);
        let servers = [crate::agent::McpServer { name: "notes".into(), url: "http://127.0.0.1:1/api/mcp/c/1".into() }];
        let config: serde_json::Value = serde_json::from_str(&mcp_config(&servers).expect("config")).expect("json");
        assert_eq!(config["mcpServers"]["notes"]["type"], "http");
        assert_eq!(config["mcpServers"]["notes"]["url"], "http://127.0.0.1:1/api/mcp/c/1");
        assert_eq!(config["mcpServers"]["notes"]["headers"]["Authorization"], "Bearer ${MOBIUS_AGENT_TOKEN}");
    }
}
