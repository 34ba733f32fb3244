//! Guards outbound fetches the server makes for the owner (app installs from a URL): https
//! only, no credentials in the URL, and every address the host resolves to must be public.
//! [`check_url`] is the early, friendly answer; the same rules hold again at connect time in
//! `smart_http.rs`, whose resolver is the one the connection uses.

use std::net::{IpAddr, Ipv4Addr};

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

/// True for globally routable unicast addresses.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return public_v4(v4);
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link local
                || (s[0] == 0x64 && s[1] == 0xff9b) // NAT64
                || (s[0] == 0 && s[1] == 0 && s[2] == 0 && s[3] == 0 && s[4] == 0 && s[5] == 0) // IPv4-compatible
                || s[0] == 0x2001 && s[1] == 0xdb8) // documentation
        }
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    !(ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_unspecified()
        || ip.is_documentation()
        || o[0] == 0
        || (o[0] == 100 && (64..128).contains(&o[1])) // carrier-grade NAT
        || (o[0] == 192 && o[1] == 0 && o[2] == 0)
        || o[0] >= 240)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_special_addresses_are_refused() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
        ] {
            assert!(!is_public(ip.parse().expect("ip")), "{ip}");
        }
        for ip in ["1.1.1.1", "140.82.121.4", "2606:4700:4700::1111"] {
            assert!(is_public(ip.parse().expect("ip")), "{ip}");
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
