//! The workspace's only unsafe code, each call wrapped in a safe function with its reasoning:
//! glibc's allocator settings and trim, paging out start-up code, registering a git transport with libgit2, and
//! confining the agent's processes (`landlock`: its system calls and the `pre_exec` hook that
//! applies them in the child), and their memory ceilings (`limits`: an rlimit or a cgroup
//! joined in the child before exec), the descriptors a child finds at fixed numbers (`fds`),
//! and the listening socket a launcher hands its server (`listener`). Every other crate forbids `unsafe`.

pub mod fds;
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

/// Gives the pages of the server's own executable that are resident now back to the kernel
/// (`MADV_PAGEOUT` on each read-only mapping of `/proc/self/exe`). Call once start-up is over:
/// most of the code it touched (migrations, config, the router's construction) never runs
/// again, and the kernel maps it in 64 KiB runs (fault-around), so ~10 MiB of code stays
/// resident for a server whose idle working set is a fraction of it. What still runs faults
/// back in on its next use. Returns the bytes advised; 0 where the kernel (before 5.4) or the
/// platform has no such advice. Errors are ignored: it is only advice.
pub fn page_out_own_code() -> u64 {
    #[cfg(target_os = "linux")]
    {
        let Ok(exe) = std::fs::read_link("/proc/self/exe") else { return 0 };
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return 0 };
        let mut advised = 0u64;
        for line in maps.lines() {
            // "start-end perms offset dev inode path"
            let mut fields = line.split_whitespace();
            let (Some(range), Some(perms)) = (fields.next(), fields.next()) else { continue };
            let path = fields.nth(3).unwrap_or("");
            if perms.contains('w') || std::path::Path::new(path) != exe {
                continue;
            }
            let Some((start, end)) = range.split_once('-') else { continue };
            let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16)) else {
                continue;
            };
            if end <= start {
                continue;
            }
            // SAFETY: the range is a whole mapping of our own, read from /proc/self/maps, and
            // read-only: MADV_PAGEOUT only drops its resident pages, which the kernel reads
            // back from the file on the next access, so no memory we can see changes.
            let rc = unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_PAGEOUT) };
            if rc == 0 {
                advised += (end - start) as u64;
            }
        }
        advised
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
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

    /// Resident kB of this process's own executable (its `Rss:` lines in smaps).
    fn resident_exe_kib() -> u64 {
        let exe = std::fs::read_link("/proc/self/exe").expect("exe");
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let mut ours = false;
        let mut total = 0;
        for line in smaps.lines() {
            if line.contains('-') && line.split_whitespace().count() >= 5 && !line.ends_with(" kB") {
                ours = line.split_whitespace().nth(5).is_some_and(|p| std::path::Path::new(p) == exe);
            } else if ours && line.starts_with("Rss:") {
                total += line.split_whitespace().nth(1).and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
            }
        }
        total
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn paging_out_own_code_drops_resident_code_and_the_code_still_runs() {
        let before = resident_exe_kib();
        let advised = page_out_own_code();
        let after = resident_exe_kib();
        // MADV_PAGEOUT exists from Linux 5.4: there the advice must be taken, not skipped.
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let mut numbers = release.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse::<u32>().ok());
        let version = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
        if version >= (5, 4) {
            assert!(advised > 0, "no mapping of the executable was paged out on Linux {release}");
        }
        if advised > 0 {
            assert!(after < before, "resident code {before} kB -> {after} kB after paging out {advised} bytes");
        }
        // The paged-out code faults back in.
        allocator_calls_are_harmless_at_any_time();
        assert!(resident_exe_kib() > 0);
    }
}
