//! libgit2's only network transport here: stateless smart HTTP, fetch only, over reqwest with
//! rustls (no OpenSSL). Registered for `https://` and `http://`; the resolver that connects
//! refuses non-public addresses, so the address checked is the address used, redirects included.
//!
//! Redirects: only the ref advertisement (`GET …/info/refs`) may redirect, at most
//! [`MAX_REDIRECTS`] times, to https only, each hop checked like the first; the upload-pack
//! POSTs go to wherever the advertisement finally came from (git's `http.followRedirects=initial`).
//! No proxy is used: a proxy would resolve the name on our behalf, out of the resolver's reach.

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, Bytes};
use git2::transport::{Service, SmartSubtransport, SmartSubtransportStream, Transport};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use reqwest::{StatusCode, Url, redirect};

use super::ssrf;
use crate::error::{Error, Result};
use crate::locks::Unpoisoned;

/// Everything one fetch may receive (ref advertisement and packs together). A mini-app's
/// repository is a few hundred KiB.
pub const MAX_FETCH_RESPONSE_BYTES: u64 = 100 * 1024 * 1024;
/// One upload-pack request (the wants and haves of a negotiation round).
const MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;
/// The whole fetch: every connection, request and download.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(120);
/// Opening one connection (TCP and TLS).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Redirects followed for the ref advertisement.
pub const MAX_REDIRECTS: usize = 3;
const USER_AGENT: &str = concat!("git/2.0 (mobius/", env!("CARGO_PKG_VERSION"), ")");
const ADVERTISEMENT: &str = "application/x-git-upload-pack-advertisement";
const UPLOAD_REQUEST: &str = "application/x-git-upload-pack-request";
const UPLOAD_RESULT: &str = "application/x-git-upload-pack-result";
const INFO_REFS: &str = "/info/refs?service=git-upload-pack";
const PUSH_REFUSED: &str = "pushing is not supported: Mobius only fetches app sources";

/// What a fetch may reach and how much it may take. The product uses [`FetchPolicy::public`];
/// only this module's tests can build a looser one.
#[derive(Clone, Debug)]
pub struct FetchPolicy {
    allow_http: bool,
    allow_loopback: bool,
    max_response_bytes: u64,
    timeout: Duration,
}

impl FetchPolicy {
    /// https to public addresses only, within the limits above.
    pub fn public() -> Self {
        Self {
            allow_http: false,
            allow_loopback: false,
            max_response_bytes: MAX_FETCH_RESPONSE_BYTES,
            timeout: FETCH_TIMEOUT,
        }
    }

    /// Plain http to loopback as well: for a test server on `127.0.0.1`.
    #[cfg(test)]
    fn loopback_http() -> Self {
        Self { allow_http: true, allow_loopback: true, ..Self::public() }
    }

    /// The app proxy's rules: http or https, public addresses only. `loopback` admits
    /// `127.0.0.1`/`::1` too; only a test configuration sets it (see `Config::proxy_allow_loopback`).
    pub fn proxy(loopback: bool) -> Self {
        Self { allow_http: true, allow_loopback: loopback, ..Self::public() }
    }

    fn allows_ip(&self, ip: IpAddr) -> bool {
        ssrf::is_public(ip) || (self.allow_loopback && ip.to_canonical().is_loopback())
    }

    /// Checks a URL before any request to it (the first and every redirect). A host name is
    /// checked later, by the resolver; an address literal is never resolved, so it is checked here.
    fn check_url(&self, url: &Url) -> Result<(), Failure> {
        match url.scheme() {
            "https" => {}
            "http" if self.allow_http => {}
            _ => return Err(Failure::NotAllowed("only https:// URLs".into())),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Failure::NotAllowed("credentials in the URL".into()));
        }
        let host = url.host_str().ok_or_else(|| Failure::NotAllowed("no host".into()))?;
        if let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>()
            && !self.allows_ip(ip)
        {
            return Err(Failure::NotAllowed(format!("it points at a private or local address ({ip})")));
        }
        Ok(())
    }
}

/// Why a fetch stopped, as the transport saw it (libgit2 only keeps a line of text).
#[derive(Clone, Debug)]
enum Failure {
    NotAllowed(String),
    TooLarge(u64),
    RequestTooLarge,
    TimedOut(Duration),
    Unreachable(String),
    NotGit(String),
}

