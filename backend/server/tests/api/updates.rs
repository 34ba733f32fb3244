//! Updates end to end: `mobius launch` over a data dir, a release feed served by the test with
//! releases built from this tree (the test's own `mobius` binary, a PWA bundle, `release.json`,
//! `SHA256SUMS` signed in minisign's format with a test key the server trusts only because the
//! feed is on loopback). A good release is applied and answers `/api/version`; tampered ones
//! are refused and deleted; one that crashes at start (after wrecking the database) is rolled
//! back with the data intact.

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine;
use blake2::Digest as _;
use futures_util::FutureExt as _;
use ring::signature::KeyPair;
use serde_json::{Value, json};

use crate::helpers::{PASSWORD, USERNAME, eventually_within};
use mobius::locks::Unpoisoned;

/// A minisign key pair (Ed25519), made for the test.
pub struct TestKey {
    pair: ring::signature::Ed25519KeyPair,
    id: [u8; 8],
}

impl TestKey {
    pub fn new() -> Self {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng).expect("key");
        let pair = ring::signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("pair");
        let mut id = [0u8; 8];
        ring::rand::SecureRandom::fill(&rng, &mut id).expect("id");
        Self { pair, id }
    }

    /// The public key as a minisign `.pub` file.
    pub fn public(&self) -> String {
        let mut raw = b"Ed".to_vec();
        raw.extend_from_slice(&self.id);
        raw.extend_from_slice(self.pair.public_key().as_ref());
        format!("untrusted comment: test key\n{}\n", base64::engine::general_purpose::STANDARD.encode(raw))
    }

    /// A prehashed minisign signature of `data` with `trusted` as its trusted comment.
    pub fn sign(&self, data: &[u8], trusted: &str) -> String {
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        let hash = blake2::Blake2b512::digest(data);
        let signature = self.pair.sign(&hash);
        let mut line = b"ED".to_vec();
        line.extend_from_slice(&self.id);
        line.extend_from_slice(signature.as_ref());
        let mut global = signature.as_ref().to_vec();
        global.extend_from_slice(trusted.as_bytes());
        let global = self.pair.sign(&global);
        format!("untrusted comment: test\n{}\ntrusted comment: {trusted}\n{}\n", b64(&line), b64(global.as_ref()))
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    out.write_all(bytes).expect("gzip");
    out.finish().expect("gzip")
}

/// The PWA bundle: `frontend/dist/index.html` saying `version`, and the skills of this tree.
fn pwa_bundle(version: &str) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    let html = format!("<!doctype html><title>Möbius {version}</title>");
    let mut header = tar::Header::new_gnu();
    header.set_size(html.len() as u64);
    header.set_mode(0o644);
    tar.append_data(&mut header, "frontend/dist/index.html", html.as_bytes()).expect("tar");
    tar.append_dir_all("skill", mobius::config::checkout_root().join("skill")).expect("skills");
    gzip(&tar.into_inner().expect("tar"))
}

/// How a release is spoiled, to see it refused.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Spoil {
    None,
    /// The binary changed after the checksums were signed.
    Checksum,
    /// Signed by a key the server does not trust.
    Signature,
}

