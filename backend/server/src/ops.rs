//! Liveness, readiness and version: `/api/health`, `/api/ready`, `/api/version`.

use std::sync::Arc;
use std::sync::RwLock;

use axum::Json;
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use serde_json::json;

use crate::locks::{Unpoisoned, UnpoisonedRw};
use crate::writer::WriterHandle;

/// Build identity, baked in at compile time (`MOBIUS_BUILD_SHA`, `MOBIUS_BUILD_DATE`).
pub const BUILD_SHA: &str = env!("MOBIUS_BUILD_SHA");
pub const BUILD_DATE: &str = env!("MOBIUS_BUILD_DATE");

/// Where start-up is, for `/api/ready`.
#[derive(Debug)]
enum Phase {
    Starting(String),
    Ready(WriterHandle),
    Stopping,
}

/// Process-wide start-up state, shared by the boot router and the full router.
#[derive(Debug)]
pub struct Boot {
    /// Random id of this process, so clients can tell a restart happened.
    pub boot_id: String,
    phase: RwLock<Phase>,
    /// The platform release this server runs from (`mobius launch` names it), if any.
    release: std::sync::OnceLock<String>,
    /// `/api/health`'s answer, the same for the life of the process: made once.
    health: Bytes,
    /// What start-up spent on each step, for the `ready` log line (`scripts/bench` reads it).
    steps: std::sync::Mutex<BootSteps>,
}

/// The steps of start-up with the time each took.
#[derive(Debug)]
struct BootSteps {
    since: std::time::Instant,
    started: std::time::Instant,
    done: Vec<(&'static str, std::time::Duration)>,
    /// `CLOCK_MONOTONIC` when the socket listened, in ms: a caller that read the same clock
    /// before starting the process (`scripts/bench`) tells exec → listening from it.
    listening_at_ms: Option<f64>,
}

impl Boot {
    /// A new boot in the `Starting` phase.
    pub fn new() -> Arc<Self> {
        let boot_id = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
        let health = json!({ "status": "ok", "target": "mobius", "build_sha": BUILD_SHA, "boot_id": boot_id })
            .to_string()
            .into();
        let now = std::time::Instant::now();
        let steps =
            std::sync::Mutex::new(BootSteps { since: now, started: now, done: Vec::new(), listening_at_ms: None });
        Arc::new(Self {
            boot_id,
            phase: RwLock::new(Phase::Starting("starting up".into())),
            release: std::sync::OnceLock::new(),
            health,
            steps,
        })
    }

    /// Records that start-up finished `step` (timed from the previous step, or from `new`); a
    /// step's name has no comma (the `ready` line lists them comma-separated).
    pub fn step(&self, step: &'static str) {
        let mut steps = self.steps.locked();
        let now = std::time::Instant::now();
        let took = now - steps.since;
        steps.since = now;
        steps.done.push((step, took));
    }

    /// Records that the socket listens: the first step, and the monotonic clock's reading.
    pub fn listening(&self) {
        self.step("listening");
        let at = mobius_sys::monotonic_ns().map(|ns| ns as f64 / 1e6);
        self.steps.locked().listening_at_ms = at;
    }

    /// "12.3 ms: open 0.4, migrate 5.1, …; cpu 9.3 ms, 1100 page faults; listening at
    /// 81234567.89 ms": start-up so far and its steps, in milliseconds; then what the process
    /// used since exec (CPU of all threads, user space and kernel, and page faults: before
    /// listening and after), and when it listened on the monotonic clock.
    pub fn steps(&self) -> String {
        let steps = self.steps.locked();
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        let list: Vec<String> = steps.done.iter().map(|(name, took)| format!("{name} {:.2}", ms(*took))).collect();
        let mut line = format!("{:.2} ms: {}", ms(steps.since - steps.started), list.join(", "));
        if let Some(usage) = mobius_sys::process_usage() {
            let faults = usage.minor_faults + usage.major_faults;
            line.push_str(&format!("; cpu {:.2} ms, {faults} page faults", ms(usage.cpu)));
        }
        if let Some(at) = steps.listening_at_ms {
            line.push_str(&format!("; listening at {at:.3} ms"));
        }
        line
    }

