//! Plan mode with the real CLIs: the agent reads and proposes a plan (Claude's ExitPlanMode, a
//! read-only Codex turn's answer), the owner approves it with an edit through the API, and the
//! same run goes on to carry it out with edits allowed.

use serde_json::{Value, json};

use crate::{Cli, Rig, types, write_step};

/// What the scripted model proposes.
const PLAN: &str = "1. Write hello.txt in the agent's home";

fn plan_step(cli: Cli) -> Value {
    match cli {
        Cli::Claude => {
            json!({ "text": "Here is my plan.", "tool_use": { "name": "ExitPlanMode", "input": { "plan": PLAN } } })
        }
        Cli::Codex => json!({ "text": PLAN }),
    }
}

pub async fn a_plan_is_approved_with_an_edit_and_the_same_turn_carries_it_out(cli: Cli) {
    let script = json!({ "steps": [plan_step(cli), write_step(cli, "Writing it."), { "text": "done" }] });
    let rig = Rig::start(cli, script).await;
    let Rig { app, token, mock, .. } = &rig;
    app.chat(token, "p").await;
    // The default `full` policy: once the plan is approved the edit goes ahead unasked.
    let r = app.patch_json("/api/chats/p", json!({ "plan_mode": true }), token).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap_or_default());
    assert_eq!(app.detail(token, "p").await["plan_mode"], true);
    let mut stream = app.stream(token, "p", None).await;
    assert_eq!(app.send(token, "p", "create hello.txt", "m1").await["status"], "started");
    let events = stream.until("question", 120).await;
    let card = &events.last().expect("card").data;
    assert_eq!(card["kind"], "plan", "{cli:?}: a plan card: {card}");
    assert!(card["plan"].as_str().is_some_and(|p| p.contains("Write hello.txt")), "{cli:?}: {card}");
    let hello = app.data_dir().join("agent-home/hello.txt");
    assert!(!hello.exists(), "{cli:?}: nothing is written before the approval");

    let qid = card["question_id"].as_str().expect("qid");
    let edited = format!("{PLAN}\n2. Say done (edited by the owner)");
    let answer = json!({ "answers": { "decision": "allow", "plan": edited }, "question_id": qid });
    let r = app.post("/api/chats/p/messages", answer, Some(token)).await;
    assert_eq!(r.status(), 202);
    let events = stream.until("done", 120).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{cli:?}: {:?}", events.last());
    let kinds = types(&events);
    assert!(!kinds.contains(&"question".to_owned()), "{cli:?}: the edit asked again: {kinds:?}");
    assert!(!kinds.contains(&"run_started".to_owned()), "{cli:?}: the same run goes on: {kinds:?}");
    let written = std::fs::read_to_string(&hello).expect("hello.txt after the approval");
    assert_eq!(written.trim(), "hello from the mock");
    // The model saw the owner's edit of the plan.
    assert!(
        mock.bodies().iter().any(|b| b.contains("edited by the owner")),
        "{cli:?}: the edit never reached the model"
    );
    // The transcript keeps the answered card, with the edited plan.
    let detail = app.detail(token, "p").await;
    let reply = &detail["messages"][1];
    let card = reply["blocks"].as_array().expect("blocks").iter().find(|b| b["kind"] == "plan").expect("the card");
    assert_eq!(card["answers"]["decision"], "allow");
    assert!(card["answers"]["plan"].as_str().is_some_and(|p| p.contains("edited by the owner")), "{card}");
}
