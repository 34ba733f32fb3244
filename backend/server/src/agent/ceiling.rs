//! How much memory an agent may use, and how it is held to it. Where the server can create
//! cgroups (cgroup v2 with the memory controller delegated to it, as in its container), each
//! CLI process tree gets its own cgroup with `memory.max` (the whole tree counts, and a turn
//! past it is ended: `memory.events` reports the kill); otherwise every agent process gets an
//! `RLIMIT_DATA` (each process on its own: an allocation past it fails in that process).
//! Settings shows which, and why. The output ceiling lives in `process.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use tracing::{info, warn};

/// Where cgroup v2 is mounted.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";
/// The server's own cgroup under its original one (processes must leave a cgroup before its
/// children can get controllers).
const SERVER_CGROUP: &str = "mobius-server";
/// The parent of the agents' cgroups.
const AGENTS_CGROUP: &str = "mobius-agents";

/// How agents are held to their memory ceiling (what Settings shows).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum MemoryState {
    /// Each CLI's process tree in a cgroup of its own, `memory.max` bytes in all.
    Cgroup { max_bytes: u64 },
    /// Each agent process may map at most `max_bytes` of writable memory; `reason`: why not
    /// a cgroup.
    Rlimit { max_bytes: u64, reason: String },
    /// No memory ceiling (`MOBIUS_AGENT_MEMORY_MAX_MB=0`).
    Off,
}

/// The memory ceiling, decided once at start-up.
#[derive(Clone, Debug)]
pub struct MemoryCeiling(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    state: MemoryState,
    /// `…/mobius-agents` when agents get cgroups.
    agents: Option<PathBuf>,
    next: AtomicU64,
}

/// What one CLI process is held to.
#[derive(Debug)]
pub enum Applied {
    /// Its cgroup (created for it, removed after it): the child joins it before exec.
    Cgroup(Cgroup, std::fs::File),
    Rlimit(u64),
    None,
}

/// One agent's cgroup.
#[derive(Debug)]
pub struct Cgroup {
    dir: PathBuf,
    max_bytes: u64,
}

impl MemoryCeiling {
    /// Decides how agents are held to `max_bytes` (`None`: not at all).
    pub fn detect(max_bytes: Option<u64>) -> Self {
        let Some(max_bytes) = max_bytes else {
            return Self(Arc::new(Inner { state: MemoryState::Off, agents: None, next: AtomicU64::new(0) }));
        };
        let (state, agents) = match delegate(Path::new(CGROUP_ROOT)) {
            Ok(agents) => {
                info!(dir = %agents.display(), "agents get a cgroup each for their memory ceiling");
                (MemoryState::Cgroup { max_bytes }, Some(agents))
            }
            Err(reason) => {
                info!(%reason, "agents' memory is limited per process (RLIMIT_DATA)");
                (MemoryState::Rlimit { max_bytes, reason }, None)
            }
        };
        Self(Arc::new(Inner { state, agents, next: AtomicU64::new(0) }))
    }

    /// How agents are held (Settings).
    pub fn state(&self) -> MemoryState {
        self.0.state.clone()
    }

    /// The ceiling of one new CLI process: its own cgroup (falling back to the rlimit when it
    /// cannot be made), the rlimit, or none.
    pub fn prepare(&self) -> Applied {
        match (&self.0.state, &self.0.agents) {
            (MemoryState::Cgroup { max_bytes }, Some(agents)) => {
                let n = self.0.next.fetch_add(1, Ordering::Relaxed);
                let dir = agents.join(format!("agent-{}-{n}", std::process::id()));
                match Cgroup::create(dir, *max_bytes) {
                    Ok((cgroup, procs)) => Applied::Cgroup(cgroup, procs),
                    Err(e) => {
                        warn!(error = %e, "an agent cgroup could not be made; limiting per process instead");
                        Applied::Rlimit(*max_bytes)
                    }
                }
            }
            (MemoryState::Cgroup { max_bytes } | MemoryState::Rlimit { max_bytes, .. }, _) => {
                Applied::Rlimit(*max_bytes)
            }
            (MemoryState::Off, _) => Applied::None,
        }
    }
}

impl Cgroup {
    fn create(dir: PathBuf, max_bytes: u64) -> std::io::Result<(Self, std::fs::File)> {
        std::fs::create_dir(&dir)?;
        let cgroup = Self { dir, max_bytes };
        std::fs::write(cgroup.dir.join("memory.max"), max_bytes.to_string())?;
        // No swap to hide in (absent when the kernel has no swap accounting).
        let _ = std::fs::write(cgroup.dir.join("memory.swap.max"), "0");
        let procs = std::fs::OpenOptions::new().write(true).open(cgroup.dir.join("cgroup.procs"))?;
        Ok((cgroup, procs))
    }

