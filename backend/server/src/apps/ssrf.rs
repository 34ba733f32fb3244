//! Guards outbound fetches the server makes for the owner (app installs from a URL): https
//! only, no credentials in the URL, and every address the host resolves to must be public.
//! [`check_url`] is the early, friendly answer; the same rules hold again at connect time in
//! `smart_http.rs`, whose resolver is the one the connection uses.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::{Error, Result};

/// A `source_not_allowed` refusal saying why.
pub(super) fn refused(why: &str) -> Error {
    Error::bad_request("source_not_allowed", format!("That source is not allowed: {why}."))
}

/// Checks an `https://` URL before anything connects to it.
pub async fn check_url(url: &str) -> Result<()> {
    let rest = url.strip_prefix("https://").ok_or_else(|| refused("only https:// URLs"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() || authority.contains('@') {
        return Err(refused("no host, or credentials in the URL"));
    }
    let (host, port) = split_host_port(authority).ok_or_else(|| refused("a malformed host"))?;
    let addrs: Vec<IpAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) => tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|_| refused("the host name does not resolve"))?
            .map(|a| a.ip())
            .collect(),
    };
    if addrs.is_empty() {
        return Err(refused("the host name does not resolve"));
    }
    if let Some(ip) = addrs.into_iter().find(|ip| !is_public(*ip)) {
        return Err(refused(&format!("it points at a private or local address ({ip})")));
    }
    Ok(())
}

fn split_host_port(authority: &str) -> Option<(String, u16)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None => 443,
        };
        return Some((host.to_owned(), port));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => Some((host.to_owned(), port.parse().ok()?)),
        None => Some((authority.to_owned(), 443)),
    }
}

/// IPv4 ranges that are not a public destination: IANA's IPv4 Special-Purpose Address
/// Registry (RFC 6890 and its updates) entry by entry, plus multicast and the broadcast
/// address. The registry's globally reachable anycast blocks (AS112 `192.31.196.0/24` and
/// `192.175.48.0/24`, AMT `192.52.193.0/24`) stay allowed; the deprecated 6to4 relay anycast
/// `192.88.99.0/24` is refused with the rest of 6to4.
const SPECIAL_V4: &[(Ipv4Addr, u8, &str)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8, "this network"),
    (Ipv4Addr::new(10, 0, 0, 0), 8, "private"),
    (Ipv4Addr::new(100, 64, 0, 0), 10, "shared address space (carrier-grade NAT)"),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback"),
    (Ipv4Addr::new(169, 254, 0, 0), 16, "link local"),
    (Ipv4Addr::new(172, 16, 0, 0), 12, "private"),
    (Ipv4Addr::new(192, 0, 0, 0), 24, "IETF protocol assignments"),
    (Ipv4Addr::new(192, 0, 2, 0), 24, "documentation (TEST-NET-1)"),
    (Ipv4Addr::new(192, 88, 99, 0), 24, "6to4 relay anycast (deprecated)"),
    (Ipv4Addr::new(192, 168, 0, 0), 16, "private"),
    (Ipv4Addr::new(198, 18, 0, 0), 15, "benchmarking"),
    (Ipv4Addr::new(198, 51, 100, 0), 24, "documentation (TEST-NET-2)"),
    (Ipv4Addr::new(203, 0, 113, 0), 24, "documentation (TEST-NET-3)"),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast"),
    (Ipv4Addr::new(240, 0, 0, 0), 4, "reserved (and the broadcast address)"),
];

/// What an IPv6 range is: never a destination, or a form that carries an IPv4 address which
/// decides instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum V6 {
    Refused,
    /// The IPv4 address in the last 32 bits decides (IPv4-mapped, the NAT64 well-known prefix).
    EmbedsV4,
}

/// IPv6 ranges with special rules: IANA's IPv6 Special-Purpose Address Registry (RFC 6890 and
/// its updates), plus the deprecated site-local block and multicast. Anything outside global
/// unicast (`2000::/3`) is refused too (see [`is_public`]). Forms that embed an IPv4 address
/// where the IPv4 address cannot be trusted to decide (6to4, Teredo — which also obfuscates
/// it —, the local-use NAT64 prefix, whose layout is the operator's) are refused outright;
/// IPv4-mapped and the well-known NAT64 prefix are judged by the IPv4 address they carry
/// (a DNS64 network reaches public IPv4 hosts through them).
const SPECIAL_V6: &[(Ipv6Addr, u8, V6, &str)] = &[
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0), 96, V6::EmbedsV4, "IPv4-mapped"),
    (Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96, V6::EmbedsV4, "NAT64 well-known prefix"),
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0), 96, V6::Refused, "unspecified, loopback, IPv4-compatible"),
    (Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0), 48, V6::Refused, "NAT64 local-use prefix"),
    (Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0), 64, V6::Refused, "discard-only"),
    (Ipv6Addr::new(0x100, 0, 0, 1, 0, 0, 0, 0), 64, V6::Refused, "dummy prefix"),
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        23,
        V6::Refused,
        "IETF protocol assignments (Teredo, benchmarking, ORCHID)",
    ),
    (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32, V6::Refused, "documentation"),
    (Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16, V6::Refused, "6to4"),
    (Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20, V6::Refused, "documentation"),
    (Ipv6Addr::new(0x5f00, 0, 0, 0, 0, 0, 0, 0), 16, V6::Refused, "segment routing (SRv6) SIDs"),
    (Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7, V6::Refused, "unique local"),
    (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, V6::Refused, "link local"),
    (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, V6::Refused, "site local (deprecated)"),
    (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, V6::Refused, "multicast"),
];

