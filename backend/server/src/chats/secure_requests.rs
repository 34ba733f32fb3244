//! The agent's open secure-input requests (`secure_input.rs` serves them): kept in the shared
//! state, so this file imports nothing of the routes.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::watch;

use crate::locks::Unpoisoned;

/// Where a request stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    Stored,
    Declined,
    /// The turn that asked ended before the owner answered.
    Expired,
}

/// Where a request's value goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    App(i64),
    Connector(i64),
}

/// One open request.
pub(crate) struct Request {
    pub(crate) chat_id: String,
    /// The run that asked: the request lives only as long as it runs.
    pub(crate) run_id: String,
    pub(crate) target: Target,
    pub(crate) name: String,
    pub(crate) status: watch::Sender<Status>,
}

impl Target {
    pub(crate) fn json(self) -> (Value, Value) {
        match self {
            Target::App(id) => (id.into(), Value::Null),
            Target::Connector(id) => (Value::Null, id.into()),
        }
    }
}

/// The open requests (in the shared state).
#[derive(Default)]
pub struct SecureInputs(pub(crate) Mutex<HashMap<String, Request>>);

impl std::fmt::Debug for SecureInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecureInputs").field("open", &self.0.locked().len()).finish()
    }
}
