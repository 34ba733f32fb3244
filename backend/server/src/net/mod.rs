//! The listener: accepts TCP connections and serves HTTP/1.1 on them (hyper), with every
//! connection bounded in number and in time, so slow or idle clients cannot exhaust the
//! server (`Config::net`).
//!
//! - At most `max_connections` open, and `max_connections_per_address` per client address
//!   (trusted proxies exempt: they multiplex many clients). At the global cap, a new
//!   connection replaces the one that has waited longest without a request in progress (an
//!   idle keep-alive, or a request head that is still trickling in); when every connection is
//!   busy, the new one is closed at once.
//! - A request head must arrive within `header_read_timeout` of the connection opening (or of
//!   its first byte after an idle keep-alive); an idle keep-alive connection is closed after
//!   `keep_alive_idle`; a request body that pauses longer than `request_body_timeout`, or that
//!   averages less than `request_body_min_rate` once `request_body_grace` has passed, ends the
//!   request with 408.
//! - At most `max_uploads_per_address` requests per client address (the forwarded one behind a
//!   trusted proxy) may be receiving a body at once; more get 429.
//! - `reserved_connections` of the slots are kept for the owner's devices: while
//!   `max_connections − reserved` requests are in progress, a request from anyone else gets 503.
//!   A busy connection cannot be evicted, so this is what keeps slow requests from everyone
//!   else from filling every slot; with an idle one always left to evict, a known device gets in.
//!   Who is known is decided from the request's headers by a [`Recognize`] (`auth` provides
//!   it), asked only when one of these limits would refuse the request.
//! - Each request carries its TCP peer (`ConnectInfo`, see [`client`]) and must name a host
//!   this server answers for ([`host`]), else 421 before any route runs.
//! - Every response leaves with the security headers ([`headers::apply_security_headers`]),
//!   whichever router (boot or full) made it: here once, not as a layer cloned per route.
//!
//! One sweeper task checks the deadlines of every connection (heads, keep-alives, paused
//! bodies) a few times per timeout; the request path touches only atomics, no timers.

pub mod client;
pub mod headers;
pub mod host;

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderValue, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::task::AtomicWaker;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use tower::ServiceExt;

use crate::config::NetLimits;
use crate::error::Error;
use crate::locks::Unpoisoned;
use client::{TrustedProxies, canonical, client_ip, limit_key};
use host::AllowedHosts;

/// Largest read buffer of a connection: bounds what a request head may cost in memory.
const MAX_CONNECTION_BUFFER_BYTES: usize = 64 * 1024;
/// Pause after an accept error such as running out of file descriptors.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);
/// After this many connections were open at once, the heap is trimmed once they are mostly
/// gone (a burst's buffers would otherwise stay resident).
const TRIM_AFTER_PEAK_CONNECTIONS: usize = 256;
/// The sweeper looks at deadlines at most this often, and at least this often.
const MIN_SWEEP_EVERY: Duration = Duration::from_millis(50);
const MAX_SWEEP_EVERY: Duration = Duration::from_secs(1);

/// How long a client refused by a limit is asked to wait (`Retry-After`).
const RETRY_AFTER_SECS: u64 = 5;

/// Tells a request from one of the owner's devices by its headers alone, cheaply and without
/// I/O (a bearer token that verifies, a known device credential). `auth` implements it; the
/// listener asks only when a limit would otherwise refuse the request.
pub trait Recognize: Send + Sync {
    /// True when the request comes from one of the owner's devices.
    fn known(&self, headers: &HeaderMap) -> bool;
}

/// Where the full server puts its [`Recognize`] once it is built (until then nobody is known).
pub type Recognizer = Arc<OnceLock<Arc<dyn Recognize>>>;

/// What the per-request wrapper needs, shared by every connection.
struct Shared {
    limits: NetLimits,
    trusted: TrustedProxies,
    hosts: AllowedHosts,
    https: bool,
    registry: Registry,
    recognizer: Recognizer,
}

impl Shared {
    fn known(&self, headers: &HeaderMap) -> bool {
        self.recognizer.get().is_some_and(|r| r.known(headers))
    }
}

/// How the listener is set up: its limits, whom it trusts, the host names it answers, and who
/// the owner's devices are.
pub struct Listening {
    pub limits: NetLimits,
    pub trusted: TrustedProxies,
    pub hosts: AllowedHosts,
    /// The public origin is https (HSTS).
    pub https: bool,
    pub recognizer: Recognizer,
}

