//! Models and effort: what each provider offers (the CLI's own list where it has one, else a
//! maintained list: `claude.rs`, `codex.rs`), a chat's pick, the owner's default pick per
//! provider, and what a turn runs with.

use serde::{Deserialize, Serialize};

use super::ProviderKind;
use crate::error::{Error, Result};

/// Longest accepted model id, in bytes.
pub const MAX_MODEL_BYTES: usize = 100;
/// Longest accepted effort level, in bytes.
pub const MAX_EFFORT_BYTES: usize = 16;

/// One model a provider offers.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ModelInfo {
    pub id: String,
    pub label: String,
    pub provider: ProviderKind,
    /// False when the CLI could not be asked and the entry comes from the maintained list.
    pub available: bool,
    /// The effort (reasoning) levels the model takes, lowest first; empty: none.
    pub effort_levels: Vec<String>,
    pub default_effort: Option<String>,
    /// The model the CLI picks when none is given.
    pub is_default: bool,
}

/// A model and effort; `None` leaves the choice to the next level (owner default, CLI).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct AgentPick {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
}

impl AgentPick {
    /// Refuses ids that cannot be a model or an effort level (400 `invalid_model`,
    /// `invalid_effort`); empty strings become `None`.
    pub fn checked(self) -> Result<Self> {
        let clean = |v: Option<String>| v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
        let model = clean(self.model);
        let effort = clean(self.effort);
        if let Some(m) = &model
            && (m.len() > MAX_MODEL_BYTES || m.chars().any(|c| c.is_whitespace() || c.is_control()))
        {
            return Err(Error::bad_request("invalid_model", "Model ids are short and have no spaces."));
        }
        if let Some(e) = &effort
            && (e.len() > MAX_EFFORT_BYTES || !e.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        {
            return Err(Error::bad_request("invalid_effort", "Effort is a level such as low, medium or high."));
        }
        Ok(Self { model, effort })
    }

    /// This pick where it says something, else `fallback`'s. An effort set without a model
    /// applies to whichever model runs.
    pub fn over(&self, fallback: &AgentPick) -> AgentPick {
        AgentPick {
            model: self.model.clone().or_else(|| fallback.model.clone()),
            effort: self.effort.clone().or_else(|| fallback.effort.clone()),
        }
    }
}

/// The owner's default pick for each provider (`owner.agent_defaults`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct AgentDefaults {
    #[serde(default)]
    pub claude: AgentPick,
    #[serde(default)]
    pub codex: AgentPick,
}

impl AgentDefaults {
    /// The stored JSON (unreadable or missing: no defaults).
    pub fn parse(stored: Option<&str>) -> Self {
        stored.and_then(|s| serde_json::from_str(s).ok()).unwrap_or_default()
    }

    /// The default pick of `provider`.
    pub fn of(&self, provider: ProviderKind) -> &AgentPick {
        match provider {
            ProviderKind::Claude => &self.claude,
            ProviderKind::Codex => &self.codex,
        }
    }

    /// Both picks checked.
    pub fn checked(self) -> Result<Self> {
        Ok(Self { claude: self.claude.checked()?, codex: self.codex.checked()? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chats_pick_wins_over_the_default_field_by_field() {
        let chat = AgentPick { model: Some("opus".into()), effort: None };
        let default = AgentPick { model: Some("sonnet".into()), effort: Some("high".into()) };
        assert_eq!(chat.over(&default), AgentPick { model: Some("opus".into()), effort: Some("high".into()) });
        assert_eq!(AgentPick::default().over(&AgentPick::default()), AgentPick::default());
    }

    #[test]
    fn ids_that_cannot_be_models_or_levels_are_refused() {
        let bad = AgentPick { model: Some("two words".into()), effort: None }.checked();
        assert_eq!(bad.expect_err("spaces").code(), "invalid_model");
        let bad = AgentPick { model: None, effort: Some("--yolo".into()) }.checked();
        assert_eq!(bad.expect_err("flag").code(), "invalid_effort");
        let ok = AgentPick { model: Some(" ".into()), effort: Some("xhigh".into()) }.checked().expect("ok");
        assert_eq!(ok, AgentPick { model: None, effort: Some("xhigh".into()) });
    }
}
