//! Eyes for the agent (`mobius app screenshot`, `mobius page screenshot`): a page of this server
//! rendered in a headless Chromium as the owner's phone (or desktop) shows it, after it settled,
//! as a PNG, with what the page said in its console and the requests that failed.
//!
//! The browser is the server's child, started for one screenshot and gone after it, sandboxed
//! like the CLIs (`agent/process.rs`: its own process group and tree, `no_new_privs`, the
//! agents' memory ceiling; `Sandbox::browser_grants`: Landlock opens the system, a throwaway
//! profile under `DATA_DIR/run/browser/` and nothing else of `DATA_DIR`). It is driven over
//! `--remote-debugging-pipe` (`cdp.rs`), so no port is open. One browser at a time server-wide:
//! a second request waits up to [`BUSY_WAIT`], then gets `browser_busy`. It signs in with an
//! owner token of a borrowed session (`auth::sessions::Sessions::borrow`) that dies with the
//! screenshot, and the page's app runs in its sandboxed frame as on the owner's phone.

pub mod cdp;
pub mod routes;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::agent::ceiling::MemoryCeiling;
use crate::agent::sandbox::Sandbox;
use crate::agent::trees::Trees;
use crate::error::{Error, Result};
use cdp::{Cdp, CdpError};

/// Everything of one screenshot, from starting the browser to the PNG.
pub const SHOT_DEADLINE: Duration = Duration::from_secs(20);
/// Of [`SHOT_DEADLINE`], what is kept for taking the picture after a page that did not settle.
const CAPTURE_RESERVE: Duration = Duration::from_secs(3);
/// How long a request waits for the one browser before `browser_busy`.
pub const BUSY_WAIT: Duration = Duration::from_secs(20);
/// A page is settled once loaded with no request open and no DOM change for this long.
const QUIET: Duration = Duration::from_millis(500);
/// How often settling is checked between events.
const TICK: Duration = Duration::from_millis(100);
/// Largest PNG handed back.
pub const MAX_PNG_BYTES: usize = 8 << 20;
/// Console lines (errors, warnings, uncaught exceptions) kept, and characters of each.
const MAX_CONSOLE_LINES: usize = 50;
const MAX_LINE_CHARS: usize = 500;
/// Failed requests kept.
const MAX_FAILED_REQUESTS: usize = 50;
/// Requests tracked at once (past it, the page counts as busy until the deadline).
const MAX_TRACKED_REQUESTS: usize = 2000;
/// The browser's owner token lives at most this long (its session goes with the screenshot).
pub const TOKEN_TTL_SECS: i64 = 120;
/// The binding the page calls when its DOM changes.
const MUTATED: &str = "__mobiusShotMutated";
/// Installed in every frame before its scripts: reports DOM changes at most every 50 ms, the
/// last one included.
const OBSERVER_JS: &str = "(() => { const b = globalThis.__mobiusShotMutated; if (typeof b !== 'function') return; \
let pending = false; const note = () => { if (pending) return; pending = true; setTimeout(() => { pending = false; \
try { b(''); } catch (e) {} }, 50); }; try { new MutationObserver(note).observe(document, { subtree: true, \
childList: true, attributes: true, characterData: true }); } catch (e) {} })();";

/// The screen a screenshot is taken at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Size {
    /// 390 × 844 CSS px at 2× (a current phone): a 780 × 1688 PNG.
    #[default]
    Phone,
    /// 1280 × 800 CSS px at 1×.
    Desktop,
}

impl Size {
    /// CSS width, height, device scale, mobile.
    fn metrics(self) -> (u32, u32, u32, bool) {
        match self {
            Size::Phone => (390, 844, 2, true),
            Size::Desktop => (1280, 800, 1, false),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Size::Phone => "phone",
            Size::Desktop => "desktop",
        }
    }
}

/// What to render: `url` on this server, signed in as the owner with `token` on `origin`;
/// `app_id` names the app a standalone page shows.
pub struct Target {
    pub url: String,
    pub origin: String,
    pub token: String,
    pub app_id: Option<i64>,
}

/// A screenshot and what the page said while it was taken.
#[derive(Debug, Serialize)]
pub struct Shot {
    #[serde(skip)]
    pub png: Vec<u8>,
    pub width: u32,
    pub height: u32,
    /// Whether the page settled before the picture was taken.
    pub settled: bool,
    /// Milliseconds from the browser's start to the picture.
    pub elapsed_ms: u64,
    /// Why the page did not settle, a navigation that failed.
    pub notes: Vec<String>,
    /// Console errors and warnings, uncaught exceptions (at most [`MAX_CONSOLE_LINES`]).
    pub console: Vec<String>,
    /// Requests that failed or answered 4xx/5xx (at most [`MAX_FAILED_REQUESTS`]).
    pub failed_requests: Vec<String>,
}

