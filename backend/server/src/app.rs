//! Composition root: builds the shared state, assembles every route, and runs the server.
//!
//! The listener answers from the first moment: until the database is migrated and the
//! writer runs, a small boot router serves `/api/health`, `/api/ready` (503 with the
//! reason) and `/api/version`, and 503 for everything else. Then the full router takes over.

use std::convert::Infallible;
use std::future::Future;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRef, MatchedPath, Request};
use axum::http::HeaderValue;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower_http::compression::CompressionLayer;
use tower_http::trace::TraceLayer;
use tracing::{info, info_span, warn};

use crate::agent::registry::{KeyedLocks, Turns};
use crate::auth::limits::LoginLimiter;
use crate::auth::password::Passwords;
use crate::auth::{Keys, OwnerCache};
use crate::chats::{PurgeClock, ResponseCache};
use crate::config::Config;
use crate::db::{self, Db};
use crate::error::{Error, Result};
use crate::events::Hub;
use crate::ops::{self, Boot};
use crate::providers::Providers;
use crate::writer::{WriteCommand, WriterHandle};
use crate::{api, apps, auth, chats, events, providers, storage, web};

/// Hard cap on the graceful part of shutdown before connections are dropped.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(8);
/// Longest pause between start-up retries (e.g. while another process locks the database).
const MAX_INIT_RETRY_DELAY: Duration = Duration::from_secs(30);

/// Everything handlers share. Cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

/// The contents of [`AppState`].
pub struct Inner {
    pub config: Config,
    pub db: Db,
    pub writer: WriterHandle,
    pub hub: Arc<Hub>,
    pub keys: Keys,
    pub passwords: Passwords,
    pub login_limits: LoginLimiter,
    pub owner: OwnerCache,
    pub boot: Arc<Boot>,
    /// Flips to `true` when shutdown begins; long-lived streams end on it.
    pub shutdown: watch::Receiver<bool>,
    /// The agent CLIs and their credentials.
    pub providers: Providers,
    /// The running turn of each chat.
    pub turns: Turns,
    /// Per-chat decision locks (send / stop / answer / delete).
    pub chat_locks: KeyedLocks,
    pub purge_clock: PurgeClock,
    /// Serialized chat list and recent chat pages between writer commits.
    pub response_cache: ResponseCache,
    /// App registry rows between writer commits (token checks, storage authorisation).
    pub app_rows: crate::db::apps::RowCache,
    /// De-duplication and rate limit of browser error reports.
    pub client_reports: crate::telemetry::ClientReports,
    /// Per-app locks: applies, installs and updates of one app run one after the other.
    pub app_locks: KeyedLocks,
    /// Locks and quota accounting of app and shared storage.
    pub storage: Arc<crate::storage::Store>,
    /// The app proxy's client and concurrency limit.
    pub proxy: crate::apps::proxy::Proxy,
    /// Notifications: the centre, Web Push and its worker.
    pub push: crate::push::Push,
    /// Review and icon limits, update-check state and the store's catalog cache.
    pub lifecycle: crate::apps::lifecycle::Lifecycle,
    /// The mini-app bundler, started on first use (it owns a few threads).
    bundler: OnceLock<mobius_bundler::Bundler>,
}

/// Compiles at once: one on a small machine keeps requests responsive.
const MAX_PARALLEL_COMPILES: usize = 1;

impl Inner {
    /// The bundler, created on first use.
    pub fn bundler(&self) -> Result<&mobius_bundler::Bundler> {
        if let Some(b) = self.bundler.get() {
            return Ok(b);
        }
        let bundler = mobius_bundler::Bundler::new(MAX_PARALLEL_COMPILES)?;
        Ok(self.bundler.get_or_init(|| bundler))
    }
}

impl Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl FromRef<AppState> for Arc<Boot> {
    fn from_ref(state: &AppState) -> Self {
        state.boot.clone()
    }
}

impl AppState {
    /// Opens the database, runs migrations, starts the writer and loads the owner.
    pub async fn build(
        mut config: Config,
        api_url: String,
        boot: Arc<Boot>,
        shutdown: watch::Receiver<bool>,
    ) -> Result<(Self, tokio::task::JoinHandle<()>)> {
        std::fs::create_dir_all(&config.data_dir)?;
        config.data_dir = std::fs::canonicalize(&config.data_dir)?;
        let path = config.database_path();
        let conn = db::open_writer(&path).await?;
        db::migrate(&path).await?;
        let db = db::open_read_pool(&path).await?;
        let keys = Keys::load_or_create(&config)?;
        let hub = Arc::new(Hub::default());
        let (writer, task) = WriterHandle::spawn(conn, hub.clone());
        let owner = OwnerCache::default();
        if let Some(row) = db::owner::get(&db.read).await? {
            owner.set(row.username, row.token_epoch);
        }
        let orphans =
            crate::agent::process::reap_orphans(&crate::agent::agent_pid_dir(&config.data_dir), &config.data_dir);
        if orphans > 0 {
            warn!(orphans, "killed agent processes left behind by the previous run");
        }
        let interrupted = writer.call(|ack| WriteCommand::ReconcileStartup { ack }).await?;
        if !interrupted.is_empty() {
            warn!(
                chats = interrupted.len(),
                "turns interrupted by the last shutdown were closed; their chats can resume"
            );
        }
        let providers = Providers::new(&config, &config.data_dir, api_url);
        let push = crate::push::Push::start(&config, db.clone(), writer.clone())?;
        let config_quota = config.app_quota_bytes;
        let state = Self(Arc::new(Inner {
            config,
            db,
            writer,
            hub,
            keys,
            passwords: Passwords::default(),
            login_limits: LoginLimiter::default(),
            owner,
            boot,
            shutdown,
            providers,
            turns: Turns::default(),
            chat_locks: KeyedLocks::default(),
            purge_clock: PurgeClock::default(),
            response_cache: ResponseCache::default(),
            app_rows: crate::db::apps::RowCache::default(),
            client_reports: crate::telemetry::ClientReports::default(),
            app_locks: KeyedLocks::default(),
            storage: crate::storage::Store::new(config_quota),
            proxy: crate::apps::proxy::Proxy::default(),
            push,
            lifecycle: crate::apps::lifecycle::Lifecycle::default(),
            bundler: OnceLock::new(),
        }));
        Ok((state, task))
    }
}

