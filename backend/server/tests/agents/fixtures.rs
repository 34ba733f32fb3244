//! Real turns of both CLIs (text, thinking, tools, a question, a steer, a stop), recorded from
//! one server, and folded back: the journal of every chat, folded with the server's own
//! live-message fold, must give exactly the transcript the server stored.
//!
//! The same run writes the shared fixture the unit folds read (Rust in `tests/api/fixture.rs`,
//! the PWA's reducer in `frontend/src/chat/fixture.test.ts`):
//!
//! ```sh
//! MOBIUS_RECORD_FIXTURES=1 cargo test -p mobius --test agents -- --ignored fixtures
//! ```
//!
//! With `MOBIUS_E2E_SERVER_BIN` naming another build and `MOBIUS_RECORD_RELEASE_DB=<file>`,
//! it records a database made by that build instead (a run is left running by a kill at the
//! end): `tests/fixtures/release-db.sql` was made so from the release before the typed protocol.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::helpers::{TestApp, eventually, eventually_within, fold_transcript, journal, transcript};
use super::{Cli, Mock, REAL_CLI_WAIT, cli_bin, question_step, repo, write_step};

/// A shell step that marks `marker` in the workspace, then runs for `secs` seconds.
fn marked_slow_step(cli: Cli, text: &str, marker: &str, secs: u32) -> Value {
    let command = format!("touch agent-home/{marker}; /usr/bin/python3 -c 'import time; time.sleep({secs})'");
    match cli {
        Cli::Claude => {
            json!({ "text": text, "tool_use": { "name": "Bash", "input": { "command": command, "description": "wait" } } })
        }
        Cli::Codex => json!({ "text": text, "shell": command }),
    }
}

/// One data directory, one server, and a scripted model server per CLI.
struct Lab {
    dir: Arc<tempfile::TempDir>,
    mocks: Vec<Mock>,
    app: Option<TestApp>,
    token: String,
    scenarios: usize,
}

impl Lab {
    fn new() -> Self {
        Self {
            dir: Arc::new(tempfile::tempdir().expect("tmp")),
            mocks: Vec::new(),
            app: None,
            token: String::new(),
            scenarios: 0,
        }
    }

    fn app(&self) -> &TestApp {
        self.app.as_ref().expect("a running server")
    }

    /// Fresh model servers with these scripts, and the server restarted over the same data.
    async fn scenario(&mut self, claude: Value, codex: Value) {
        self.scenarios += 1;
        self.mocks.clear();
        let mocks = self.dir.path().join(format!("mocks-{}", self.scenarios));
        for (cli, script) in [(Cli::Claude, &claude), (Cli::Codex, &codex)] {
            let dir = mocks.join(format!("{cli:?}"));
            std::fs::create_dir_all(&dir).expect("mock dir");
            self.mocks.push(Mock::start(cli, &dir, script).await);
        }
        if let Some(app) = self.app.take() {
            app.stop().await;
        }
        let env = vec![
            ("MOBIUS_SKILL_DIR", repo().join("skill").display().to_string()),
            ("MOBIUS_AGENT_START_TIMEOUT_SECS", "60".into()),
            ("MOBIUS_CLAUDE_BIN", cli_bin(Cli::Claude).display().to_string()),
            ("MOBIUS_CLAUDE_BASE_URL", format!("http://127.0.0.1:{}", self.mocks[0].port)),
            ("MOBIUS_CODEX_BIN", cli_bin(Cli::Codex).display().to_string()),
            ("MOBIUS_CODEX_BASE_URL", format!("http://127.0.0.1:{}/v1", self.mocks[1].port)),
        ];
        let app = TestApp::spawn_process(self.dir.clone(), &env).await;
        if self.token.is_empty() {
            self.token = app.setup_owner().await;
            for id in ["claude", "codex"] {
                let r = app
                    .post(
                        &format!("/api/providers/{id}/api-key"),
                        json!({ "api_key": "sk-mock-key" }),
                        Some(&self.token),
                    )
                    .await;
                assert_eq!(r.status(), 200, "connecting {id}: {}", r.text().await.unwrap_or_default());
            }
            super::pick_codex_model(&app, &self.token).await;
        }
        self.app = Some(app);
    }