/// What the browser is held to: the agents' sandbox, memory ceiling and process trees.
pub struct Confinement<'a> {
    pub sandbox: &'a Sandbox,
    pub memory: &'a MemoryCeiling,
    pub trees: &'a Trees,
}

/// The screenshot service: which browser, and the one slot.
#[derive(Debug)]
pub struct Screenshots {
    /// `MOBIUS_CHROMIUM`, else found on the system's `PATH` at each use.
    configured: Option<PathBuf>,
    /// `DATA_DIR/run/browser`: the profile of the running browser (emptied before each).
    profiles: PathBuf,
    slot: Semaphore,
}

impl Screenshots {
    pub fn new(configured: Option<PathBuf>, data_dir: &Path) -> Self {
        Self { configured, profiles: data_dir.join("run").join("browser"), slot: Semaphore::new(1) }
    }

    /// The browser binary: the configured one, else `chromium-headless-shell` or `chromium`.
    pub fn program(&self) -> Option<PathBuf> {
        if let Some(path) = &self.configured {
            return path.is_file().then(|| path.clone());
        }
        let path = std::env::var("PATH").unwrap_or_default();
        let path = format!("{path}:{}", crate::agent::toolbox::SYSTEM_PATH.join(":"));
        ["chromium-headless-shell", "chromium"].iter().find_map(|name| crate::agent::toolbox::find_on(&path, name))
    }

    /// Renders `target` at `size`; bounded by [`BUSY_WAIT`] for the slot and [`SHOT_DEADLINE`]
    /// after it. Dropping the future kills the browser.
    pub async fn capture(&self, confine: &Confinement<'_>, target: &Target, size: Size) -> Result<Shot> {
        let Some(program) = self.program() else {
            return Err(Error::unavailable(
                "browser_missing",
                "No Chromium is installed for screenshots (chromium-headless-shell or chromium, or MOBIUS_CHROMIUM).",
            ));
        };
        let _permit = match tokio::time::timeout(BUSY_WAIT, self.slot.acquire()).await {
            Ok(Ok(permit)) => permit,
            _ => {
                return Err(Error::unavailable(
                    "browser_busy",
                    format!(
                        "Another screenshot is being taken and did not finish within {} s; try again.",
                        BUSY_WAIT.as_secs()
                    ),
                ));
            }
        };
        let profile = Profile::create(&self.profiles).await?;
        let started = Instant::now();
        let grants = confine.sandbox.browser_grants(&program, &profile.0);
        let rules = confine.sandbox.ruleset(&grants)?;
        let env = browser_env(&profile.0);
        let args = browser_args(&profile.0);
        let spawned = crate::agent::process::spawn_browser(
            &program,
            &args,
            &profile.0,
            &env,
            Some(confine.trees),
            rules,
            confine.memory.prepare(),
        )?;
        let stderr = spawned.stderr.clone();
        let process = spawned.process;
        let mut cdp = Cdp::new(spawned.commands, spawned.answers);
        let deadline = tokio::time::Instant::from_std(started + SHOT_DEADLINE);
        let outcome = tokio::time::timeout_at(deadline, drive(&mut cdp, target, size, started)).await;
        process.terminate().await;
        profile.remove().await;
        match outcome {
            Ok(Ok(shot)) => Ok(shot),
            Ok(Err(e)) => {
                let tail = stderr.text();
                let tail = tail.lines().rev().take(5).collect::<Vec<_>>().join(" | ");
                tracing::warn!(error = %e, stderr = %tail, "a screenshot failed");
                Err(Error::bad_gateway("browser_failed", format!("The browser failed: {e}. {tail}")))
            }
            Err(_) => Err(Error::gateway_timeout(
                "browser_timeout",
                format!("The browser took no picture within {} s.", SHOT_DEADLINE.as_secs()),
            )),
        }
    }
}

/// The running browser's profile folder, removed when dropped.
struct Profile(PathBuf);

impl Profile {
    async fn create(profiles: &Path) -> Result<Self> {
        let profiles = profiles.to_path_buf();
        tokio::task::spawn_blocking(move || -> std::io::Result<Self> {
            // One browser at a time: anything here is a crashed one's.
            match std::fs::remove_dir_all(&profiles) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            let dir = profiles.join(format!("profile-{}", std::process::id()));
            std::fs::create_dir_all(dir.join("tmp"))?;
            Ok(Self(dir))
        })
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
        .map_err(Error::Io)
    }
}

