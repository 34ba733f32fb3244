//! Who is asking: the client address of a request — the TCP peer, or, when the peer is a
//! configured trusted proxy (the bundled Caddy), the address that proxy names in
//! `X-Forwarded-For`. Limits key on it ([`limit_key`]: an IPv6 /64 counts as one client).

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use axum::extract::{ConnectInfo, FromRef, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;

pub use crate::config::proxies::{TrustedProxies, canonical};
use crate::error::Error;

/// Most `X-Forwarded-For` entries looked at (from the right).
const MAX_FORWARDED_HOPS: usize = 16;

/// The key limits count under: the address itself for IPv4, its /64 for IPv6 (one
/// subscriber gets a whole /64, so single IPv6 addresses cost an attacker nothing).
pub fn limit_key(ip: IpAddr) -> IpAddr {
    match canonical(ip) {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & (u128::MAX << 64))),
        v4 => v4,
    }
}

/// The client of a request that arrived from `peer`: `peer` itself unless it is a trusted
/// proxy; then the right-most `X-Forwarded-For` entry that is not a trusted proxy (entries
/// further left were written by the client and prove nothing).
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &TrustedProxies) -> IpAddr {
    let peer = canonical(peer);
    if !trusted.contains(peer) {
        return peer;
    }
    let mut hops = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect::<Vec<_>>();
    hops.reverse();
    for hop in hops.into_iter().take(MAX_FORWARDED_HOPS) {
        let Ok(ip) = hop.parse::<IpAddr>().map(canonical) else {
            // Garbage where an address belongs: the proxy did not write it; stop believing.
            return peer;
        };
        if !trusted.contains(ip) {
            return ip;
        }
    }
    peer
}

/// Extractor: the client address of this request (see [`client_ip`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

impl ClientAddr {
    /// The key limits count this client under.
    pub fn key(&self) -> IpAddr {
        limit_key(self.0)
    }
}

impl<S> FromRequestParts<S> for ClientAddr
where
    S: Send + Sync,
    TrustedProxies: FromRef<S>,
{
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Error> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), |c| c.0.ip());
        Ok(Self(client_ip(peer, &parts.headers, &TrustedProxies::from_ref(state))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    fn xff(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", HeaderValue::from_str(value).expect("header"));
        h
    }

    #[test]
    fn ranges_match_by_prefix() {
        let t = TrustedProxies::parse("172.16.0.0/12, 10.1.2.3, fd00::/8").expect("parse");
        assert!(t.contains(ip("172.20.1.1")));
        assert!(!t.contains(ip("172.32.0.1")));
        assert!(t.contains(ip("10.1.2.3")) && !t.contains(ip("10.1.2.4")));
        assert!(t.contains(ip("fd12::1")) && !t.contains(ip("fe80::1")));
        assert!(t.contains(ip("::ffff:10.1.2.3")), "mapped addresses are IPv4");
        assert!(TrustedProxies::parse("0.0.0.0/0").expect("all").contains(ip("8.8.8.8")));
        assert!(TrustedProxies::parse("nonsense").is_err());
        assert!(TrustedProxies::parse("::/129").is_err());
    }

    #[test]
    fn forwarded_for_counts_only_from_a_trusted_proxy() {
        let none = TrustedProxies::default();
        assert_eq!(client_ip(ip("203.0.113.9"), &xff("1.1.1.1"), &none), ip("203.0.113.9"));
        let caddy = TrustedProxies::parse("172.18.0.0/16").expect("parse");
        assert_eq!(client_ip(ip("172.18.0.2"), &xff("198.51.100.7"), &caddy), ip("198.51.100.7"));
        // The client may prepend anything; the right-most untrusted entry is the one the proxy saw.
        assert_eq!(client_ip(ip("172.18.0.2"), &xff("1.1.1.1, 198.51.100.7"), &caddy), ip("198.51.100.7"));
        assert_eq!(client_ip(ip("172.18.0.2"), &xff("198.51.100.7, 172.18.0.5"), &caddy), ip("198.51.100.7"));
        assert_eq!(client_ip(ip("172.18.0.2"), &HeaderMap::new(), &caddy), ip("172.18.0.2"));
        assert_eq!(client_ip(ip("172.18.0.2"), &xff("junk"), &caddy), ip("172.18.0.2"));
        // A non-proxy peer cannot pick its own address.
        assert_eq!(client_ip(ip("198.51.100.7"), &xff("172.18.0.9"), &caddy), ip("198.51.100.7"));
    }

    #[test]
    fn an_ipv6_client_is_its_slash_64() {
        assert_eq!(limit_key(ip("2001:db8:1:2:aaaa::1")), limit_key(ip("2001:db8:1:2:bbbb::9")));
        assert_ne!(limit_key(ip("2001:db8:1:2::1")), limit_key(ip("2001:db8:1:3::1")));
        assert_eq!(limit_key(ip("192.0.2.1")), ip("192.0.2.1"));
    }
}
