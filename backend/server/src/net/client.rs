//! Who is asking: the client address of a request — the TCP peer, or, when the peer is a
//! configured trusted proxy (the bundled Caddy), the address that proxy names in
//! `X-Forwarded-For`. Limits key on it ([`limit_key`]: an IPv6 /64 counts as one client).

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;

use crate::error::Error;
use crate::state::AppState;

/// Most entries `MOBIUS_TRUSTED_PROXIES` may list.
const MAX_TRUSTED_PROXIES: usize = 64;
/// Most `X-Forwarded-For` entries looked at (from the right).
const MAX_FORWARDED_HOPS: usize = 16;

/// One address range (`10.0.0.0/8`, `fd00::/8`, or a single address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range {
    base: IpAddr,
    prefix: u8,
}

impl Range {
    fn parse(raw: &str) -> Result<Self, String> {
        let (addr, prefix) = match raw.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (raw, None),
        };
        let base: IpAddr = addr.trim().parse().map_err(|_| format!("{raw:?} is not an address or CIDR range"))?;
        let base = canonical(base);
        let max = if base.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{raw:?} has a prefix length outside 0..={max}"))?,
        };
        Ok(Self { base, prefix })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        match (self.base, canonical(ip)) {
            (IpAddr::V4(base), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                u32::from(base) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(base), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                u128::from(base) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// The proxies whose `X-Forwarded-For` is believed. Empty by default: the header is ignored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<Range>);

impl TrustedProxies {
    /// Parses a comma-separated list of addresses and CIDR ranges.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let ranges =
            raw.split(',').map(str::trim).filter(|s| !s.is_empty()).map(Range::parse).collect::<Result<Vec<_>, _>>()?;
        if ranges.len() > MAX_TRUSTED_PROXIES {
            return Err(format!("at most {MAX_TRUSTED_PROXIES} entries"));
        }
        Ok(Self(ranges))
    }

    /// True when no proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// True when `ip` is a trusted proxy.
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|r| r.contains(ip))
    }
}

/// IPv4-mapped IPv6 addresses (`::ffff:1.2.3.4`) as plain IPv4.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

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

impl FromRequestParts<AppState> for ClientAddr {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Error> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), |c| c.0.ip());
        Ok(Self(client_ip(peer, &parts.headers, &state.config.trusted_proxies)))
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
