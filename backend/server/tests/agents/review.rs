//! What the owner reviews of a real Codex turn (issue 37), from the CLI's own events: its
//! `update_plan` calls become the message's plan card, updated live; its hosted web searches
//! say what they searched, and the pages they opened are the reply's sources; a sub-agent it
//! spawns is a subagent call with its own steps and report; Codex's own goals are off, so the
//! `/goal` pin is the chat's only goal and Codex starts no turn by itself.

use serde_json::{Value, json};

use crate::helpers::eventually;
use crate::{Cli, Rig, types};

/// One `update_plan` call of the scripted model.
fn update_plan(explanation: &str, steps: &[(&str, &str)]) -> Value {
    let plan: Vec<Value> = steps.iter().map(|(step, status)| json!({ "step": step, "status": status })).collect();
    json!({ "name": "update_plan", "arguments": { "explanation": explanation, "plan": plan } })
}

/// The steps of a plan card (live event or transcript block) as (text, status) pairs.
fn steps_of(card: &Value) -> Vec<(String, String)> {
    card["steps"]
        .as_array()
        .map(|steps| {
            steps
                .iter()
                .map(|s| (s["text"].as_str().unwrap_or("").to_owned(), s["status"].as_str().unwrap_or("").to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

fn pairs(steps: &[(&str, &str)]) -> Vec<(String, String)> {
    steps.iter().map(|(t, s)| ((*t).to_owned(), (*s).to_owned())).collect()
}

#[tokio::test]
#[ignore = "needs the agent CLIs; scripts/test runs it"]
async fn codex_plan_updates_become_the_messages_plan_card_live() {
    let first = [("Read the code", "completed"), ("Write notes.ts", "in_progress"), ("Run the tests", "pending")];
    let last = [("Read the code", "completed"), ("Write notes.ts", "completed"), ("Run the tests", "completed")];
    let script = json!({ "steps": [
        { "text": "Planning.", "function_call": update_plan("Three steps", &first) },
        { "function_call": update_plan("All done", &last) },
        { "text": "All three done." },
    ] });
    let rig = Rig::start(Cli::Codex, script).await;
    let Rig { app, token, mock, .. } = &rig;
    app.chat(token, "p").await;
    let mut stream = app.stream(token, "p", None).await;
    assert_eq!(app.send(token, "p", "work through it", "m1").await["status"], "started");
    let events = stream.until("done", 120).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{:?}", events.last());

    // Codex was offered its plan tool (off by default in 0.171: the server turns it on).
    let requests = mock.requests().await;
    let main = requests.iter().find(|r| r["kind"] == "main").expect("a main request");
    assert!(
        main["tools"].as_array().is_some_and(|t| t.iter().any(|t| t == "update_plan")),
        "update_plan not offered: {}",
        main["tools"]
    );
    // Each call is a live plan event, in order, with Codex's statuses mapped.
    let plans: Vec<&Value> = events.iter().map(|e| &e.data).filter(|d| d["type"] == "plan").collect();
    assert_eq!(plans.len(), 2, "two plan updates: {:?}", types(&events));
    let in_progress = [("Read the code", "completed"), ("Write notes.ts", "in_progress"), ("Run the tests", "pending")];
    assert_eq!(steps_of(plans[0]), pairs(&in_progress));
    assert_eq!(plans[0]["explanation"], "Three steps");
    assert_eq!(steps_of(plans[1]), pairs(&last));

    // The transcript keeps one card, as the last update left it.
    let detail = app.detail(token, "p").await;
    let reply = &detail["messages"][1];
    let cards: Vec<&Value> =
        reply["blocks"].as_array().expect("blocks").iter().filter(|b| b["type"] == "plan").collect();
    assert_eq!(cards.len(), 1, "one plan card: {reply}");
    assert_eq!(steps_of(cards[0]), pairs(&last));
    assert_eq!(cards[0]["explanation"], "All done");
    assert!(reply["content"].as_str().is_some_and(|c| c.contains("All three done.")), "{reply}");
}

/// Codex 0.171's goal tools: with a goal active, its app-server starts turns by itself.
const GOAL_TOOLS: [&str; 3] = ["get_goal", "create_goal", "update_goal"];

#[tokio::test]
#[ignore = "needs the agent CLIs; scripts/test runs it"]
async fn codex_keeps_no_goal_of_its_own_so_a_goal_turn_ends_and_the_next_message_is_answered_next() {
    // The model tries Codex's own goal tool on a `/goal` turn (the owner asked for a goal, which
    // is when its description says to call it), then stops. With a Codex goal active, the
    // app-server would go on by itself with turns the scripted server answers from `default`.
    let create = json!({ "name": "create_goal", "arguments": { "objective": "Ship the dark mode" } });
    let script = json!({
        "steps": [
            { "text": "Setting a goal.", "function_call": create },
            { "text": "Stopping here." },
            { "text": "Second answer." },
        ],
        "default": { "text": "Continuing the goal by myself." },
    });
    let rig = Rig::start(Cli::Codex, script).await;
    let Rig { app, token, mock, .. } = &rig;
    app.chat(token, "g").await;
    let mut stream = app.stream(token, "g", None).await;
    assert_eq!(app.send(token, "g", "/goal ship the dark mode", "m1").await["status"], "started");
    let events = stream.until("done", 120).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{:?}", events.last());

    // Never offered, and the call made anyway was refused without a goal.
    let requests = mock.requests().await;
    let offered = |r: &Value, name: &str| r["tools"].as_array().is_some_and(|t| t.iter().any(|t| t == name));
    let main: Vec<&Value> = requests.iter().filter(|r| r["kind"] == "main").collect();
    assert!(main.iter().all(|r| offered(r, "update_plan")), "the plan tool stays: {main:?}");
    for tool in GOAL_TOOLS {
        assert!(!main.iter().any(|r| offered(r, tool)), "{tool} offered: {:?}", main[0]["tools"]);
    }
    assert!(mock.bodies().iter().any(|b| b.contains("unsupported call: create_goal")), "create_goal was not refused");
    // The next message is answered at the next step: no turn ran in between.
    assert_eq!(app.send(token, "g", "go on", "m2").await["status"], "started");
    let events = stream.until("done", 120).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{:?}", events.last());
    let detail = app.detail(token, "g").await;
    let reply = detail["messages"].as_array().and_then(|m| m.last()).expect("the reply");
    assert!(reply["content"].as_str().is_some_and(|c| c.contains("Second answer.")), "{reply}");
    let main = mock.requests().await.into_iter().filter(|r| r["kind"] == "main").count();
    assert_eq!(main, 3, "Codex asked its model by itself between the owner's turns");
    // The chat's goal is the owner's pin, as the goal turn left it.
    assert_eq!(detail["goal"]["objective"], "ship the dark mode", "{}", detail["goal"]);
}

#[tokio::test]
#[ignore = "needs the agent CLIs; scripts/test runs it"]
async fn codex_web_searches_say_what_they_searched_and_opened_pages_are_sources() {
    let page = "https://tokio.rs/tokio/tutorial/select";
    let script = json!({ "steps": [{
        "web_search": [
            { "type": "search", "query": "tokio select macro",
              "sources": [{ "type": "url", "url": "https://docs.rs/tokio/latest/tokio/macro.select.html" }] },
            { "type": "open_page", "url": page },
            { "type": "find_in_page", "url": page, "pattern": "cancel" },
        ],
        "text": "Found it.",
    }] });
    let rig = Rig::start(Cli::Codex, script).await;
    let Rig { app, token, mock, .. } = &rig;
    app.chat(token, "w").await;
    let mut stream = app.stream(token, "w", None).await;
    assert_eq!(app.send(token, "w", "look it up", "m1").await["status"], "started");
    let events = stream.until("done", 120).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{:?}", events.last());
    let requests = mock.requests().await;
    assert!(requests.iter().any(|r| r["tools"].as_array().is_some_and(|t| t.iter().any(|t| t == "web_search"))));

    // Each search started before Codex knew what it did; its end said so.
    let started: Vec<&Value> =
        events.iter().map(|e| &e.data).filter(|d| d["type"] == "tool_start" && d["tool"] == "WebSearch").collect();
    assert_eq!(started.len(), 3, "{:?}", types(&events));
    assert!(started.iter().all(|s| s["input"] == ""), "the API adds a search before its action: {started:?}");
    let detail = app.detail(token, "w").await;
    let reply = &detail["messages"][1];
    let searches: Vec<&Value> = reply["blocks"]
        .as_array()
        .expect("blocks")
        .iter()
        .filter(|b| b["type"] == "tool" && b["tool"] == "WebSearch")
        .collect();
    let inputs: Vec<&str> = searches.iter().map(|b| b["input"].as_str().unwrap_or("")).collect();
    assert_eq!(inputs, ["tokio select macro", page, &format!("'cancel' in {page}")]);
    assert!(searches.iter().all(|b| b["status"] == "done"), "{searches:?}");
    // The opened page is a source (twice: opened, then searched in); the plain search names
    // none, since Codex keeps no search results.
    let sources: Vec<&str> = searches
        .iter()
        .flat_map(|b| b["sources"].as_array().into_iter().flatten())
        .filter_map(|s| s["url"].as_str())
        .collect();
    assert_eq!(sources, [page, page]);
    assert!(reply["content"].as_str().is_some_and(|c| c.contains("Found it.")), "{reply}");
}

#[tokio::test]
#[ignore = "needs the agent CLIs; scripts/test runs it"]
async fn a_codex_sub_agent_is_a_subagent_call_with_its_own_steps_and_report() {
    let agents = |name: &str, arguments: Value| json!({ "namespace": "agents", "name": name, "arguments": arguments });
    let script = json!({
        "steps": [
            { "text": "Asking a helper.", "function_call": agents("spawn_agent",
                json!({ "task_name": "find_config", "message": "Find the config file.", "fork_turns": "none" })) },
            { "function_call": agents("wait_agent", json!({ "timeout_ms": 30000 })) },
            { "text": "The helper found it." },
        ],
        "agent_steps": [{ "shell": "echo helper-ran" }, { "text": "It is in a.toml" }],
    });
    let rig = Rig::start(Cli::Codex, script).await;
    let Rig { app, token, mock, .. } = &rig;
    app.chat(token, "a").await;
    let mut stream = app.stream(token, "a", None).await;
    assert_eq!(app.send(token, "a", "find the config with a helper", "m1").await["status"], "started");
    let events = stream.until("done", 120).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{:?}", events.last());
    let requests = mock.requests().await;
    assert!(requests.iter().any(|r| r["kind"] == "agent"), "the sub-agent asked its model: {requests:?}");

    let detail = app.detail(token, "a").await;
    let reply = &detail["messages"][1];
    let blocks = reply["blocks"].as_array().expect("blocks");
    let tool = |name: &str| blocks.iter().find(|b| b["type"] == "tool" && b["tool"] == name);
    let call = tool("Agent").unwrap_or_else(|| panic!("no subagent call: {reply}"));
    assert_eq!(call["input"], "find config");
    assert_eq!(call["status"], "done", "the call ends with the sub-agent's turn: {call}");
    assert_eq!(call["output"], "It is in a.toml", "its report: {call}");
    let step = tool("Bash").unwrap_or_else(|| panic!("no step of the sub-agent: {reply}"));
    assert_eq!(step["parent_tool_use_id"], call["tool_use_id"], "{step}");
    assert!(step["output"].as_str().is_some_and(|o| o.contains("helper-ran")), "{step}");
    // The sub-agent's words are its report, not the reply's; its turn's end did not end ours.
    let content = reply["content"].as_str().unwrap_or_default();
    assert!(content.contains("The helper found it.") && !content.contains("It is in a.toml"), "{content}");
}

#[tokio::test]
#[ignore = "needs the agent CLIs; scripts/test runs it"]
async fn stopping_a_codex_turn_stops_its_sub_agents_too() {
    let agents = |name: &str, arguments: Value| json!({ "namespace": "agents", "name": name, "arguments": arguments });
    let script = json!({
        "steps": [
            { "text": "Asking a helper.", "function_call": agents("spawn_agent",
                json!({ "task_name": "slow_helper", "message": "Take your time.", "fork_turns": "none" })) },
            { "function_call": agents("wait_agent", json!({ "timeout_ms": 60000 })) },
            { "text": "Too late." },
        ],
        // The helper's model call is slow: the stop comes while it is out.
        "agent_steps": [{ "text": "Still thinking.", "shell": "echo one", "delay_s": 5 }, { "shell": "echo two" }],
    });
    let rig = Rig::start(Cli::Codex, script).await;
    let Rig { app, token, mock, .. } = &rig;
    app.chat(token, "s").await;
    let mut stream = app.stream(token, "s", None).await;
    assert_eq!(app.send(token, "s", "find it with a slow helper", "m1").await["status"], "started");
    eventually("the helper asks its model", || async {
        mock.requests().await.iter().any(|r| r["kind"] == "agent" && r["step"] == 0).then_some(())
    })
    .await;
    let r: Value = app.post("/api/chat/stop", json!({ "chat_id": "s" }), Some(token)).await.json().await.expect("json");
    assert_eq!(r["stopped"], true, "{r}");
    let events = stream.until("done", 60).await;
    assert_eq!(events.last().expect("done").data["status"], "stopped", "{:?}", events.last());
    // The helper's turn was interrupted with ours: Codex dropped its model call (the scripted
    // server finds the connection gone when it answers) and never asked for its next step.
    let requests = eventually("the helper's model call is dropped", || async {
        let requests = mock.requests().await;
        requests.iter().any(|r| r["kind"] == "client_gone").then_some(requests)
    })
    .await;
    assert!(
        !requests.iter().any(|r| r["kind"] == "agent" && r["step"] == 1),
        "the helper went on after the stop: {requests:?}"
    );
}
