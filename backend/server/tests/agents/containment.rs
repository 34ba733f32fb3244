//! Issue 32 with the real CLIs: what the agent's shell commands can do to processes that are
//! not theirs (signals), and what becomes of processes they start and hide (escapees), at the
//! end of the turn and after the server was killed.

use serde_json::{Value, json};

use super::helpers::{eventually, eventually_within};
use super::{Cli, REAL_CLI_WAIT, Rig, types};

/// A step running `command` with the provider's shell tool.
fn shell_step(cli: Cli, text: &str, command: &str) -> Value {
    match cli {
        Cli::Claude => json!({ "text": text, "tool_use": { "name": "Bash",
            "input": { "command": command, "description": "run it" } } }),
        Cli::Codex => json!({ "text": text, "shell": command }),
    }
}

/// Sleeps by a system path (Claude refuses a bare `sleep`; a version manager's shim on PATH
/// runs code the sandbox denies).
fn sleeper(secs: u32) -> String {
    format!("/usr/bin/python3 -c \"import time; time.sleep({secs})\"")
}

/// Waits until `path` holds a pid; it.
async fn pid_in(path: &std::path::Path) -> String {
    eventually_within(REAL_CLI_WAIT, &format!("{} appears", path.display()), || async {
        std::fs::read_to_string(path).ok().map(|text| text.trim().to_owned()).filter(|pid| !pid.is_empty())
    })
    .await
}

fn alive(pid: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty() && !stat.contains(") Z ")
}

/// Waits until `pid` is gone (or a zombie); `what` names it when it is not.
async fn gone(pid: &str, what: &str) {
    eventually(what, || async { (!alive(pid)).then_some(()) }).await
}

/// The first chat's command holds its turn (its pid in `agent-home/victim.pid`); any later
/// chat's command (the same scripted step) asks whether it may signal the server, that turn's
/// process, a running app job and a process of its own.
fn signal_probe() -> String {
    format!(
        r#"if [ ! -s agent-home/victim.pid ]; then echo $$ > agent-home/victim.tmp && mv agent-home/victim.tmp agent-home/victim.pid && exec {sleep}; fi
r() {{ if kill -0 "$1" 2>/dev/null; then echo "REACHED:$2"; else echo "REFUSED:$2"; fi; }}
r "$(cat agent-home/server.pid)" server
r "$(cat agent-home/victim.pid)" other-turn
r "$(cat apps/*/job-state/pid)" job
{own} & own=$!
r "$own" own
kill "$own""#,
        sleep = sleeper(60),
        own = sleeper(30),
    )
}

pub async fn the_agent_signals_only_its_own_processes(cli: Cli) {
    let script = json!({ "steps": [shell_step(cli, "Probing.", &signal_probe()), { "text": "done" }] });
    let rig = Rig::start(cli, script).await;
    let Rig { app, token, .. } = &rig;
    let settings: Value = app.get("/api/settings", Some(token)).await.json().await.expect("settings");
    let home = app.data_dir().join("agent-home");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::write(home.join("server.pid"), app.pid().expect("a server process").to_string()).expect("server.pid");
    // An app job that keeps running.
    let (id, _) = app.register_app("sleeper").await;
    let job = app.data_dir().join("apps/sleeper/job.sh");
    std::fs::create_dir_all(job.parent().expect("dir")).expect("app dir");
    std::fs::write(
        &job,
        format!(
            "echo $$ > \"$APP_JOB_STATE_DIR/pid.tmp\" && mv \"$APP_JOB_STATE_DIR/pid.tmp\" \"$APP_JOB_STATE_DIR/pid\"\nexec {}\n",
            sleeper(60)
        ),
    )
    .expect("job");
    let r = app.post(&format!("/api/apps/{id}/run-job"), json!({}), Some(token)).await;
    assert_eq!(r.status(), 202);
    pid_in(&app.data_dir().join(format!("apps/{id}/job-state/pid"))).await;
    // Another chat's turn, running.
    app.chat(token, "victim").await;
    app.send(token, "victim", "hold on", "v1").await;
    let victim = pid_in(&home.join("victim.pid")).await;
    app.chat(token, "p").await;
    let mut stream = app.stream(token, "p", None).await;
    app.send(token, "p", "probe", "p1").await;
    let events = stream.until("done", 120).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{cli:?}: {:?}", types(&events));
    let transcript = app.detail(token, "p").await["messages"].to_string();
    let abi = settings["sandbox"]["abi"].as_u64().unwrap_or(0);
    if abi >= 6 {
        assert_eq!(settings["sandbox"]["signals"]["mode"], "scoped", "{settings}");
        for target in ["server", "other-turn", "job"] {
            assert!(transcript.contains(&format!("REFUSED:{target}")), "{cli:?}: {target}: {transcript}");
        }
    } else {
        assert_eq!(settings["sandbox"]["signals"]["mode"], "open", "{settings}");
    }
    assert!(transcript.contains("REACHED:own"), "{cli:?}: its own processes stay its to signal: {transcript}");
    assert!(alive(&victim), "{cli:?}: the other turn's process runs on");
    // A clean stop ends the other turn and the job.
    drop(stream);
    rig.app.stop().await;
    gone(&victim, &format!("{cli:?}: the other turn's process ends with the server")).await;
}

