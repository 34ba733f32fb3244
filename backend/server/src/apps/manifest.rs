//! The `mobius.json` contract: the original product's whole vocabulary. Every field either has
//! its effect here or is accepted with a warning that says it has none; a malformed field is a
//! located problem (`mobius.json` › field: why), and all problems are reported together.
//!
//! | field | here |
//! |---|---|
//! | `id`, `name`, `version`, `description`, `entry` | the app's slug, display name, version, description, compile entry |
//! | `previous_id` | adopts the earlier app's row and data (see `apply`) |
//! | `icon` | served as the app's icon |
//! | `theme_color`, `background_color`, `display` | the standalone web-app manifest; an invalid value is dropped with a warning |
//! | `offline_capable` | `X-Mobius-Offline: 1` on the frame and standalone host |
//! | `offline` | exposed in the app summary (`offline`, `offline_precache` for the service worker) |
//! | `embeds_agent` | enables the embedded agent chat (`mobius.chat`) |
//! | `permissions.cross_app_access`, `share_with_apps`, `shared_memory` | storage access |
//! | `storage_seeds` | written into the app's storage on first install |
//! | `static_assets` | copied at apply, served under `/app-assets/…` and `/app-embeds/…` |
//! | `source_files` | checked; every file of the folder is part of the app anyway |
//! | `requires` | checked against the platform's names; names whose APIs this platform lacks get a warning |
//! | `schedule` | the app's job schedule (`schedules/`), registered with the apply; `initialize_on_install` runs the job once after a first install from a source |
//! | `permissions.chat_log_access` | the app's tier on `/api/chat-logs` |
//! | `system_app` + `system_prompt`, `skills` | the prompt joins new chats' prompts, the skills the agent's skills index, while the app is installed (`apps/system.rs`) |
//! | the boolean grants, `capabilities`, `public_access` | checked, then a warning: no effect here |

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// Largest accepted `mobius.json`.
pub const MAX_MANIFEST_BYTES: usize = 64 * 1024;
const MAX_ID_CHARS: usize = 128;
const MAX_NAME_CHARS: usize = 128;
const MAX_SEEDS: usize = 64;
/// Most files `static_assets` may name.
pub const MAX_STATIC_ASSETS: usize = 256;
const MAX_SOURCE_FILES: usize = 50;
pub const MAX_SKILLS: usize = 5;
const MAX_PUBLIC_RULES: usize = 16;
const MAX_PATH_PREFIX_CHARS: usize = 512;
const MAX_REASON_CHARS: usize = 240;
const MAX_PRECACHE_PATHS: usize = 256;

/// The server permission names the original's `requires` accepts. None of their APIs exist
/// here, so each one named gets a warning.
const PERMISSION_NAMES: &[&str] = &[
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

/// Names this platform's own earlier manifests used in `requires`: all are provided (storage,
/// chat, the proxy) or are the browser's own, so they are accepted silently.
const LEGACY_REQUIRES: &[&str] =
    &["storage", "chat", "notifications", "proxy", "camera", "microphone", "geolocation", "clipboard", "fullscreen"];

const ACCESS_LEVELS: &[&str] = &["none", "read", "write"];

/// Top-level keys the original ignores without a word (catalog decoration).
const DECORATIVE: &[&str] = &[
    "$schema",
    "author",
    "license",
    "homepage",
    "repository",
    "runtime",
    "tags",
    "keywords",
    "categories",
    "esm_deps",
];

/// One host-mediated capability of the original's registry: id, how it presents itself to the
/// app (`capabilities.describe`), and its limits as `(name, default, min, max)`. All are
/// sessions of version `CAPABILITY_VERSION`.
pub struct CapabilitySpec {
    pub id: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub risk: &'static str,
    pub lifecycle: &'static str,
    pub limits: &'static [(&'static str, i64, i64, i64)],
}

const MIB: i64 = 1024 * 1024;
const STORAGE_LIMITS: &[(&str, i64, i64, i64)] = &[
    ("max_bytes", 256 * MIB, MIB, 2048 * MIB),
    ("max_asset_bytes", 256 * MIB, MIB, 1024 * MIB),
    ("max_chunk_bytes", 8 * MIB, 256 * 1024, 16 * MIB),
];
pub const CAPABILITIES: &[CapabilitySpec] = &[
    CapabilitySpec {
        id: "media.microphone.capture",
        title: "Microphone capture",
        description: "Record a short clip from the microphone while the app is on screen.",
        risk: "device",
        lifecycle: "active_frame",
        limits: &[("max_duration_ms", 30_000, 100, 60_000)],
    },
    CapabilitySpec {
        id: "media.speech",
        title: "Speech",
        description: "Read text aloud with an on-device voice.",
        risk: "device",
        lifecycle: "background",
        limits: &[("max_text_chars", 50_000, 1, 250_000)],
    },
    CapabilitySpec {
        id: "device.speech-models",
        title: "Speech models",
        description: "Manage the speech models kept on this device.",
        risk: "storage",
        lifecycle: "active_frame",
        limits: STORAGE_LIMITS,
    },
    CapabilitySpec {
        id: "device.asset-cache",
        title: "Asset cache",
        description: "Keep large downloaded assets on this device for the app.",
        risk: "storage",
        lifecycle: "active_frame",
        limits: STORAGE_LIMITS,
    },
];
pub const CAPABILITY_VERSION: i64 = 1;