/// Serves `service` on `listener` until `stop` turns true, then lets every connection finish
/// its current response (SSE streams end on the same signal) and returns once all are closed.
pub async fn serve<S>(listener: TcpListener, service: S, setup: Listening, mut stop: watch::Receiver<bool>)
where
    S: tower::Service<Request<Body>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    let Listening { limits, trusted, hosts, https, recognizer } = setup;
    let shared = Arc::new(Shared { registry: Registry::new(&limits), limits, trusted, hosts, https, recognizer });
    let sweeper = tokio::spawn(sweep(shared.clone()));
    let (done_tx, mut done_rx) = watch::channel(());
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = crate::shutdown::stopping(&mut stop) => break,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                if is_resource_error(&e) {
                    tracing::warn!(error = %e, "cannot accept a connection now; pausing");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                }
                continue;
            }
        };
        let ip = canonical(peer.ip());
        let proxy = shared.trusted.contains(ip);
        let Some((id, activity)) = shared.registry.admit(ip, proxy) else {
            // Over a limit: closing at once costs the least.
            drop(stream);
            continue;
        };
        let shared = shared.clone();
        let service = service.clone();
        let stop = stop.clone();
        let done = done_tx.clone();
        tokio::spawn(async move {
            connection(stream, peer, activity.clone(), &shared, service, stop).await;
            shared.registry.remove(id);
            drop(done);
        });
    }
    drop(listener);
    drop(done_tx);
    // Resolves when every connection task has dropped its sender (the sweeper keeps closing
    // slow heads meanwhile).
    while done_rx.changed().await.is_ok() {}
    sweeper.abort();
}

fn is_resource_error(e: &io::Error) -> bool {
    // EMFILE, ENFILE, ENOBUFS, ENOMEM: the process or system is out of something.
    matches!(e.raw_os_error(), Some(24 | 23 | 105 | 12))
}

/// Serves one connection until it ends, is killed by a limit, or shutdown finishes it.
async fn connection<S>(
    stream: TcpStream,
    peer: SocketAddr,
    activity: Arc<Activity>,
    shared: &Arc<Shared>,
    service: S,
    mut stop: watch::Receiver<bool>,
) where
    S: tower::Service<Request<Body>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    let io = TokioIo::new(Watched { inner: stream, activity: activity.clone(), base: shared.registry.base });
    let handler = {
        let shared = shared.clone();
        let activity = activity.clone();
        hyper::service::service_fn(move |request: Request<Incoming>| {
            let shared = shared.clone();
            let activity = activity.clone();
            let service = service.clone();
            async move { Ok::<_, Infallible>(handle(request, peer, activity, shared, service).await) }
        })
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.max_buf_size(MAX_CONNECTION_BUFFER_BYTES);
    let conn = builder.serve_connection(io, handler);
    tokio::pin!(conn);
    let mut draining = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::trace!(error = %e, "connection ended with an error");
                }
                return;
            }
            () = activity.kill.notified() => return,
            () = crate::shutdown::stopping(&mut stop), if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// One request: host check, the reserve for known devices, the per-address upload cap, peer
