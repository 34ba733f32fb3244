//! The PWA host: static files from the built frontend, `index.html` for client routes,
//! cache policy per file kind, and the security headers every response carries.

use std::convert::Infallible;
use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use tower::ServiceExt;
use tower_http::services::{ServeDir, ServeFile};

use crate::state::AppState;

const IMMUTABLE: HeaderValue = HeaderValue::from_static("public, max-age=31536000, immutable");
const NO_CACHE: HeaderValue = HeaderValue::from_static("no-cache");

/// Serves the built frontend; the router's fallback for every non-API path. What is served
/// is the shell build of the moment ([`crate::shell::Shell::served`], read once per request):
/// the stock build or the agent's newest. An `/assets/` file the served build lacks comes from
/// an earlier build (a device still running it loads its lazy chunks after a switch).
#[tracing::instrument(level = "debug", skip_all)]
pub async fn serve_frontend(State(state): State<AppState>, request: Request) -> Response {
    let mut served = state.shell.served();
    if served.build.is_some() && !served.dir.join("index.html").is_file() {
        // The build's folder went (deleted by hand): the stock shell, always there, answers.
        served = state.shell.stock();
    }
    let dist = served.dir.clone();
    if !dist.join("index.html").is_file() {
        return not_built(&dist);
    }
    let path = request.uri().path().to_owned();
    let is_asset = path.starts_with("/assets/");
    let fallback_request = if is_asset { Some(clone_head(&request)) } else { None };
    let index = ServeFile::new(dist.join("index.html"));
    let spa_fallback = tower::service_fn(move |req: Request| {
        let index = index.clone();
        async move {
            if looks_like_a_file(req.uri().path()) {
                return Ok::<_, Infallible>((StatusCode::NOT_FOUND, "Not found").into_response());
            }
            let mut response = index.oneshot(req).await.map(IntoResponse::into_response).unwrap_or_else(|e| match e {});
            response.headers_mut().insert(header::CACHE_CONTROL, NO_CACHE);
            Ok(response)
        }
    });
    let files = ServeDir::new(&dist)
        .append_index_html_on_directories(true)
        .precompressed_br()
        .precompressed_gzip()
        .fallback(spa_fallback);
    let mut response = match files.oneshot(request).await {
        Ok(response) => response.map(Body::new),
        Err(e) => match e {},
    };
    if let Some(again) = fallback_request
        && response.status() == StatusCode::NOT_FOUND
        && let Some(found) = earlier_asset(&state, again).await
    {
        response = found;
    }
    if response.status().is_success() || response.status() == StatusCode::NOT_MODIFIED {
        let cache = if is_asset { IMMUTABLE } else { NO_CACHE };
        response.headers_mut().entry(header::CACHE_CONTROL).or_insert(cache);
        if is_asset {
            // The embedded chat runs in an opaque (sandboxed) origin: its module scripts,
            // styles and fonts are fetched in CORS mode. These files are public anyway.
            response.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
        }
        let is_document =
            response.headers().get(header::CONTENT_TYPE).is_some_and(|t| t.as_bytes().starts_with(b"text/html"));
        if is_document && !is_asset {
            state.shell.note_loaded(served.build);
        }
    }
    response
}

/// The request's method, URI and headers (an asset request has no body).
fn clone_head(request: &Request) -> Request {
    let mut copy = Request::new(Body::empty());
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.headers_mut() = request.headers().clone();
    copy
}

/// An `/assets/` file from an earlier build (or the stock one), when one has it.
async fn earlier_asset(state: &AppState, request: Request) -> Option<Response> {
    for dir in state.shell.asset_fallbacks() {
        let response = match ServeDir::new(&dir).oneshot(clone_head(&request)).await {
            Ok(response) => response.map(Body::new),
            Err(e) => match e {},
        };
        if response.status() != StatusCode::NOT_FOUND {
            return Some(response);
        }
    }
    None
}

/// The pinned libraries' browser assets that code refers to by URL rather than importing them
/// (apps written for the original platform link KaTeX's stylesheet, whose fonts load relative to
/// it): `/vendor/<name>/<file>` → that folder of the library apps are bundled against.
pub const VENDOR_DIRS: &[(&str, &str)] = &[("katex", "katex/dist"), ("pdfjs", "pdfjs-dist/build")];

