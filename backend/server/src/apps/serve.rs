//! Serving apps: the compiled module (ETag, immutable per build), the sandboxed frame
//! document, icons, and the standalone `/apps/<slug>/` host with its own web manifest.

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;
use serde_json::json;

use crate::auth::{Principal, bearer, verify_principal};
use crate::db::{self, apps::AppRow};
use crate::error::{Domain, Error, Result};
use crate::state::AppState;
use crate::web::html_escape;

/// Sandbox flags of the frame document: scripts run, but in an opaque origin (no
/// `allow-same-origin`), so the app can reach neither the shell's storage nor its token, and
/// popups it opens stay sandboxed (no `allow-popups-to-escape-sandbox`). The shell's iframe
/// carries the same flags (`FRAME_SANDBOX` in `frontend/src/apps/AppCanvas.tsx`), so a frame
/// that navigates elsewhere stays sandboxed too.
pub const FRAME_SANDBOX_FLAGS: &str =
    "allow-scripts allow-forms allow-popups allow-top-navigation-by-user-activation allow-downloads";

/// Cache policy of one build's module or frame document, asked for by its versioned URL.
const IMMUTABLE: &str = "private, max-age=31536000, immutable";

#[derive(Deserialize)]
pub struct ModuleQuery {
    token: Option<String>,
    v: Option<String>,
}

#[derive(Deserialize)]
pub struct FrameQuery {
    v: Option<String>,
    /// The frame bootstrap's version ([`super::bootstrap::FrameBootstrap::key`]).
    b: Option<String>,
}

async fn live_app(state: &AppState, id: i64) -> Result<AppRow> {
    match db::apps::get(&state.db.read, id).await? {
        Some(app) if app.deleted_at.is_none() && app.bundle_sha.is_some() => Ok(app),
        _ => Err(Domain::AppNotFound.into()),
    }
}

fn etag_matches(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim().trim_start_matches("W/") == etag))
}

/// `GET /api/apps/{id}/module`: the bundle, for any owner or app token (header or `?token=`).
#[tracing::instrument(level = "debug", skip_all)]
pub async fn module(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Query(q): Query<ModuleQuery>,
    headers: HeaderMap,
) -> Result<Response> {
    let principal = match &q.token {
        // A URL ends up in logs and histories: only an app's own short-lived token goes there.
        Some(t) => match verify_principal(&state, t).await? {
            Principal::Owner(_) => {
                return Err(Error::unauthorized(
                    "token_in_url",
                    "Only app tokens may be sent in a URL; send this token in the Authorization header.",
                ));
            }
            app => app,
        },
        None => {
            let (mut parts, ()) = axum::http::Request::new(()).into_parts();
            parts.headers = headers.clone();
            verify_principal(&state, bearer(&parts)?).await?
        }
    };
    if principal.app_id().is_some_and(|own| own != id) {
        return Err(Error::forbidden("forbidden", "An app may download only its own code."));
    }
    let app = live_app(&state, id).await?;
    let sha = app.bundle_sha.clone().unwrap_or_default();
    let etag = format!("\"{sha}\"");
    let cache = match &q.v {
        Some(v) if !v.is_empty() && sha.starts_with(v.as_str()) => IMMUTABLE,
        _ => "private, no-cache",
    };
    let mut response = if etag_matches(&headers, &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let bytes = tokio::fs::read(state.apps.bundle_path(app.id, &sha))
            .await
            .map_err(|_| Error::unavailable("bundle_missing", "This app's build is missing; apply it again."))?;
        let mut r = bytes.into_response();
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/javascript; charset=utf-8"));
        r
    };
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    Ok(response)
}

/// The origin the browser used (scheme from the configured public origin, host from the request).
pub fn request_origin(state: &AppState, headers: &HeaderMap) -> String {
    let scheme = if state.config.public_origin.is_https() { "https" } else { "http" };
    match headers.get(header::HOST).and_then(|h| h.to_str().ok()) {
        Some(host) if host.bytes().all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b)) => {
            format!("{scheme}://{host}")
        }
        _ => state.config.public_origin.as_str().to_owned(),
    }
}

#[derive(Template)]
#[template(path = "app_frame.html")]
struct FrameTemplate {
    name: String,
    origin: String,
    config_json: String,
    /// `app-frame.js`, inlined so the frame needs no second request (the sandboxed frame
    /// is not controlled by the service worker, so a separate script would not load offline).
    bootstrap: Option<String>,
}

/// JSON safe to embed in a `<script type="application/json">` element.
fn embeddable_json(value: &serde_json::Value) -> String {
    value.to_string().replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026")
}