/// address, timed body, busy accounting, 408 on a stalled or too slow body.
async fn handle<S>(
    request: Request<Incoming>,
    peer: SocketAddr,
    activity: Arc<Activity>,
    shared: Arc<Shared>,
    service: S,
) -> Response
where
    S: tower::Service<Request<Body>, Response = Response, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
{
    let guard = RequestGuard::begin(activity.clone(), shared.registry.base);
    let (mut parts, body) = request.into_parts();
    let mut response = if !shared.hosts.admits(parts.uri.path(), &parts.headers) {
        Error::Client {
            status: StatusCode::MISDIRECTED_REQUEST,
            code: "wrong_host",
            message: "This server does not answer for that host name.".into(),
            retry_after_secs: None,
        }
        .into_response()
    } else if guard.in_progress > shared.registry.open_to_anyone
        && !host::is_probe(parts.uri.path())
        && !shared.known(&parts.headers)
    {
        refused(Error::Client {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: "server_busy",
            message: "The server is busy; try again in a moment.".into(),
            retry_after_secs: Some(RETRY_AFTER_SECS),
        })
    } else {
        let upload = if hyper::body::Body::is_end_stream(&body) {
            Ok(None)
        } else {
            let client = limit_key(client_ip(peer.ip(), &parts.headers, &shared.trusted));
            Registry::begin_upload(&shared, client, &parts.headers).map(Some)
        };
        match upload {
            Err(()) => refused(Error::too_many(
                "too_many_uploads",
                "Too many uploads from your address at once; send this one when another has finished.",
                RETRY_AFTER_SECS,
            )),
            Ok(upload) => {
                parts.extensions.insert(ConnectInfo(peer));
                let base = shared.registry.base;
                let body = TimedBody { inner: body, activity: activity.clone(), base, upload };
                let request = Request::from_parts(parts, Body::new(body));
                let response = match service.oneshot(request).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                };
                match activity.body_timed_out.swap(NOT_TIMED_OUT, Ordering::AcqRel) {
                    PAUSED => body_timeout_response("The request body stopped arriving; send it again."),
                    TOO_SLOW => body_timeout_response("The request body arrived too slowly; send it again."),
                    _ => response,
                }
            }
        }
    };
    headers::apply_security_headers(response.headers_mut(), shared.https);
    response.map(|body| Body::new(GuardedBody { inner: body, _guard: guard }))
}

/// A request refused by a limit before its body was read: the connection closes after the
/// answer (the unread body must not be taken for the next request).
fn refused(error: Error) -> Response {
    let mut response = error.into_response();
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

fn body_timeout_response(message: &str) -> Response {
    // The rest of the body may still come: do not read it as the next request.
    refused(Error::Client {
        status: StatusCode::REQUEST_TIMEOUT,
        code: "request_timeout",
        message: message.into(),
        retry_after_secs: None,
    })
}

// ---- connection state ----

/// What the sweeper knows about one connection. `state` packs the time (ms since the
/// registry's base) the connection entered its current wait with one bit: set while a request
/// head is awaited (header timeout), clear while it idles between requests (keep-alive).
#[derive(Debug)]
pub struct Activity {
    busy: AtomicU32,
    state: AtomicU64,
    /// When the request body began to keep the handler waiting (ms since the base; 0: it does not).
    body_waiting: AtomicU64,
    /// When the handler first read the request body (ms since the base; 0: not yet).
    body_started: AtomicU64,
    /// Body bytes received so far.
    body_bytes: AtomicU64,
    body_waker: AtomicWaker,
    /// [`NOT_TIMED_OUT`], [`PAUSED`] or [`TOO_SLOW`].
    body_timed_out: AtomicU8,
    /// Requests in progress on every connection (the registry's count, shared).
    in_progress: Arc<AtomicUsize>,
    kill: Notify,
}

const AWAITING_HEAD: u64 = 1;
const NOT_TIMED_OUT: u8 = 0;
/// The body paused longer than `request_body_timeout`.
const PAUSED: u8 = 1;
/// The body averaged less than `request_body_min_rate` after its grace.
const TOO_SLOW: u8 = 2;

impl Activity {
    fn new(now: u64, in_progress: Arc<AtomicUsize>) -> Self {
        Self {
            busy: AtomicU32::new(0),
            state: AtomicU64::new(now << 1 | AWAITING_HEAD),
            body_waiting: AtomicU64::new(0),
            body_started: AtomicU64::new(0),
            body_bytes: AtomicU64::new(0),
            body_waker: AtomicWaker::new(),
            body_timed_out: AtomicU8::new(NOT_TIMED_OUT),
            in_progress,
            kill: Notify::new(),
        }
    }

    /// Bytes arrived: while idle, they start a request head.
    fn on_read(&self, base: Instant) {
        if self.busy.load(Ordering::Acquire) == 0 && self.state.load(Ordering::Acquire) & AWAITING_HEAD == 0 {
            self.state.store(millis(base) << 1 | AWAITING_HEAD, Ordering::Release);
        }
    }

    /// When the current wait began and whether it is for a request head; `None` while busy.
    fn waiting(&self) -> Option<(u64, bool)> {
        if self.busy.load(Ordering::Acquire) > 0 {
            return None;
        }
        let state = self.state.load(Ordering::Acquire);
        Some((state >> 1, state & AWAITING_HEAD != 0))
    }
}

/// A request in progress on a connection, until its response body is dropped.
struct RequestGuard {
    activity: Arc<Activity>,
    base: Instant,
    /// Requests in progress on every connection, this one included, when it began.
    in_progress: usize,
}

impl RequestGuard {
    fn begin(activity: Arc<Activity>, base: Instant) -> Self {
        activity.busy.fetch_add(1, Ordering::AcqRel);
        activity.body_waiting.store(0, Ordering::Release);
        activity.body_started.store(0, Ordering::Release);
        activity.body_bytes.store(0, Ordering::Release);
        activity.body_timed_out.store(NOT_TIMED_OUT, Ordering::Release);
        let in_progress = activity.in_progress.fetch_add(1, Ordering::AcqRel) + 1;
        Self { activity, base, in_progress }
    }
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.activity.state.store(millis(self.base) << 1, Ordering::Release);
        self.activity.busy.fetch_sub(1, Ordering::AcqRel);
        self.activity.in_progress.fetch_sub(1, Ordering::AcqRel);
    }
}

