//! Rejects cross-site state-changing requests (`Sec-Fetch-Site`, then `Origin`/`Referer`).

use axum::extract::Request;
use axum::http::{HeaderMap, Method, header};

use crate::error::Error;
use crate::state::AppState;

/// Lets safe methods through; refuses (403 `cross_site_request`) other requests that a browser
/// marks as cross-site, or whose `Origin` (else `Referer`) is neither the public origin nor the
/// `Host` the request was sent to. Requests with none of these headers (non-browser clients,
/// which cannot carry the owner's ambient credentials anyway) pass. Part of [`crate::api::gate`].
pub fn check(request: &Request, state: &AppState, claims: Option<&super::Claims>) -> Result<(), Error> {
    if is_safe(request.method())
        || is_same_site(request.headers(), state.config.public_origin.as_str())
        // The nested chat frame trades its one-use grant here; the grant is the credential.
        || request.uri().path().ends_with("/app-chat-embeds/session")
        || is_sandboxed_app(request.headers(), claims)
    {
        Ok(())
    } else {
        Err(Error::forbidden("cross_site_request", "Cross-site requests are not allowed."))
    }
}

/// A mini-app frame is an opaque origin (`Origin: null`); it may call the API with its own
/// app token (which carries no ambient authority; `claims` are its bearer's, verified). The
/// route still checks the token.
fn is_sandboxed_app(headers: &HeaderMap, claims: Option<&super::Claims>) -> bool {
    let null_origin = headers.get(header::ORIGIN).is_some_and(|o| o == "null");
    null_origin && claims.is_some_and(|c| matches!(c.scope, super::Scope::App | super::Scope::ChatEmbed))
}

fn is_safe(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The decision, separated for unit tests.
pub fn is_same_site(headers: &HeaderMap, public_origin: &str) -> bool {
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        return matches!(site, "same-origin" | "none");
    }
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| headers.get(header::REFERER).and_then(|v| v.to_str().ok()).and_then(origin_of));
    match origin {
        None => true,
        Some(origin) => origin_matches(&origin, public_origin, host),
    }
}

fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    Some(format!("{scheme}://{authority}"))
}

fn origin_matches(origin: &str, public_origin: &str, host: Option<&str>) -> bool {
    let origin = origin.trim_end_matches('/').to_ascii_lowercase();
    if origin == public_origin {
        return true;
    }
    let authority = origin.split_once("://").map(|(_, a)| a);
    matches!((authority, host), (Some(a), Some(h)) if a == h.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().expect("header"));
        }
        h
    }

    const ORIGIN: &str = "https://mobius.example.com";

    #[test]
    fn fetch_metadata_decides_when_present() {
        assert!(is_same_site(&headers(&[("sec-fetch-site", "same-origin")]), ORIGIN));
        assert!(is_same_site(&headers(&[("sec-fetch-site", "none")]), ORIGIN));
        assert!(!is_same_site(&headers(&[("sec-fetch-site", "cross-site"), ("origin", ORIGIN)]), ORIGIN));
        assert!(!is_same_site(&headers(&[("sec-fetch-site", "same-site")]), ORIGIN));
    }

    #[test]
    fn origin_must_be_the_public_origin_or_the_host() {
        assert!(is_same_site(&headers(&[("origin", ORIGIN)]), ORIGIN));
        assert!(is_same_site(&headers(&[("origin", "http://localhost:8000"), ("host", "localhost:8000")]), ORIGIN));
        assert!(!is_same_site(&headers(&[("origin", "https://evil.example"), ("host", "mobius.example.com")]), ORIGIN));
        assert!(!is_same_site(&headers(&[("origin", "null")]), ORIGIN));
        assert!(!is_same_site(&headers(&[("referer", "https://evil.example/page")]), ORIGIN));
        assert!(is_same_site(&headers(&[("referer", "https://mobius.example.com/shell/")]), ORIGIN));
        assert!(is_same_site(&HeaderMap::new(), ORIGIN));
    }
}
