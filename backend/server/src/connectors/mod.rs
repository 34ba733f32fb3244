//! Connectors: remote MCP servers the owner adds (`routes.rs`), listed at connect (`mcp.rs`)
//! and reached by the agent only through the server's broker (`broker.rs`), which adds the
//! credential the agent never sees. This file holds what the routes, the broker and the turn
//! launch share: the outbound client (public addresses only, checked as each connection
//! resolves), the broker's concurrency limit, the credential of a row (an OAuth grant is renewed
//! before use by the broker, `broker.rs::authorization`) and a chat's servers.

pub mod broker;
pub mod github;
pub mod legacy;
pub mod mcp;
pub mod oauth;
pub mod routes;

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use sqlx::SqlitePool;
use tokio::sync::Semaphore;

use crate::apps::smart_http::{FetchPolicy, checked_resolver};
use crate::auth::jwt::Keys;
use crate::db::connectors::{ConnectorRow, sealed_context};
use crate::error::{Error, Result};

/// Connectors the owner may keep.
pub const MAX_CONNECTORS: i64 = 32;
/// Broker calls in flight at once, over all chats.
pub const MAX_BROKER_CALLS: usize = 16;
/// Opening one upstream connection.
const UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const USER_AGENT: &str = concat!("Mobius/", env!("CARGO_PKG_VERSION"), " (MCP connector)");

/// The legacy streams the broker holds open: per (run, connector), the chat and the stream.
pub(crate) type LegacyStreams =
    std::collections::HashMap<(String, i64), (String, std::sync::Arc<legacy::LegacySession>)>;

/// The connectors' outbound client and the broker's limit, one per server.
#[derive(Debug)]
pub struct Connectors {
    client: OnceLock<reqwest::Client>,
    permits: std::sync::Arc<Semaphore>,
    policy: FetchPolicy,
    /// OAuth sign-ins in flight and the renewal lock.
    pub flows: oauth::Flows,
    /// Legacy HTTP+SSE streams open for running turns (`broker.rs`).
    pub(crate) legacy: tokio::sync::Mutex<LegacyStreams>,
    /// Whether the task that closes the streams of ended turns runs.
    pub(crate) sweeping: std::sync::atomic::AtomicBool,
}

impl Connectors {
    /// `allow_loopback` admits `127.0.0.1`/`::1` upstreams: only a test configuration sets it
    /// (`MOBIUS_CONNECTORS_ALLOW_LOOPBACK`).
    pub fn new(allow_loopback: bool) -> Self {
        Self {
            client: OnceLock::new(),
            permits: std::sync::Arc::new(Semaphore::new(MAX_BROKER_CALLS)),
            policy: FetchPolicy::proxy(allow_loopback),
            flows: oauth::Flows::default(),
            legacy: tokio::sync::Mutex::new(LegacyStreams::new()),
            sweeping: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The rules an upstream address is held to.
    pub fn policy(&self) -> &FetchPolicy {
        &self.policy
    }

    /// The client (built on first use: no cost while nothing uses a connector). Redirects are
    /// never followed, so the address checked is the address the request goes to.
    pub fn client(&self) -> Result<&reqwest::Client> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let client = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .connect_timeout(UPSTREAM_CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .referer(false)
            .dns_resolver(checked_resolver(&self.policy))
            .build()
            .map_err(|e| Error::Internal(format!("connector client: {e}")))?;
        Ok(self.client.get_or_init(|| client))
    }

    /// The client and address rules the OAuth flow calls out with.
    pub fn outbound(&self) -> Result<oauth::Outbound<'_>> {
        Ok(oauth::Outbound { client: self.client()?, policy: &self.policy })
    }

    /// A broker slot, waited for at most `wait`; `None` when none came free.
    pub(crate) async fn permit(&self, wait: Duration) -> Option<tokio::sync::OwnedSemaphorePermit> {
        tokio::time::timeout(wait, self.permits.clone().acquire_owned()).await.ok().and_then(|p| p.ok())
    }
}

/// The header a row's credential goes in, with its value (opened from its seal), if it has one.
pub fn credential(keys: &Keys, row: &ConnectorRow) -> Result<Option<(HeaderName, HeaderValue)>> {
    let Some(sealed) = &row.secret else { return Ok(None) };
    let plain = keys.open(&sealed_context(&row.name), sealed)?;
    let plain = String::from_utf8(plain).map_err(|_| Error::Internal("a connector secret is not text".into()))?;
    let (name, value) = match row.auth.as_str() {
        "bearer" => (reqwest::header::AUTHORIZATION, format!("Bearer {plain}")),
        "header" => {
            let name = row.header_name.as_deref().unwrap_or_default();
            (
                HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| Error::Internal("a connector header name is invalid".into()))?,
                plain,
            )
        }
        _ => return Ok(None),
    };
    let mut value = HeaderValue::from_str(&value)
        .map_err(|_| Error::Internal("a connector secret is not a header value".into()))?;
    value.set_sensitive(true);
    Ok(Some((name, value)))
}

/// An MCP server a turn's CLI is told about: its name and the broker URL it calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatServer {
    pub id: i64,
    pub name: String,
    /// Its tools that run without asking (`mcp__<name>__<tool>`): the read-only ones, when the
    /// owner marked the connector read-only-auto-approve.
    pub auto_approved: Vec<String>,
}

/// The connected connectors chat `chat_id` may use.
pub async fn for_chat(read: &SqlitePool, chat_id: &str) -> Result<Vec<ChatServer>> {
    Ok(crate::db::connectors::for_chat(read, chat_id)
        .await?
        .into_iter()
        .map(|row| {
            let auto_approved = if row.read_only_auto {
                serde_json::from_str::<Vec<mcp::Tool>>(&row.tools)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|t| t.read_only)
                    .map(|t| format!("mcp__{}__{}", row.name, t.name))
                    .collect()
            } else {
                Vec::new()
            };
            ChatServer { id: row.id, name: row.name, auto_approved }
        })
        .collect())
}

/// The broker URL of connector `id` for chat `chat_id` (`api_url`: how agents reach the server).
pub fn broker_url(api_url: &str, chat_id: &str, id: i64) -> String {
    format!("{}/api/mcp/{chat_id}/{id}", api_url.trim_end_matches('/'))
}
