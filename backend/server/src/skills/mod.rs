//! The skills index: the built-in skills (`skill/skills/*.md`, part of the release) and the
//! ones the agent writes under `DATA_DIR/skills/` (`<name>.md`, or `<name>/SKILL.md`), with
//! name, description, origin and when a turn last read one. The agent's folder is watched
//! (`notify`); changes are debounced and the folder rescanned within bounds, without a
//! restart. A skill file that cannot be used (too large, not text, no description, an
//! unclosed frontmatter) is listed with what is wrong and left out of prompts. `GET /api/skills`
//! in `routes.rs`.

pub mod routes;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use crate::locks::{Unpoisoned, UnpoisonedRw};
use serde::Serialize;
use tokio::sync::mpsc;
use tracing::{info, warn};

/// Agent-written skills indexed at most (the rest, by name, are left out and reported).
pub const MAX_AGENT_SKILLS: usize = 64;
/// Largest skill file read, in bytes.
pub const MAX_SKILL_FILE_BYTES: u64 = 256 * 1024;
/// Quiet spell after a change before the folder is rescanned.
pub const RESCAN_DEBOUNCE: Duration = Duration::from_millis(200);
/// Longest description kept, in characters.
const MAX_DESCRIPTION_CHARS: usize = 200;

/// Where a skill came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Shipped with Möbius.
    BuiltIn,
    /// Written by the agent under `DATA_DIR/skills/`.
    Agent,
    /// Named by an installed app's `mobius.json` (`skills`): it goes with the app.
    App,
}

/// One indexed skill.
#[derive(Clone, Debug, Serialize)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub origin: Origin,
    pub path: String,
    /// When a turn last read it (unix milliseconds), since the server started.
    pub last_used: Option<i64>,
    /// Why the file cannot be used; such a skill is not offered to the agent.
    pub error: Option<String>,
}

/// The index, shared by the routes, the turns and the watcher.
#[derive(Debug)]
pub struct Skills {
    builtin: Vec<Skill>,
    agent: RwLock<Vec<Skill>>,
    /// Agent skills beyond [`MAX_AGENT_SKILLS`] at the last scan.
    left_out: RwLock<usize>,
    used: Mutex<HashMap<String, i64>>,
    agent_dir: PathBuf,
}

impl Skills {
    /// Scans both folders once.
    pub fn new(builtin_dir: &Path, agent_dir: PathBuf) -> Self {
        let builtin = scan_builtin(builtin_dir);
        let (agent, left_out) = scan_agent(&agent_dir);
        Self {
            builtin,
            agent: RwLock::new(agent),
            left_out: RwLock::new(left_out),
            used: Mutex::new(HashMap::new()),
            agent_dir,
        }
    }

    /// The agent's skills folder.
    pub fn agent_dir(&self) -> &Path {
        &self.agent_dir
    }

    /// Every skill (built-in first, then the agent's, each by name) and how many agent skills
    /// were left out.
    pub fn list(&self) -> (Vec<Skill>, usize) {
        let used = self.used.locked().clone();
        let agent = self.agent.read_locked().clone();
        let mut all: Vec<Skill> = self.builtin.iter().cloned().chain(agent).collect();
        for skill in &mut all {
            skill.last_used = used.get(&skill.path).copied();
        }
        (all, *self.left_out.read_locked())
    }

    /// The agent-written skills for a new chat's prompt (usable ones only), or `None`.
    pub fn prompt_section(&self) -> Option<String> {
        let agent = self.agent.read_locked();
        let lines: Vec<String> = agent
            .iter()
            .filter(|s| s.error.is_none())
            .map(|s| format!("- {} — {} ({})", s.name, s.description, s.path))
            .collect();
        if lines.is_empty() {
            return None;
        }
        Some(format!(
            "\n## Skills you wrote\n\nYour own skills in {} (read the file when the task calls for it; write new ones \
             there as `<name>.md` with a `description:` frontmatter line):\n\n{}\n",
            self.agent_dir.display(),
            lines.join("\n")
        ))
    }

