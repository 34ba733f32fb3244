//! Warm sessions with the real CLIs: a chat's second turn runs on the process of its first
//! (the same process group, its tree's marker under `DATA_DIR/run/agents/` naming its leader);
//! a warm turn can be stopped and steered as a cold one; a kept process that was killed is
//! replaced by a cold start that resumes the session.

use std::time::Duration;

use serde_json::{Value, json};

use super::helpers::{TestApp, eventually_within};
use super::{Cli, Rig};

/// The agent process groups the server records now (each tree's marker names its leader,
/// whose pid is its group's id).
pub fn agent_groups(app: &TestApp) -> Vec<i32> {
    let leader = |path: std::path::PathBuf| -> Option<i32> {
        std::fs::read_to_string(path).ok()?.split_whitespace().next()?.parse().ok()
    };
    let mut groups: Vec<i32> = std::fs::read_dir(app.data_dir().join("run/agents"))
        .map(|entries| entries.flatten().filter_map(|e| leader(e.path())).collect())
        .unwrap_or_default();
    groups.sort_unstable();
    groups
}

/// True while `pid` runs (not gone, not a zombie).
pub fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty() && !stat.contains(") Z ") && !stat.contains(") X ")
}

/// Waits until the recorded groups are `want`.
async fn groups_become(app: &TestApp, want: impl Fn(&[i32]) -> bool, what: &str) -> Vec<i32> {
    eventually_within(Duration::from_secs(30), what, || async {
        let groups = agent_groups(app);
        want(&groups).then_some(groups)
    })
    .await
}

/// Sends `content` and waits for the turn's end; returns its `done` event.
async fn turn(app: &TestApp, token: &str, content: &str, cid: &str) -> Value {
    let mut stream = app.stream(token, "w", None).await;
    assert_eq!(app.send(token, "w", content, cid).await["status"], "started");
    let events = stream.until("done", 120).await;
    events.last().expect("done").data.clone()
}

pub async fn a_warm_second_turn_reuses_the_process_and_a_killed_one_falls_back_cold(cli: Cli) {
    let steps =
        json!({ "steps": [{ "text": "first answer" }, { "text": "second answer" }, { "text": "third answer" }] });
    let rig = Rig::start(cli, steps).await;
    let Rig { app, token, mock, .. } = &rig;
    app.chat(token, "w").await;
    assert_eq!(turn(app, token, "one", "m1").await["status"], "completed");
    let first = agent_groups(app);
    assert_eq!(first.len(), 1, "{cli:?}: the process is kept after its turn: {first:?}");
    assert!(alive(first[0]));

    assert_eq!(turn(app, token, "two", "m2").await["status"], "completed");
    assert_eq!(agent_groups(app), first, "{cli:?}: the second turn ran on the same process");
    let detail = app.detail(token, "w").await;
    // The mock answers "second answer" only when the history holds the first turn.
    assert!(detail["messages"][3]["content"].as_str().unwrap_or_default().contains("second answer"), "{detail}");

    // The kept process dies between turns: the next turn starts cold and resumes the session.
    let killed = std::process::Command::new("kill").args(["-9", "--", &format!("-{}", first[0])]).status();
    assert!(killed.expect("kill").success());
    groups_become(app, |g| g.is_empty(), "the dead process is forgotten").await;
    assert_eq!(turn(app, token, "three", "m3").await["status"], "completed");
    let after = agent_groups(app);
    assert_eq!(after.len(), 1, "{after:?}");
    assert_ne!(after, first, "{cli:?}: a new process took the turn");
    let detail = app.detail(token, "w").await;
    assert!(detail["messages"][5]["content"].as_str().unwrap_or_default().contains("third answer"), "{detail}");
    assert!(mock.last_body().contains("one") && mock.last_body().contains("three"), "the session was resumed");
}

pub async fn a_warm_turn_is_stopped_and_steered_like_a_cold_one(cli: Cli) {
    let script = json!({
        "steps": [
            { "text": "first answer" },
            { "text": "too late", "delay_s": 30 },
            { "text": "Working slowly.", "delay_s": 4 },
        ],
        "default": { "text": "Taking your note into account." },
    });
    let rig = Rig::start(cli, script).await;
    let Rig { app, token, mock, .. } = &rig;
    app.chat(token, "w").await;
    assert_eq!(turn(app, token, "one", "m1").await["status"], "completed");
    let kept = agent_groups(app);
    assert_eq!(kept.len(), 1, "{kept:?}");

    // A warm turn stopped in its slow model call.
    let mut stream = app.stream(token, "w", None).await;
    assert_eq!(app.send(token, "w", "take your time", "m2").await["status"], "started");
    stream.until("run_started", 30).await;
    mock.called(1).await;
    assert_eq!(agent_groups(app), kept, "{cli:?}: the stopped turn runs warm");
    let r: Value = app.post("/api/chat/stop", json!({ "chat_id": "w" }), Some(token)).await.json().await.expect("json");
    assert_eq!(r["stopped"], true, "{r}");
    let done = stream.until("done", 30).await;
    assert_eq!(done.last().expect("done").data["status"], "stopped");
    let detail = app.detail(token, "w").await;
    assert_eq!(detail["running"], false);
    let runs: Value = app.get("/api/chats/w/runs", Some(token)).await.json().await.expect("runs");
    assert_eq!(runs[0]["status"], "stopped");

    // The next turn (the same step again, now quick), then a warm turn steered mid-call.
    let again = turn(app, token, "again", "m3").await;
    assert_eq!(again["status"], "completed", "{cli:?}: {again}");
    let kept = agent_groups(app);
    let mut stream = app.stream(token, "w", None).await;
    assert_eq!(app.send(token, "w", "start the long task", "m4").await["status"], "started");
    stream.until("run_started", 30).await;
    mock.called(2).await;
    assert_eq!(agent_groups(app), kept, "{cli:?}: the steered turn runs warm");
    let body = json!({ "content": "also add a summary at the end", "cid": "m5", "steer": true });
    let r: Value = app.post("/api/chats/w/messages", body, Some(token)).await.json().await.expect("json");
    assert_eq!(r["status"], "steered", "{cli:?}: {r}");
    let events = stream.until("done", 90).await;
    assert!(events.iter().any(|e| e.data["type"] == "steered_into_turn"));
    assert_eq!(events.last().expect("done").data["status"], "completed");
    assert!(mock.last_body().contains("also add a summary at the end"), "{cli:?}: the model saw the steered words");
}
