//! When a schedule is due: cron expressions (parsed by `cronexpr`) read as civil time in a time
//! zone (`jiff`, from the system tz database), with the daylight-saving rules of Vixie cron:
//!
//! - A cadence with a fixed hour ("30 2 * * *") fires once a day at that wall-clock time. On
//!   the night the clocks go forward, a time in the gap fires when the gap ends (02:30 → 03:00);
//!   on the night they go back, a repeated time fires at its first occurrence only.
//! - A cadence that runs every hour ("*/15 * * * *", "5 * * * *") follows real time: minutes
//!   that never happen (the gap) are not run, minutes that happen twice (the fold) run twice.
//!
//! Civil matching uses the trick of reading the crontab in UTC: a civil date-time written as a
//! UTC timestamp matches exactly when its fields do, and UTC has no transitions.

use jiff::civil::DateTime;
use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use jiff::{Timestamp, ToSpan};

/// Longest accepted cron expression.
pub const MAX_CRON_CHARS: usize = 120;
/// Longest accepted time-zone name.
pub const MAX_TIMEZONE_CHARS: usize = 64;
/// Occurrences counted when telling how many runs a downtime missed ("1000 or more").
pub const MAX_COUNTED_MISSES: usize = 1000;
/// Runs looked at for a cadence's shortest gap (more than a day of every-minute runs).
const GAP_PROBES: usize = 2000;
/// Zone transitions crossed while looking for the next due time (about 4 years of DST).
const MAX_TRANSITIONS: usize = 16;

const FIELD_NAMES: [&str; 5] = ["minute", "hour", "day of month", "month", "day of week"];

/// A parsed cron cadence.
#[derive(Clone, Debug)]
pub struct Cadence {
    text: String,
    /// The expression read in UTC: matches civil date-times.
    civil: cronexpr::Crontab,
    /// The hour field matches every hour: the cadence follows real time across DST changes.
    hourly: bool,
}