/// `GET /api/apps/{id}/frame`: the sandboxed document the app runs in (no token in it, and
/// nothing about the app beyond what it shows: not the chat that built it). Asked for by this
/// build's URL (`frame_url`), it may be cached for good: a sandboxed frame's navigation never
/// reaches the service worker, so the browser's HTTP cache is what opens it offline.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn frame(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Query(q): Query<FrameQuery>,
    headers: HeaderMap,
) -> Result<Response> {
    let app = live_app(&state, id).await?;
    let origin = request_origin(&state, &headers);
    let sha = app.bundle_sha.clone().unwrap_or_default();
    let bootstrap = state.frame_bootstrap();
    let etag = format!("W/\"{}-{}\"", &sha[..16.min(sha.len())], bootstrap.key);
    let current = q.v.as_deref().is_some_and(|v| !v.is_empty() && sha.starts_with(v))
        && q.b.as_deref() == Some(bootstrap.key.as_str());
    let csp = format!(
        "sandbox {FRAME_SANDBOX_FLAGS}; default-src {origin}; script-src {origin} 'unsafe-inline' 'unsafe-eval' 'wasm-unsafe-eval' blob:; \
         style-src {origin} 'unsafe-inline'; img-src {origin} data: blob:; font-src {origin} data:; media-src {origin} data: blob:; \
         connect-src {origin}; worker-src {origin} blob:; frame-src {origin}; frame-ancestors {origin}; base-uri 'none'; form-action {origin}"
    );
    let mut response = if etag_matches(&headers, &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let config = json!({ "appId": app.id, "slug": app.slug, "name": app.name, "v": &sha[..16.min(sha.len())], "origin": origin });
        let page = FrameTemplate {
            name: app.name.clone(),
            origin: origin.clone(),
            config_json: embeddable_json(&config),
            bootstrap: bootstrap.code.clone(),
        };
        let html = page.render().map_err(|e| Error::Internal(format!("frame template: {e}")))?;
        let mut r = html.into_response();
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
        r
    };
    let h = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(if current { IMMUTABLE } else { "no-cache" }));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("SAMEORIGIN"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    if app.offline_capable {
        h.insert("x-mobius-offline", HeaderValue::from_static("1"));
    }
    Ok(response)
}

/// The frame document with its bootstrap inlined and `config` as what `app-frame.js` reads,
/// for a document served alone (a published page, `crate::published::site`): its own CSP is
/// the caller's. 503 when the frontend has not been built (no bootstrap to inline).
pub fn frame_document(state: &AppState, name: &str, origin: &str, config: &serde_json::Value) -> Result<String> {
    let code = state
        .frame_bootstrap()
        .code
        .clone()
        .ok_or_else(|| Error::unavailable("frontend_missing", "The web app has not been built."))?;
    let page = FrameTemplate {
        name: name.to_owned(),
        origin: origin.to_owned(),
        config_json: embeddable_json(config),
        bootstrap: Some(code),
    };
    page.render().map_err(|e| Error::Internal(format!("frame template: {e}")))
}

#[derive(Deserialize)]
pub struct IconQuery {
    size: Option<u32>,
    /// `maskable`: padded into the safe zone on the theme colour (home screens crop it).
    purpose: Option<String>,
}

/// `GET /api/apps/{id}/icon?size=&purpose=`: the manifest's icon as a square PNG of the nearest
/// rendered size, or a generated one.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn icon(State(state): State<AppState>, Path(id): Path<i64>, Query(q): Query<IconQuery>) -> Result<Response> {
    let app = live_app(&state, id).await?;
    let maskable = q.purpose.as_deref() == Some("maskable");
    icon_response(&state, &app, q.size.unwrap_or(512), maskable).await
}

/// The app's icon at `size` (snapped to a rendered size): rendered once per build from the
/// live commit's icon file off the async threads and kept next to the bundle; the generated
/// fallback when the app has none or it does not decode.
async fn icon_response(state: &AppState, app: &AppRow, size: u32, maskable: bool) -> Result<Response> {
    let size = super::icon::snap_size(size);
    let fallback = || image(super::icon::fallback_png(&app.name, app.theme_color.as_deref(), size), "image/png");
    let (Some(sha), Some(commit)) = (app.bundle_sha.as_deref(), app.source_commit.clone()) else {
        return Ok(fallback());
    };
    let compiled = state.apps.compiled_dir();
    let cached = super::icon::rendered_path(&compiled, app.id, sha, size, maskable);
    if let Ok(bytes) = tokio::fs::read(&cached).await {
        return Ok(image(bytes, "image/png"));
    }
    let Some(rel) = app.manifest.icon.clone() else { return Ok(fallback()) };
    let Ok(dir) = state.apps.repo(&app.slug) else { return Ok(fallback()) };
    let source = tokio::task::spawn_blocking(move || -> Option<Vec<u8>> {
        let repo = dir.open().ok()?;
        let oid = git2::Oid::from_str(&commit).ok()?;
        super::git::read_file(&repo, oid, &rel).ok().flatten()
    })
    .await
    .ok()
    .flatten();
    let Some(source) = source.filter(|b| b.len() <= super::icon::MAX_ICON_SOURCE_BYTES) else { return Ok(fallback()) };
    let limit = &state.lifecycle.icons;
    match super::icon::render_blocking(limit, source, size, maskable, app.theme_color.clone()).await {
        Ok(png) => {
            if let Err(e) = super::apply::write_atomically(&cached, &png).await {
                tracing::warn!(app.id = app.id, error = %e, "keeping a rendered icon failed");
            }
            Ok(image(png, "image/png"))
        }
        Err(why) => {
            tracing::debug!(app.id = app.id, why, "the app's icon does not render; the generated one stands in");
            Ok(fallback())
        }
    }
}

