//! The proxy's HTTP client (built on first use, its resolver refusing non-public addresses)
//! and its concurrency limit: one per server, held in the shared state.

use std::sync::OnceLock;
use std::time::Duration;

use tokio::sync::Semaphore;

use crate::apps::smart_http::{FetchPolicy, checked_resolver};
use crate::error::{Error, Result};

/// Opening one upstream connection.
const PROXY_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Proxied requests in flight at once (bounds memory to this many response buffers).
pub const MAX_CONCURRENT_PROXY_REQUESTS: usize = 16;
const USER_AGENT: &str = "Mobius/1.0 (app proxy; +https://github.com/mobius-os/mobius)";

/// The proxy's client (built on first use) and its concurrency limit.
#[derive(Debug)]
pub struct Proxy {
    client: OnceLock<reqwest::Client>,
    permits: Semaphore,
}

impl Default for Proxy {
    fn default() -> Self {
        Self { client: OnceLock::new(), permits: Semaphore::new(MAX_CONCURRENT_PROXY_REQUESTS) }
    }
}

impl Proxy {
    /// Waits for a free slot; `None` once the proxy is shutting down.
    pub(super) async fn permit(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        self.permits.acquire().await.ok()
    }

    pub(super) fn client(&self, policy: &FetchPolicy) -> Result<&reqwest::Client> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let client = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .connect_timeout(PROXY_CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .referer(false)
            .dns_resolver(checked_resolver(policy))
            .build()
            .map_err(|e| Error::Internal(format!("proxy client: {e}")))?;
        Ok(self.client.get_or_init(|| client))
    }
}