/// A validated manifest: the fields the platform uses, the warnings, and the raw document.
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
    /// The app embeds the agent chat (`mobius.chat`); without it embed sessions are refused.
    pub embeds_agent: bool,
    pub cross_app_access: String,
    pub share_with_apps: String,
    pub permissions: Map<String, Value>,
    pub storage_seeds: Map<String, Value>,
    /// The app this one continues (its row and data are adopted when this id is new).
    pub previous_id: Option<String>,
    /// `(destination, source)` pairs, both repo paths.
    pub static_assets: Vec<(String, String)>,
    /// The `offline` object as written (normalised `precache` inside).
    pub offline: Option<Map<String, Value>>,
    /// Paths the service worker should keep for offline use.
    pub offline_precache: Vec<String>,
    /// `schedule`: the app's job and its cadence.
    pub schedule: Option<crate::db::schedules::AppJobSpec>,
    /// `schedule.initialize_on_install`: run the job once after a first install from a source.
    pub initialize_on_install: bool,
    /// Fields accepted without an effect here, in words the owner and agent understand.
    pub warnings: Vec<String>,
    /// The document as written (decorative keys included), typed: what the registry stores.
    pub document: super::app_manifest::AppManifest,
}

/// True for ids made of `a-z0-9-_`, not starting with `-`/`_`, not all digits.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.chars().count() <= MAX_ID_CHARS
        && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && !id.starts_with(['-', '_'])
        && !id.bytes().all(|b| b.is_ascii_digit())
}

/// The original's repo-relative path rule: non-empty, no scheme, host, query or fragment, no
/// leading `/`, no `\`, and no empty, `.` or `..` segment after percent-decoding (a decoded
/// segment may not hold `/` or `\` either). Answers why not.
pub fn repo_path_problem(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("is empty");
    }
    if path.len() > 1024 {
        return Some("is longer than 1024 characters");
    }
    if path.contains("://") || path.starts_with("//") || path.contains(['?', '#']) {
        return Some("must be a path inside the app, not a URL");
    }
    if path.starts_with('/') {
        return Some("must be relative (no leading '/')");
    }
    if path.contains('\\') || path.chars().any(char::is_control) {
        return Some("may not contain '\\' or control characters");
    }
    for segment in path.split('/') {
        let Some(decoded) = percent_decode(segment) else { return Some("has a malformed %-escape") };
        if decoded.is_empty() || decoded == "." || decoded == ".." {
            return Some("may not have empty, '.' or '..' segments");
        }
        if decoded.contains(['/', '\\']) {
            return Some("may not hide '/' or '\\' in a %-escape");
        }
    }
    None
}

