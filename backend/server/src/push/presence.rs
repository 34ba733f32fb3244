//! Which chat each device has open and visible. The PWA reports it when the chat on screen
//! changes, when the page is hidden or shown, and every [`PRESENCE_REFRESH`] while visible; a
//! report older than [`PRESENCE_TTL`] no longer counts (a phone that died mid-chat).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::locks::Unpoisoned;
use tokio::time::Instant;

/// How often a visible page repeats its report (the PWA uses this value).
pub const PRESENCE_REFRESH: Duration = Duration::from_secs(30);
/// A report counts for this long.
pub const PRESENCE_TTL: Duration = Duration::from_secs(75);
/// Devices tracked at once; a new one beyond this replaces the stalest.
pub const MAX_PRESENCE_DEVICES: usize = 64;

/// The open, visible chat of each device.
#[derive(Debug, Default)]
pub struct Presence(Mutex<HashMap<String, (String, Instant)>>);

impl Presence {
    /// Device `device` shows `chat` (visible), or nothing (`None`: hidden, closed, elsewhere).
    pub fn report(&self, device: &str, chat: Option<&str>) {
        let now = Instant::now();
        let mut devices = self.0.locked();
        let Some(chat) = chat else {
            devices.remove(device);
            return;
        };
        if !devices.contains_key(device) && devices.len() >= MAX_PRESENCE_DEVICES {
            devices.retain(|_, (_, at)| now.duration_since(*at) < PRESENCE_TTL);
            if devices.len() >= MAX_PRESENCE_DEVICES
                && let Some(stalest) = devices.iter().min_by_key(|(_, (_, at))| *at).map(|(k, _)| k.clone())
            {
                devices.remove(&stalest);
            }
        }
        devices.insert(device.to_owned(), (chat.to_owned(), now));
    }

    /// Whether some device shows `chat` right now.
    pub fn watching(&self, chat: &str) -> bool {
        let now = Instant::now();
        self.0.locked().values().any(|(c, at)| c == chat && now.duration_since(*at) < PRESENCE_TTL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_report_counts_until_hidden_or_stale() {
        let presence = Presence::default();
        presence.report("phone", Some("c1"));
        assert!(presence.watching("c1"));
        assert!(!presence.watching("c2"));
        presence.report("phone", None);
        assert!(!presence.watching("c1"), "hidden");
        presence.report("phone", Some("c1"));
        tokio::time::advance(PRESENCE_TTL).await;
        assert!(!presence.watching("c1"), "stale");
    }

    #[tokio::test(start_paused = true)]
    async fn the_table_is_bounded() {
        let presence = Presence::default();
        for i in 0..=MAX_PRESENCE_DEVICES {
            presence.report(&format!("d{i}"), Some("c"));
            tokio::time::advance(Duration::from_millis(1)).await;
        }
        assert_eq!(presence.0.locked().len(), MAX_PRESENCE_DEVICES);
        assert!(!presence.0.locked().contains_key("d0"), "the stalest went");
    }
}
