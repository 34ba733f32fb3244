//! Chat notes and the memory switch, applied inside the writer's transaction.

use sqlx::SqliteConnection;

use super::batch::Batch;
use super::commands::NoteWrite;
use crate::db::{self, now_ms};
use crate::error::{Domain, Result};
use crate::protocol::{ChatEvent, ChatId, SystemEvent};

/// Stores a note. A note turn's note (`expect_count` set) is a compare-and-swap: it is
/// written only while the chat is live, idle and exactly as long as the transcript the turn
/// read; answers whether it was written. Its title renames the chat unless the owner named it.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat_id))]
pub(super) async fn set_note(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &ChatId,
    write: NoteWrite,
) -> Result<bool> {
    let state = db::notes::state_in(conn, chat_id).await?.ok_or(Domain::ChatNotFound)?;
    if state.deleted {
        return Err(Domain::ChatDeleted.into());
    }
    let now = now_ms();
    let source_count = match write.expect_count {
        Some(expected) => {
            if state.running || state.message_count != expected {
                return Ok(false);
            }
            expected
        }
        None => match db::notes::get(&mut *conn, chat_id).await? {
            Some(existing) => existing.source_count,
            None => state.message_count,
        },
    };
    let note = db::notes::Note {
        digest: write.digest,
        summary: write.summary,
        source_count,
        by_owner: write.expect_count.is_none(),
        updated_at: now,
    };
    db::notes::put(conn, chat_id, &note).await?;
    if let Some(title) = write.title.filter(|_| !state.title_locked) {
        db::chats::set_title(conn, chat_id, &title, false, now).await?;
        db::search::index_title(conn, chat_id).await?;
        let title: String = title.chars().take(db::chats::MAX_TITLE_CHARS).collect();
        batch.emit(conn, chat_id, ChatEvent::ChatRenamed { title: title.clone() }).await?;
        batch.system(SystemEvent::ChatRenamed { chat_id: chat_id.clone(), title });
    }
    batch.system(SystemEvent::ChatUpdated { chat_id: chat_id.clone() });
    Ok(true)
}
