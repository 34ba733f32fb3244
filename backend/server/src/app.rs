//! Composition root: assembles every route and runs the server (the shared state is built
//! in `state.rs`).
//!
//! The listener answers from the first moment: until the database is migrated and the
//! writer runs, a small boot router serves `/api/health`, `/api/ready` (503 with the
//! reason) and `/api/version`, and 503 for everything else. Then the full router takes over.

use std::convert::Infallible;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::middleware;
use axum::response::Response;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower_http::compression::CompressionLayer;
use tower_http::trace::TraceLayer;
use tracing::{info, info_span, warn};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::ops::{self, Boot};
use crate::state::AppState;
use crate::{api, apps, auth, chats, events, providers, storage, web};

/// Hard cap on the graceful part of shutdown before connections are dropped.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(8);
/// Longest pause between start-up retries (e.g. while another process locks the database).
const MAX_INIT_RETRY_DELAY: Duration = Duration::from_secs(30);

/// Every route of the product, in one place.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .merge(auth::router())
        .merge(chats::router())
        .merge(crate::search::router())
        .merge(crate::recall::routes::router())
        .merge(crate::skills::routes::router())
        .merge(storage::router())
        .merge(apps::router())
        .merge(apps::proxy::router())
        .merge(apps::secrets::router())
        .merge(apps::activity::router())
        .merge(apps::shared_git::router())
        .merge(crate::connectors::routes::router())
        .merge(crate::connectors::broker::router())
        .merge(crate::connectors::github::router())
        .merge(chats::apps::router())
        .merge(chats::logs::router())
        .merge(chats::secure_input::router())
        .merge(providers::router())
        .merge(events::routes::router())
        .merge(crate::telemetry::router())
        .merge(crate::push::router())
        .merge(crate::uploads::routes::router())
        .merge(crate::schedules::routes::router())
        .merge(crate::platform::router())
        .merge(crate::theme::routes::router())
        .merge(crate::shell::routes::router())
        .merge(crate::browser::routes::router())
        .merge(crate::published::routes::router())
        .fallback(api_not_found)
        .method_not_allowed_fallback(api_method_not_allowed)
        .layer(middleware::from_fn_with_state(
            Arc::new(api::Gate { state: state.clone(), trimmer: Arc::default() }),
            api::gate,
        ))
        .layer(DefaultBodyLimit::max(api::MAX_JSON_BODY_BYTES))
        // Health, readiness and version need no identity: merged after the layers, they never
        // pass the gate (a bearer on them is ignored, not even verified). They get the JSON 405
        // of their own (set on the whole router again, it would clone every route once more).
        .merge(ops::router().with_state(state.boot.clone()).method_not_allowed_fallback(api_method_not_allowed));
    Router::new()
        .nest("/api", api)
        .merge(apps::public_router())
        .merge(web::vendor_router())
        .merge(crate::theme::routes::manifest_router())
        .merge(crate::recovery::router())
        .merge(crate::published::site::router())
        .route("/shell/embed/chat", axum::routing::get(web::embed_chat))
        .fallback(web::serve_frontend)
        .layer(CompressionLayer::new())
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &Request| {
                    let route = request.extensions().get::<MatchedPath>().map_or("-", MatchedPath::as_str);
                    info_span!("request", method = %request.method(), route)
                })
                // 5xx are logged once, with their cause, where the error becomes a response.
                .on_failure(()),
        )
        .with_state(state)
}

async fn api_not_found() -> Error {
    Error::not_found("not_found", "There is no such API route.")
}

async fn api_method_not_allowed() -> Error {
    Error::Client {
        status: axum::http::StatusCode::METHOD_NOT_ALLOWED,
        code: "method_not_allowed",
        message: "This route does not accept that method.".into(),
        retry_after_secs: None,
    }
}

/// The router that answers while start-up is still running.
fn boot_router(boot: Arc<Boot>) -> Router {
    Router::new()
        .nest("/api", ops::router().with_state(boot))
        .fallback(|| async { Error::unavailable("starting", "Möbius is starting; try again in a moment.") })
}

/// Sends each request to the full router once it exists, else to the boot router.
#[derive(Clone)]
struct Switch {
    full: Arc<OnceLock<Router>>,
    boot: Router,
}

impl tower::Service<Request> for Switch {
    type Response = Response;
    type Error = Infallible;
    type Future = axum::routing::future::RouteFuture<Infallible>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let mut router = self.full.get().unwrap_or(&self.boot).clone();
        tower::Service::call(&mut router, request)
    }
}

