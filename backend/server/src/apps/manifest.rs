//! The `mobius.json` contract: required fields, the id rules, and the optional fields the
//! original product's catalog uses, validated with messages the agent can act on.

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// Largest accepted `mobius.json`.
pub const MAX_MANIFEST_BYTES: usize = 64 * 1024;
const MAX_ID_CHARS: usize = 128;
const MAX_NAME_CHARS: usize = 128;
const MAX_SEEDS: usize = 64;
const MAX_STATIC_ASSETS: usize = 256;
const MAX_SOURCE_FILES: usize = 50;
const MAX_SKILLS: usize = 5;

/// Ids that would collide with the platform's own routes and folders.
const RESERVED_IDS: &[&str] = &[
    "api",
    "app",
    "apps",
    "app-assets",
    "app-embeds",
    "assets",
    "chat",
    "chats",
    "favicon",
    "icons",
    "index",
    "login",
    "manifest",
    "mobius",
    "new",
    "null",
    "offline",
    "settings",
    "setup",
    "shared",
    "shell",
    "sites",
    "services",
    "static",
    "sw",
    "undefined",
    "vendor",
];

/// Capabilities an app may declare in `requires`.
const KNOWN_CAPABILITIES: &[&str] =
    &["storage", "chat", "notifications", "proxy", "camera", "microphone", "geolocation", "clipboard", "fullscreen"];

const ACCESS_LEVELS: &[&str] = &["none", "read", "write"];
const BOOL_PERMISSIONS: &[&str] = &[
    "manage_apps",
    "manage_skills",
    "github_access",
    "github_connect",
    "filesystem_access",
    "connections_manage",
    "connect_manage",
    "identity_manage",
    "railway_manage",
];

/// A validated manifest: the fields the platform uses, plus the raw document.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub id: String,
    pub name: String,
    pub version: String,
    pub description: String,
    pub icon: Option<String>,
    pub theme_color: Option<String>,
    pub background_color: Option<String>,
    pub display: Option<String>,
    pub offline_capable: bool,
    pub cross_app_access: String,
    pub share_with_apps: String,
    pub permissions: Map<String, Value>,
    pub storage_seeds: Map<String, Value>,
    /// The document as written (decorative keys included).
    pub raw: Map<String, Value>,
}

/// True for ids made of `a-z0-9-_`, not starting with `-`/`_`, not all digits, not reserved.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.chars().count() <= MAX_ID_CHARS
        && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && !id.starts_with(['-', '_'])
        && !id.bytes().all(|b| b.is_ascii_digit())
        && !RESERVED_IDS.contains(&id)
}

/// A safe relative path inside the app: no `..`, no absolute paths, plain characters.
fn safe_relative(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= 512
        && !path.starts_with('/')
        && path.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/'))
        && path.split('/').all(|seg| !seg.is_empty() && seg != "." && seg != "..")
}

fn is_colour(s: &str) -> bool {
    s.len() == 7 && s.starts_with('#') && s[1..].bytes().all(|b| b.is_ascii_hexdigit())
}

struct Problems(Vec<String>);

impl Problems {
    fn add(&mut self, message: impl Into<String>) {
        self.0.push(message.into());
    }
}

