//! `/goal` (issue 37): a goal turn pins its goal on the chat, the agent's plan updates move the
//! pin, the owner dismisses it, a plan with every step done (those a long plan's card leaves out
//! too) unpins it, and nobody but whoever may change the chat's settings can touch it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mobius::auth::Scope;
use mobius::protocol::ChatEvent;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, eventually, journal, script};

/// A stream-json Claude imitation that keeps the words it was given (`prompt.json` in its
/// working folder) and makes a two-step plan with TodoWrite: the first step done, the second
/// in progress — or, when the words say "finish", both done.
fn fake_planner(dir: &Path) -> PathBuf {
    let todo = |id: &str, first: &str, second: &str| {
        format!(
            r#"printf '{{"type":"assistant","message":{{"id":"m-{id}","content":[{{"type":"tool_use","id":"{id}","name":"TodoWrite","input":{{"todos":[{{"content":"Write the code","status":"{first}","activeForm":"Writing"}},{{"content":"Test it","status":"{second}","activeForm":"Testing"}}]}}}}]}},"session_id":"%s"}}\n' "$sid"
printf '{{"type":"user","message":{{"content":[{{"type":"tool_result","tool_use_id":"{id}","content":"ok"}}]}},"session_id":"%s"}}\n' "$sid"
"#
        )
    };
    let first = todo("t1", "in_progress", "pending");
    let halfway = todo("t2", "completed", "in_progress");
    let finished = todo("t3", "completed", "completed");
    script(
        dir,
        "fake-claude",
        &format!(
            r#"IFS= read -r init
IFS= read -r user
printf '%s' "$user" > prompt.json
sid="s-$MOBIUS_CHAT_ID"
printf '{{"type":"system","subtype":"init","session_id":"%s"}}\n' "$sid"
{first}case "$user" in
  *finish*) {finished};;
  *) {halfway};;
esac
printf '{{"type":"assistant","message":{{"id":"m9","content":[{{"type":"text","text":"on it"}}]}},"session_id":"%s"}}\n' "$sid"
printf '{{"type":"result","subtype":"success","is_error":false,"session_id":"%s","usage":{{"input_tokens":5,"output_tokens":7}}}}\n' "$sid"
cat >/dev/null"#
        ),
    )
}

/// A stream-json Claude imitation whose TodoWrite plan has 60 steps: first the first step in
/// progress, then the first 50 done and the last 10 still to do.
fn fake_long_planner(dir: &Path) -> PathBuf {
    let todo_write = |id: &str, completed: usize| {
        let todos: Vec<Value> = (1..=60)
            .map(|n| {
                let status = match n {
                    n if n <= completed => "completed",
                    1 => "in_progress",
                    _ => "pending",
                };
                json!({ "content": format!("Step {n}"), "status": status, "activeForm": "Working" })
            })
            .collect();
        let call = json!({ "type": "assistant", "session_id": "SID", "message": { "id": format!("m-{id}"),
            "content": [{ "type": "tool_use", "id": id, "name": "TodoWrite", "input": { "todos": todos } }] } });
        let result = json!({ "type": "user", "session_id": "SID",
            "message": { "content": [{ "type": "tool_result", "tool_use_id": id, "content": "ok" }] } });
        let line = |v: Value| format!("printf '{}\\n' \"$sid\"\n", v.to_string().replace("\"SID\"", "\"%s\""));
        line(call) + &line(result)
    };
    let (first, later) = (todo_write("t1", 0), todo_write("t2", 50));
    script(
        dir,
        "fake-claude",
        &format!(
            r#"IFS= read -r init
IFS= read -r user
sid="s-$MOBIUS_CHAT_ID"
printf '{{"type":"system","subtype":"init","session_id":"%s"}}\n' "$sid"
{first}{later}printf '{{"type":"result","subtype":"success","is_error":false,"session_id":"%s","usage":{{"input_tokens":5,"output_tokens":7}}}}\n' "$sid"
cat >/dev/null"#
        ),
    )
}

async fn idle_detail(app: &TestApp, token: &str, chat: &str) -> Value {
    eventually("the turn ends", || async {
        let detail = app.detail(token, chat).await;
        (detail["running"] == false).then_some(detail)
    })
    .await
}