fn percent_decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = segment.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn is_colour(s: &str) -> bool {
    s.len() == 7 && s.starts_with('#') && s[1..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// Problems and warnings, each located at a field of `mobius.json`.
#[derive(Default)]
struct Report {
    problems: Vec<String>,
    warnings: Vec<String>,
}

impl Report {
    fn problem(&mut self, field: &str, why: impl std::fmt::Display) {
        self.problems.push(format!("mobius.json › {field}: {why}"));
    }

    fn warn(&mut self, field: &str, why: impl std::fmt::Display) {
        self.warnings.push(format!("mobius.json › {field}: {why}"));
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
    let mut r = Report::default();
    let m = check(&raw, dir_name, &mut r);
    if !r.problems.is_empty() {
        let list = r.problems.iter().map(|m| format!("- {m}")).collect::<Vec<_>>().join("\n");
        return Err(Error::unprocessable("manifest_invalid", format!("mobius.json has problems:\n{list}")));
    }
    Ok(Manifest { warnings: r.warnings, document: super::app_manifest::AppManifest::from_map(raw), ..m })
}

fn check(raw: &Map<String, Value>, dir_name: &str, r: &mut Report) -> Manifest {
    let mut required = |key: &str| -> String {
        match raw.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
            Some(_) => {
                r.problem(key, "must be a non-empty string");
                String::new()
            }
            None => {
                r.problem(key, "is required");
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
            r.problem(
                "id",
                format!(
                    "{id:?} must use only a-z, 0-9, '-' and '_', not start with '-' or '_', not be all digits, \
                     and be at most {MAX_ID_CHARS} characters"
                ),
            );
        } else if id != dir_name {
            r.problem("id", format!("{id:?} must equal the app's folder name {dir_name:?}"));
        }
    }
    if name.chars().count() > MAX_NAME_CHARS {
        r.problem("name", format!("is at most {MAX_NAME_CHARS} characters"));
    }
    if !entry.is_empty() && entry != "index.jsx" {
        r.problem("entry", "must be \"index.jsx\"");
    }
    let previous_id = opt_str(raw, r, "previous_id");
    if let Some(prev) = &previous_id
        && (*prev == id || !valid_id(prev))
    {
        r.problem("previous_id", "must be a valid app id different from `id`");
    }
    let icon = opt_str(raw, r, "icon");
    if let Some(why) = icon.as_deref().and_then(repo_path_problem) {
        r.problem("icon", why);
    }
    let theme_color = colour(raw, r, "theme_color");
    let background_color = colour(raw, r, "background_color").or_else(|| theme_color.clone());
    let display = match opt_str(raw, r, "display").map(|d| d.trim().to_ascii_lowercase()) {
        Some(d) if ["standalone", "fullscreen", "minimal-ui", "browser"].contains(&d.as_str()) => Some(d),
        Some(d) => {
            r.warn("display", format!("{d:?} is not standalone, fullscreen, minimal-ui or browser; ignored"));
            None
        }
        None => None,
    };
    let offline_capable = opt_bool(raw, r, "offline_capable");
    let embeds_agent = opt_bool(raw, r, "embeds_agent");
    let system_app = opt_bool(raw, r, "system_app");

    let permissions = object(raw, r, "permissions");
    let (cross_app_access, share_with_apps) = check_permissions(&permissions, r);
    check_requires(raw, r);
    check_capabilities(raw, r);
    check_public_access(raw, r);
    let (offline, offline_precache) = check_offline(raw, r);
    let storage_seeds = check_seeds(raw, r);
    let static_assets = check_static_assets(raw, r);
    let schedule = check_schedule(raw, r);
    let initialize_on_install = schedule.is_some()
        && raw.get("schedule").and_then(|s| s.get("initialize_on_install")).and_then(Value::as_bool).unwrap_or(false);
    let source_files = check_source_files(raw, r, schedule.as_ref().and_then(|s| s.job.as_deref()));
    check_skills(raw, r, &source_files);
    if let Some(prompt) = opt_str(raw, r, "system_prompt") {
        if !system_app {
            r.problem("system_prompt", "needs `system_app: true`");
        }
        let bare = !prompt.contains(['/', '\\'])
            && !prompt.contains("..")
            && !prompt.starts_with('.')
            && prompt.ends_with(".md")
            && prompt != ".md";
        if !bare {
            r.problem("system_prompt", "must be a bare <name>.md file");
        } else if !source_files.contains(&prompt) {
            r.problem("system_prompt", format!("{prompt:?} must also be listed in `source_files`"));
        }
    }
    for key in raw.keys() {
        if !KNOWN_FIELDS.contains(&key.as_str()) && !DECORATIVE.contains(&key.as_str()) {
            r.warn(key, "is not a field of mobius.json; ignored");
        }
    }
    Manifest {
        id,
        name,
        version,
        description,
        icon,
        theme_color,
        background_color,
        display,
        offline_capable,
        embeds_agent,
        cross_app_access,
        share_with_apps,
        permissions,
        storage_seeds,
        previous_id,
        static_assets,
        offline,
        offline_precache,
        schedule,
        initialize_on_install,
        warnings: Vec::new(),
        document: Default::default(),
    }
}

const KNOWN_FIELDS: &[&str] = &[
    "id",
    "name",
    "version",
    "description",
    "entry",
    "previous_id",
    "icon",
    "theme_color",
    "background_color",
    "display",
    "offline_capable",
    "embeds_agent",
    "system_app",
    "permissions",
    "requires",
    "capabilities",
    "public_access",
    "offline",
    "schedule",
    "storage_seeds",
    "static_assets",
    "source_files",
    "skills",
    "system_prompt",
];

fn opt_str(raw: &Map<String, Value>, r: &mut Report, key: &str) -> Option<String> {
    match raw.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            r.problem(key, "must be a string");
            None
        }
    }
}

fn opt_bool(raw: &Map<String, Value>, r: &mut Report, key: &str) -> bool {
    match raw.get(key) {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            r.problem(key, "must be true or false");
            false
        }
    }
}

