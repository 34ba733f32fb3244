//! The compile queue: a permit limit plus a runtime of its own, so compiles never starve requests.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::sync::Semaphore;

use crate::diagnostics::{Diagnostic, DiagnosticKind, Diagnostics};
use crate::{Bundle, BundleOptions, compile};

/// Longest a single compile may run before it is abandoned.
pub const MAX_COMPILE_TIME: Duration = Duration::from_secs(30);

/// Compiles apps at most `max_parallel` at a time, on threads of its own.
///
/// rolldown parses on tokio tasks and links with rayon, all CPU-bound. Running it on the
/// server's runtime would occupy the workers that answer requests, so each `Bundler` owns a small
/// multi-threaded runtime for compiles. Clones share the limit and the runtime; build one per
/// process (one permit suits a 2-core machine).
#[derive(Clone)]
pub struct Bundler {
    inner: Arc<Inner>,
}

struct Inner {
    permits: Arc<Semaphore>,
    max_parallel: usize,
    /// Compiles started so far.
    started: AtomicU64,
    /// Always `Some` until drop, which takes it to shut it down without blocking.
    runtime: Option<Runtime>,
}

impl Bundler {
    /// A bundler that runs at most `max_parallel` compiles at once (at least one).
    pub fn new(max_parallel: usize) -> std::io::Result<Self> {
        let threads = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("mobius-bundler")
            .enable_all()
            .build()?;
        let max_parallel = max_parallel.max(1);
        let permits = Arc::new(Semaphore::new(max_parallel));
        Ok(Self {
            inner: Arc::new(Inner { permits, max_parallel, started: AtomicU64::new(0), runtime: Some(runtime) }),
        })
    }

    /// Compiles one app, waiting for a free permit first.
    ///
    /// The compile keeps its permit until it finishes even if this future is dropped, so an
    /// abandoned request never lets more compiles run than the limit.
    pub async fn bundle(&self, opts: &BundleOptions) -> Result<Bundle, Diagnostics> {
        self.inner.started.fetch_add(1, Ordering::Relaxed);
        let permit = Arc::clone(&self.inner.permits)
            .acquire_owned()
            .await
            .map_err(|_| failure("the bundler is shutting down"))?;
        let Some(runtime) = &self.inner.runtime else {
            return Err(failure("the bundler is shutting down"));
        };
        let opts = opts.clone();
        let task = runtime.spawn(async move {
            let result = tokio::time::timeout(MAX_COMPILE_TIME, compile::compile(&opts)).await;
            drop(permit);
            result
        });
        match task.await {
            Ok(Ok(result)) => result,
            Ok(Err(_elapsed)) => Err(failure(&format!(
                "compiling took longer than {} s and was stopped; split very large files or drop unused imports",
                MAX_COMPILE_TIME.as_secs()
            ))),
            Err(join) if join.is_panic() => Err(failure("the bundler crashed while compiling this app")),
            Err(_) => Err(failure("the compile was cancelled")),
        }
    }

    /// How many more compiles could start right now.
    pub fn available_permits(&self) -> usize {
        self.inner.permits.available_permits()
    }

    /// Whether no compile is running or waiting.
    pub fn is_idle(&self) -> bool {
        self.available_permits() == self.inner.max_parallel
    }

    /// How many compiles were started (or queued) so far; unchanged means none since.
    pub fn compiles_started(&self) -> u64 {
        self.inner.started.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for Bundler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bundler").field("available_permits", &self.available_permits()).finish_non_exhaustive()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which panics inside async code; shutting down in the
        // background does not.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn failure(message: &str) -> Diagnostics {
    Diagnostic::new(DiagnosticKind::Other, message).into()
}
