//! Pairing a new device from a signed-in one: the signed-in device asks for a short code
//! (shown with a QR of the pairing address), the new device enters it (or opens the address)
//! and gets its own session, without typing the password. One code at a time (a new one
//! replaces it), kept only as its SHA-256 in memory, single use, five minutes, dropped after
//! ten wrong tries; attempts count against the sign-in limits of their address.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::locks::Unpoisoned;
use rand::Rng;
use sha2::{Digest, Sha256};

/// A code lives this long.
pub const PAIRING_TTL: Duration = Duration::from_secs(5 * 60);
/// Wrong tries a code survives.
const MAX_WRONG_TRIES: u32 = 10;
/// Letters and digits that cannot be mistaken for each other (no I, O, 0, 1).
const ALPHABET: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
/// Characters in a code (40 bits).
const CODE_CHARS: usize = 8;

/// The pending code and the last pairing, for the device that asked.
#[derive(Debug, Default)]
pub struct Pairing(Mutex<State>);

#[derive(Debug, Default)]
struct State {
    pending: Option<Code>,
    /// The last code used: (the session that made it, the new device's label).
    paired: Option<(String, String)>,
}

#[derive(Debug)]
struct Code {
    digest: [u8; 32],
    expires: Instant,
    expires_at_ms: i64,
    creator: String,
    wrong: u32,
}

/// Where the asking device's code stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    None,
    Pending { expires_at_ms: i64 },
    Paired { label: String },
}

fn digest(code: &str) -> [u8; 32] {
    Sha256::digest(normalize(code).as_bytes()).into()
}

/// The code as typed: case, spaces and dashes do not matter.
pub fn normalize(code: &str) -> String {
    code.chars().filter(|c| c.is_ascii_alphanumeric()).map(|c| c.to_ascii_uppercase()).take(32).collect()
}

impl Pairing {
    /// A new code for the session `creator` (replacing any pending one): `(code, expires_at_ms)`.
    pub fn create(&self, creator: &str) -> (String, i64) {
        let mut rng = rand::thread_rng();
        let raw: String = (0..CODE_CHARS).map(|_| char::from(ALPHABET[rng.gen_range(0..ALPHABET.len())])).collect();
        let code = format!("{}-{}", &raw[..4], &raw[4..]);
        let expires_at_ms = crate::db::now_ms() + i64::try_from(PAIRING_TTL.as_millis()).unwrap_or(i64::MAX);
        let mut state = self.0.locked();
        state.pending = Some(Code {
            digest: digest(&code),
            expires: Instant::now() + PAIRING_TTL,
            expires_at_ms,
            creator: creator.to_owned(),
            wrong: 0,
        });
        state.paired = None;
        (code, expires_at_ms)
    }

    /// Uses `code` for a device labelled `label`: true once, for the pending, unexpired code.
    pub fn redeem(&self, code: &str, label: &str) -> bool {
        let mut state = self.0.locked();
        let Some(pending) = state.pending.as_mut() else { return false };
        if pending.expires <= Instant::now() {
            state.pending = None;
            return false;
        }
        let offered = digest(code);
        let same = offered.iter().zip(pending.digest.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0;
        if !same {
            pending.wrong += 1;
            if pending.wrong >= MAX_WRONG_TRIES {
                state.pending = None;
            }
            return false;
        }
        let creator = pending.creator.clone();
        state.pending = None;
        state.paired = Some((creator, label.to_owned()));
        true
    }

    /// The code `creator` made, as it stands.
    pub fn status(&self, creator: &str) -> Status {
        let mut state = self.0.locked();
        if let Some((by, label)) = &state.paired
            && by == creator
        {
            return Status::Paired { label: label.clone() };
        }
        match &state.pending {
            Some(code) if code.expires <= Instant::now() => {
                state.pending = None;
                Status::None
            }
            Some(code) if code.creator == creator => Status::Pending { expires_at_ms: code.expires_at_ms },
            _ => Status::None,
        }
    }

    /// Withdraws the pending code of `creator`.
    pub fn cancel(&self, creator: &str) {
        let mut state = self.0.locked();
        if state.pending.as_ref().is_some_and(|c| c.creator == creator) {
            state.pending = None;
        }
    }

    /// Forgets everything (sign out everywhere).
    pub fn clear(&self) {
        *self.0.locked() = State::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_works_once_whatever_its_case_and_dashes() {
        let pairing = Pairing::default();
        let (code, _) = pairing.create("s1");
        assert_eq!(code.len(), 9);
        assert!(matches!(pairing.status("s1"), Status::Pending { .. }));
        assert_eq!(pairing.status("s2"), Status::None);
        assert!(!pairing.redeem("AAAA-AAAA", "phone"));
        assert!(pairing.redeem(&code.to_lowercase().replace('-', " "), "phone"));
        assert!(!pairing.redeem(&code, "again"), "single use");
        assert_eq!(pairing.status("s1"), Status::Paired { label: "phone".into() });
    }

    #[test]
    fn ten_wrong_tries_drop_the_code_and_a_new_code_replaces_the_old() {
        let pairing = Pairing::default();
        let (first, _) = pairing.create("s1");
        let (second, _) = pairing.create("s1");
        assert!(!pairing.redeem(&first, "x") || first == second);
        for _ in 0..MAX_WRONG_TRIES {
            pairing.redeem("ZZZZ-ZZZZ", "x");
        }
        assert!(!pairing.redeem(&second, "x"), "dropped after ten wrong tries");
        assert_eq!(pairing.status("s1"), Status::None);
    }

    #[test]
    fn an_expired_code_is_refused() {
        let pairing = Pairing::default();
        let (code, _) = pairing.create("s1");
        pairing.0.locked().pending.as_mut().expect("code").expires = Instant::now();
        assert!(!pairing.redeem(&code, "x"));
        assert_eq!(pairing.status("s1"), Status::None);
    }
}