    /// Records the release this server runs from.
    pub fn set_release(&self, release: Option<String>) {
        if let Some(release) = release {
            let _ = self.release.set(release);
        }
    }

    /// Records why the server is not ready yet.
    pub fn set_starting(&self, reason: impl Into<String>) {
        *self.phase.write_locked() = Phase::Starting(reason.into());
    }

    /// Migrations ran and the writer runs.
    pub fn set_ready(&self, writer: WriterHandle) {
        *self.phase.write_locked() = Phase::Ready(writer);
    }

    /// Shutdown began.
    pub fn set_stopping(&self) {
        *self.phase.write_locked() = Phase::Stopping;
    }

    /// `Ok` when serviceable, else the reason.
    pub fn readiness(&self) -> Result<(), String> {
        match &*self.phase.read_locked() {
            Phase::Ready(writer) if writer.is_alive() => Ok(()),
            Phase::Ready(_) => Err("the database writer stopped".into()),
            Phase::Starting(reason) => Err(reason.clone()),
            Phase::Stopping => Err("shutting down".into()),
        }
    }
}

/// Routes that answer from the first moment the socket is bound (mounted under `/api`).
pub fn router() -> Router<Arc<Boot>> {
    Router::new().route("/health", get(health)).route("/ready", get(ready)).route("/version", get(version))
}

fn no_store(mut response: Response) -> Response {
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A JSON answer from bytes made beforehand.
fn json_bytes(body: Bytes) -> Response {
    let mut response = Response::new(Body::from(body));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    no_store(response)
}

async fn health(State(boot): State<Arc<Boot>>) -> Response {
    json_bytes(boot.health.clone())
}

async fn ready(State(boot): State<Arc<Boot>>) -> Response {
    match boot.readiness() {
        Ok(()) => json_bytes(Bytes::from_static(br#"{"ready":true}"#)),
        Err(reason) => no_store(
            (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "ready": false, "reason": reason }))).into_response(),
        ),
    }
}

async fn version(State(boot): State<Arc<Boot>>) -> Response {
    let release = boot.release.get();
    no_store(
        Json(json!({
            "sha": BUILD_SHA,
            "build_date": BUILD_DATE,
            "version": env!("CARGO_PKG_VERSION"),
            "release": release,
            "serving": if release.is_some() { "release" } else { "image" },
        }))
        .into_response(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ready_line_lists_the_steps_then_what_the_process_used_and_when_it_listened() {
        let boot = Boot::new();
        boot.listening();
        boot.step("open the database");
        let line = boot.steps();
        // `scripts/bench` splits it at "; ", the steps at ", ", each step at its last space.
        let parts: Vec<&str> = line.split("; ").collect();
        assert_eq!(parts.len(), 3, "{line}");
        let (total, steps) = parts[0].split_once(" ms: ").expect("total");
        assert!(total.parse::<f64>().is_ok(), "{line}");
        let names: Vec<&str> = steps.split(", ").map(|s| s.rsplit_once(' ').expect("step").0).collect();
        assert_eq!(names, ["listening", "open the database"]);
        let cpu = parts[1].strip_prefix("cpu ").and_then(|p| p.split_once(" ms, ")).expect("cpu");
        assert!(cpu.0.parse::<f64>().expect("cpu ms") > 0.0, "{line}");
        assert!(cpu.1.strip_suffix(" page faults").expect("faults").parse::<u64>().expect("count") > 0, "{line}");
        let at: f64 = parts[2]
            .strip_prefix("listening at ")
            .and_then(|p| p.strip_suffix(" ms"))
            .expect("clock")
            .parse()
            .expect("ms");
        let now = mobius_sys::monotonic_ns().expect("clock") as f64 / 1e6;
        assert!(at > 0.0 && at <= now, "{at} {now}");
    }
}
