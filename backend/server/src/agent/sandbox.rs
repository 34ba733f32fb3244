//! The agent's sandbox: what its processes may touch on disk, and whom they may signal. With
//! Landlock (Linux ≥ 5.13, no privileges needed, allowed by Docker's default profile) every CLI
//! a turn starts, and all it starts in turn, sees only the folders of [`Sandbox::grants`];
//! `secret.key`, `data.key`, `db/`, `run/` and the other provider's credentials stay out of
//! reach. From Landlock ABI 6 each CLI tree (a turn's, a quiet turn's, an app job's) can signal
//! and reach abstract Unix sockets only within itself: not the server, not another turn, not a
//! job. Below that, or without Landlock, the state says so ([`SandboxState`]) and Settings
//! shows it: nothing pretends.

use std::path::{Path, PathBuf};

use mobius_sys::landlock;
use serde::Serialize;

use super::ProviderKind;
use crate::error::{Error, Result};

/// System folders the agent's tools read and execute from (missing ones are skipped).
const SYSTEM_READ_EXEC: &[&str] =
    &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/etc", "/run/systemd/resolve"];
/// Kernel views the runtimes read (`/proc/self`, cgroup limits, CPU counts).
const SYSTEM_READ: &[&str] = &["/proc", "/sys"];
/// Shared scratch and devices the tools write to.
const SYSTEM_READ_WRITE: &[&str] = &["/tmp", "/var/tmp", "/dev"];
/// What the screenshot browser also reads: the system's font cache (without it every start
/// rebuilds one in its profile).
const BROWSER_READ: &[&str] = &["/var/cache/fontconfig"];
/// Folders of `DATA_DIR` the agent works in, read and write (its skills, the owner's memory
/// file and the theme's working copy are its to keep, as the constitution says; the served
/// theme is the server's own copy, see `theme/`).
/// `platform/shell` is the shell's source (see `shell/`); the rest of `platform/` stays closed.
pub const DATA_READ_WRITE: &[&str] =
    &["apps", "app-data", "shared", "agent-home", "skills", "memory", "theme", "platform/shell"];

/// The first Landlock ABI that keeps signals within a domain (Linux 6.12).
pub const SIGNAL_SCOPE_ABI: u32 = 6;

/// What the sandbox is on this server, as Settings shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum SandboxState {
    /// Every agent process is confined by Landlock at this ABI version.
    Landlock {
        abi: u32,
        /// Whether each agent process tree may signal only itself.
        signals: Signals,
    },
    /// The agent runs with the server's own file access; `reason` says why.
    Off { reason: String },
}

/// Whom the agent's processes may signal (stop, kill), as Settings shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Signals {
    /// Only the processes of their own tree (Landlock's signal scope).
    Scoped,
    /// Any process of the server's user, the server included; `reason` says why.
    Open { reason: String },
}

/// Paths a turn's processes may use, by kind of access.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Grants {
    /// Read, list and execute.
    pub read_exec: Vec<PathBuf>,
    /// Read and list.
    pub read: Vec<PathBuf>,
    /// Everything: read, write, create, remove, execute.
    pub read_write: Vec<PathBuf>,
    /// Only list names (no file in it can be opened unless another grant covers it).
    pub list: Vec<PathBuf>,
    /// Generic grants left out because they contain `DATA_DIR` or lie in it.
    pub skipped: Vec<PathBuf>,
}

/// A job's view of the data directory (`schedules/view.rs`), as its sandbox opens it.
#[derive(Clone, Debug, Default)]
pub struct JobView {
    /// The folder the job's `DATA_DIR` names (read).
    pub root: PathBuf,
    /// Its folder the job may write (`cron-logs/`).
    pub writable: PathBuf,
}

/// What a job's sandbox opens for the CLIs it may run: their logins' folders (read, write)
/// and their packages (read, execute).
#[derive(Clone, Debug, Default)]
pub struct JobClis {
    pub logins: Vec<PathBuf>,
    pub packages: Vec<PathBuf>,
}