impl Failure {
    fn into_error(self) -> Error {
        match self {
            Failure::NotAllowed(why) => ssrf::refused(&why),
            Failure::TooLarge(max) => {
                let max = if max >= 1 << 20 { format!("{} MiB", max >> 20) } else { format!("{} KiB", max >> 10) };
                Error::unprocessable(
                    "source_too_large",
                    format!("The source sent more than {max}; a mini-app's repository is far smaller."),
                )
            }
            Failure::RequestTooLarge => Error::unprocessable(
                "source_too_large",
                "The source's history is too long to negotiate; install it again from scratch.",
            ),
            Failure::TimedOut(limit) => Error::gateway_timeout(
                "source_timeout",
                format!("The source did not finish sending within {} s.", limit.as_secs()),
            ),
            Failure::Unreachable(why) => {
                Error::bad_gateway("source_unreachable", format!("The source could not be reached: {why}."))
            }
            Failure::NotGit(why) => Error::unprocessable(
                "source_not_git",
                format!("The source is not a git repository served over smart HTTP: {why}."),
            ),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.clone().into_error() {
            Error::Client { message, .. } => f.write_str(&message),
            other => write!(f, "{other}"),
        }
    }
}

/// The first failure of a fetch; later ones are consequences.
#[derive(Clone, Default)]
struct FailureSlot(Arc<Mutex<Option<Failure>>>);

impl FailureSlot {
    fn record(&self, failure: Failure) -> Failure {
        self.0.locked().get_or_insert(failure.clone());
        failure
    }

    fn get(&self) -> Option<Failure> {
        self.0.locked().clone()
    }
}

/// Resolves host names and refuses the lot when any address is not allowed, at the moment of
/// connecting (no second lookup happens after this one).
pub struct CheckedResolver {
    policy: FetchPolicy,
    /// Where a fetch session records why it failed; a shared client (the app proxy) has none
    /// and finds the [`Refusal`] in the error's source chain instead.
    failure: Option<FailureSlot>,
}

/// Why the resolver refused a host, carried as the source of a connection error.
#[derive(Debug, Clone)]
pub enum Refusal {
    /// The name does not resolve.
    Unresolvable(String),
    /// It resolves to an address the policy does not allow.
    NotAllowed(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Unresolvable(host) => write!(f, "{host} does not resolve"),
            Refusal::NotAllowed(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for Refusal {}

impl Refusal {
    /// The refusal behind a failed request, if the resolver caused it.
    pub fn of<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a Refusal> {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(e) = source {
            if let Some(refusal) = e.downcast_ref::<Refusal>() {
                return Some(refusal);
            }
            source = e.source();
        }
        None
    }
}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let (policy, failure) = (self.policy.clone(), self.failure.clone());
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> = match tokio::net::lookup_host((host.as_str(), 0)).await {
                Ok(addrs) => addrs.collect(),
                Err(_) => Vec::new(),
            };
            let refusal = if addrs.is_empty() {
                Refusal::Unresolvable(host)
            } else if let Some(bad) = addrs.iter().find(|a| !policy.allows_ip(a.ip())) {
                Refusal::NotAllowed(format!("it points at a private or local address ({})", bad.ip()))
            } else {
                return Ok(Box::new(addrs.into_iter()) as Addrs);
            };
            if let Some(failure) = failure {
                let f = match &refusal {
                    Refusal::Unresolvable(_) => Failure::Unreachable(refusal.to_string()),
                    Refusal::NotAllowed(why) => Failure::NotAllowed(why.clone()),
                };
                let text: Box<dyn std::error::Error + Send + Sync> = failure.record(f).to_string().into();
                return Err(text);
            }
            let refusal: Box<dyn std::error::Error + Send + Sync> = Box::new(refusal);
            Err(refusal)
        })
    }
}

/// A resolver for a long-lived client under `policy`: every connection's addresses are
/// checked as they are resolved; a refusal is a [`Refusal`] in the request error's chain.
pub fn checked_resolver(policy: &FetchPolicy) -> Arc<CheckedResolver> {
    Arc::new(CheckedResolver { policy: policy.clone(), failure: None })
}

impl FetchPolicy {
    /// The early check of a URL (scheme, credentials, address literals) as a [`Refusal`].
    pub fn refuse_url(&self, url: &Url) -> Option<String> {
        self.check_url(url).err().map(|f| match f {
            Failure::NotAllowed(why) => why,
            other => other.to_string(),
        })
    }

    /// Whether literal address `ip` may be connected to.
    pub fn admits(&self, ip: IpAddr) -> bool {
        self.allows_ip(ip)
    }
}

