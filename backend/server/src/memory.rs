//! How the server's heap gives memory back. glibc's allocator keeps freed memory in per-thread
//! arenas, and by default raises its mmap threshold after the first large free: from then on
//! every password hash (argon2, 19 MiB) landed in an arena and stayed resident (+19 MiB per
//! sign-in, up to one block per arena), and a compile (rolldown on its own threads) left
//! ~100 MiB behind. So `main` fixes the thresholds and caps the arenas
//! (`mobius_sys::tune_allocator`), and the heap is trimmed once the bundler has been idle for a
//! moment.

use std::time::Duration;

/// Quiet time after the last compile before its memory is returned: an agent applying again
/// and again keeps the warm heap (re-faulting 100 MiB costs a compile ~20 %).
pub const TRIM_AFTER_IDLE: Duration = Duration::from_secs(3);

/// After a compile: once the bundler has stayed idle for [`TRIM_AFTER_IDLE`], returns the free
/// parts of every arena to the system.
pub fn trim_after_compiles(bundler: &mobius_bundler::Bundler) {
    let bundler = bundler.clone();
    let seen = bundler.compiles_started();
    tokio::spawn(async move {
        tokio::time::sleep(TRIM_AFTER_IDLE).await;
        if bundler.is_idle() && bundler.compiles_started() == seen {
            // Trimming a large heap takes a few milliseconds: off the async threads.
            let _ = tokio::task::spawn_blocking(mobius_sys::return_freed_memory).await;
        }
    });
}

/// Returns the free parts of every arena to the system now, off the async threads.
pub fn trim_now() {
    tokio::task::spawn_blocking(mobius_sys::return_freed_memory);
}
