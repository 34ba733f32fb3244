//! Chat files (the owner's uploads, the agent's published images), applied inside the writer's
//! transaction: a row is added only to a live chat and only while the quota has room.

use sqlx::SqliteConnection;

use crate::db::{self, uploads::ChatFile};
use crate::error::{Domain, Result};

/// Records a file that is complete on disk; refuses a deleted chat and a full quota.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %file.chat_id))]
pub(super) async fn add(conn: &mut SqliteConnection, file: &ChatFile, quota: u64) -> Result<()> {
    match db::chats::get(&mut *conn, &file.chat_id).await? {
        Some(chat) if chat.deleted_at.is_none() => {}
        _ => return Err(Domain::ChatNotFound.into()),
    }
    let used = db::uploads::total_size(&mut *conn).await?;
    if used.saturating_add(u64::try_from(file.size).unwrap_or(u64::MAX)) > quota {
        return Err(Domain::UploadQuotaExceeded.into());
    }
    db::uploads::insert(conn, file).await
}