impl Profile {
    /// Removes the folder off the async threads (the browser is gone by now).
    async fn remove(mut self) {
        let dir = std::mem::take(&mut self.0);
        let _ = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(dir)).await;
    }
}

impl Drop for Profile {
    /// A screenshot given up (its turn ended): the folder goes on a thread of its own once the
    /// browser had time to die; the next screenshot removes whatever is left anyway.
    fn drop(&mut self) {
        if self.0.as_os_str().is_empty() {
            return;
        }
        let dir = std::mem::take(&mut self.0);
        std::thread::spawn(move || {
            // allow-sleep: the browser's group is killed after its grace; its files go after it.
            std::thread::sleep(crate::agent::process::KILL_GRACE * 2);
            let _ = std::fs::remove_dir_all(dir);
        });
    }
}

/// The browser's whole environment.
fn browser_env(profile: &Path) -> Vec<(String, String)> {
    let p = profile.display().to_string();
    vec![
        ("PATH".into(), crate::agent::toolbox::SYSTEM_PATH.join(":")),
        ("HOME".into(), p.clone()),
        // Relative to its working directory, the profile: Chromium binds its singleton's Unix
        // socket under TMPDIR, and a socket's path may be at most 107 bytes (a deep DATA_DIR
        // made the browser die with "Socket path too long").
        ("TMPDIR".into(), "tmp".into()),
        ("XDG_CONFIG_HOME".into(), p.clone()),
        ("XDG_CACHE_HOME".into(), p),
        ("LANG".into(), "C.UTF-8".into()),
    ]
}

/// Headless, no first-run or background traffic, one renderer for a page and its frames (so the
/// app frame's console and DOM reach the same DevTools session), and Chromium's own sandbox off:
/// it cannot start under `no_new_privs` in a container, and Landlock and the memory ceiling
/// confine the whole browser instead.
fn browser_args(profile: &Path) -> Vec<String> {
    [
        "--headless",
        "--remote-debugging-pipe",
        "--no-sandbox",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-gpu",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-breakpad",
        "--disable-crash-reporter",
        "--metrics-recording-only",
        "--password-store=basic",
        "--use-mock-keychain",
        "--hide-scrollbars",
        "--mute-audio",
        "--disable-site-isolation-trials",
        "--disable-features=IsolateSandboxedIframes,site-per-process,Translate,MediaRouter,OptimizationHints",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([format!("--user-data-dir={}", profile.display()), "about:blank".into()])
    .collect()
}

/// Opens a page, loads the target, waits for it to settle (or the settle deadline) and takes
/// the picture.
async fn drive(cdp: &mut Cdp, target: &Target, size: Size, started: Instant) -> std::result::Result<Shot, CdpError> {
    let created = cdp.call(None, "Target.createTarget", json!({ "url": "about:blank" })).await?;
    let target_id = created["targetId"].as_str().unwrap_or_default().to_owned();
    let attached = cdp.call(None, "Target.attachToTarget", json!({ "targetId": target_id, "flatten": true })).await?;
    let session = attached["sessionId"].as_str().unwrap_or_default().to_owned();
    let s = Some(session.as_str());
    for domain in ["Page.enable", "Runtime.enable", "Network.enable", "Log.enable"] {
        cdp.call(s, domain, json!({})).await?;
    }
    let (width, height, scale, mobile) = size.metrics();
    cdp.call(
        s,
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": width, "height": height, "deviceScaleFactor": scale, "mobile": mobile }),
    )
    .await?;
    if mobile {
        cdp.call(s, "Emulation.setTouchEmulationEnabled", json!({ "enabled": true, "maxTouchPoints": 5 })).await?;
    }
    cdp.call(s, "Runtime.addBinding", json!({ "name": MUTATED })).await?;
    cdp.call(s, "Page.addScriptToEvaluateOnNewDocument", json!({ "source": OBSERVER_JS })).await?;
    cdp.call(s, "Page.addScriptToEvaluateOnNewDocument", json!({ "source": sign_in_js(target) })).await?;
    let mut page = Observer::new();
    let navigated = cdp.call(s, "Page.navigate", json!({ "url": target.url })).await?;
    if let Some(error) = navigated["errorText"].as_str().filter(|e| !e.is_empty()) {
        page.notes.push(format!("loading {} failed: {error}", target.url));
        page.loaded = true;
    }
    let settle_by = started + SHOT_DEADLINE.saturating_sub(CAPTURE_RESERVE);
    let settled = loop {
        if page.settled(Instant::now()) {
            break true;
        }
        if Instant::now() >= settle_by {
            break false;
        }
        tokio::select! {
            event = cdp.event() => page.apply(&event?, &session),
            () = tokio::time::sleep(TICK) => {}
        }
    };
    if !settled {
        page.notes.push(page.unsettled_note(settle_by.saturating_duration_since(started)));
    }
    let shot = cdp.call(s, "Page.captureScreenshot", json!({ "format": "png" })).await?;
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().unwrap_or_default())
        .map_err(|e| CdpError::NotJson(format!("the screenshot is not base64: {e}")))?;
    if png.len() > MAX_PNG_BYTES {
        return Err(CdpError::TooLarge);
    }
    let (width, height) = png_size(&png).ok_or_else(|| CdpError::NotJson("the screenshot is not a PNG".into()))?;
    Ok(Shot {
        png,
        width,
        height,
        settled,
        elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        notes: page.notes,
        console: page.console,
        failed_requests: page.failed,
    })
}

