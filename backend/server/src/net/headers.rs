//! The security headers every response leaves with, applied by the listener to whatever a
//! response has not set itself.

use axum::http::{HeaderMap, HeaderValue, header};

/// CSP of the shell document: everything from this origin, nothing inline but styles.
pub const SHELL_CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; \
img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; worker-src 'self'; manifest-src 'self'; \
frame-src 'self'; frame-ancestors 'self'; base-uri 'self'; form-action 'self'; object-src 'none'";

/// The header policy of every response, applied by the listener ([`crate::net`]) to whatever
/// a response has not set itself.
pub fn apply_security_headers(headers: &mut HeaderMap, https: bool) {
    let is_html =
        headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("text/html"));
    headers.entry(header::X_CONTENT_TYPE_OPTIONS).or_insert(HeaderValue::from_static("nosniff"));
    headers.entry(header::REFERRER_POLICY).or_insert(HeaderValue::from_static("strict-origin-when-cross-origin"));
    // A document that sandboxes itself decides its own framing (the nested chat frame is
    // framed by an opaque app frame, which SAMEORIGIN would refuse).
    let sandboxed = headers
        .get(header::CONTENT_SECURITY_POLICY)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("sandbox"));
    if is_html {
        headers.entry(header::CONTENT_SECURITY_POLICY).or_insert(HeaderValue::from_static(SHELL_CSP));
        if !sandboxed {
            headers.entry(header::X_FRAME_OPTIONS).or_insert(HeaderValue::from_static("SAMEORIGIN"));
        }
        headers
            .entry("permissions-policy")
            .or_insert(HeaderValue::from_static("camera=(self), microphone=(self), geolocation=(self)"));
    }
    if https {
        headers
            .entry(header::STRICT_TRANSPORT_SECURITY)
            .or_insert(HeaderValue::from_static("max-age=31536000; includeSubDomains"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_gets_the_shell_csp_and_https_gets_hsts() {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
        apply_security_headers(&mut h, true);
        assert!(h[header::CONTENT_SECURITY_POLICY].to_str().expect("csp").contains("frame-ancestors 'self'"));
        assert!(h.contains_key(header::STRICT_TRANSPORT_SECURITY));
        let mut j = HeaderMap::new();
        j.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        apply_security_headers(&mut j, false);
        assert!(!j.contains_key(header::CONTENT_SECURITY_POLICY));
        assert!(!j.contains_key(header::STRICT_TRANSPORT_SECURITY));
        assert_eq!(j[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    }
}