/// The sandbox of this server: its state and what it grants.
#[derive(Clone, Debug)]
pub struct Sandbox {
    state: SandboxState,
    data_dir: PathBuf,
    /// Extra folders the agent reads (its skills, the libraries apps may import).
    read_only: Vec<PathBuf>,
}

impl Sandbox {
    /// Detects Landlock; `enabled: false` (`MOBIUS_AGENT_SANDBOX=off`) turns the sandbox off,
    /// `max_abi` (`MOBIUS_AGENT_LANDLOCK_MAX_ABI`) holds it to an older ABI.
    pub fn detect(enabled: bool, max_abi: Option<u32>, data_dir: &Path, read_only: Vec<PathBuf>) -> Self {
        let state = if !enabled {
            SandboxState::Off { reason: "turned off by MOBIUS_AGENT_SANDBOX=off".into() }
        } else {
            match landlock::abi_version() {
                Ok(abi) if abi >= 1 => landlock_state(abi, max_abi),
                Ok(abi) => SandboxState::Off { reason: format!("this kernel reports Landlock ABI {abi}") },
                Err(e) => SandboxState::Off {
                    reason: match e.raw_os_error() {
                        Some(libc_enosys) if libc_enosys == nix::libc::ENOSYS => {
                            "this kernel was built without Landlock".into()
                        }
                        Some(off) if off == nix::libc::EOPNOTSUPP => {
                            "Landlock is built into this kernel but turned off at boot (lsm=…)".into()
                        }
                        _ => format!("Landlock is not available: {e}"),
                    },
                },
            }
        };
        Self { state, data_dir: data_dir.to_path_buf(), read_only }
    }

    /// The sandbox's state.
    pub fn state(&self) -> &SandboxState {
        &self.state
    }

    /// What every confined process starts from: the system's programs and the absolute folders
    /// of its `path` (read, execute), the system's files (read) and the shared scratch and devices
    /// (read, write) — each only where it lies outside `DATA_DIR` (`grant_outside`).
    fn system(&self, path: &str) -> Grants {
        let data = &self.data_dir;
        let mut grants = Grants::default();
        let system = SYSTEM_READ_EXEC.iter().copied().chain(path.split(':').filter(|d| d.starts_with('/')));
        for p in system {
            grant_outside(data, &mut grants.read_exec, &mut grants.skipped, PathBuf::from(p));
        }
        for p in SYSTEM_READ {
            grant_outside(data, &mut grants.read, &mut grants.skipped, PathBuf::from(p));
        }
        for p in SYSTEM_READ_WRITE {
            grant_outside(data, &mut grants.read_write, &mut grants.skipped, PathBuf::from(p));
        }
        grants
    }

    /// What a turn of `kind` may use: `cli` is the provider's binary, `home` and `scratch` the
    /// agent's HOME and TMPDIR, `path` its PATH.
    pub fn grants(&self, kind: ProviderKind, cli: &Path, home: &Path, scratch: &Path, path: &str) -> Grants {
        let data = &self.data_dir;
        let mut grants = self.system(path);
        let generic =
            |list: &mut Vec<PathBuf>, skipped: &mut Vec<PathBuf>, p: PathBuf| grant_outside(data, list, skipped, p);
        // A bare name (`claude`) is the one the CLI's PATH finds.
        let cli = if cli.components().count() == 1 {
            path.split(':')
                .map(|dir| Path::new(dir).join(cli))
                .find(|p| p.is_file())
                .unwrap_or_else(|| cli.to_path_buf())
        } else {
            cli.to_path_buf()
        };
        if let Some(root) = package_root(&cli) {
            generic(&mut grants.read_exec, &mut grants.skipped, root);
        }
        if let Ok(exe) = std::env::current_exe() {
            generic(&mut grants.read_exec, &mut grants.skipped, exe);
        }
        for p in &self.read_only {
            generic(&mut grants.read, &mut grants.skipped, p.clone());
        }
        for name in DATA_READ_WRITE {
            grants.read_write.push(data.join(name));
        }
        grants.read_write.push(data.join("cli-auth").join(kind.id()));
        for p in [home, scratch] {
            if !grants.read_write.iter().any(|g| g == p) {
                grants.read_write.push(p.to_path_buf());
            }
        }
        grants.list.push(data.clone());
        grants
    }