    /// Notes that a turn read a skill: `text` is a tool call's input (a path or a command).
    pub fn touch(&self, text: &str, now: i64) {
        if !text.contains(".md") {
            return;
        }
        let agent = self.agent.read_locked();
        // By absolute path, or by its last two parts (`skills/x.md`, `x/SKILL.md`) for a path
        // relative to the agent's working directory.
        let tail = |path: &str| {
            let mut parts = path.rsplitn(3, '/');
            let (last, parent) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
            format!("{parent}/{last}")
        };
        let hit = self
            .builtin
            .iter()
            .chain(agent.iter())
            .find(|s| text.contains(&s.path) || text.contains(&tail(&s.path)))
            .map(|s| s.path.clone());
        drop(agent);
        if let Some(path) = hit {
            self.used.locked().insert(path, now);
        }
    }

    /// Rescans the agent's folder; answers the skill folders in it (to watch).
    fn rescan(&self) -> Vec<PathBuf> {
        let (agent, left_out) = scan_agent(&self.agent_dir);
        let folders = agent
            .iter()
            .filter_map(|s| Path::new(&s.path).parent().filter(|p| *p != self.agent_dir).map(Path::to_path_buf))
            .collect();
        *self.agent.write_locked() = agent;
        *self.left_out.write_locked() = left_out;
        folders
    }

    /// Watches the agent's folder (created if missing) and rescans it after each quiet spell
    /// of [`RESCAN_DEBOUNCE`]. A watcher that cannot start is logged; the index then stays as
    /// scanned at start-up. The folder and each skill folder in it are watched on their own
    /// (not recursively, no link followed): the agent's tree cannot make the server watch
    /// more than [`MAX_AGENT_SKILLS`] + 1 folders.
    pub fn watch(self: &Arc<Self>) {
        if let Err(e) = std::fs::create_dir_all(&self.agent_dir) {
            warn!(error = %e, "the agent's skills folder cannot be created");
            return;
        }
        // One pending poke is enough: every rescan reads the whole folder.
        let (poke, mut poked) = mpsc::channel::<()>(1);
        let config = notify::Config::default().with_follow_symlinks(false);
        let watcher = <notify::RecommendedWatcher as notify::Watcher>::new(
            move |event: notify::Result<notify::Event>| {
                if event.is_ok_and(|e| !matches!(e.kind, notify::EventKind::Access(_))) {
                    let _ = poke.try_send(());
                }
            },
            config,
        );
        let mut watcher = match watcher {
            Ok(w) => w,
            Err(e) => {
                warn!(error = %e, "skills are not watched; new skills need a restart");
                return;
            }
        };
        use notify::Watcher;
        if let Err(e) = watcher.watch(&self.agent_dir, notify::RecursiveMode::NonRecursive) {
            warn!(error = %e, "skills are not watched; new skills need a restart");
            return;
        }
        // The scan at start-up may have missed a change made before the watch began.
        let mut watched = self.rescan();
        for folder in &watched {
            let _ = watcher.watch(folder, notify::RecursiveMode::NonRecursive);
        }
        let skills = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut watcher = watcher;
            while poked.recv().await.is_some() {
                // Debounce: wait until the folder has been quiet for a moment.
                loop {
                    tokio::time::sleep(RESCAN_DEBOUNCE).await;
                    if poked.try_recv().is_err() {
                        break;
                    }
                }
                let Some(index) = skills.upgrade() else { break };
                let rescanned = tokio::task::spawn_blocking(move || {
                    let folders = index.rescan();
                    (index.list().0.len(), folders)
                })
                .await;
                if let Ok((count, folders)) = rescanned {
                    for gone in watched.iter().filter(|f| !folders.contains(f)) {
                        let _ = watcher.unwatch(gone);
                    }
                    for folder in folders.iter().filter(|f| !watched.contains(f)) {
                        let _ = watcher.watch(folder, notify::RecursiveMode::NonRecursive);
                    }
                    watched = folders;
                    info!(skills = count, "skills index updated");
                }
            }
        });
    }
}

/// The built-in skills: `*.md` in `dir`.
fn scan_builtin(dir: &Path) -> Vec<Skill> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut skills: Vec<Skill> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .filter_map(|path| {
            let name = path.file_stem()?.to_string_lossy().into_owned();
            Some(read_skill(name, &path, Origin::BuiltIn))
        })
        .collect();
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    skills
}

/// Entries of the agent's skills folder looked at, at most.
const MAX_AGENT_SKILL_ENTRIES: usize = 4096;