/// Every route of the product, in one place.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .merge(ops::router().with_state(state.boot.clone()))
        .merge(auth::router())
        .merge(chats::router())
        .merge(storage::router())
        .merge(apps::router())
        .merge(apps::proxy::router())
        .merge(apps::secrets::router())
        .merge(chats::apps::router())
        .merge(providers::router())
        .merge(events::routes::router())
        .merge(crate::telemetry::router())
        .merge(crate::push::router())
        .fallback(api_not_found)
        .method_not_allowed_fallback(api_method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), auth::csrf::reject_cross_site))
        .layer(middleware::from_fn(web::frame_cors))
        .layer(DefaultBodyLimit::max(api::MAX_JSON_BODY_BYTES));
    Router::new()
        .nest("/api", api)
        .merge(apps::public_router())
        .merge(web::vendor_router())
        .route("/shell/embed/chat", axum::routing::get(web::embed_chat))
        .fallback(web::serve_frontend)
        .layer(middleware::from_fn_with_state(state.clone(), web::security_headers))
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
fn boot_router(boot: Arc<Boot>, https: bool) -> Router {
    Router::new()
        .nest("/api", ops::router().with_state(boot))
        .fallback(|| async { Error::unavailable("starting", "Möbius is starting; try again in a moment.") })
        .layer(middleware::map_response(move |mut response: Response| async move {
            web::apply_security_headers(response.headers_mut(), https);
            response
        }))
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
    let (stop_tx, stop_rx) = watch::channel(false);
    let full: Arc<OnceLock<Router>> = Arc::new(OnceLock::new());
    let switch = Switch { full: full.clone(), boot: boot_router(boot.clone(), config.public_origin.is_https()) };
    let addr = listener.local_addr()?;
    info!(%addr, data_dir = %config.data_dir.display(), "listening");

    let (state_tx, state_rx) = tokio::sync::oneshot::channel::<(AppState, tokio::task::JoinHandle<()>)>();
    let api_url = match addr.ip() {
        ip if ip.is_unspecified() => format!("http://127.0.0.1:{}", addr.port()),
        std::net::IpAddr::V6(ip) => format!("http://[{ip}]:{}", addr.port()),
        ip => format!("http://{ip}:{}", addr.port()),
    };
    let init = tokio::spawn(initialise(config, api_url, boot.clone(), stop_rx.clone(), full, state_tx));

    let mut stop_wait = stop_rx.clone();
    let server = axum::serve(listener, tower::make::Shared::new(switch)).with_graceful_shutdown(async move {
        stopping(&mut stop_wait).await;
    });
    let server = tokio::spawn(async move { server.await });

    shutdown.await;
    info!("shutting down");
    boot.set_stopping();
    let _ = stop_tx.send(true);
    init.abort();
    match tokio::time::timeout(SHUTDOWN_GRACE, server).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => warn!(error = %e, "server error during shutdown"),
        Ok(Err(e)) => warn!(error = %e, "server task failed"),
        Err(_) => warn!("connections still open after the grace period; closing them"),
    }
    if let Ok((state, writer_task)) = state_rx.await {
        state.writer.shutdown().await;
        let _ = writer_task.await;
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
    state_tx: tokio::sync::oneshot::Sender<(AppState, tokio::task::JoinHandle<()>)>,
) {
    let mut delay = Duration::from_millis(250);
    loop {
        boot.set_starting("running database migrations");
        match AppState::build(config.clone(), api_url.clone(), boot.clone(), stop.clone()).await {
            Ok((state, writer_task)) => {
                let writer = state.writer.clone();
                let _ = full.set(router(state.clone()));
                info!(frontend = %web::describe_dist(&state.config.frontend_dir).display(), "ready");
                boot.set_ready(writer);
                tokio::spawn(crate::apps::apply::rebuild_outdated(state.clone()));
                tokio::spawn(crate::apps::lifecycle::check_periodically(state.clone()));
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

fn describe_init_error(e: &Error) -> String {
    match e {
        Error::Migrate(m) => format!("database migration failed: {m}"),
        Error::Db(d) => format!("database unavailable: {d}"),
        Error::Io(io) => format!("data directory unavailable: {io}"),
        other => other.to_string(),
    }
}

/// Resolves once shutdown has begun.
pub async fn stopping(rx: &mut watch::Receiver<bool>) {
    while !*rx.borrow_and_update() {
        if rx.changed().await.is_err() {
            return;
        }
    }
}

/// Response helper for handlers that only acknowledge.
pub fn no_content() -> Response {
    let mut response = axum::http::StatusCode::NO_CONTENT.into_response();
    response.headers_mut().insert(axum::http::header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