fn millis(base: Instant) -> u64 {
    u64::try_from(base.elapsed().as_millis()).unwrap_or(u64::MAX >> 2)
}

/// Every open connection, for the limits and the sweeper.
struct Registry {
    base: Instant,
    max: usize,
    max_per_address: usize,
    max_uploads_per_address: usize,
    /// Requests in progress beyond this many are let in only from known devices.
    open_to_anyone: usize,
    in_progress: Arc<AtomicUsize>,
    conns: Mutex<Conns>,
}

#[derive(Default)]
struct Conns {
    next_id: u64,
    by_id: HashMap<u64, Conn>,
    per_address: HashMap<IpAddr, usize>,
    /// Requests receiving a body, per client address.
    uploads: HashMap<IpAddr, usize>,
}

/// A request counted against its client's uploads until its body has arrived (or is dropped).
struct UploadSlot {
    shared: Arc<Shared>,
    client: IpAddr,
}

impl Drop for UploadSlot {
    fn drop(&mut self) {
        let mut c = self.shared.registry.conns.locked();
        if let Some(n) = c.uploads.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                c.uploads.remove(&self.client);
            }
        }
    }
}

struct Conn {
    /// The address it counts against (none for a trusted proxy).
    key: Option<IpAddr>,
    activity: Arc<Activity>,
}

impl Registry {
    fn new(limits: &NetLimits) -> Self {
        // Never more than half the slots (a test's or a tiny server's cap may be small).
        let reserved = limits.reserved_connections.min(limits.max_connections / 2);
        Self {
            base: Instant::now(),
            max: limits.max_connections,
            max_per_address: limits.max_connections_per_address,
            max_uploads_per_address: limits.max_uploads_per_address,
            open_to_anyone: limits.max_connections - reserved,
            in_progress: Arc::default(),
            conns: Mutex::new(Conns::default()),
        }
    }

    /// Counts an upload from `client`; over the per-address cap it is refused, unless it
    /// comes from a known device.
    fn begin_upload(shared: &Arc<Shared>, client: IpAddr, headers: &HeaderMap) -> Result<UploadSlot, ()> {
        let over = {
            let mut c = shared.registry.conns.locked();
            let n = c.uploads.entry(client).or_insert(0);
            *n += 1;
            *n > shared.registry.max_uploads_per_address
        };
        let slot = UploadSlot { shared: shared.clone(), client };
        if over && !shared.known(headers) {
            return Err(());
        }
        Ok(slot)
    }

    /// Admits a connection from `ip`, evicting the longest-waiting idle one at the global
    /// cap; `None` when a limit refuses it.
    fn admit(&self, ip: IpAddr, proxy: bool) -> Option<(u64, Arc<Activity>)> {
        let mut c = self.conns.locked();
        let key = (!proxy).then(|| limit_key(ip));
        if let Some(key) = key
            && c.per_address.get(&key).copied().unwrap_or(0) >= self.max_per_address
        {
            return None;
        }
        if c.by_id.len() >= self.max {
            let victim = c
                .by_id
                .iter()
                .filter_map(|(id, conn)| conn.activity.waiting().map(|(since, _)| (since, *id)))
                .min()
                .map(|(_, id)| id)?;
            if let Some(conn) = Self::take(&mut c, victim) {
                conn.activity.kill.notify_one();
            }
        }
        c.next_id += 1;
        let id = c.next_id;
        let activity = Arc::new(Activity::new(millis(self.base), self.in_progress.clone()));
        if let Some(key) = key {
            *c.per_address.entry(key).or_insert(0) += 1;
        }
        c.by_id.insert(id, Conn { key, activity: activity.clone() });
        Some((id, activity))
    }

