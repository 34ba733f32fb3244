//! A chat's stored settings as types: `agent_settings` (its model and effort pick, and what an
//! app chat sets: its own system prompt, project, report) and `allowed_tools` (tools the owner
//! allowed for the whole chat). Routes, the handoff and turns edit these, never a JSON map; the
//! columns keep the JSON they always held (`agent_settings` an object with sorted keys, or
//! NULL when empty; `allowed_tools` a sorted list).

use std::collections::BTreeSet;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::models::AgentPick;

/// Reads a field as `T`, or as absent when it holds something else.
fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    Ok(T::deserialize(Value::deserialize(d)?).ok())
}

/// `chats.agent_settings`. Fields are in key order, so the stored text is what the map it
/// replaces wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSettings {
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Every turn plans first: the agent proposes a plan the owner approves before it acts.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub plan_mode: Option<bool>,
    /// An app chat's project (its storage folder under the app's data).
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub report_date: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub report_kind: Option<String>,
    /// An app chat's own system prompt (instead of the composed one).
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Keys this version does not know, kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AgentSettings {
    /// The stored column (unreadable or missing: no settings).
    pub fn parse(stored: Option<&str>) -> Self {
        stored.and_then(|s| serde_json::from_str(s).ok()).unwrap_or_default()
    }

    /// The column to store: NULL when nothing is set.
    pub fn stored(&self) -> Option<String> {
        (*self != Self::default()).then(|| serde_json::to_string(self).unwrap_or_default())
    }

    /// The chat's own model and effort (empty strings say nothing).
    pub fn pick(&self) -> AgentPick {
        let text = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
        AgentPick { model: text(&self.model), effort: text(&self.effort) }
    }
}

/// `chats.allowed_tools`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedTools(BTreeSet<String>);

impl AllowedTools {
    /// The stored column (unreadable or missing: none).
    pub fn parse(stored: Option<&str>) -> Self {
        Self(stored.and_then(|t| serde_json::from_str::<BTreeSet<String>>(t).ok()).unwrap_or_default())
    }

    pub fn contains(&self, tool: &str) -> bool {
        self.0.contains(tool)
    }

    pub fn insert(&mut self, tool: String) {
        self.0.insert(tool);
    }

    /// The column to store: the tools sorted.
    pub fn stored(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_else(|_| "[]".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_store_the_text_the_map_wrote_and_keep_unknown_keys() {
        let text = r#"{"effort":"high","legacy":[1],"model":"opus","project_id":"p1","system_prompt":"Be brief."}"#;
        let settings = AgentSettings::parse(Some(text));
        assert_eq!(settings.system_prompt.as_deref(), Some("Be brief."));
        let map: Map<String, Value> = serde_json::from_str(text).expect("a map");
        let stored = settings.stored().expect("not empty");
        assert_eq!(serde_json::from_str::<Map<String, Value>>(&stored).expect("a map"), map);
        let known = AgentSettings { extra: Map::new(), ..settings };
        let known_map: Map<String, Value> = known
            .extra
            .clone()
            .into_iter()
            .chain(
                serde_json::from_str::<Map<String, Value>>(text)
                    .expect("a map")
                    .into_iter()
                    .filter(|(k, _)| k != "legacy"),
            )
            .collect();
        assert_eq!(known.stored().expect("not empty"), Value::Object(known_map).to_string(), "same bytes as the map");
        assert_eq!(AgentSettings::default().stored(), None, "empty settings store NULL");
        assert_eq!(AgentSettings::parse(Some(r#"{"model":""}"#)).pick(), AgentPick::default());
        let pick = AgentSettings::parse(Some(r#"{"model":"opus","system_prompt":"x"}"#)).pick();
        assert_eq!(pick, AgentPick { model: Some("opus".into()), effort: None });
        assert_eq!(AgentSettings::parse(Some("not json")), AgentSettings::default());
    }

    #[test]
    fn allowed_tools_store_sorted() {
        let mut tools = AllowedTools::parse(Some(r#"["Write","Bash"]"#));
        tools.insert("Edit".into());
        assert!(tools.contains("Bash") && !tools.contains("Read"));
        assert_eq!(tools.stored(), r#"["Bash","Edit","Write"]"#);
        assert_eq!(AllowedTools::parse(Some("{}")).stored(), "[]");
    }
}
