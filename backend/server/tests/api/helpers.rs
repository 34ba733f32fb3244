//! `TestApp`: spawns the real server in-process on an ephemeral port with its own data dir.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mobius::config::Config;
use reqwest::{Client, Response, StatusCode};
use serde_json::{Value, json};
use tokio::sync::oneshot;

pub const USERNAME: &str = "owner";

/// How long [`eventually`] waits before it gives up.
pub const EVENTUALLY: std::time::Duration = std::time::Duration::from_secs(30);
/// How often [`eventually`] looks again.
const EVENTUALLY_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

/// Waits until `check` answers `Some`, looking again every 20 ms, and returns what it answered;
/// panics naming `what` after [`EVENTUALLY`]. The one way the suites wait for state they
/// cannot subscribe to (no fixed sleeps, no hand-written polls).
#[allow(dead_code)] // Not every suite that includes this file waits on something.
pub async fn eventually<T, F>(what: &str, check: impl FnMut() -> F) -> T
where
    F: std::future::Future<Output = Option<T>>,
{
    eventually_within(EVENTUALLY, what, check).await
}

/// [`eventually`] for what takes longer by design (a job's time limit, a real CLI's turn):
/// gives up after `limit`.
#[allow(dead_code)]
pub async fn eventually_within<T, F>(limit: std::time::Duration, what: &str, mut check: impl FnMut() -> F) -> T
where
    F: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: never happened within {limit:?}");
        // allow-sleep: the one poll interval of the suites.
        tokio::time::sleep(EVENTUALLY_EVERY).await;
    }
}
pub const PASSWORD: &str = "correct horse battery";

/// A running server and a client for it.
pub struct TestApp {
    pub addr: SocketAddr,
    pub client: Client,
    pub dir: Arc<tempfile::TempDir>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<mobius::Result<()>>>,
    /// Set when the server runs as a separate process (the `mobius` binary).
    process: Option<std::process::Child>,
}

impl TestApp {
    /// A fresh server with an empty data dir.
    pub async fn spawn() -> Self {
        Self::spawn_in(Arc::new(tempfile::tempdir().expect("temp dir")), |_| {}).await
    }

    /// A server over `dir` (reuse it to test restarts); `tweak` adjusts the config.
    pub async fn spawn_in(dir: Arc<tempfile::TempDir>, tweak: impl FnOnce(&mut Config)) -> Self {
        let app = Self::start(dir, tweak).await;
        app.wait_ready().await;
        app
    }

    /// Starts without waiting for readiness.
    pub async fn start(dir: Arc<tempfile::TempDir>, tweak: impl FnOnce(&mut Config)) -> Self {
        let mut config = Config::for_test(dir.path());
        // Helper processes (`mobius push-deliver`) are the built server, not this test binary.
        config.self_exe = env!("CARGO_BIN_EXE_mobius").into();
        tweak(&mut config);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(mobius::app::serve(listener, config, async move {
            let _ = stopped.await;
        }));
        let client = Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
        Self { addr, client, dir, stop: Some(stop), task: Some(task), process: None }
    }

