//! An installed app's `mobius.json` as one typed value: `manifest.rs` validates the document at
//! apply, the registry stores it as written, and a row read gives it back as an `AppManifest`
//! (`db::apps::AppRow::manifest`), so nothing past the parser reads the manifest by key.
//!
//! Every field is optional, as in the document, and read leniently: a value of the wrong type
//! (only possible in a row written before a rule existed) reads as absent, exactly as the
//! by-key reads this replaces did. Fields the platform does not read (`author`, `homepage`,
//! `tags`, unknown keys) stay in `extra`, so serialising gives the document back.
//! Parts the API echoes as written (`offline`, `public_access.network`, `storage_seeds`) stay
//! JSON objects, so their bytes on the wire do not change.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Number, Value};

/// Reads a field as `T`, or as absent when it holds something else.
fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    let value = Value::deserialize(d)?;
    Ok(T::deserialize(value).ok())
}

/// Reads a field as `T`, or as `T::default()` when it holds something else.
fn lenient_or_default<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(d: D) -> Result<T, D::Error> {
    Ok(lenient(d)?.unwrap_or_default())
}

/// `mobius.json` of an installed app.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AppManifest {
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub previous_id: Option<String>,
    /// Repo path of the icon.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub theme_color: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub background_color: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub offline_capable: Option<bool>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub embeds_agent: Option<bool>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub system_app: Option<bool>,
    /// A bare `<name>.md` of the app (meaningful only with `system_app`).
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<String>>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub source_files: Option<Vec<String>>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub requires: Option<Vec<String>>,
    /// Absent, `{}` and a non-object all read as nothing asked for.
    #[serde(default, deserialize_with = "lenient_or_default", skip_serializing_if = "Permissions::is_empty")]
    pub permissions: Permissions,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleDecl>,
    /// Device capabilities by id.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<BTreeMap<String, CapabilityDecl>>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub public_access: Option<PublicAccess>,
    /// The offline contract, echoed as written to the frame and the service worker.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub offline: Option<Map<String, Value>>,
    /// Starting documents: destination → a JSON document or the repo path of a file.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub storage_seeds: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub static_assets: Option<StaticAssets>,
    /// Everything else the owner wrote (decoration, unknown keys), kept as written.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `permissions`: storage levels (`none`/`read`/`write`), the chat-log tier and the original's
/// boolean grants.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Permissions {
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub cross_app_access: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub share_with_apps: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub shared_memory: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub chat_log_access: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub manage_apps: Option<bool>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub manage_skills: Option<bool>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub github_access: Option<bool>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub github_connect: Option<bool>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub filesystem_access: Option<bool>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub connections_manage: Option<bool>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub connect_manage: Option<bool>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub identity_manage: Option<bool>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub railway_manage: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Permissions {
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// A storage or chat-log level: `"none"` when not asked for.
    pub fn level(value: &Option<String>) -> &str {
        value.as_deref().unwrap_or("none")
    }

    /// The boolean grant `name` (one of the original's grant names); false for any other name.
    pub fn grant(&self, name: &str) -> bool {
        let flag = match name {
            "manage_apps" => self.manage_apps,
            "manage_skills" => self.manage_skills,
            "github_access" => self.github_access,
            "github_connect" => self.github_connect,
            "filesystem_access" => self.filesystem_access,
            "connections_manage" => self.connections_manage,
            "connect_manage" => self.connect_manage,
            "identity_manage" => self.identity_manage,
            "railway_manage" => self.railway_manage,
            _ => None,
        };
        flag == Some(true)
    }
}

/// `schedule`: the app's job and its default cadence.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScheduleDecl {
    /// Five cron fields.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub user_configurable: Option<bool>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub initialize_on_install: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One `capabilities.<id>` declaration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CapabilityDecl {
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub version: Option<Number>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Limit name → asked value.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub limits: Option<BTreeMap<String, Number>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `public_access`: the public origins the app's proxy may reach.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PublicAccess {
    /// Rules as written (`origin`, `path_prefix`, `query`…), echoed to the frame.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub network: Option<Vec<Value>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `static_assets`: a list of paths (each its own destination) or destination → source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StaticAssets {
    List(Vec<String>),
    Map(BTreeMap<String, String>),
}

impl AppManifest {
    /// Reads a stored document; anything but a JSON object reads as an empty manifest.
    pub fn from_text(text: &str) -> Self {
        serde_json::from_str(text).unwrap_or_default()
    }

    /// The typed view of an already parsed document.
    pub fn from_map(document: Map<String, Value>) -> Self {
        serde_json::from_value(Value::Object(document)).unwrap_or_default()
    }

    pub fn embeds_agent(&self) -> bool {
        self.embeds_agent == Some(true)
    }

    pub fn system_app(&self) -> bool {
        self.system_app == Some(true)
    }

