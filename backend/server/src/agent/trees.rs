//! Which agent processes belong to which tree — a turn's CLI, a quiet turn, an app job, and
//! everything each starts — by ancestry and by a label the kernel keeps, never by environment.
//!
//! Every tree gets a label before it is spawned: its leader's child carries it as its hard
//! `RLIMIT_LOCKS` (`mobius_sys::limits::label_on_exec`; Linux has not enforced that limit since
//! 2.4). The kernel passes it on through `fork`, `exec` (the server's own binary included),
//! `setsid`, a cleared environment and reparenting, and an unprivileged process can only lower
//! it. The server is the child subreaper of all it starts, so every agent process is one of its
//! descendants while the server lives. When a tree ends, [`Tree::sweep`] kills the server's
//! descendants that carry its label, the server's children whose label is no live tree's (an
//! escapee that lowered its label, one of a tree already gone), and everything below those.
//! Leaders of live trees are never touched, and a label is live from before its leader forks, so
//! another tree's CLI caught between `fork` and `exec`, or exiting, is safe (the pitfall of the
//! environment sweep). A tree's label also names its marker under `run/agents/`, so the next
//! start kills what a dead server left, wherever it was reparented ([`Trees::reap_orphans`]).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};
use std::time::Duration;

use crate::locks::{Unpoisoned, UnpoisonedRw};
use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;
use tracing::warn;

/// The top 16 bits of every label: a tree of a Möbius server.
const MARK: u64 = 0x6d62 << 48;
const MARK_MASK: u64 = 0xffff << 48;
/// Bits 0..24: the tree; bits 24..48: which server start made it (random).
const SEQ_MASK: u64 = 0xff_ffff;
/// Rounds of a sweep at most: each kills what forked while the last one killed.
const MAX_SWEEP_ROUNDS: usize = 8;
/// Pause between rounds, for the kernel to finish the kills and reparent.
const SWEEP_PAUSE: Duration = Duration::from_millis(25);
/// Rounds of the boot reaper.
const BOOT_ROUNDS: usize = 4;

/// The agent process trees of one server: their labels, leaders and markers.
#[derive(Clone, Debug)]
pub struct Trees(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    /// `DATA_DIR/run/agents`: a marker per live tree.
    pid_dir: PathBuf,
    /// No other server runs in this process: every server child with a label that is no live
    /// tree's is a stray. Off (tests hosting several servers in one process), only labels this
    /// server made, and lowered ones, are.
    exclusive: bool,
    /// `MARK` and this start's random bits; `None` when labels cannot be set (the server's own
    /// `RLIMIT_LOCKS` is finite, so its children could not raise theirs to a label).
    prefix: Option<u64>,
    /// The server's own hard `RLIMIT_LOCKS` when finite: what its unlabelled children carry,
    /// never a stray's.
    own: Option<u64>,
    next: AtomicU64,
    /// Live labels and their leaders (pid, start time) once started.
    live: Mutex<HashMap<u64, Option<(i32, u64)>>>,
    /// The server is stopping: no tree opens any more.
    closed: std::sync::atomic::AtomicBool,
    /// Every leader this server started whose exit status tokio may still collect: never
    /// reaped here. Pruned once the process is gone.
    leaders: Mutex<HashMap<i32, u64>>,
    /// Held (shared) from a spawn's fork until its leader is recorded; reaping takes it
    /// exclusively, so a child whose `exec` failed is left to the spawn that waits for it.
    spawning: RwLock<()>,
}

/// One live tree. Dropping it ends its label (call [`Tree::sweep`] first) and its marker.
#[derive(Debug)]
pub struct Tree {
    trees: Trees,
    label: u64,
    marker: PathBuf,
}

/// A process as a sweep sees it: `label` and `no_new_privs` are read for the server's
/// descendants only.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Proc {
    pid: i32,
    ppid: i32,
    pgid: i32,
    zombie: bool,
    start: u64,
    /// Its hard `RLIMIT_LOCKS` (`None`: unlimited, as everything the server did not label).
    label: Option<u64>,
    no_new_privs: bool,
}

impl Trees {
    /// The trees of a server whose markers live in `pid_dir`; `exclusive` when no other server
    /// shares this process (see [`Inner::exclusive`]).
    pub fn new(pid_dir: PathBuf, exclusive: bool) -> Self {
        Self::with_own_limit(pid_dir, exclusive, hard_label(own_pid()))
    }