    /// A chat that runs on `cli`.
    async fn chat(&self, id: &str, cli: Cli) {
        let app = self.app();
        app.chat(&self.token, id).await;
        let provider = match cli {
            Cli::Claude => "claude",
            Cli::Codex => "codex",
        };
        let r = app
            .client
            .patch(app.url(&format!("/api/chats/{id}")))
            .bearer_auth(&self.token)
            .json(&json!({ "provider": provider }))
            .send()
            .await
            .expect("patch");
        assert_eq!(r.status(), 200);
    }

    /// Waits until the workspace holds `marker` (a slow command started).
    async fn marked(&self, marker: &str) {
        let path = self.app().data_dir().join("agent-home").join(marker);
        eventually_within(REAL_CLI_WAIT, &format!("{marker} appears"), || async { path.exists().then_some(()) }).await
    }
}

fn tools_script(cli: Cli) -> Value {
    let mut first = write_step(cli, "Creating hello.txt.");
    match cli {
        Cli::Claude => first["thinking"] = "I will write the file first.".into(),
        Cli::Codex => first["reasoning"] = "I will write the file first.".into(),
    }
    json!({ "steps": [first, { "text": "Done: **hello.txt** is written." }] })
}

async fn run_all(lab: &mut Lab) -> Vec<String> {
    let mut chats = Vec::new();
    let both = [Cli::Claude, Cli::Codex];

    lab.scenario(tools_script(Cli::Claude), tools_script(Cli::Codex)).await;
    let token = lab.token.clone();
    for cli in both {
        let id = format!("tools-{cli:?}").to_lowercase();
        lab.chat(&id, cli).await;
        let mut stream = lab.app().stream(&token, &id, None).await;
        lab.app().send(&token, &id, "create hello.txt", "m1").await;
        let done = stream.until("done", 120).await;
        assert_eq!(done.last().expect("done").data["status"], "completed", "{cli:?}");
        chats.push(id);
    }

    let question = |cli| {
        let mut ask = question_step(cli);
        if cli == Cli::Claude {
            // A second question where several options may be picked.
            let sizes = json!({ "question": "Which sizes?", "header": "Sizes", "multiSelect": true,
                "options": [{ "label": "S", "description": "small" }, { "label": "M", "description": "medium" }] });
            if let Some(list) = ask["tool_use"]["input"]["questions"].as_array_mut() {
                list.push(sizes);
            }
        }
        json!({ "steps": [ask, { "text": "You picked Blue." }] })
    };
    lab.scenario(question(Cli::Claude), question(Cli::Codex)).await;
    for cli in both {
        let id = format!("question-{cli:?}").to_lowercase();
        lab.chat(&id, cli).await;
        let mut stream = lab.app().stream(&token, &id, None).await;
        lab.app().send(&token, &id, "ask me something", "m1").await;
        let card = stream.until("question", 120).await.pop().expect("question").data;
        let answers = match cli {
            Cli::Claude => json!({ "Which color?": "Blue", "Which sizes?": ["S", "M"] }),
            Cli::Codex => json!({ "Which color?": "Blue" }),
        };
        let answer = json!({ "answers": answers, "question_id": card["question_id"] });
        let r = lab.app().post(&format!("/api/chats/{id}/messages"), answer, Some(&token)).await;
        assert_eq!(r.status(), 202);
        let done = stream.until("done", 120).await;
        assert_eq!(done.last().expect("done").data["status"], "completed", "{cli:?}");
        chats.push(id);
    }

    let steer = |cli| {
        let step = marked_slow_step(cli, "Working slowly.", &format!("slow-steer-{cli:?}"), 3);
        json!({ "steps": [step], "default": { "text": "Taking your note into account." } })
    };
    lab.scenario(steer(Cli::Claude), steer(Cli::Codex)).await;
    for cli in both {
        let id = format!("steer-{cli:?}").to_lowercase();
        lab.chat(&id, cli).await;
        let mut stream = lab.app().stream(&token, &id, None).await;
        lab.app().send(&token, &id, "start the long task", "m1").await;
        stream.until("tool_start", 120).await;
        lab.marked(&format!("slow-steer-{cli:?}")).await;
        let body = json!({ "content": "also add a summary at the end", "cid": "m2", "steer": true });
        let r: Value =
            lab.app().post(&format!("/api/chats/{id}/messages"), body, Some(&token)).await.json().await.expect("json");
        assert_eq!(r["status"], "steered", "{cli:?}: {r}");
        let done = stream.until("done", 120).await;
        assert_eq!(done.last().expect("done").data["status"], "completed", "{cli:?}");
        chats.push(id);
    }

    let stop =
        |cli| json!({ "steps": [marked_slow_step(cli, "Running the long job.", &format!("slow-stop-{cli:?}"), 30)] });
    lab.scenario(stop(Cli::Claude), stop(Cli::Codex)).await;
    for cli in both {
        let id = format!("stop-{cli:?}").to_lowercase();
        lab.chat(&id, cli).await;
        let mut stream = lab.app().stream(&token, &id, None).await;
        lab.app().send(&token, &id, "run the long job", "m1").await;
        stream.until("tool_start", 120).await;
        lab.marked(&format!("slow-stop-{cli:?}")).await;
        assert_eq!(lab.app().send(&token, &id, "then this", "m2").await["status"], "queued");
        let r: Value =
            lab.app().post("/api/chat/stop", json!({ "chat_id": id }), Some(&token)).await.json().await.expect("json");
        assert_eq!(r["cleared_pending_cids"], json!(["m2"]), "{cli:?}: {r}");
        let done = stream.until("done", 30).await;
        assert_eq!(done.last().expect("done").data["status"], "stopped", "{cli:?}");
        chats.push(id);
    }
    chats
}