    /// What an app's job may use: the system and its `PATH` (read, execute), its app's own
    /// folder (read, execute), its view of the data directory (`schedules/view.rs`: read; its
    /// `cron-logs/` read, write), its state folder and the shared scratch (read, write). Nothing
    /// else of `DATA_DIR`: not other apps, not app storage (a job writes that through the API
    /// with its token), not the database, keys or credentials.
    pub fn job_grants(&self, app_dir: &Path, state_dir: &Path, view: &JobView, path: &str, clis: &JobClis) -> Grants {
        let data = &self.data_dir;
        let mut grants = self.system(path);
        let generic =
            |list: &mut Vec<PathBuf>, skipped: &mut Vec<PathBuf>, p: PathBuf| grant_outside(data, list, skipped, p);
        for p in &clis.packages {
            generic(&mut grants.read_exec, &mut grants.skipped, p.clone());
        }
        grants.read_exec.push(app_dir.to_path_buf());
        grants.read.push(view.root.clone());
        grants.read_write.push(view.writable.clone());
        grants.read_write.push(state_dir.to_path_buf());
        // The connected CLIs' logins, so a job can run `claude -p` / `codex exec` itself (the
        // contract gives jobs `CLAUDE_CONFIG_DIR` and `CODEX_HOME`); a turn's agent has them too.
        for dir in &clis.logins {
            if dir.starts_with(data.join("cli-auth")) {
                grants.read_write.push(dir.clone());
            }
        }
        grants
    }

    /// What a shell build may use: the system and its `PATH` (read, execute), the packages it
    /// resolves in (read, execute), the server's copy of the source it builds and the folder it
    /// writes (read, write). Nothing else of `DATA_DIR`: the build runs the agent's code (its
    /// `vite.config`), so it is held like the agent.
    pub fn shell_build_grants(&self, work: &Path, out: &Path, node_modules: &Path, path: &str) -> Grants {
        let data = &self.data_dir;
        let mut grants = self.system(path);
        let generic =
            |list: &mut Vec<PathBuf>, skipped: &mut Vec<PathBuf>, p: PathBuf| grant_outside(data, list, skipped, p);
        generic(&mut grants.read_exec, &mut grants.skipped, node_modules.to_path_buf());
        grants.read_write.push(work.to_path_buf());
        grants.read_write.push(out.to_path_buf());
        grants
    }

    /// What the screenshot browser may use: the system (read, execute), the browser's own folder
    /// when it lives elsewhere, the kernel views, the shared scratch and devices, the font cache,
    /// and its throwaway profile (read, write). Nothing of `DATA_DIR` but that profile: not the
    /// keys, the database, the logins or any app's files (it reads pages over HTTP like any
    /// browser).
    pub fn browser_grants(&self, browser: &Path, profile: &Path) -> Grants {
        let data = &self.data_dir;
        let mut grants = self.system("");
        let generic =
            |list: &mut Vec<PathBuf>, skipped: &mut Vec<PathBuf>, p: PathBuf| grant_outside(data, list, skipped, p);
        if let Some(dir) = std::fs::canonicalize(browser).ok().and_then(|p| p.parent().map(Path::to_path_buf)) {
            generic(&mut grants.read_exec, &mut grants.skipped, dir);
        }
        for p in BROWSER_READ {
            generic(&mut grants.read, &mut grants.skipped, PathBuf::from(p));
        }
        grants.read_write.push(profile.to_path_buf());
        grants
    }