/// `GET /vendor/{name}/{*file}`: a file of a pinned library, cacheable, readable from the opaque
/// app frames (`Access-Control-Allow-Origin: *`: fonts are fetched in CORS mode).
pub fn vendor_router() -> axum::Router<AppState> {
    axum::Router::new().route("/vendor/{name}/{*file}", axum::routing::get(vendor))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn vendor(
    State(state): State<AppState>,
    axum::extract::Path((name, file)): axum::extract::Path<(String, String)>,
    request: Request,
) -> Response {
    let Some((_, dir)) = VENDOR_DIRS.iter().find(|(n, _)| *n == name) else {
        return (StatusCode::NOT_FOUND, "Not found").into_response();
    };
    if file.is_empty() || file.split('/').any(|s| s.is_empty() || s == "." || s == "..") || file.contains('\\') {
        return (StatusCode::NOT_FOUND, "Not found").into_response();
    }
    let (mut parts, body) = request.into_parts();
    parts.uri = match format!("/{file}").parse() {
        Ok(uri) => uri,
        Err(_) => return (StatusCode::NOT_FOUND, "Not found").into_response(),
    };
    let root = state.config.app_node_modules.join(dir);
    let mut response = match ServeDir::new(root).oneshot(Request::from_parts(parts, body)).await {
        Ok(response) => response.map(Body::new),
        Err(e) => match e {},
    };
    let h = response.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    if response.status().is_success() || response.status() == StatusCode::NOT_MODIFIED {
        response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=86400"));
    }
    response
}

/// `GET /shell/embed/chat`: the nested chat frame an app embeds (`mobius.chat`). Its own CSP
/// sandboxes it (an opaque origin, whoever frames it: it never sees the shell's storage or
/// token), so its policy names this origin. It has no `frame-ancestors`: its ancestor is the
/// app's opaque frame, which no origin source matches, and without a grant minted with an app
/// token the page shows nothing. Like the app frame, popups it opens stay sandboxed.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn embed_chat(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let dist = state.shell.served().dir.clone();
    let Ok(page) = tokio::fs::read_to_string(dist.join("embed-chat.html")).await else {
        return not_built(&dist);
    };
    let origin = crate::apps::request_origin(&state, &headers);
    let csp = format!(
        "sandbox allow-scripts allow-forms allow-popups; default-src {origin}; \
         script-src {origin} 'wasm-unsafe-eval'; style-src {origin} 'unsafe-inline'; img-src {origin} data: blob:; \
         font-src {origin} data:; connect-src {origin}; frame-src 'none'; base-uri 'none'; form-action 'none'; \
         object-src 'none'"
    );
    let mut response = Html(page).into_response();
    let h = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert(header::CACHE_CONTROL, NO_CACHE);
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

/// A path whose last segment has an extension is a file request: a miss is a 404, never the
/// SPA shell (serving HTML under a `.js` name would poison caches).
fn looks_like_a_file(path: &str) -> bool {
    path.rsplit('/').next().is_some_and(|last| last.contains('.'))
}

fn not_built(dist: &Path) -> Response {
    let page = format!(
        "<!doctype html><meta charset=utf-8><title>Möbius — frontend not built</title>\
         <body style=\"font-family:system-ui;max-width:40rem;margin:3rem auto;padding:0 1rem\">\
         <h1>The web app has not been built yet</h1>\
         <p>The server is running, but <code>{}</code> has no <code>index.html</code>.</p>\
         <p>Build it with <code>scripts/run</code> (which also starts the server), or \
         <code>cd frontend &amp;&amp; npm ci &amp;&amp; npm run build</code>, then reload this page.</p>",
        html_escape(&dist.display().to_string())
    );
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, Html(page)).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Text made safe for HTML text and double-quoted attributes.
pub fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Is this a request from a sandboxed app frame? Their opaque origin sends `Origin: null`;
/// they authenticate with an app token in a header (never cookies), so any-origin CORS without
/// credentials ([`add_frame_cors`]) exposes nothing ambient.
pub fn is_from_frame(headers: &HeaderMap) -> bool {
    headers.get(header::ORIGIN).is_some_and(|o| o == "null")
}

/// The CORS headers of a response to an app frame (preflights included, see [`crate::api::gate`]).
pub fn add_frame_cors(h: &mut HeaderMap) {
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, HEAD, POST, PUT, PATCH, DELETE"));
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(
            "Authorization, Content-Type, If-Match, If-None-Match, Last-Event-ID, X-Mobius-Version, X-Mobius-Embed-Instance",
        ),
    );
    h.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static("ETag"));
    h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
}

/// Absolute path of the frontend build, for logs.
pub fn describe_dist(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_like_paths_never_fall_back_to_the_shell() {
        assert!(looks_like_a_file("/assets/index-abc123.js"));
        assert!(looks_like_a_file("/favicon.ico"));
        assert!(!looks_like_a_file("/shell/"));
        assert!(!looks_like_a_file("/chat/123"));
    }
}