impl Cadence {
    /// Parses 5 cron fields. `strict`: the original manifest's rule (digits and `* / , -`
    /// only, no names or extensions), for app schedules. Errors name the field and why.
    pub fn parse(text: &str, strict: bool) -> Result<Self, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("a cron expression needs 5 fields (minute hour day month weekday)".into());
        }
        if text.chars().count() > MAX_CRON_CHARS {
            return Err(format!("a cron expression is at most {MAX_CRON_CHARS} characters"));
        }
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "{text:?} has {} field{}; a cron expression has 5 (minute hour day month weekday)",
                fields.len(),
                if fields.len() == 1 { "" } else { "s" }
            ));
        }
        for (i, field) in fields.iter().enumerate() {
            if strict && !field.bytes().all(|b| b.is_ascii_digit() || b"*/,-".contains(&b)) {
                return Err(format!(
                    "field {} ({}) {field:?}: only digits and * / , - are allowed here",
                    i + 1,
                    FIELD_NAMES[i]
                ));
            }
            if field.contains(['H', 'h']) || field.starts_with('@') {
                return Err(format!("field {} ({}) {field:?}: not a cron field", i + 1, FIELD_NAMES[i]));
            }
        }
        let normalized = fields.join(" ");
        let civil = match cronexpr::parse_crontab(&format!("{normalized} UTC")) {
            Ok(c) => c,
            Err(_) => return Err(locate(&fields)),
        };
        let hourly = every_hour(fields[1]);
        Ok(Self { text: normalized, civil, hourly })
    }

    /// The expression, normalised (single spaces).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The first due time strictly after `after` (unix ms) in `tz`; `None` when the cadence
    /// never matches again (e.g. February 30th).
    pub fn next_after(&self, after: i64, tz: &TimeZone) -> Option<i64> {
        let after = Timestamp::from_millisecond(after).ok()?;
        let next = if self.hourly { self.next_real(after, tz)? } else { self.next_wall(after, tz)? };
        Some(next.as_millisecond())
    }

    /// How many due times fall in `(from, to]` (at most [`MAX_COUNTED_MISSES`]).
    pub fn count_between(&self, from: i64, to: i64, tz: &TimeZone) -> usize {
        let mut n = 0;
        let mut at = from;
        while n < MAX_COUNTED_MISSES {
            match self.next_after(at, tz) {
                Some(next) if next <= to => {
                    n += 1;
                    at = next;
                }
                _ => break,
            }
        }
        n
    }

    /// The shortest time between two runs (ms) over the next [`GAP_PROBES`] runs after `from`,
    /// read as civil time (UTC: no clock changes stretch or squeeze it), stopping early at one
    /// below `floor`; `None` when it runs less than twice.
    pub fn shortest_gap(&self, from: i64, floor: i64) -> Option<i64> {
        let mut at = self.next_after(from, &TimeZone::UTC)?;
        let mut shortest: Option<i64> = None;
        for _ in 0..GAP_PROBES {
            let Some(next) = self.next_after(at, &TimeZone::UTC) else { break };
            let gap = next - at;
            shortest = Some(shortest.map_or(gap, |s| s.min(gap)));
            if gap < floor {
                break;
            }
            at = next;
        }
        shortest
    }

    /// The next civil minute matching, at or after `from` (`inclusive`) or strictly after it.
    fn civil_next(&self, from: DateTime, inclusive: bool) -> Option<DateTime> {
        let mut as_utc = Offset::UTC.to_timestamp(from).ok()?;
        if inclusive {
            as_utc = as_utc.checked_sub(1.second()).ok()?;
        }
        let found = self.civil.find_next(cronexpr::MakeTimestamp(as_utc)).ok()?;
        Some(found.datetime())
    }

    /// Fixed-hour cadences: each matching wall-clock time once; a time in a gap fires when the
    /// gap ends, a time in a fold at its first occurrence.
    fn next_wall(&self, after: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        let mut civil = tz.to_datetime(after);
        // Each step moves to a later civil minute; a match that resolves to a time already
        // past (the second half of a fold, a gap mapped back) is skipped. Bounded by the
        // crate's own 4-year horizon per step and a few steps around a transition.
        for _ in 0..64 {
            let candidate = self.civil_next(civil, false)?;
            let at = match tz.to_ambiguous_timestamp(candidate).offset() {
                AmbiguousOffset::Unambiguous { offset } => offset.to_timestamp(candidate).ok()?,
                AmbiguousOffset::Fold { before, .. } => before.to_timestamp(candidate).ok()?,
                AmbiguousOffset::Gap { after: later, .. } => {
                    // The clocks skipped this time: fire when the gap ends (the transition).
                    let shifted = later.to_timestamp(candidate).ok()?;
                    tz.following(shifted).next().map_or(shifted, |t| t.timestamp())
                }
            };
            if at > after {
                return Some(at);
            }
            civil = candidate;
        }
        None
    }

    /// Every-hour cadences: real time. Walks the zone's offset segments from `after`: within a
    /// segment civil time moves with real time, so the first civil match inside it is the
    /// answer; minutes a gap skips never match, minutes a fold repeats match twice.
    fn next_real(&self, after: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        let mut start = after;
        let mut inclusive = false;
        let mut transitions = tz.following(after);
        for _ in 0..MAX_TRANSITIONS {
            let offset = tz.to_offset(start);
            let end = transitions.next().map(|t| t.timestamp());
            let candidate = self.civil_next(offset.to_datetime(start), inclusive)?;
            let at = offset.to_timestamp(candidate).ok()?;
            match end {
                Some(end) if at >= end => {
                    start = end;
                    inclusive = true;
                }
                _ => return Some(at),
            }
        }
        None
    }
}

/// True when the hour field matches all 24 hours: the field alone ("0 <hours> * * *") matches
/// every hour of a day.
fn every_hour(hours: &str) -> bool {
    let Ok(probe) = cronexpr::parse_crontab(&format!("0 {hours} * * * UTC")) else { return false };
    // 2001-01-01T00:00Z, less a minute: the first 24 matches must be that day's 24 hours.
    let Ok(mut at) = Timestamp::from_second(978_307_200 - 60) else { return false };
    for hour in 0..24 {
        let Ok(next) = probe.find_next(cronexpr::MakeTimestamp(at)) else { return false };
        if next.day() != 1 || i32::from(next.hour()) != hour {
            return false;
        }
        at = next.timestamp();
    }
    true
}

