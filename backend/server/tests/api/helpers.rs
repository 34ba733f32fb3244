//! `TestApp`: spawns the real server in-process on an ephemeral port with its own data dir.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mobius::config::Config;
use reqwest::{Client, Response, StatusCode};
use serde_json::{Value, json};
use tokio::sync::oneshot;

pub const USERNAME: &str = "owner";
pub const PASSWORD: &str = "correct horse battery";

/// A running server and a client for it.
pub struct TestApp {
    pub addr: SocketAddr,
    pub client: Client,
    pub dir: Arc<tempfile::TempDir>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<mobius::Result<()>>>,
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
        tweak(&mut config);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(mobius::app::serve(listener, config, async move {
            let _ = stopped.await;
        }));
        let client = Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
        Self { addr, client, dir, stop: Some(stop), task: Some(task) }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Polls `/api/ready` until it answers 200 (start-up takes milliseconds).
    pub async fn wait_ready(&self) {
        for _ in 0..2000 {
            if let Ok(r) = self.client.get(self.url("/api/ready")).send().await
                && r.status() == StatusCode::OK
            {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        panic!("server never became ready");
    }

    /// Stops the server gracefully and returns its data dir for a restart.
    pub async fn stop(mut self) -> Arc<tempfile::TempDir> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
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
