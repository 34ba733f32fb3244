//! Connectors with the real CLIs (issue 36): a turn calls a tool of the scripted MCP server
//! through the server's broker; the connector's credential reaches that server and never the
//! CLI's arguments, environment, workspace or model; under `ask` the call is an approval card.

use serde_json::{Value, json};

use crate::helpers::McpMock;
use crate::{Cli, Rig};

/// The connector's credential.
const SECRET: &str = "mcp-secret-real-cli-5e2a";

/// A step calling `tool` of the `notes` connector.
fn call_step(cli: Cli, tool: &str) -> Value {
    let arguments = json!({ "text": "from the model" });
    match cli {
        Cli::Claude => json!({ "text": "Asking the notes server.",
            "tool_use": { "name": format!("mcp__notes__{tool}"), "input": arguments } }),
        // Codex names it inside the namespace its `tool_search` exposed.
        Cli::Codex => json!({ "text": "Asking the notes server.",
            "function_call": { "name": tool, "namespace": "mcp__notes", "arguments": arguments } }),
    }
}

async fn connect(rig: &Rig, mock: &McpMock) -> i64 {
    let body = json!({ "name": "notes", "url": mock.url(), "auth": "bearer", "secret": SECRET });
    let r = rig.app.post("/api/connectors", body, Some(&rig.token)).await;
    let created: Value = r.json().await.expect("json");
    assert_eq!(created["status"], "connected", "{created}");
    created["id"].as_i64().expect("id")
}

/// Every file under `dir` holding `needle`.
fn files_containing(dir: &std::path::Path, needle: &[u8]) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() && std::fs::read(&path).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
            {
                found.push(path);
            }
        }
    }
    found
}

/// Codex offers MCP tools behind its `tool_search`: the model searches first.
fn steps(cli: Cli, tool: &str, last: Value) -> Vec<Value> {
    match cli {
        Cli::Claude => vec![call_step(cli, tool), last],
        Cli::Codex => vec![
            json!({ "items": [{ "type": "tool_search_call", "call_id": "ts_1", "execution": "client",
                               "status": "completed", "arguments": { "query": "notes echo" } }] }),
            call_step(cli, tool),
            last,
        ],
    }
}

pub async fn a_turn_calls_a_connector_tool_through_the_broker_without_its_credential(cli: Cli) {
    let script = json!({ "steps": steps(cli, "echo", json!({ "text": "The server said hello." })) });
    let rig = Rig::start_with(cli, script, &[("MOBIUS_CONNECTORS_ALLOW_LOOPBACK", "1")]).await;
    let mocks = tempfile::tempdir().expect("tmp");
    let mock = McpMock::start(mocks.path(), &["--bearer", SECRET]).await;
    connect(&rig, &mock).await;
    let Rig { app, token, .. } = &rig;
    app.chat(token, "c").await;
    let mut stream = app.stream(token, "c", None).await;
    app.send(token, "c", "ask the notes server", "m1").await;
    let events = stream.until("done", 120).await;
    assert_eq!(events.last().expect("done").data["status"], "completed", "{cli:?}: {:?}", events.last());

    // The call reached the server, with the credential, through the broker.
    let seen = mock.requests().await;
    let call = seen.iter().find(|r| r["body"]["method"] == "tools/call").unwrap_or_else(|| {
        let offered: Vec<String> = rig
            .mock
            .bodies()
            .iter()
            .filter_map(|b| serde_json::from_str::<Value>(b).ok())
            .flat_map(|b| b["body"]["input"].as_array().cloned().unwrap_or_default())
            .map(|t| t.to_string().chars().take(1200).collect::<String>())
            .filter(|t| t.contains("echo"))
            .collect();
        panic!("{cli:?}: no tool call reached the MCP server; the model was offered {offered:?}")
    });
    assert_eq!(call["body"]["params"]["name"], "echo");
    assert_eq!(call["body"]["params"]["arguments"]["text"], "from the model");
    assert_eq!(call["headers"]["authorization"], format!("Bearer {SECRET}"));
    // The model got the answer, and never the credential.
    let bodies = rig.mock.bodies();
    assert!(bodies.iter().any(|b| b.contains("echo: from the model")), "{cli:?}: the tool's answer reached the model");
    assert!(bodies.iter().all(|b| !b.contains(SECRET)), "{cli:?}: the model saw the credential");
    // Nothing of the agent's holds it: not its workspace, not its CLI's folder.
    let found = files_containing(app.data_dir(), SECRET.as_bytes());
    assert!(found.is_empty(), "{cli:?}: files holding the credential: {found:?}");
    let detail = app.detail(token, "c").await.to_string();
    assert!(detail.contains("echo: from the model") && !detail.contains(SECRET), "{cli:?}: {detail}");
}

pub async fn a_connector_tool_call_asks_the_owner_under_the_ask_policy(cli: Cli) {
    // Turn 1 saves (asks); turn 2 reads with the connector marked read-only-auto-approve.
    let mut all = steps(cli, "save", json!({ "text": "done" }));
    all.extend([call_step(cli, "echo"), json!({ "text": "read without asking" })]);
    let script = json!({ "steps": all });
    let rig = Rig::start_with(cli, script, &[("MOBIUS_CONNECTORS_ALLOW_LOOPBACK", "1")]).await;
    let mocks = tempfile::tempdir().expect("tmp");
    let mock = McpMock::start(mocks.path(), &["--bearer", SECRET]).await;
    let id = connect(&rig, &mock).await;
    let Rig { app, token, .. } = &rig;
    app.chat(token, "a").await;
    let r = app.patch_json("/api/chats/a", json!({ "approval_policy": "ask" }), token).await;
    assert_eq!(r.status(), 200);
    let mut stream = app.stream(token, "a", None).await;
    app.send(token, "a", "ask the notes server", "m1").await;
    let events = stream.until("question", 30).await;
    let card = &events.last().expect("card").data;
    assert_eq!(card["kind"], "approval", "{cli:?}: the MCP call asks the owner: {card}");
    assert!(card.to_string().contains("save"), "{cli:?}: the card names the tool: {card}");
    assert!(
        mock.requests().await.iter().all(|r| r["body"]["method"] != "tools/call"),
        "{cli:?}: the tool ran before the owner answered"
    );
    let qid = card["question_id"].as_str().expect("qid");
    let r = app
        .post("/api/chats/a/messages", json!({ "answers": { "decision": "allow" }, "question_id": qid }), Some(token))
        .await;
    assert_eq!(r.status(), 202);
    stream.until("done", 120).await;
    assert!(
        mock.requests().await.iter().any(|r| r["body"]["method"] == "tools/call"),
        "{cli:?}: the approved call reached the server"
    );

    let r = app.patch_json(&format!("/api/connectors/{id}"), json!({ "read_only_auto": true }), token).await;
    assert_eq!(r.json::<Value>().await.expect("json")["read_only_auto"], true);
    app.send(token, "a", "now read it", "m2").await;
    let events = stream.until("done", 120).await;
    assert!(
        !crate::types(&events).contains(&"question".to_owned()),
        "{cli:?}: a read-only tool asked: {:?}",
        crate::types(&events)
    );
    let echoed = mock.requests().await.iter().filter(|r| r["body"]["params"]["name"] == "echo").count();
    assert_eq!(echoed, 1, "{cli:?}: the read-only call ran unasked");
}