/// Which field of a rejected expression is wrong, and why (each field is tried alone).
fn locate(fields: &[&str]) -> String {
    for (i, field) in fields.iter().enumerate() {
        let mut probe = ["*"; 5];
        probe[i] = field;
        if let Err(e) = cronexpr::parse_crontab(&format!("{} UTC", probe.join(" "))) {
            let why = e.to_string();
            let why = why.rsplit_once("^ ").map_or("not a valid value", |(_, w)| w).trim();
            return format!("field {} ({}) {field:?}: {why}", i + 1, FIELD_NAMES[i]);
        }
    }
    format!("{:?} is not a valid cron expression", fields.join(" "))
}

/// An IANA time-zone name checked against the system tz database.
pub fn zone(name: &str) -> Result<TimeZone, String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_TIMEZONE_CHARS {
        return Err(format!("a time zone is an IANA name of at most {MAX_TIMEZONE_CHARS} characters"));
    }
    TimeZone::get(name).map_err(|_| format!("{name:?} is not a known time zone (an IANA name such as Europe/Paris)"))
}

/// The server's own zone (`TZ`, else `/etc/localtime`, else UTC) and its name.
pub fn server_zone() -> (TimeZone, String) {
    let tz = TimeZone::try_system().unwrap_or(TimeZone::UTC);
    let name = tz.iana_name().map_or_else(|| "UTC".to_owned(), str::to_owned);
    (tz, name)
}

/// A zone by name, else the server's.
pub fn zone_or_server(name: Option<&str>) -> TimeZone {
    name.and_then(|n| TimeZone::get(n).ok()).unwrap_or_else(|| server_zone().0)
}

/// A time as ISO 8601 in UTC (`2025-01-01T07:30:00Z`), for the original's `next_run`.
pub fn iso_utc(ms: i64) -> Option<String> {
    Timestamp::from_millisecond(ms).ok().map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}

