//! Mini-apps: the manifest contract, the apply pipeline (git + in-process bundling), install
//! and update from a git source, the registry routes, app tokens, and serving the module,
//! the sandboxed frame, the standalone host and icons.

pub mod apply;
pub mod git;
pub mod icon;
pub mod manifest;
mod routes;
mod serve;
pub mod smart_http;
pub mod ssrf;

use serde::Serialize;

pub use routes::router;
pub use serve::standalone_router;

use crate::db::apps::AppRow;

/// Deleted apps can be recovered this long.
pub const RECOVERY_WINDOW_MS: i64 = 7 * 24 * 3600 * 1000;

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
    pub source_url: Option<String>,
    pub cross_app_access: String,
    pub share_with_apps: String,
    pub pinned_at: Option<i64>,
    pub last_opened_at: Option<i64>,
    /// A build the owner has not opened yet.
    pub has_unseen_update: bool,
    pub created_at: i64,
    pub updated_at: i64,
    pub deleted_at: Option<i64>,
}

impl From<AppRow> for AppOut {
    fn from(a: AppRow) -> Self {
        let v = a.bundle_sha.as_deref().map_or_else(|| a.updated_at.to_string(), |s| s[..16.min(s.len())].to_owned());
        Self {
            module_url: format!("/api/apps/{}/module?v={v}", a.id),
            frame_url: format!("/api/apps/{}/frame?v={v}", a.id),
            icon_url: format!("/api/apps/{}/icon?v={v}", a.id),
            standalone_url: format!("/apps/{}/", a.slug),
            has_unseen_update: a.bundle_sha.is_some() && a.seen_sha != a.bundle_sha,
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