    /// Runs the real `mobius` binary over `dir` with extra environment, and waits until ready.
    pub async fn spawn_process(dir: Arc<tempfile::TempDir>, env: &[(&str, String)]) -> Self {
        // Reserve a free port, release it, and hand it to the server.
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join("server.log"))
            .expect("log file");
        // `MOBIUS_E2E_SERVER_BIN` runs another build (recording a fixture from a release).
        let bin = std::env::var_os("MOBIUS_E2E_SERVER_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_mobius").into());
        let mut command = std::process::Command::new(bin);
        command
            .env("DATA_DIR", dir.path())
            .env("MOBIUS_BIND", addr.to_string())
            .env("MOBIUS_FRONTEND_DIR", dir.path().join("no-frontend"))
            .env("MOBIUS_LOG", "info,mobius=debug")
            .env("MOBIUS_SKILL_DIR", mobius::config::checkout_root().join("skill"))
            // No chat notes unless a test asks (they are background turns on the same CLI).
            .env("MOBIUS_NOTE_IDLE_SECS", "0")
            // Pasted keys are checked against nothing (the check answers "unknown" at once).
            .env("MOBIUS_ANTHROPIC_API_URL", mobius::config::UNREACHABLE_TEST_URL)
            .env("MOBIUS_OPENAI_API_URL", mobius::config::UNREACHABLE_TEST_URL)
            .stdout(log.try_clone().expect("log"))
            .stderr(log);
        for (k, v) in env {
            command.env(k, v);
        }
        let child = command.spawn().expect("start the mobius binary");
        let client = Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
        let app = Self { addr, client, dir, stop: None, task: None, process: Some(child) };
        app.wait_ready().await;
        app
    }

    /// The server's process id, when it runs as its own process.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(std::process::Child::id)
    }

    /// SIGKILLs the server process (no shutdown at all) and returns its data dir.
    pub fn kill9(mut self) -> Arc<tempfile::TempDir> {
        if let Some(mut child) = self.process.take() {
            child.kill().expect("kill");
            child.wait().expect("wait");
        }
        self.dir.clone()
    }

    /// Registers a live app behind the server's back (as an apply would leave it, minus the
    /// bundle) and returns its id and an app token for it. Later changes to it must go
    /// through the API: the server caches app rows between its own commits.
    pub async fn register_app(&self, slug: &str) -> (i64, String) {
        self.register_app_with(slug, "{}").await
    }

    /// [`register_app`](Self::register_app) with the manifest's `permissions` object.
    pub async fn register_app_with(&self, slug: &str, permissions: &str) -> (i64, String) {
        use sqlx::Connection;
        let url = format!("sqlite://{}?mode=rw", self.data_dir().join("db/mobius.sqlite3").display());
        let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("open the database");
        sqlx::query("PRAGMA busy_timeout = 5000").execute(&mut conn).await.expect("busy timeout");
        let nonce = format!("nonce-{slug}");
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO apps (slug, name, token_nonce, bundle_sha, permissions, created_at, updated_at)
             VALUES (?, ?, ?, 'sha', ?, 0, 0) RETURNING id",
        )
        .bind(slug)
        .bind(slug)
        .bind(&nonce)
        .bind(permissions)
        .fetch_one(&mut conn)
        .await
        .expect("insert app");
        conn.close().await.expect("close");
        (id, self.app_token(id, &nonce))
    }

    /// The server's signing key as it is on disk, to mint the tokens a test needs.
    pub fn keys(&self) -> mobius::auth::Keys {
        let secret = std::fs::read_to_string(self.data_dir().join("secret.key")).expect("secret.key");
        mobius::auth::Keys::from_secret(secret.trim().as_bytes())
    }

    /// An app token for app `id` with install nonce `nonce`, signed with the server's key.
    pub fn app_token(&self, id: i64, nonce: &str) -> String {
        use mobius::auth::{Claims, Scope};
        let mut claims = Claims::new(USERNAME, Scope::App, 0, 3600);
        claims.app_id = Some(id);
        claims.app_nonce = Some(nonce.to_owned());
        self.keys().issue(&claims).expect("issue")
    }

    /// A token of `scope` for `chat` in run `run-1`, in the epoch of `owner_token`, signed with
    /// the server's key (what a run or an embed holds).
    pub fn run_token(&self, owner_token: &str, scope: mobius::auth::Scope, chat: &str) -> String {
        use base64::Engine;
        let payload = owner_token.split('.').nth(1).expect("payload");
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).expect("base64");
        let epoch = serde_json::from_slice::<Value>(&payload).expect("json")["epoch"].as_i64().unwrap_or(0);
        let mut claims = mobius::auth::Claims::new(USERNAME, scope, epoch, 600);
        claims.chat_id = Some(chat.to_owned());
        claims.run_id = Some("run-1".to_owned());
        self.keys().issue(&claims).expect("issue")
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Waits until `/api/ready` answers 200 (start-up takes milliseconds).
    pub async fn wait_ready(&self) {
        eventually("the server is ready", || async {
            let r = self.client.get(self.url("/api/ready")).send().await.ok()?;
            (r.status() == StatusCode::OK).then_some(())
        })
        .await
    }

    /// Stops the server gracefully and returns its data dir for a restart.
    pub async fn stop(mut self) -> Arc<tempfile::TempDir> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(pid) = self.pid() {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGTERM);
        }
        if let Some(mut child) = self.process.take() {
            let status = child.wait().expect("wait");
            assert!(status.success(), "the server did not exit cleanly: {status}");
        }
        if let Some(task) = self.task.take() {
            task.await.expect("server task").expect("server result");
        }
        self.dir.clone()
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Response {
        let mut req = self.client.get(self.url(path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send().await.expect("request")
    }

    pub async fn post(&self, path: &str, body: Value, token: Option<&str>) -> Response {
        let mut req = self.client.post(self.url(path)).json(&body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send().await.expect("request")
    }

    /// Creates the owner and returns a login token.
    pub async fn patch_json(&self, path: &str, body: Value, token: &str) -> Response {
        self.client.patch(self.url(path)).bearer_auth(token).json(&body).send().await.expect("PATCH")
    }

    pub async fn put_json(&self, path: &str, body: Value, token: &str) -> Response {
        self.client.put(self.url(path)).bearer_auth(token).json(&body).send().await.expect("PUT")
    }

    pub async fn delete_with(&self, path: &str, token: &str) -> Response {
        self.client.delete(self.url(path)).bearer_auth(token).send().await.expect("DELETE")
    }

    pub async fn setup_owner(&self) -> String {
        let r = self.post("/api/auth/setup", json!({ "username": USERNAME, "password": PASSWORD }), None).await;
        assert_eq!(r.status(), StatusCode::OK, "setup failed");
        token_of(r).await
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(mut child) = self.process.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub async fn token_of(r: Response) -> String {
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["token_type"], "bearer");
    body["access_token"].as_str().expect("access_token").to_owned()
}

/// Asserts a `{code, message}` error with `status` and `code`.
pub async fn assert_error(r: Response, status: StatusCode, code: &str) -> Value {
    assert_eq!(r.status(), status, "wrong status for expected code {code}");
    let ct = r.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    assert!(ct.starts_with("application/json"), "error is not JSON: {ct}");
    let body: Value = r.json().await.expect("json body");
    assert_eq!(body["code"], code, "{body}");
    assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    body
}

/// Writes a fake built frontend into `dir` and returns its path.
pub fn fake_dist(dir: &Path) -> PathBuf {
    let dist = dir.join("frontend-dist");
    std::fs::create_dir_all(dist.join("assets")).expect("dist");
    std::fs::write(dist.join("index.html"), "<!doctype html><title>shell</title><div id=root></div>").expect("index");
    std::fs::write(dist.join("assets/index-3f9a1c.js"), "console.log('app')".repeat(20)).expect("asset");
    std::fs::write(dist.join("manifest.webmanifest"), "{\"name\":\"Möbius\"}").expect("manifest");
    dist
}

/// A parsed server-sent event.
#[derive(Debug, Clone)]
pub struct Sse {
    pub id: Option<i64>,
    pub data: Value,
}

/// Reads a chat's SSE stream in the background; events arrive on the channel.
pub struct SseReader {
    pub rx: tokio::sync::mpsc::UnboundedReceiver<Sse>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SseReader {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SseReader {
    /// Connects to `url` with `token`, optionally resuming after `last_event_id`.
    pub async fn connect(client: &Client, url: &str, token: &str, last_event_id: Option<i64>) -> Self {
        let mut req = client.get(url).bearer_auth(token);
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id.to_string());
        }
        let response = req.send().await.expect("stream request");
        assert_eq!(response.status(), StatusCode::OK, "stream refused");
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            use futures_util::StreamExt;
            let mut body = response.bytes_stream();
            let mut buf = String::new();
            while let Some(Ok(chunk)) = body.next().await {
                buf.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buf.find("\n\n") {
                    let frame: String = buf.drain(..end + 2).collect();
                    let mut id = None;
                    let mut data = String::new();
                    for line in frame.lines() {
                        if let Some(v) = line.strip_prefix("id:") {
                            id = v.trim().parse().ok();
                        } else if let Some(v) = line.strip_prefix("data:") {
                            data.push_str(v.trim_start());
                        }
                    }
                    if data.is_empty() {
                        continue;
                    }
                    if let Ok(data) = serde_json::from_str(&data)
                        && tx.send(Sse { id, data }).is_err()
                    {
                        return;
                    }
                }
            }
        });
        Self { rx, task }
    }

    /// The next event, failing the test after `secs` seconds.
    pub async fn next(&mut self, secs: u64) -> Sse {
        tokio::time::timeout(std::time::Duration::from_secs(secs), self.rx.recv())
            .await
            .expect("timed out waiting for an event")
            .expect("stream ended")
    }

    /// Reads until an event of `kind` arrives; returns everything read, that event last.
    pub async fn until(&mut self, kind: &str, secs: u64) -> Vec<Sse> {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(secs);
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let event = tokio::time::timeout(left, self.rx.recv())
                .await
                .unwrap_or_else(|_| panic!("timed out waiting for {kind}; saw {:?}", types(&seen)))
                .expect("stream ended");
            let done = event.data["type"] == kind;
            seen.push(event);
            if done {
                return seen;
            }
        }
    }
}