/// A `#rrggbb` colour; anything else is dropped with a warning (the original drops it silently).
fn colour(raw: &Map<String, Value>, r: &mut Report, key: &str) -> Option<String> {
    match raw.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) if is_colour(c.trim()) => Some(c.trim().to_ascii_lowercase()),
        Some(other) => {
            r.warn(key, format!("{other} is not a #rrggbb colour; ignored"));
            None
        }
    }
}

fn object(raw: &Map<String, Value>, r: &mut Report, key: &str) -> Map<String, Value> {
    match raw.get(key) {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => {
            r.problem(key, "must be an object");
            Map::new()
        }
    }
}

fn string_list(raw: &Map<String, Value>, r: &mut Report, key: &str) -> Vec<String> {
    match raw.get(key) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| match item.as_str() {
                Some(s) => Some(s.to_owned()),
                None => {
                    r.problem(&format!("{key}[{i}]"), "must be a string");
                    None
                }
            })
            .collect(),
        Some(_) => {
            r.problem(key, "must be a list");
            Vec::new()
        }
    }
}

fn check_permissions(permissions: &Map<String, Value>, r: &mut Report) -> (String, String) {
    let mut level = |key: &str, allowed: &[&str]| -> String {
        match permissions.get(key) {
            None | Some(Value::Null) => "none".into(),
            Some(Value::String(s)) if allowed.contains(&s.as_str()) => s.clone(),
            Some(_) => {
                r.problem(&format!("permissions.{key}"), format!("must be one of {}", allowed.join(", ")));
                "none".into()
            }
        }
    };
    let cross_app_access = level("cross_app_access", ACCESS_LEVELS);
    let share_with_apps = level("share_with_apps", ACCESS_LEVELS);
    level("shared_memory", ACCESS_LEVELS);
    // Read by `/api/chat-logs` (`chats/logs.rs`).
    level("chat_log_access", &["none", "summary", "summary_with_deleted"]);
    for key in PERMISSION_NAMES {
        match permissions.get(*key) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => {
                r.warn(&format!("permissions.{key}"), "this platform has no such privileged API for apps; no effect")
            }
            Some(_) => r.problem(&format!("permissions.{key}"), "must be true or false"),
        }
    }
    for removed in ["background_agent", "job_authority"] {
        if permissions.contains_key(removed) {
            r.problem(&format!("permissions.{removed}"), "was removed from the platform; drop it");
        }
    }
    (cross_app_access, share_with_apps)
}

fn check_requires(raw: &Map<String, Value>, r: &mut Report) {
    for (i, name) in string_list(raw, r, "requires").iter().enumerate() {
        let field = format!("requires[{i}]");
        if PERMISSION_NAMES.contains(&name.as_str()) {
            r.warn(
                &field,
                format!("{name:?} is not provided by this platform; the parts of the app that need it fail"),
            );
        } else if !LEGACY_REQUIRES.contains(&name.as_str()) {
            r.problem(
                &field,
                format!(
                    "{name:?} is a capability this platform does not know (known: {}); update the platform or drop it",
                    PERMISSION_NAMES.join(", ")
                ),
            );
        }
    }
}

fn check_capabilities(raw: &Map<String, Value>, r: &mut Report) {
    for (id, declaration) in object(raw, r, "capabilities") {
        let field = format!("capabilities.{id}");
        let Some(spec) = CAPABILITIES.iter().find(|c| c.id == id) else {
            let known: Vec<&str> = CAPABILITIES.iter().map(|c| c.id).collect();
            r.problem(&field, format!("Unknown capability (known: {})", known.join(", ")));
            continue;
        };
        let Value::Object(declaration) = declaration else {
            r.problem(&field, "must be an object with `version`");
            continue;
        };
        if declaration.get("version").and_then(Value::as_i64) != Some(CAPABILITY_VERSION) {
            r.problem(&format!("{field}.version"), format!("must be {CAPABILITY_VERSION}"));
        }
        match declaration.get("reason") {
            None | Some(Value::Null) => {}
            Some(Value::String(reason)) if (1..=MAX_REASON_CHARS).contains(&reason.trim().chars().count()) => {}
            Some(_) => r.problem(&format!("{field}.reason"), format!("must be 1 to {MAX_REASON_CHARS} characters")),
        }
        match declaration.get("limits") {
            None | Some(Value::Null) => {}
            Some(Value::Object(limits)) => {
                for (name, value) in limits {
                    let at = format!("{field}.limits.{name}");
                    let Some((_, _, min, max)) = spec.limits.iter().find(|l| l.0 == name) else {
                        r.problem(&at, "is not a limit of this capability");
                        continue;
                    };
                    match value.as_f64() {
                        Some(n) if value.is_number() && n >= *min as f64 && n <= *max as f64 => {}
                        _ => r.problem(&at, format!("must be a number from {min} to {max}")),
                    }
                }
            }
            Some(_) => r.problem(&format!("{field}.limits"), "must be an object"),
        }
        r.warn(&field, "this platform provides no such device capability; opening it answers `unavailable`");
    }
}