    /// [`Trees::new`] for a server whose own hard `RLIMIT_LOCKS` is `own` (`None`: unlimited).
    fn with_own_limit(pid_dir: PathBuf, exclusive: bool, own: Option<u64>) -> Self {
        let prefix = match own {
            None => Some(MARK | ((rand::random::<u64>() & SEQ_MASK) << 24)),
            Some(limit) => {
                warn!(
                    limit,
                    "the server's RLIMIT_LOCKS is finite, so its agent processes cannot be labelled: \
                     escaped ones are found only while their turn's group lives"
                );
                None
            }
        };
        Self(Arc::new(Inner {
            pid_dir,
            exclusive,
            prefix,
            own,
            next: AtomicU64::new(1),
            live: Mutex::default(),
            closed: std::sync::atomic::AtomicBool::new(false),
            leaders: Mutex::default(),
            spawning: RwLock::new(()),
        }))
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Option<(i32, u64)>>> {
        self.0.live.locked()
    }

    fn leaders(&self) -> std::sync::MutexGuard<'_, HashMap<i32, u64>> {
        self.0.leaders.locked()
    }

    /// A new tree, live (and its marker written) before anything is spawned with its label;
    /// `None` when labels cannot be set here.
    pub fn open(&self) -> std::io::Result<Option<Tree>> {
        let Some(prefix) = self.0.prefix else { return Ok(None) };
        let label = {
            let mut live = self.live();
            if self.0.closed.load(Ordering::SeqCst) {
                return Err(std::io::Error::other("the server is stopping"));
            }
            let label = loop {
                let label = prefix | (self.0.next.fetch_add(1, Ordering::Relaxed) & SEQ_MASK);
                if !live.contains_key(&label) {
                    break label;
                }
            };
            live.insert(label, None);
            label
        };
        let marker = self.0.pid_dir.join(format!("{label:016x}"));
        let tree = Tree { trees: self.clone(), label, marker };
        std::fs::create_dir_all(&self.0.pid_dir)?;
        std::fs::write(&tree.marker, b"")?;
        Ok(Some(tree))
    }

