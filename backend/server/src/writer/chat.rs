//! Chat-domain command logic applied inside the writer's transaction.

use serde_json::{Map, Value, json};
use sqlx::SqliteConnection;

use super::actor::Batch;
use super::{ChatCreated, EventBody, NewChat, NewRun};
use crate::db::{self, now_ms};
use crate::error::{Error, Result};

/// Creates a chat and imports its messages; idempotent on the id.
pub(super) async fn create(conn: &mut SqliteConnection, batch: &mut Batch, chat: NewChat) -> Result<ChatCreated> {
    let now = now_ms();
    let title = chat.title.as_deref().map(str::trim).filter(|t| !t.is_empty()).unwrap_or("New chat");
    match db::chats::insert_chat(conn, &chat.id, title, now).await? {
        db::chats::Inserted::Yes => {}
        db::chats::Inserted::Exists { deleted: false } => return Ok(ChatCreated::Existing),
        db::chats::Inserted::Exists { deleted: true } => {
            return Err(Error::conflict("chat_deleted", "A deleted chat has this id; recover it instead."));
        }
    }
    let mut last_ts = 0;
    for (idx, message) in chat.messages.into_iter().enumerate() {
        let message = db::chats::StoredMessage::from_import(message, now, idx)?;
        last_ts = last_ts.max(message.ts);
        db::chats::push_message(conn, &chat.id, &message).await?;
    }
    if last_ts > 0 {
        db::chats::touch_activity(conn, &chat.id, last_ts.min(now)).await?;
    }
    batch.system("chat_created", json!({ "chatId": chat.id }));
    Ok(ChatCreated::Created)
}

/// Appends events to the journal, fenced on the run when one is named.
pub(super) async fn emit(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &str,
    run_id: Option<&str>,
    events: Vec<EventBody>,
) -> Result<i64> {
    if let Some(run_id) = run_id {
        ensure_running(conn, chat_id, run_id).await?;
    }
    let mut last = 0;
    for event in events {
        last = batch.emit(conn, chat_id, event).await?;
    }
    Ok(last)
}

/// Opens a running run with an empty live message.
pub(super) async fn start_run(conn: &mut SqliteConnection, batch: &mut Batch, run: &NewRun) -> Result<()> {
    let now = now_ms();
    match db::chats::insert_run(conn, &run.run_id, &run.chat_id, run.provider.as_deref(), now).await {
        Err(e) if e.is_unique_violation() => {
            return Err(Error::conflict("chat_busy", "A turn is already running in this chat."));
        }
        other => other?,
    }
    let live = Value::Object(live_stub(now)).to_string();
    let head = db::chats::head_seq(conn, &run.chat_id).await?.ok_or_else(chat_not_found)?;
    db::chats::replace_live(conn, &run.chat_id, &run.run_id, &live, head, now).await?;
    batch.emit(conn, &run.chat_id, super::event("run_started", json!({ "run_id": run.run_id }))).await?;
    Ok(())
}

/// The empty assistant message a turn starts from.
pub(crate) fn live_stub(ts: i64) -> Map<String, Value> {
    let mut live = Map::new();
    live.insert("role".into(), "assistant".into());
    live.insert("content".into(), "".into());
    live.insert("blocks".into(), Value::Array(Vec::new()));
    live.insert("ts".into(), ts.into());
    live
}

async fn ensure_running(conn: &mut SqliteConnection, chat_id: &str, run_id: &str) -> Result<()> {
    if db::chats::run_is_running(conn, chat_id, run_id).await? {
        Ok(())
    } else {
        Err(Error::conflict("run_not_running", "This turn has already ended."))
    }
}

fn chat_not_found() -> Error {
    Error::not_found("chat_not_found", "No such chat.")
}