fn check_public_access(raw: &Map<String, Value>, r: &mut Report) {
    let public = object(raw, r, "public_access");
    for key in public.keys().filter(|k| *k != "network") {
        r.problem(&format!("public_access.{key}"), "is not allowed (only `network`)");
    }
    let rules = match public.get("network") {
        None | Some(Value::Null) => return,
        Some(Value::Array(rules)) => rules,
        Some(_) => return r.problem("public_access.network", "must be a list of rules"),
    };
    if rules.len() > MAX_PUBLIC_RULES {
        r.problem("public_access.network", format!("has more than {MAX_PUBLIC_RULES} rules"));
    }
    for (i, rule) in rules.iter().enumerate() {
        let at = format!("public_access.network[{i}]");
        let Some(rule) = rule.as_object() else {
            r.problem(&at, "must be an object {origin, path_prefix}");
            continue;
        };
        match rule.get("origin").and_then(Value::as_str) {
            Some(origin) if https_origin(origin) => {}
            _ => r.problem(&format!("{at}.origin"), "must be an exact https:// origin (no credentials, path or query)"),
        }
        match rule.get("path_prefix").and_then(Value::as_str) {
            Some(p) if p.starts_with('/') && !p.contains(['?', '#']) && p.len() <= MAX_PATH_PREFIX_CHARS => {}
            _ => r.problem(
                &format!("{at}.path_prefix"),
                format!("must start with '/', have no '?' or '#', and be at most {MAX_PATH_PREFIX_CHARS} characters"),
            ),
        }
        for key in rule.keys().filter(|k| !["origin", "path_prefix", "query"].contains(&k.as_str())) {
            r.problem(&format!("{at}.{key}"), "is not allowed");
        }
        if let Some(query) = rule.get("query") {
            check_query_rule(query, &format!("{at}.query"), r);
        }
    }
    if !rules.is_empty() {
        r.warn("public_access", "apps are not published anonymously here; no effect");
    }
}

fn https_origin(origin: &str) -> bool {
    let Some(rest) = origin.strip_prefix("https://") else { return false };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    !rest.is_empty() && !rest.contains(['/', '?', '#', '@', ' ', '\\'])
}

fn check_query_rule(query: &Value, at: &str, r: &mut Report) {
    let Some(query) = query.as_object() else { return r.problem(at, "must be an object") };
    let valid_name = |n: &str| {
        (1..=64).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
    };
    let mut names: Vec<String> = Vec::new();
    for (kind, value) in query {
        let here = format!("{at}.{kind}");
        match (kind.as_str(), value) {
            ("allow", Value::Array(list)) => {
                for name in list {
                    match name.as_str() {
                        Some(n) if valid_name(n) => names.push(n.to_owned()),
                        _ => r.problem(&here, "must list parameter names [A-Za-z0-9_.-]{1,64}"),
                    }
                }
            }
            ("exact" | "sha256", Value::Object(map)) => {
                for (name, values) in map {
                    if !valid_name(name) {
                        r.problem(&here, format!("{name:?} is not a valid parameter name"));
                    }
                    names.push(name.clone());
                    let ok = values.as_array().is_some_and(|v| {
                        (1..=8).contains(&v.len())
                            && v.iter().all(|s| {
                                s.as_str().is_some_and(|s| {
                                    if kind == "sha256" {
                                        s.len() == 64
                                            && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                                    } else {
                                        s.len() <= 4096
                                    }
                                })
                            })
                    });
                    if !ok {
                        r.problem(&format!("{here}.{name}"), "must list 1 to 8 values");
                    }
                }
            }
            _ => r.problem(&here, "is not allow (a list), exact or sha256 (objects)"),
        }
    }
    if names.len() > 16 {
        r.problem(at, "names more than 16 parameters");
    }
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    if sorted.len() != names.len() {
        r.problem(at, "names a parameter in more than one constraint");
    }
}

