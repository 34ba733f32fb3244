//! The workspace's only unsafe code, each call wrapped in a safe function with its reasoning:
//! glibc's allocator settings and trim, paging out start-up code, the process's usage and clock (for
//! the start-up log line), registering a git transport with libgit2, and
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

/// What this process has used so far: CPU time (all threads, user space and kernel, since
/// exec) and the page faults it took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// `CLOCK_PROCESS_CPUTIME_ID`: exact (`getrusage`'s user/system split is sampled per tick).
    pub cpu: std::time::Duration,
    /// Faults served without reading a disk (a page mapped, zeroed or copied).
    pub minor_faults: u64,
    /// Faults that waited for a read.
    pub major_faults: u64,
}

/// This process's [`Usage`]; `None` if the kernel refuses.
pub fn process_usage() -> Option<Usage> {
    let cpu = clock(libc::CLOCK_PROCESS_CPUTIME_ID)?;
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one `rusage` into the pointer it is given, which points at a
    // zeroed `rusage` of ours, and reads nothing else.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: getrusage returned 0, so it filled the struct (and it was zeroed before anyway,
    // a valid `rusage`).
    let usage = unsafe { usage.assume_init() };
    Some(Usage {
        cpu: std::time::Duration::from_nanos(cpu),
        minor_faults: u64::try_from(usage.ru_minflt).unwrap_or(0),
        major_faults: u64::try_from(usage.ru_majflt).unwrap_or(0),
    })
}

/// Nanoseconds on clock `id` (`clock_gettime`).
fn clock(id: libc::clockid_t) -> Option<u64> {
    let mut now = std::mem::MaybeUninit::<libc::timespec>::zeroed();
    // SAFETY: clock_gettime writes one `timespec` into the pointer it is given, a zeroed
    // `timespec` of ours.
    let rc = unsafe { libc::clock_gettime(id, now.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: clock_gettime returned 0, so it filled the struct (zeroed before: valid anyway).
    let now = unsafe { now.assume_init() };
    let secs = u64::try_from(now.tv_sec).ok()?;
    let nanos = u64::try_from(now.tv_nsec).ok()?;
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// `CLOCK_MONOTONIC` in nanoseconds: the clock `std::time::Instant` reads on Linux, as a number
/// another process can compare (Python's `time.monotonic_ns()` reads the same clock).
pub fn monotonic_ns() -> Option<u64> {
    clock(libc::CLOCK_MONOTONIC)
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

    #[test]
    fn usage_counts_the_cpu_and_the_faults_a_process_takes() {
        let before = process_usage().expect("getrusage");
        // Fresh pages fault in when first written; a checksum keeps the work from being elided.
        let mut block = vec![0u8; 8 << 20];
        for (i, b) in block.iter_mut().enumerate().step_by(4096) {
            *b = (i % 251) as u8;
        }
        let mut sum = 0u64;
        for round in 0..200u64 {
            sum = sum.wrapping_add(block.iter().map(|&b| u64::from(b) ^ round).sum::<u64>());
        }
        assert_ne!(sum, 1);
        let after = process_usage().expect("getrusage");
        assert!(after.minor_faults >= before.minor_faults + 1024, "{before:?} → {after:?}");
        assert!(after.cpu > before.cpu, "{before:?} → {after:?}");
    }

    #[test]
    fn the_monotonic_clock_is_the_one_instant_reads() {
        let a = monotonic_ns().expect("clock");
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_millis(3) {}
        let elapsed = u64::try_from(start.elapsed().as_nanos()).expect("ns");
        let b = monotonic_ns().expect("clock");
        assert!(b > a && b - a >= 3_000_000 && b - a >= elapsed, "{a} {b} {elapsed}");
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