/// The agent's skills: `<name>.md` and `<name>/SKILL.md` in `dir`, at most
/// [`MAX_AGENT_SKILLS`] by name; answers them and how many were left out. The folder is the
/// agent's: it is read through `safe_fs` (links are not skills; a FIFO or device is never
/// opened; every file is read up to [`MAX_SKILL_FILE_BYTES`]).
fn scan_agent(dir: &Path) -> (Vec<Skill>, usize) {
    use crate::safe_fs::Kind;
    let Ok(folder) = crate::safe_fs::Dir::open(dir) else { return (Vec::new(), 0) };
    let entries = match folder.entries(MAX_AGENT_SKILL_ENTRIES) {
        Ok(entries) => entries,
        Err(e) => {
            warn!(error = %e, "the agent's skills folder cannot be listed");
            return (Vec::new(), 0);
        }
    };
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    for entry in entries {
        let name = entry.name.to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let rel = PathBuf::from(&entry.name);
        if entry.kind == Kind::File && rel.extension().is_some_and(|x| x == "md") {
            let stem = rel.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or(name);
            found.push((stem, rel));
        } else if entry.kind == Kind::Dir
            && folder
                .sub(&rel)
                .is_ok_and(|d| d.kind(std::ffi::OsStr::new("SKILL.md")).ok().flatten() == Some(Kind::File))
        {
            found.push((name, rel.join("SKILL.md")));
        }
    }
    found.sort();
    let left_out = found.len().saturating_sub(MAX_AGENT_SKILLS);
    found.truncate(MAX_AGENT_SKILLS);
    if left_out > 0 {
        warn!(left_out, "more agent skills than the index keeps");
    }
    let skills = found
        .into_iter()
        .map(|(name, rel)| {
            let text = folder.read(&rel, MAX_SKILL_FILE_BYTES).map_err(|e| match crate::safe_fs::refusal(&e) {
                Some(crate::safe_fs::Refused::TooLarge(..)) => {
                    format!("is larger than {} KiB", MAX_SKILL_FILE_BYTES / 1024)
                }
                Some(refused) => format!("cannot be read: {refused}"),
                None => format!("cannot be read: {e}"),
            });
            skill_of(name, &dir.join(&rel), Origin::Agent, text)
        })
        .collect();
    (skills, left_out)
}

/// Reads one built-in skill file (shipped with the release); a problem becomes its `error`.
fn read_skill(name: String, path: &Path, origin: Origin) -> Skill {
    let text = match std::fs::metadata(path) {
        Ok(meta) if meta.len() > MAX_SKILL_FILE_BYTES => {
            Err(format!("is larger than {} KiB", MAX_SKILL_FILE_BYTES / 1024))
        }
        Ok(_) => std::fs::read(path).map_err(|e| format!("cannot be read: {e}")),
        Err(e) => Err(format!("cannot be read: {e}")),
    };
    let shown = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    skill_of(name, &shown, origin, text)
}

/// A skill from its file's bytes (or why they could not be read).
pub fn skill_of(name: String, path: &Path, origin: Origin, bytes: Result<Vec<u8>, String>) -> Skill {
    let shown = path.display().to_string();
    let mut skill = Skill { name, description: String::new(), origin, path: shown, last_used: None, error: None };
    match bytes.and_then(parse_skill) {
        Ok((name, description)) => {
            if let Some(name) = name {
                skill.name = name;
            }
            skill.description = description;
        }
        Err(why) => skill.error = Some(why),
    }
    skill
}

