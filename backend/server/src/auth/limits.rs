//! Login throttling that nobody can turn against the owner.
//!
//! - Failures count per client address (an IPv6 /64 as one): after [`LoginPolicy::free_failures`]
//!   wrong passwords from one address, that address waits, doubling up to [`MAX_BACKOFF`].
//!   Guessing from one address is slow; other addresses are untouched.
//! - IPv6 /64s are cheap (a site usually holds 65,536 of them in its /48), so the failures of
//!   every /64 in one /48 also count together, with [`NETWORK_FREE_FACTOR`] times the free
//!   failures before the whole /48 waits.
//! - One global bucket bounds all attempts of addresses together — the last resort against
//!   many addresses, far above what one address can spend.
//! - A device that signed in before presents its device credential (`auth::devices`) and skips
//!   both: it only waits after its own failures, and its password is checked in its own lane
//!   (`auth::password::Lane`). So while an attack trips every other limit, the owner's
//!   devices still sign in with the right password.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use crate::locks::Unpoisoned;
use tokio::time::Instant;

/// Longest wait an address or device can be put on.
pub const MAX_BACKOFF: Duration = Duration::from_secs(15 * 60);
pub use crate::config::LoginPolicy;

/// An address's failures are forgotten after this long without a new one.
const FAILURE_MEMORY: Duration = Duration::from_secs(60 * 60);
/// An IPv6 /48 may fail this many times more often than one address before it waits.
pub const NETWORK_FREE_FACTOR: u32 = 8;
/// Most addresses and devices tracked at once (expired ones go first, then the oldest).
const MAX_TRACKED: usize = 10_000;

/// What failures are counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Attempter {
    /// A client address (already reduced by `net::client::limit_key`).
    Address(IpAddr),
    /// A known device (the hash of its credential).
    Device(String),
    /// The IPv6 /48 an address lies in (every address's failures there count together).
    Network(IpAddr),
}