    /// The Landlock ruleset for `grants`, or `None` when the sandbox is off. Folders of
    /// `DATA_DIR` it grants are created first (a missing one could not be granted) and opened
    /// through `safe_fs`: the agent can write some of their parents (`apps/<id>/job-state`), and
    /// a link it planted there must not become a grant of the link's target. Other missing
    /// paths are skipped.
    pub fn ruleset(&self, grants: &Grants) -> Result<Option<landlock::Ruleset>> {
        let SandboxState::Landlock { abi, .. } = self.state else { return Ok(None) };
        let failed = |e: std::io::Error| Error::Internal(format!("the agent's sandbox could not be built: {e}"));
        let mut rules = landlock::Ruleset::new(abi).map_err(failed)?;
        let all = landlock::all_access(abi);
        let read = landlock::ACCESS_READ_FILE | landlock::ACCESS_READ_DIR;
        let sets: [(&[PathBuf], u64); 4] = [
            (grants.read_exec.as_slice(), read | landlock::ACCESS_EXECUTE),
            (grants.read.as_slice(), read),
            (grants.read_write.as_slice(), all),
            (grants.list.as_slice(), landlock::ACCESS_READ_DIR),
        ];
        for (paths, access) in sets {
            for path in paths {
                let allowed = match path.strip_prefix(&self.data_dir) {
                    Ok(rel) if rel.as_os_str().is_empty() => rules.allow(path, access),
                    Ok(rel) => {
                        let opened = if access == all {
                            crate::safe_fs::Dir::create_under(&self.data_dir, rel)
                        } else {
                            crate::safe_fs::Dir::open_under(&self.data_dir, rel)
                        };
                        match opened {
                            Ok(dir) => rules.allow_fd(dir.fd(), access),
                            Err(e) if crate::safe_fs::refusal(&e).is_some() => {
                                tracing::warn!(path = %path.display(), error = %e, "a grant that is not a plain folder is left out");
                                continue;
                            }
                            Err(e) => Err(e),
                        }
                    }
                    Err(_) => rules.allow(path, access),
                };
                match allowed {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(failed(e)),
                }
            }
        }
        Ok(Some(rules))
    }
}

/// The state of a kernel offering Landlock `kernel_abi`, used up to `max_abi`.
fn landlock_state(kernel_abi: u32, max_abi: Option<u32>) -> SandboxState {
    let abi = max_abi.map_or(kernel_abi, |max| kernel_abi.min(max));
    let signals = if abi >= SIGNAL_SCOPE_ABI {
        Signals::Scoped
    } else if abi < kernel_abi {
        Signals::Open {
            reason: format!(
                "MOBIUS_AGENT_LANDLOCK_MAX_ABI holds Landlock at ABI {abi}; keeping signals in \
                 needs ABI {SIGNAL_SCOPE_ABI} (this kernel has {kernel_abi})"
            ),
        }
    } else {
        Signals::Open {
            reason: format!(
                "this kernel's Landlock is ABI {abi}; keeping signals in needs ABI {SIGNAL_SCOPE_ABI} (Linux 6.12)"
            ),
        }
    };
    SandboxState::Landlock { abi, signals }
}

/// The folder a CLI's code lives in: the folder holding the nearest `node_modules` above the
/// resolved binary (npm installs link `bin/` into the package), else the binary's own folder.
pub fn package_root(cli: &Path) -> Option<PathBuf> {
    // A bare name (`claude`) is the one the server's PATH finds.
    let cli = if cli.components().count() == 1 {
        crate::agent::toolbox::find_on(&std::env::var("PATH").unwrap_or_default(), cli.to_str()?)?
    } else {
        cli.to_path_buf()
    };
    let resolved = std::fs::canonicalize(cli).ok()?;
    let mut dir = resolved.parent();
    while let Some(d) = dir {
        if d.file_name().is_some_and(|n| n == "node_modules") {
            return d.parent().map(Path::to_path_buf);
        }
        dir = d.parent();
    }
    resolved.parent().map(Path::to_path_buf)
}