/// The `type` of each event, for messages.
pub fn types(events: &[Sse]) -> Vec<String> {
    events.iter().map(|e| e.data["type"].as_str().unwrap_or("?").to_owned()).collect()
}

/// Writes an executable shell script (a fake agent CLI for tests).
pub fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

impl TestApp {
    /// Stores a (fake) Claude API key so turns can start.
    pub async fn connect_claude(&self, token: &str) {
        let r = self.post("/api/providers/claude/api-key", json!({ "api_key": "sk-test" }), Some(token)).await;
        assert_eq!(r.status(), StatusCode::OK);
    }

    /// Creates a chat with `id`.
    pub async fn chat(&self, token: &str, id: &str) {
        let r = self.post("/api/chats", json!({ "id": id }), Some(token)).await;
        assert!(r.status().is_success(), "create chat {id}: {}", r.status());
    }

    /// Sends `content` with `cid`; returns the JSON answer.
    pub async fn send(&self, token: &str, chat: &str, content: &str, cid: &str) -> Value {
        let r = self
            .post(&format!("/api/chats/{chat}/messages"), json!({ "content": content, "cid": cid }), Some(token))
            .await;
        assert!(r.status().is_success(), "send failed: {}", r.status());
        r.json().await.expect("json")
    }

    /// The chat detail.
    pub async fn detail(&self, token: &str, chat: &str) -> Value {
        let r = self.get(&format!("/api/chats/{chat}"), Some(token)).await;
        assert_eq!(r.status(), StatusCode::OK);
        r.json().await.expect("json")
    }