/// Parses and validates `mobius.json`; `dir_name` is the app's folder name (the id must match).
pub fn parse(text: &str, dir_name: &str) -> Result<Manifest> {
    if text.len() > MAX_MANIFEST_BYTES {
        return Err(Error::unprocessable(
            "manifest_invalid",
            format!("mobius.json is larger than {MAX_MANIFEST_BYTES} bytes."),
        ));
    }
    let raw: Map<String, Value> = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return Err(Error::unprocessable("manifest_invalid", "mobius.json must be a JSON object.")),
        Err(e) => {
            return Err(Error::unprocessable(
                "manifest_invalid",
                format!("mobius.json is not valid JSON (line {}, column {}): {e}", e.line(), e.column()),
            ));
        }
    };
    let mut p = Problems(Vec::new());
    let mut required = |key: &str| -> String {
        match raw.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
            Some(_) => {
                p.add(format!("`{key}` must be a non-empty string"));
                String::new()
            }
            None => {
                p.add(format!("`{key}` is required"));
                String::new()
            }
        }
    };
    let id = required("id");
    let name = required("name");
    let version = required("version");
    let description = required("description");
    let entry = required("entry");
    if !id.is_empty() {
        if !valid_id(&id) {
            p.add(format!(
                "`id` {id:?} must use only a-z, 0-9, '-' and '_', not start with '-' or '_', not be all digits, \
                 be at most {MAX_ID_CHARS} characters, and not be a reserved name"
            ));
        } else if id != dir_name {
            p.add(format!("`id` {id:?} must equal the app's folder name {dir_name:?}"));
        }
    }
    if name.chars().count() > MAX_NAME_CHARS {
        p.add(format!("`name` is at most {MAX_NAME_CHARS} characters"));
    }
    if !entry.is_empty() && entry != "index.jsx" {
        p.add("`entry` must be \"index.jsx\"");
    }
    let opt_str = |p: &mut Problems, key: &str| -> Option<String> {
        match raw.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                p.add(format!("`{key}` must be a string"));
                None
            }
        }
    };
    let opt_bool = |p: &mut Problems, key: &str| -> bool {
        match raw.get(key) {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                p.add(format!("`{key}` must be true or false"));
                false
            }
        }
    };
    if let Some(prev) = opt_str(&mut p, "previous_id")
        && (prev == id || !valid_id(&prev))
    {
        p.add("`previous_id` must be a valid id different from `id`");
    }
    let icon = opt_str(&mut p, "icon");
    if let Some(icon) = &icon
        && !safe_relative(icon)
    {
        p.add(format!("`icon` {icon:?} must be a relative path inside the app (no '..')"));
    }
    let theme_color = opt_str(&mut p, "theme_color");
    let background_color = opt_str(&mut p, "background_color");
    for (key, value) in [("theme_color", &theme_color), ("background_color", &background_color)] {
        if let Some(c) = value
            && !is_colour(c)
        {
            p.add(format!("`{key}` must look like #1a2b3c"));
        }
    }
    let display = opt_str(&mut p, "display");
    if let Some(d) = &display
        && !["standalone", "fullscreen", "minimal-ui", "browser"].contains(&d.as_str())
    {
        p.add("`display` must be standalone, fullscreen, minimal-ui or browser");
    }
    let offline_capable = opt_bool(&mut p, "offline_capable");
    opt_bool(&mut p, "embeds_agent");
    let system_app = opt_bool(&mut p, "system_app");

    let permissions = object(&mut p, &raw, "permissions");
    let level = |p: &mut Problems, key: &str, allowed: &[&str]| -> String {
        match permissions.get(key) {
            None | Some(Value::Null) => "none".into(),
            Some(Value::String(s)) if allowed.contains(&s.as_str()) => s.clone(),
            Some(_) => {
                p.add(format!("`permissions.{key}` must be one of {}", allowed.join(", ")));
                "none".into()
            }
        }
    };
    let cross_app_access = level(&mut p, "cross_app_access", ACCESS_LEVELS);
    let share_with_apps = level(&mut p, "share_with_apps", ACCESS_LEVELS);
    level(&mut p, "shared_memory", ACCESS_LEVELS);
    level(&mut p, "chat_log_access", &["none", "summary", "summary_with_deleted"]);
    for key in BOOL_PERMISSIONS {
        if let Some(v) = permissions.get(*key)
            && !v.is_boolean()
            && !v.is_null()
        {
            p.add(format!("`permissions.{key}` must be true or false"));
        }
    }
    for removed in ["background_agent", "job_authority"] {
        if permissions.contains_key(removed) {
            p.add(format!("`permissions.{removed}` was removed from the platform; drop it"));
        }
    }
    if let Some(requires) = raw.get("requires") {
        match requires.as_array() {
            Some(list) => {
                for cap in list {
                    match cap.as_str() {
                        Some(c) if KNOWN_CAPABILITIES.contains(&c) => {}
                        _ => p.add(format!(
                            "`requires` names an unknown capability {cap}; known: {}",
                            KNOWN_CAPABILITIES.join(", ")
                        )),
                    }
                }
            }
            None => p.add("`requires` must be a list"),
        }
    }
    let offline = object(&mut p, &raw, "offline");
    if let Some(v) = offline.get("writes")
        && !matches!(v.as_str(), Some("queued" | "none"))
    {
        p.add("`offline.writes` must be \"queued\" or \"none\"");
    }
    if let Some(v) = offline.get("execution")
        && !matches!(v.as_str(), Some("full" | "partial" | "none"))
    {
        p.add("`offline.execution` must be full, partial or none");
    }
    let storage_seeds = object(&mut p, &raw, "storage_seeds");
    if storage_seeds.len() > MAX_SEEDS {
        p.add(format!("`storage_seeds` has more than {MAX_SEEDS} entries"));
    }
    for dest in storage_seeds.keys() {
        if !safe_relative(dest) {
            p.add(format!("`storage_seeds` destination {dest:?} must be a relative path (no '..')"));
        }
    }
    match raw.get("static_assets") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            if list.len() > MAX_STATIC_ASSETS {
                p.add(format!("`static_assets` lists more than {MAX_STATIC_ASSETS} files"));
            }
            for item in list {
                if !item.as_str().is_some_and(safe_relative) {
                    p.add(format!("`static_assets` entry {item} must be a relative path"));
                }
            }
        }
        Some(Value::Object(map)) => {
            for (dest, src) in map {
                if !safe_relative(dest) || !src.as_str().is_some_and(safe_relative) {
                    p.add(format!("`static_assets` entry {dest:?} must map a relative path to a relative path"));
                }
            }
        }
        Some(_) => p.add("`static_assets` must be a list or an object"),
    }
    let source_files = string_list(&mut p, &raw, "source_files");
    if source_files.len() > MAX_SOURCE_FILES {
        p.add(format!("`source_files` lists more than {MAX_SOURCE_FILES} files"));
    }
    for file in &source_files {
        let first = file.chars().next().unwrap_or('0');
        if !safe_relative(file)
            || file == "index.jsx"
            || file == ".gitignore"
            || first.is_ascii_digit()
            || file.ends_with(".bak")
            || ["static/", "dist/", ".build/", "node_modules/"].iter().any(|d| file.starts_with(d))
        {
            p.add(format!("`source_files` entry {file:?} is not allowed"));
        }
    }
    let skills = string_list(&mut p, &raw, "skills");
    if skills.len() > MAX_SKILLS {
        p.add(format!("`skills` lists more than {MAX_SKILLS} files"));
    }
    for skill in &skills {
        let ok = skill.ends_with(".md")
            && !skill.contains('/')
            && skill.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && skill.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'));
        if !ok {
            p.add(format!("`skills` entry {skill:?} must be a root-level lowercase .md file"));
        }
    }
    if let Some(prompt) = opt_str(&mut p, "system_prompt") {
        if !system_app {
            p.add("`system_prompt` needs `system_app: true`");
        }
        if prompt.contains('/') || !prompt.ends_with(".md") {
            p.add("`system_prompt` must be a bare <name>.md file");
        }
    }
    let schedule = object(&mut p, &raw, "schedule");
    if let Some(cron) = schedule.get("default") {
        let ok = cron.as_str().is_some_and(|c| {
            let fields: Vec<&str> = c.split_whitespace().collect();
            fields.len() == 5 && fields.iter().all(|f| f.bytes().all(|b| b.is_ascii_digit() || b"*/,-".contains(&b)))
        });
        if !ok {
            p.add("`schedule.default` must be 5 cron fields of digits and * / , -");
        }
    }
    if let Some(job) = schedule.get("job")
        && !job.as_str().is_some_and(|j| !j.contains('/') && safe_relative(j))
    {
        p.add("`schedule.job` must be a bare file name");
    }
    if schedule.get("initialize_on_install").and_then(Value::as_bool) == Some(true) && !schedule.contains_key("job") {
        p.add("`schedule.initialize_on_install` needs `schedule.job`");
    }
    if !p.0.is_empty() {
        let list = p.0.iter().map(|m| format!("- {m}")).collect::<Vec<_>>().join("\n");
        return Err(Error::unprocessable("manifest_invalid", format!("mobius.json has problems:\n{list}")));
    }
    Ok(Manifest {
        id,
        name,
        version,
        description,
        icon,
        theme_color,
        background_color,
        display,
        offline_capable,
        cross_app_access,
        share_with_apps,
        permissions,
        storage_seeds,
        raw,
    })
}