    fn remove(&self, id: u64) {
        let mut c = self.conns.locked();
        Self::take(&mut c, id);
    }

    fn take(c: &mut Conns, id: u64) -> Option<Conn> {
        let conn = c.by_id.remove(&id)?;
        if let Some(key) = conn.key
            && let Some(n) = c.per_address.get_mut(&key)
        {
            *n -= 1;
            if *n == 0 {
                c.per_address.remove(&key);
            }
        }
        Some(conn)
    }

    /// Closes every connection whose header or keep-alive deadline has passed and fails every
    /// request body that has paused too long or arrives too slowly; returns how many
    /// connections stay open.
    fn expire(&self, limits: &NetLimits) -> usize {
        let now = millis(self.base);
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let (header_ms, idle_ms) = (ms(limits.header_read_timeout), ms(limits.keep_alive_idle));
        let (body_ms, grace_ms, rate) =
            (ms(limits.request_body_timeout), ms(limits.request_body_grace), limits.request_body_min_rate);
        let mut c = self.conns.locked();
        let expired: Vec<u64> = c
            .by_id
            .iter()
            .filter_map(|(id, conn)| {
                let Some((since, head)) = conn.activity.waiting() else {
                    let a = &conn.activity;
                    let body_since = a.body_waiting.load(Ordering::Acquire);
                    if body_since != 0 {
                        let paused = now.saturating_sub(body_since) >= body_ms;
                        // Each byte received earns 1/rate s on top of the grace.
                        let started = a.body_started.load(Ordering::Acquire);
                        let earned = a.body_bytes.load(Ordering::Acquire).saturating_mul(1000) / rate.max(1);
                        let slow = rate > 0 && started != 0 && now.saturating_sub(started) > grace_ms + earned;
                        if paused || slow {
                            a.body_timed_out.store(if paused { PAUSED } else { TOO_SLOW }, Ordering::Release);
                            a.body_waker.wake();
                        }
                    }
                    return None;
                };
                let limit = if head { header_ms } else { idle_ms };
                (now.saturating_sub(since) >= limit).then_some(*id)
            })
            .collect();
        for id in expired {
            if let Some(conn) = Self::take(&mut c, id) {
                conn.activity.kill.notify_one();
            }
        }
        c.by_id.len()
    }
}

async fn sweep(shared: Arc<Shared>) {
    let limits = &shared.limits;
    let shortest = limits.header_read_timeout.min(limits.keep_alive_idle).min(limits.request_body_timeout);
    let every = (shortest / 4).clamp(MIN_SWEEP_EVERY, MAX_SWEEP_EVERY);
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut peak = 0;
    loop {
        tick.tick().await;
        let open = shared.registry.expire(limits);
        peak = peak.max(open);
        if peak >= TRIM_AFTER_PEAK_CONNECTIONS && open <= peak / 4 {
            peak = open;
            crate::memory::trim_now();
        }
    }
}

// ---- I/O and bodies ----

/// The socket, noting when bytes arrive (a request head starting).
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
    base: Instant,
}

impl AsyncRead for Watched {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.on_read(self.base);
        }
        result
    }
}

impl AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The request body, failing once the sweeper finds it paused longer than the body timeout or
/// arriving slower than the minimum rate; it holds its client's upload slot until it ends.
struct TimedBody {
    inner: Incoming,
    activity: Arc<Activity>,
    base: Instant,
    upload: Option<UploadSlot>,
}