fn redirect_policy(policy: FetchPolicy, failure: FailureSlot) -> redirect::Policy {
    redirect::Policy::custom(move |attempt| {
        let from_advertisement = attempt.previous().first().is_some_and(|u| u.path().ends_with("/info/refs"));
        if !from_advertisement {
            // The POST is not re-sent elsewhere: its 3xx is answered as a failure.
            return attempt.stop();
        }
        if attempt.previous().len() > MAX_REDIRECTS {
            let f = failure.record(Failure::Unreachable(format!("it redirected more than {MAX_REDIRECTS} times")));
            return attempt.error(f.to_string());
        }
        match policy.check_url(attempt.url()) {
            Ok(()) => attempt.follow(),
            Err(f) => attempt.error(failure.record(f).to_string()),
        }
    })
}

/// One fetch's connection machinery: its own small runtime (so the caller may be any thread
/// that is not async), a client whose resolver enforces the policy, and the limits.
struct Shared {
    policy: FetchPolicy,
    /// `Some` until dropped (see `Drop`).
    runtime: Option<tokio::runtime::Runtime>,
    client: reqwest::Client,
    deadline: tokio::time::Instant,
    received: Mutex<u64>,
    failure: FailureSlot,
}

impl Shared {
    fn new(policy: &FetchPolicy) -> Result<Self> {
        let failure = FailureSlot::default();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let client = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .connect_timeout(CONNECT_TIMEOUT)
            .https_only(!policy.allow_http)
            .no_proxy()
            .referer(false)
            .redirect(redirect_policy(policy.clone(), failure.clone()))
            .dns_resolver(Arc::new(CheckedResolver { policy: policy.clone(), failure: Some(failure.clone()) }))
            .build()
            .map_err(|e| Error::Internal(format!("git http client: {e}")))?;
        Ok(Self {
            policy: policy.clone(),
            runtime: Some(runtime),
            client,
            deadline: tokio::time::Instant::now() + policy.timeout,
            received: Mutex::new(0),
            failure,
        })
    }

    /// Records `failure` (unless an earlier one explains it) and turns it into a git error.
    fn fail(&self, failure: Failure) -> git2::Error {
        let first = self.failure.record(failure);
        git2::Error::from_str(&first.to_string())
    }

