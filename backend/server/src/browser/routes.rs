//! `POST /api/screenshots`: an installed app (`app`) or a page of this server (`url`) rendered by
//! the screenshot browser; what `mobius app screenshot` and `mobius page screenshot` call with
//! the turn's agent token (the owner may call it too).

use std::time::Duration;

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use base64::Engine;
use serde::{Deserialize, Serialize};

use super::{Confinement, Shot, Size, Target};
use crate::api::ApiJson;
use crate::auth::Owner;
use crate::auth::jwt::{Claims, Scope};
use crate::error::{Error, Result};
use crate::state::AppState;

/// How often a screenshot for an agent checks that the agent's turn still runs.
const TURN_CHECK: Duration = Duration::from_millis(500);
/// Longest `path` or `url` accepted.
const MAX_PATH_CHARS: usize = 1024;

pub fn router() -> Router<AppState> {
    Router::new().route("/screenshots", post(screenshot))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShotIn {
    /// An installed app's slug…
    app: Option<String>,
    /// …or a page of this server: a path (`/settings`) or a URL on this server's origin.
    url: Option<String>,
    #[serde(default)]
    size: Size,
    /// With `app`: the in-app path to open (its deep link).
    path: Option<String>,
}

#[derive(Debug, Serialize)]
struct ShotOut {
    /// The page rendered (a path on this server).
    target: String,
    size: Size,
    png_base64: String,
    #[serde(flatten)]
    shot: Shot,
}

/// `POST /api/screenshots`.
#[tracing::instrument(level = "debug", skip_all)]
async fn screenshot(
    State(state): State<AppState>,
    Owner(claims): Owner,
    ApiJson(body): ApiJson<ShotIn>,
) -> Result<Json<ShotOut>> {
    let (path, app_id) = target_path(&state, &body).await?;
    let origin = state.providers.api_url().trim_end_matches('/').to_owned();
    let borrowed = state.sessions.borrow();
    let (username, epoch) =
        state.owner.get().ok_or_else(|| Error::unauthorized("invalid_token", "No owner account exists."))?;
    let mut browser_claims = Claims::new(&username, Scope::Owner, epoch, super::TOKEN_TTL_SECS);
    browser_claims.sid = Some(borrowed.sid().to_owned());
    let target = Target { url: format!("{origin}{path}"), origin, token: state.keys.issue(&browser_claims)?, app_id };
    let confine = Confinement {
        sandbox: &state.agents.sandbox,
        memory: state.providers.memory(),
        trees: state.providers.trees(),
    };
    let capture = state.screenshots.capture(&confine, &target, body.size);
    // An agent's screenshot ends with its turn: dropping the capture kills the browser.
    let shot = if claims.scope == Scope::Agent {
        tokio::select! {
            shot = capture => shot?,
            () = turn_ended(&state, &claims) => {
                return Err(Error::conflict("turn_ended", "The turn that asked for this screenshot ended."));
            }
        }
    } else {
        capture.await?
    };
    drop(borrowed);
    let png_base64 = base64::engine::general_purpose::STANDARD.encode(&shot.png);
    Ok(Json(ShotOut { target: path, size: body.size, png_base64, shot }))
}

/// Resolves when the agent run of `claims` has ended.
async fn turn_ended(state: &AppState, claims: &Claims) {
    loop {
        tokio::time::sleep(TURN_CHECK).await;
        if crate::auth::owner_claims(state, claims.clone()).await.is_err() {
            return;
        }
    }
}

/// The path on this server the request names (and the app it shows), or why not.
async fn target_path(state: &AppState, body: &ShotIn) -> Result<(String, Option<i64>)> {
    match (&body.app, &body.url) {
        (Some(slug), None) => {
            let app = crate::db::apps::by_slug(&state.db.read, slug).await?;
            let Some(app) = app.filter(|a| a.deleted_at.is_none() && a.bundle_sha.is_some()) else {
                return Err(Error::not_found(
                    "app_not_found",
                    format!("No installed app is called {slug:?}; publish it with `mobius app apply {slug}` first."),
                ));
            };
            match &body.path {
                None => Ok((format!("/apps/{}/", app.slug), Some(app.id))),
                Some(path) => {
                    check_path(path)?;
                    let intent = query_escape(path);
                    Ok((format!("/?app={}&intent={intent}", app.id), Some(app.id)))
                }
            }
        }
        (None, Some(url)) if body.path.is_none() => {
            Ok((page_path(url, state.providers.api_url(), state.config.public_origin.as_str())?, None))
        }
        _ => Err(Error::unprocessable(
            "screenshot_target",
            "Name exactly one of app (an installed app's slug) or url (a page of this server); path goes with app.",
        )),
    }
}

/// `url` as a path on this server: a path, or a URL on the server's loopback address or its
/// public origin. Anything else is refused: the browser signs in as the owner.
fn page_path(url: &str, loopback: &str, public: &str) -> Result<String> {
    let off = || {
        Error::unprocessable(
            "url_off_server",
            format!(
                "Only pages of this server can be screenshotted: give a path like /settings, or a URL on {public}."
            ),
        )
    };
    if url.chars().count() > MAX_PATH_CHARS || url.chars().any(char::is_control) {
        return Err(off());
    }
    if url.starts_with('/') {
        return if url.starts_with("//") || url.starts_with("/\\") { Err(off()) } else { Ok(url.to_owned()) };
    }
    let parsed = reqwest::Url::parse(url).map_err(|_| off())?;
    let origin = parsed.origin().ascii_serialization();
    let ours = [loopback, public]
        .iter()
        .filter_map(|o| reqwest::Url::parse(o).ok())
        .any(|o| o.origin().ascii_serialization() == origin);
    if !ours || !matches!(parsed.scheme(), "http" | "https") {
        return Err(off());
    }
    let mut path = parsed.path().to_owned();
    if let Some(query) = parsed.query() {
        path.push('?');
        path.push_str(query);
    }
    if let Some(fragment) = parsed.fragment() {
        path.push('#');
        path.push_str(fragment);
    }
    Ok(path)
}

/// `text` escaped for a query value (unreserved characters kept, everything else `%XX`).
fn query_escape(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// An in-app path: starts with `/`, bounded, no control characters.
fn check_path(path: &str) -> Result<()> {
    if !path.starts_with('/') || path.chars().count() > MAX_PATH_CHARS || path.chars().any(char::is_control) {
        return Err(Error::unprocessable(
            "invalid_path",
            "path is an in-app path starting with / (at most 1,024 characters).",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pages_of_this_server_are_taken() {
        let (lo, public) = ("http://127.0.0.1:8000", "https://mobius.example.com");
        assert_eq!(page_path("/settings", lo, public).expect("path"), "/settings");
        assert_eq!(page_path("http://127.0.0.1:8000/apps/x/?a=1#b", lo, public).expect("loopback"), "/apps/x/?a=1#b");
        assert_eq!(page_path("https://mobius.example.com/settings", lo, public).expect("public"), "/settings");
        for off in [
            "https://example.com/",
            "http://127.0.0.1:9/",
            "//example.com/x",
            "/\\example.com",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "settings",
            "/a\nb",
        ] {
            let e = page_path(off, lo, public).expect_err(off);
            assert_eq!(e.code(), "url_off_server", "{off}");
        }
        assert!(check_path("/items/3").is_ok());
        assert_eq!(query_escape("/a b&c=é"), "/a%20b%26c%3D%C3%A9");
        assert!(check_path("items").is_err());
    }
}