/// Writes release `version` (with `binary` as its `mobius`) under `root/<version>/` and points
/// `root/latest.json` at it.
pub fn publish(root: &Path, key: &TestKey, version: &str, binary: &[u8], spoil: Spoil) {
    let dir = root.join(version);
    std::fs::create_dir_all(&dir).expect("release dir");
    let arch = std::env::consts::ARCH;
    let binary_asset = format!("mobius-{arch}-linux.gz");
    let gz = gzip(binary);
    let bundle = pwa_bundle(version);
    let manifest = serde_json::to_vec_pretty(&json!({
        "format": 1,
        "version": version,
        "build_sha": "test",
        "published_at": "2026-12-01",
        "image_key": mobius::platform::IMAGE_KEY,
        "binaries": { arch: { "asset": binary_asset, "sha256": sha256_hex(binary), "bytes": binary.len() } },
        "pwa": { "asset": "mobius-pwa.tar.gz" },
        "notes": format!("Version {version}."),
    }))
    .expect("manifest");
    let sums = format!(
        "{}  {binary_asset}\n{}  mobius-pwa.tar.gz\n{}  release.json\n",
        sha256_hex(&gz),
        sha256_hex(&bundle),
        sha256_hex(&manifest)
    );
    let stranger;
    let signer = if spoil == Spoil::Signature {
        stranger = TestKey::new();
        &stranger
    } else {
        key
    };
    let signature = signer.sign(sums.as_bytes(), &format!("mobius {version}"));
    let mut gz = gz;
    if spoil == Spoil::Checksum {
        let last = gz.len() - 9;
        gz[last] ^= 0xff;
    }
    for (name, bytes) in [
        (binary_asset.as_str(), gz.as_slice()),
        ("mobius-pwa.tar.gz", bundle.as_slice()),
        ("release.json", manifest.as_slice()),
        ("SHA256SUMS", sums.as_bytes()),
        ("SHA256SUMS.minisig", signature.as_bytes()),
    ] {
        std::fs::write(dir.join(name), bytes).expect("write");
    }
    let feed = json!({
        "format": 1, "version": version, "published_at": "2026-12-01", "notes": format!("Version {version}."),
        "base_url": format!("{version}/"),
        "assets": { binary_asset: gz.len(), "mobius-pwa.tar.gz": bundle.len() },
    });
    std::fs::write(root.join("latest.json"), serde_json::to_vec(&feed).expect("feed")).expect("feed");
}

