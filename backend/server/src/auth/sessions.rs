//! Signed-in devices' sessions, in memory: every owner token names one (`sid`), and a token
//! whose session is gone is refused at once. The set is read from `owner_devices` at start-up
//! and after every change to it (sign-in, revoke, sign out everywhere), never per request; a
//! request only stamps its session's last-seen time (an atomic store at most once a minute).
//! Event streams a session opened end when it does ([`Sessions::ended`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};

use tokio_util::sync::CancellationToken;

use crate::error::Result;
use crate::locks::UnpoisonedRw;

/// The session that stands for every token issued before sessions existed (migration 0018).
pub const LEGACY_SESSION: &str = "legacy";
/// Last-seen times are stamped at most this often per session.
const SEEN_RESOLUTION_MS: i64 = 60_000;

/// The live sessions and when each was last seen, and the borrowed ones ([`Sessions::borrow`]).
#[derive(Debug, Default)]
pub struct Sessions(RwLock<HashMap<String, Arc<Session>>>, Arc<RwLock<HashMap<String, Arc<Session>>>>);

/// A session that exists only in memory while it is held (the screenshot browser's): never
/// stored, never listed among devices, gone from [`Sessions::check`] when dropped.
#[derive(Debug)]
pub struct Borrowed {
    sid: String,
    set: Arc<RwLock<HashMap<String, Arc<Session>>>>,
}

impl Borrowed {
    /// Its id, for the token's `sid`.
    pub fn sid(&self) -> &str {
        &self.sid
    }
}

impl Drop for Borrowed {
    fn drop(&mut self) {
        if let Some(session) = self.set.write_locked().remove(&self.sid) {
            session.ended.cancel();
        }
    }
}

/// One live session.
#[derive(Debug, Default)]
struct Session {
    /// Unix milliseconds.
    seen: AtomicI64,
    /// Cancelled when the session ends (its open streams end with it).
    ended: CancellationToken,
}

impl Sessions {
    /// Replaces the set with the sessions stored now (keeping last-seen times already known).
    pub async fn reload<'e>(&self, db: impl sqlx::SqliteExecutor<'e>) -> Result<()> {
        let rows = crate::db::owner::sessions(db).await?;
        let mut map = self.0.write_locked();
        let mut next = HashMap::with_capacity(rows.len());
        for (sid, last_used) in rows {
            let session = map.remove(&sid).unwrap_or_default();
            session.seen.fetch_max(last_used, Ordering::Relaxed);
            next.insert(sid, session);
        }
        // What is left was signed out.
        for gone in map.values() {
            gone.ended.cancel();
        }
        *map = next;
        Ok(())
    }

    /// A session that lives in memory while the returned guard is held. Sign-out everywhere
    /// also ends it: owner tokens carry the owner's epoch.
    pub fn borrow(&self) -> Borrowed {
        let sid = format!("borrowed-{}", new_session_id());
        self.1.write_locked().insert(sid.clone(), Arc::default());
        Borrowed { sid, set: Arc::clone(&self.1) }
    }

    /// True when `sid` is live (and stamps it seen now).
    pub fn check(&self, sid: &str) -> bool {
        if self.1.read_locked().contains_key(sid) {
            return true;
        }
        let map = self.0.read_locked();
        let Some(session) = map.get(sid) else { return false };
        let now = crate::db::now_ms();
        if now - session.seen.load(Ordering::Relaxed) >= SEEN_RESOLUTION_MS {
            session.seen.store(now, Ordering::Relaxed);
        }
        true
    }

    /// Forgets `sid` at once (a revoked device).
    pub fn remove(&self, sid: &str) {
        if let Some(session) = self.0.write_locked().remove(sid) {
            session.ended.cancel();
        }
    }

    /// What a stream opened with `claims` waits on to end with its session: the owner's
    /// session's token (already cancelled when it is gone); never for other scopes.
    pub fn ended(&self, claims: &super::jwt::Claims) -> CancellationToken {
        if claims.scope != super::jwt::Scope::Owner {
            return CancellationToken::new();
        }
        let sid = claims.sid.as_deref().unwrap_or(LEGACY_SESSION);
        if let Some(session) = self.1.read_locked().get(sid) {
            return session.ended.clone();
        }
        match self.0.read_locked().get(sid) {
            Some(session) => session.ended.clone(),
            None => {
                let gone = CancellationToken::new();
                gone.cancel();
                gone
            }
        }
    }

    /// When `sid` was last seen, as far as this process knows.
    pub fn last_seen(&self, sid: &str) -> Option<i64> {
        self.0.read_locked().get(sid).map(|s| s.seen.load(Ordering::Relaxed))
    }

    /// Every session with its last-seen time (to store them).
    pub fn seen(&self) -> Vec<(String, i64)> {
        let map = self.0.read_locked();
        map.iter().map(|(sid, s)| (sid.clone(), s.seen.load(Ordering::Relaxed))).collect()
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
        sessions.0.write_locked().insert("a".into(), Arc::default());
        sessions.0.write_locked().insert("b".into(), Arc::default());
        let mut claims = super::super::jwt::Claims::new("owner", super::super::jwt::Scope::Owner, 0, 60);
        claims.sid = Some("a".into());
        let ended = sessions.ended(&claims);
        assert!(sessions.check("a"));
        assert!(sessions.last_seen("a").expect("seen") > 0);
        assert!(!sessions.check("zzz"));
        assert!(!ended.is_cancelled());
        sessions.remove("a");
        assert!(ended.is_cancelled(), "its streams end");
        assert!(sessions.ended(&claims).is_cancelled(), "a stream opened later ends at once");
        assert!(!sessions.check("a"));
        assert!(sessions.check("b"));
        assert_eq!(sessions.seen().len(), 1);
        assert_ne!(new_session_id(), new_session_id());
    }

    #[test]
    fn a_borrowed_session_lives_while_held_and_is_never_stored() {
        let sessions = Sessions::default();
        let borrowed = sessions.borrow();
        let sid = borrowed.sid().to_owned();
        let mut claims = super::super::jwt::Claims::new("owner", super::super::jwt::Scope::Owner, 0, 60);
        claims.sid = Some(sid.clone());
        let ended = sessions.ended(&claims);
        assert!(sessions.check(&sid));
        assert!(sessions.seen().is_empty(), "not among the stored devices");
        drop(borrowed);
        assert!(!sessions.check(&sid), "refused once given back");
        assert!(ended.is_cancelled(), "its streams end");
    }
}