    /// Held while a child is forked and its leader recorded.
    pub fn spawning(&self) -> RwLockReadGuard<'_, ()> {
        self.0.spawning.read_locked()
    }

    /// A label that belongs to no live tree and that this server may sweep: any (a lowered one,
    /// a dead tree's) when it is alone in its process, else only its own and lowered ones.
    fn stray(&self, label: u64, live: &HashMap<u64, Option<(i32, u64)>>) -> bool {
        if live.contains_key(&label) || Some(label) == self.0.own {
            return false;
        }
        let own = self.0.prefix.is_some_and(|p| label & !SEQ_MASK == p);
        self.0.exclusive || own || label & MARK_MASK != MARK
    }

    /// Kills what a server that died without cleaning up left behind: every process anywhere
    /// that carries the label of a tree it recorded under `run/agents/`, the recorded leader's
    /// group (if it is still that process), and everything below them. Markers are removed,
    /// those of older releases too. Returns how many processes it killed.
    pub fn reap_orphans(&self) -> usize {
        let me = own_pid();
        let mut labels = HashSet::new();
        let mut leaders = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&self.0.pid_dir) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                if let Some(label) =
                    name.to_str().and_then(|n| u64::from_str_radix(n, 16).ok()).filter(|_| name.len() == 16)
                {
                    labels.insert(label);
                    let recorded = std::fs::read_to_string(entry.path()).unwrap_or_default();
                    let mut fields = recorded.split_whitespace().map(str::parse::<u64>);
                    if let (Some(Ok(pid)), Some(Ok(start))) = (fields.next(), fields.next()) {
                        leaders.push((i32::try_from(pid).unwrap_or(0), start));
                    }
                }
                let _ = std::fs::remove_file(entry.path());
            }
        }
        if labels.is_empty() {
            return 0;
        }
        let mut killed = HashSet::new();
        for _ in 0..BOOT_ROUNDS {
            let table = snapshot(|_| true);
            let mut seeds: Vec<i32> = table
                .values()
                .filter(|p| p.pid != me && p.label.is_some_and(|l| labels.contains(&l)))
                .map(|p| p.pid)
                .collect();
            for (pid, start) in &leaders {
                if table.get(pid).is_some_and(|p| p.start == *start && p.pid != me) {
                    let _ = killpg(Pid::from_raw(*pid), Signal::SIGKILL);
                    seeds.push(*pid);
                }
            }
            let doomed: Vec<i32> =
                with_descendants(&table, &seeds).into_iter().filter(|p| *p != me && !killed.contains(p)).collect();
            if doomed.is_empty() {
                break;
            }
            for pid in doomed {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                killed.insert(pid);
            }
            std::thread::sleep(SWEEP_PAUSE);
        }
        killed.len()
    }

    /// The kills of one round: what [`Tree::sweep`] of `target` (sparing `spare`'s subtree)
    /// ends, given the process table.
    fn plan(&self, table: &HashMap<i32, Proc>, me: i32, target: u64, spare: Option<i32>) -> Vec<i32> {
        let live = self.live().clone();
        let leaders: HashSet<(i32, u64)> = live.values().flatten().copied().collect();
        let spared: HashSet<i32> =
            spare.map(|s| with_descendants(table, &[s])).unwrap_or_default().into_iter().collect();
        let keep = |p: &Proc| p.zombie || spared.contains(&p.pid) || leaders.contains(&(p.pid, p.start));
        let seeds: Vec<i32> = descendants(table, me)
            .into_iter()
            .filter_map(|pid| table.get(&pid))
            .filter(|p| !keep(p))
            .filter(|p| match p.label {
                Some(l) if l == target => true,
                Some(l) => p.ppid == me && p.no_new_privs && self.stray(l, &live),
                None => false,
            })
            .map(|p| p.pid)
            .collect();
        with_descendants(table, &seeds).into_iter().filter(|pid| table.get(pid).is_some_and(|p| !keep(p))).collect()
    }

    /// Kills tree `label`'s processes — but `spare`'s own subtree (a CLI kept for the next turn,
    /// with its group) — and every stray server child, and what they started, in rounds until
    /// none is left; reaps them. Blocking (reads `/proc`, pauses between rounds). Returns how
    /// many it killed.
    pub fn sweep(&self, label: u64, spare: Option<u32>) -> usize {
        let me = own_pid();
        let spare = spare.and_then(|p| i32::try_from(p).ok());
        let mut killed = Vec::new();
        for _ in 0..MAX_SWEEP_ROUNDS {
            let table = snapshot(|_| true);
            let doomed = self.plan(&table, me, label, spare);
            if doomed.is_empty() {
                break;
            }
            for pid in doomed {
                // A process that made its own group takes the group with it.
                if table.get(&pid).is_some_and(|p| p.pgid == pid) {
                    let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
                }
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                if !killed.contains(&pid) {
                    killed.push(pid);
                }
            }
            std::thread::sleep(SWEEP_PAUSE);
        }
        self.reap(label, &killed);
        killed.len()
    }

    /// Ends every live tree (the server is stopping) and opens no more (a turn starting now
    /// fails to): each leader's group, then each tree's sweep. Markers stay with trees whose
    /// handles are still held; the next start finds nothing behind them. Blocking. Returns how
    /// many processes were killed.
    pub fn end_all(&self) -> usize {
        let live: Vec<(u64, Option<(i32, u64)>)> = {
            let live = self.live();
            self.0.closed.store(true, Ordering::SeqCst);
            live.iter().map(|(l, p)| (*l, *p)).collect()
        };
        for (_, leader) in &live {
            if let Some((pid, start)) = leader
                && stat(*pid).is_some_and(|p| p.start == *start)
            {
                let _ = killpg(Pid::from_raw(*pid), Signal::SIGKILL);
            }
        }
        live.iter().map(|(label, _)| self.sweep(*label, None)).sum()
    }

    /// Reaps the zombies among the server's children that are agent processes this server may
    /// sweep and no leader tokio waits for (`killed`: what this sweep killed).
    fn reap(&self, target: u64, killed: &[i32]) {
        let _exclusive = self.0.spawning.write_locked();
        let me = own_pid();
        let table = snapshot(|p| p.ppid == me);
        {
            let mut leaders = self.leaders();
            leaders.retain(|pid, start| table.get(pid).is_some_and(|p| p.start == *start));
        }
        let leaders = self.leaders().clone();
        let live = self.live().clone();
        for p in table.values().filter(|p| p.ppid == me && p.zombie && !leaders.contains_key(&p.pid)) {
            let ours = killed.contains(&p.pid)
                || (p.no_new_privs && p.label.is_some_and(|l| l == target || self.stray(l, &live)));
            if ours {
                let _ = waitpid(Pid::from_raw(p.pid), Some(WaitPidFlag::WNOHANG));
            }
        }
    }
}