    /// How many processes the kernel killed for passing `memory.max`.
    pub fn oom_kills(&self) -> u64 {
        let events = std::fs::read_to_string(self.dir.join("memory.events")).unwrap_or_default();
        events.lines().find_map(|l| l.strip_prefix("oom_kill ").and_then(|n| n.trim().parse().ok())).unwrap_or(0)
    }

    /// The ceiling, for the owner's message.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// Kills every process in the cgroup at once (`cgroup.kill`, Linux 5.14): nothing in it can
    /// leave it, whatever it did to its group, session or label.
    pub fn kill_all(&self) {
        let _ = std::fs::write(self.dir.join("cgroup.kill"), "1");
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // Empty once the group is gone; a straggler keeps it a moment longer (tried again
        // at the next boot).
        if std::fs::remove_dir(&self.dir).is_err() {
            let dir = self.dir.clone();
            std::thread::spawn(move || {
                for _ in 0..20 {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    if std::fs::remove_dir(&dir).is_ok() {
                        return;
                    }
                }
            });
        }
    }
}

/// Makes `…/<own cgroup>/mobius-agents` with the memory controller for its children: the
/// server moves into `mobius-server` beside it (a cgroup with processes cannot give its
/// children controllers). The reason when it cannot.
fn delegate(root: &Path) -> Result<PathBuf, String> {
    let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| format!("/proc/self/cgroup: {e}"))?;
    let path = own_cgroup_v2(&own).ok_or("the server is not in a cgroup v2 hierarchy")?;
    let base = root.join(path.trim_start_matches('/'));
    let controllers = std::fs::read_to_string(base.join("cgroup.controllers"))
        .map_err(|_| "cgroup v2 is not mounted at /sys/fs/cgroup".to_owned())?;
    if !controllers.split_whitespace().any(|c| c == "memory") {
        return Err("the memory controller is not delegated to the server's cgroup".into());
    }
    let agents = base.join(AGENTS_CGROUP);
    let enable = |dir: &Path| std::fs::write(dir.join("cgroup.subtree_control"), "+memory");
    if enable(&base).is_err() {
        // Processes in `base` (the server) keep it from having controlled children.
        let server = base.join(SERVER_CGROUP);
        std::fs::create_dir_all(&server).map_err(|e| format!("cannot create a cgroup: {e}"))?;
        std::fs::write(server.join("cgroup.procs"), std::process::id().to_string())
            .map_err(|e| format!("cannot move the server into its own cgroup: {e}"))?;
        enable(&base).map_err(|e| format!("cannot enable the memory controller: {e}"))?;
    }
    std::fs::create_dir_all(&agents).map_err(|e| format!("cannot create a cgroup: {e}"))?;
    enable(&agents).map_err(|e| format!("cannot enable the memory controller: {e}"))?;
    // Cgroups of agents of an earlier run, now empty.
    if let Ok(entries) = std::fs::read_dir(&agents) {
        for entry in entries.flatten().filter(|e| e.path().is_dir()) {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
    Ok(agents)
}

/// The server's cgroup v2 path in `/proc/self/cgroup` (`0::/path`), when it has one and no
/// v1 memory hierarchy holds the memory controller instead.
fn own_cgroup_v2(proc_cgroup: &str) -> Option<String> {
    let v1_memory = proc_cgroup.lines().any(|l| {
        let mut parts = l.splitn(3, ':');
        parts.next().is_some_and(|id| id != "0") && parts.next().is_some_and(|c| c.split(',').any(|c| c == "memory"))
    });
    if v1_memory {
        return None;
    }
    proc_cgroup.lines().find_map(|l| l.strip_prefix("0::")).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v1_memory_hierarchy_rules_out_cgroup_v2_ceilings() {
        assert_eq!(own_cgroup_v2("0::/docker/abc\n").as_deref(), Some("/docker/abc"));
        assert_eq!(own_cgroup_v2("4:memory:/x\n0::/\n"), None);
        assert_eq!(own_cgroup_v2("1:name=systemd:/\n"), None);
    }

    #[test]
    fn without_cgroup_files_there_is_no_delegation_and_no_ceiling_means_none() {
        let dir = tempfile::tempdir().expect("tmp");
        assert!(delegate(dir.path()).is_err(), "a root without cgroup files: not mounted");
        assert_eq!(MemoryCeiling::detect(None).state(), MemoryState::Off);
        assert!(matches!(MemoryCeiling::detect(None).prepare(), Applied::None));
    }
}
