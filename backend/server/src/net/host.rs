//! DNS-rebinding guard: a request must name, in `Host`, the configured public origin's host
//! or — when the server listens on loopback (or on every interface, which includes it) — a
//! loopback name with the port it listens on. Anything else is 421 before any route runs, so a
//! web page on another name that resolves to this machine can neither claim a fresh instance
//! nor drive one.

use std::net::SocketAddr;

use axum::http::{HeaderMap, header};

use crate::config::{ExtraHost, PublicOrigin};

/// Routes that answer whatever the `Host`: they reveal nothing and change nothing, and
/// orchestrators probe them by address. They answer at once from memory, so the listener's
/// reserve for known devices does not hold them back either (a health check keeps working
/// while strangers fill the server).
const PROBES: &[&str] = &["/api/health", "/api/ready", "/api/version"];

/// True for the probe routes ([`PROBES`]).
pub fn is_probe(path: &str) -> bool {
    PROBES.contains(&path)
}

/// The `Host` values this server answers.
#[derive(Clone, Debug)]
pub struct AllowedHosts {
    allowed: Vec<String>,
    /// Names admitted on any port (`MOBIUS_EXTRA_HOSTS` entries without one).
    any_port: Vec<String>,
}

impl AllowedHosts {
    /// The hosts for `origin` and `extra`, plus loopback names with `local`'s port when
    /// `local` is a loopback or unspecified address.
    pub fn new(origin: &PublicOrigin, extra: &[ExtraHost], local: SocketAddr) -> Self {
        let mut allowed = Vec::new();
        let mut any_port = Vec::new();
        for host in extra {
            match host.port {
                Some(port) => allowed.push(format!("{}:{port}", host.name)),
                None => any_port.push(host.name.clone()),
            }
        }
        let authority = origin.authority().to_ascii_lowercase();
        let default_port = if origin.is_https() { 443 } else { 80 };
        match split_port(&authority) {
            (host, None) => {
                allowed.push(host.to_owned());
                allowed.push(format!("{host}:{default_port}"));
            }
            (host, Some(port)) => {
                allowed.push(authority.clone());
                if port == default_port {
                    allowed.push(host.to_owned());
                }
            }
        }
        if local.ip().is_loopback() || local.ip().is_unspecified() {
            let port = local.port();
            for name in ["localhost", "127.0.0.1", "[::1]"] {
                allowed.push(format!("{name}:{port}"));
                if port == 80 {
                    allowed.push(name.to_owned());
                }
            }
        }
        allowed.sort();
        allowed.dedup();
        Self { allowed, any_port }
    }

    /// True when a request to `path` with `headers` may be served.
    pub fn admits(&self, path: &str, headers: &HeaderMap) -> bool {
        if PROBES.contains(&path) {
            return true;
        }
        let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else { return false };
        let host = host.trim();
        if self.allowed.iter().any(|a| a.eq_ignore_ascii_case(host)) {
            return true;
        }
        let name = split_port(host).0.trim_end_matches('.');
        if self.any_port.iter().any(|a| a.eq_ignore_ascii_case(name)) {
            return true;
        }
        // `example.com.` is the same name as `example.com`.
        let undotted = match split_port(host) {
            (name, Some(port)) if name.ends_with('.') => format!("{}:{port}", name.trim_end_matches('.')),
            (name, None) if name.ends_with('.') => name.trim_end_matches('.').to_owned(),
            _ => return false,
        };
        self.allowed.iter().any(|a| a.eq_ignore_ascii_case(&undotted))
    }
}

/// `host[:port]` → (host, port); IPv6 literals keep their brackets.
fn split_port(authority: &str) -> (&str, Option<u16>) {
    let (host, port) = match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => (&authority[..i], Some(&authority[i + 1..])),
        _ => (authority, None),
    };
    match port.map(str::parse::<u16>) {
        Some(Ok(p)) => (host, Some(p)),
        Some(Err(_)) => (authority, None),
        None => (host, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn host(h: &str) -> HeaderMap {
        let mut m = HeaderMap::new();
        m.insert(header::HOST, HeaderValue::from_str(h).expect("host"));
        m
    }

    fn origin(o: &str) -> PublicOrigin {
        PublicOrigin::parse(o).expect("origin")
    }

    #[test]
    fn the_public_origin_answers_with_or_without_its_default_port() {
        let a = AllowedHosts::new(&origin("https://mobius.example.com"), &[], "0.0.0.0:8000".parse().expect("addr"));
        assert!(a.admits("/api/auth/setup", &host("mobius.example.com")));
        assert!(a.admits("/", &host("Mobius.Example.com:443")));
        assert!(a.admits("/", &host("mobius.example.com.")));
        assert!(!a.admits("/", &host("rebind.attacker.example")));
        assert!(!a.admits("/", &host("mobius.example.com:8000")));
        assert!(!a.admits("/", &HeaderMap::new()));
        // Bound to every interface: the agent on this machine calls the loopback address.
        assert!(a.admits("/api/apps/apply", &host("127.0.0.1:8000")));
    }

    #[test]
    fn a_loopback_server_answers_loopback_names_with_its_port_only() {
        let a = AllowedHosts::new(&origin("http://127.0.0.1:8000"), &[], "127.0.0.1:8000".parse().expect("addr"));
        for h in ["127.0.0.1:8000", "localhost:8000", "[::1]:8000"] {
            assert!(a.admits("/api/auth/setup", &host(h)), "{h}");
        }
        assert!(!a.admits("/api/auth/setup", &host("localhost:9000")));
        assert!(!a.admits("/api/auth/setup", &host("evil.example:8000")));
        assert!(!a.admits("/api/auth/setup", &host("127.0.0.1")));
        let public = AllowedHosts::new(&origin("https://m.example"), &[], "192.0.2.10:8000".parse().expect("addr"));
        assert!(!public.admits("/", &host("127.0.0.1:8000")), "not reachable on loopback: not a loopback name");
    }

    #[test]
    fn extra_hosts_answer_on_their_port_or_any_port() {
        let extra = ExtraHost::parse_list("192.168.1.20:8000, mobius.lan").expect("hosts");
        let a = AllowedHosts::new(&origin("https://m.example"), &extra, "0.0.0.0:8000".parse().expect("addr"));
        assert!(a.admits("/", &host("192.168.1.20:8000")));
        assert!(!a.admits("/", &host("192.168.1.20:9000")));
        assert!(!a.admits("/", &host("192.168.1.20")));
        assert!(a.admits("/", &host("mobius.lan")));
        assert!(a.admits("/", &host("MOBIUS.lan.:8443")));
        assert!(!a.admits("/", &host("evil.mobius.lan")));
        assert!(!a.admits("/", &host("mobius.lan.evil.example")));
        assert!(a.admits("/", &host("m.example")), "the public origin still answers");
    }

    #[test]
    fn probes_answer_any_host() {
        let a = AllowedHosts::new(&origin("https://m.example"), &[], "0.0.0.0:8000".parse().expect("addr"));
        assert!(a.admits("/api/health", &host("10.0.0.5:8000")));
        assert!(a.admits("/api/ready", &HeaderMap::new()));
        assert!(!a.admits("/api/auth/setup/status", &host("10.0.0.5:8000")));
    }
}
