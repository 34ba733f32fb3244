//! Login throttling: per-username exponential backoff plus a global token bucket.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed logins allowed before a username starts backing off.
pub const FREE_FAILURES: u32 = 5;
/// Longest wait a username can be put on.
pub const MAX_BACKOFF: Duration = Duration::from_secs(15 * 60);
/// A username's failures are forgotten after this long without a new one.
const FAILURE_MEMORY: Duration = Duration::from_secs(60 * 60);
/// Most usernames tracked at once (oldest are evicted first).
const MAX_TRACKED_USERNAMES: usize = 10_000;
/// Global bucket for login and setup attempts: burst and refill interval.
const GLOBAL_BURST: f64 = 20.0;
const GLOBAL_REFILL_EVERY: Duration = Duration::from_secs(2);

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

/// Throttles password attempts.
#[derive(Debug)]
pub struct LoginLimiter {
    users: Mutex<HashMap<String, Failures>>,
    global: Mutex<Bucket>,
}

impl Default for LoginLimiter {
    fn default() -> Self {
        Self {
            users: Mutex::new(HashMap::new()),
            global: Mutex::new(Bucket { tokens: GLOBAL_BURST, at: Instant::now() }),
        }
    }
}

fn backoff(count: u32) -> Duration {
    if count < FREE_FAILURES {
        return Duration::ZERO;
    }
    let exp = (count - FREE_FAILURES).min(20);
    Duration::from_secs(1u64 << exp).min(MAX_BACKOFF)
}

fn key(username: &str) -> String {
    username.trim().to_lowercase()
}

impl LoginLimiter {
    /// Takes one attempt from the global bucket; `Err(wait)` when it is empty.
    pub fn take_global(&self) -> Result<(), Duration> {
        let mut bucket = self.global.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let refill = now.duration_since(bucket.at).as_secs_f64() / GLOBAL_REFILL_EVERY.as_secs_f64();
        bucket.tokens = (bucket.tokens + refill).min(GLOBAL_BURST);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(GLOBAL_REFILL_EVERY.mul_f64(1.0 - bucket.tokens))
        }
    }

    /// `Err(wait)` while `username` is backing off.
    pub fn check(&self, username: &str) -> Result<(), Duration> {
        let users = self.users.lock().unwrap_or_else(|p| p.into_inner());
        let Some(f) = users.get(&key(username)) else { return Ok(()) };
        let until = f.last + backoff(f.count);
        let now = Instant::now();
        if until > now { Err(until - now) } else { Ok(()) }
    }

    /// Records a failed attempt.
    pub fn record_failure(&self, username: &str) {
        let mut users = self.users.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if users.len() >= MAX_TRACKED_USERNAMES {
            users.retain(|_, f| now.duration_since(f.last) < FAILURE_MEMORY);
            if users.len() >= MAX_TRACKED_USERNAMES
                && let Some(oldest) = users.iter().min_by_key(|(_, f)| f.last).map(|(k, _)| k.clone())
            {
                users.remove(&oldest);
            }
        }
        let entry = users.entry(key(username)).or_insert(Failures { count: 0, last: now });
        if now.duration_since(entry.last) > FAILURE_MEMORY {
            entry.count = 0;
        }
        entry.count += 1;
        entry.last = now;
    }

    /// Clears a username's failures after a successful login.
    pub fn record_success(&self, username: &str) {
        self.users.lock().unwrap_or_else(|p| p.into_inner()).remove(&key(username));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_starts_after_the_free_failures_and_doubles() {
        assert_eq!(backoff(FREE_FAILURES - 1), Duration::ZERO);
        assert_eq!(backoff(FREE_FAILURES), Duration::from_secs(1));
        assert_eq!(backoff(FREE_FAILURES + 3), Duration::from_secs(8));
        assert_eq!(backoff(FREE_FAILURES + 30), MAX_BACKOFF);
    }

    #[test]
    fn a_username_is_locked_after_repeated_failures_and_freed_by_success() {
        let l = LoginLimiter::default();
        for _ in 0..FREE_FAILURES {
            assert!(l.check("Owner").is_ok());
            l.record_failure("owner ");
        }
        assert!(l.check("owner").is_err(), "case and spaces do not dodge the backoff");
        assert!(l.check("someone-else").is_ok());
        l.record_success("OWNER");
        assert!(l.check("owner").is_ok());
    }

    #[test]
    fn the_global_bucket_empties() {
        let l = LoginLimiter::default();
        let taken = (0..100).take_while(|_| l.take_global().is_ok()).count();
        assert_eq!(taken, GLOBAL_BURST as usize);
        assert!(l.take_global().is_err());
    }
}
