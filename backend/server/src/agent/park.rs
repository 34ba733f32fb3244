//! When a parked chat continues: the reset a usage limit gave, within bounds, and the pause
//! its turn records; the handle that wakes the continuation task (`resume.rs`).

use std::time::Duration;

use tokio::sync::Notify;

use crate::protocol::{Pause, PauseKind};

/// A limit's reset plus this much, so the provider's clock has passed it too.
pub const RESET_SLACK: Duration = Duration::from_secs(3);
/// The soonest a parked chat continues.
pub const MIN_PARK: Duration = Duration::from_secs(5);
/// The latest a parked chat continues (a reset further out is not believed).
pub const MAX_PARK: Duration = Duration::from_secs(7 * 24 * 3600);
/// When a limit does not say when it resets.
pub const UNKNOWN_RESET_PARK: Duration = Duration::from_secs(30 * 60);

/// Wakes the continuation task when a park is set or moved.
#[derive(Debug, Default)]
pub struct Resumer {
    pub(super) poke: Notify,
}

impl Resumer {
    /// A park was set: look again at the earliest one.
    pub fn poke(&self) {
        self.poke.notify_one();
    }
}

/// When a chat that hit its limit at `now` continues (unix ms): the reset plus
/// [`RESET_SLACK`], kept within [`MIN_PARK`]..[`MAX_PARK`]; [`UNKNOWN_RESET_PARK`] when the
/// provider did not say.
pub fn park_until(resets_at: Option<i64>, now: i64) -> i64 {
    let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    match resets_at {
        Some(at) => (at + ms(RESET_SLACK)).clamp(now + ms(MIN_PARK), now + ms(MAX_PARK)),
        None => now + ms(UNKNOWN_RESET_PARK),
    }
}

/// The pause a turn that ended on a usage limit records: continuing at the reset unless the
/// chat's switch is off.
pub fn limit_pause(resets_at: Option<i64>, auto_resume: bool, now: i64) -> Pause {
    Pause { kind: PauseKind::UsageLimit, resumes_at: auto_resume.then(|| park_until(resets_at, now)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_parks_until_its_reset_within_bounds() {
        let now = 1_000_000;
        assert_eq!(park_until(Some(now + 60_000), now), now + 63_000, "the reset plus the slack");
        assert_eq!(park_until(Some(now - 60_000), now), now + 5_000, "a reset in the past: soon, not at once");
        assert_eq!(park_until(Some(now + 30 * 86_400_000), now), now + 7 * 86_400_000);
        assert_eq!(park_until(None, now), now + 30 * 60_000);
        assert_eq!(limit_pause(Some(now), false, now).resumes_at, None, "the chat's switch is off");
    }
}
