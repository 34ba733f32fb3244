//! An app's capability contract (schema 5): what its manifest asks of the platform, in the shape
//! the frame's runtime reads from `frame-init.capabilityContract` (`window.mobius.capabilities`
//! declarations under `runtime`, the offline contract the service worker honours under
//! `offline`). Derived from the stored manifest every time, so it always matches the live build.

use serde_json::{Map, Value, json};

use super::manifest::{CAPABILITIES, CAPABILITY_VERSION};

/// Longest `reason` kept for a declaration.
const MAX_REASON_CHARS: usize = 240;

/// The normalized declaration of `id`, or None when it is not a registered capability declared
/// with its registered version (the manifest's validation says why).
fn declaration(id: &str, decl: &Value) -> Option<Value> {
    let spec = CAPABILITIES.iter().find(|s| s.id == id)?;
    let decl = decl.as_object()?;
    if decl.get("version").and_then(Value::as_i64) != Some(CAPABILITY_VERSION) {
        return None;
    }
    let reason = decl
        .get("reason")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|r| !r.is_empty() && r.chars().count() <= MAX_REASON_CHARS);
    let given = decl.get("limits").and_then(Value::as_object);
    let mut limits = Map::new();
    for &(name, default, min, max) in spec.limits {
        let value = given
            .and_then(|g| g.get(name))
            .and_then(Value::as_f64)
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

fn flag(permissions: &Map<String, Value>, key: &str) -> bool {
    permissions.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The contract of an app whose manifest is `manifest`, with the storage grants the owner set.
pub fn capability_contract(
    manifest: &Map<String, Value>,
    offline_capable: bool,
    cross_app_access: &str,
    share_with_apps: &str,
) -> Value {
    let empty = Map::new();
    let permissions = manifest.get("permissions").and_then(Value::as_object).unwrap_or(&empty);
    let level = |key: &str| permissions.get(key).and_then(Value::as_str).unwrap_or("none").to_owned();
    let chat_logs = level("chat_log_access");
    let mut skills: Vec<String> = manifest
        .get("skills")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    skills.sort();
    skills.dedup();
    let system_app = manifest.get("system_app").and_then(Value::as_bool).unwrap_or(false);
    let system_prompt = manifest
        .get("system_prompt")
        .and_then(Value::as_str)
        .filter(|_| system_app)
        .map(|file| json!({ "file": file, "scope": "chats_started_while_installed", "activation": "chat_start" }));
    let schedule = manifest.get("schedule").and_then(Value::as_object);
    let background = schedule.and_then(|s| s.get("job").and_then(Value::as_str).map(|job| (s, job))).map(|(s, job)| {
        let cron = s.get("default").and_then(Value::as_str);
        json!({
            "job": job,
            "mode": if cron.is_some() { "scheduled" } else { "on_demand" },
            "cron": cron,
            "user_configurable": s.get("user_configurable").and_then(Value::as_bool).unwrap_or(false),
            "initialize_on_install": s.get("initialize_on_install").and_then(Value::as_bool).unwrap_or(false),
        })
    });
    let runtime: Map<String, Value> = manifest
        .get("capabilities")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(id, decl)| declaration(id, decl).map(|d| (id.clone(), d)))
        .collect();
    json!({
        "schema": 5,
        "system_app": system_app,
        "agent": {
            "system_prompt": system_prompt,
            "skills": skills,
            "embeds_agent": manifest.get("embeds_agent").and_then(Value::as_bool).unwrap_or(false),
        },
        "data": {
            "chat_logs": {
                "requested": chat_logs,
                "effective": chat_logs,
                "redaction": if chat_logs == "none" { "none" } else { "structural" },
            },
            "filesystem_api": flag(permissions, "filesystem_access"),
            "shared_memory": level("shared_memory"),
            "cross_app_access": cross_app_access,
            "share_with_apps": share_with_apps,
            "manage_apps": flag(permissions, "manage_apps"),
            "manage_skills": flag(permissions, "manage_skills"),
            "github_access": flag(permissions, "github_access"),
            "github_connect": flag(permissions, "github_connect"),
            "connections_manage": flag(permissions, "connections_manage"),
            "connect_manage": flag(permissions, "connect_manage"),
            "identity_manage": flag(permissions, "identity_manage"),
            "railway_manage": flag(permissions, "railway_manage"),
        },
        "background": background,
        "offline": {
            "capable": offline_capable,
            "contract": manifest.get("offline").filter(|o| o.is_object()).cloned(),
        },
        "runtime": runtime,
        "public": {
            "network": manifest.get("public_access").and_then(|p| p.get("network")).filter(|n| n.is_array()).cloned().unwrap_or_else(|| json!([])),
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
        let c = capability_contract(manifest.as_object().expect("object"), true, "read", "none");
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
        let c = capability_contract(&Map::new(), false, "none", "none");
        assert_eq!(c["runtime"], json!({}));
        assert_eq!(c["offline"]["contract"], Value::Null);
        assert_eq!(c["background"], Value::Null);
        assert_eq!(c["public"]["network"], json!([]));
    }
}