/// A skill's frontmatter `name` (if any) and its description: the frontmatter's
/// `description:`, else the first prose line.
fn parse_skill(bytes: Vec<u8>) -> Result<(Option<String>, String), String> {
    let text = String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_owned())?;
    let field = |fm: &str, key: &str| {
        fm.lines()
            .find_map(|l| l.trim().strip_prefix(key).and_then(|rest| rest.trim_start().strip_prefix(':')))
            .map(|v| v.trim().trim_matches(['"', '\'']).to_owned())
            .filter(|v| !v.is_empty())
    };
    let (name, description) = match text.strip_prefix("---") {
        Some(rest) => {
            let Some((frontmatter, _)) = rest.split_once("\n---") else {
                return Err("has a frontmatter that is never closed (`---`)".into());
            };
            (field(frontmatter, "name"), field(frontmatter, "description"))
        }
        None => (None, None),
    };
    let description = description.or_else(|| {
        text.lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("---"))
            .map(str::to_owned)
    });
    let description = description.ok_or_else(|| "has no description".to_owned())?;
    let name = name.filter(|n| n.chars().all(|c| c.is_alphanumeric() || "-_. ".contains(c)) && n.len() <= 64);
    Ok((name, description.chars().take(MAX_DESCRIPTION_CHARS).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_are_read_with_their_problems_reported() {
        let dir = tempfile::tempdir().expect("tmp");
        let agent = dir.path().join("skills");
        std::fs::create_dir_all(agent.join("deploy")).expect("dir");
        std::fs::write(agent.join("charts.md"), "---\ndescription: Draw charts with recharts\n---\n# Charts\n")
            .expect("charts");
        std::fs::write(agent.join("deploy/SKILL.md"), "---\nname: deploy-app\ndescription: 'Ship it'\n---\n")
            .expect("deploy");
        std::fs::write(agent.join("broken.md"), "---\ndescription: never closed\n").expect("broken");
        std::fs::write(agent.join("binary.md"), [0xffu8, 0xfe, 0x00]).expect("binary");
        std::fs::write(agent.join("notes.txt"), "not a skill").expect("txt");
        let skills = Skills::new(&dir.path().join("none"), agent.clone());
        let (list, left_out) = skills.list();
        assert_eq!(left_out, 0);
        let by_name: HashMap<&str, &Skill> = list.iter().map(|s| (s.name.as_str(), s)).collect();
        assert_eq!(by_name.len(), 4, "{list:?}");
        assert_eq!(by_name["charts"].description, "Draw charts with recharts");
        assert_eq!(by_name["charts"].origin, Origin::Agent);
        assert_eq!(by_name["deploy-app"].description, "Ship it");
        assert!(by_name["broken"].error.as_deref().is_some_and(|e| e.contains("never closed")));
        assert!(by_name["binary"].error.as_deref().is_some_and(|e| e.contains("UTF-8")));
        let section = skills.prompt_section().expect("section");
        assert!(section.contains("- charts — Draw charts with recharts") && !section.contains("broken"));
        skills.touch(&format!("cat {}", by_name["charts"].path), 42);
        let (list, _) = skills.list();
        assert_eq!(list.iter().find(|s| s.name == "charts").and_then(|s| s.last_used), Some(42));
        assert_eq!(list.iter().find(|s| s.name == "deploy-app").and_then(|s| s.last_used), None);
    }

    #[test]
    fn links_pipes_and_devices_in_the_agents_folder_are_never_read() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().expect("tmp");
        let agent = dir.path().join("skills");
        std::fs::create_dir_all(agent.join("linked")).expect("dir");
        std::fs::write(dir.path().join("secret.key"), "description: the signing key\n").expect("secret");
        symlink(dir.path().join("secret.key"), agent.join("key.md")).expect("link");
        symlink(dir.path().join("secret.key"), agent.join("linked/SKILL.md")).expect("link");
        symlink("/dev/zero", agent.join("zero.md")).expect("zero");
        symlink(dir.path(), agent.join("up")).expect("dir link");
        nix::unistd::mkfifo(&agent.join("pipe.md"), nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("fifo");
        std::fs::write(agent.join("ok.md"), "Does a thing.\n").expect("ok");
        let skills = Skills::new(&dir.path().join("none"), agent);
        let (list, _) = skills.list();
        let names: Vec<&str> = list.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ok"], "only the plain file is a skill: {list:?}");
    }

    #[test]
    fn the_agent_index_is_bounded() {
        let dir = tempfile::tempdir().expect("tmp");
        for i in 0..MAX_AGENT_SKILLS + 3 {
            std::fs::write(dir.path().join(format!("s{i:03}.md")), "Does a thing.\n").expect("skill");
        }
        let skills = Skills::new(&dir.path().join("none"), dir.path().to_path_buf());
        let (list, left_out) = skills.list();
        assert_eq!((list.len(), left_out), (MAX_AGENT_SKILLS, 3));
    }
}
