//! How the server's heap gives memory back. glibc's allocator keeps freed memory in per-thread
//! arenas, and by default raises its mmap threshold after the first large free: from then on
//! every password hash (argon2, 19 MiB) landed in an arena and stayed resident (+19 MiB per
//! sign-in, up to one block per arena), and a compile (rolldown on its own threads) left
//! ~100 MiB behind. So `main` fixes the thresholds and caps the arenas
//! (`mobius_sys::tune_allocator`), and the heap is trimmed once the bundler has been idle for a
//! moment. Once start-up has settled, its freed heap and the code pages it faulted in are given
//! back ([`give_back_start_up`]).

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

/// Quiet time after `ready` before start-up's memory is given back: the tasks boot spawns (app
/// rebuilds, leftover sweeps, the scheduler's first pass) have run by then.
pub const SETTLE_AFTER_BOOT: Duration = Duration::from_secs(2);

/// Once start-up has settled, returns its freed heap and pages out the server's own code
/// (`mobius_sys::page_out_own_code`): idle RSS was ~10 MiB of code pages, most of them only
/// ever run at boot. What requests need faults back in on first use.
pub fn give_back_start_up() {
    tokio::spawn(async move {
        tokio::time::sleep(SETTLE_AFTER_BOOT).await;
        let advised = tokio::task::spawn_blocking(|| {
            mobius_sys::return_freed_memory();
            mobius_sys::page_out_own_code()
        })
        .await
        .unwrap_or(0);
        tracing::debug!(advised_bytes = advised, "start-up memory given back");
    });
}

/// Returns the free parts of every arena to the system now, off the async threads.
pub fn trim_now() {
    tokio::task::spawn_blocking(mobius_sys::return_freed_memory);
}

/// A request or response at least this large schedules a trim once requests go quiet.
pub const LARGE_BODY_BYTES: u64 = 1 << 20;

/// Returns freed memory after large requests (an import, a big page, a big tool output):
/// parsing one leaves tens of MiB of small freed blocks in the arenas. One trim runs once no
/// large request has been seen for [`TRIM_AFTER_IDLE`]; a burst of them costs one trim.
#[derive(Debug, Default)]
pub struct Trimmer {
    /// When the last large request ended (ms since the trimmer's clock started), or 0.
    last_large_ms: std::sync::atomic::AtomicU64,
    /// A trim task is waiting.
    waiting: std::sync::atomic::AtomicBool,
    clock: std::sync::OnceLock<tokio::time::Instant>,
    /// Trims done (for tests and diagnostics).
    trims: std::sync::atomic::AtomicU64,
}

impl Trimmer {
    fn now_ms(&self) -> u64 {
        let start = *self.clock.get_or_init(tokio::time::Instant::now);
        u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX).max(1)
    }

    /// Notes a large request; a trim follows once they stop for [`TRIM_AFTER_IDLE`].
    pub fn large_request(self: &std::sync::Arc<Self>) {
        use std::sync::atomic::Ordering;
        self.last_large_ms.store(self.now_ms(), Ordering::Release);
        if self.waiting.swap(true, Ordering::AcqRel) {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            let idle_ms = u64::try_from(TRIM_AFTER_IDLE.as_millis()).unwrap_or(u64::MAX);
            loop {
                let last = this.last_large_ms.load(Ordering::Acquire);
                let quiet = this.now_ms().saturating_sub(last);
                if quiet < idle_ms {
                    tokio::time::sleep(Duration::from_millis(idle_ms - quiet)).await;
                    continue;
                }
                this.waiting.store(false, Ordering::Release);
                // A large request that ended meanwhile found the task still waiting: go on
                // waiting for it, unless a new task has taken over.
                if this.last_large_ms.load(Ordering::Acquire) == last || this.waiting.swap(true, Ordering::AcqRel) {
                    break;
                }
            }
            let _ = tokio::task::spawn_blocking(mobius_sys::return_freed_memory).await;
            this.trims.fetch_add(1, Ordering::Relaxed);
        });
    }

    /// Trims done so far.
    pub fn trims(&self) -> u64 {
        self.trims.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Is this request's body at least [`LARGE_BODY_BYTES`] (by its size hint or its
/// `Content-Length`)? With [`is_large_response`], [`crate::api::gate`] schedules a trim.
pub fn is_large_request(request: &axum::extract::Request) -> bool {
    use axum::body::HttpBody as _;
    request.body().size_hint().lower() >= LARGE_BODY_BYTES
        || request
            .headers()
            .get(axum::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .is_some_and(|n| n >= LARGE_BODY_BYTES)
}

/// Is this response's body known to be at least [`LARGE_BODY_BYTES`]?
pub fn is_large_response(response: &axum::response::Response) -> bool {
    use axum::body::HttpBody as _;
    response.body().size_hint().lower() >= LARGE_BODY_BYTES
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// Lets the spawned tasks run until none is ready.
    async fn settle() {
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
    }

    /// Moves the clock on in small steps until `n` trims are done (the trim itself runs on a
    /// real thread).
    async fn until_trims(trimmer: &Trimmer, n: u64) {
        for _ in 0..100_000 {
            if trimmer.trims() >= n {
                return;
            }
            tokio::time::advance(std::time::Duration::from_millis(10)).await;
            settle().await;
        }
        panic!("no trim came");
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_large_requests_costs_one_trim_once_they_stop() {
        let trimmer = Arc::new(Trimmer::default());
        for _ in 0..5 {
            trimmer.large_request();
            tokio::time::advance(TRIM_AFTER_IDLE / 2).await;
            settle().await;
        }
        assert_eq!(trimmer.trims(), 0, "requests kept coming: no trim yet");
        until_trims(&trimmer, 1).await;
        assert_eq!(trimmer.trims(), 1);
        trimmer.large_request();
        until_trims(&trimmer, 2).await;
        assert_eq!(trimmer.trims(), 2);
    }
}
