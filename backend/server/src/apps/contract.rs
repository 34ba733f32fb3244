//! An app's capability contract (schema 5): what its manifest asks of the platform, in the shape
//! the frame's runtime reads from `frame-init.capabilityContract` (`window.mobius.capabilities`
//! declarations under `runtime`, the offline contract the service worker honours under
//! `offline`). Derived from the stored manifest every time, so it always matches the live build.

use serde_json::{Map, Value, json};

use super::app_manifest::{AppManifest, CapabilityDecl, Permissions};
use super::manifest::{CAPABILITIES, CAPABILITY_VERSION};

/// Longest `reason` kept for a declaration.
const MAX_REASON_CHARS: usize = 240;

/// The normalized declaration of `id`, or None when it is not a registered capability declared
/// with its registered version (the manifest's validation says why).
fn declaration(id: &str, decl: &CapabilityDecl) -> Option<Value> {
    let spec = CAPABILITIES.iter().find(|s| s.id == id)?;
    if decl.version.as_ref().and_then(serde_json::Number::as_i64) != Some(CAPABILITY_VERSION) {
        return None;
    }
    let reason =
        decl.reason.as_deref().map(str::trim).filter(|r| !r.is_empty() && r.chars().count() <= MAX_REASON_CHARS);
    let mut limits = Map::new();
    for &(name, default, min, max) in spec.limits {
        let value = decl
            .limits
            .as_ref()
            .and_then(|g| g.get(name))
            .and_then(serde_json::Number::as_f64)
            .filter(|v| v.is_finite() && *v >= min as f64 && *v <= max as f64)
            .map_or(default, |v| v as i64);
        limits.insert(name.into(), json!(value));
    }
    Some(json!({
        "version": CAPABILITY_VERSION,
        "kind": "session",
        "title": spec.title,
        "description": spec.description,
        "risk": spec.risk,
        "lifecycle": spec.lifecycle,
        "reason": reason,
        "limits": limits,
    }))
}

/// The contract of an app whose manifest is `manifest`, with the storage grants the owner set.
pub fn capability_contract(
    manifest: &AppManifest,
    offline_capable: bool,
    cross_app_access: &str,
    share_with_apps: &str,
) -> Value {
    let permissions = manifest.permissions();
    let chat_logs = Permissions::level(&permissions.chat_log_access).to_owned();
    let mut skills: Vec<String> = manifest.skills.clone().unwrap_or_default();
    skills.sort();
    skills.dedup();
    let system_app = manifest.system_app();
    let system_prompt = manifest
        .system_prompt
        .as_deref()
        .filter(|_| system_app)
        .map(|file| json!({ "file": file, "scope": "chats_started_while_installed", "activation": "chat_start" }));
    let background = manifest.schedule.as_ref().and_then(|s| s.job.as_deref().map(|job| (s, job))).map(|(s, job)| {
        let cron = s.default.as_deref();
        json!({
            "job": job,
            "mode": if cron.is_some() { "scheduled" } else { "on_demand" },
            "cron": cron,
            "user_configurable": s.user_configurable.unwrap_or(false),
            "initialize_on_install": s.initialize_on_install.unwrap_or(false),
        })
    });
    let runtime: Map<String, Value> = manifest
        .capabilities
        .iter()
        .flatten()
        .filter_map(|(id, decl)| declaration(id, decl).map(|d| (id.clone(), d)))
        .collect();
    json!({
        "schema": 5,
        "system_app": system_app,
        "agent": {
            "system_prompt": system_prompt,
            "skills": skills,
            "embeds_agent": manifest.embeds_agent(),
        },
        "data": {
            "chat_logs": {
                "requested": chat_logs,
                "effective": chat_logs,
                "redaction": if chat_logs == "none" { "none" } else { "structural" },
            },
            "filesystem_api": permissions.grant("filesystem_access"),
            "shared_memory": Permissions::level(&permissions.shared_memory),
            "cross_app_access": cross_app_access,
            "share_with_apps": share_with_apps,
            "manage_apps": permissions.grant("manage_apps"),
            "manage_skills": permissions.grant("manage_skills"),
            "github_access": permissions.grant("github_access"),
            "github_connect": permissions.grant("github_connect"),
            "connections_manage": permissions.grant("connections_manage"),
            "connect_manage": permissions.grant("connect_manage"),
            "identity_manage": permissions.grant("identity_manage"),
            "railway_manage": permissions.grant("railway_manage"),
        },
        "background": background,
        "offline": {
            "capable": offline_capable,
            "contract": manifest.offline,
        },
        "runtime": runtime,
        "public": {
            "network": manifest.network_rules(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_are_normalized_and_unknown_or_mismatched_ones_left_out() {
        let manifest = json!({
            "capabilities": {
                "media.microphone.capture": { "version": 1, "reason": "  Voice notes  ", "limits": { "max_duration_ms": 999_999 } },
                "media.speech": { "version": 1, "limits": { "max_text_chars": 1000.0 } },
                "device.asset-cache": { "version": 2 },
                "device.camera": { "version": 1 },
            },
            "offline": { "reads": true, "precache": ["static/a.png"] },
            "permissions": { "chat_log_access": "summary", "manage_apps": true },
            "schedule": { "job": "fetch.sh" },
        });
        let c = capability_contract(&serde_json::from_value(manifest).expect("a manifest"), true, "read", "none");
        let runtime = c["runtime"].as_object().expect("runtime");
        assert_eq!(runtime.keys().collect::<Vec<_>>(), ["media.microphone.capture", "media.speech"]);
        let mic = &runtime["media.microphone.capture"];
        assert_eq!(mic["reason"], "Voice notes");
        assert_eq!(mic["limits"]["max_duration_ms"], 30_000, "out of range: the default");
        assert_eq!(mic["lifecycle"], "active_frame");
        assert_eq!(runtime["media.speech"]["limits"]["max_text_chars"], 1000);
        assert_eq!(
            c["offline"],
            json!({ "capable": true, "contract": { "reads": true, "precache": ["static/a.png"] } })
        );
        assert_eq!(c["data"]["chat_logs"]["redaction"], "structural");
        assert_eq!(c["data"]["cross_app_access"], "read");
        assert_eq!(c["data"]["manage_apps"], true);
        assert_eq!(c["background"]["mode"], "on_demand");
        assert_eq!(c["schema"], 5);
    }

    #[test]
    fn an_empty_manifest_has_an_empty_contract() {
        let c = capability_contract(&AppManifest::default(), false, "none", "none");
        assert_eq!(c["runtime"], json!({}));
        assert_eq!(c["offline"]["contract"], Value::Null);
        assert_eq!(c["background"], Value::Null);
        assert_eq!(c["public"]["network"], json!([]));
    }
}