/// Adds a generic grant (the system, `PATH`, the CLI's package) to `list` unless it holds the
/// data dir or lies inside it — those go to `skipped`: a grant holding the data dir would open
/// all of it, and one inside it could open what the data grants leave closed. The one place
/// the rule "a grant never covers the data dir" lives, for turns and jobs alike.
fn grant_outside(data: &Path, list: &mut Vec<PathBuf>, skipped: &mut Vec<PathBuf>, p: PathBuf) {
    let p = std::fs::canonicalize(&p).unwrap_or(p);
    if data.starts_with(&p) || p.starts_with(data) {
        skipped.push(p);
    } else if !list.contains(&p) {
        list.push(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_never_open_the_data_dir_and_name_only_the_own_provider() {
        let root = tempfile::tempdir().expect("tmp");
        let data = root.path().join("data");
        std::fs::create_dir_all(&data).expect("data");
        let data = std::fs::canonicalize(&data).expect("canon");
        let sandbox = Sandbox::detect(true, None, &data, vec![root.path().to_path_buf()]);
        let home = data.join("agent-home");
        let scratch = data.join("agent-scratch/c1");
        let path = format!("/usr/bin:{}:/bin", root.path().display());
        let g = sandbox.grants(ProviderKind::Claude, Path::new("/bin/sh"), &home, &scratch, &path);
        let everything: Vec<&PathBuf> = g.read_exec.iter().chain(&g.read).chain(&g.read_write).collect();
        for p in &everything {
            assert!(!data.starts_with(p), "{} would expose the data dir", p.display());
        }
        assert!(g.skipped.iter().any(|p| data.starts_with(p)), "the temp root is skipped: {g:?}");
        assert!(g.read_write.contains(&data.join("cli-auth/claude")));
        assert!(!everything.iter().any(|p| p.ends_with("cli-auth/codex") || p.ends_with("db")));
        assert!(!everything.iter().any(|p| p.ends_with("secret.key") || p.ends_with("run")));
        assert_eq!(g.list, vec![data.clone()]);
        let off = Sandbox::detect(false, None, &data, Vec::new());
        assert!(matches!(off.state(), SandboxState::Off { reason } if reason.contains("MOBIUS_AGENT_SANDBOX")));
        assert!(off.ruleset(&g).expect("off").is_none());
    }

    #[test]
    fn signals_are_scoped_from_abi_6_and_say_why_not_below() {
        assert_eq!(landlock_state(7, None), SandboxState::Landlock { abi: 7, signals: Signals::Scoped });
        assert_eq!(landlock_state(7, Some(6)), SandboxState::Landlock { abi: 6, signals: Signals::Scoped });
        assert_eq!(landlock_state(6, Some(9)), SandboxState::Landlock { abi: 6, signals: Signals::Scoped });
        let old = landlock_state(5, None);
        assert!(
            matches!(&old, SandboxState::Landlock { abi: 5, signals: Signals::Open { reason } } if reason.contains("Linux 6.12")),
            "{old:?}"
        );
        let held = landlock_state(7, Some(4));
        assert!(
            matches!(&held, SandboxState::Landlock { abi: 4, signals: Signals::Open { reason } }
                if reason.contains("MOBIUS_AGENT_LANDLOCK_MAX_ABI") && reason.contains("has 7")),
            "{held:?}"
        );
        let json = serde_json::to_value(&old).expect("json");
        assert_eq!((json["mode"].as_str(), json["signals"]["mode"].as_str()), (Some("landlock"), Some("open")));
    }

    #[test]
    fn a_job_gets_its_own_folders_and_nothing_else_of_the_data_dir() {
        let root = tempfile::tempdir().expect("tmp");
        let data = root.path().join("data");
        std::fs::create_dir_all(&data).expect("data");
        let data = std::fs::canonicalize(&data).expect("canon");
        let sandbox = Sandbox::detect(true, None, &data, Vec::new());
        let app = data.join("apps/notes");
        let state = data.join("apps/7/job-state");
        let clis = JobClis { logins: vec![data.join("cli-auth/claude")], packages: Vec::new() };
        let view = JobView { root: data.join("run/jobs/9"), writable: data.join("run/jobs/9/cron-logs") };
        let g = sandbox.job_grants(&app, &state, &view, "/usr/bin:/bin", &clis);
        let in_data: Vec<&PathBuf> =
            g.read_exec.iter().chain(&g.read).chain(&g.read_write).filter(|p| p.starts_with(&data)).collect();
        assert_eq!(in_data, [&app, &view.root, &view.writable, &state, &data.join("cli-auth/claude")], "{g:?}");
        assert!(g.list.is_empty());
    }
}
