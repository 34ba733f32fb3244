//! The install review: what an app from a source is and everything it asks for, in plain
//! words, before anything is installed. The same descriptions show what an update changes.
//!
//! A review fetches the source's current release into a throwaway repository (the same
//! SSRF-safe path installs take), reads its `mobius.json` with the manifest contract, renders
//! its icon, and scans its code for the platform services it uses (secrets, the network
//! proxy, agent chats), which no manifest field declares.

use std::path::PathBuf;

use base64::Engine;
use git2::{Oid, Repository};
use serde::Serialize;
use serde_json::Value;

use super::app_manifest::{AppManifest, Permissions};
use super::git::{self, Source};
use super::manifest::{CAPABILITIES, Manifest};
use crate::db;
use crate::error::{Error, Result};
use crate::state::AppState;

/// Side of the icon a review shows.
const REVIEW_ICON_SIZE: u32 = 128;
/// Most bytes of code scanned for the services an app uses, per file and in all.
const MAX_SCANNED_FILE_BYTES: usize = 1024 * 1024;
const MAX_SCANNED_BYTES: usize = 8 * 1024 * 1024;

/// One thing an app asks for, in words the owner understands.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Permission {
    /// Stable key (`storage.cross_app_access`, `network`, `secrets`, `schedule`, `agent.embed`,
    /// `grant.manage_apps`, …) used to compare two versions.
    pub key: String,
    pub title: String,
    pub detail: String,
    /// `info`, `notice` (worth a look) or `warning` (powerful).
    pub level: &'static str,
    /// False when this Möbius does not provide it (the app asks, but gets nothing).
    pub effective: bool,
}

fn ask(key: &str, title: impl Into<String>, detail: impl Into<String>, level: &'static str) -> Permission {
    Permission { key: key.to_owned(), title: title.into(), detail: detail.into(), level, effective: true }
}

/// The boolean grants and `requires` names of the original, with what each would allow.
const GRANTS: &[(&str, &str, &str)] = &[
    (
        "manage_apps",
        "Manage your apps",
        "It can list your apps and ask to install, update or remove apps; each change still shows you a review first.",
    ),
    ("manage_skills", "Change your agent's skills", "It could add or change the procedures your agent follows."),
    ("github_access", "Use your GitHub connection", "It could read and write GitHub on your behalf."),
    ("github_connect", "Connect GitHub", "It could connect a GitHub account to Möbius."),
    ("filesystem_access", "Browse the server's files", "It could read and change files on the server Möbius runs on."),
    ("connections_manage", "Manage connections", "It could add or remove connections to other services."),
    ("connect_manage", "Manage connections", "It could add or remove connections to other services."),
    ("identity_manage", "Manage your Möbius account link", "It could link or unlink your Möbius account."),
    ("railway_manage", "Manage the Railway deployment", "It could change how Möbius is deployed on Railway."),
];

/// Grants this Möbius provides to apps.
const PROVIDED_GRANTS: &[&str] = &["manage_apps"];

/// A five-field cron line in words (common shapes; the line itself otherwise).
pub fn describe_cron(cron: &str) -> String {
    let fields: Vec<&str> = cron.split_whitespace().collect();
    let [minute, hour, day, month, weekday] = fields.as_slice() else { return format!("on the schedule “{cron}”") };
    let number = |s: &str| s.parse::<u32>().ok();
    const DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
    match (number(minute), number(hour), *day, *month, *weekday) {
        (Some(m), Some(h), "*", "*", "*") if m < 60 && h < 24 => format!("every day at {h:02}:{m:02}"),
        (Some(m), Some(h), "*", "*", d) if m < 60 && h < 24 && number(d).is_some_and(|d| d < 7) => {
            format!("every {} at {h:02}:{m:02}", DAYS[number(d).unwrap_or(0) as usize])
        }
        (Some(m), None, "*", "*", "*") if *hour == "*" && m < 60 => format!("every hour at minute {m}"),
        (None, None, "*", "*", "*") if *hour == "*" => match minute.strip_prefix("*/").and_then(number) {
            Some(n) => format!("every {n} minutes"),
            None if *minute == "*" => "every minute".to_owned(),
            None => format!("on the schedule “{cron}”"),
        },
        _ => format!("on the schedule “{cron}”"),
    }
}

/// What the code of an app uses, found by reading it (no manifest field declares these).
#[derive(Debug, Default, Clone, Copy)]
pub struct CodeUse {
    pub secrets: bool,
    pub proxy: bool,
    pub agent_chats: bool,
}