fn check_offline(raw: &Map<String, Value>, r: &mut Report) -> (Option<Map<String, Value>>, Vec<String>) {
    let offline = match raw.get("offline") {
        None | Some(Value::Null) => return (None, Vec::new()),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => {
            r.problem("offline", "must be an object");
            return (None, Vec::new());
        }
    };
    if let Some(v) = offline.get("reads")
        && !v.is_boolean()
    {
        r.problem("offline.reads", "must be true or false");
    }
    if let Some(v) = offline.get("writes")
        && !matches!(v.as_str(), Some("queued" | "none"))
    {
        r.problem("offline.writes", "must be \"queued\" or \"none\"");
    }
    if let Some(v) = offline.get("execution")
        && !matches!(v.as_str(), Some("full" | "partial" | "none"))
    {
        r.problem("offline.execution", "must be full, partial or none");
    }
    let precache = string_list(&offline, r, "precache");
    if precache.len() > MAX_PRECACHE_PATHS {
        r.problem("offline.precache", format!("lists more than {MAX_PRECACHE_PATHS} paths"));
    }
    for (i, path) in precache.iter().enumerate() {
        if let Some(why) = repo_path_problem(path) {
            r.problem(&format!("offline.precache[{i}]"), why);
        }
    }
    (Some(offline), precache)
}

fn check_seeds(raw: &Map<String, Value>, r: &mut Report) -> Map<String, Value> {
    let seeds = object(raw, r, "storage_seeds");
    if seeds.len() > MAX_SEEDS {
        r.problem("storage_seeds", format!("has more than {MAX_SEEDS} entries"));
    }
    for (dest, value) in &seeds {
        let at = format!("storage_seeds.{dest}");
        let dest_ok = !dest.is_empty()
            && !dest.starts_with('/')
            && !dest.split('/').any(|s| s.is_empty() || s == "..")
            && dest.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/'));
        if !dest_ok {
            r.problem(&at, "the destination must be a relative path of letters, digits and . _ - / (no '..')");
        }
        if let Value::String(src) = value
            && let Some(why) = repo_path_problem(src)
        {
            r.problem(&at, format!("a string names a file of the app, and {src:?} {why}"));
        }
    }
    seeds
}

fn check_static_assets(raw: &Map<String, Value>, r: &mut Report) -> Vec<(String, String)> {
    let pairs: Vec<(String, String)> = match raw.get("static_assets") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .filter_map(|(i, item)| match item.as_str() {
                Some(path) => Some((path.to_owned(), path.to_owned())),
                None => {
                    r.problem(&format!("static_assets[{i}]"), "must be a path string");
                    None
                }
            })
            .collect(),
        Some(Value::Object(map)) => map
            .iter()
            .filter_map(|(dest, src)| match src.as_str() {
                Some(src) => Some((dest.clone(), src.to_owned())),
                None => {
                    r.problem(&format!("static_assets.{dest}"), "must map to a path string");
                    None
                }
            })
            .collect(),
        Some(_) => {
            r.problem("static_assets", "must be a list of paths or an object destination → source");
            return Vec::new();
        }
    };
    if pairs.len() > MAX_STATIC_ASSETS {
        r.problem("static_assets", format!("names more than {MAX_STATIC_ASSETS} files"));
    }
    for (dest, src) in &pairs {
        for path in [dest, src] {
            if let Some(why) = repo_path_problem(path) {
                r.problem(&format!("static_assets.{dest}"), format!("{path:?} {why}"));
            }
        }
    }
    pairs
}

/// Checks `schedule`; answers the job schedule it declares (`None` without a job or cadence).
fn check_schedule(raw: &Map<String, Value>, r: &mut Report) -> Option<crate::db::schedules::AppJobSpec> {
    let schedule = object(raw, r, "schedule");
    if schedule.is_empty() {
        return None;
    }
    let mut cron = None;
    if let Some(value) = schedule.get("default").filter(|v| !v.is_null()) {
        match value.as_str().map(|c| (c, crate::cadence::Cadence::parse(c, true))) {
            Some((c, _)) if c.trim_start().starts_with('-') => {
                r.problem("schedule.default", "must be 5 cron fields of digits and * / , - (no names, no @daily)");
            }
            Some((_, Ok(cadence))) => cron = Some(cadence.as_str().to_owned()),
            Some((_, Err(why))) => r.problem(
                "schedule.default",
                format!("must be 5 cron fields of digits and * / , - (no names, no @daily): {why}"),
            ),
            None => r.problem("schedule.default", "must be 5 cron fields of digits and * / , - (no names, no @daily)"),
        }
    }
    let job = match schedule.get("job") {
        None | Some(Value::Null) => None,
        Some(Value::String(j)) if !j.contains('/') && repo_path_problem(j).is_none() => Some(j.clone()),
        Some(_) => {
            r.problem("schedule.job", "must be a bare file name");
            None
        }
    };
    for key in ["user_configurable", "initialize_on_install"] {
        if let Some(v) = schedule.get(key)
            && !v.is_boolean()
            && !v.is_null()
        {
            r.problem(&format!("schedule.{key}"), "must be true or false");
        }
    }
    if schedule.get("initialize_on_install").and_then(Value::as_bool) == Some(true) && job.is_none() {
        r.problem("schedule.initialize_on_install", "needs `schedule.job`");
    }
    let user_configurable = schedule.get("user_configurable").and_then(Value::as_bool).unwrap_or(false);
    (cron.is_some() || job.is_some()).then_some(crate::db::schedules::AppJobSpec { cron, job, user_configurable })
}