/// Signs the shell in on this server's origin (top document only; app frames are opaque), and
/// answers the one-time "put it on your home screen" offers, which would cover the bottom of
/// every screenshot (a fresh profile is a first visit each time).
fn sign_in_js(target: &Target) -> String {
    let origin = serde_json::to_string(&target.origin).unwrap_or_default();
    let token = serde_json::to_string(&target.token).unwrap_or_default();
    let app_offer = target
        .app_id
        .map(|id| format!("sessionStorage.setItem('mobius.install-offer.{id}', 'dismissed'); "))
        .unwrap_or_default();
    format!(
        "(() => {{ if (window !== window.top || location.origin !== {origin}) return; \
         try {{ localStorage.setItem('mobius.token', {token}); \
         localStorage.setItem('mobius.install-offer.shell', 'dismissed'); {app_offer}}} catch (e) {{}} }})();"
    )
}

/// A PNG's width and height, from its header.
pub fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    if png.len() < 24 || &png[..8] != b"\x89PNG\r\n\x1a\n" || &png[12..16] != b"IHDR" {
        return None;
    }
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    Some((be(&png[16..20]), be(&png[20..24])))
}

/// What the page did so far: its requests, DOM changes, console.
struct Observer {
    loaded: bool,
    /// Open requests: id → method and URL.
    open: HashMap<String, String>,
    /// Requests seen, to name failures: id → method and URL (bounded like `open`).
    seen: HashMap<String, String>,
    overflow: bool,
    last_activity: Instant,
    last_mutation: Option<Instant>,
    console: Vec<String>,
    console_dropped: usize,
    failed: Vec<String>,
    notes: Vec<String>,
}