/// Everything `manifest` and the app's code ask of the platform, in plain words.
pub fn permissions(manifest: &AppManifest, code: CodeUse) -> Vec<Permission> {
    let perms = manifest.permissions();
    let level = Permissions::level;
    let mut out = Vec::new();
    match level(&perms.cross_app_access) {
        "read" => out.push(ask(
            "storage.cross_app_access",
            "Read other apps' data",
            "It can read the data of apps that share theirs with other apps.",
            "notice",
        )),
        "write" => out.push(ask(
            "storage.cross_app_access",
            "Read and change other apps' data",
            "It can read and change the data of apps that share theirs with other apps.",
            "warning",
        )),
        _ => {}
    }
    match level(&perms.share_with_apps) {
        "read" => out.push(ask(
            "storage.share_with_apps",
            "Share its data with other apps",
            "Apps allowed to read other apps' data can read this one's.",
            "notice",
        )),
        "write" => out.push(ask(
            "storage.share_with_apps",
            "Let other apps change its data",
            "Apps allowed to change other apps' data can change this one's.",
            "warning",
        )),
        _ => {}
    }
    match level(&perms.shared_memory) {
        "read" => out.push(ask(
            "storage.shared_memory",
            "Read your shared memory",
            "It can read the notes and skills your agent keeps for all chats.",
            "notice",
        )),
        "write" => out.push(ask(
            "storage.shared_memory",
            "Change your shared memory",
            "It can read and change the notes and skills your agent keeps for all chats.",
            "warning",
        )),
        _ => {}
    }
    let origins: Vec<String> = manifest
        .network_rules()
        .iter()
        .filter_map(|rule| rule.get("origin").and_then(Value::as_str))
        .map(|o| o.trim_start_matches("https://").trim_end_matches('/').to_owned())
        .collect();
    if code.proxy || !origins.is_empty() {
        let named = if origins.is_empty() { String::new() } else { format!(" It names {}.", origins.join(", ")) };
        out.push(ask(
            "network",
            "Reach the internet",
            format!("It fetches public web addresses through Möbius (never your private network).{named}"),
            "notice",
        ));
    }
    if code.secrets {
        out.push(ask(
            "secrets",
            "Keep secrets",
            "It can keep secrets such as API keys on this server, sealed; it can replace them but never read them back.",
            "info",
        ));
    }
    if let Some(schedule) = &manifest.schedule {
        let job = schedule.job.as_deref().unwrap_or("its job");
        let when = match schedule.default.as_deref() {
            Some(cron) => format!("Runs {job} {}.", describe_cron(cron)),
            None => format!("Has a job ({job}) that runs when asked."),
        };
        let first = if schedule.initialize_on_install == Some(true) {
            " It also runs once right after it is installed."
        } else {
            ""
        };
        out.push(ask("schedule", "Run on a schedule", format!("{when}{first}"), "notice"));
    }
    if manifest.embeds_agent() {
        out.push(ask(
            "agent.embed",
            "Embed your agent",
            "It shows a chat with your agent inside the app; the agent there can change files and run commands as in any chat.",
            "warning",
        ));
    } else if code.agent_chats {
        out.push(ask(
            "agent.chats",
            "Start chats with your agent",
            "It can start chats with your agent and send them messages.",
            "notice",
        ));
    }
    let requires: Vec<&str> = manifest.requires.iter().flatten().map(String::as_str).collect();
    for (name, title, detail) in GRANTS {
        let granted = perms.grant(name);
        let required = requires.contains(name);
        if !granted && !required {
            continue;
        }
        let effective = PROVIDED_GRANTS.contains(name);
        let needs = if required { " The app says it cannot work without this." } else { "" };
        let missing =
            if effective { "" } else { " This Möbius does not offer it, so those parts of the app will not work." };
        out.push(Permission {
            key: format!("grant.{name}"),
            title: (*title).to_owned(),
            detail: format!("{detail}{needs}{missing}"),
            level: "warning",
            effective,
        });
    }
    match level(&perms.chat_log_access) {
        "none" => {}
        tier => out.push(Permission {
            key: "chat_logs".into(),
            title: "Read your chats".into(),
            detail: format!(
                "It asks to read {} of your chats. This Möbius does not give apps your chats, so it gets nothing.",
                if tier == "summary_with_deleted" { "summaries (deleted ones too)" } else { "summaries" }
            ),
            level: "warning",
            effective: false,
        }),
    }
    if manifest.system_app() && manifest.system_prompt.is_some() {
        out.push(Permission {
            key: "agent.system_prompt".into(),
            title: "Add instructions to your agent".into(),
            detail: "It asks to add its own instructions to every new chat. This Möbius does not do that, so it has no effect.".into(),
            level: "notice",
            effective: false,
        });
    }
    if let Some(capabilities) = &manifest.capabilities {
        for id in capabilities.keys() {
            if let Some(spec) = CAPABILITIES.iter().find(|c| c.id == id) {
                out.push(Permission {
                    key: format!("capability.{id}"),
                    title: spec.title.to_owned(),
                    detail: format!("{} This Möbius does not provide it yet.", spec.description),
                    level: "notice",
                    effective: false,
                });
            }
        }
    }
    if manifest.offline_capable() {
        out.push(ask(
            "offline",
            "Work offline",
            "It keeps working without a connection; changes wait until you are back.",
            "info",
        ));
    }
    out
}