/// The goals the journal announced, in order (`None`: unpinned).
async fn goal_events(app: &TestApp, token: &str, chat: &str) -> Vec<Option<mobius::protocol::GoalPin>> {
    journal(app, token, chat)
        .await
        .into_iter()
        .filter_map(|e| match e.event {
            ChatEvent::GoalChanged { goal } => Some(goal),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_goal_is_pinned_follows_the_plan_and_is_dismissed_by_the_owner_only() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let bin = fake_planner(dir.path());
    let app = TestApp::spawn_in(dir, |c| c.claude_bin = bin).await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    app.chat(&token, "g").await;
    app.chat(&token, "other").await;
    // An app (registered before the writer's next commits, which refresh the server's app rows).
    let (_, app_token) = app.register_app("notes").await;
    assert!(app.detail(&token, "g").await["goal"].is_null(), "no goal before one is set");

    app.send(&token, "g", "/goal ship the dark mode", "c1").await;
    let detail = idle_detail(&app, &token, "g").await;
    // Set, then moved on by each plan update: the first step done, the second in progress.
    let goal = &detail["goal"];
    assert_eq!(goal["objective"], "ship the dark mode", "{detail}");
    let steps = goal["plan"]["steps"].as_array().expect("the plan's steps");
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0]["status"], "completed");
    assert_eq!(steps[1]["status"], "in_progress");
    let events = goal_events(&app, &token, "g").await;
    assert_eq!(events.len(), 3, "set, then two plan updates: {events:?}");
    assert!(events[0].as_ref().is_some_and(|g| g.plan.is_none()), "{events:?}");
    // The owner's message is kept as typed; the agent was asked to plan the goal out.
    assert_eq!(detail["messages"][0]["content"], "/goal ship the dark mode");
    let prompt = std::fs::read_to_string(app.data_dir().join("workspace/g/prompt.json")).expect("the CLI's input");
    assert!(prompt.contains("The owner set this goal: ship the dark mode") && !prompt.contains("/goal"), "{prompt}");

    // Nobody but whoever may change the chat's settings touches it.
    let agent = app.run_token(&token, Scope::Agent, "g");
    assert_error(app.delete_with("/api/chats/g/goal", &agent).await, StatusCode::FORBIDDEN, "agent_not_allowed").await;
    assert_error(app.delete_with("/api/chats/g/goal", &app_token).await, StatusCode::FORBIDDEN, "forbidden").await;
    assert_error(app.delete_with("/api/chats/other/goal", &token).await, StatusCode::NOT_FOUND, "goal_not_found").await;
    assert_error(app.delete_with("/api/chats/nope/goal", &token).await, StatusCode::NOT_FOUND, "chat_not_found").await;
    assert!(!app.detail(&token, "g").await["goal"].is_null(), "a refused dismissal leaves the goal");

    let r = app.delete_with("/api/chats/g/goal", &token).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert!(app.detail(&token, "g").await["goal"].is_null());
    assert_eq!(goal_events(&app, &token, "g").await.last(), Some(&None), "other devices hear it");
    assert_error(app.delete_with("/api/chats/g/goal", &token).await, StatusCode::NOT_FOUND, "goal_not_found").await;

    // A plan with every step done unpins its goal by itself.
    app.send(&token, "g", "/goal finish the release", "c2").await;
    let detail = idle_detail(&app, &token, "g").await;
    assert!(detail["goal"].is_null(), "{detail}");
    let events = goal_events(&app, &token, "g").await;
    assert_eq!(
        events.iter().rev().nth(2).and_then(|g| g.as_ref()).map(|g| g.objective.as_str()),
        Some("finish the release")
    );
    assert_eq!(events.last(), Some(&None));
    // A plain message after it pins nothing.
    app.send(&token, "g", "thanks", "c3").await;
    assert!(idle_detail(&app, &token, "g").await["goal"].is_null());
}

#[tokio::test]
async fn a_goal_stays_pinned_while_steps_past_the_fiftieth_are_still_to_do() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let bin = fake_long_planner(dir.path());
    let app = TestApp::spawn_in(dir, |c| c.claude_bin = bin).await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    app.chat(&token, "long").await;

    app.send(&token, "long", "/goal do all sixty", "c1").await;
    let detail = idle_detail(&app, &token, "long").await;
    // Steps 1-50 are done, 51-60 are not: the goal is not done.
    let plan = &detail["goal"]["plan"];
    assert_eq!(detail["goal"]["objective"], "do all sixty", "{detail}");
    let steps = plan["steps"].as_array().expect("the plan's steps");
    assert_eq!(steps.len(), 50);
    assert_eq!((&steps[0]["text"], &steps[49]["text"]), (&json!("Step 11"), &json!("Step 60")), "{plan}");
    assert_eq!(plan["omitted"], json!({ "pending": 0, "in_progress": 0, "completed": 10 }), "{plan}");
    // The transcript's card counts them too.
    let blocks = detail["messages"][1]["blocks"].as_array().expect("the reply's blocks");
    let card = blocks.iter().find(|b| b["type"] == "plan").expect("the plan card");
    assert_eq!(card["omitted"], plan["omitted"], "{detail}");
}
