//! Liveness, readiness and version: `/api/health`, `/api/ready`, `/api/version`.

use std::sync::Arc;
use std::sync::RwLock;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

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
}

impl Boot {
    /// A new boot in the `Starting` phase.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            boot_id: uuid::Uuid::new_v4().simple().to_string()[..12].to_owned(),
            phase: RwLock::new(Phase::Starting("starting up".into())),
            release: std::sync::OnceLock::new(),
        })
    }

    /// Records the release this server runs from.
    pub fn set_release(&self, release: Option<String>) {
        if let Some(release) = release {
            let _ = self.release.set(release);
        }
    }

    /// Records why the server is not ready yet.
    pub fn set_starting(&self, reason: impl Into<String>) {
        *self.phase.write().unwrap_or_else(|p| p.into_inner()) = Phase::Starting(reason.into());
    }

    /// Migrations ran and the writer runs.
    pub fn set_ready(&self, writer: WriterHandle) {
        *self.phase.write().unwrap_or_else(|p| p.into_inner()) = Phase::Ready(writer);
    }

    /// Shutdown began.
    pub fn set_stopping(&self) {
        *self.phase.write().unwrap_or_else(|p| p.into_inner()) = Phase::Stopping;
    }

    /// `Ok` when serviceable, else the reason.
    pub fn readiness(&self) -> Result<(), String> {
        match &*self.phase.read().unwrap_or_else(|p| p.into_inner()) {
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

async fn health(State(boot): State<Arc<Boot>>) -> Response {
    no_store(
        Json(json!({ "status": "ok", "target": "mobius", "build_sha": BUILD_SHA, "boot_id": boot.boot_id }))
            .into_response(),
    )
}

async fn ready(State(boot): State<Arc<Boot>>) -> Response {
    let response = match boot.readiness() {
        Ok(()) => Json(json!({ "ready": true })).into_response(),
        Err(reason) => {
            (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "ready": false, "reason": reason }))).into_response()
        }
    };
    no_store(response)
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