/// How one thing an app asks for differs between two versions.
#[derive(Debug, Clone, Serialize)]
pub struct PermissionChange {
    /// `added`, `removed` or `changed`.
    pub change: &'static str,
    #[serde(flatten)]
    pub permission: Permission,
    /// What it was before (for `changed`).
    pub before: Option<Permission>,
}

/// What `after` asks for that `before` did not, no longer asks for, or asks for differently.
pub fn permission_changes(before: &[Permission], after: &[Permission]) -> Vec<PermissionChange> {
    let mut out = Vec::new();
    for p in after {
        match before.iter().find(|b| b.key == p.key) {
            None => out.push(PermissionChange { change: "added", permission: p.clone(), before: None }),
            Some(b) if b != p => {
                out.push(PermissionChange { change: "changed", permission: p.clone(), before: Some(b.clone()) })
            }
            Some(_) => {}
        }
    }
    for b in before.iter().filter(|b| !after.iter().any(|p| p.key == b.key)) {
        out.push(PermissionChange { change: "removed", permission: b.clone(), before: None });
    }
    out
}

/// Reads the code of `commit` for the services it uses (bounded).
pub fn scan_code(repo: &Repository, commit: Oid) -> CodeUse {
    let mut found = CodeUse::default();
    let Ok(tree) = repo.find_commit(commit).and_then(|c| c.tree()) else { return found };
    let mut budget = MAX_SCANNED_BYTES;
    let _ = tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
        let name = entry.name().unwrap_or_default();
        if root.starts_with("node_modules")
            || !["js", "jsx", "ts", "tsx", "mjs"].iter().any(|x| name.ends_with(&format!(".{x}")))
        {
            return git2::TreeWalkResult::Ok;
        }
        let Ok(blob) = repo.find_blob(entry.id()) else { return git2::TreeWalkResult::Ok };
        let text = blob.content();
        if text.len() > MAX_SCANNED_FILE_BYTES || text.len() > budget {
            return git2::TreeWalkResult::Ok;
        }
        budget -= text.len();
        let text = String::from_utf8_lossy(text);
        found.secrets |= text.contains("/secrets/");
        found.proxy |= text.contains("/api/proxy");
        found.agent_chats |=
            text.contains("mobius.chat") || text.contains("/api/app-chats") || text.contains("chat.start");
        if budget == 0 { git2::TreeWalkResult::Abort } else { git2::TreeWalkResult::Ok }
    });
    found
}

/// The icon of a release as a `data:` PNG of `size`, if it has one that decodes.
pub fn release_icon(repo: &Repository, release: Oid, manifest: &Manifest, size: u32) -> Option<String> {
    let path = manifest.icon.as_deref()?;
    let bytes = git::read_file(repo, release, path).ok()??;
    let png = super::icon::render(&bytes, size, false, manifest.theme_color.as_deref()).ok()?;
    Some(format!("data:image/png;base64,{}", base64::engine::general_purpose::STANDARD.encode(png)))
}

/// An app with the same id on this Möbius.
#[derive(Debug, Clone, Serialize)]
pub struct Existing {
    pub id: i64,
    pub name: String,
    pub version: String,
    /// It was uninstalled; installing brings its kept data back.
    pub uninstalled: bool,
    pub source_url: Option<String>,
}