fn in_v4(ip: Ipv4Addr, net: Ipv4Addr, bits: u8) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
    u32::from(ip) & mask == u32::from(net) & mask
}

fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, bits: u8) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
    u128::from(ip) & mask == u128::from(net) & mask
}

/// True for globally routable unicast addresses: nothing of [`SPECIAL_V4`], and for IPv6 an
/// address of global unicast (`2000::/3`) outside [`SPECIAL_V6`], or a form there that carries
/// a public IPv4 address. The one rule for installs, the app proxy and Web Push endpoints.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => match SPECIAL_V6.iter().find(|(net, bits, _, _)| in_v6(v6, *net, *bits)) {
            Some((_, _, V6::EmbedsV4, _)) => {
                let [.., a, b, c, d] = v6.octets();
                public_v4(Ipv4Addr::new(a, b, c, d))
            }
            Some((_, _, V6::Refused, _)) => false,
            None => in_v6(v6, Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3),
        },
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    !SPECIAL_V4.iter().any(|(net, bits, _)| in_v4(ip, *net, *bits))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first and the last address of a range.
    fn ends_v4(net: Ipv4Addr, bits: u8) -> [Ipv4Addr; 2] {
        let size = 1u64 << (32 - u32::from(bits));
        let first = u32::from(net);
        [Ipv4Addr::from(first), Ipv4Addr::from(u32::try_from(u64::from(first) + size - 1).expect("in range"))]
    }

    fn ends_v6(net: Ipv6Addr, bits: u8) -> [Ipv6Addr; 2] {
        let first = u128::from(net);
        let last = first | u128::MAX.checked_shr(u32::from(bits)).unwrap_or(0);
        [Ipv6Addr::from(first), Ipv6Addr::from(last)]
    }

    #[test]
    fn every_special_purpose_range_is_refused_end_to_end_and_its_neighbours_are_not() {
        for (net, bits, what) in SPECIAL_V4 {
            for ip in ends_v4(*net, *bits) {
                assert!(!is_public(IpAddr::V4(ip)), "{ip} ({what})");
                // The same address reached as IPv4-mapped IPv6 or through NAT64.
                let [a, b, c, d] = ip.octets();
                let mapped =
                    Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, u16::from_be_bytes([a, b]), u16::from_be_bytes([c, d]));
                let nat64 =
                    Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, u16::from_be_bytes([a, b]), u16::from_be_bytes([c, d]));
                assert!(!is_public(IpAddr::V6(mapped)) && !is_public(IpAddr::V6(nat64)), "{mapped} / {nat64} ({what})");
            }
        }
        for (net, bits, kind, what) in SPECIAL_V6 {
            if *kind == V6::Refused {
                for ip in ends_v6(*net, *bits) {
                    assert!(!is_public(IpAddr::V6(ip)), "{ip} ({what})");
                }
            }
        }
        // Just outside: the address after the benchmarking /15 and before 6to4, public ones
        // reached through the IPv4-carrying forms, and the globally reachable anycast blocks.
        for ip in [
            "198.20.0.0",
            "198.17.255.255",
            "100.128.0.0",
            "192.0.3.1",
            "192.31.196.1",
            "192.175.48.1",
            "223.255.255.255",
            "2001:200::1",
            "2003::1",
            "2001:db9::1",
            "::ffff:1.1.1.1",
            "64:ff9b::101:101",
            "2606:4700:4700::1111",
        ] {
            assert!(is_public(ip.parse().expect("ip")), "{ip}");
        }
    }

    #[test]
    fn the_ranges_found_open_are_refused_now() {
        for ip in [
            "198.18.0.1",
            "198.19.255.254",
            "2002:c0a8:101::1",
            "2002:808:808::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "64:ff9b:1::a00:1",
            "64:ff9b::a00:1",
            "::ffff:10.0.0.1",
            "::10.0.0.1",
            "::1",
            "::",
            "100::1",
            "fec0::1",
            "3fff::1",
            "5f00::1",
            "4000::1",
            "192.0.0.9",
            "192.88.99.1",
            "255.255.255.255",
            "127.0.0.1",
            "169.254.169.254",
        ] {
            assert!(!is_public(ip.parse().expect("ip")), "{ip}");
        }
    }

    #[tokio::test]
    async fn urls_are_checked_before_any_connection() {
        assert!(check_url("http://example.com/a.git").await.is_err(), "plain http");
        assert!(check_url("https://user:pw@example.com/a.git").await.is_err(), "credentials");
        assert!(check_url("https://127.0.0.1/a.git").await.is_err(), "loopback literal");
        assert!(check_url("https://[::1]:8443/a.git").await.is_err(), "v6 loopback");
        assert!(check_url("https://localhost/a.git").await.is_err(), "a name that resolves locally");
    }
}
