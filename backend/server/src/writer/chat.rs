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
    if let Some(app) = &chat.app {
        db::embeds::set_chat_app(
            conn,
            &chat.id,
            app.app_id,
            app.owner_visible,
            app.scope.as_deref(),
            app.scope_label.as_deref(),
        )
        .await?;
        let settings = db::chats::ChatSettings {
            provider: app.provider.clone(),
            agent_settings: app.agent_settings.clone().map(Some),
            ..Default::default()
        };
        db::chats::update_settings(conn, &chat.id, &settings, now).await?;
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

/// Title given to a chat from its first message when the owner has not named it.
fn title_from(content: &str) -> String {
    let first_line = content.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("New chat");
    let mut title: String = first_line.chars().take(60).collect();
    if first_line.chars().count() > 60 {
        title.push('…');
    }
    title
}

fn pending_values(rows: &[(String, String)]) -> Vec<Value> {
    rows.iter().filter_map(|(_, body)| serde_json::from_str(body).ok()).collect()
}

async fn emit_queue(conn: &mut SqliteConnection, batch: &mut Batch, chat_id: &str) -> Result<Vec<Value>> {
    let pending = pending_values(&db::chats::pending_list(conn, chat_id).await?);
    batch.emit(conn, chat_id, super::event("queue_changed", json!({ "pending": pending }))).await?;
    Ok(pending)
}

async fn live_chat(conn: &mut SqliteConnection, chat_id: &str) -> Result<db::chats::ChatRow> {
    match db::chats::get(&mut *conn, chat_id).await? {
        Some(chat) if chat.deleted_at.is_none() => Ok(chat),
        _ => Err(chat_not_found()),
    }
}

/// Starts a run for `messages` (already in the transcript): run row, live stub, events.
async fn open_run(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &str,
    run_id: &str,
    provider: Option<&str>,
) -> Result<()> {
    start_run(
        conn,
        batch,
        &NewRun { chat_id: chat_id.into(), run_id: run_id.into(), provider: provider.map(Into::into) },
    )
    .await?;
    batch.system("chat_run_started", json!({ "chatId": chat_id }));
    Ok(())
}

/// Appends a user message to the transcript and announces it.
async fn push_user(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &str,
    body: Map<String, Value>,
) -> Result<Value> {
    let stored = db::chats::StoredMessage::from_import(body, now_ms(), 0)?;
    db::chats::push_message(conn, chat_id, &stored).await?;
    let value: Value = serde_json::from_str(&stored.body).map_err(|e| Error::Internal(e.to_string()))?;
    batch.emit(conn, chat_id, super::event("user_message", json!({ "message": value }))).await?;
    Ok(value)
}

/// Send: duplicate check, then start a turn when idle or queue behind a running one.
pub(super) async fn send(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    send: super::Send,
) -> Result<super::SendOutcome> {
    use super::SendOutcome;
    let chat = live_chat(conn, &send.chat_id).await?;
    let chat_id = send.chat_id.as_str();
    let running = db::chats::running_run(&mut *conn, chat_id).await?;
    if let Some(body) = db::chats::message_by_cid(conn, chat_id, &send.message.cid).await? {
        let message = serde_json::from_str(&body).unwrap_or(Value::Null);
        return Ok(SendOutcome::Duplicate { message, running: running.is_some() });
    }
    let queue = db::chats::pending_list(conn, chat_id).await?;
    if let Some((_, body)) = queue.iter().find(|(cid, _)| *cid == send.message.cid) {
        let message = serde_json::from_str(body).unwrap_or(Value::Null);
        return Ok(SendOutcome::Duplicate { message, running: running.is_some() });
    }
    match (&chat.pending_question_id, &send.answering) {
        (Some(pending), Some(answering)) if pending == answering => {}
        (Some(_), _) => {
            return Err(Error::conflict("pending_question_open", "Answer the open question (or stop the turn) first."));
        }
        (None, Some(_)) => return Err(Error::gone("question_stale", "That question is no longer open.")),
        (None, None) => {}
    }
    let now = now_ms();
    let body = send.message.body(now);
    if running.is_some() {
        let body_text = Value::Object(body.clone()).to_string();
        let position = db::chats::push_pending(conn, chat_id, &send.message.cid, &body_text, now).await?;
        let pending = emit_queue(conn, batch, chat_id).await?;
        return Ok(SendOutcome::Queued { position, message: Value::Object(body), pending });
    }
    // Idle: messages left in the queue (e.g. across a restart) go first, in one turn.
    let mut messages = Vec::new();
    for (_, queued) in db::chats::take_pending(conn, chat_id).await? {
        if let Ok(Value::Object(queued)) = serde_json::from_str::<Value>(&queued) {
            messages.push(push_user(conn, batch, chat_id, queued).await?);
        }
    }
    if !queue.is_empty() {
        emit_queue(conn, batch, chat_id).await?;
    }
    messages.push(push_user(conn, batch, chat_id, body).await?);
    if chat.title == "New chat" && !chat.title_locked && !send.message.hidden {
        let title = title_from(&send.message.content);
        db::chats::set_title(conn, chat_id, &title, false, now).await?;
        batch.emit(conn, chat_id, super::event("chat_renamed", json!({ "title": title }))).await?;
        batch.system("chat_renamed", json!({ "chatId": chat_id, "title": title }));
    }
    if chat.provider.as_deref() != Some(send.provider.as_str()) {
        let settings = db::chats::ChatSettings { provider: Some(send.provider.clone()), ..Default::default() };
        db::chats::update_settings(conn, chat_id, &settings, now).await?;
    }
    db::chats::touch_activity(conn, chat_id, now).await?;
    open_run(conn, batch, chat_id, &send.run_id, Some(&send.provider)).await?;
    Ok(SendOutcome::Started { run_id: send.run_id, messages })
}

/// Steering: the live message so far is sealed into the transcript, the owner's message
/// follows, and the run continues with a fresh live message.
pub(super) async fn steer_commit(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &str,
    run_id: &str,
    message: &super::UserMessage,
    sealed: Value,
) -> Result<Value> {
    ensure_running(conn, chat_id, run_id).await?;
    if db::chats::message_by_cid(conn, chat_id, &message.cid).await?.is_some() {
        return Err(Error::conflict("duplicate_cid", "This message was already sent."));
    }
    let now = now_ms();
    let has_blocks = sealed.get("blocks").and_then(Value::as_array).is_some_and(|b| !b.is_empty());
    if let (true, Value::Object(mut body)) = (has_blocks, sealed) {
        body.insert("run_id".into(), run_id.into());
        let stored = db::chats::StoredMessage::from_import(body, now, 0)?;
        db::chats::push_message(conn, chat_id, &stored).await?;
    }
    let stored = db::chats::StoredMessage::from_import(message.body(now), now, 0)?;
    db::chats::push_message(conn, chat_id, &stored).await?;
    let value: Value = serde_json::from_str(&stored.body).map_err(|e| Error::Internal(e.to_string()))?;
    let seq = batch
        .emit(
            conn,
            chat_id,
            super::event("steered_into_turn", json!({ "run_id": run_id, "message": value, "sealed": has_blocks })),
        )
        .await?;
    let live = Value::Object(live_stub(now)).to_string();
    db::chats::replace_live(conn, chat_id, run_id, &live, seq, now).await?;
    db::chats::touch_activity(conn, chat_id, now).await?;
    Ok(value)
}

/// Edits a queued message's text.
pub(super) async fn update_pending(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &str,
    cid: &str,
    content: &str,
) -> Result<(bool, Vec<Value>)> {
    live_chat(conn, chat_id).await?;
    let queue = db::chats::pending_list(conn, chat_id).await?;
    let Some((_, body)) = queue.iter().find(|(c, _)| c == cid) else {
        return Ok((false, pending_values(&queue)));
    };
    let mut message: Value = serde_json::from_str(body).unwrap_or_else(|_| json!({}));
    message["content"] = Value::String(content.to_owned());
    db::chats::update_pending(conn, chat_id, cid, &message.to_string()).await?;
    Ok((true, emit_queue(conn, batch, chat_id).await?))
}

/// Empties the queue; answers the removed cids.
pub(super) async fn clear_queue(conn: &mut SqliteConnection, batch: &mut Batch, chat_id: &str) -> Result<Vec<String>> {
    live_chat(conn, chat_id).await?;
    let removed: Vec<String> = db::chats::take_pending(conn, chat_id).await?.into_iter().map(|(cid, _)| cid).collect();
    if !removed.is_empty() {
        emit_queue(conn, batch, chat_id).await?;
    }
    Ok(removed)
}

/// Removes a queued message.
pub(super) async fn cancel_pending(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &str,
    cid: &str,
) -> Result<(bool, Vec<Value>)> {
    live_chat(conn, chat_id).await?;
    if !db::chats::delete_pending(conn, chat_id, cid).await? {
        return Ok((false, pending_values(&db::chats::pending_list(conn, chat_id).await?)));
    }
    Ok((true, emit_queue(conn, batch, chat_id).await?))
}

/// Question first becomes durable (marker + live message + journal), then it is shown.
pub(super) async fn question_commit(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &str,
    run_id: &str,
    question_id: &str,
    event: EventBody,
    live: &Value,
) -> Result<()> {
    ensure_running(conn, chat_id, run_id).await?;
    db::chats::set_pending_question(conn, chat_id, Some(question_id)).await?;
    let seq = batch.emit(conn, chat_id, event).await?;
    db::chats::update_live(conn, chat_id, run_id, &live.to_string(), seq, now_ms()).await?;
    batch.system("chat_owner_input_changed", json!({ "chatId": chat_id, "pending_question_id": question_id }));
    Ok(())
}

/// Records answers; the question must still be the pending one.
pub(super) async fn answer_question(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &str,
    question_id: &str,
    answers: &Value,
) -> Result<()> {
    let chat = live_chat(conn, chat_id).await?;
    if chat.pending_question_id.as_deref() != Some(question_id) {
        return Err(Error::gone("question_stale", "That question is no longer open."));
    }
    db::chats::set_pending_question(conn, chat_id, None).await?;
    // After a restart the question sits in the settled transcript: record the answers there.
    if let Some((idx, body)) = db::chats::message_with_question(conn, chat_id, question_id).await?
        && let Ok(mut message) = serde_json::from_str::<Value>(&body)
    {
        if let Some(blocks) = message.get_mut("blocks").and_then(Value::as_array_mut) {
            for block in blocks.iter_mut().filter(|b| b["question_id"] == question_id) {
                block["answers"] = answers.clone();
            }
        }
        db::chats::replace_message(conn, chat_id, idx, &message.to_string()).await?;
    }
    db::chats::touch_activity(conn, chat_id, now_ms()).await?;
    batch
        .emit(conn, chat_id, super::event("answers_applied", json!({ "question_id": question_id, "answers": answers })))
        .await?;
    batch.system("chat_owner_input_changed", json!({ "chatId": chat_id, "pending_question_id": null }));
    Ok(())
}

/// Ends a run: merge, record, then promote the queue (or clear it when stopped).
pub(super) async fn finish_run(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    finish: super::FinishRun,
) -> Result<super::FinishOutcome> {
    let chat_id = finish.chat_id.as_str();
    ensure_running(conn, chat_id, &finish.run_id).await?;
    let now = now_ms();
    let body = match finish.body {
        Some(body) => Some(body),
        None => match db::chats::live_body(conn, chat_id).await? {
            Some((run, body)) if run == finish.run_id => serde_json::from_str::<Value>(&body).ok().map(|b| {
                let mut live = crate::agent::live::LiveMessage::from_body(&b);
                live.close_running_tools("done");
                live.to_body()
            }),
            _ => None,
        },
    };
    if let Some(Value::Object(body)) = body
        && body.get("blocks").and_then(Value::as_array).is_some_and(|b| !b.is_empty())
    {
        let mut body = body;
        body.insert("run_id".into(), finish.run_id.clone().into());
        let stored = db::chats::StoredMessage::from_import(body, now, 0)?;
        db::chats::push_message(conn, chat_id, &stored).await?;
    }
    db::chats::delete_live(conn, chat_id).await?;
    let mut end = finish.end.clone();
    finish.status.clone_into(&mut end.status);
    db::chats::close_run(conn, &finish.run_id, &end, now).await?;
    if let Some(session) = &end.session_id {
        db::chats::set_session(conn, chat_id, &finish.run_id, session).await?;
    }
    db::chats::set_pending_question(conn, chat_id, None).await?;
    db::chats::touch_activity(conn, chat_id, now).await?;
    let usage = json!({
        "input_tokens": end.input_tokens, "output_tokens": end.output_tokens,
        "cache_read_tokens": end.cache_read_tokens, "cache_write_tokens": end.cache_write_tokens,
    });
    batch
        .emit(
            conn,
            chat_id,
            super::event(
                "done",
                json!({ "run_id": finish.run_id, "status": finish.status, "usage": usage, "cost_usd": end.cost_usd, "error": end.error }),
            ),
        )
        .await?;
    let mut outcome = super::FinishOutcome::default();
    let queue = db::chats::pending_list(conn, chat_id).await?;
    if finish.status == "stopped" || finish.status == "interrupted" {
        if finish.status == "stopped" && !queue.is_empty() {
            outcome.cleared = db::chats::take_pending(conn, chat_id).await?.into_iter().map(|(cid, _)| cid).collect();
            emit_queue(conn, batch, chat_id).await?;
        }
    } else if !queue.is_empty() {
        db::chats::take_pending(conn, chat_id).await?;
        let mut messages = Vec::new();
        for (_, queued) in queue {
            if let Ok(Value::Object(queued)) = serde_json::from_str::<Value>(&queued) {
                messages.push(push_user(conn, batch, chat_id, queued).await?);
            }
        }
        emit_queue(conn, batch, chat_id).await?;
        batch
            .emit(
                conn,
                chat_id,
                super::event("queued_turn_starting", json!({ "run_id": finish.next_run_id, "messages": messages })),
            )
            .await?;
        let provider: Option<String> = db::chats::get(&mut *conn, chat_id).await?.and_then(|c| c.provider);
        start_run(conn, batch, &NewRun { chat_id: chat_id.into(), run_id: finish.next_run_id.clone(), provider })
            .await?;
        outcome.next = Some((finish.next_run_id, messages));
    }
    if outcome.next.is_none() {
        batch.system("chat_run_finished", json!({ "chatId": chat_id, "status": finish.status }));
    }
    Ok(outcome)
}

/// Renames, pins, changes settings.
pub(super) async fn update_chat(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &str,
    patch: super::ChatPatch,
) -> Result<()> {
    live_chat(conn, chat_id).await?;
    let now = now_ms();
    if let Some(title) = &patch.title {
        db::chats::set_title(conn, chat_id, title, true, now).await?;
        let title: String = title.chars().take(db::chats::MAX_TITLE_CHARS).collect();
        batch.emit(conn, chat_id, super::event("chat_renamed", json!({ "title": title }))).await?;
        batch.system("chat_renamed", json!({ "chatId": chat_id, "title": title }));
    }
    db::chats::update_settings(conn, chat_id, &patch.settings, now).await?;
    if let Some((scope, label)) = &patch.scope {
        db::embeds::set_chat_scope(conn, chat_id, scope.as_deref(), label.as_deref()).await?;
    }
    batch.system("chat_updated", json!({ "chatId": chat_id }));
    Ok(())
}

/// Soft delete (the caller stopped the turn first).
pub(super) async fn delete_chat(conn: &mut SqliteConnection, batch: &mut Batch, chat_id: &str) -> Result<()> {
    live_chat(conn, chat_id).await?;
    if let Some(run) = db::chats::running_run(&mut *conn, chat_id).await? {
        let end = db::chats::RunEnd { status: "stopped".into(), ..Default::default() };
        db::chats::close_run(conn, &run, &end, now_ms()).await?;
        db::chats::delete_live(conn, chat_id).await?;
    }
    batch.emit(conn, chat_id, super::event("chat_deleted", json!({}))).await?;
    db::chats::soft_delete(conn, chat_id, now_ms()).await?;
    batch.system("chat_deleted", json!({ "chatId": chat_id }));
    Ok(())
}

/// Undelete within the window.
pub(super) async fn recover_chat(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &str,
    cutoff: i64,
) -> Result<()> {
    match db::chats::get(&mut *conn, chat_id).await? {
        None => return Err(chat_not_found()),
        Some(c) if c.deleted_at.is_none() => return Ok(()),
        Some(_) => {}
    }
    if !db::chats::recover(conn, chat_id, cutoff).await? {
        return Err(Error::gone("chat_purged", "This chat was deleted too long ago to recover."));
    }
    batch.system("chat_recovered", json!({ "chatId": chat_id }));
    Ok(())
}

/// Most journal events folded into an interrupted message at boot (the journal keeps fewer).
const MAX_BOOT_FOLD_EVENTS: i64 = 10_000;

/// Boot reconciliation of runs left `running` by a crash or kill: the live message — its last
/// snapshot plus the journal's events after it — becomes the transcript's message.
pub(super) async fn reconcile_startup(conn: &mut SqliteConnection, batch: &mut Batch) -> Result<Vec<String>> {
    let mut chats = Vec::new();
    for (run_id, chat_id) in db::chats::all_running_runs(conn).await? {
        let chat = db::chats::get(&mut *conn, &chat_id).await?;
        let deleted = chat.as_ref().is_none_or(|c| c.deleted_at.is_some());
        let waiting = chat.as_ref().and_then(|c| c.pending_question_id.clone()).is_some();
        let now = now_ms();
        if !deleted {
            let live = db::chats::live_body(conn, &chat_id).await?;
            let mut message = match live {
                Some((run, body)) if run == run_id => {
                    let mut message = serde_json::from_str::<Value>(&body)
                        .map(|b| crate::agent::live::LiveMessage::from_body(&b))
                        .unwrap_or_else(|_| crate::agent::live::LiveMessage::new(now));
                    // What streamed after the last snapshot is committed too, and clients saw it.
                    for data in db::chats::events_after_live(conn, &chat_id, MAX_BOOT_FOLD_EVENTS).await? {
                        if let Ok(Value::Object(event)) = serde_json::from_str::<Value>(&data) {
                            message.apply(&event);
                        }
                    }
                    message
                }
                _ => crate::agent::live::LiveMessage::new(now),
            };
            message.close_running_tools("done");
            if !waiting {
                message.push_error(
                    "This turn was interrupted when Möbius restarted. Send a message to continue where it left off.",
                    true,
                );
            }
            let mut body = match message.to_body() {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            body.insert("run_id".into(), run_id.clone().into());
            let stored = db::chats::StoredMessage::from_import(body, now, 0)?;
            db::chats::push_message(conn, &chat_id, &stored).await?;
        }
        db::chats::delete_live(conn, &chat_id).await?;
        let end = db::chats::RunEnd { status: "interrupted".into(), ..Default::default() };
        db::chats::close_run(conn, &run_id, &end, now).await?;
        if !deleted {
            batch
                .emit(conn, &chat_id, super::event("done", json!({ "run_id": run_id, "status": "interrupted" })))
                .await?;
            chats.push(chat_id);
        }
    }
    Ok(chats)
}
