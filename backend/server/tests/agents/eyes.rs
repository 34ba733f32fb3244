//! Eyes for the agent: a turn publishes two small apps and looks at them with
//! `mobius app screenshot`, through the real CLIs' shell tools.

use serde_json::{Value, json};

use super::helpers::{eventually, eventually_within, types};
use super::{Cli, REAL_CLI_WAIT, Rig, repo};

/// Writes and publishes `eyes` (logs a console error on purpose) and `ticker` (its DOM never
/// stops changing).
const MAKE_APPS: &str = r#"mkdir -p apps/eyes apps/ticker
printf '%s' '{"id":"eyes","name":"Eyes","version":"1.0.0","description":"Looked at.","entry":"index.jsx"}' > apps/eyes/mobius.json
cat > apps/eyes/index.jsx <<'JSX'
export default function App() {
  console.error("screenshot-probe: deliberate error");
  return <main style={{ padding: 24 }}><h1>Eyes test</h1><p>Rendered for the screenshot.</p></main>;
}
JSX
printf '%s' '{"id":"ticker","name":"Ticker","version":"1.0.0","description":"Never still.","entry":"index.jsx"}' > apps/ticker/mobius.json
cat > apps/ticker/index.jsx <<'JSX'
import { useEffect, useState } from "react";
export default function App() {
  const [n, setN] = useState(0);
  useEffect(() => { const t = setInterval(() => setN((x) => x + 1), 40); return () => clearInterval(t); }, []);
  return <p>tick {n}</p>;
}
JSX
mobius app apply eyes > /dev/null && mobius app apply ticker > /dev/null && echo APPLIED"#;
const LOOK: &str = "mobius app screenshot eyes";
const LOOK_AGAIN: &str = "mobius app screenshot ticker --out ticker.png; mobius app screenshot nope; mobius page screenshot https://example.com/; echo LOOKED";

/// One shell command as the provider's tool call; Codex's waits up to 30 s for the command
/// (its default hands back a running command after 10 s).
fn shell(cli: Cli, command: &str) -> Value {
    match cli {
        Cli::Claude => {
            json!({ "tool_use": { "name": "Bash", "input": { "command": command, "description": "look", "timeout": 120000 } } })
        }
        Cli::Codex => {
            json!({ "items": [{ "type": "function_call", "name": "exec_command", "call_id": format!("call_{}", command.len()),
            "arguments": json!({ "cmd": command, "workdir": "{cwd}", "yield_time_ms": 30000 }).to_string() }] })
        }
    }
}

/// Screenshot-browser processes of this server still alive.
fn browsers_of(data_dir: &std::path::Path) -> Vec<String> {
    let profiles = data_dir.join("run/browser").display().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&profiles))
        .collect()
}

pub async fn the_agent_screenshots_the_app_it_built_and_reads_its_console(cli: Cli) {
    let steps = json!([
        shell(cli, MAKE_APPS), shell(cli, LOOK), shell(cli, LOOK_AGAIN), { "text": "I looked at it." },
        shell(cli, "mobius app screenshot ticker --out again.png"), { "text": "Stopped before this." },
    ]);
    let chromium = std::env::var("MOBIUS_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let frontend = repo().join("frontend/dist").display().to_string();
    let extra = [("MOBIUS_CHROMIUM", chromium.as_str()), ("MOBIUS_FRONTEND_DIR", frontend.as_str())];
    let rig = Rig::start_with(cli, json!({ "steps": steps }), &extra).await;
    let Rig { app, token, mock, .. } = &rig;
    app.chat(token, "eyes").await;
    let mut stream = app.stream(token, "eyes", None).await;
    app.send(token, "eyes", "build two apps and look at them", "m1").await;
    let events = stream.until("done", 240).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{cli:?}: {:?}", types(&events));
    let bodies = mock.bodies().join("\n");
    // What the model saw after `mobius app screenshot eyes`.
    assert!(bodies.contains("APPLIED"), "{cli:?}: the apps were published: {bodies:.4000}");
    assert!(bodies.contains("screenshots/eyes-phone.png"), "{cli:?}: the PNG's path: {bodies:.6000}");
    assert!(bodies.contains("780x1688"), "{cli:?}: a phone's size at 2x");
    assert!(bodies.contains("screenshot-probe: deliberate error"), "{cli:?}: the app's console error came back");
    assert!(bodies.contains("settled: yes"), "{cli:?}: the still app settled");
    // The ticker never settles: it ends within the bound, with a note and a picture anyway.
    assert!(bodies.contains("did not settle within"), "{cli:?}: the busy page says so");
    assert!(bodies.contains("DOM was still changing"), "{cli:?}: and why");
    assert!(bodies.contains("app_not_found"), "{cli:?}: a missing app is a clear error");
    assert!(bodies.contains("url_off_server"), "{cli:?}: another site is refused");
    let workspace = app.data_dir().join("workspace/eyes");
    for (file, what) in [("screenshots/eyes-phone.png", "the settled app"), ("ticker.png", "the busy app")] {
        let png = std::fs::read(workspace.join(file)).unwrap_or_else(|e| panic!("{cli:?}: {what}: {e}"));
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{cli:?}: {what} is a PNG");
        let picture = image::load_from_memory(&png).expect("decodes");
        assert_eq!((picture.width(), picture.height()), (780, 1688), "{cli:?}: {what} at phone size");
    }
    // The browser is gone, and so is its profile (the owner token's session with it).
    eventually("the browser is gone", || async { browsers_of(app.data_dir()).is_empty().then_some(()) }).await;
    let profiles = app.data_dir().join("run/browser");
    let left = std::fs::read_dir(&profiles).map(|d| d.count()).unwrap_or(0);
    assert_eq!(left, 0, "{cli:?}: no profile left behind");
    // A screenshot ends with its turn: stopped while the busy page keeps it waiting, the
    // browser is killed.
    app.send(token, "eyes", "look at the ticker once more", "m2").await;
    eventually_within(REAL_CLI_WAIT, "the browser starts", || async {
        (!browsers_of(app.data_dir()).is_empty()).then_some(())
    })
    .await;
    let r: Value =
        app.post("/api/chat/stop", json!({ "chat_id": "eyes" }), Some(token)).await.json().await.expect("json");
    assert_eq!(r["stopped"], true);
    eventually("the stopped turn's browser is gone", || async { browsers_of(app.data_dir()).is_empty().then_some(()) })
        .await;
    assert!(!workspace.join("again.png").exists(), "{cli:?}: no picture after the stop");
}