    /// Opens the chat's stream.
    pub async fn stream(&self, token: &str, chat: &str, after: Option<i64>) -> SseReader {
        SseReader::connect(&self.client, &self.url(&format!("/api/chats/{chat}/stream")), token, after).await
    }
}

/// Folds a chat's journal into its transcript the way the writer stores it: user rows by cid,
/// each run's assistant message with the server's own fold (`LiveMessage`), sealed at a
/// steer and at the run's end; a run that produced nothing leaves no row.
pub fn fold_transcript(events: &[mobius::protocol::JournalEntry]) -> Vec<mobius::protocol::Message> {
    use mobius::protocol::{Block, ChatEvent, LiveMessage, Message, RunId, RunStatus, ToolStatus};
    fn upsert(rows: &mut Vec<Message>, message: &Message) {
        match rows.iter().position(|r| r.cid.is_some() && r.cid == message.cid) {
            Some(i) => rows[i] = message.clone(),
            None => rows.push(message.clone()),
        }
    }
    fn seal(rows: &mut Vec<Message>, run_id: RunId, mut live: LiveMessage, status: ToolStatus) {
        live.close_running_tools(status);
        let mut message = live.into_message();
        if message.has_blocks() {
            message.run_id = Some(run_id);
            rows.push(message);
        }
    }
    let mut rows: Vec<Message> = Vec::new();
    let mut live: Option<(RunId, LiveMessage)> = None;
    for entry in events {
        match &entry.event {
            ChatEvent::UserMessage { message } => upsert(&mut rows, message),
            ChatEvent::RunStarted { run_id, ts, version } => {
                if let Some((run, message)) = live.take().filter(|(run, _)| run != run_id) {
                    seal(&mut rows, run, message, ToolStatus::Done);
                }
                live = Some((run_id.clone(), LiveMessage::regenerating(ts.unwrap_or_default(), *version)));
            }
            ChatEvent::QueuedTurnStarting { messages, .. } => messages.iter().for_each(|m| upsert(&mut rows, m)),
            ChatEvent::SteeredIntoTurn { run_id, message, sealed } => {
                if let Some((run, part)) = live.take().filter(|_| *sealed) {
                    seal(&mut rows, run, part, ToolStatus::Done);
                }
                upsert(&mut rows, message);
                live = Some((run_id.clone(), LiveMessage::new(message.ts)));
            }
            ChatEvent::Done { status, usage, cost_usd, .. } => {
                if let Some((run, message)) = live.take() {
                    let tools = if *status == RunStatus::Stopped { ToolStatus::Stopped } else { ToolStatus::Done };
                    seal(&mut rows, run.clone(), message, tools);
                    // The reply carries what its turn used.
                    let used = mobius::protocol::RunUsage {
                        input_tokens: usage.input_tokens,
                        output_tokens: usage.output_tokens,
                        cache_read_tokens: usage.cache_read_tokens,
                        cache_write_tokens: usage.cache_write_tokens,
                        cost_usd: *cost_usd,
                    };
                    if let Some(last) = rows.last_mut().filter(|m| m.run_id.as_ref() == Some(&run)) {
                        last.usage = (!used.is_empty()).then(|| Box::new(used));
                    }
                }
            }
            ChatEvent::AnswersApplied { question_id, answers } if live.is_none() => {
                for block in rows.iter_mut().flat_map(|m| m.blocks.iter_mut().flatten()) {
                    if let Block::Question(card) = block
                        && card.question_id == *question_id
                    {
                        card.set_answers(answers);
                    }
                }
            }
            other => {
                if let Some((_, message)) = live.as_mut() {
                    message.apply(other);
                }
            }
        }
    }
    rows
}