impl Attempter {
    /// The network an address's failures also count against: its /48 for IPv6.
    fn network(&self) -> Option<Attempter> {
        match self {
            Attempter::Address(IpAddr::V6(v6)) => {
                let prefix = u128::from(*v6) & (u128::MAX << 80);
                Some(Attempter::Network(IpAddr::V6(std::net::Ipv6Addr::from(prefix))))
            }
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Throttles password attempts (login and first-run setup).
#[derive(Debug)]
pub struct LoginLimiter {
    policy: LoginPolicy,
    failures: Mutex<HashMap<Attempter, Failures>>,
    global: Mutex<Bucket>,
}

impl LoginLimiter {
    /// A limiter with `policy`.
    pub fn new(policy: LoginPolicy) -> Self {
        let tokens = f64::from(policy.global_burst);
        Self { policy, failures: Mutex::new(HashMap::new()), global: Mutex::new(Bucket { tokens, at: Instant::now() }) }
    }

    fn backoff(&self, count: u32) -> Duration {
        Self::backoff_after(count, self.policy.free_failures)
    }

    fn backoff_after(count: u32, free: u32) -> Duration {
        if count < free {
            return Duration::ZERO;
        }
        let exp = (count - free).min(20);
        Duration::from_secs(1u64 << exp).min(MAX_BACKOFF)
    }

    /// `Err(wait)` while `who` (or, for an IPv6 address, its /48) is backing off after its
    /// failures.
    pub fn check(&self, who: &Attempter) -> Result<(), Duration> {
        let failures = self.failures.locked();
        let now = Instant::now();
        let network = who.network();
        let waits = [
            failures.get(who).map(|f| f.last + self.backoff(f.count)),
            network.as_ref().and_then(|n| failures.get(n)).map(|f| {
                f.last + Self::backoff_after(f.count, self.policy.free_failures.saturating_mul(NETWORK_FREE_FACTOR))
            }),
        ];
        match waits.into_iter().flatten().max() {
            Some(until) if until > now => Err(until - now),
            _ => Ok(()),
        }
    }

    /// Takes one attempt from the global bucket; `Err(wait)` when it is empty.
    pub fn take_global(&self) -> Result<(), Duration> {
        let mut bucket = self.global.locked();
        let now = Instant::now();
        let every = self.policy.global_refill_every.as_secs_f64().max(f64::EPSILON);
        let refill = now.duration_since(bucket.at).as_secs_f64() / every;
        bucket.tokens = (bucket.tokens + refill).min(f64::from(self.policy.global_burst));
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(self.policy.global_refill_every.mul_f64(1.0 - bucket.tokens))
        }
    }

    /// Records a failed attempt by `who` (and by its network).
    pub fn record_failure(&self, who: Attempter) {
        if let Some(network) = who.network() {
            self.count_failure(network);
        }
        self.count_failure(who);
    }

    fn count_failure(&self, who: Attempter) {
        let mut failures = self.failures.locked();
        let now = Instant::now();
        if failures.len() >= MAX_TRACKED && !failures.contains_key(&who) {
            failures.retain(|_, f| now.duration_since(f.last) < FAILURE_MEMORY);
            if failures.len() >= MAX_TRACKED
                && let Some(oldest) = failures.iter().min_by_key(|(_, f)| f.last).map(|(k, _)| k.clone())
            {
                failures.remove(&oldest);
            }
        }
        let entry = failures.entry(who).or_insert(Failures { count: 0, last: now });
        if now.duration_since(entry.last) > FAILURE_MEMORY {
            entry.count = 0;
        }
        entry.count += 1;
        entry.last = now;
    }

    /// Forgets `who`'s failures (and its network's) after a successful sign-in.
    pub fn record_success(&self, who: &Attempter) {
        let mut failures = self.failures.locked();
        if let Some(network) = who.network() {
            failures.remove(&network);
        }
        failures.remove(who);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> Attempter {
        Attempter::Address(s.parse().expect("ip"))
    }

    #[test]
    fn backoff_starts_after_the_free_failures_and_doubles() {
        let l = LoginLimiter::new(LoginPolicy::default());
        let free = LoginPolicy::default().free_failures;
        assert_eq!(l.backoff(free - 1), Duration::ZERO);
        assert_eq!(l.backoff(free), Duration::from_secs(1));
        assert_eq!(l.backoff(free + 3), Duration::from_secs(8));
        assert_eq!(l.backoff(free + 30), MAX_BACKOFF);
    }

    #[tokio::test(start_paused = true)]
    async fn an_address_waits_after_its_failures_and_no_one_else_does() {
        let l = LoginLimiter::new(LoginPolicy::default());
        for _ in 0..LoginPolicy::default().free_failures {
            assert!(l.check(&addr("192.0.2.1")).is_ok());
            l.record_failure(addr("192.0.2.1"));
        }
        assert!(l.check(&addr("192.0.2.1")).is_err());
        assert!(l.check(&addr("192.0.2.2")).is_ok(), "another address is not slowed");
        assert!(l.check(&Attempter::Device("d".into())).is_ok(), "a device is not slowed");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(l.check(&addr("192.0.2.1")).is_ok(), "the wait ends");
        l.record_success(&addr("192.0.2.1"));
        l.record_failure(addr("192.0.2.1"));
        assert!(l.check(&addr("192.0.2.1")).is_ok(), "a success forgets the failures");
    }

    #[tokio::test(start_paused = true)]
    async fn many_ipv6_64s_of_one_48_wait_together_and_other_networks_do_not() {
        let l = LoginLimiter::new(LoginPolicy::default());
        let free = LoginPolicy::default().free_failures * NETWORK_FREE_FACTOR;
        // Each guess from a fresh /64 of 2001:db8:1::/48: no single address ever waits ...
        for i in 0..free {
            let who = addr(&format!("2001:db8:1:{i:x}::1"));
            assert!(l.check(&who).is_ok(), "guess {i}");
            l.record_failure(who);
        }
        // ... but the /48 as a whole now does, for every address in it.
        assert!(l.check(&addr("2001:db8:1:ffff::9")).is_err());
        assert!(l.check(&addr("2001:db8:2::1")).is_ok(), "another /48 is not slowed");
        assert!(l.check(&addr("192.0.2.7")).is_ok(), "IPv4 is not slowed");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(l.check(&addr("2001:db8:1:ffff::9")).is_ok(), "the wait ends");
        l.record_success(&addr("2001:db8:1:ffff::9"));
        assert!(l.check(&addr("2001:db8:1:0::1")).is_ok(), "a sign-in forgets the network's failures");
    }

    #[tokio::test(start_paused = true)]
    async fn the_global_bucket_empties_and_refills() {
        let policy = LoginPolicy { global_burst: 3, ..LoginPolicy::default() };
        let l = LoginLimiter::new(policy.clone());
        let taken = (0..10).take_while(|_| l.take_global().is_ok()).count();
        assert_eq!(taken, 3);
        assert!(l.take_global().is_err());
        tokio::time::advance(policy.global_refill_every).await;
        assert!(l.take_global().is_ok());
    }
}