impl Tree {
    /// The label its processes carry.
    pub fn label(&self) -> u64 {
        self.label
    }

    /// Records its leader, just spawned (under [`Trees::spawning`]), in memory and in its marker.
    pub fn started(&self, pid: u32) {
        let Ok(pid) = i32::try_from(pid) else { return };
        self.led_by(pid, stat(pid).map_or(0, |p| p.start));
    }

    fn led_by(&self, pid: i32, start: u64) {
        self.trees.live().insert(self.label, Some((pid, start)));
        self.trees.leaders().insert(pid, start);
        let _ = std::fs::write(&self.marker, format!("{pid} {start}"));
    }

    /// Its registry and label, for a sweep off the thread that holds it.
    pub fn handle(&self) -> (Trees, u64) {
        (self.trees.clone(), self.label)
    }

    /// [`Trees::sweep`] of this tree, sparing nothing.
    pub fn sweep(&self) -> usize {
        self.trees.sweep(self.label, None)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        self.trees.live().remove(&self.label);
        let _ = std::fs::remove_file(&self.marker);
    }
}

fn own_pid() -> i32 {
    i32::try_from(std::process::id()).unwrap_or(0)
}

/// `/proc/<pid>/stat`: parent, group, state and start time (clock ticks after boot).
fn stat(pid: i32) -> Option<Proc> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let fields: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
    Some(Proc {
        pid,
        zombie: matches!(*fields.first()?, "Z" | "X"),
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
        label: None,
        no_new_privs: false,
    })
}

/// The hard `RLIMIT_LOCKS` of `pid` ("Max file locks" in `/proc/<pid>/limits`); `None` when
/// unlimited or unreadable.
fn hard_label(pid: i32) -> Option<u64> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max file locks"))?;
    line["Max file locks".len()..].split_whitespace().nth(1)?.parse().ok()
}

fn no_new_privs(pid: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status.lines().any(|l| l.starts_with("NoNewPrivs:") && l.trim_end().ends_with('1'))
}

/// Every process, with the label and `no_new_privs` of those `detail` picks (and of the
/// server's descendants, which a sweep needs).
fn snapshot(detail: impl Fn(&Proc) -> bool) -> HashMap<i32, Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return HashMap::new() };
    let mut table: HashMap<i32, Proc> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .filter_map(stat)
        .map(|p| (p.pid, p))
        .collect();
    let ours: HashSet<i32> = descendants(&table, own_pid()).into_iter().collect();
    for p in table.values_mut() {
        if ours.contains(&p.pid) || detail(p) {
            p.label = hard_label(p.pid);
            p.no_new_privs = no_new_privs(p.pid);
        }
    }
    table
}

/// Every process below `root` (not `root` itself).
fn descendants(table: &HashMap<i32, Proc>, root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for p in table.values() {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut out = Vec::new();
    let mut todo = vec![root];
    while let Some(pid) = todo.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            if *child != root && !out.contains(child) {
                out.push(*child);
                todo.push(*child);
            }
        }
    }
    out
}

