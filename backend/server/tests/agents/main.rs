//! End-to-end turns with the REAL `claude` and `codex` CLIs against the scripted model
//! servers (`tests/fake-providers`), through the real `mobius` binary.
//!
//! They need the pinned CLIs, so they are `#[ignore]`d in a plain `cargo test`;
//! `scripts/test` installs the CLIs and runs them with `--ignored` inside a loopback-only
//! network namespace. Point `MOBIUS_E2E_CLAUDE_BIN` / `MOBIUS_E2E_CODEX_BIN` at other builds
//! of the CLIs, and `MOBIUS_E2E_SERVER_BIN` at another build of the server (`fixtures.rs`
//! records its database that way).

#[path = "../api/helpers.rs"]
#[allow(dead_code)]
mod helpers;

mod connectors;
mod containment;
mod eyes;
mod fixtures;
mod memory;
mod plan;
mod planted;
mod review;
mod runtime;
mod tasks;
mod warm;

use connectors::{
    a_connector_tool_call_asks_the_owner_under_the_ask_policy,
    a_turn_calls_a_connector_tool_through_the_broker_without_its_credential,
};
use containment::{
    the_agent_signals_only_its_own_processes,
    what_the_agent_started_dies_at_the_next_start_after_the_server_was_killed,
    what_the_agent_starts_dies_with_its_turn_however_it_escaped,
};
use eyes::the_agent_screenshots_the_app_it_built_and_reads_its_console;
use memory::{
    a_note_is_written_after_idle_titles_the_chat_and_primes_new_chats,
    an_owner_turn_during_a_note_turn_is_not_held_up_by_it,
};

use plan::a_plan_is_approved_with_an_edit_and_the_same_turn_carries_it_out;
use planted::config_the_agent_plants_in_its_cli_folder_runs_nothing_and_the_ask_policy_holds;
use runtime::{
    a_chats_model_and_effort_reach_the_cli_and_codex_lists_its_models,
    a_usage_limit_parks_the_chat_until_the_reset_and_it_continues_by_itself,
    the_memory_ceiling_stops_a_runaway_command, the_plans_windows_are_recorded_from_the_clis_reports,
};
use tasks::{
    claude_a_background_subagent_runs_until_its_notification,
    claude_stop_while_a_background_subagent_works_ends_the_turn_and_its_agent,
    claude_task_tools_become_the_plan_and_later_turns_move_it,
};
use warm::{
    a_warm_second_turn_reuses_the_process_and_a_killed_one_falls_back_cold,
    a_warm_turn_is_stopped_and_steered_like_a_cold_one,
};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use helpers::{TestApp, eventually, eventually_within, types};

/// How long the suites wait for what a real CLI does (a command it runs, a turn after a restart).
const REAL_CLI_WAIT: Duration = Duration::from_secs(60);
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Cli {
    Claude,
    Codex,
}

fn repo() -> PathBuf {
    mobius::config::checkout_root()
}

fn cli_bin(cli: Cli) -> PathBuf {
    let (var, name) = match cli {
        Cli::Claude => ("MOBIUS_E2E_CLAUDE_BIN", "claude"),
        Cli::Codex => ("MOBIUS_E2E_CODEX_BIN", "codex"),
    };
    if let Ok(bin) = std::env::var(var) {
        return PathBuf::from(bin);
    }
    let dir = std::env::var("MOBIUS_CLI_DIR").unwrap_or_else(|_| "/var/cache/mobius-agent-clis".into());
    let bin = Path::new(&dir).join("node_modules/.bin").join(name);
    assert!(bin.exists(), "{} is missing: run scripts/test (it installs the pinned CLIs) or set {var}", bin.display());
    bin
}

