//! Mini-apps: the manifest contract, the apply pipeline (git + in-process bundling), install
//! and update from a git source, the registry routes, app tokens, and serving the module,
//! the sandboxed frame, the standalone host and icons.

pub mod activity;
pub mod app_manifest;
pub mod apply;
pub mod assets;
pub mod bootstrap;
pub mod catalog;
pub mod contract;
pub mod git;
pub mod icon;
pub mod lifecycle;
pub mod manifest;
pub mod proxy;
pub mod review;
mod routes;
pub mod sealed;
pub mod secrets;
mod serve;
pub mod shared_git;
pub mod smart_http;
pub mod ssrf;
pub mod system;
pub mod worktree;

use serde::Serialize;
use serde_json::Value;

pub use apply::RECOVERY_WINDOW_MS;
pub use routes::router;
pub use serve::{FRAME_SANDBOX_FLAGS, frame_document, request_origin, standalone_router};

/// The public routes outside `/api`: the standalone host and static assets.
pub fn public_router() -> axum::Router<AppState> {
    standalone_router().merge(assets::router())
}

use crate::db::apps::AppRow;
use crate::state::AppState;
use app_manifest::AppManifest;

/// An app as the API shows it.
#[derive(Debug, Serialize)]
pub struct AppOut {
    pub id: i64,
    pub slug: String,
    pub name: String,
    pub description: String,
    pub version: String,
    pub theme_color: Option<String>,
    pub background_color: Option<String>,
    pub display: Option<String>,
    pub offline_capable: bool,
    pub bundle_sha: Option<String>,
    /// Cache key of this build's module and frame.
    pub v: String,
    pub module_url: String,
    pub frame_url: String,
    pub icon_url: String,
    pub standalone_url: String,
    pub chat_id: Option<String>,
    /// What the manifest asks of the platform (`frame-init.capabilityContract`, see contract.rs).
    pub capability_contract: Value,
    pub source_url: Option<String>,
    pub cross_app_access: String,
    pub share_with_apps: String,
    pub pinned_at: Option<i64>,
    pub last_opened_at: Option<i64>,
    /// A build the owner has not opened yet.
    pub has_unseen_update: bool,
    /// The manifest's `embeds_agent`: the app may embed the agent chat.
    pub embeds_agent: bool,
    /// The manifest's `offline` object as written (`reads`, `writes`, `execution`, `precache`).
    pub offline: Option<Value>,
    /// Same-origin URLs the service worker keeps for this app's offline use: the module, the
    /// icon and each `offline.precache` path that names a static asset.
    pub offline_precache: Vec<String>,
    /// For apps installed from a source: what the last update check found.
    pub update: Option<UpdateInfo>,
    pub created_at: i64,
    pub updated_at: i64,
    pub deleted_at: Option<i64>,
}

impl AppOut {
    /// The app as the API shows it; its frame URL names this build and the frame bootstrap
    /// (`b`), so the browser may cache that document for good.
    pub fn new(state: &AppState, row: AppRow) -> Self {
        let mut out = Self::from(row);
        out.frame_url.push_str("&b=");
        out.frame_url.push_str(&state.frame_bootstrap().key);
        out
    }
}

/// An installed app's update state as the API shows it.
#[derive(Debug, Serialize)]
pub struct UpdateInfo {
    /// The source has a newer release than the installed one.
    pub available: bool,
    pub checked_at: Option<i64>,
    /// Why the last check could not reach the source.
    pub error: Option<String>,
    /// A chat resolving a conflicting update.
    pub resolver_chat_id: Option<String>,
}

impl From<AppRow> for AppOut {
    fn from(a: AppRow) -> Self {
        let v = a.bundle_sha.as_deref().map_or_else(|| a.updated_at.to_string(), |s| s[..16.min(s.len())].to_owned());
        let offline_precache = precache_urls(a.id, &v, &a.manifest);
        let capability_contract =
            contract::capability_contract(&a.manifest, a.offline_capable, &a.cross_app_access, &a.share_with_apps);
        Self {
            capability_contract,
            embeds_agent: a.manifest.embeds_agent(),
            offline: a.manifest.offline.map(Value::Object),
            offline_precache,
            module_url: format!("/api/apps/{}/module?v={v}", a.id),
            frame_url: format!("/api/apps/{}/frame?v={v}", a.id),
            icon_url: format!("/api/apps/{}/icon?v={v}", a.id),
            standalone_url: format!("/apps/{}/", a.slug),
            has_unseen_update: a.bundle_sha.is_some() && a.seen_sha != a.bundle_sha,
            update: a.source_url.as_ref().map(|_| UpdateInfo {
                available: a.update_commit.is_some(),
                checked_at: a.update_checked_at,
                error: a.update_error.clone(),
                resolver_chat_id: a.resolver_chat_id.clone(),
            }),
            v,
            id: a.id,
            slug: a.slug,
            name: a.name,
            description: a.description,
            version: a.version,
            theme_color: a.theme_color,
            background_color: a.background_color,
            display: a.display,
            offline_capable: a.offline_capable,
            bundle_sha: a.bundle_sha,
            chat_id: a.chat_id,
            source_url: a.source_url,
            cross_app_access: a.cross_app_access,
            share_with_apps: a.share_with_apps,
            pinned_at: a.pinned_at,
            last_opened_at: a.last_opened_at,
            created_at: a.created_at,
            updated_at: a.updated_at,
            deleted_at: a.deleted_at,
        }
    }
}

/// The URLs behind `offline.precache`: the app's module and icon always (an offline-capable
/// app cannot start without them), then each precache path that is a static asset's
/// destination (also under `static/`, where the original installs them).
fn precache_urls(id: i64, v: &str, manifest: &AppManifest) -> Vec<String> {
    let Some(paths) = manifest.offline_precache() else { return Vec::new() };
    let destinations = manifest.static_destinations();
    let mut urls = vec![format!("/api/apps/{id}/module?v={v}"), format!("/api/apps/{id}/icon?v={v}")];
    for path in paths {
        let asset = path.strip_prefix("static/").filter(|p| destinations.contains(p)).unwrap_or(path);
        if destinations.contains(&asset) {
            urls.push(format!("/app-assets/by-id/{id}/{asset}"));
        }
    }
    urls
}