/// Runs the server on `listener` until `shutdown` resolves, then drains and stops.
pub async fn serve(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let boot = Boot::new();
    boot.set_release(config.updates.release.clone());
    let (stop_tx, stop_rx) = watch::channel(false);
    let full: Arc<OnceLock<Router>> = Arc::new(OnceLock::new());
    let switch = Switch { full: full.clone(), boot: boot_router(boot.clone()) };
    let addr = listener.local_addr()?;
    info!(%addr, data_dir = %config.data_dir.display(), "listening");
    boot.listening();

    let (state_tx, state_rx) = tokio::sync::oneshot::channel::<(AppState, tokio::task::JoinHandle<()>)>();
    let api_url = match addr.ip() {
        ip if ip.is_unspecified() => format!("http://127.0.0.1:{}", addr.port()),
        std::net::IpAddr::V6(ip) => format!("http://[{ip}]:{}", addr.port()),
        ip => format!("http://{ip}:{}", addr.port()),
    };
    let recognizer = crate::net::Recognizer::default();
    let listening = crate::net::Listening {
        limits: config.net.clone(),
        trusted: config.trusted_proxies.clone(),
        hosts: crate::net::host::AllowedHosts::new(&config.public_origin, &config.extra_hosts, addr),
        https: config.public_origin.is_https(),
        recognizer: recognizer.clone(),
    };
    let init = tokio::spawn(initialise(config, api_url, boot.clone(), stop_rx.clone(), full, recognizer, state_tx));

    let server = tokio::spawn(crate::net::serve(listener, switch, listening, stop_rx.clone()));

    shutdown.await;
    info!("shutting down");
    boot.set_stopping();
    let _ = stop_tx.send(true);
    init.abort();
    match tokio::time::timeout(SHUTDOWN_GRACE, server).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => warn!(error = %e, "server task failed"),
        Err(_) => warn!("connections still open after the grace period; closing them"),
    }
    if let Ok((state, writer_task)) = state_rx.await {
        state.writer.shutdown().await;
        let _ = writer_task.await;
        // What the agents still run (turns, jobs, what escaped them) ends with the server; after
        // the writer, so a cut turn stays `running` for the next start to continue.
        let trees = state.agents.providers.trees().clone();
        let ended = tokio::task::spawn_blocking(move || trees.end_all()).await.unwrap_or(0);
        if ended > 0 {
            info!(processes = ended, "agent processes ended with the server");
        }
        state.db.read.close().await;
    }
    info!("stopped");
    Ok(())
}

/// Brings the database and writer up, retrying with backoff, then installs the full router.
async fn initialise(
    config: Config,
    api_url: String,
    boot: Arc<Boot>,
    stop: watch::Receiver<bool>,
    full: Arc<OnceLock<Router>>,
    recognizer: crate::net::Recognizer,
    state_tx: tokio::sync::oneshot::Sender<(AppState, tokio::task::JoinHandle<()>)>,
) {
    let mut delay = Duration::from_millis(250);
    loop {
        boot.set_starting("running database migrations");
        match AppState::build(config.clone(), api_url.clone(), boot.clone(), stop.clone()).await {
            Ok((state, writer_task)) => {
                let writer = state.writer.clone();
                let booted = std::time::SystemTime::now();
                let _ = full.set(router(state.clone()));
                let _ = recognizer.set(Arc::new(crate::auth::devices::Recognizer {
                    keys: state.keys.clone(),
                    owner: state.owner.clone(),
                    sessions: state.sessions.clone(),
                    devices: state.devices.clone(),
                }));
                boot.step("router");
                boot.set_ready(writer);
                info!(frontend = %web::describe_dist(&state.config.frontend_dir).display(), "ready in {}", boot.steps());
                tokio::spawn(after_ready(state.clone(), booted, stop.clone()));
                let _ = state_tx.send((state, writer_task));
                return;
            }
            Err(e) => {
                let reason = describe_init_error(&e);
                warn!(error = %reason, retry_in_ms = delay.as_millis() as u64, "start-up failed; retrying");
                boot.set_starting(reason);
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(MAX_INIT_RETRY_DELAY);
            }
        }
    }
}

/// How long the work that follows start-up waits once the server is ready: the first requests
/// (a health check, the PWA reconnecting after a restart or an update) are answered before it
/// takes the CPU (seeding the shell's source alone is a git commit).
const AFTER_READY_SETTLE: Duration = Duration::from_millis(150);

/// What start-up leaves until the server answers: interrupted turns resumed, housekeeping,
/// schedules, the shell's source and watcher, outdated apps rebuilt, the agent's theme file,
/// leftover temporary files, the daily update check.
async fn after_ready(state: AppState, booted: std::time::SystemTime, stop: watch::Receiver<bool>) {
    tokio::time::sleep(AFTER_READY_SETTLE).await;
    if *stop.borrow() {
        return;
    }
    state.start_background();
    let theme = state.theme.clone();
    tokio::task::spawn_blocking(move || {
        if let Err(e) = theme.seed_file() {
            warn!(error = %e, "the theme's file for the agent could not be written");
        }
    });
    tokio::spawn(crate::apps::apply::rebuild_outdated(state.apps.clone()));
    tokio::spawn(crate::apps::lifecycle::check_periodically(state.clone()));
    tokio::spawn(crate::shell::update::after_boot(state.clone()));
    tokio::spawn(crate::storage::remove_leftover_temps(state.config.data_dir.clone(), booted));
    tokio::spawn(crate::platform::updates::check_daily(state.updates.clone(), stop.clone()));
    state.schedules.start(stop).await;
    crate::memory::give_back_start_up();
}

fn describe_init_error(e: &Error) -> String {
    match e {
        Error::Migrate(m) => format!("database migration failed: {m}"),
        Error::Db(d) => format!("database unavailable: {d}"),
        Error::Io(io) => format!("data directory unavailable: {io}"),
        other => other.to_string(),
    }
}