/// When a reminder is due: `in_` a friendly span ("2h", "90m", "1h 30m", "1 day") after `now`,
/// or `at` a time in `tz` — RFC 3339 (`2025-06-01T07:30:00+02:00`), a civil date-time
/// (`2025-06-01 07:30`, `2025-06-01T07:30`) or a time of day (`07:30`: its next occurrence).
pub fn parse_when(in_: Option<&str>, at: Option<&str>, now: i64, tz: &TimeZone) -> Result<i64, String> {
    let now_ts = Timestamp::from_millisecond(now).map_err(|e| e.to_string())?;
    match (in_.map(str::trim).filter(|s| !s.is_empty()), at.map(str::trim).filter(|s| !s.is_empty())) {
        (Some(_), Some(_)) => Err("give either `in` or `at`, not both".into()),
        (None, None) => Err("say when: `in` (such as 2h) or `at` (such as 07:30)".into()),
        (Some(span), None) => {
            let parsed: jiff::Span =
                span.parse().map_err(|_| format!("`in` {span:?} is not a duration (such as 2h, 90m or 1h 30m)"))?;
            let due = now_ts
                .to_zoned(tz.clone())
                .checked_add(parsed)
                .map_err(|_| format!("`in` {span:?} is out of range"))?
                .timestamp()
                .as_millisecond();
            if due <= now {
                return Err(format!("`in` {span:?} is not in the future"));
            }
            Ok(due)
        }
        (None, Some(at)) => {
            let due = if let Ok(ts) = at.parse::<Timestamp>() {
                ts
            } else if let Ok(dt) = at.parse::<DateTime>() {
                tz.to_ambiguous_timestamp(dt).compatible().map_err(|e| e.to_string())?
            } else if let Ok(time) = at.parse::<jiff::civil::Time>() {
                let today = tz.to_datetime(now_ts).date().to_datetime(time);
                let mut ts = tz.to_ambiguous_timestamp(today).compatible().map_err(|e| e.to_string())?;
                if ts <= now_ts {
                    let tomorrow = today.checked_add(1.day()).map_err(|e| e.to_string())?;
                    ts = tz.to_ambiguous_timestamp(tomorrow).compatible().map_err(|e| e.to_string())?;
                }
                ts
            } else {
                return Err(format!(
                    "`at` {at:?} is not a time (such as 07:30, 2025-06-01 07:30 or 2025-06-01T07:30:00+02:00)"
                ));
            };
            let due = due.as_millisecond();
            if due <= now {
                return Err(format!("`at` {at:?} is in the past"));
            }
            Ok(due)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// US Eastern without the tz database: clocks forward 2024-03-10 02:00, back 2024-11-03 02:00.
    fn eastern() -> TimeZone {
        TimeZone::posix("EST5EDT,M3.2.0,M11.1.0").expect("posix tz")
    }

    fn ms(s: &str) -> i64 {
        s.parse::<Timestamp>().expect("timestamp").as_millisecond()
    }

    fn iso(ms: i64, tz: &TimeZone) -> String {
        Timestamp::from_millisecond(ms).expect("ts").to_zoned(tz.clone()).strftime("%Y-%m-%d %H:%M %z").to_string()
    }

    fn run(cron: &str, from: &str, n: usize, tz: &TimeZone) -> Vec<String> {
        let c = Cadence::parse(cron, false).expect("cron");
        let mut at = ms(from);
        (0..n)
            .map(|_| {
                at = c.next_after(at, tz).expect("next");
                iso(at, tz)
            })
            .collect()
    }

    #[test]
    fn next_due_times_in_a_zone() {
        let tz = eastern();
        assert_eq!(
            run("30 7 * * 1-5", "2024-06-07T12:00:00Z", 3, &tz),
            ["2024-06-10 07:30 -0400", "2024-06-11 07:30 -0400", "2024-06-12 07:30 -0400"],
            "weekdays at 07:30, Friday noon → Monday"
        );
        assert_eq!(
            run("*/20 * * * *", "2024-06-07T12:05:00Z", 2, &TimeZone::UTC),
            ["2024-06-07 12:20 +0000", "2024-06-07 12:40 +0000"]
        );
        // Exactly on a due time: the next one, never the same.
        assert_eq!(run("0 * * * *", "2024-06-07T12:00:00Z", 1, &TimeZone::UTC), ["2024-06-07 13:00 +0000"]);
        assert!(Cadence::parse("0 0 30 2 *", false).expect("parses").next_after(0, &TimeZone::UTC).is_none());
    }

    #[test]
    fn clocks_going_forward_fire_a_skipped_time_once_when_the_gap_ends() {
        let tz = eastern();
        // 02:30 does not exist on 2024-03-10: it fires at 03:00 EDT, then 02:30 the next day.
        assert_eq!(
            run("30 2 * * *", "2024-03-09T12:00:00Z", 3, &tz),
            ["2024-03-10 03:00 -0400", "2024-03-11 02:30 -0400", "2024-03-12 02:30 -0400"]
        );
        // Every quarter hour of the gap maps to 03:00: one run, not four.
        assert_eq!(
            run("*/15 2 * * *", "2024-03-10T06:40:00Z", 3, &tz),
            ["2024-03-10 03:00 -0400", "2024-03-11 02:00 -0400", "2024-03-11 02:15 -0400"]
        );
        // Real-time cadences skip the minutes that do not exist.
        assert_eq!(
            run("*/30 * * * *", "2024-03-10T06:15:00Z", 3, &tz),
            ["2024-03-10 01:30 -0500", "2024-03-10 03:00 -0400", "2024-03-10 03:30 -0400"]
        );
    }

    #[test]
    fn clocks_going_back_fire_a_repeated_time_once_and_hourly_cadences_keep_real_time() {
        let tz = eastern();
        // 01:30 happens twice on 2024-11-03: once (the first), then the next day.
        assert_eq!(
            run("30 1 * * *", "2024-11-03T04:00:00Z", 2, &tz),
            ["2024-11-03 01:30 -0400", "2024-11-04 01:30 -0500"]
        );
        // Asked from inside the second 01:xx, the first 01:30 is past: the next day.
        assert_eq!(run("30 1 * * *", "2024-11-03T06:10:00Z", 1, &tz), ["2024-11-04 01:30 -0500"]);
        // Every 30 minutes runs through both 01:xx hours: real time.
        assert_eq!(
            run("*/30 * * * *", "2024-11-03T05:10:00Z", 5, &tz),
            [
                "2024-11-03 01:30 -0400",
                "2024-11-03 01:00 -0500",
                "2024-11-03 01:30 -0500",
                "2024-11-03 02:00 -0500",
                "2024-11-03 02:30 -0500"
            ]
        );
    }

    #[test]
    fn missed_runs_are_counted_not_replayed() {
        let c = Cadence::parse("0 * * * *", false).expect("cron");
        let tz = TimeZone::UTC;
        assert_eq!(c.count_between(ms("2024-06-07T09:30:00Z"), ms("2024-06-07T12:30:00Z"), &tz), 3);
        let minutely = Cadence::parse("* * * * *", false).expect("cron");
        assert_eq!(minutely.count_between(0, 30 * 86_400_000, &tz), MAX_COUNTED_MISSES);
    }

    #[test]
    fn bad_expressions_are_located() {
        let err = Cadence::parse("0 25 * * *", false).expect_err("hour");
        assert!(err.contains("field 2 (hour) \"25\"") && err.contains("0..=23"), "{err}");
        let err = Cadence::parse("0 7 * *", false).expect_err("fields");
        assert!(err.contains("has 4 fields"), "{err}");
        let err = Cadence::parse("0 7 * * MON", true).expect_err("strict");
        assert!(err.contains("field 5 (day of week)") && err.contains("only digits"), "{err}");
        assert!(Cadence::parse("0 7 * * MON-FRI", false).is_ok());
        let err = Cadence::parse("*/0 * * * *", false).expect_err("step");
        assert!(err.contains("field 1 (minute)") && err.contains("step"), "{err}");
        assert!(Cadence::parse("@daily", false).is_err());
        assert_eq!(Cadence::parse("  0   7 * *   1-5 ", true).expect("ok").as_str(), "0 7 * * 1-5");
        assert!(zone("Nowhere/Zone").expect_err("zone").contains("not a known time zone"));
    }

    #[test]
    fn the_shortest_gap_is_found_even_where_it_is_rare() {
        let gap = |cron: &str| Cadence::parse(cron, false).expect(cron).shortest_gap(ms("2025-01-15T10:00:00Z"), 0);
        const MIN: i64 = 60_000;
        assert_eq!(gap("* * * * *"), Some(MIN));
        assert_eq!(gap("*/15 * * * *"), Some(15 * MIN));
        assert_eq!(gap("0 9 * * 1-5"), Some(24 * 60 * MIN), "weekdays at 9: a day apart at most often");
        assert_eq!(gap("0,59 0,23 * * *"), Some(MIN), "23:59 then 00:00");
        assert_eq!(gap("* * 1 1 *"), Some(MIN), "every minute, but only on New Year's Day");
        assert_eq!(gap("0 0 29 2 *"), Some(ms("2032-02-29T00:00:00Z") - ms("2028-02-29T00:00:00Z")));
        assert_eq!(gap("0 0 30 2 *"), None, "never");
    }

    #[test]
    fn hourly_detection() {
        for (cron, hourly) in [
            ("*/15 * * * *", true),
            ("5 * * * 1", true),
            ("0 0-23 * * *", true),
            ("0 7 * * *", false),
            ("0 */2 * * *", false),
        ] {
            assert_eq!(Cadence::parse(cron, false).expect("cron").hourly, hourly, "{cron}");
        }
    }

    #[test]
    fn reminder_times() {
        let tz = eastern();
        let now = ms("2024-06-07T12:00:00Z"); // 08:00 EDT
        assert_eq!(parse_when(Some("2h"), None, now, &tz), Ok(now + 2 * 3_600_000));
        assert_eq!(parse_when(Some("1h 30m"), None, now, &tz), Ok(now + 90 * 60_000));
        assert_eq!(iso(parse_when(None, Some("07:30"), now, &tz).expect("tomorrow"), &tz), "2024-06-08 07:30 -0400");
        assert_eq!(iso(parse_when(None, Some("09:15"), now, &tz).expect("today"), &tz), "2024-06-07 09:15 -0400");
        assert_eq!(
            iso(parse_when(None, Some("2024-06-09 18:00"), now, &tz).expect("civil"), &tz),
            "2024-06-09 18:00 -0400"
        );
        assert!(parse_when(None, Some("2020-01-01T00:00:00Z"), now, &tz).expect_err("past").contains("past"));
        assert!(parse_when(Some("soon"), None, now, &tz).expect_err("span").contains("not a duration"));
        assert!(parse_when(None, None, now, &tz).is_err());
    }
}