/// A scripted model server.
struct Mock {
    child: Child,
    port: u16,
    dumps: PathBuf,
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Mock {
    async fn start(cli: Cli, dir: &Path, script: &Value) -> Self {
        let file = match cli {
            Cli::Claude => "mock_anthropic.py",
            Cli::Codex => "mock_openai.py",
        };
        let script_path = dir.join("mock-script.json");
        std::fs::write(&script_path, script.to_string()).expect("script");
        let port_file = dir.join("mock.port");
        std::fs::create_dir_all(dir.join("mock-bodies")).expect("dump dir");
        let child = Command::new("python3")
            .arg(repo().join("tests/fake-providers").join(file))
            .args(["--port", "0", "--port-file"])
            .arg(&port_file)
            .arg("--script")
            .arg(&script_path)
            .arg("--log")
            .arg(dir.join("mock-requests.jsonl"))
            .arg("--dump-dir")
            .arg(dir.join("mock-bodies"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the mock (python3)");
        // Dropping `mock` on a panic kills the child.
        let mut mock = Self { child, port: 0, dumps: dir.join("mock-bodies") };
        mock.port = eventually("the mock writes its port", || async {
            std::fs::read_to_string(&port_file).ok()?.trim().parse::<u16>().ok().filter(|p| *p != 0)
        })
        .await;
        mock
    }

    /// The full body of the newest request the model server saw.
    fn last_body(&self) -> String {
        let mut files: Vec<PathBuf> =
            std::fs::read_dir(&self.dumps).expect("dumps").flatten().map(|e| e.path()).collect();
        files.sort();
        std::fs::read_to_string(files.last().expect("a request")).expect("body")
    }

    /// Waits until the model server got the main request of `step` (the CLI is in that
    /// model call: a `delay_s` step is still answering).
    async fn called(&self, step: i64) {
        eventually(&format!("the CLI asks its model for step {step}"), || async {
            self.requests().await.iter().any(|r| r["kind"] == "main" && r["step"] == step).then_some(())
        })
        .await
    }

    /// The full bodies of every request the model server saw, oldest first.
    fn bodies(&self) -> Vec<String> {
        let mut files: Vec<PathBuf> =
            std::fs::read_dir(&self.dumps).expect("dumps").flatten().map(|e| e.path()).collect();
        files.sort();
        files.iter().filter_map(|f| std::fs::read_to_string(f).ok()).collect()
    }

    /// Every request the model server saw.
    async fn requests(&self) -> Vec<Value> {
        reqwest::get(format!("http://127.0.0.1:{}/_mock/requests", self.port))
            .await
            .expect("mock log")
            .json::<Value>()
            .await
            .ok()
            .and_then(|v| v.as_array().cloned().or_else(|| v.get("requests").and_then(Value::as_array).cloned()))
            .unwrap_or_default()
    }
}

struct Rig {
    cli: Cli,
    mock: Mock,
    app: TestApp,
    token: String,
}

/// Codex turns run on `gpt-5.5` (the owner's default): the scripted model server speaks the
/// tool format of that model, and the server's `config.toml` names no model.
async fn pick_codex_model(app: &TestApp, token: &str) {
    let defaults = json!({ "agent_defaults": { "claude": {}, "codex": { "model": "gpt-5.5" } } });
    let r = app.post("/api/settings", defaults, Some(token)).await;
    assert_eq!(r.status(), 200, "the owner's Codex model");
}

fn server_env(cli: Cli, mock_port: u16) -> Vec<(&'static str, String)> {
    server_env_with(cli, mock_port, &[])
}

fn server_env_with(cli: Cli, mock_port: u16, extra: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("MOBIUS_SKILL_DIR", repo().join("skill").display().to_string()),
        ("MOBIUS_APP_NODE_MODULES", repo().join("frontend/node_modules").display().to_string()),
        ("MOBIUS_APP_RUNTIME_DIR", repo().join("frontend/public").display().to_string()),
        ("MOBIUS_AGENT_START_TIMEOUT_SECS", "60".into()),
    ];
    match cli {
        Cli::Claude => {
            env.push(("MOBIUS_CLAUDE_BIN", cli_bin(cli).display().to_string()));
            env.push(("MOBIUS_CLAUDE_BASE_URL", format!("http://127.0.0.1:{mock_port}")));
        }
        Cli::Codex => {
            env.push(("MOBIUS_CODEX_BIN", cli_bin(cli).display().to_string()));
            env.push(("MOBIUS_OPENAI_API_URL", format!("http://127.0.0.1:{mock_port}/v1")));
            env.push(("MOBIUS_CODEX_BASE_URL", format!("http://127.0.0.1:{mock_port}/v1")));
        }
    }
    env.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
    env
}

impl Rig {
    async fn start(cli: Cli, script: Value) -> Self {
        Self::start_with(cli, script, &[]).await
    }

    /// A rig whose server also gets `extra` in its environment.
    async fn start_with(cli: Cli, script: Value, extra: &[(&'static str, &str)]) -> Self {
        Self::start_as(cli, script, extra, false).await
    }

    /// A rig whose Claude is signed in with a (mock) subscription login instead of an API key:
    /// Claude Code then reports the plan's windows (`rate_limit_event`). Codex reports them
    /// with any login.
    async fn start_on_plan(cli: Cli, script: Value, extra: &[(&'static str, &str)]) -> Self {
        Self::start_as(cli, script, extra, true).await
    }

    async fn start_as(cli: Cli, script: Value, extra: &[(&'static str, &str)], plan: bool) -> Self {
        let dir = Arc::new(tempfile::tempdir().expect("tmp"));
        let mock = Mock::start(cli, dir.path(), &script).await;
        if plan && cli == Cli::Claude {
            let config = dir.path().join("cli-auth/claude");
            std::fs::create_dir_all(&config).expect("claude config");
            let expires = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("now").as_millis()
                + 86_400_000;
            let credentials = json!({ "claudeAiOauth": { "accessToken": "sk-ant-oat01-mock", "refreshToken": "sk-ant-ort01-mock",
                "expiresAt": expires, "scopes": ["user:inference", "user:profile"], "subscriptionType": "max" } });
            std::fs::write(config.join(".credentials.json"), credentials.to_string()).expect("credentials");
        }
        let app = TestApp::spawn_process(dir, &server_env_with(cli, mock.port, extra)).await;
        let token = app.setup_owner().await;
        let id = match cli {
            Cli::Claude => "claude",
            Cli::Codex => "codex",
        };
        if !(plan && cli == Cli::Claude) {
            let key = json!({ "api_key": "sk-mock-key" });
            let r = app.post(&format!("/api/providers/{id}/api-key"), key, Some(&token)).await;
            assert_eq!(r.status(), 200, "connecting {id}: {}", r.text().await.unwrap_or_default());
        }
        let r = app.post("/api/settings", json!({ "default_provider": id }), Some(&token)).await;
        assert_eq!(r.status(), 200);
        pick_codex_model(&app, &token).await;
        Self { cli, mock, app, token }
    }

    async fn restart_after_kill(self) -> Self {
        let Rig { cli, mock, app, token } = self;
        let dir = app.kill9();
        let app = TestApp::spawn_process(dir, &server_env(cli, mock.port)).await;
        Self { cli, mock, app, token }
    }
}

/// The provider's way of writing `hello.txt` in the agent's home (the sandbox keeps the data
/// dir's own root closed).
fn write_step(cli: Cli, text: &str) -> Value {
    match cli {
        Cli::Claude => json!({ "text": text, "tool_use": { "name": "Write",
            "input": { "file_path": "{cwd}/agent-home/hello.txt", "content": "hello from the mock\n" } } }),
        Cli::Codex => json!({ "text": text,
            "apply_patch": "*** Begin Patch\n*** Add File: agent-home/hello.txt\n+hello from the mock\n*** End Patch\n" }),
    }
}

/// A step whose shell command marks `slow-started` in the agent's home, then runs for half a
/// minute (Claude refuses a bare `sleep`). The interpreter is named by its system path: a
/// version manager's shim on PATH (pyenv) runs code outside PATH, which the sandbox denies.
const SLOW_COMMAND: &str = "touch agent-home/slow-started; /usr/bin/python3 -c 'import time; time.sleep(30)'";

/// Waits until the slow command started (its marker is in the agent's home).
async fn slow_command_started(app: &TestApp) {
    let marker = app.data_dir().join("agent-home/slow-started");
    eventually_within(REAL_CLI_WAIT, "the slow command starts", || async { marker.exists().then_some(()) }).await
}

fn slow_shell_step(cli: Cli, text: &str) -> Value {
    match cli {
        Cli::Claude => {
            json!({ "text": text, "tool_use": { "name": "Bash", "input": { "command": SLOW_COMMAND, "description": "wait" } } })
        }
        Cli::Codex => json!({ "text": text, "shell": SLOW_COMMAND }),
    }
}

fn question_step(cli: Cli) -> Value {
    let options =
        json!([{ "label": "Blue", "description": "the blue one" }, { "label": "Red", "description": "the red one" }]);
    match cli {
        Cli::Claude => json!({ "tool_use": { "name": "AskUserQuestion", "input": { "questions": [
            { "question": "Which color?", "header": "Color", "multiSelect": false, "options": options } ] } } }),
        Cli::Codex => json!({ "function_call": { "name": "request_user_input", "arguments": { "questions": [
            { "id": "color", "header": "Color", "question": "Which color?", "options": options } ] } } }),
    }
}

async fn turn_writes_a_file_streams_and_the_next_message_resumes(cli: Cli) {
    let rig = Rig::start(
        cli,
        json!({ "steps": [write_step(cli, "Creating hello.txt."), { "text": "done" }, { "text": "second answer" }] }),
    )
    .await;
    let Rig { app, token, .. } = &rig;
    app.chat(token, "c").await;
    let mut stream = app.stream(token, "c", None).await;
    assert_eq!(app.send(token, "c", "create hello.txt", "m1").await["status"], "started");
    let events = stream.until("done", 90).await;
    let kinds = types(&events);
    for kind in ["user_message", "run_started", "tool_start", "tool_end", "done"] {
        assert!(kinds.contains(&kind.to_owned()), "{cli:?}: missing {kind} in {kinds:?}");
    }
    assert!(kinds.iter().any(|k| k == "text" || k == "text_final"), "{cli:?}: no text in {kinds:?}");
    assert_eq!(events.last().expect("done").data["status"], "completed", "{cli:?}: {:?}", events.last());
    let written =
        std::fs::read_to_string(app.data_dir().join("agent-home/hello.txt")).expect("hello.txt in the agent's home");
    assert_eq!(written.trim(), "hello from the mock");
    let detail = app.detail(token, "c").await;
    let reply = &detail["messages"][1];
    assert!(reply["blocks"].as_array().expect("blocks").iter().any(|b| b["type"] == "tool" && b["status"] == "done"));
    // The write's diff, from the CLI's own tool input (Claude's Write, Codex's fileChange).
    let files: Vec<&Value> =
        reply["blocks"].as_array().expect("blocks").iter().filter_map(|b| b["files"].as_array()).flatten().collect();
    assert!(
        files.iter().any(|f| f["path"] == "agent-home/hello.txt"
            && f["added"] == 1
            && f["diff"].as_str().is_some_and(|d| d.contains("+hello from the mock"))),
        "{cli:?}: no diff of hello.txt in {reply}"
    );
    assert!(reply["content"].as_str().expect("content").contains("done"), "{reply}");
    let session = detail["session_id"].as_str().expect("session id").to_owned();

    app.send(token, "c", "and again", "m2").await;
    let events = stream.until("done", 90).await;
    assert_eq!(events.last().expect("done").data["status"], "completed");
    let detail = app.detail(token, "c").await;
    assert_eq!(detail["session_id"], session.as_str(), "{cli:?}: the provider session continues");
    // The mock answers "second answer" only when the history holds the first turn.
    assert!(
        detail["messages"][3]["content"].as_str().expect("content").contains("second answer"),
        "{}",
        detail["messages"][3]
    );
}

async fn a_clarifying_question_is_answered_through_the_api(cli: Cli) {
    let rig = Rig::start(cli, json!({ "steps": [question_step(cli), { "text": "You picked it." }] })).await;
    let Rig { app, token, mock, .. } = &rig;
    app.chat(token, "q").await;
    let mut stream = app.stream(token, "q", None).await;
    app.send(token, "q", "ask me something", "m1").await;
    let events = stream.until("question", 90).await;
    let card = &events.last().expect("question").data;
    assert_eq!(card["questions"][0]["question"], "Which color?");
    let qid = card["question_id"].as_str().expect("id");
    let r = app
        .post(
            "/api/chats/q/messages",
            json!({ "answers": { "Which color?": "Blue" }, "question_id": qid }),
            Some(token),
        )
        .await;
    assert_eq!(r.status(), 202);
    let events = stream.until("done", 90).await;
    assert_eq!(events.last().expect("done").data["status"], "completed");
    assert!(types(&events).contains(&"answers_applied".to_owned()));
    let detail = app.detail(token, "q").await;
    assert!(detail["messages"][1]["content"].as_str().unwrap_or("").contains("You picked it."));
    // The model saw the owner's answer.
    let requests = mock.requests().await.iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
    assert!(requests.contains("Blue"), "{cli:?}: the answer never reached the model");
}

async fn a_message_sent_while_running_is_queued_and_runs_next(cli: Cli) {
    let rig =
        Rig::start(cli, json!({ "steps": [{ "text": "slow reply", "delay_s": 3 }, { "text": "queued reply" }] })).await;
    let Rig { app, token, .. } = &rig;
    app.chat(token, "w").await;
    let mut stream = app.stream(token, "w", None).await;
    app.send(token, "w", "first", "m1").await;
    stream.until("run_started", 30).await;
    let queued = app.send(token, "w", "second", "m2").await;
    assert_eq!(queued["status"], "queued");
    stream.until("queued_turn_starting", 90).await;
    let events = stream.until("done", 90).await;
    assert_eq!(events.last().expect("done").data["status"], "completed");
    let detail = app.detail(token, "w").await;
    let contents: Vec<String> = detail["messages"]
        .as_array()
        .expect("m")
        .iter()
        .map(|m| m["content"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(contents[0], "first");
    assert!(contents[1].contains("slow reply"));
    assert_eq!(contents[2], "second");
    assert!(contents[3].contains("queued reply"), "{contents:?}");
}

async fn stop_during_a_slow_step_returns_fast_with_the_queue(cli: Cli) {
    let rig = Rig::start(cli, json!({ "steps": [{ "text": "too late", "delay_s": 20 }] })).await;
    let Rig { app, token, mock, .. } = &rig;
    app.chat(token, "s").await;
    let mut stream = app.stream(token, "s", None).await;
    app.send(token, "s", "take your time", "m1").await;
    stream.until("run_started", 30).await;
    // The CLI is in its (slow) model call.
    mock.called(0).await;
    app.send(token, "s", "then this", "m2").await;
    let r: Value = app.post("/api/chat/stop", json!({ "chat_id": "s" }), Some(token)).await.json().await.expect("json");
    assert_eq!(r["stopped"], true);
    assert_eq!(r["cleared_pending_cids"], json!(["m2"]));
    let detail = app.detail(token, "s").await;
    assert_eq!(detail["running"], false);
    assert_eq!(detail["pending_messages"], json!([]));
    let runs: Value = app.get("/api/chats/s/runs", Some(token)).await.json().await.expect("runs");
    assert_eq!(runs[0]["status"], "stopped");
    // The turn itself recorded the stop (the route did not have to close the run for it).
    let log = std::fs::read_to_string(app.data_dir().join("server.log")).expect("log");
    assert!(!log.contains("did not answer the stop in time"), "{cli:?}: the turn did not answer the stop");
}

async fn a_server_killed_mid_turn_keeps_the_transcript_and_queue_and_continues_by_itself(cli: Cli) {
    let script = json!({ "steps": [slow_shell_step(cli, "Working on it.")], "default": { "text": "resumed fine" } });
    let rig = Rig::start(cli, script).await;
    let (app, token) = (&rig.app, rig.token.clone());
    app.chat(&token, "k").await;
    let mut stream = app.stream(&token, "k", None).await;
    app.send(&token, "k", "long job", "m1").await;
    stream.until("tool_start", 90).await;
    slow_command_started(app).await;
    // The live message reaches the disk within the snapshot interval: wait until it has.
    eventually("the live message reaches the disk", || async {
        let live = app.detail(&token, "k").await["messages"].to_string();
        (live.contains("Working on it.") || live.contains("time.sleep")).then_some(())
    })
    .await;
    assert_eq!(app.send(&token, "k", "queued before the crash", "m2").await["status"], "queued");
    drop(stream);
    let rig = rig.restart_after_kill().await;
    let (app, token) = (&rig.app, &rig.token);
    // The cut turn continues by itself after the boot (once), the queued message going first.
    let detail = eventually_within(Duration::from_secs(120), "the cut turn continues and ends", || async {
        let detail = app.detail(token, "k").await;
        (detail["running"] == false && detail["messages"].to_string().contains("resumed fine")).then_some(detail)
    })
    .await;
    assert_eq!(detail["running"], false, "{cli:?}: {detail}");
    assert_eq!(detail["messages"][0]["content"], "long job");
    let partial = detail["messages"][1].to_string();
    assert!(partial.contains("Working on it.") || partial.contains("time.sleep"), "{cli:?}: snapshot lost: {partial}");
    assert!(partial.contains("continues by itself"), "{partial}");
    assert_eq!(detail["pending_messages"], json!([]));
    let texts = detail["messages"].to_string();
    assert!(texts.contains("queued before the crash") && texts.contains("resumed fine"), "{texts}");
    let runs: Value = app.get("/api/chats/k/runs", Some(token)).await.json().await.expect("runs");
    assert_eq!((runs[0]["status"].as_str(), runs[1]["status"].as_str()), (Some("completed"), Some("interrupted")));
    // The model got the conversation from before the crash: the session was resumed.
    let body = rig.mock.last_body();
    assert!(
        body.contains("long job") && body.contains("queued before the crash"),
        "{cli:?}: the session did not resume"
    );
}

/// The provider's way of running `mobius remind` (the real binary, on the agent's PATH).
fn remind_step(cli: Cli) -> Value {
    let command = "mobius remind --in 2s check the oven";
    match cli {
        Cli::Claude => {
            json!({ "text": "Setting it.", "tool_use": { "name": "Bash", "input": { "command": command, "description": "set a reminder" } } })
        }
        Cli::Codex => json!({ "text": "Setting it.", "shell": command }),
    }
}

/// The owner's scheduled prompt, then the agent's own reminder, each come back as a turn of the
/// real CLI in their chat, through the normal turn path (journaled and streamed).
async fn a_scheduled_turn_and_a_reminder_land_in_their_chat(cli: Cli) {
    let script = json!({
        "steps": [{ "text": "Good morning from the schedule." }, remind_step(cli), { "text": "Reminder set." }],
        "default": { "text": "Checked the oven." },
    });
    let rig = Rig::start(cli, script).await;
    let (app, token) = (&rig.app, &rig.token);
    app.chat(token, "s").await;
    let mut stream = app.stream(token, "s", None).await;
    let made = app
        .post("/api/schedules", json!({ "prompt": "scheduled hello", "in": "1s", "chat_id": "s" }), Some(token))
        .await;
    assert_eq!(made.status(), 201, "{}", made.text().await.unwrap_or_default());
    let events = stream.until("done", 90).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{cli:?}: {:?}", events.last());
    let detail = app.detail(token, "s").await;
    assert_eq!(detail["messages"][0]["content"], "scheduled hello");
    assert!(
        detail["messages"][0]["cid"].as_str().is_some_and(|c| c.starts_with("schedule-")),
        "{}",
        detail["messages"][0]
    );
    assert!(detail["messages"][1]["content"].as_str().unwrap_or_default().contains("Good morning from the schedule."));

    app.send(token, "s", "remind me about the oven", "m1").await;
    let events = stream.until("done", 90).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{cli:?}: {:?}", events.last());
    let events = stream.until("done", 90).await;
    assert_eq!(
        events.last().expect("done").data["status"],
        "completed",
        "{cli:?}: the reminder's turn: {:?}",
        events.last()
    );
    let detail = app.detail(token, "s").await;
    let reminder = &detail["messages"][4];
    assert!(reminder["content"].as_str().unwrap_or_default().contains("check the oven"), "{cli:?}: {reminder}");
    assert!(reminder["cid"].as_str().is_some_and(|c| c.starts_with("schedule-")), "{reminder}");
    assert!(
        detail["messages"][5]["content"].as_str().unwrap_or_default().contains("Checked the oven."),
        "{}",
        detail["messages"][5]
    );
    // The schedule runs close once the scheduler hears of the turns' ends (just after `done`).
    let list: Value = eventually("the schedule runs close", || async {
        let list: Value = app.get("/api/schedules", Some(token)).await.json().await.expect("schedules");
        list["schedules"].as_array().is_some_and(|l| l.iter().all(|s| s["last_status"] != "running")).then_some(list)
    })
    .await;
    let schedules = list["schedules"].as_array().expect("list");
    assert_eq!(schedules.len(), 2);
    for s in schedules {
        assert_eq!(s["last_status"], "succeeded", "{s}");
    }
    assert!(
        schedules.iter().any(|s| s["created_by"] == "agent") && schedules.iter().any(|s| s["created_by"] == "owner")
    );
}

/// Claude Code's task tools become the plan card, kept across turns and a new process.
#[tokio::test]
#[ignore = "needs the agent CLIs; scripts/test runs it"]
async fn claude_task_tools_become_the_plan() {
    claude_task_tools_become_the_plan_and_later_turns_move_it().await
}

/// A subagent started in the background stays running until the CLI says it ended.
#[tokio::test]
#[ignore = "needs the agent CLIs; scripts/test runs it"]
async fn claude_a_background_subagent_runs_until_it_ends() {
    claude_a_background_subagent_runs_until_its_notification().await
}

/// Stop while only a background subagent works ends the turn (and the agent) at once.
#[tokio::test]
#[ignore = "needs the agent CLIs; scripts/test runs it"]
async fn claude_stop_while_a_background_subagent_works() {
    claude_stop_while_a_background_subagent_works_ends_the_turn_and_its_agent().await
}

/// A refused key: Claude Code would retry ten times over about three minutes; the turn ends
/// on the first refusal with one error that points at the provider's settings.
#[tokio::test]
#[ignore = "needs the agent CLIs; scripts/test runs it"]
async fn claude_a_refused_key_fails_the_turn_at_once_with_its_fix() {
    let refused = json!({ "error": { "status": 401, "type": "authentication_error", "message": "invalid x-api-key" } });
    let rig = Rig::start(Cli::Claude, json!({ "steps": [refused.clone()], "default": refused })).await;
    let Rig { app, token, mock, .. } = &rig;
    app.chat(token, "k").await;
    let mut stream = app.stream(token, "k", None).await;
    app.send(token, "k", "hello", "m1").await;
    let events = stream.until("done", 60).await;
    let done = events.last().expect("done");
    assert_eq!(done.data["status"], "failed", "{:?}", done.data);
    let errors: Vec<&Value> = events.iter().map(|e| &e.data).filter(|d| d["type"] == "error").collect();
    assert_eq!(errors.len(), 1, "one error card, not one per retry: {errors:?}");
    assert_eq!(errors[0]["fix"], "provider_settings");
    assert_eq!(errors[0]["resumable"], false);
    let main_calls = mock.requests().await.into_iter().filter(|r| r["kind"] == "main").count();
    assert!(main_calls <= 2, "the CLI kept retrying a refused key: {main_calls} requests");
    let detail = app.detail(token, "k").await;
    let blocks = &detail["messages"][1]["blocks"];
    assert_eq!(blocks.as_array().map(Vec::len), Some(1), "{detail}");
    assert_eq!(blocks[0]["fix"], "provider_settings", "{detail}");
}

/// Text streamed after the last live snapshot was committed to the journal and seen by every
/// client; a `kill -9` right then must not lose it: boot folds it into the interrupted message.
#[tokio::test]
#[ignore = "needs the agent CLIs; scripts/test runs it"]
async fn claude_a_kill_after_the_last_snapshot_keeps_the_text_clients_saw() {
    use sqlx::Connection;
    let text: String = (0..16).map(|i| format!("Piece {i:02} of a slowly streamed answer. ")).collect();
    let script = json!({ "steps": [{ "text": text, "chunk_delay_s": 0.2 }], "default": { "text": "resumed" } });
    let rig = Rig::start(Cli::Claude, script).await;
    let (app, token) = (&rig.app, rig.token.clone());
    app.chat(&token, "f").await;
    let mut stream = app.stream(&token, "f", None).await;
    app.send(&token, "f", "tell me slowly", "m1").await;
    let url = format!("sqlite://{}?mode=ro", app.data_dir().join("db/mobius.sqlite3").display());
    let mut db = sqlx::SqliteConnection::connect(&url).await.expect("read the database");
    let (mut seen, mut last_seq) = (String::new(), 0i64);
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        assert!(Instant::now() < deadline, "the text never got ahead of the snapshot");
        let event = stream.next(90).await;
        assert_ne!(event.data["type"], "done", "the turn ended before the test could kill the server");
        if event.data["type"] == "text" {
            seen.push_str(event.data["content"].as_str().unwrap_or_default());
            last_seq = event.id.unwrap_or(last_seq);
        }
        if seen.len() < 120 {
            continue;
        }
        let snapshot: Option<i64> = sqlx::query_scalar("SELECT upto_seq FROM chat_live WHERE chat_id = 'f'")
            .fetch_optional(&mut db)
            .await
            .expect("live row");
        // Kill while the newest text the client has is past the last snapshot.
        if snapshot.is_some_and(|upto| upto < last_seq) {
            break;
        }
    }
    drop(db);
    drop(stream);
    let rig = rig.restart_after_kill().await;
    let detail = rig.app.detail(&rig.token, "f").await;
    let reply = detail["messages"][1].clone();
    let content = reply["content"].as_str().expect("content");
    assert!(content.contains(seen.trim_end()), "lost what the client saw.\nseen:  {seen:?}\nkept:  {content:?}");
    // Closed with the restart's note (the chat then continues by itself).
    assert!(reply.to_string().contains("restarted during this turn"), "{reply}");
}

const APP_MANIFEST: &str = r#"{"id":"hello-agent","name":"Hello Agent","version":"1.0.0","description":"Built by the agent.","entry":"index.jsx"}"#;
const APP_INDEX: &str = "import { useState } from \"react\";\nexport default function App() {\n  const [n, setN] = useState(0);\n  return <button onClick={() => setN(n + 1)}>Hello from the agent: {n}</button>;\n}\n";

/// The provider's way of writing the app's two files.
fn write_app_step(cli: Cli) -> Value {
    match cli {
        Cli::Claude => json!({ "text": "Writing the app.", "tool_use": [
            { "name": "Write", "input": { "file_path": "{cwd}/apps/hello-agent/mobius.json", "content": APP_MANIFEST } },
            { "name": "Write", "input": { "file_path": "{cwd}/apps/hello-agent/index.jsx", "content": APP_INDEX } },
        ] }),
        Cli::Codex => {
            let plus = |text: &str| text.lines().map(|l| format!("+{l}\n")).collect::<String>();
            json!({ "text": "Writing the app.", "apply_patch": format!(
                "*** Begin Patch\n*** Add File: apps/hello-agent/mobius.json\n{}*** Add File: apps/hello-agent/index.jsx\n{}*** End Patch\n",
                plus(APP_MANIFEST), plus(APP_INDEX)) })
        }
    }
}

fn apply_step(cli: Cli) -> Value {
    match cli {
        Cli::Claude => {
            json!({ "tool_use": { "name": "Bash", "input": { "command": "mobius app apply hello-agent", "description": "publish the app" } } })
        }
        Cli::Codex => json!({ "shell": "mobius app apply hello-agent" }),
    }
}

async fn the_agent_builds_an_app_and_publishes_it_with_mobius_app_apply(cli: Cli) {
    let script = json!({ "steps": [write_app_step(cli), apply_step(cli), { "text": "Your app is ready." }] });
    let rig = Rig::start(cli, script).await;
    let Rig { app, token, .. } = &rig;
    app.chat(token, "b").await;
    let mut stream = app.stream(token, "b", None).await;
    app.send(token, "b", "build me a counter app", "m1").await;
    let events = stream.until("done", 120).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{cli:?}: {:?}", types(&events));
    let outputs: Vec<String> =
        events.iter().filter(|e| e.data["type"] == "tool_output").map(|e| e.data["content"].to_string()).collect();
    let announced = events
        .iter()
        .find(|e| e.data["type"] == "app_updated")
        .unwrap_or_else(|| panic!("{cli:?}: no app_updated in {:?}; tool outputs: {outputs:?}", types(&events)));
    assert_eq!(announced.data["slug"], "hello-agent");
    let apps: Value = app.get("/api/apps", Some(token)).await.json().await.expect("apps");
    let built = apps.as_array().expect("list").iter().find(|a| a["slug"] == "hello-agent").expect("the app is listed");
    assert_eq!(built["chat_id"], "b", "the building chat is remembered");
    let module = app.get(&format!("/api/apps/{}/module", built["id"]), Some(token)).await;
    assert_eq!(module.status(), 200);
    assert!(module.text().await.expect("code").contains("Hello from the agent"));
    let detail = app.detail(token, "b").await;
    let transcript = detail["messages"].to_string();
    assert!(transcript.contains("mobius app apply hello-agent"), "the tool call is in the transcript");
    assert!(
        transcript.contains("\\\"mode\\\"") || transcript.contains("created"),
        "{cli:?}: the receipt is in the tool output: {transcript}"
    );
}

async fn a_message_can_be_steered_into_the_running_turn(cli: Cli) {
    let script = json!({ "steps": [{ "text": "Working slowly.", "delay_s": 4 }], "default": { "text": "Taking your note into account." } });
    let rig = Rig::start(cli, script).await;
    let Rig { app, token, mock, .. } = &rig;
    app.chat(token, "st").await;
    let mut stream = app.stream(token, "st", None).await;
    app.send(token, "st", "start the long task", "m1").await;
    stream.until("run_started", 30).await;
    // The CLI is in its (slow) model call.
    mock.called(0).await;
    let r = app
        .post(
            "/api/chats/st/messages",
            json!({ "content": "also add a summary at the end", "cid": "m2", "steer": true }),
            Some(token),
        )
        .await;
    assert_eq!(r.status(), 202);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["status"], "steered", "{cli:?}: {body}");
    let events = stream.until("done", 90).await;
    assert!(types(&events).contains(&"steered_into_turn".to_owned()), "{cli:?}: {:?}", types(&events));
    assert_eq!(events.last().expect("done").data["status"], "completed");
    let detail = app.detail(token, "st").await;
    let messages = detail["messages"].as_array().expect("messages");
    let users: Vec<&str> =
        messages.iter().filter(|m| m["role"] == "user").map(|m| m["content"].as_str().unwrap_or("")).collect();
    assert_eq!(users, vec!["start the long task", "also add a summary at the end"]);
    assert_eq!(messages.last().expect("last")["role"], "assistant", "the reply comes after the steered message");
    let runs: Value = app.get("/api/chats/st/runs", Some(token)).await.json().await.expect("runs");
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "one turn, not a queued second one");
    assert!(mock.last_body().contains("also add a summary at the end"), "{cli:?}: the model saw the steered words");
}

/// Claude steers by interrupting the current step: a shell command it cut short reads as
/// stopped, not failed. (Codex takes a steer without interrupting the step.)
#[tokio::test]
#[ignore = "needs the agent CLIs; scripts/test runs it"]
async fn claude_a_steer_during_a_shell_step_marks_that_step_stopped() {
    let script = json!({ "steps": [slow_shell_step(Cli::Claude, "Running it.")], "default": { "text": "Noted." } });
    let rig = Rig::start(Cli::Claude, script).await;
    let Rig { app, token, .. } = &rig;
    app.chat(token, "sb").await;
    let mut stream = app.stream(token, "sb", None).await;
    app.send(token, "sb", "run the long command", "m1").await;
    stream.until("tool_start", 60).await;
    slow_command_started(app).await;
    let r = app
        .post(
            "/api/chats/sb/messages",
            json!({ "content": "never mind that", "cid": "m2", "steer": true }),
            Some(token),
        )
        .await;
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["status"], "steered", "{body}");
    let events = stream.until("done", 90).await;
    assert_eq!(events.last().expect("done").data["status"], "completed");
    let detail = app.detail(token, "sb").await;
    let tools: Vec<Value> = detail["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|m| m["blocks"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool")
        .collect();
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert_eq!(tools[0]["status"], "stopped", "the interrupted command: {}", tools[0]);
}

/// The agent's process tree runs in the sandbox: `cat secret.key` (and the data key, the
/// database, the other provider's credentials, `run/`) fails, its own folders still work, and
/// Settings says so.
async fn the_agent_cannot_read_the_servers_secrets(cli: Cli) {
    let other = match cli {
        Cli::Claude => "codex",
        Cli::Codex => "claude",
    };
    // From the data directory (the turn's cwd is its workspace), and through a link the agent
    // plants in its workspace: the sandbox judges where a path ends.
    let probe = format!(
        "ln -s \"$MOBIUS_DATA_DIR/secret.key\" \"$MOBIUS_WORKSPACE/key-link\"; \
         if cat \"$MOBIUS_WORKSPACE/key-link\" >/dev/null 2>&1; then echo \"READ:key-\"link; else echo \"DENIED:key-\"link; fi; \
         cd \"$MOBIUS_DATA_DIR\" && for f in secret.key data.key db/mobius.sqlite3 cli-auth/{other}/auth-probe uploads/elsewhere/files/private.txt run/agents/*; do \
         if cat \"$f\" >/dev/null 2>&1; then echo \"READ:$f\"; else echo \"DENIED:$f\"; fi; done; \
         cat /etc/hostname >/dev/null && echo SYSTEM-OK; echo ok > apps/probe.txt && echo WROTE"
    );
    let step = match cli {
        Cli::Claude => json!({ "text": "Looking around.", "tool_use": { "name": "Bash",
            "input": { "command": probe, "description": "look around" } } }),
        Cli::Codex => json!({ "text": "Looking around.", "shell": probe }),
    };
    let rig = Rig::start(cli, json!({ "steps": [step, { "text": "done" }] })).await;
    let Rig { app, token, .. } = &rig;
    let settings: Value = app.get("/api/settings", Some(token)).await.json().await.expect("settings");
    assert_eq!(settings["sandbox"]["mode"], "landlock", "{cli:?}: {settings}");
    std::fs::create_dir_all(app.data_dir().join("cli-auth").join(other)).expect("other provider dir");
    std::fs::write(app.data_dir().join("cli-auth").join(other).join("auth-probe"), "credentials").expect("probe");
    // Another chat's attachments stay closed too (a turn reads only its own chat's files).
    std::fs::create_dir_all(app.data_dir().join("uploads/elsewhere/files")).expect("uploads");
    std::fs::write(app.data_dir().join("uploads/elsewhere/files/private.txt"), "private").expect("upload");
    app.chat(token, "s").await;
    let mut stream = app.stream(token, "s", None).await;
    app.send(token, "s", "look around", "m1").await;
    let events = stream.until("done", 120).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{cli:?}: {:?}", types(&events));
    let transcript = app.detail(token, "s").await["messages"].to_string();
    for f in [
        "secret.key",
        "data.key",
        "db/mobius.sqlite3",
        &format!("cli-auth/{other}/auth-probe"),
        "uploads/elsewhere/files/private.txt",
        "run/agents/",
        "key-link",
    ] {
        assert!(transcript.contains(&format!("DENIED:{f}")), "{cli:?}: {f} was not denied: {transcript}");
        assert!(!transcript.contains(&format!("READ:{f}")), "{cli:?}: {f} was read: {transcript}");
    }
    assert!(transcript.contains("SYSTEM-OK") && transcript.contains("WROTE"), "{cli:?}: {transcript}");
    assert!(app.data_dir().join("apps/probe.txt").is_file());
}

/// A PNG of `w`×`h` (the sizes make it recognisable in the model server's log).
fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbaImage::from_fn(w, h, |x, y| image::Rgba([(x * 7) as u8, (y * 11) as u8, 120, 255]));
    let mut out = Vec::new();
    image::DynamicImage::ImageRgba8(img)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .expect("png");
    out
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// The owner attaches a picture and a text file: the model request carries the picture as an
/// image and the words name both files where the agent can read them. The agent then publishes
/// an image with `mobius media publish` and shows one it wrote in its reply; both are served
/// from the chat's media.
async fn attached_images_reach_the_model_and_the_agents_images_come_back(cli: Cli) {
    const PUBLISH: &str = "mobius media publish agent-home/plot.png --alt Plot";
    let publish = match cli {
        Cli::Claude => json!({ "text": "Publishing.", "tool_use": { "name": "Bash",
            "input": { "command": PUBLISH, "description": "publish the plot" } } }),
        Cli::Codex => json!({ "text": "Publishing.", "shell": PUBLISH }),
    };
    let script = json!({ "steps": [publish, { "text": "Here it is: ![plot](agent-home/plot.png)" }] });
    let rig = Rig::start(cli, script).await;
    let Rig { app, token, mock, .. } = &rig;
    app.chat(token, "im").await;
    std::fs::create_dir_all(app.data_dir().join("agent-home")).expect("home");
    std::fs::write(app.data_dir().join("agent-home/plot.png"), png(12, 9)).expect("plot");
    let picture = png(37, 23);
    let mut form = Vec::new();
    for (name, bytes) in [("screen.png", picture.as_slice()), ("notes.txt", b"remember the milk\n".as_slice())] {
        form.extend_from_slice(
            format!("--b\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{name}\"\r\n\r\n").as_bytes(),
        );
        form.extend_from_slice(bytes);
        form.extend_from_slice(b"\r\n");
    }
    form.extend_from_slice(b"--b--\r\n");
    let r = app
        .client
        .post(app.url("/api/chats/im/uploads"))
        .bearer_auth(token)
        .header("content-type", "multipart/form-data; boundary=b")
        .body(form)
        .send()
        .await
        .expect("upload");
    assert_eq!(r.status(), 200, "{cli:?}: {}", r.text().await.unwrap_or_default());
    let mut stream = app.stream(token, "im", None).await;
    let r = app
        .post(
            "/api/chats/im/messages",
            json!({ "content": "what is on my screen?", "cid": "m1", "attachments": ["screen.png", "notes.txt"] }),
            Some(token),
        )
        .await;
    assert_eq!(r.status(), 202);
    let events = stream.until("done", 120).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{cli:?}: {:?}", types(&events));

    let requests = mock.requests().await;
    let first = requests.iter().find(|r| r["kind"] == "main").expect("a model request");
    let images = first["images"].as_array().cloned().unwrap_or_default();
    assert!(
        images.iter().any(|i| i["png_size"] == json!([37, 23]) || i["sha256"] == sha256_hex(&picture)),
        "{cli:?}: the model request carried no picture of the upload: {images:?}"
    );
    if cli == Cli::Claude {
        assert!(images.iter().any(|i| i["sha256"] == sha256_hex(&picture)), "Claude gets the bytes as uploaded");
    }
    let body = mock.bodies().into_iter().find(|b| b.contains("what is on my screen?")).expect("the prompt");
    assert!(body.contains("uploads/im/files/notes.txt"), "{cli:?}: the text file is named by its path");

    let outputs: Vec<String> =
        events.iter().filter(|e| e.data["type"] == "tool_output").map(|e| e.data["content"].to_string()).collect();
    let published = outputs
        .iter()
        .find_map(|o| {
            o.split("/api/chats/im/media/").nth(1).map(|rest| rest.split(['"', '\\']).next().unwrap_or("").to_owned())
        })
        .unwrap_or_else(|| panic!("{cli:?}: mobius media publish printed no media_url: {outputs:?}"));
    let media: Value = app.post("/api/chats/im/media-token", json!({}), Some(token)).await.json().await.expect("token");
    let media = media["token"].as_str().expect("token");
    let r = app.get(&format!("/api/chats/im/media/{published}?token={media}"), None).await;
    assert_eq!(r.status(), 200, "{cli:?}: the published image is served");
    assert_eq!(r.headers()["content-type"], "image/png");
    let detail = app.detail(token, "im").await;
    let reply = detail["messages"][1]["content"].as_str().expect("reply");
    let shown = reply.split("![plot](").nth(1).and_then(|r| r.split(')').next()).expect("the image link");
    assert!(shown.starts_with("/api/chats/im/media/plot-"), "{cli:?}: the reply's image is chat media: {reply}");
    assert_eq!(app.get(&format!("{shown}?token={media}"), None).await.status(), 200);
}

/// Python from the toolbox, inside the sandbox, in the chat's workspace: a CSV from `shared/`
/// becomes a bar chart (a PNG written with the standard library alone), published to the chat.
/// `python3` is the bare name on the agent's curated `PATH`, never a version manager's shim.
const CHART_PY: &str = r#"python3 - <<'PY'
import csv, struct, zlib
rows = list(csv.reader(open('shared/sales.csv')))[1:]
vals = [int(r[1]) for r in rows]
w, h = 10 * len(vals), max(vals)
raw = b''.join(b'\x00' + b''.join((b'\x20\x60\xc0' if h - y <= v else b'\xff\xff\xff') * 10 for v in vals) for y in range(h))
def chunk(t, d):
    return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')
open('chart.png', 'wb').write(png)
PY
mobius media publish chart.png --alt Sales"#;

async fn python_turns_a_csv_into_a_chart_in_the_workspace_and_publishes_it(cli: Cli) {
    let step = match cli {
        Cli::Claude => json!({ "text": "Charting.", "tool_use": { "name": "Bash",
            "input": { "command": CHART_PY, "description": "chart the CSV" } } }),
        Cli::Codex => json!({ "text": "Charting.", "shell": CHART_PY }),
    };
    let rig = Rig::start(cli, json!({ "steps": [step, { "text": "Here is the chart: ![sales](chart.png)" }] })).await;
    let Rig { app, token, .. } = &rig;
    std::fs::create_dir_all(app.data_dir().join("shared")).expect("shared");
    std::fs::write(app.data_dir().join("shared/sales.csv"), "month,sales\nJan,30\nFeb,50\nMar,20\n").expect("csv");
    app.chat(token, "csv").await;
    let mut stream = app.stream(token, "csv", None).await;
    app.send(token, "csv", "chart shared/sales.csv", "m1").await;
    let events = stream.until("done", 120).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{cli:?}: {:?}", types(&events));
    let outputs: Vec<String> =
        events.iter().filter(|e| e.data["type"] == "tool_output").map(|e| e.data["content"].to_string()).collect();
    let published = outputs
        .iter()
        .find_map(|o| {
            o.split("/api/chats/csv/media/").nth(1).map(|r| r.split(['"', '\\']).next().unwrap_or("").to_owned())
        })
        .unwrap_or_else(|| panic!("{cli:?}: the chart was not published: {outputs:?}"));
    let media: Value =
        app.post("/api/chats/csv/media-token", json!({}), Some(token)).await.json().await.expect("token");
    let media = media["token"].as_str().expect("token");
    let r = app.get(&format!("/api/chats/csv/media/{published}?token={media}"), None).await;
    assert_eq!(r.status(), 200, "{cli:?}: the published chart is served");
    let chart = image::load_from_memory(&r.bytes().await.expect("bytes")).expect("a PNG");
    assert_eq!((chart.width(), chart.height()), (30, 50), "{cli:?}: one bar per row, as tall as the largest value");
    // Made in the chat's workspace, where the owner finds it.
    let listed: Value = app.get("/api/chats/csv/workspace", Some(token)).await.json().await.expect("workspace");
    assert!(listed["files"].as_array().expect("files").iter().any(|f| f["path"] == "chart.png"), "{cli:?}: {listed}");
    let reply = app.detail(token, "csv").await["messages"][1]["content"].as_str().expect("reply").to_owned();
    assert!(
        reply.contains("![sales](/api/chats/csv/media/chart-"),
        "{cli:?}: the reply shows the workspace's chart: {reply}"
    );
}

/// An app job written in the original's style (bash calling Python and the CLI itself): it
/// reads `$DATA_DIR/service-token.txt` as the original's jobs do, writes its app's storage and
/// sends a notification with it from Python, logs under `$DATA_DIR/cron-logs/`, and runs the
/// connected CLI headless against the scripted model server, inside its sandbox; all of it is in
/// the run's log. Its token is 403 on another app's storage. The same job cannot read the
/// server's key, another app's folder or data, or the other provider's login; a job that must
/// read the key fails, and its run says why.
async fn an_app_job_runs_the_cli_itself_and_reaches_nothing_else(cli: Cli) {
    // `codex exec` may ask without tools (a side call to the scripted server): the same words.
    let hello = "Hello from the job's agent.";
    let rig = Rig::start(cli, json!({ "steps": [{ "text": hello }], "side_text": hello })).await;
    let Rig { app, token, .. } = &rig;
    let (id, _) = app.register_app("briefing").await;
    let (neighbour, _) = app.register_app("neighbour").await;
    let (snoop, _) = app.register_app("snoop").await;
    let (other, ask) = match cli {
        Cli::Claude => ("codex", r#"claude -p "Say hello." --output-format text"#),
        Cli::Codex => ("claude", r#"codex exec --skip-git-repo-check "Say hello.""#),
    };
    let real = app.data_dir().display().to_string();
    let briefing = r#"probe() { if cat "$1" >/dev/null 2>&1; then echo "READ:$2"; else echo "DENIED:$2"; fi; }
probe "$DATA_DIR/secret.key" secret-in-view
probe "REAL/secret.key" secret
probe "REAL/apps/neighbour/job.sh" neighbour
probe "REAL/app-data/NEIGHBOUR/notes.json" neighbour-data
probe "REAL/cli-auth/OTHER/probe" other-login
mkdir -p "$DATA_DIR/cron-logs"
python3 - "$1" <<'PY' 2>&1 | tee -a "$DATA_DIR/cron-logs/briefing.log"
import json, os, sys, urllib.error, urllib.request
app = sys.argv[1]
token = open(os.path.join(os.environ["DATA_DIR"], "service-token.txt")).read().strip()
def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(os.environ["API_BASE_URL"] + path, data=data, method=method,
                                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
print("python-ok")
print("stored=%d" % call("PUT", "/api/storage/apps/%s/briefing/today.json" % app, {"headline": "Sunny"}))
print("notified=%d" % call("POST", "/api/notifications/send", {"title": "Briefing ready", "body": "Sunny today."}))
print("other-app=%d" % call("GET", "/api/storage/apps/NEIGHBOUR/notes.json"))
PY
echo "ANSWER:$(ASK 2>&1 | tail -n 3 | tr '\n' ' ')"
"#
    .replace("REAL", &real)
    .replace("NEIGHBOUR", &neighbour.to_string())
    .replace("OTHER", other)
    .replace("ASK", ask);
    let snooping = format!("set -e\ncat {real}/secret.key >/dev/null\necho never\n");
    for (slug, body) in [("neighbour", "echo neighbour\n".to_owned()), ("briefing", briefing), ("snoop", snooping)] {
        let path = app.data_dir().join("apps").join(slug).join("job.sh");
        std::fs::create_dir_all(path.parent().expect("dir")).expect("app dir");
        std::fs::write(&path, body).expect("job");
    }
    let data = app.data_dir().join(format!("app-data/{neighbour}"));
    std::fs::create_dir_all(&data).expect("neighbour data");
    std::fs::write(data.join("notes.json"), "{}").expect("neighbour notes");
    std::fs::create_dir_all(app.data_dir().join("cli-auth").join(other)).expect("other login");
    std::fs::write(app.data_dir().join("cli-auth").join(other).join("probe"), "login").expect("probe");
    let run_job = |app_id: i64| async move {
        let r = app.post(&format!("/api/apps/{app_id}/run-job"), json!({}), Some(token)).await;
        assert_eq!(r.status(), 202);
        let started: Value = r.json().await.expect("json");
        let (schedule, run) =
            (started["schedule_id"].as_i64().expect("schedule"), started["run_id"].as_i64().expect("run"));
        let done: Value = eventually_within(Duration::from_secs(120), "the job run ends", || async {
            let run: Value =
                app.get(&format!("/api/schedules/{schedule}/runs/{run}"), Some(token)).await.json().await.expect("run");
            (run["status"] != "running").then_some(run)
        })
        .await;
        let log = app.get(&format!("/api/schedules/{schedule}/runs/{run}/log"), Some(token)).await;
        (done, log.text().await.unwrap_or_default())
    };
    let (done, log) = run_job(id).await;
    let output = done["output"].as_str().unwrap_or_default();
    assert_eq!(done["status"], "succeeded", "{cli:?}: {done}");
    for said in [
        "DENIED:secret-in-view",
        "DENIED:secret",
        "DENIED:neighbour",
        "DENIED:neighbour-data",
        "DENIED:other-login",
        "python-ok",
        "stored=204",
        "notified=200",
        "other-app=403",
        // What it logged under $DATA_DIR/cron-logs/, added to the run's log.
        "--- $DATA_DIR/cron-logs/briefing.log ---\npython-ok\nstored=204",
    ] {
        assert!(output.contains(said) && log.contains(said), "{cli:?}: {said:?} missing: {output}");
    }
    let answer = output.lines().find_map(|l| l.strip_prefix("ANSWER:")).unwrap_or_default();
    assert!(answer.contains("Hello from the job's agent."), "{cli:?}: the CLI answered in the job: {output}");
    let stored: Value = app
        .get(&format!("/api/storage/apps/{id}/briefing/today.json"), Some(token))
        .await
        .json()
        .await
        .expect("stored");
    assert_eq!(stored["headline"], "Sunny");
    let notes: Value = app.get("/api/notifications", Some(token)).await.json().await.expect("notifications");
    assert!(notes.to_string().contains("Briefing ready"), "{notes}");

    // A job that needs the server's key fails, and its run says so.
    let (done, _) = run_job(snoop).await;
    assert_eq!(done["status"], "failed", "{cli:?}: {done}");
    assert!(done["reason"].as_str().is_some_and(|r| r.contains("exited with status 1")), "{done}");
    assert!(done["output"].as_str().is_some_and(|o| o.contains("Permission denied") && !o.contains("never")), "{done}");
}

macro_rules! for_both {
    ($($name:ident),* $(,)?) => {
        mod claude {
            $(
                #[tokio::test]
                #[ignore = "needs the agent CLIs; scripts/test runs it"]
                async fn $name() { super::$name(super::Cli::Claude).await }
            )*
        }
        mod codex {
            $(
                #[tokio::test]
                #[ignore = "needs the agent CLIs; scripts/test runs it"]
                async fn $name() { super::$name(super::Cli::Codex).await }
            )*
        }
    };
}

for_both!(
    a_plan_is_approved_with_an_edit_and_the_same_turn_carries_it_out,
    the_agent_screenshots_the_app_it_built_and_reads_its_console,
    a_turn_calls_a_connector_tool_through_the_broker_without_its_credential,
    a_connector_tool_call_asks_the_owner_under_the_ask_policy,
    the_agent_signals_only_its_own_processes,
    what_the_agent_starts_dies_with_its_turn_however_it_escaped,
    what_the_agent_started_dies_at_the_next_start_after_the_server_was_killed,
    the_memory_ceiling_stops_a_runaway_command,
    a_usage_limit_parks_the_chat_until_the_reset_and_it_continues_by_itself,
    the_plans_windows_are_recorded_from_the_clis_reports,
    a_chats_model_and_effort_reach_the_cli_and_codex_lists_its_models,
    a_warm_second_turn_reuses_the_process_and_a_killed_one_falls_back_cold,
    a_warm_turn_is_stopped_and_steered_like_a_cold_one,
    a_note_is_written_after_idle_titles_the_chat_and_primes_new_chats,
    an_owner_turn_during_a_note_turn_is_not_held_up_by_it,
    turn_writes_a_file_streams_and_the_next_message_resumes,
    a_clarifying_question_is_answered_through_the_api,
    a_message_sent_while_running_is_queued_and_runs_next,
    stop_during_a_slow_step_returns_fast_with_the_queue,
    a_server_killed_mid_turn_keeps_the_transcript_and_queue_and_continues_by_itself,
    the_agent_builds_an_app_and_publishes_it_with_mobius_app_apply,
    a_message_can_be_steered_into_the_running_turn,
    the_agent_cannot_read_the_servers_secrets,
    attached_images_reach_the_model_and_the_agents_images_come_back,
    python_turns_a_csv_into_a_chart_in_the_workspace_and_publishes_it,
    an_app_job_runs_the_cli_itself_and_reaches_nothing_else,
    a_scheduled_turn_and_a_reminder_land_in_their_chat,
    config_the_agent_plants_in_its_cli_folder_runs_nothing_and_the_ask_policy_holds,
);