impl Observer {
    fn new() -> Self {
        Self {
            loaded: false,
            open: HashMap::new(),
            seen: HashMap::new(),
            overflow: false,
            last_activity: Instant::now(),
            last_mutation: None,
            console: Vec::new(),
            console_dropped: 0,
            failed: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn settled(&self, now: Instant) -> bool {
        self.loaded && !self.overflow && self.open.is_empty() && now.duration_since(self.last_activity) >= QUIET
    }

    fn unsettled_note(&self, waited: Duration) -> String {
        let mut why = Vec::new();
        if !self.loaded {
            why.push("it never finished loading".to_owned());
        }
        if !self.open.is_empty() || self.overflow {
            let open: Vec<&str> = self.open.values().take(3).map(String::as_str).collect();
            why.push(format!("{} request(s) still open ({})", self.open.len(), open.join(", ")));
        }
        if self.last_mutation.is_some_and(|t| t.elapsed() < QUIET * 2) {
            why.push("its DOM was still changing".to_owned());
        }
        if why.is_empty() {
            why.push("it kept loading".to_owned());
        }
        format!(
            "the page did not settle within {:.1} s ({}); this is what it showed then",
            waited.as_secs_f64(),
            why.join("; ")
        )
    }

    fn apply(&mut self, event: &Value, session: &str) {
        if event["sessionId"].as_str() != Some(session) {
            return;
        }
        let params = &event["params"];
        let id = || params["requestId"].as_str().unwrap_or_default().to_owned();
        match event["method"].as_str().unwrap_or_default() {
            "Page.loadEventFired" => {
                self.loaded = true;
                self.last_activity = Instant::now();
            }
            "Network.requestWillBeSent" => {
                self.last_activity = Instant::now();
                let what = format!(
                    "{} {}",
                    params["request"]["method"].as_str().unwrap_or("GET"),
                    short(params["request"]["url"].as_str().unwrap_or_default())
                );
                if self.open.len() >= MAX_TRACKED_REQUESTS || self.seen.len() >= MAX_TRACKED_REQUESTS {
                    self.overflow = true;
                    return;
                }
                self.open.insert(id(), what.clone());
                self.seen.insert(id(), what);
            }
            "Network.responseReceived" => {
                self.last_activity = Instant::now();
                let response = &params["response"];
                let status = response["status"].as_u64().unwrap_or(0);
                if status >= 400 {
                    let what = self
                        .seen
                        .get(&id())
                        .cloned()
                        .unwrap_or_else(|| short(response["url"].as_str().unwrap_or_default()));
                    self.fail(format!("{what} → {status}"));
                }
                // An event stream stays open by design: it does not hold the page unsettled.
                if response["mimeType"].as_str() == Some("text/event-stream") {
                    self.open.remove(&id());
                }
            }
            "Network.loadingFinished" => {
                self.last_activity = Instant::now();
                self.open.remove(&id());
            }
            "Network.loadingFailed" => {
                self.last_activity = Instant::now();
                let what = self.open.remove(&id()).or_else(|| self.seen.get(&id()).cloned()).unwrap_or_default();
                // What the page itself stopped (a closed stream, a navigation) is no failure.
                if params["canceled"].as_bool() != Some(true) {
                    self.fail(format!("{what} → {}", params["errorText"].as_str().unwrap_or("failed")));
                }
            }
            "Runtime.bindingCalled" if params["name"].as_str() == Some(MUTATED) => {
                let now = Instant::now();
                self.last_activity = now;
                self.last_mutation = Some(now);
            }
            "Runtime.consoleAPICalled" => {
                let kind = params["type"].as_str().unwrap_or_default();
                if matches!(kind, "error" | "warning" | "assert") {
                    let args: Vec<String> =
                        params["args"].as_array().map(|a| a.iter().map(remote_text).collect()).unwrap_or_default();
                    let at = params["stackTrace"]["callFrames"][0]["url"].as_str().map(short).unwrap_or_default();
                    let at = if at.is_empty() { String::new() } else { format!(" ({at})") };
                    self.say(format!("console.{kind}: {}{at}", args.join(" ")));
                }
            }
            "Runtime.exceptionThrown" => {
                let details = &params["exceptionDetails"];
                let text = details["exception"]["description"]
                    .as_str()
                    .or_else(|| details["text"].as_str())
                    .unwrap_or("an exception");
                self.say(format!("uncaught: {}", text.lines().next().unwrap_or(text)));
            }
            "Log.entryAdded" => {
                let entry = &params["entry"];
                // Failed loads are listed with the requests already.
                if entry["source"].as_str() != Some("network")
                    && matches!(entry["level"].as_str(), Some("error" | "warning"))
                {
                    let url = entry["url"].as_str().map(short).filter(|u| !u.is_empty());
                    let url = url.map(|u| format!(" ({u})")).unwrap_or_default();
                    self.say(format!(
                        "{} [{}]: {}{url}",
                        entry["level"].as_str().unwrap_or("error"),
                        entry["source"].as_str().unwrap_or("browser"),
                        entry["text"].as_str().unwrap_or_default()
                    ));
                }
            }
            _ => {}
        }
    }

    fn say(&mut self, line: String) {
        if self.console.len() < MAX_CONSOLE_LINES {
            self.console.push(line.chars().take(MAX_LINE_CHARS).collect());
        } else {
            self.console_dropped += 1;
            let note = format!("… {} more console lines not kept", self.console_dropped);
            match self.console.last_mut() {
                Some(last) if last.starts_with("… ") => *last = note,
                _ => self.console.push(note),
            }
        }
    }

    fn fail(&mut self, line: String) {
        if self.failed.len() < MAX_FAILED_REQUESTS {
            self.failed.push(line.chars().take(MAX_LINE_CHARS).collect());
        }
    }
}

/// A console argument as text.
fn remote_text(arg: &Value) -> String {
    match (&arg["value"], arg["description"].as_str()) {
        (Value::String(s), _) => s.clone(),
        (Value::Null, Some(d)) => d.to_owned(),
        (Value::Null, None) => arg["type"].as_str().unwrap_or("undefined").to_owned(),
        (v, _) => v.to_string(),
    }
}

/// A URL without its query (tokens travel there) and at most 200 characters.
fn short(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or(url);
    if url.starts_with("data:") {
        return "data:…".into();
    }
    url.chars().take(200).collect()
}

#[cfg(test)]
mod tests;