    /// Runs a request or body read to completion within the fetch's deadline. Pass a lazy
    /// future (an `async` block), so nothing of it runs outside the runtime.
    fn block_on<T>(&self, fut: impl Future<Output = reqwest::Result<T>>) -> Result<T, git2::Error> {
        let runtime = self.runtime.as_ref().ok_or_else(|| git2::Error::from_str("the fetch has ended"))?;
        match runtime.block_on(tokio::time::timeout_at(self.deadline, fut)) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(self.fail(self.classify(&e))),
            Err(_) => Err(self.fail(Failure::TimedOut(self.policy.timeout))),
        }
    }

    fn classify(&self, e: &reqwest::Error) -> Failure {
        if let Some(first) = self.failure.get() {
            return first;
        }
        let host = e.url().and_then(Url::host_str).unwrap_or("the host").to_owned();
        // The causes only: the error's own text carries the whole URL.
        let cause = std::error::Error::source(e).map(error_chain).unwrap_or_default();
        tracing::warn!(host, cause, "git fetch request failed");
        if e.is_connect() {
            Failure::Unreachable(format!("no connection to {host} (network or TLS failure)"))
        } else if e.is_timeout() {
            Failure::TimedOut(self.policy.timeout)
        } else {
            Failure::Unreachable(format!("the connection to {host} failed"))
        }
    }

    /// Sends `request` and checks the answer is a smart-HTTP `content_type` response that fits.
    fn send(&self, request: reqwest::RequestBuilder, content_type: &str) -> Result<reqwest::Response, git2::Error> {
        let response = self.block_on(async move { request.send().await })?;
        let status = response.status();
        if status.is_server_error() {
            return Err(self.fail(Failure::Unreachable(format!("it answered {status}"))));
        }
        if status != StatusCode::OK {
            return Err(self.fail(Failure::NotGit(format!("it answered {status}"))));
        }
        let got = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
        if got.split(';').next().unwrap_or_default().trim() != content_type {
            return Err(self.fail(Failure::NotGit(format!("it answered with {got:?}, not {content_type}"))));
        }
        // A declared length is counted up front (and the body then not again): it fails early.
        if let Some(len) = response.content_length() {
            self.count(len).map_err(|e| git2::Error::from_str(&e.to_string()))?;
        }
        Ok(response)
    }

    fn count(&self, bytes: u64) -> io::Result<()> {
        let mut received = self.received.locked();
        *received = received.saturating_add(bytes);
        if *received > self.policy.max_response_bytes {
            let f = self.failure.record(Failure::TooLarge(self.policy.max_response_bytes));
            return Err(io::Error::other(f.to_string()));
        }
        Ok(())
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Do not wait for a name lookup still running on the runtime's blocking thread.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The subtransport of one connection: remembers where the advertisement came from.
struct Subtransport {
    shared: Arc<Shared>,
    base: Mutex<Option<String>>,
}

impl SmartSubtransport for Subtransport {
    fn action(&self, url: &str, action: Service) -> Result<Box<dyn SmartSubtransportStream>, git2::Error> {
        let shared = &self.shared;
        match action {
            Service::UploadPackLs => {
                let base = url.trim_end_matches('/');
                let target = Url::parse(&format!("{base}{INFO_REFS}"))
                    .map_err(|_| shared.fail(Failure::NotAllowed("a malformed URL".into())))?;
                shared.policy.check_url(&target).map_err(|f| shared.fail(f))?;
                let response = shared.send(shared.client.get(target), ADVERTISEMENT)?;
                let landed = response.url().as_str();
                let base = landed
                    .strip_suffix(INFO_REFS)
                    .ok_or_else(|| shared.fail(Failure::NotGit("a redirect lost the repository's address".into())))?;
                *self.base.locked() = Some(base.to_owned());
                Ok(Box::new(Stream::receiving(shared.clone(), response)))
            }
            Service::UploadPack => {
                let base = self.base.locked().clone();
                let base = base.unwrap_or_else(|| url.trim_end_matches('/').to_owned());
                Ok(Box::new(Stream::sending(shared.clone(), format!("{base}/git-upload-pack"))))
            }
            Service::ReceivePackLs | Service::ReceivePack => Err(git2::Error::from_str(PUSH_REFUSED)),
        }
    }

    fn close(&self) -> Result<(), git2::Error> {
        Ok(())
    }
}

/// One request/response exchange as libgit2 sees it: writes buffer the request, the first
/// read sends it, reads stream the response.
struct Stream {
    shared: Arc<Shared>,
    post_to: Option<String>,
    request: Vec<u8>,
    response: Option<reqwest::Response>,
    chunk: Bytes,
    /// False when `send` already counted the whole body from its Content-Length.
    count_chunks: bool,
}

impl Stream {
    fn receiving(shared: Arc<Shared>, response: reqwest::Response) -> Self {
        let count_chunks = response.content_length().is_none();
        Self { shared, post_to: None, request: Vec::new(), response: Some(response), chunk: Bytes::new(), count_chunks }
    }

    fn sending(shared: Arc<Shared>, url: String) -> Self {
        Self {
            shared,
            post_to: Some(url),
            request: Vec::new(),
            response: None,
            chunk: Bytes::new(),
            count_chunks: true,
        }
    }

    fn post(&mut self, url: String) -> io::Result<()> {
        let shared = &self.shared;
        let request = shared
            .client
            .post(&url)
            .header(CONTENT_TYPE, HeaderValue::from_static(UPLOAD_REQUEST))
            .header(ACCEPT, HeaderValue::from_static(UPLOAD_RESULT))
            .body(std::mem::take(&mut self.request));
        let response = shared.send(request, UPLOAD_RESULT).map_err(|e| io::Error::other(e.message().to_owned()))?;
        self.count_chunks = response.content_length().is_none();
        self.response = Some(response);
        Ok(())
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(url) = self.post_to.take() {
            self.post(url)?;
        }
        while self.chunk.is_empty() {
            let Some(response) = self.response.as_mut() else { return Ok(0) };
            let shared = &self.shared;
            match shared.block_on(response.chunk()) {
                Ok(Some(chunk)) => {
                    if self.count_chunks {
                        shared.count(chunk.len() as u64)?;
                    }
                    self.chunk = chunk;
                }
                Ok(None) => self.response = None,
                Err(e) => return Err(io::Error::other(e.message().to_owned())),
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk[..n]);
        self.chunk.advance(n);
        Ok(n)
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.post_to.is_none() {
            return Err(io::Error::other("this git request was already sent"));
        }
        if self.request.len() + buf.len() > MAX_REQUEST_BYTES {
            let f = self.shared.failure.record(Failure::RequestTooLarge);
            return Err(io::Error::other(f.to_string()));
        }
        self.request.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

thread_local! {
    /// The session of the libgit2 call running on this thread. libgit2's transport table is
    /// process-wide and its factory gets no payload of ours, so the policy travels this way.
    static CURRENT: RefCell<Option<Arc<Shared>>> = const { RefCell::new(None) };
}

fn transport_for(remote: &git2::Remote<'_>) -> Result<Transport, git2::Error> {
    let shared = CURRENT.with(|c| c.borrow().clone()).ok_or_else(|| {
        git2::Error::from_str("network git access must go through apps::smart_http::Session (none is active)")
    })?;
    Transport::smart(remote, true, Subtransport { shared, base: Mutex::new(None) })
}

/// Makes libgit2 use this transport for `https://` and `http://`, once per process. Every
/// path that lets libgit2 open a remote (local or not) calls this first: the only code that
/// opens remotes is `apps::git::fetch_release*`, which does, so no transport lookup can race
/// the registration (`mobius_sys::register_git_transports` has the details).
pub fn register() -> Result<()> {
    mobius_sys::register_git_transports(&["https", "http"], transport_for).map_err(Error::Internal)
}

/// One fetch's transport state; a libgit2 call made inside [`Session::run`] on this thread
/// speaks smart HTTP under the session's policy.
pub struct Session {
    shared: Arc<Shared>,
}

impl Session {
    /// Registers the transport if needed and starts the clock of the fetch's total timeout.
    pub fn new(policy: &FetchPolicy) -> Result<Self> {
        register()?;
        Ok(Self { shared: Arc::new(Shared::new(policy)?) })
    }

    /// Runs `f` with this session active on the current thread, which must not be an async
    /// one: the transport blocks on the session's own runtime.
    pub fn run<T>(&self, f: impl FnOnce() -> Result<T, git2::Error>) -> Result<T, git2::Error> {
        struct Restore(Option<Arc<Shared>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                CURRENT.with(|c| *c.borrow_mut() = previous);
            }
        }
        let previous = CURRENT.with(|c| c.borrow_mut().replace(self.shared.clone()));
        let _restore = Restore(previous);
        f()
    }

    /// Why the fetch failed, when the transport knows better than libgit2's text.
    pub fn failure(&self) -> Option<Error> {
        self.shared.failure.get().map(Failure::into_error)
    }
}

#[cfg(test)]
mod tests {
    use crate::locks::Unpoisoned;
    use std::path::{Path, PathBuf};

    use axum::Router;
    use axum::body::Body;
    use axum::extract::{OriginalUri, State};
    use axum::http::{HeaderMap, header};
    use axum::response::{IntoResponse, Response};
    use axum::routing::{get, post};
    use git2::Oid;
    use tokio::io::AsyncWriteExt;

    use super::*;
    use crate::apps::git::{self, Source};

    /// A request the test server saw: method, path, user agent, content type, accept.
    type Seen = (String, String, String, String, String);

    #[derive(Clone)]
    struct Served {
        repo: PathBuf,
        seen: Arc<Mutex<Vec<Seen>>>,
    }

    impl Served {
        fn record(&self, method: &str, uri: &axum::http::Uri, headers: &HeaderMap) {
            let h = |name| headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok()).unwrap_or("").to_owned();
            let seen =
                (method.into(), uri.path().into(), h(header::USER_AGENT), h(header::CONTENT_TYPE), h(header::ACCEPT));
            self.seen.locked().push(seen);
        }

        fn seen(&self) -> Vec<Seen> {
            self.seen.locked().clone()
        }
    }

    fn pkt_line(text: &str) -> Vec<u8> {
        format!("{:04x}{text}", text.len() + 4).into_bytes()
    }

    /// `GET …/info/refs?service=git-upload-pack` as git-http-backend answers it.
    async fn info_refs(State(s): State<Served>, OriginalUri(uri): OriginalUri, headers: HeaderMap) -> Response {
        s.record("GET", &uri, &headers);
        assert_eq!(uri.query(), Some("service=git-upload-pack"));
        let out = tokio::process::Command::new("git")
            .args(["upload-pack", "--stateless-rpc", "--advertise-refs"])
            .arg(&s.repo)
            .output()
            .await
            .expect("git upload-pack");
        let mut body = pkt_line("# service=git-upload-pack\n");
        body.extend_from_slice(b"0000");
        body.extend_from_slice(&out.stdout);
        ([(header::CONTENT_TYPE, ADVERTISEMENT)], body).into_response()
    }

    /// `POST …/git-upload-pack`: the request on stdin, the pack on stdout.
    async fn upload_pack(
        State(s): State<Served>,
        OriginalUri(uri): OriginalUri,
        headers: HeaderMap,
        body: Bytes,
    ) -> Response {
        s.record("POST", &uri, &headers);
        let mut child = tokio::process::Command::new("git")
            .args(["upload-pack", "--stateless-rpc"])
            .arg(&s.repo)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("git upload-pack");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(&body).await.expect("request");
        drop(stdin);
        let out = child.wait_with_output().await.expect("pack");
        ([(header::CONTENT_TYPE, UPLOAD_RESULT)], out.stdout).into_response()
    }

    fn redirect_to(
        location: &'static str,
    ) -> impl Fn(State<Served>, OriginalUri, HeaderMap) -> std::future::Ready<Response> + Clone {
        move |State(s): State<Served>, OriginalUri(uri): OriginalUri, headers: HeaderMap| {
            s.record("GET", &uri, &headers);
            std::future::ready((StatusCode::FOUND, [(header::LOCATION, location)]).into_response())
        }
    }

    /// A well-formed advertisement of about 1 MiB (16,000 tags): 1,000 tags per chunk.
    fn many_tags(chunk: usize) -> Bytes {
        let mut out = Vec::new();
        if chunk == 0 {
            out.extend(pkt_line("# service=git-upload-pack\n"));
            out.extend_from_slice(b"0000");
        }
        for i in chunk * 1000..(chunk + 1) * 1000 {
            out.extend(pkt_line(&format!("{i:040x} refs/tags/t{i}\n")));
        }
        Bytes::from(out)
    }

    /// The big advertisement, streamed without a declared length.
    async fn huge(State(s): State<Served>, OriginalUri(uri): OriginalUri, headers: HeaderMap) -> Response {
        s.record("GET", &uri, &headers);
        let chunks = futures_util::stream::iter((0..16).map(|i| Ok::<_, std::io::Error>(many_tags(i))));
        ([(header::CONTENT_TYPE, ADVERTISEMENT)], Body::from_stream(chunks)).into_response()
    }

    /// The big advertisement with its `Content-Length`.
    async fn sized(State(s): State<Served>, OriginalUri(uri): OriginalUri, headers: HeaderMap) -> Response {
        s.record("GET", &uri, &headers);
        let body: Vec<u8> = (0..16).flat_map(|i| many_tags(i).to_vec()).collect();
        ([(header::CONTENT_TYPE, ADVERTISEMENT)], body).into_response()
    }

    /// A real repository served over smart HTTP on `127.0.0.1`, plus misbehaving neighbours.
    async fn serve(repo: &Path) -> (String, Served) {
        let served = Served { repo: repo.to_path_buf(), seen: Arc::default() };
        let app = Router::new()
            .route("/repo.git/info/refs", get(info_refs))
            .route("/repo.git/git-upload-pack", post(upload_pack))
            .route("/moved.git/info/refs", get(redirect_to("/repo.git/info/refs?service=git-upload-pack")))
            .route(
                "/private.git/info/refs",
                get(redirect_to("http://10.255.255.1/repo.git/info/refs?service=git-upload-pack")),
            )
            .route("/loop.git/info/refs", get(redirect_to("/loop.git/info/refs?service=git-upload-pack")))
            .route("/huge.git/info/refs", get(huge))
            .route("/sized.git/info/refs", get(sized))
            .route("/page.git/info/refs", get(|| async { ([(header::CONTENT_TYPE, "text/html")], "<html>") }))
            .route("/slow.git/info/refs", get(std::future::pending::<()>))
            .with_state(served.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        (base, served)
    }

    fn git_cli(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn source_repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("source");
        std::fs::write(dir.path().join("mobius.json"), r#"{"id":"notes","name":"Notes"}"#).expect("manifest");
        std::fs::write(dir.path().join("index.jsx"), "export default () => null;\n").expect("entry");
        git_cli(dir.path(), &["init", "-q"]);
        git_cli(dir.path(), &["add", "-A"]);
        git_cli(dir.path(), &["commit", "-qm", "one"]);
        dir
    }

    /// Fetches `url` into the app repository at `into` on a blocking thread, as installs do.
    async fn fetch(into: &Path, url: String, policy: FetchPolicy) -> Result<Oid> {
        let into = into.to_path_buf();
        tokio::task::spawn_blocking(move || {
            let repo = git::open_or_init(&into)?;
            git::fetch_release_with(&repo, &Source::Url(url), &policy)
        })
        .await
        .expect("fetch task")
    }

    fn assert_failure(result: Result<Oid>, code: &str, says: &str) {
        let err = result.expect_err("the fetch must fail");
        assert_eq!(err.code(), code, "{err}");
        assert!(err.to_string().contains(says), "{err:?} should say {says:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_repository_is_fetched_over_smart_http_and_updated_after_a_redirect() {
        let source = source_repo();
        let (base, served) = serve(source.path()).await;
        let app = tempfile::tempdir().expect("app");

        let first = fetch(app.path(), format!("{base}/repo.git"), FetchPolicy::loopback_http()).await.expect("fetch");
        assert_eq!(first.to_string(), git_cli(source.path(), &["rev-parse", "HEAD"]));
        let repo = git::open_or_init(app.path()).expect("repo");
        let manifest = git::read_file(&repo, first, "mobius.json").expect("read").expect("manifest fetched");
        assert!(String::from_utf8_lossy(&manifest).contains("\"notes\""));

        let seen = served.seen();
        let (get, post) = (&seen[0], &seen[1]);
        assert_eq!((get.0.as_str(), get.1.as_str()), ("GET", "/repo.git/info/refs"));
        assert!(get.2.starts_with("git/"), "git-style user agent: {}", get.2);
        assert_eq!((post.0.as_str(), post.1.as_str()), ("POST", "/repo.git/git-upload-pack"));
        assert_eq!((post.3.as_str(), post.4.as_str()), (UPLOAD_REQUEST, UPLOAD_RESULT));

        // A new release, fetched through a moved address: the POST follows the advertisement.
        std::fs::write(source.path().join("index.jsx"), "export default () => 'two';\n").expect("edit");
        git_cli(source.path(), &["commit", "-qam", "two"]);
        let before = served.seen().len();
        let second =
            fetch(app.path(), format!("{base}/moved.git"), FetchPolicy::loopback_http()).await.expect("update");
        assert_eq!(second.to_string(), git_cli(source.path(), &["rev-parse", "HEAD"]));
        assert_ne!(first, second);
        let paths: Vec<String> = served.seen()[before..].iter().map(|s| format!("{} {}", s.0, s.1)).collect();
        assert_eq!(
            paths[..3],
            ["GET /moved.git/info/refs", "GET /repo.git/info/refs", "POST /repo.git/git-upload-pack"]
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_update_check_reads_only_the_advertised_head() {
        let source = source_repo();
        let (base, served) = serve(source.path()).await;
        let app = tempfile::tempdir().expect("app");
        let installed =
            fetch(app.path(), format!("{base}/repo.git"), FetchPolicy::loopback_http()).await.expect("fetch");
        let probe = |url: String| {
            let into = app.path().to_path_buf();
            tokio::task::spawn_blocking(move || {
                let repo = git::open_or_init(&into)?;
                let repo = git::AppRepo::plain(repo);
                git::adopt_release(&repo, installed)?;
                let probe = git::probe_release_with(&repo, &Source::Url(url), &FetchPolicy::loopback_http())?;
                Ok::<_, Error>((probe, probe.is_new_for(&repo)))
            })
        };
        let before = served.seen().len();
        let (head, newer) = probe(format!("{base}/repo.git")).await.expect("task").expect("probe");
        assert_eq!(head, git::Probe::Commit(installed));
        assert!(!newer, "nothing new");
        std::fs::write(source.path().join("index.jsx"), "export default () => 'two';\n").expect("edit");
        git_cli(source.path(), &["commit", "-qam", "two"]);
        let (head, newer) = probe(format!("{base}/repo.git")).await.expect("task").expect("probe");
        assert_eq!(head.id(), git_cli(source.path(), &["rev-parse", "HEAD"]));
        assert!(newer, "a new release");
        let asked: Vec<String> = served.seen()[before..].iter().map(|s| format!("{} {}", s.0, s.1)).collect();
        assert_eq!(asked, ["GET /repo.git/info/refs", "GET /repo.git/info/refs"], "only the advertisement");
        let repo = git::open_or_init(app.path()).expect("repo");
        let new_head = Oid::from_str(&head.id()).expect("oid");
        assert!(repo.find_commit(new_head).is_err(), "checking fetches no objects");
        let refused = probe(format!("{base}/private.git")).await.expect("task");
        assert_eq!(refused.expect_err("a redirect to a private address").code(), "source_not_allowed");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_name_that_resolves_to_loopback_is_refused_when_connecting_not_only_by_check_url() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let app = tempfile::tempdir().expect("app");

        // `ssrf::check_url` is not called here: the transport's resolver alone refuses. (The
        // short timeout only matters if it did not: nothing answers TLS on that port.)
        let public = FetchPolicy { timeout: Duration::from_secs(5), ..FetchPolicy::public() };
        let by_name = fetch(app.path(), format!("https://localhost:{port}/repo.git"), public).await;
        assert_failure(by_name, "source_not_allowed", "private or local address");
        let literal = fetch(app.path(), format!("https://127.0.0.1:{port}/repo.git"), FetchPolicy::public()).await;
        assert_failure(literal, "source_not_allowed", "(127.0.0.1)");
        let plain = fetch(app.path(), format!("http://localhost:{port}/repo.git"), FetchPolicy::public()).await;
        assert_failure(plain, "source_not_allowed", "only https://");
        let other = fetch(app.path(), format!("git://localhost:{port}/repo.git"), FetchPolicy::public()).await;
        assert_failure(other, "source_not_allowed", "only https://");
        let err = listener.accept().expect_err("nothing may have connected");
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn redirects_obey_the_same_rules_and_stop_after_a_few() {
        let source = source_repo();
        let (base, served) = serve(source.path()).await;
        let app = tempfile::tempdir().expect("app");

        let private = fetch(app.path(), format!("{base}/private.git"), FetchPolicy::loopback_http()).await;
        assert_failure(private, "source_not_allowed", "(10.255.255.1)");
        let looping = fetch(app.path(), format!("{base}/loop.git"), FetchPolicy::loopback_http()).await;
        assert_failure(looping, "source_unreachable", "redirected more than 3 times");
        let hops = served.seen().iter().filter(|s| s.1 == "/loop.git/info/refs").count();
        assert_eq!(hops, MAX_REDIRECTS + 1, "the first request and three redirects");
        let page = fetch(app.path(), format!("{base}/page.git"), FetchPolicy::loopback_http()).await;
        assert_failure(page, "source_not_git", "text/html");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_oversized_answer_is_cut_with_a_clear_error() {
        let source = source_repo();
        let (base, _served) = serve(source.path()).await;
        let app = tempfile::tempdir().expect("app");
        let policy = FetchPolicy { max_response_bytes: 256 * 1024, ..FetchPolicy::loopback_http() };

        let streamed = fetch(app.path(), format!("{base}/huge.git"), policy.clone()).await;
        assert_failure(streamed, "source_too_large", "more than 256 KiB");
        let declared = fetch(app.path(), format!("{base}/sized.git"), policy.clone()).await;
        assert_failure(declared, "source_too_large", "more than 256 KiB");
        // The same cap lets the real repository through.
        fetch(app.path(), format!("{base}/repo.git"), policy).await.expect("a small repository fits");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_source_that_never_answers_times_out() {
        let source = source_repo();
        let (base, _served) = serve(source.path()).await;
        let app = tempfile::tempdir().expect("app");
        let policy = FetchPolicy { timeout: Duration::from_millis(300), ..FetchPolicy::loopback_http() };

        let slow = fetch(app.path(), format!("{base}/slow.git"), policy).await;
        assert_failure(slow, "source_timeout", "did not finish");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pushing_is_refused_before_any_request() {
        let source = source_repo();
        let (base, served) = serve(source.path()).await;
        let url = format!("{base}/repo.git");
        let message = tokio::task::spawn_blocking(move || {
            let session = Session::new(&FetchPolicy::loopback_http()).expect("session");
            let repo = git2::Repository::open(source.path()).expect("repo");
            let mut remote = repo.remote_anonymous(&url).expect("remote");
            let err = session.run(|| remote.push(&["refs/heads/main:refs/heads/main"], None)).expect_err("refused");
            err.message().to_owned()
        })
        .await
        .expect("push task");
        assert!(message.contains("pushing is not supported"), "{message}");
        assert!(served.seen().is_empty(), "no request reached the server");
    }

    #[test]
    fn without_a_session_libgit2_opens_no_connection_of_its_own() {
        register().expect("registered");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let dir = tempfile::tempdir().expect("dir");
        let repo = git2::Repository::init(dir.path()).expect("repo");
        // libgit2's built-in http transport would connect here; ours refuses without a session.
        let mut remote = repo.remote_anonymous(&format!("http://127.0.0.1:{port}/a.git")).expect("remote");
        let mut opts = git2::FetchOptions::new();
        opts.follow_redirects(git2::RemoteRedirect::None);
        remote.fetch(&["HEAD"], Some(&mut opts), None).expect_err("no session, no fetch");
        let err = listener.accept().expect_err("nothing may have connected");
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    }
}