fn image(bytes: Vec<u8>, kind: &'static str) -> Response {
    let mut r = bytes.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=86400"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'"),
    );
    r
}

/// `/apps/<slug>/…`: the standalone, installable host of one app (outside `/api`).
pub fn standalone_router() -> Router<AppState> {
    Router::new()
        .route(
            "/apps/{slug}",
            get(|Path(slug): Path<String>| async move {
                checked_slug(&slug)?;
                Ok::<_, Error>(Redirect::permanent(&format!("/apps/{slug}/")))
            }),
        )
        .route("/apps/{slug}/", get(standalone))
        .route("/apps/{slug}/manifest.json", get(standalone_manifest))
        .route("/apps/{slug}/icon.png", get(standalone_icon))
}

#[derive(Template)]
#[template(path = "standalone_missing.html")]
struct MissingTemplate {
    slug: String,
}

/// 400 for a slug no app could have (it would end up in a header or a path).
fn checked_slug(slug: &str) -> Result<()> {
    if super::manifest::valid_id(slug) {
        Ok(())
    } else {
        Err(Error::bad_request("invalid_slug", "That is not an app id (lowercase letters, digits, `-` and `_`)."))
    }
}

async fn app_by_slug(state: &AppState, slug: &str) -> Result<Option<AppRow>> {
    checked_slug(slug)?;
    Ok(db::apps::by_slug(&state.db.read, slug).await?.filter(|a| a.deleted_at.is_none() && a.bundle_sha.is_some()))
}

/// Where the shell's `index.html` keeps what names and colours a home-screen entry (theme
/// colours, title, manifest, icons): a standalone page replaces the block with the app's own,
/// and the service worker's offline copy (`frontend/src/pwa/cachePolicy.ts`) moves it the same way.
const IDENTITY_START: &str = "<!-- mobius:identity";
const IDENTITY_END: &str = "<!-- /mobius:identity -->";

/// The colours of an app's home-screen entry: its manifest's, else these defaults.
fn identity_colours(app: &AppRow) -> (String, String) {
    (
        app.theme_color.clone().unwrap_or_else(|| "#4f46e5".into()),
        app.background_color.clone().unwrap_or_else(|| "#ffffff".into()),
    )
}

/// The first characters of the build's hash, versioning icon URLs.
fn icon_version(app: &AppRow) -> &str {
    let sha = app.bundle_sha.as_deref().unwrap_or_default();
    &sha[..8.min(sha.len())]
}

/// The shell's `index.html` dressed as this app (its name, icon, colours and manifest in place
/// of the shell's), so the PWA boots straight into the app (the same opaque frame runs it) and
/// a home-screen entry made here is the app's, not Möbius's.
#[tracing::instrument(level = "debug", skip_all)]
async fn standalone(State(state): State<AppState>, Path(slug): Path<String>) -> Result<Response> {
    let Some(app) = app_by_slug(&state, &slug).await? else {
        let page = MissingTemplate { slug }.render().map_err(|e| Error::Internal(e.to_string()))?;
        return Ok((StatusCode::NOT_FOUND, axum::response::Html(page)).into_response());
    };
    let index = tokio::fs::read_to_string(state.config.frontend_dir.join("index.html"))
        .await
        .map_err(|_| Error::unavailable("frontend_missing", "The web app has not been built."))?;
    let html = with_identity(&index, &identity_block(&app));
    let mut r = axum::response::Html(html).into_response();
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if app.offline_capable {
        r.headers_mut().insert("x-mobius-offline", HeaderValue::from_static("1"));
    }
    Ok(r)
}

