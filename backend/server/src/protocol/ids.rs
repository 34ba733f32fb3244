//! The ids the protocol passes around, as newtypes: a run id can no longer be handed where a
//! chat id belongs. Each derefs to `&str` for SQL binds and logs; on the wire each is a string.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Serialize};

/// Longest accepted chat id, in bytes.
pub const MAX_CHAT_ID_BYTES: usize = 64;
/// Longest accepted client message id, in characters.
pub const MAX_CID_CHARS: usize = 128;

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[cfg_attr(test, derive(ts_rs::TS))]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        /// Unchecked: for ids the server minted or stored itself. Client input goes
        /// through the type's `parse`, where it has one.
        impl From<String> for $name {
            fn from(id: String) -> Self {
                Self(id)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self(id.to_owned())
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> Self {
                id.0
            }
        }

        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

string_id!(
    /// A chat: client-minted (a UUID or similar), 1–64 letters, digits, `-` or `_`.
    ChatId
);
string_id!(
    /// One run (turn) of a chat: `rt-` + 32 hex.
    RunId
);
string_id!(
    /// A client message id: makes a send idempotent (1–128 printable characters).
    Cid
);
string_id!(
    /// A question or approval card: `q-` + 32 hex.
    QuestionId
);

impl ChatId {
    /// A client-supplied chat id, if it is well-formed (URL-safe, short).
    pub fn parse(id: &str) -> Option<Self> {
        let ok = (1..=MAX_CHAT_ID_BYTES).contains(&id.len())
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        ok.then(|| Self(id.to_owned()))
    }

    /// A fresh random chat id (a UUID).
    pub fn random() -> Self {
        Self(uuid::Uuid::new_v4().to_string())
    }
}

impl RunId {
    /// A fresh run id.
    pub fn random() -> Self {
        Self(format!("rt-{}", uuid::Uuid::new_v4().simple()))
    }
}

impl Cid {
    /// A client-supplied message id, if it is 1–128 characters without control characters.
    pub fn parse(cid: &str) -> Option<Self> {
        let ok = !cid.is_empty() && cid.chars().count() <= MAX_CID_CHARS && !cid.chars().any(char::is_control);
        ok.then(|| Self(cid.to_owned()))
    }

    /// An id for a message the client sent without one.
    pub fn server() -> Self {
        Self(format!("server-{}", uuid::Uuid::new_v4().simple()))
    }
}

impl QuestionId {
    /// A fresh question id.
    pub fn random() -> Self {
        Self(format!("q-{}", uuid::Uuid::new_v4().simple()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_ids_are_checked_and_server_ids_are_prefixed() {
        assert!(ChatId::parse("a-b_C9").is_some());
        for bad in ["", "../etc", "a b", &"x".repeat(65)] {
            assert!(ChatId::parse(bad).is_none(), "{bad:?}");
        }
        assert!(Cid::parse("c1").is_some() && Cid::parse(&"é".repeat(128)).is_some());
        assert!(Cid::parse("").is_none() && Cid::parse("a\nb").is_none() && Cid::parse(&"x".repeat(129)).is_none());
        assert!(RunId::random().starts_with("rt-") && QuestionId::random().starts_with("q-"));
        assert_eq!(serde_json::to_string(&RunId::from("rt-1")).expect("json"), "\"rt-1\"");
    }
}
