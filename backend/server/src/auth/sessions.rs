//! Signed-in devices' sessions, in memory: every owner token names one (`sid`), and a token
//! whose session is gone is refused at once. The set is read from `owner_devices` at start-up
//! and after every change to it (sign-in, revoke, sign out everywhere), never per request; a
//! request only stamps its session's last-seen time (an atomic store at most once a minute).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};

use sqlx::SqlitePool;

use crate::error::Result;

/// The session that stands for every token issued before sessions existed (migration 0018).
pub const LEGACY_SESSION: &str = "legacy";
/// Last-seen times are stamped at most this often per session.
const SEEN_RESOLUTION_MS: i64 = 60_000;

/// The live sessions and when each was last seen.
#[derive(Debug, Default)]
pub struct Sessions(RwLock<HashMap<String, Arc<AtomicI64>>>);

impl Sessions {
    /// Replaces the set with the sessions stored now (keeping last-seen times already known).
    pub async fn reload(&self, pool: &SqlitePool) -> Result<()> {
        let rows = crate::db::owner::sessions(pool).await?;
        let mut map = self.0.write().unwrap_or_else(|p| p.into_inner());
        let mut next = HashMap::with_capacity(rows.len());
        for (sid, last_used) in rows {
            let seen = map.remove(&sid).unwrap_or_default();
            seen.fetch_max(last_used, Ordering::Relaxed);
            next.insert(sid, seen);
        }
        *map = next;
        Ok(())
    }

    /// True when `sid` is live (and stamps it seen now).
    pub fn check(&self, sid: &str) -> bool {
        let map = self.0.read().unwrap_or_else(|p| p.into_inner());
        let Some(seen) = map.get(sid) else { return false };
        let now = crate::db::now_ms();
        if now - seen.load(Ordering::Relaxed) >= SEEN_RESOLUTION_MS {
            seen.store(now, Ordering::Relaxed);
        }
        true
    }

    /// Forgets `sid` at once (a revoked device).
    pub fn remove(&self, sid: &str) {
        self.0.write().unwrap_or_else(|p| p.into_inner()).remove(sid);
    }

    /// When `sid` was last seen, as far as this process knows.
    pub fn last_seen(&self, sid: &str) -> Option<i64> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).get(sid).map(|s| s.load(Ordering::Relaxed))
    }

    /// Every session with its last-seen time (to store them).
    pub fn seen(&self) -> Vec<(String, i64)> {
        let map = self.0.read().unwrap_or_else(|p| p.into_inner());
        map.iter().map(|(sid, seen)| (sid.clone(), seen.load(Ordering::Relaxed))).collect()
    }
}

/// A new session id: 128 random bits, URL-safe.
pub fn new_session_id() -> String {
    use base64::Engine;
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removed_session_is_refused_and_others_are_stamped_seen() {
        let sessions = Sessions::default();
        sessions.0.write().expect("lock").insert("a".into(), Arc::new(AtomicI64::new(0)));
        sessions.0.write().expect("lock").insert("b".into(), Arc::new(AtomicI64::new(0)));
        assert!(sessions.check("a"));
        assert!(sessions.last_seen("a").expect("seen") > 0);
        assert!(!sessions.check("zzz"));
        sessions.remove("a");
        assert!(!sessions.check("a"));
        assert!(sessions.check("b"));
        assert_eq!(sessions.seen().len(), 1);
        assert_ne!(new_session_id(), new_session_id());
    }
}
