//! Claude Code's own plan tools with the real CLI: its task tools (TaskCreate / TaskUpdate,
//! offered only because the server asks for them) become the plan card, which a later turn on
//! the same process — and one on a new process resuming the session — keeps moving; a subagent
//! started in the background stays running until the CLI says it ended.

use std::time::Duration;

use serde_json::{Value, json};

use super::helpers::{TestApp, eventually_within};
use super::warm::agent_groups;
use super::{Cli, Rig};

fn create(subject: &str) -> Value {
    json!({ "name": "TaskCreate", "input": { "subject": subject, "description": format!("{subject}, carefully") } })
}

fn update(id: &str, status: &str) -> Value {
    json!({ "name": "TaskUpdate", "input": { "taskId": id, "status": status } })
}

/// The plan card of a stored reply, as (step, status) pairs.
fn card(reply: &Value) -> Vec<(String, String)> {
    let plan = reply["blocks"].as_array().and_then(|b| b.iter().find(|b| b["type"] == "plan")).cloned();
    let steps = plan.map(|p| p["steps"].as_array().cloned().unwrap_or_default()).unwrap_or_default();
    steps
        .iter()
        .map(|s| {
            (s["text"].as_str().unwrap_or_default().to_owned(), s["status"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

fn steps(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(t, s)| ((*t).to_owned(), (*s).to_owned())).collect()
}

/// Sends `content` and waits for the turn's end; returns the plan events it streamed.
async fn turn(app: &TestApp, token: &str, content: &str, cid: &str) -> Vec<Value> {
    let mut stream = app.stream(token, "t", None).await;
    assert_eq!(app.send(token, "t", content, cid).await["status"], "started");
    let events = stream.until("done", 120).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{:?}", events.last());
    events.iter().map(|e| e.data.clone()).filter(|d| d["type"] == "plan").collect()
}

pub async fn claude_task_tools_become_the_plan_and_later_turns_move_it() {
    let script = json!({ "steps": [
        // Turn 1: two tasks created in one step (parallel calls), the first started.
        { "text": "Planning.", "tool_use": [create("Draft the outline"), create("Write the notes")] },
        { "tool_use": update("1", "in_progress") },
        { "text": "Started." },
        // Turn 2 ("go on", the kept process): the first done, the second started.
        { "tool_use": [update("1", "completed"), update("2", "in_progress")] },
        { "text": "Halfway." },
        // Turn 3, on a new process resuming the session: the second done.
        { "tool_use": update("2", "completed") },
        { "text": "All done." },
    ], "default": { "text": "Nothing more." } });
    let rig = Rig::start(Cli::Claude, script).await;
    let Rig { app, token, mock, .. } = &rig;
    app.chat(token, "t").await;

    let plans = turn(app, token, "plan my notes", "m1").await;
    let tools: Vec<String> = mock.requests().await[0]["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    let detail = app.detail(token, "t").await;
    let reply = &detail["messages"][1];
    let calls: Vec<&Value> =
        reply["blocks"].as_array().expect("blocks").iter().filter(|b| b["type"] == "tool").collect();
    assert_eq!(calls.len(), 3, "{reply}");
    assert!(calls.iter().all(|c| c["status"] == "done"), "the CLI ran its task tools (offered: {tools:?}): {reply}");
    assert_eq!(plans.len(), 3, "each change is a plan event: {plans:?}");
    assert_eq!(plans[0]["steps"].as_array().map(Vec::len), Some(1));
    assert_eq!(card(reply), steps(&[("Draft the outline", "in_progress"), ("Write the notes", "pending")]));

    let first = agent_groups(app);
    assert_eq!(first.len(), 1, "the process is kept: {first:?}");
    turn(app, token, "go on", "m2").await;
    assert_eq!(agent_groups(app), first, "the second turn ran on the same process");
    let detail = app.detail(token, "t").await;
    assert_eq!(
        card(&detail["messages"][3]),
        steps(&[("Draft the outline", "completed"), ("Write the notes", "in_progress")]),
        "the same plan moved on"
    );

    // The kept process goes; the next turn's new process resumes the session and its list.
    let killed = std::process::Command::new("kill").args(["-9", "--", &format!("-{}", first[0])]).status();
    assert!(killed.expect("kill").success());
    eventually_within(Duration::from_secs(30), "the dead process is forgotten", || async {
        agent_groups(app).is_empty().then_some(())
    })
    .await;
    turn(app, token, "finish it", "m3").await;
    assert_ne!(agent_groups(app), first, "a new process took the turn");
    let detail = app.detail(token, "t").await;
    assert_eq!(
        card(&detail["messages"][5]),
        steps(&[("Draft the outline", "completed"), ("Write the notes", "completed")]),
        "{detail}"
    );
}

const AGENT_MARKER: &str = "SUBAGENT-BACKGROUND-3";

pub async fn claude_a_background_subagent_runs_until_its_notification() {
    let script = json!({
        "steps": [
            // No `run_in_background`: Claude Code 2.1.332 starts an agent in the background.
            { "text": "Asking a subagent.", "tool_use": { "name": "Agent", "input": {
                "description": "Count the notes", "prompt": format!("{AGENT_MARKER}: count them"), "subagent_type": "general-purpose" } } },
            { "text": "It is on its way." },
            { "text": "The subagent reported back." },
        ],
        "default": { "text": "Nothing more." },
        "agent_marker": AGENT_MARKER,
        // The subagent's first step is slow, so the call is seen running after its launch.
        "agent_steps": [
            { "tool_use": { "name": "Bash", "input": { "command": "ls agent-home", "description": "list the notes" } }, "delay_s": 4 },
            { "text": "There are no notes yet." },
        ],
    });
    let rig = Rig::start(Cli::Claude, script).await;
    let Rig { app, token, .. } = &rig;
    app.chat(token, "t").await;
    let mut stream = app.stream(token, "t", None).await;
    assert_eq!(app.send(token, "t", "count my notes", "m1").await["status"], "started");
    let events: Vec<Value> = stream.until("done", 120).await.into_iter().map(|e| e.data).collect();
    assert_eq!(events.last().expect("done")["status"], "completed");
    let at = |what: &str, found: &dyn Fn(&Value) -> bool| {
        events.iter().position(found).unwrap_or_else(|| panic!("no {what} in {events:?}"))
    };
    let call = events
        .iter()
        .find(|e| e["type"] == "tool_start" && e["tool"] == "Agent")
        .and_then(|e| e["tool_use_id"].as_str())
        .expect("the Agent call")
        .to_owned();
    let ends = |id: &str| events.iter().filter(|e| e["type"] == "tool_end" && e["tool_use_id"] == id).count();
    assert_eq!(ends(&call), 1, "{events:?}");
    let call_ended = at("the call's end", &|e| e["type"] == "tool_end" && e["tool_use_id"] == call);
    // The main agent went on after the launch while the call kept running…
    let went_on = at("the words after the launch", &|e| {
        matches!(e["type"].as_str(), Some("text" | "text_final")) && e.to_string().contains("on its way")
    });
    // …and the call ended once the subagent's own step had.
    let step = at("the subagent's step", &|e| e["type"] == "tool_start" && e["parent_tool_use_id"] == call);
    let step_id = events[step]["tool_use_id"].as_str().expect("step id").to_owned();
    let step_ended = at("the step's end", &|e| e["type"] == "tool_end" && e["tool_use_id"] == step_id);
    assert!(
        went_on < call_ended && step_ended < call_ended,
        "launch {went_on}, step end {step_ended}, call end {call_ended}"
    );
    assert_eq!(events[call_ended]["is_error"], false);
    let detail = app.detail(token, "t").await;
    let reply = &detail["messages"][1];
    let stored =
        reply["blocks"].as_array().and_then(|b| b.iter().find(|b| b["tool"] == "Agent")).cloned().expect("stored");
    assert_eq!(stored["status"], "done", "{stored}");
    assert_eq!(stored["output"], "There are no notes yet.", "the agent's report is the call's result: {stored}");
    assert!(stored["elapsed_ms"].as_u64().is_some_and(|ms| ms > 0), "{stored}");
    assert!(reply.to_string().contains("The subagent reported back."), "{reply}");
}

pub async fn claude_stop_while_a_background_subagent_works_ends_the_turn_and_its_agent() {
    let script = json!({
        "steps": [
            { "text": "Asking a subagent.", "tool_use": { "name": "Agent", "input": {
                "description": "Count the notes", "prompt": format!("{AGENT_MARKER}: count them"), "subagent_type": "general-purpose" } } },
            { "text": "It is on its way." },
        ],
        "default": { "text": "Nothing more." },
        "agent_marker": AGENT_MARKER,
        // The subagent's model call outlasts the test.
        "agent_steps": [{ "text": "Too late.", "delay_s": 60 }],
    });
    let rig = Rig::start(Cli::Claude, script).await;
    let Rig { app, token, .. } = &rig;
    app.chat(token, "t").await;
    let mut stream = app.stream(token, "t", None).await;
    assert_eq!(app.send(token, "t", "count my notes", "m1").await["status"], "started");
    // The main agent went on in words: only the subagent works now (or is about to).
    loop {
        let event = stream.next(60).await;
        assert_ne!(event.data["type"], "done", "the turn ended while its subagent worked: {:?}", event.data);
        if event.data["type"] == "text_final" && event.data.to_string().contains("on its way") {
            break;
        }
    }
    let r: Value = app.post("/api/chat/stop", json!({ "chat_id": "t" }), Some(token)).await.json().await.expect("json");
    assert_eq!(r["stopped"], true);
    let runs: Value = app.get("/api/chats/t/runs", Some(token)).await.json().await.expect("runs");
    assert_eq!(runs[0]["status"], "stopped");
    let log = std::fs::read_to_string(app.data_dir().join("server.log")).expect("log");
    assert!(!log.contains("did not answer the stop in time"), "the turn did not answer the stop");
    let detail = app.detail(token, "t").await;
    let call = detail["messages"][1]["blocks"]
        .as_array()
        .and_then(|b| b.iter().find(|b| b["tool"] == "Agent"))
        .cloned()
        .expect("the call");
    assert!(call["status"] != "running" && call["status"] != "done", "{call}");
    // Nothing of the stopped agent leaks into the next turn (on the kept process, whose CLI
    // stopped the agent with the turn, or a new one).
    let mut stream = app.stream(token, "t", None).await;
    assert_eq!(app.send(token, "t", "anything else?", "m2").await["status"], "started");
    let events = stream.until("done", 120).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{:?}", events.last());
    let detail = app.detail(token, "t").await;
    let reply = detail["messages"][3].to_string();
    assert!(reply.contains("Nothing more.") && !reply.contains("Too late."), "{reply}");
}