/// Leaves a Claude turn running mid-tool with a message queued, and kills the server.
async fn kill_mid_turn(lab: &mut Lab) {
    let step = json!({ "steps": [marked_slow_step(Cli::Claude, "Working on it.", "slow-killed", 30)] });
    lab.scenario(step, json!({ "steps": [] })).await;
    let token = lab.token.clone();
    lab.chat("killed-claude", Cli::Claude).await;
    let mut stream = lab.app().stream(&token, "killed-claude", None).await;
    lab.app().send(&token, "killed-claude", "long job", "m1").await;
    stream.until("tool_start", 120).await;
    lab.marked("slow-killed").await;
    // The live message reaches the disk within the snapshot interval.
    eventually("the live message reaches the disk", || async {
        let detail = lab.app().detail(&token, "killed-claude").await;
        detail["messages"].to_string().contains("Working on it.").then_some(())
    })
    .await;
    assert_eq!(lab.app().send(&token, "killed-claude", "queued before the crash", "m2").await["status"], "queued");
    drop(stream);
    lab.mocks.clear();
    let app = lab.app.take().expect("app");
    app.kill9();
}

fn dump(db: &Path, to: &Path) {
    let out = std::process::Command::new("sqlite3").arg(db).arg(".dump").output().expect("sqlite3");
    assert!(out.status.success(), "sqlite3 .dump failed");
    std::fs::write(to, out.stdout).expect("write the dump");
}

#[tokio::test]
#[ignore = "needs the agent CLIs; scripts/test runs it"]
async fn fixtures_real_turns_fold_into_the_transcript_the_server_stored() {
    let mut lab = Lab::new();
    let chats = run_all(&mut lab).await;
    let other_build = std::env::var_os("MOBIUS_E2E_SERVER_BIN").is_some();
    let mut lines = Vec::new();
    for chat in &chats {
        let cli = if chat.ends_with("claude") { "claude" } else { "codex" };
        let events = journal(lab.app(), &lab.token, chat).await;
        let stored = transcript(lab.app(), &lab.token, chat).await;
        assert!(stored.len() >= 2, "{chat}: {stored:?}");
        if !other_build {
            assert_eq!(fold_transcript(&events), stored, "{chat}: the journal does not fold into the transcript");
        }
        for event in &events {
            lines.push(json!({ "cli": cli, "chat": chat, "event": event }).to_string());
        }
        lines.push(json!({ "cli": cli, "chat": chat, "transcript": stored }).to_string());
    }
    if std::env::var_os("MOBIUS_RECORD_FIXTURES").is_some() && !other_build {
        let path: PathBuf = repo().join("tests/fixtures/chat-turns.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").expect("write the fixture");
    }
    if let Some(to) = std::env::var_os("MOBIUS_RECORD_RELEASE_DB") {
        kill_mid_turn(&mut lab).await;
        dump(&lab.dir.path().join("db/mobius.sqlite3"), Path::new(&to));
    }
}