fn object(p: &mut Problems, raw: &Map<String, Value>, key: &str) -> Map<String, Value> {
    match raw.get(key) {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => {
            p.add(format!("`{key}` must be an object"));
            Map::new()
        }
    }
}

fn string_list(p: &mut Problems, raw: &Map<String, Value>, key: &str) -> Vec<String> {
    match raw.get(key) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| {
                let s = i.as_str().map(str::to_owned);
                if s.is_none() {
                    p.add(format!("`{key}` must list strings"));
                }
                s
            })
            .collect(),
        Some(_) => {
            p.add(format!("`{key}` must be a list"));
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r##"{"id":"counter","name":"Counter","version":"1.0.0","description":"Counts.","entry":"index.jsx",
        "author":"someone","icon":"icon.png","theme_color":"#112233","display":"standalone","offline_capable":true,
        "permissions":{"cross_app_access":"read"},"storage_seeds":{"state.json":{"n":0}},"schedule":{"default":"*/5 * * * *","job":"job.sh"}}"##;

    #[test]
    fn a_catalog_style_manifest_parses_and_decorative_keys_are_kept_but_ignored() {
        let m = parse(GOOD, "counter").expect("valid");
        assert_eq!(m.id, "counter");
        assert!(m.offline_capable);
        assert_eq!(m.cross_app_access, "read");
        assert_eq!(m.share_with_apps, "none");
        assert_eq!(m.raw["author"], "someone");
        assert_eq!(m.storage_seeds["state.json"]["n"], 0);
    }

    #[test]
    fn every_problem_is_listed_in_words_the_agent_can_act_on() {
        let bad = r##"{"id":"Counter","version":"","entry":"main.js","theme_color":"red",
            "permissions":{"cross_app_access":"all","job_authority":true},"requires":["teleport"],
            "storage_seeds":{"../x":1},"schedule":{"default":"every minute"}}"##;
        let err = parse(bad, "counter").expect_err("invalid").to_string();
        for needle in [
            "`name` is required",
            "`version` must be a non-empty string",
            "`description` is required",
            "`entry` must be \"index.jsx\"",
            "`id` \"Counter\" must use only",
            "`theme_color` must look like",
            "permissions.cross_app_access",
            "job_authority` was removed",
            "unknown capability",
            "destination \"../x\"",
            "5 cron fields",
        ] {
            assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
        }
    }

    #[test]
    fn id_rules() {
        assert!(valid_id("my-app_2"));
        for bad in ["", "-x", "_x", "123", "api", "Has-Caps", "a/b", "a.b", &"x".repeat(129)] {
            assert!(!valid_id(bad), "{bad:?}");
        }
        let other = GOOD.replace("\"id\":\"counter\"", "\"id\":\"other\"");
        assert!(parse(&other, "counter").expect_err("mismatch").to_string().contains("folder name"));
        assert!(parse("[1,2]", "x").is_err());
        assert!(parse("{\"id\":", "x").expect_err("syntax").to_string().contains("line 1"));
    }
}