/// A chat's whole journal, replayed from the start.
pub async fn journal(app: &TestApp, token: &str, chat: &str) -> Vec<mobius::protocol::JournalEntry> {
    let mut stream = app.stream(token, chat, Some(0)).await;
    let events = stream.until("catch_up_done", 30).await;
    events
        .into_iter()
        .filter(|e| e.id.is_some())
        .map(|e| serde_json::from_value(e.data.clone()).unwrap_or_else(|err| panic!("{err}: {}", e.data)))
        .collect()
}

/// A chat's whole transcript as the server stored it (no live row).
pub async fn transcript(app: &TestApp, token: &str, chat: &str) -> Vec<mobius::protocol::Message> {
    let detail = app.get(&format!("/api/chats/{chat}?limit=200"), Some(token)).await;
    let detail: Value = detail.json().await.expect("detail");
    assert_eq!(detail["has_more"], false, "the transcript fits one page");
    serde_json::from_value(detail["messages"].clone()).expect("typed messages")
}

/// One of the scripted Python servers in `tests/fake-providers/`, started with `--port-file`
/// and `args`, killed on drop.
pub struct PyMock {
    child: std::process::Child,
    pub port: u16,
}

impl Drop for PyMock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl PyMock {
    pub async fn start<S: AsRef<std::ffi::OsStr>>(dir: &Path, script: &str, args: &[S]) -> Self {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let port_file = dir.join(format!("{script}-{nanos}.port"));
        let child = std::process::Command::new("python3")
            .arg(mobius::config::checkout_root().join("tests/fake-providers").join(script))
            .arg("--port-file")
            .arg(&port_file)
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {script} (python3): {e}"));
        let mut mock = Self { child, port: 0 };
        mock.port = eventually(&format!("{script} writes its port"), || async {
            std::fs::read_to_string(&port_file).ok().and_then(|t| t.trim().parse::<u16>().ok())
        })
        .await;
        mock
    }

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// POSTs to one of the mock's control routes (`/_mock/…`).
    pub async fn post_control(&self, path: &str) {
        let r = reqwest::Client::new().post(format!("{}{path}", self.base())).send().await.expect("mock control");
        assert!(r.status().is_success(), "{path}: {}", r.status());
    }

    /// What the mock was asked (`/_mock/requests`).
    pub async fn requests(&self) -> Vec<Value> {
        reqwest::get(format!("{}/_mock/requests", self.base()))
            .await
            .expect("mock log")
            .json::<Value>()
            .await
            .expect("json")["requests"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

/// The scripted MCP server (`tests/fake-providers/mock_mcp.py`); `args` are its options
/// (`--bearer T`, `--header N=V`, `--sse`).
pub struct McpMock(PyMock);

impl std::ops::Deref for McpMock {
    type Target = PyMock;
    fn deref(&self) -> &PyMock {
        &self.0
    }
}

impl McpMock {
    pub async fn start(dir: &Path, args: &[&str]) -> Self {
        Self(PyMock::start(dir, "mock_mcp.py", args).await)
    }

    pub fn url(&self) -> String {
        format!("{}/mcp", self.base())
    }
}

/// Files under `dir` (followed down every folder, never through a link) that contain `needle`:
/// where a secret must never be found in the clear.
pub fn files_containing(dir: &Path, needle: &[u8]) -> Vec<std::path::PathBuf> {
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