/// Serves `root` over HTTP on loopback.
pub async fn serve_dir(root: PathBuf) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = axum::Router::new().fallback_service(tower_http::services::ServeDir::new(root));
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// `mobius launch` over `data`, its log lines forwarded to `log`.
pub struct Launched {
    pub child: std::process::Child,
    pub addr: SocketAddr,
    pub client: reqwest::Client,
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Launched {
    pub fn start(data: &Path, feed: &str, key: &TestKey, ready_timeout_secs: u64) -> Self {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mobius"))
            .arg("launch")
            .env("DATA_DIR", data)
            .env("MOBIUS_BIND", "127.0.0.1:0")
            .env("MOBIUS_FRONTEND_DIR", data.join("no-frontend"))
            .env("MOBIUS_SKILL_DIR", mobius::config::checkout_root().join("skill"))
            .env("MOBIUS_LOG", "info")
            .env("MOBIUS_NOTE_IDLE_SECS", "0")
            .env("MOBIUS_UPDATE_FEED", feed)
            .env("MOBIUS_UPDATE_TEST_KEY", key.public())
            .env("MOBIUS_UPDATE_READY_TIMEOUT_SECS", ready_timeout_secs.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("mobius launch");
        let stderr = child.stderr.take().expect("stderr");
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("launcher listening addr=").nth(1) {
                    let _ = tx.send(rest.split_whitespace().next().unwrap_or_default().to_owned());
                }
                kept.locked().push(line);
            }
        });
        let addr = rx.recv_timeout(Duration::from_secs(30)).expect("the launcher listens").parse().expect("address");
        Self { child, addr, client: reqwest::Client::new(), log }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> reqwest::Response {
        let mut request = self.client.get(self.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send().await.expect("request")
    }

    pub async fn post(&self, path: &str, body: Value, token: Option<&str>) -> reqwest::Response {
        let mut request = self.client.post(self.url(path)).json(&body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send().await.expect("request")
    }

    /// Waits (up to `within`) until `check` holds for `GET path`'s JSON.
    pub async fn wait_for(
        &self,
        path: &str,
        token: Option<&str>,
        within: Duration,
        check: impl Fn(&Value) -> bool,
    ) -> Value {
        let last = std::sync::Mutex::new(Value::Null);
        let what = format!("{path} matches");
        let wait = eventually_within(within, &what, || async {
            let r = self.client.get(self.url(path)).bearer_auth(token.unwrap_or_default()).send().await.ok()?;
            let json = r.json::<Value>().await.ok()?;
            if check(&json) {
                return Some(json);
            }
            *last.locked() = json;
            None
        });
        match std::panic::AssertUnwindSafe(wait).catch_unwind().await {
            Ok(json) => json,
            Err(_) => {
                panic!("{path} never matched; last answer {}; log:\n{}", last.locked(), self.log.locked().join("\n"))
            }
        }
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            // allow-sleep: a Drop cannot await; it gives the launcher a bounded grace to exit on SIGTERM.
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const CHAT: &str = "00000000-0000-4000-8000-0000000000aa";

async fn chat_text(app: &Launched, token: &str) -> String {
    let r = app.get(&format!("/api/chats/{CHAT}"), Some(token)).await;
    assert_eq!(r.status(), 200);
    let json: Value = r.json().await.expect("json");
    json["messages"][0]["content"].as_str().unwrap_or_default().to_owned()
}

async fn sign_in(app: &Launched) -> String {
    let r = app.post("/api/auth/token", json!({ "username": USERNAME, "password": PASSWORD }), None).await;
    assert_eq!(r.status(), 200);
    r.json::<Value>().await.expect("json")["access_token"].as_str().expect("token").to_owned()
}

#[tokio::test]
async fn an_update_is_applied_tampered_ones_are_refused_and_one_that_crashes_is_rolled_back() {
    let data = tempfile::tempdir().expect("data");
    let feed_root = tempfile::tempdir().expect("feed");
    let key = TestKey::new();
    let feed_addr = serve_dir(feed_root.path().to_path_buf()).await;
    let feed = format!("http://{feed_addr}/latest.json");
    let binary = std::fs::read(env!("CARGO_BIN_EXE_mobius")).expect("the built binary");
    let app = Launched::start(data.path(), &feed, &key, 10);
    app.wait_for("/api/ready", None, Duration::from_secs(60), |j| j["ready"] == true).await;

    let r = app.post("/api/auth/setup", json!({ "username": USERNAME, "password": PASSWORD }), None).await;
    assert_eq!(r.status(), 200);
    let token = r.json::<Value>().await.expect("json")["access_token"].as_str().expect("token").to_owned();
    let r = app
        .post(
            "/api/chats",
            json!({ "id": CHAT, "title": "kept", "messages": [{ "role": "user", "content": "before the update" }] }),
            Some(&token),
        )
        .await;
    assert!(r.status().is_success(), "{}", r.status());
    let status: Value = app.get("/api/platform/status", Some(&token)).await.json().await.expect("json");
    assert_eq!(status["supervised"], true);
    assert_eq!(status["serving"], "image");

    // A tampered binary and a foreign signature: refused, deleted, nothing pending.
    for (spoil, why) in [(Spoil::Checksum, "checksum"), (Spoil::Signature, "trusted release key")] {
        publish(feed_root.path(), &key, "0.2.0", &binary, spoil);
        let checked: Value = app.post("/api/platform/check", json!({}), Some(&token)).await.json().await.expect("json");
        assert_eq!(checked["available"]["version"], "0.2.0", "{checked}");
        let r = app.post("/api/platform/update", json!({ "version": "0.2.0" }), Some(&token)).await;
        assert_eq!(r.status(), 202);
        let failed = app
            .wait_for("/api/platform/status", Some(&token), Duration::from_secs(60), |j| {
                j["progress"]["phase"] == "failed"
            })
            .await;
        assert!(failed["progress"]["error"].as_str().unwrap_or_default().contains(why), "{failed}");
        let releases = data.path().join("platform/releases");
        let left: Vec<_> = std::fs::read_dir(&releases).expect("releases").flatten().map(|e| e.file_name()).collect();
        assert!(left.iter().all(|n| n == "state.json"), "nothing kept: {left:?}");
        assert_eq!(mobius::platform::state::ReleaseState::load(data.path()).pending, None);
    }

    // A good release: applied; the new version answers, the data is there.
    publish(feed_root.path(), &key, "0.2.0", &binary, Spoil::None);
    std::fs::remove_dir_all(data.path().join("platform/releases")).ok();
    let r = app.post("/api/platform/update", json!({ "version": "0.2.0" }), Some(&token)).await;
    assert_eq!(r.status(), 202, "{:?}", r.text().await);
    let version = app.wait_for("/api/version", None, Duration::from_secs(90), |j| j["release"] == "0.2.0").await;
    assert_eq!(version["serving"], "release");
    app.wait_for("/api/ready", None, Duration::from_secs(30), |j| j["ready"] == true).await;
    assert_eq!(chat_text(&app, &token).await, "before the update", "the session and the data survive the update");
    // The launcher records the outcome once it has seen the new server ready, a moment after
    // the new server first answers.
    let status = app
        .wait_for("/api/platform/status", Some(&token), Duration::from_secs(30), |j| j["last"]["outcome"] == "applied")
        .await;
    assert_eq!(status["version"], "0.2.0");
    assert!(status["available"].is_null(), "{status}");
    assert!(data.path().join("platform/releases/0.2.0/frontend/dist/index.html").is_file());

    // A release that wrecks the database and crashes at start: rolled back, data intact.
    let crash = b"#!/bin/sh\necho 'boom: this build cannot start' >&2\n: > \"$DATA_DIR/db/mobius.sqlite3\"\nexit 3\n";
    publish(feed_root.path(), &key, "0.3.0", crash, Spoil::None);
    // This time over SSH: `mobius update` asks, applies, and reports the rollback and why.
    let cli = |args: &[&str]| {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mobius"));
        command
            .arg("update")
            .args(args)
            .env("DATA_DIR", data.path())
            .env("MOBIUS_UPDATE_FEED", &feed)
            .env("MOBIUS_UPDATE_TEST_KEY", key.public())
            .env("MOBIUS_LOG", "warn")
            .stdin(std::process::Stdio::null());
        command.output()
    };
    let checked = cli(&["--check"]).await.expect("mobius update --check");
    let said = String::from_utf8_lossy(&checked.stdout);
    assert!(checked.status.success() && said.contains("Möbius 0.3.0 is available (this is 0.2.0)"), "{said}");
    let applied = cli(&["--yes"]).await.expect("mobius update --yes");
    let complaint = String::from_utf8_lossy(&applied.stderr);
    assert!(!applied.status.success(), "a rolled-back update fails the command");
    assert!(complaint.contains("0.3.0 was rolled back") && complaint.contains("boom"), "{complaint}");
    let state = mobius::platform::state::ReleaseState::load(data.path());
    let last = state.last.expect("outcome");
    assert_eq!(last.outcome, "rolled_back");
    assert!(last.reason.as_deref().unwrap_or_default().contains("boom"), "{last:?}");
    assert_eq!(state.current.as_deref(), Some("0.2.0"));
    app.wait_for("/api/ready", None, Duration::from_secs(60), |j| j["ready"] == true).await;
    let version: Value = app.get("/api/version", None).await.json().await.expect("json");
    assert_eq!(version["release"], "0.2.0");
    let token = sign_in(&app).await;
    assert_eq!(chat_text(&app, &token).await, "before the update", "the database was put back");
    let status: Value = app.get("/api/platform/status", Some(&token)).await.json().await.expect("json");
    assert_eq!(status["last"]["outcome"], "rolled_back");
    assert!(!data.path().join("platform/releases/0.3.0").exists(), "the failed release is deleted");
}