/// What the owner reviews before installing.
#[derive(Debug, Clone, Serialize)]
pub struct Review {
    /// The source as given, and the release commit reviewed (install with it to get exactly it).
    pub source: String,
    pub commit: String,
    pub id: String,
    pub name: String,
    pub version: String,
    pub description: String,
    pub author: Option<String>,
    pub homepage: Option<String>,
    /// A `data:` PNG, when the app has an icon that decodes.
    pub icon: Option<String>,
    pub theme_color: Option<String>,
    pub permissions: Vec<Permission>,
    /// Manifest fields accepted without an effect here.
    pub warnings: Vec<String>,
    pub existing: Option<Existing>,
}

/// Fetches `source` (under the public policy) and describes its current release.
pub async fn review(state: &AppState, source: Source, label: String) -> Result<Review> {
    if let Source::Url(url) = &source {
        super::ssrf::check_url(url).await?;
    }
    let _permit = state
        .lifecycle
        .reviews
        .acquire()
        .await
        .map_err(|_| Error::unavailable("shutting_down", "Möbius is stopping."))?;
    let root: PathBuf = state.config.data_dir.join("run").join("reviews");
    std::fs::create_dir_all(&root)?;
    let mut review = tokio::task::spawn_blocking(move || -> Result<Review> {
        let staging = tempfile::Builder::new().prefix("review-").tempdir_in(&root)?;
        let repo = git::open_or_init(staging.path())?;
        let release = git::fetch_release(&repo, &source)?;
        describe(&repo, release, label)
    })
    .await
    .map_err(|e| Error::Internal(format!("review task: {e}")))??;
    if let Some(app) = db::apps::by_slug(&state.db.read, &review.id)
        .await?
        .filter(|a| a.bundle_sha.is_some() || a.deleted_at.is_some())
    {
        review.existing = Some(Existing {
            id: app.id,
            name: app.name,
            version: app.version,
            uninstalled: app.deleted_at.is_some(),
            source_url: app.source_url,
        });
    }
    Ok(review)
}

/// The review of `release` in `repo`.
pub fn describe(repo: &Repository, release: Oid, source: String) -> Result<Review> {
    let m = super::apply::release_manifest(repo, release)?;
    let code = scan_code(repo, release);
    Ok(Review {
        source,
        commit: release.to_string(),
        author: m.document.author().or_else(|| git::commit_author(repo, release)),
        homepage: m.document.homepage().map(str::to_owned),
        icon: release_icon(repo, release, &m, REVIEW_ICON_SIZE),
        theme_color: m.theme_color.clone(),
        permissions: permissions(&m.document, code),
        warnings: m.warnings.clone(),
        id: m.id,
        name: m.name,
        version: m.version,
        description: m.description,
        existing: None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn permissions_read_plainly_and_changes_are_found() {
        let before = json!({
            "permissions": { "cross_app_access": "read" },
            "schedule": { "default": "0 7 * * *", "job": "job.sh" },
        });
        let after = json!({
            "permissions": { "cross_app_access": "write", "manage_apps": true, "chat_log_access": "summary" },
            "embeds_agent": true,
            "requires": ["github_access"],
        });
        let b = permissions(&serde_json::from_value(before).expect("a manifest"), CodeUse::default());
        let a = permissions(
            &serde_json::from_value(after).expect("a manifest"),
            CodeUse { secrets: true, proxy: true, agent_chats: false },
        );
        assert_eq!(b[1].detail, "Runs job.sh every day at 07:00.");
        let keys: Vec<&str> = a.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "storage.cross_app_access",
                "network",
                "secrets",
                "agent.embed",
                "grant.manage_apps",
                "grant.github_access",
                "chat_logs"
            ]
        );
        assert!(
            a.iter()
                .find(|p| p.key == "grant.github_access")
                .is_some_and(|p| !p.effective && p.detail.contains("cannot work without"))
        );
        let changes = permission_changes(&b, &a);
        let summary: Vec<(&str, &str)> = changes.iter().map(|c| (c.change, c.permission.key.as_str())).collect();
        assert!(summary.contains(&("changed", "storage.cross_app_access")));
        assert!(summary.contains(&("added", "agent.embed")));
        assert!(summary.contains(&("removed", "schedule")));
    }

    #[test]
    fn cron_lines_read_as_words() {
        assert_eq!(describe_cron("30 5 * * *"), "every day at 05:30");
        assert_eq!(describe_cron("0 * * * *"), "every hour at minute 0");
        assert_eq!(describe_cron("*/15 * * * *"), "every 15 minutes");
        assert_eq!(describe_cron("0 9 * * 1"), "every Monday at 09:00");
        assert_eq!(describe_cron("0 9 1 * *"), "on the schedule “0 9 1 * *”");
    }
}