/// Starts, in `agent-home/escaped/`, a process in each way out of a turn: a new session after a
/// double fork, a cleared environment, the run's variables unset, the server's own binary, a
/// grandchild of a process that left, a lowered label. Each writes its pid in a file.
fn escapes() -> String {
    let sleep = sleeper(300);
    format!(
        r#"mkdir -p agent-home/escaped && cd agent-home/escaped
q() {{ "$@" < /dev/null > /dev/null 2>&1; }}
( q setsid {sleep} & echo $! > double-fork )
( q env -i /usr/bin/setsid {sleep} & echo $! > cleared-env )
( q env -u MOBIUS_RUN_ID -u MOBIUS_DATA_DIR -u MOBIUS_AGENT_TOKEN setsid {sleep} & echo $! > unset-env )
( q setsid bash -c 'echo $$ > own-binary; exec "$MOBIUS_BIN" push-deliver < <({sleep})' & )
( q setsid bash -c '{sleep} & echo $! > grandchild; wait' & )
( q setsid bash -c 'ulimit -Hx 5; exec {sleep}' & echo $! > lowered-label )
for f in double-fork cleared-env unset-env own-binary grandchild lowered-label; do while [ ! -s $f ]; do {nap}; done; done
echo ESCAPED"#,
        nap = "/usr/bin/python3 -c \"import time; time.sleep(0.05)\"",
    )
}

const ESCAPED: [&str; 6] = ["double-fork", "cleared-env", "unset-env", "own-binary", "grandchild", "lowered-label"];

async fn escaped_pids(dir: &std::path::Path) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for name in ESCAPED {
        out.push((name, pid_in(&dir.join("agent-home/escaped").join(name)).await));
    }
    out
}

pub async fn what_the_agent_starts_dies_with_its_turn_however_it_escaped(cli: Cli) {
    let script = json!({ "steps": [shell_step(cli, "Escaping.", &escapes()), { "text": "done" }] });
    let rig = Rig::start(cli, script).await;
    let Rig { app, token, .. } = &rig;
    app.chat(token, "e").await;
    let mut stream = app.stream(token, "e", None).await;
    app.send(token, "e", "escape", "m1").await;
    let events = stream.until("done", 120).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{cli:?}: {:?}", types(&events));
    let transcript = app.detail(token, "e").await["messages"].to_string();
    assert!(transcript.contains("ESCAPED"), "{cli:?}: the escapes ran: {transcript}");
    for (name, pid) in escaped_pids(app.data_dir()).await {
        gone(&pid, &format!("{cli:?}: the {name} escapee {pid} ends with its turn")).await;
    }
}

pub async fn what_the_agent_started_dies_at_the_next_start_after_the_server_was_killed(cli: Cli) {
    let command = format!("{}\n{}", escapes(), sleeper(120));
    let script =
        json!({ "steps": [shell_step(cli, "Escaping, then working.", &command)], "default": { "text": "resumed" } });
    let rig = Rig::start(cli, script).await;
    let (app, token) = (&rig.app, rig.token.clone());
    app.chat(&token, "k").await;
    app.send(&token, "k", "escape and work", "m1").await;
    let escaped = escaped_pids(app.data_dir()).await;
    let markers: Vec<_> =
        std::fs::read_dir(app.data_dir().join("run/agents")).expect("markers").flatten().map(|e| e.path()).collect();
    assert!(!markers.is_empty(), "{cli:?}: the turn's tree has a marker");
    let rig = rig.restart_after_kill().await;
    for (name, pid) in escaped {
        gone(&pid, &format!("{cli:?}: the {name} escapee {pid} ends at the server's restart")).await;
    }
    assert!(markers.iter().all(|m| !m.exists()), "{cli:?}: the dead server's markers are gone");
    // The cut turn continues by itself; a clean stop ends it.
    rig.app.stop().await;
}
