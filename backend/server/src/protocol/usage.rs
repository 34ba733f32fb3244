//! What a turn cost and how close the provider's plan is to its limits: the usage stored with
//! each assistant reply, one window of a plan's allowance, and a pause (a turn parked until a
//! limit resets, or cut by a restart).

use serde::{Deserialize, Serialize};

/// What one turn used, stored with its last assistant message.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct RunUsage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<i64>,
    /// What the provider said the turn cost (Claude Code reports it; Codex does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl RunUsage {
    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.input_tokens.is_none()
            && self.output_tokens.is_none()
            && self.cache_read_tokens.is_none()
            && self.cache_write_tokens.is_none()
            && self.cost_usd.is_none()
    }
}

/// One window of a provider plan's allowance, as its CLI last reported it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PlanWindow {
    /// `five_hour`, `seven_day`, … (Claude) or `primary`, `secondary` (Codex).
    pub id: String,
    /// "5-hour", "Weekly", …
    pub label: String,
    /// Share of the window used, 0–100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_percent: Option<f64>,
    /// When the window resets (unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<i64>,
    /// `allowed`, `allowed_warning` or `rejected` where the provider says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// Why a turn is paused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum PauseKind {
    /// The plan's usage limit was reached.
    UsageLimit,
    /// The server restarted during the turn.
    Restart,
}

/// A paused turn: what the error block of a parked chat carries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Pause {
    pub kind: PauseKind,
    /// When the chat continues by itself (unix ms); `None`: it waits for the owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumes_at: Option<i64>,
}
