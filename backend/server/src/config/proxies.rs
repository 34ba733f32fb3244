//! The proxies whose `X-Forwarded-For` is believed (`MOBIUS_TRUSTED_PROXIES`): a value type
//! of the configuration; `net::client` decides who the client is with it.

use std::net::IpAddr;

/// Most entries `MOBIUS_TRUSTED_PROXIES` may list.
const MAX_TRUSTED_PROXIES: usize = 64;
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
/// Cheap to clone (the request extractor takes one per request).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies(std::sync::Arc<[Range]>);

impl TrustedProxies {
    /// Parses a comma-separated list of addresses and CIDR ranges.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let ranges =
            raw.split(',').map(str::trim).filter(|s| !s.is_empty()).map(Range::parse).collect::<Result<Vec<_>, _>>()?;
        if ranges.len() > MAX_TRUSTED_PROXIES {
            return Err(format!("at most {MAX_TRUSTED_PROXIES} entries"));
        }
        Ok(Self(ranges.into()))
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
