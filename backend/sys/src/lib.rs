//! The workspace's only unsafe code, each call wrapped in a safe function with its reasoning:
//! glibc's allocator settings and trim, registering a git transport with libgit2, and
//! confining the agent's processes (`landlock`: its system calls and the `pre_exec` hook that
//! applies them in the child), and their memory ceilings (`limits`: an rlimit or a cgroup
//! joined in the child before exec), and the listening socket a launcher hands its server
//! (`listener`). Every other crate forbids `unsafe`.

pub mod landlock;
pub mod limits;
pub mod listener;

use std::sync::OnceLock;

/// Arenas glibc may create (its default is 8 per core).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MAX_ARENAS: libc::c_int = 2;
/// Blocks at least this large (a password hash's 19 MiB) get their own mapping, unmapped on
/// free. Setting it also turns off glibc's dynamic threshold, which would otherwise climb to
/// the largest block ever freed. Lower values make compiles map and fault their big buffers
/// again and again (measured: the dashboard compile 340 -> 365 ms at 1 MiB).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD_BYTES: libc::c_int = 16 << 20;
/// Free memory above this at the top of a heap is returned at once; below it, an explicit
/// [`return_freed_memory`] does it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD_BYTES: libc::c_int = 32 << 20;

/// Sets glibc's allocator up for a long-running, mostly idle server: at most two arenas and
/// fixed mmap/trim thresholds. Call first thing in `main`, before any thread starts (later
/// calls are still memory-safe, only less effective). A no-op on other C libraries.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt takes two integers and only changes glibc's allocator parameters under
    // glibc's own lock; it reads and writes no memory of ours.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, MAX_ARENAS);
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES);
    }
}

/// Returns the free parts of every malloc arena to the system. Takes a few milliseconds on a
/// large heap: call it off async threads. A no-op on other C libraries.
pub fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers from us and walks glibc's arenas under their own
    // locks; glibc documents it as callable at any time from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// A libgit2 transport factory (see `git2::transport::register`).
pub type TransportFactory = fn(&git2::Remote<'_>) -> Result<git2::transport::Transport, git2::Error>;

/// Makes libgit2 use `factory` for URLs starting with each of `schemes`, once per process:
/// the first call registers, every later call returns the first call's outcome (whatever it
/// passes). Contract: call it before the process opens any remote, on every path that opens
/// one. libgit2 reads its transport table without a lock when a remote connects; a caller that
/// registers first (a concurrent one blocks inside the `OnceLock` until registration is done,
/// then happens-after it) never races that read.
pub fn register_git_transports(schemes: &[&str], factory: TransportFactory) -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            for scheme in schemes {
                // SAFETY: libgit2's table is written exactly once per process (this OnceLock),
                // and by the contract above before any remote exists, so no transport lookup
                // can run concurrently with this write.
                unsafe { git2::transport::register(scheme, factory) }
                    .map_err(|e| format!("registering the {scheme} git transport: {}", e.message()))?;
            }
            Ok(())
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocator_calls_are_harmless_at_any_time() {
        tune_allocator();
        let block = vec![7u8; 24 << 20];
        assert_eq!(block.iter().map(|&b| u64::from(b)).sum::<u64>(), 7 * (24 << 20));
        drop(block);
        return_freed_memory();
    }
}
