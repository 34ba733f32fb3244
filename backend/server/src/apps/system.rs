//! What installed apps add to the agent (`app-platform-contract.md` §3.11): a system app's
//! `system_prompt` joins the prompt of every chat that starts while it is installed (in app-id
//! order, each under a line naming its app), and an app's `skills` join the agent's skills index.
//!
//! Both are read from the app's repository at its live commit (`source_commit`: what the owner
//! installed or the agent applied), never from the agent's working folder, so an edit that was
//! not applied changes nothing; they are read when asked (a new chat's prompt, the skills
//! list), so they leave with the app without anything to clean up.

use std::path::{Path, PathBuf};

use sqlx::SqlitePool;

use crate::db::apps::AppRow;
use crate::error::Result;
use crate::skills::{Origin, Skill};

/// The largest `system_prompt` or skill file read (the original's limit).
pub const MAX_APP_PROMPT_BYTES: usize = 256 * 1024;
/// Apps whose additions are read for one chat, at most.
const MAX_APPS: usize = 64;

/// What the installed apps add.
#[derive(Debug, Default)]
pub struct Additions {
    /// The system apps' prompts, each under a comment naming its app; empty when none.
    pub prompt: String,
    /// The apps' skills (their files in the apps' folders, which the agent reads).
    pub skills: Vec<Skill>,
}

/// Reads what the live apps add, from their repositories (blocking work off the async threads).
pub async fn additions(read: &SqlitePool, data_dir: &Path) -> Result<Additions> {
    let mut apps: Vec<AppRow> = crate::db::apps::list(read)
        .await?
        .into_iter()
        .filter(|a| a.source_commit.is_some() && (prompt_file(a).is_some() || skill_names(a).next().is_some()))
        .collect();
    if apps.is_empty() {
        return Ok(Additions::default());
    }
    apps.sort_by_key(|a| a.id);
    apps.truncate(MAX_APPS);
    let data_dir = data_dir.to_path_buf();
    tokio::task::spawn_blocking(move || read_additions(&data_dir, &apps))
        .await
        .map_err(|e| crate::error::Error::Internal(format!("reading the apps' prompts: {e}")))
}

fn prompt_file(app: &AppRow) -> Option<&str> {
    app.manifest.system_app().then_some(app.manifest.system_prompt.as_deref()).flatten()
}

fn skill_names(app: &AppRow) -> impl Iterator<Item = &String> {
    app.manifest.skills.iter().flatten().take(crate::apps::manifest::MAX_SKILLS)
}

fn read_additions(data_dir: &Path, apps: &[AppRow]) -> Additions {
    let mut out = Additions::default();
    for app in apps {
        let Some(commit) = app.source_commit.as_deref().and_then(|c| git2::Oid::from_str(c).ok()) else { continue };
        let repo_dir = data_dir.join(super::worktree::REPOS_DIR).join(&app.slug);
        let ceiling = std::iter::once(repo_dir.parent().map(Path::to_path_buf).unwrap_or_default());
        let Ok(repo) = git2::Repository::open_ext(&repo_dir, git2::RepositoryOpenFlags::NO_SEARCH, ceiling) else {
            continue;
        };
        let read = |name: &str| -> std::result::Result<Vec<u8>, String> {
            match super::git::read_file(&repo, commit, name) {
                Ok(Some(bytes)) if bytes.len() > MAX_APP_PROMPT_BYTES => {
                    Err(format!("is larger than {} KiB", MAX_APP_PROMPT_BYTES / 1024))
                }
                Ok(Some(bytes)) => Ok(bytes),
                Ok(None) => Err("is not in the app's installed version".to_owned()),
                Err(e) => Err(format!("cannot be read: {e}")),
            }
        };
        if let Some(name) = prompt_file(app) {
            match read(name).map(|b| String::from_utf8_lossy(&b).into_owned()) {
                Ok(text) if !text.trim().is_empty() => {
                    let label = app.name.replace("--", "- -");
                    out.prompt.push_str(&format!(
                        "\n<!-- From the system app \"{label}\" (apps/{}/{name}) -->\n{}\n",
                        app.slug,
                        text.trim_end()
                    ));
                }
                Ok(_) => {}
                Err(why) => tracing::warn!(app.id = app.id, why, "a system app's prompt was left out"),
            }
        }
        for name in skill_names(app) {
            let path: PathBuf = data_dir.join("apps").join(&app.slug).join(name);
            let stem = name.trim_end_matches(".md").to_owned();
            out.skills.push(crate::skills::skill_of(stem, &path, Origin::App, read(name)));
        }
    }
    out
}

/// The skills section of a new chat's prompt, or `None` when no app has a usable skill.
pub fn skills_section(skills: &[Skill]) -> Option<String> {
    let lines: Vec<String> = skills
        .iter()
        .filter(|s| s.error.is_none())
        .map(|s| format!("- {} — {} ({})", s.name, s.description, s.path))
        .collect();
    if lines.is_empty() {
        return None;
    }
    Some(format!(
        "\n## Skills of installed apps\n\nRead the file when the task calls for it:\n\n{}\n",
        lines.join("\n")
    ))
}
