//! The de-duplication and rate limit of browser reports.

use crate::locks::Unpoisoned;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// An identical report inside this window is counted, not logged again.
const DEDUPE_WINDOW: Duration = Duration::from_secs(60);
/// Reports logged per minute across all callers.
pub(super) const MAX_LOGGED_PER_MINUTE: u32 = 60;
/// Distinct recent reports remembered for de-duplication.
const MAX_REMEMBERED: usize = 256;

/// The de-duplication and rate state of client reports (one per server, in `AppState`).
#[derive(Debug, Default)]
pub struct ClientReports(Mutex<Window>);

#[derive(Debug, Default)]
struct Window {
    /// Report key → when it was last logged.
    recent: HashMap<(i64, u64), Instant>,
    minute_started: Option<Instant>,
    logged_this_minute: u32,
    suppressed: u64,
}

impl ClientReports {
    /// Whether a report keyed `key` should be logged now (and notes that it was).
    pub(super) fn admit(&self, key: (i64, u64), now: Instant) -> bool {
        let mut w = self.0.locked();
        if w.recent.get(&key).is_some_and(|at| now.duration_since(*at) < DEDUPE_WINDOW) {
            w.suppressed += 1;
            return false;
        }
        if w.minute_started.is_none_or(|start| now.duration_since(start) >= Duration::from_secs(60)) {
            w.minute_started = Some(now);
            w.logged_this_minute = 0;
        }
        if w.logged_this_minute >= MAX_LOGGED_PER_MINUTE {
            w.suppressed += 1;
            return false;
        }
        w.logged_this_minute += 1;
        if w.recent.len() >= MAX_REMEMBERED {
            w.recent.retain(|_, at| now.duration_since(*at) < DEDUPE_WINDOW);
            if w.recent.len() >= MAX_REMEMBERED {
                w.recent.clear();
            }
        }
        w.recent.insert(key, now);
        true
    }

    /// Reports not logged since start (duplicates and over-limit ones).
    pub(super) fn take_suppressed(&self) -> u64 {
        std::mem::take(&mut self.0.locked().suppressed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_logged_once_a_minute_and_the_log_has_a_ceiling() {
        let reports = ClientReports::default();
        let start = Instant::now();
        assert!(reports.admit((1, 7), start));
        assert!(!reports.admit((1, 7), start + Duration::from_secs(30)));
        assert!(reports.admit((2, 7), start + Duration::from_secs(30)), "another app's report is its own");
        assert!(reports.admit((1, 7), start + Duration::from_secs(61)));
        assert_eq!(reports.take_suppressed(), 1);
        let later = start + Duration::from_secs(600);
        let logged = (0..100).filter(|i| reports.admit((3, *i), later)).count();
        assert_eq!(logged, MAX_LOGGED_PER_MINUTE as usize);
        assert_eq!(reports.take_suppressed(), 100 - MAX_LOGGED_PER_MINUTE as u64);
    }
}