/// `roots` and everything below them.
fn with_descendants(table: &HashMap<i32, Proc>, roots: &[i32]) -> Vec<i32> {
    let mut out: Vec<i32> = roots.to_vec();
    for root in roots {
        for pid in descendants(table, *root) {
            if !out.contains(&pid) {
                out.push(pid);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(pid: i32, ppid: i32, label: Option<u64>) -> Proc {
        Proc { pid, ppid, pgid: pid, zombie: false, start: u64::try_from(pid).unwrap_or(0), label, no_new_privs: true }
    }

    fn trees(exclusive: bool) -> (Trees, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("tmp");
        (Trees::new(dir.path().join("agents"), exclusive), dir)
    }

    #[test]
    fn a_sweep_takes_its_label_strays_and_what_they_started_and_never_a_live_leader() {
        let (trees, _dir) = trees(true);
        let a = trees.open().expect("open").expect("labels");
        let b = trees.open().expect("open").expect("labels");
        b.led_by(30, 30);
        let me = 1;
        let other_server = MARK | (0x123 << 24) | 5;
        let table: HashMap<i32, Proc> = [
            proc(10, me, Some(a.label())),                         // a's CLI
            proc(11, 10, Some(a.label())),                         // in its group
            proc(12, me, Some(a.label())),                         // a's escapee (setsid, double fork)
            proc(13, 12, Some(7)),                                 // its child, label lowered: goes with it
            proc(20, me, Some(5)),                                 // an escapee that lowered its label
            proc(21, me, Some(other_server)),                      // one that took another server's label
            proc(22, me, Some(b.label() + 1000)),                  // a tree that is gone
            proc(30, me, Some(b.label())),                         // b's CLI: live
            proc(31, me, Some(b.label())),                         // b's escapee: b's to sweep
            proc(32, 30, Some(a.label())),                         // a's label under b's CLI (lowered to a's): a's
            Proc { no_new_privs: false, ..proc(40, me, Some(9)) }, // not an agent process
            proc(41, me, None),                                    // unlabelled (a child the server made)
            proc(50, 2, Some(a.label())),                          // not below the server: not ours now
        ]
        .into_iter()
        .map(|p| (p.pid, p))
        .collect();
        let mut doomed = trees.plan(&table, me, a.label(), None);
        doomed.sort_unstable();
        assert_eq!(doomed, [10, 11, 12, 13, 20, 21, 22, 32]);
        // Kept between turns: the CLI's own subtree stays, what escaped it goes.
        let mut doomed = trees.plan(&table, me, a.label(), Some(10));
        doomed.sort_unstable();
        assert_eq!(doomed, [12, 13, 20, 21, 22, 32]);
        // b's leader is never a stray, whatever b's sweep or anyone's: even once the label of a
        // live tree is seen on another of the server's children.
        let doomed = trees.plan(&table, me, b.label(), None);
        assert!(!doomed.contains(&30) && doomed.contains(&31), "{doomed:?}");
    }

    #[test]
    fn with_other_servers_in_the_process_only_its_own_and_lowered_labels_are_strays() {
        let (trees, _dir) = trees(false);
        let a = trees.open().expect("open").expect("labels");
        let other_server = MARK | (0x123 << 24) | 5;
        let me = 1;
        let table: HashMap<i32, Proc> =
            [proc(20, me, Some(5)), proc(21, me, Some(other_server)), proc(22, me, Some(a.label() + 1))]
                .into_iter()
                .map(|p| (p.pid, p))
                .collect();
        let mut doomed = trees.plan(&table, me, a.label(), None);
        doomed.sort_unstable();
        assert_eq!(doomed, [20, 22], "another server's tree in this process is left to it");
    }

    #[test]
    fn a_server_that_cannot_label_takes_nothing_it_started_for_a_stray() {
        let dir = tempfile::tempdir().expect("tmp");
        let trees = Trees::with_own_limit(dir.path().join("agents"), true, Some(1024));
        assert!(trees.open().expect("open").is_none(), "no labels");
        // Every child inherits the server's own finite value: none is a stray for it.
        let table: HashMap<i32, Proc> =
            [proc(20, 1, Some(1024)), proc(21, 1, Some(5))].into_iter().map(|p| (p.pid, p)).collect();
        assert_eq!(trees.plan(&table, 1, MARK | 1, None), [21], "only a lowered one");
    }

    #[test]
    fn a_stopping_server_opens_no_tree() {
        // Not alone in its process (other tests' trees run here): it sweeps only its own.
        let (trees, _dir) = trees(false);
        let open = trees.open().expect("open").expect("labels");
        trees.end_all();
        assert!(trees.open().is_err(), "no tree starts once the server stops");
        drop(open);
    }

    #[test]
    fn labels_are_live_from_before_the_spawn_and_markers_follow_them() {
        let (trees, dir) = trees(true);
        let a = trees.open().expect("open").expect("labels");
        assert_eq!(a.label() & MARK_MASK, MARK);
        let marker = dir.path().join("agents").join(format!("{:016x}", a.label()));
        assert!(marker.is_file());
        assert!(!trees.stray(a.label(), &trees.live().clone()), "live before its leader runs");
        a.started(std::process::id());
        let recorded = std::fs::read_to_string(&marker).expect("marker");
        assert!(recorded.starts_with(&format!("{} ", std::process::id())), "{recorded}");
        let label = a.label();
        drop(a);
        assert!(!marker.exists());
        assert!(trees.stray(label, &trees.live().clone()), "gone with its tree");
    }
}