    pub fn offline_capable(&self) -> bool {
        self.offline_capable == Some(true)
    }

    /// The permissions asked for (none asked reads as all absent).
    pub fn permissions(&self) -> &Permissions {
        &self.permissions
    }

    /// `schedule.initialize_on_install`.
    pub fn initialize_on_install(&self) -> bool {
        self.schedule.as_ref().and_then(|s| s.initialize_on_install) == Some(true)
    }

    /// `offline.precache`: its string entries, None when it is not a list.
    pub fn offline_precache(&self) -> Option<Vec<&str>> {
        let list = self.offline.as_ref().and_then(|o| o.get("precache")).and_then(Value::as_array)?;
        Some(list.iter().filter_map(Value::as_str).collect())
    }

    /// The destinations `static_assets` names.
    pub fn static_destinations(&self) -> Vec<&str> {
        match &self.static_assets {
            Some(StaticAssets::List(list)) => list.iter().map(String::as_str).collect(),
            Some(StaticAssets::Map(map)) => map.keys().map(String::as_str).collect(),
            None => Vec::new(),
        }
    }

    /// `public_access.network` as written (`[]` when absent).
    pub fn network_rules(&self) -> &[Value] {
        self.public_access.as_ref().and_then(|p| p.network.as_deref()).unwrap_or(&[])
    }

    /// `author`: a name string or an object's `name`.
    pub fn author(&self) -> Option<String> {
        match self.extra.get("author") {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_owned()),
            Some(Value::Object(o)) => o.get("name").and_then(Value::as_str).map(str::to_owned),
            _ => None,
        }
    }

    /// `homepage`, when it is an https address.
    pub fn homepage(&self) -> Option<&str> {
        self.extra.get("homepage").and_then(Value::as_str).filter(|h| h.starts_with("https://"))
    }
}

/// A row's `permissions` column (see `db::apps::AppRow`); anything but an object reads as none.
impl From<String> for Permissions {
    fn from(text: String) -> Self {
        serde_json::from_str(&text).unwrap_or_default()
    }
}

/// A row's `manifest` column (see `db::apps::AppRow`).
impl From<String> for AppManifest {
    fn from(text: String) -> Self {
        Self::from_text(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_whole_document_round_trips_and_its_fields_read_typed() {
        let doc = json!({
            "id": "journal", "name": "Journal", "version": "2.1.0", "description": "Notes.", "entry": "index.jsx",
            "icon": "icon.png", "embeds_agent": true, "system_app": true, "system_prompt": "prompt.md",
            "skills": ["guide.md"], "source_files": ["prompt.md", "guide.md"], "requires": ["storage"],
            "permissions": {"shared_memory": "read", "manage_apps": true, "job_authority": false},
            "schedule": {"default": "0 7 * * *", "job": "job.sh", "initialize_on_install": true, "note": 1},
            "capabilities": {"media.speech": {"version": 1, "limits": {"max_text_chars": 1000.5}, "x": [1]}},
            "public_access": {"network": [{"origin": "https://api.example.com", "methods": ["GET"]}]},
            "offline": {"reads": true, "precache": ["static/a.png", 3]},
            "storage_seeds": {"state.json": {"n": 0}},
            "static_assets": {"a.png": "static/a.png"},
            "author": {"name": "someone"}, "homepage": "https://example.com", "color": "blue"
        });
        let Value::Object(map) = doc.clone() else { unreachable!() };
        let m = AppManifest::from_map(map);
        assert_eq!(serde_json::to_value(&m).expect("serialises"), doc, "nothing the owner wrote is lost");
        assert!(m.embeds_agent() && m.system_app() && m.initialize_on_install());
        assert!(m.permissions().grant("manage_apps") && !m.permissions().grant("github_access"));
        assert_eq!(Permissions::level(&m.permissions().shared_memory), "read");
        assert_eq!(m.offline_precache(), Some(vec!["static/a.png"]));
        assert_eq!(m.static_destinations(), ["a.png"]);
        assert_eq!(m.author().as_deref(), Some("someone"));
        assert_eq!(m.homepage(), Some("https://example.com"));
        assert_eq!(m.network_rules().len(), 1);
    }

    #[test]
    fn wrong_types_read_as_absent_and_garbage_as_empty() {
        let m = AppManifest::from_text(
            r#"{"embeds_agent":"yes","permissions":{"manage_apps":1},"skills":"x","icon":"i.png"}"#,
        );
        assert!(!m.embeds_agent());
        assert!(!m.permissions().grant("manage_apps"));
        assert_eq!(m.skills, None);
        assert_eq!(m.icon.as_deref(), Some("i.png"));
        assert_eq!(AppManifest::from_text("[1]"), AppManifest::default());
        assert_eq!(AppManifest::from_text(""), AppManifest::default());
        assert_eq!(Permissions::level(&AppManifest::default().permissions().chat_log_access), "none");
    }
}