fn check_source_files(raw: &Map<String, Value>, r: &mut Report, job: Option<&str>) -> Vec<String> {
    let files = string_list(raw, r, "source_files");
    if files.len() > MAX_SOURCE_FILES {
        r.problem("source_files", format!("lists more than {MAX_SOURCE_FILES} files"));
    }
    for (i, file) in files.iter().enumerate() {
        let at = format!("source_files[{i}]");
        if let Some(why) = repo_path_problem(file) {
            r.problem(&at, format!("{file:?} {why}"));
            continue;
        }
        let reserved = ["index.jsx", ".gitignore", "init-cron.sh", ".mobius-static-assets.json"]
            .contains(&file.as_str())
            || Some(file.as_str()) == job
            || file.ends_with(".bak")
            || file.starts_with(|c: char| c.is_ascii_digit())
            || ["static/", "dist/", ".build/", "node_modules/"].iter().any(|d| file.starts_with(d));
        if reserved {
            r.problem(&at, format!("{file:?} may not be listed (entry, job, generated or reserved file)"));
        }
    }
    files
}

fn check_skills(raw: &Map<String, Value>, r: &mut Report, source_files: &[String]) {
    let skills = string_list(raw, r, "skills");
    if skills.len() > MAX_SKILLS {
        r.problem("skills", format!("lists more than {MAX_SKILLS} files"));
    }
    for (i, skill) in skills.iter().enumerate() {
        let at = format!("skills[{i}]");
        let ok = skill.ends_with(".md")
            && skill.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && skill.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'));
        if !ok {
            r.problem(&at, format!("{skill:?} must be a root-level lowercase .md file"));
        } else if !source_files.contains(skill) {
            r.problem(&at, format!("{skill:?} must also be listed in `source_files`"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r##"{"id":"counter","name":"Counter","version":"1.0.0","description":"Counts.","entry":"index.jsx",
        "author":"someone","icon":"icon.png","theme_color":"#112233","display":"standalone","offline_capable":true,
        "permissions":{"cross_app_access":"read"},"storage_seeds":{"state.json":{"n":0}}}"##;

    #[test]
    fn a_catalog_style_manifest_parses_and_decorative_keys_are_kept_but_ignored() {
        let m = parse(GOOD, "counter").expect("valid");
        assert_eq!(m.id, "counter");
        assert!(m.offline_capable);
        assert_eq!(m.cross_app_access, "read");
        assert_eq!(m.share_with_apps, "none");
        assert_eq!(m.document.author().as_deref(), Some("someone"));
        assert_eq!(m.storage_seeds["state.json"]["n"], 0);
        assert_eq!(m.background_color.as_deref(), Some("#112233"), "defaults to theme_color");
        assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    }

    #[test]
    fn every_problem_is_listed_with_its_field() {
        let bad = r##"{"id":"Counter","version":"","entry":"main.js",
            "permissions":{"cross_app_access":"all","job_authority":true,"github_access":"yes"},"requires":["teleport", 3],
            "storage_seeds":{"../x":1},"schedule":{"default":"every minute","user_configurable":"no"},
            "capabilities":{"media.telepathy":{"version":1},"media.speech":{"version":2,"limits":{"max_text_chars":true}}},
            "public_access":{"network":[{"origin":"http://x.example","path_prefix":"api"}],"other":1},
            "offline":{"reads":"yes","precache":["../secret"]},"static_assets":{"a.png":"/etc/passwd"},
            "source_files":["init-cron.sh","lib%2F..%2Fx.js"],"skills":["Guide.md"]}"##;
        let err = parse(bad, "counter").expect_err("invalid").to_string();
        for needle in [
            "mobius.json › name: is required",
            "mobius.json › version: must be a non-empty string",
            "mobius.json › description: is required",
            "mobius.json › entry: must be \"index.jsx\"",
            "mobius.json › id: \"Counter\" must use only",
            "permissions.cross_app_access: must be one of",
            "permissions.job_authority: was removed",
            "permissions.github_access: must be true or false",
            "requires[0]: \"teleport\" is a capability this platform does not know",
            "requires[1]: must be a string",
            "storage_seeds.../x",
            "schedule.default: must be 5 cron fields",
            "schedule.user_configurable: must be true or false",
            "capabilities.media.telepathy: Unknown capability",
            "capabilities.media.speech.version: must be 1",
            "capabilities.media.speech.limits.max_text_chars: must be a number",
            "public_access.other: is not allowed",
            "public_access.network[0].origin",
            "public_access.network[0].path_prefix",
            "offline.reads: must be true or false",
            "offline.precache[0]: may not have empty, '.' or '..' segments",
            "static_assets.a.png: \"/etc/passwd\" must be relative",
            "source_files[0]: \"init-cron.sh\" may not be listed",
            "source_files[1]: \"lib%2F..%2Fx.js\" may not hide",
            "skills[0]: \"Guide.md\" must be a root-level lowercase .md file",
        ] {
            assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
        }
    }

    #[test]
    fn the_originals_whole_vocabulary_is_accepted_and_fields_without_effect_warn() {
        let original = r##"{"id":"journal","name":"Journal","version":"2.1.0","description":"Daily notes.","entry":"index.jsx",
            "previous_id":"diary","theme_color":"red","display":"Fullscreen","embeds_agent":true,"system_app":true,
            "system_prompt":"prompt.md","source_files":["prompt.md","guide.md","lib/util.js"],"skills":["guide.md"],
            "permissions":{"shared_memory":"read","chat_log_access":"summary","github_access":true,"manage_apps":false},
            "requires":["github_access","storage"],
            "capabilities":{"media.microphone.capture":{"version":1,"reason":"Dictation","limits":{"max_duration_ms":20000}}},
            "public_access":{"network":[{"origin":"https://api.example.com","path_prefix":"/v1/","query":{"allow":["q"],"sha256":{"k":["0000000000000000000000000000000000000000000000000000000000000000"]}}}]},
            "offline":{"reads":true,"writes":"queued","execution":"partial","precache":["static/logo.png"]},
            "schedule":{"default":"0 7 * * *","job":"job.sh","user_configurable":true,"initialize_on_install":true},
            "static_assets":["static/logo.png"],"storage_seeds":{"notes/welcome.json":"seed/welcome.json"},
            "tags":["notes"],"runtime":{"imports":[]},"color":"blue"}"##;
        let m = parse(original, "journal").expect("the original's vocabulary is valid");
        assert_eq!(m.previous_id.as_deref(), Some("diary"));
        assert!(m.embeds_agent);
        assert_eq!(m.display.as_deref(), Some("fullscreen"));
        assert_eq!(m.theme_color, None);
        assert_eq!(m.offline_precache, ["static/logo.png"]);
        assert_eq!(m.static_assets, [("static/logo.png".to_owned(), "static/logo.png".to_owned())]);
        let schedule = m.schedule.clone().expect("the schedule registers");
        assert_eq!(
            (schedule.cron.as_deref(), schedule.job.as_deref(), schedule.user_configurable),
            (Some("0 7 * * *"), Some("job.sh"), true)
        );
        assert!(m.initialize_on_install);
        let warnings = m.warnings.join("\n");
        for needle in [
            "theme_color: \"red\" is not a #rrggbb colour; ignored",
            "permissions.github_access: this platform has no such privileged API",
            "requires[0]: \"github_access\" is not provided",
            "capabilities.media.microphone.capture: this platform provides no such device capability",
            "public_access: apps are not published anonymously here",
            "color: is not a field of mobius.json",
        ] {
            assert!(warnings.contains(needle), "missing {needle:?} in:\n{warnings}");
        }
        assert!(!warnings.contains("chat_log_access"), "chat_log_access has its effect: {warnings}");
        assert!(!warnings.contains("tags") && !warnings.contains("runtime"), "decorative keys stay quiet");
        assert!(!warnings.contains("schedule"), "schedules run here: {warnings}");
        assert!(!warnings.contains("skills") && !warnings.contains("system_"), "they have effect: {warnings}");
        assert!(!warnings.contains("manage_apps") && !warnings.contains("requires[1]"), "{warnings}");
    }

    #[test]
    fn id_and_path_rules() {
        assert!(valid_id("my-app_2"));
        assert!(valid_id("settings"), "the original has no reserved ids");
        for bad in ["", "-x", "_x", "123", "Has-Caps", "a/b", "a.b", &"x".repeat(129)] {
            assert!(!valid_id(bad), "{bad:?}");
        }
        let other = GOOD.replace("\"id\":\"counter\"", "\"id\":\"other\"");
        assert!(parse(&other, "counter").expect_err("mismatch").to_string().contains("folder name"));
        assert!(parse("[1,2]", "x").is_err());
        assert!(parse("{\"id\":", "x").expect_err("syntax").to_string().contains("line 1"));
        assert_eq!(repo_path_problem("static/a b.png"), None);
        for bad in ["", "/a", "a//b", "./a", "a/../b", "%2e%2e/b", "https://x/y", "a?b", "a\\b", "%zz"] {
            assert!(repo_path_problem(bad).is_some(), "{bad:?}");
        }
    }
}