/// The app's identity block: theme colour, home-screen title, manifest, icons, title, and the
/// identity the PWA reads at boot.
fn identity_block(app: &AppRow) -> String {
    let identity = json!({ "id": app.id, "slug": app.slug, "name": app.name, "theme_color": app.theme_color, "background_color": app.background_color });
    let (theme, _) = identity_colours(app);
    let name = html_escape(&app.name);
    let icon = format!("/apps/{}/icon.png?v={}", app.slug, icon_version(app));
    format!(
        "{IDENTITY_START} of {slug} -->\
         <meta name=\"theme-color\" content=\"{theme}\">\
         <meta name=\"apple-mobile-web-app-title\" content=\"{name}\">\
         <link rel=\"manifest\" href=\"/apps/{slug}/manifest.json\">\
         <link rel=\"icon\" href=\"{icon}&amp;size=192\" sizes=\"192x192\" type=\"image/png\">\
         <link rel=\"apple-touch-icon\" href=\"{icon}&amp;size=192\">\
         <title>{name}</title>\
         <script type=\"application/json\" id=\"__mobius-standalone-app__\">{json}</script>\
         {IDENTITY_END}",
        slug = app.slug,
        theme = html_escape(&theme),
        json = embeddable_json(&identity),
    )
}

/// `index` with its identity block replaced by `block` (an `index.html` without the block gets
/// `block` at the end of its head, in place of its manifest link).
fn with_identity(index: &str, block: &str) -> String {
    if let Some(start) = index.find(IDENTITY_START)
        && let Some(len) = index[start..].find(IDENTITY_END)
    {
        let end = start + len + IDENTITY_END.len();
        return format!("{}{block}{}", &index[..start], &index[end..]);
    }
    inject_head(&drop_manifest_link(index), block)
}

/// The document without the shell's own manifest link (the app brings its own).
fn drop_manifest_link(html: &str) -> String {
    let Some(start) = html.find("<link rel=\"manifest\"").or_else(|| html.find("<link rel=manifest")) else {
        return html.to_owned();
    };
    let end = html[start..].find('>').map_or(html.len(), |e| start + e + 1);
    format!("{}{}", &html[..start], &html[end..])
}

/// Inserts `extra` at the end of `<head>` (or before `<body>`, or after the doctype).
fn inject_head(html: &str, extra: &str) -> String {
    if let Some(at) = html.find("</head>").or_else(|| html.find("<body")) {
        return format!("{}{extra}{}", &html[..at], &html[at..]);
    }
    match html.find('>').filter(|_| html.trim_start().to_ascii_lowercase().starts_with("<!doctype")) {
        Some(at) => format!("{}{extra}{}", &html[..=at], &html[at + 1..]),
        None => format!("{extra}{html}"),
    }
}

#[derive(Deserialize)]
pub struct ManifestQuery {
    /// A one-use install pass to carry into the installed app's start URL (iOS opens the
    /// home-screen app with its own storage, so it signs in with the pass).
    install_pass: Option<String>,
}

#[tracing::instrument(level = "debug", skip_all)]
async fn standalone_manifest(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Query(q): Query<ManifestQuery>,
) -> Result<Response> {
    let app = app_by_slug(&state, &slug).await?.ok_or(Domain::AppNotFound)?;
    let scope = format!("/apps/{}/", app.slug);
    let start_url = match q.install_pass.as_deref() {
        Some(pass)
            if (1..=128).contains(&pass.len())
                && pass.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
        {
            format!("{scope}?install_pass={pass}")
        }
        _ => scope.clone(),
    };
    let icon = format!("/apps/{}/icon.png?v={}", app.slug, icon_version(&app));
    let (theme, background) = identity_colours(&app);
    let manifest = json!({
        "id": scope,
        "name": app.name,
        "short_name": app.name.chars().take(12).collect::<String>(),
        "description": app.description,
        "start_url": start_url,
        "scope": scope,
        "display": app.display.clone().unwrap_or_else(|| "standalone".into()),
        "theme_color": theme,
        "background_color": background,
        "icons": [
            { "src": format!("{icon}&size=192"), "sizes": "192x192", "type": "image/png", "purpose": "any" },
            { "src": format!("{icon}&size=512"), "sizes": "512x512", "type": "image/png", "purpose": "any" },
            { "src": format!("{icon}&size=512&purpose=maskable"), "sizes": "512x512", "type": "image/png", "purpose": "maskable" },
        ],
    });
    let mut r = axum::Json(manifest).into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/manifest+json"));
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(r)
}

#[tracing::instrument(level = "debug", skip_all)]
async fn standalone_icon(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Query(q): Query<IconQuery>,
) -> Result<Response> {
    let app = app_by_slug(&state, &slug).await?.ok_or(Domain::AppNotFound)?;
    let maskable = q.purpose.as_deref() == Some("maskable");
    icon_response(&state, &app, q.size.unwrap_or(512), maskable).await
}
