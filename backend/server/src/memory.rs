//! How the server's heap gives memory back. glibc's allocator keeps freed memory in per-thread
//! arenas, and by default raises its mmap threshold after the first large free: from then on
//! every password hash (argon2, 19 MiB) lands in an arena and stays resident (+19 MiB per
//! sign-in, up to one block per arena), and a compile (rolldown on its own threads) leaves
//! ~100 MiB behind. So: fixed thresholds and fewer arenas from the start, and a trim once the
//! bundler has been idle for a moment. Other C libraries (musl) have neither knob, and need
//! neither.

use std::time::Duration;

/// Quiet time after the last compile before its memory is returned: an agent applying again
/// and again keeps the warm heap (re-faulting 100 MiB costs a compile ~20 %).
pub const TRIM_AFTER_IDLE: Duration = Duration::from_secs(3);

/// Arenas glibc may create (its default is 8 per core).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MAX_ARENAS: libc::c_int = 2;
/// Blocks at least this large (a password hash's 19 MiB) get their own mapping, unmapped on
/// free. Setting it also turns off glibc's dynamic threshold, which would otherwise climb to
/// the largest block ever freed. Lower values make compiles map and fault their big buffers
/// again and again (measured: the dashboard compile 340 -> 365 ms at 1 MiB).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD_BYTES: libc::c_int = 16 << 20;
/// Free memory above this at the top of a heap is returned at once; below it, the trim after
/// compiles does it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD_BYTES: libc::c_int = 32 << 20;

/// Sets glibc's allocator up for a long-running, mostly idle server. Call first thing in
/// `main`, before any thread starts.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: mallopt takes two integers and only changes glibc's allocator settings; it is
    // called from `main` before any other thread exists, so nothing allocates concurrently.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, MAX_ARENAS);
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES);
    }
}

/// After a compile: once the bundler has stayed idle for [`TRIM_AFTER_IDLE`], returns the free
/// parts of every arena to the system.
pub fn trim_after_compiles(bundler: &mobius_bundler::Bundler) {
    let bundler = bundler.clone();
    let seen = bundler.compiles_started();
    tokio::spawn(async move {
        tokio::time::sleep(TRIM_AFTER_IDLE).await;
        if bundler.is_idle() && bundler.compiles_started() == seen {
            // Trimming a large heap takes a few milliseconds: off the async threads.
            let _ = tokio::task::spawn_blocking(return_freed_memory).await;
        }
    });
}

/// Returns the free parts of every arena to the system.
pub fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: malloc_trim takes no pointers from us and walks glibc's arenas under their own
    // locks; glibc documents it as callable at any time from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}