impl Drop for TimedBody {
    fn drop(&mut self) {
        self.activity.body_waiting.store(0, Ordering::Release);
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the request body stopped arriving")]
struct BodyTimeout;

impl hyper::body::Body for TimedBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let timed_out = |activity: &Activity| activity.body_timed_out.load(Ordering::Acquire) != NOT_TIMED_OUT;
        if timed_out(&self.activity) {
            return Poll::Ready(Some(Err(Box::new(BodyTimeout))));
        }
        let this = &mut *self;
        if this.activity.body_started.load(Ordering::Acquire) == 0 {
            // Never 0, which means "not started".
            this.activity.body_started.store(millis(this.base).max(1), Ordering::Release);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.activity.body_waiting.store(0, Ordering::Release);
                if let Some(Ok(data)) = frame.as_ref().map(|f| f.as_ref().map(Frame::data_ref)) {
                    let n = data.map_or(0, |d| d.len() as u64);
                    this.activity.body_bytes.fetch_add(n, Ordering::AcqRel);
                }
                if frame.is_none() || this.inner.is_end_stream() {
                    // The whole body is here: it no longer counts as an upload.
                    this.upload = None;
                }
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                this.activity.body_waker.register(cx.waker());
                if this.activity.body_waiting.load(Ordering::Acquire) == 0 {
                    // Never 0, which means "not waiting".
                    this.activity.body_waiting.store(millis(this.base).max(1), Ordering::Release);
                }
                // The sweeper may have fired between the first check and the registration.
                if timed_out(&this.activity) {
                    return Poll::Ready(Some(Err(Box::new(BodyTimeout))));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The response body, holding its request's guard until hyper is done with it.
struct GuardedBody {
    inner: Body,
    _guard: RequestGuard,
}

impl hyper::body::Body for GuardedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: usize, per_address: usize) -> NetLimits {
        NetLimits { max_connections: max, max_connections_per_address: per_address, ..NetLimits::default() }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[tokio::test(start_paused = true)]
    async fn per_address_cap_refuses_and_proxies_are_exempt() {
        let r = Registry::new(&limits(100, 2));
        assert!(r.admit(ip("192.0.2.1"), false).is_some());
        let (second, _) = r.admit(ip("192.0.2.1"), false).expect("second");
        assert!(r.admit(ip("192.0.2.1"), false).is_none(), "third from one address");
        assert!(r.admit(ip("192.0.2.2"), false).is_some(), "another address");
        for _ in 0..5 {
            assert!(r.admit(ip("172.18.0.2"), true).is_some(), "a trusted proxy is not capped per address");
        }
        r.remove(second);
        assert!(r.admit(ip("192.0.2.1"), false).is_some(), "a slot came back");
    }

    #[tokio::test(start_paused = true)]
    async fn at_the_global_cap_the_longest_waiting_idle_connection_makes_room() {
        let r = Registry::new(&limits(2, 10));
        let (_, oldest) = r.admit(ip("192.0.2.1"), false).expect("a");
        tokio::time::advance(Duration::from_millis(5)).await;
        let (_, busy) = r.admit(ip("192.0.2.2"), false).expect("b");
        let _request = RequestGuard::begin(busy.clone(), r.base);
        tokio::time::advance(Duration::from_millis(5)).await;
        let (_, newest) = r.admit(ip("192.0.2.3"), false).expect("c evicts a");
        assert!(tokio::time::timeout(Duration::from_millis(1), oldest.kill.notified()).await.is_ok(), "a was killed");
        // Now b is busy and c is idle: c goes for d.
        let (_, d) = r.admit(ip("192.0.2.4"), false).expect("d evicts c");
        assert!(tokio::time::timeout(Duration::from_millis(1), newest.kill.notified()).await.is_ok());
        let _second = RequestGuard::begin(d, r.base);
        assert!(r.admit(ip("192.0.2.5"), false).is_none(), "every connection busy: refused");
    }

    #[tokio::test(start_paused = true)]
    async fn heads_and_idle_keep_alives_expire_on_their_own_deadlines() {
        let r = Registry::new(&limits(10, 10));
        let (_, fresh) = r.admit(ip("192.0.2.1"), false).expect("fresh");
        let (_, served) = r.admit(ip("192.0.2.2"), false).expect("served");
        drop(RequestGuard::begin(served.clone(), r.base)); // one request, now idle
        let limits = NetLimits {
            header_read_timeout: Duration::from_secs(2),
            keep_alive_idle: Duration::from_secs(5),
            request_body_timeout: Duration::from_secs(3),
            ..NetLimits::default()
        };
        tokio::time::advance(Duration::from_secs(2)).await;
        r.expire(&limits);
        assert!(tokio::time::timeout(Duration::from_millis(1), fresh.kill.notified()).await.is_ok(), "no head in time");
        assert_eq!(r.conns.locked().by_id.len(), 1, "the idle keep-alive stays");
        served.on_read(r.base); // a new head starts trickling in: the header deadline applies
        tokio::time::advance(Duration::from_secs(2)).await;
        r.expire(&limits);
        assert!(tokio::time::timeout(Duration::from_millis(1), served.kill.notified()).await.is_ok());
        assert!(r.conns.locked().by_id.is_empty());
        // A request whose body pauses: flagged once the pause reaches the body timeout.
        let (_, uploading) = r.admit(ip("192.0.2.3"), false).expect("uploading");
        let _request = RequestGuard::begin(uploading.clone(), r.base);
        uploading.body_waiting.store(millis(r.base).max(1), Ordering::Release);
        tokio::time::advance(Duration::from_secs(2)).await;
        r.expire(&limits);
        assert_eq!(uploading.body_timed_out.load(Ordering::Acquire), NOT_TIMED_OUT);
        tokio::time::advance(Duration::from_secs(1)).await;
        r.expire(&limits);
        assert_eq!(uploading.body_timed_out.load(Ordering::Acquire), PAUSED, "the paused body timed out");
        assert_eq!(r.conns.locked().by_id.len(), 1, "a busy connection is not closed");
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_below_the_minimum_rate_times_out_once_its_grace_and_earned_time_are_spent() {
        let r = Registry::new(&limits(10, 10));
        let limits = NetLimits {
            request_body_timeout: Duration::from_secs(30),
            request_body_min_rate: 1000,
            request_body_grace: Duration::from_secs(10),
            ..NetLimits::default()
        };
        let (_, upload) = r.admit(ip("192.0.2.1"), false).expect("upload");
        let _request = RequestGuard::begin(upload.clone(), r.base);
        upload.body_started.store(millis(r.base).max(1), Ordering::Release);
        // 5,000 bytes earn 5 s on top of the 10 s grace; the body keeps the handler waiting.
        upload.body_bytes.store(5_000, Ordering::Release);
        upload.body_waiting.store(millis(r.base).max(1), Ordering::Release);
        tokio::time::advance(Duration::from_millis(14_900)).await;
        upload.body_waiting.store(millis(r.base).max(1), Ordering::Release); // a byte just came
        r.expire(&limits);
        assert_eq!(upload.body_timed_out.load(Ordering::Acquire), NOT_TIMED_OUT, "within grace + earned time");
        tokio::time::advance(Duration::from_millis(200)).await;
        r.expire(&limits);
        assert_eq!(upload.body_timed_out.load(Ordering::Acquire), TOO_SLOW, "1,000 B/s were not kept up");
        // Off with a rate of 0: only the pause counts.
        let (_, other) = r.admit(ip("192.0.2.2"), false).expect("other");
        let _second = RequestGuard::begin(other.clone(), r.base);
        other.body_started.store(millis(r.base).max(1), Ordering::Release);
        tokio::time::advance(Duration::from_secs(20)).await;
        other.body_waiting.store(millis(r.base).max(1), Ordering::Release);
        r.expire(&NetLimits { request_body_min_rate: 0, ..limits });
        assert_eq!(other.body_timed_out.load(Ordering::Acquire), NOT_TIMED_OUT);
    }

    #[tokio::test(start_paused = true)]
    async fn requests_in_progress_are_counted_across_connections_and_half_the_slots_at_most_are_reserved() {
        let r = Registry::new(&NetLimits { max_connections: 10, reserved_connections: 64, ..NetLimits::default() });
        assert_eq!(r.open_to_anyone, 5, "a reserve larger than half the slots is held to half");
        let (_, a) = r.admit(ip("192.0.2.1"), false).expect("a");
        let (_, b) = r.admit(ip("192.0.2.2"), false).expect("b");
        let first = RequestGuard::begin(a.clone(), r.base);
        let second = RequestGuard::begin(b.clone(), r.base);
        assert_eq!((first.in_progress, second.in_progress), (1, 2));
        drop(first);
        drop(second);
        assert_eq!(RequestGuard::begin(a, r.base).in_progress, 1, "finished requests are no longer counted");
    }
}
