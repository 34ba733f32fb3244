//! Chat-domain command logic applied inside the writer's transaction.

use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::SqliteConnection;

use super::batch::Batch;
use super::commands::{
    ChatCreated, ChatPatch, FinishOutcome, FinishRun, NewChat, NewRun, Regenerate, RegenerateOutcome, Send,
    SendOutcome, Started,
};
use crate::db::{self, now_ms};
use crate::error::{Domain, Error, Result};
use crate::protocol::{
    Answers, Block, ChatEvent, ChatId, Cid, HandoffCard, JournalEntry, LiveMessage, Message, Pause, PauseKind,
    ProviderKind, QuestionCard, QuestionId, Role, RunId, RunStatus, SystemEvent, TokenCounts, ToolStatus, UserInput,
};

/// Longest title taken from a chat's first message, in characters.
const AUTO_TITLE_CHARS: usize = 60;
/// The note a turn cut short by a restart ends with.
const INTERRUPTED_NOTE: &str =
    "This turn was interrupted when Möbius restarted. Send a message to continue where it left off.";

fn encode<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::Internal(format!("a row could not be encoded: {e}")))
}

fn decode<T: DeserializeOwned>(text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::Internal(format!("a stored row is not readable: {e}")))
}

fn role_name(message: &Message) -> &'static str {
    match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

/// Appends a message to the end of the transcript.
async fn store(conn: &mut SqliteConnection, chat_id: &str, message: &Message) -> Result<()> {
    let body = encode(message)?;
    let row =
        db::messages::NewMessage { role: role_name(message), cid: message.cid.as_deref(), ts: message.ts, body: &body };
    let idx = db::messages::push_message(conn, chat_id, row).await?;
    if let Some(text) = db::search::document_text(message) {
        db::search::index_message(conn, chat_id, idx, message.ts, &text).await?;
    }
    Ok(())
}

/// Appends an imported transcript in bulk (a few statements, whatever its length). Its search
/// documents are written after the commit, from the stored messages: the batch asks the writer
/// to work through the chat's backlog.
async fn store_all(conn: &mut SqliteConnection, batch: &mut Batch, chat_id: &str, messages: &[Message]) -> Result<()> {
    if messages.is_empty() {
        return Ok(());
    }
    let bodies = messages.iter().map(encode).collect::<Result<Vec<_>>>()?;
    let rows: Vec<db::messages::NewMessage<'_>> = messages
        .iter()
        .zip(&bodies)
        .map(|(m, body)| db::messages::NewMessage { role: role_name(m), cid: m.cid.as_deref(), ts: m.ts, body })
        .collect();
    let first = db::messages::push_messages(conn, chat_id, &rows).await?;
    let end = first + i64::try_from(messages.len()).map_err(|_| Error::Internal("too many messages".into()))?;
    db::search::queue_backlog(conn, chat_id, first, end).await?;
    batch.search_backlog = true;
    Ok(())
}

/// Creates a chat and imports its messages; idempotent on the id.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat.id))]
pub(super) async fn create(conn: &mut SqliteConnection, batch: &mut Batch, chat: NewChat) -> Result<ChatCreated> {
    let now = now_ms();
    let title = chat.title.as_deref().map(str::trim).filter(|t| !t.is_empty()).unwrap_or("New chat");
    match db::chats::insert_chat(conn, &chat.id, title, now).await? {
        db::chats::Inserted::Yes => db::search::index_title(conn, &chat.id).await?,
        db::chats::Inserted::Exists { deleted: false } => return Ok(ChatCreated::Existing),
        db::chats::Inserted::Exists { deleted: true } => return Err(Domain::ChatDeleted.into()),
    }
    store_all(conn, batch, &chat.id, &chat.messages).await?;
    let last_ts = chat.messages.iter().map(|m| m.ts).max().unwrap_or(0);
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
            provider: app.provider,
            agent_settings: app.agent_settings.clone().map(Some),
            ..Default::default()
        };
        db::chats::update_settings(conn, &chat.id, &settings, now).await?;
    }
    batch.system(SystemEvent::ChatCreated { chat_id: chat.id });
    Ok(ChatCreated::Created)
}

/// Appends events to the journal, fenced on the run when one is named.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat_id))]
pub(super) async fn emit(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &ChatId,
    run_id: Option<&RunId>,
    events: Vec<ChatEvent>,
) -> Result<i64> {
    if let Some(run_id) = run_id {
        ensure_running(conn, chat_id, run_id).await?;
    }
    let mut last = 0;
    for event in events {
        let plan = match &event {
            ChatEvent::Plan(plan) => Some(plan.clone()),
            _ => None,
        };
        last = batch.emit(conn, chat_id, event).await?;
        // A pinned goal follows the agent's plan.
        if let Some(plan) = plan
            && let Some(seq) = super::goals::follow_plan(conn, batch, chat_id, &plan).await?
        {
            last = seq;
        }
    }
    Ok(last)
}

/// Opens a running run with an empty live message; answers when it started.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %run.chat_id, run.id = %run.run_id))]
pub(super) async fn start_run(conn: &mut SqliteConnection, batch: &mut Batch, run: &NewRun) -> Result<i64> {
    start_attempt(conn, batch, run, None).await
}

/// [`start_run`] for a turn whose reply is attempt `version` of a regenerated one.
async fn start_attempt(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    run: &NewRun,
    version: Option<u32>,
) -> Result<i64> {
    let now = now_ms();
    match db::runs::insert_run(conn, &run.run_id, &run.chat_id, Some(run.provider.id()), now).await {
        Err(e) if e.is_unique_violation() => return Err(Domain::ChatBusy.into()),
        other => other?,
    }
    // A turn that starts (the owner sent, or the chat continued) ends any park.
    db::chats::set_resume(conn, &run.chat_id, None).await?;
    let live = encode(&Message { version, ..Message::assistant(now, Vec::new()) })?;
    let head = db::journal::head_seq(conn, &run.chat_id).await?.ok_or(Domain::ChatNotFound)?;
    db::runs::replace_live(conn, &run.chat_id, &run.run_id, &live, head, now).await?;
    batch
        .emit(conn, &run.chat_id, ChatEvent::RunStarted { run_id: run.run_id.clone(), ts: Some(now), version })
        .await?;
    Ok(now)
}

async fn ensure_running(conn: &mut SqliteConnection, chat_id: &str, run_id: &str) -> Result<()> {
    if db::runs::run_is_running(conn, chat_id, run_id).await? { Ok(()) } else { Err(Domain::RunNotRunning.into()) }
}

/// Title given to a chat from its first message when the owner has not named it.
fn title_from(content: &str) -> String {
    let first_line = content.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("New chat");
    let mut title: String = first_line.chars().take(AUTO_TITLE_CHARS).collect();
    if first_line.chars().count() > AUTO_TITLE_CHARS {
        title.push('…');
    }
    title
}

/// The queued messages; a row that cannot be read is left out.
fn pending_messages(rows: &[(String, String)]) -> Vec<Message> {
    rows.iter().filter_map(|(_, body)| serde_json::from_str(body).ok()).collect()
}

async fn emit_queue(conn: &mut SqliteConnection, batch: &mut Batch, chat_id: &str) -> Result<Vec<Message>> {
    let pending = pending_messages(&db::queue::pending_list(conn, chat_id).await?);
    batch.emit(conn, chat_id, ChatEvent::QueueChanged { pending: pending.clone() }).await?;
    Ok(pending)
}

async fn live_chat(conn: &mut SqliteConnection, chat_id: &str) -> Result<db::chats::ChatRow> {
    match db::chats::get(&mut *conn, chat_id).await? {
        Some(chat) if chat.deleted_at.is_none() => Ok(chat),
        _ => Err(Domain::ChatNotFound.into()),
    }
}

/// Starts a run for messages already in the transcript and announces it; answers its start.
async fn open_run(conn: &mut SqliteConnection, batch: &mut Batch, run: &NewRun, version: Option<u32>) -> Result<i64> {
    let ts = start_attempt(conn, batch, run, version).await?;
    batch.system(SystemEvent::ChatRunStarted { chat_id: run.chat_id.clone() });
    Ok(ts)
}

/// Appends a user message to the transcript and announces it.
async fn push_user(conn: &mut SqliteConnection, batch: &mut Batch, chat_id: &str, message: Message) -> Result<Message> {
    store(conn, chat_id, &message).await?;
    batch.emit(conn, chat_id, ChatEvent::UserMessage { message: message.clone() }).await?;
    Ok(message)
}

/// Moves the queue into the transcript (in order); answers the user rows.
async fn promote_queue(conn: &mut SqliteConnection, batch: &mut Batch, chat_id: &str) -> Result<Vec<Message>> {
    let mut messages = Vec::new();
    for (_, queued) in db::queue::take_pending(conn, chat_id).await? {
        if let Ok(queued) = serde_json::from_str::<Message>(&queued) {
            messages.push(push_user(conn, batch, chat_id, queued).await?);
        }
    }
    Ok(messages)
}

/// Send: duplicate check, then start a turn when idle or queue behind a running one.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %send.chat_id))]
pub(super) async fn send(conn: &mut SqliteConnection, batch: &mut Batch, send: Send) -> Result<SendOutcome> {
    let chat = live_chat(conn, &send.chat_id).await?;
    let chat_id = &send.chat_id;
    let running = db::runs::running_run(&mut *conn, chat_id).await?;
    if let Some(body) = db::messages::message_by_cid(conn, chat_id, &send.message.cid).await? {
        return Ok(SendOutcome::Duplicate { message: decode(&body)?, running: running.is_some() });
    }
    let queue = db::queue::pending_list(conn, chat_id).await?;
    if let Some((_, body)) = queue.iter().find(|(cid, _)| *cid == *send.message.cid) {
        return Ok(SendOutcome::Duplicate { message: decode(body)?, running: running.is_some() });
    }
    match (&chat.pending_question_id, &send.answering) {
        (Some(pending), Some(answering)) if *answering == pending.as_str() => {}
        (Some(_), _) => return Err(Domain::PendingQuestionOpen.into()),
        (None, Some(_)) => return Err(Domain::QuestionStale.into()),
        (None, None) => {}
    }
    let now = now_ms();
    let message = send.message.at(now);
    if running.is_some() {
        let position = db::queue::push_pending(conn, chat_id, &send.message.cid, &encode(&message)?, now).await?;
        let pending = emit_queue(conn, batch, chat_id).await?;
        return Ok(SendOutcome::Queued { position, message, pending });
    }
    // Idle: messages left in the queue (e.g. across a restart) go first, in one turn.
    let mut messages = promote_queue(conn, batch, chat_id).await?;
    if !queue.is_empty() {
        emit_queue(conn, batch, chat_id).await?;
    }
    messages.push(push_user(conn, batch, chat_id, message).await?);
    if chat.title == "New chat" && !chat.title_locked && !send.message.hidden {
        let title = title_from(&send.message.content);
        db::chats::set_title(conn, chat_id, &title, false, now).await?;
        db::search::index_title(conn, chat_id).await?;
        batch.emit(conn, chat_id, ChatEvent::ChatRenamed { title: title.clone() }).await?;
        batch.system(SystemEvent::ChatRenamed { chat_id: chat_id.clone(), title });
    }
    if chat.provider != Some(send.provider) {
        let settings = db::chats::ChatSettings { provider: Some(send.provider), ..Default::default() };
        db::chats::update_settings(conn, chat_id, &settings, now).await?;
    }
    db::chats::touch_activity(conn, chat_id, now).await?;
    let run = NewRun { chat_id: chat_id.clone(), run_id: send.run_id, provider: send.provider };
    let ts = open_run(conn, batch, &run, None).await?;
    Ok(SendOutcome::Started(Started { run_id: run.run_id, provider: run.provider, ts, messages, version: None }))
}

/// What the agent is told with the owner's message when it answers it again.
const REGENERATE_NOTE: &str = "[The owner asked for another answer to this message of theirs (Regenerate). Your \
     earlier answer stays in the chat as a previous version; answer afresh.]";

/// Regenerate: a new turn answers the owner's last visible message again; its reply becomes
/// the next version of the reply already there (no owner message is added).
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %regenerate.chat_id))]
pub(super) async fn regenerate(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    regenerate: Regenerate,
) -> Result<RegenerateOutcome> {
    let chat = live_chat(conn, &regenerate.chat_id).await?;
    let chat_id = &regenerate.chat_id;
    let running = db::runs::running_run(&mut *conn, chat_id).await?.is_some();
    let exchange = db::messages::last_exchange(conn, chat_id).await?.ok_or(Domain::NotRegenerable)?;
    if regenerate.message_idx.is_some_and(|idx| idx != exchange.user_idx) || exchange.handoff_after {
        return Err(Domain::NotRegenerable.into());
    }
    // A reply that was never written (a turn that failed at once) has no version to keep.
    let versions = if exchange.rows_after == 0 {
        0
    } else {
        u32::try_from(exchange.max_version.unwrap_or(1).max(1)).unwrap_or(u32::MAX)
    };
    match regenerate.versions {
        Some(seen) if seen < versions => return Ok(RegenerateOutcome::Duplicate { versions, running }),
        Some(seen) if seen > versions => return Err(Domain::NotRegenerable.into()),
        _ => {}
    }
    if running {
        return Err(Domain::ChatBusy.into());
    }
    if chat.pending_question_id.is_some() {
        return Err(Domain::PendingQuestionOpen.into());
    }
    let now = now_ms();
    if chat.provider != Some(regenerate.provider) {
        let settings = db::chats::ChatSettings { provider: Some(regenerate.provider), ..Default::default() };
        db::chats::update_settings(conn, chat_id, &settings, now).await?;
    }
    db::chats::touch_activity(conn, chat_id, now).await?;
    let version = (versions > 0).then(|| versions.saturating_add(1));
    let run = NewRun { chat_id: chat_id.clone(), run_id: regenerate.run_id, provider: regenerate.provider };
    let ts = open_run(conn, batch, &run, version).await?;
    // The agent reads the owner's message again (files included), told why; nothing is stored.
    let mut prompt: Message = decode(&exchange.user_body)?;
    prompt.content = format!("{REGENERATE_NOTE}\n\n{}", prompt.content);
    prompt.cid = None;
    Ok(RegenerateOutcome::Started(Started {
        run_id: run.run_id,
        provider: run.provider,
        ts,
        messages: vec![prompt],
        version,
    }))
}

/// Steering: the live message so far is sealed into the transcript, the owner's message
/// follows, and the run continues with a fresh live message (started at the message's `ts`).
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat_id, run.id = %run_id))]
pub(super) async fn steer_commit(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &ChatId,
    run_id: &RunId,
    message: &UserInput,
    mut sealed: Message,
) -> Result<Message> {
    ensure_running(conn, chat_id, run_id).await?;
    if db::messages::message_by_cid(conn, chat_id, &message.cid).await?.is_some() {
        return Err(Domain::AlreadySent.into());
    }
    let now = now_ms();
    let has_blocks = sealed.has_blocks();
    if has_blocks {
        sealed.run_id = Some(run_id.clone());
        store(conn, chat_id, &sealed).await?;
    }
    let user = message.at(now);
    store(conn, chat_id, &user).await?;
    let event = ChatEvent::SteeredIntoTurn { run_id: run_id.clone(), message: user.clone(), sealed: has_blocks };
    let seq = batch.emit(conn, chat_id, event).await?;
    let live = encode(&Message::assistant(now, Vec::new()))?;
    db::runs::replace_live(conn, chat_id, run_id, &live, seq, now).await?;
    db::chats::touch_activity(conn, chat_id, now).await?;
    Ok(user)
}

/// Edits a queued message's text.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat_id))]
pub(super) async fn update_pending(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &str,
    cid: &Cid,
    content: &str,
) -> Result<(bool, Vec<Message>)> {
    live_chat(conn, chat_id).await?;
    let queue = db::queue::pending_list(conn, chat_id).await?;
    let Some((_, body)) = queue.iter().find(|(c, _)| *cid == c.as_str()) else {
        return Ok((false, pending_messages(&queue)));
    };
    let mut message: Message = decode(body)?;
    content.clone_into(&mut message.content);
    db::queue::update_pending(conn, chat_id, cid, &encode(&message)?).await?;
    Ok((true, emit_queue(conn, batch, chat_id).await?))
}

/// Empties the queue; answers the removed cids.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat_id))]
pub(super) async fn clear_queue(conn: &mut SqliteConnection, batch: &mut Batch, chat_id: &str) -> Result<Vec<Cid>> {
    live_chat(conn, chat_id).await?;
    let removed: Vec<Cid> =
        db::queue::take_pending(conn, chat_id).await?.into_iter().map(|(cid, _)| Cid::from(cid)).collect();
    if !removed.is_empty() {
        emit_queue(conn, batch, chat_id).await?;
    }
    Ok(removed)
}

/// Removes a queued message.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat_id))]
pub(super) async fn cancel_pending(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &str,
    cid: &Cid,
) -> Result<(bool, Vec<Message>)> {
    live_chat(conn, chat_id).await?;
    if !db::queue::delete_pending(conn, chat_id, cid).await? {
        return Ok((false, pending_messages(&db::queue::pending_list(conn, chat_id).await?)));
    }
    Ok((true, emit_queue(conn, batch, chat_id).await?))
}

/// A card first becomes durable (marker + live message + journal), then it is shown.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat_id, run.id = %run_id))]
pub(super) async fn question_commit(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &ChatId,
    run_id: &RunId,
    card: QuestionCard,
    live: &Message,
) -> Result<()> {
    ensure_running(conn, chat_id, run_id).await?;
    let question_id = card.question_id.clone();
    db::chats::set_pending_question(conn, chat_id, Some(&question_id)).await?;
    let seq = batch.emit(conn, chat_id, ChatEvent::Question(card)).await?;
    db::runs::update_live(conn, chat_id, run_id, &encode(live)?, seq, now_ms()).await?;
    batch.system(SystemEvent::ChatOwnerInputChanged {
        chat_id: chat_id.clone(),
        pending_question_id: Some(question_id),
    });
    Ok(())
}

/// Records answers; the question must still be the pending one.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat_id))]
pub(super) async fn answer_question(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &ChatId,
    question_id: &QuestionId,
    answers: &Answers,
) -> Result<()> {
    let chat = live_chat(conn, chat_id).await?;
    if chat.pending_question_id.as_deref() != Some(question_id.as_str()) {
        return Err(Domain::QuestionStale.into());
    }
    db::chats::set_pending_question(conn, chat_id, None).await?;
    super::push::questions_settled(conn, batch, chat_id).await?;
    // After a restart the card sits in the settled transcript: record the answers there.
    if let Some((idx, body)) = db::messages::message_with_question(conn, chat_id, question_id).await?
        && let Ok(mut message) = serde_json::from_str::<Message>(&body)
    {
        for block in message.blocks.iter_mut().flatten() {
            if let Block::Question(card) = block
                && card.question_id == *question_id
            {
                card.set_answers(answers);
            }
        }
        db::messages::replace_message(conn, chat_id, idx, &encode(&message)?).await?;
    }
    db::chats::touch_activity(conn, chat_id, now_ms()).await?;
    let event = ChatEvent::AnswersApplied { question_id: question_id.clone(), answers: answers.clone() };
    batch.emit(conn, chat_id, event).await?;
    batch.system(SystemEvent::ChatOwnerInputChanged { chat_id: chat_id.clone(), pending_question_id: None });
    Ok(())
}

/// Ends a run: merge, record, then promote the queue (or clear it when stopped).
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %finish.chat_id, run.id = %finish.run_id))]
pub(super) async fn finish_run(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    finish: FinishRun,
) -> Result<FinishOutcome> {
    let chat_id = &finish.chat_id;
    ensure_running(conn, chat_id, &finish.run_id).await?;
    let now = now_ms();
    let body = match finish.body {
        Some(body) => Some(body),
        None => match db::runs::live_body(conn, chat_id).await? {
            Some((run, body)) if finish.run_id == run.as_str() => {
                serde_json::from_str::<Message>(&body).ok().map(|m| {
                    let mut live = LiveMessage::from_message(m);
                    let status =
                        if finish.status == RunStatus::Stopped { ToolStatus::Stopped } else { ToolStatus::Done };
                    live.close_running_tools(status);
                    live.into_message()
                })
            }
            _ => None,
        },
    };
    // A turn stopped before it wrote anything keeps its "stopped before replying" row (an
    // assistant message without blocks), so the transcript never shows two owner rows in a row.
    let stopped = finish.status == RunStatus::Stopped;
    let body = match body {
        Some(body) if body.has_blocks() || stopped => Some(body),
        None if stopped => Some(Message::assistant(now, Vec::new())),
        _ => None,
    };
    if let Some(mut body) = body {
        body.run_id = Some(finish.run_id.clone());
        let used = crate::protocol::RunUsage {
            input_tokens: finish.end.input_tokens,
            output_tokens: finish.end.output_tokens,
            cache_read_tokens: finish.end.cache_read_tokens,
            cache_write_tokens: finish.end.cache_write_tokens,
            cost_usd: finish.end.cost_usd,
        };
        body.usage = (!used.is_empty()).then(|| Box::new(used));
        store(conn, chat_id, &body).await?;
    }
    db::runs::delete_live(conn, chat_id).await?;
    let mut end = finish.end.clone();
    finish.status.as_str().clone_into(&mut end.status);
    db::runs::close_run(conn, &finish.run_id, &end, now).await?;
    if let Some(session) = &end.session_id {
        db::chats::set_session(conn, chat_id, &finish.run_id, session).await?;
    }
    let waiting = db::chats::get(&mut *conn, chat_id).await?.is_some_and(|c| c.pending_question_id.is_some());
    if waiting {
        db::chats::set_pending_question(conn, chat_id, None).await?;
        super::push::questions_settled(conn, batch, chat_id).await?;
    }
    db::chats::touch_activity(conn, chat_id, now).await?;
    if let Some(message) = &end.error {
        let event = ChatEvent::Error {
            message: message.clone(),
            resumable: Some(finish.fix.is_none()),
            fix: finish.fix,
            pause: finish.pause.clone(),
        };
        batch.emit(conn, chat_id, event).await?;
    }
    if let Some(at) = finish.pause.as_ref().and_then(|p| p.resumes_at) {
        db::chats::set_resume(conn, chat_id, Some((at, RESUME_USAGE_LIMIT))).await?;
    }
    let usage = TokenCounts {
        input_tokens: end.input_tokens,
        output_tokens: end.output_tokens,
        cache_read_tokens: end.cache_read_tokens,
        cache_write_tokens: end.cache_write_tokens,
    };
    let done = ChatEvent::Done {
        run_id: finish.run_id.clone(),
        status: finish.status,
        usage,
        cost_usd: end.cost_usd,
        error: end.error.clone(),
    };
    batch.emit(conn, chat_id, done).await?;
    let mut outcome = FinishOutcome::default();
    let queued = !db::queue::pending_list(conn, chat_id).await?.is_empty();
    match (finish.status, finish.provider) {
        (_, _) if !queued => {}
        // A usage limit: the queue waits for the limit (sending it now would hit it again).
        (_, _) if finish.pause.is_some() => {}
        (RunStatus::Stopped, _) => {
            outcome.cleared =
                db::queue::take_pending(conn, chat_id).await?.into_iter().map(|(cid, _)| Cid::from(cid)).collect();
            emit_queue(conn, batch, chat_id).await?;
        }
        (RunStatus::Interrupted, _) => {}
        (RunStatus::Completed | RunStatus::Failed, None) => {
            tracing::warn!(chat.id = %chat_id, "a run without a provider ended; its queue waits for the next send");
        }
        (RunStatus::Completed | RunStatus::Failed, Some(provider)) => {
            let messages = promote_queue(conn, batch, chat_id).await?;
            emit_queue(conn, batch, chat_id).await?;
            let event =
                ChatEvent::QueuedTurnStarting { run_id: finish.next_run_id.clone(), messages: messages.clone() };
            batch.emit(conn, chat_id, event).await?;
            let run = NewRun { chat_id: chat_id.clone(), run_id: finish.next_run_id.clone(), provider };
            let ts = start_run(conn, batch, &run).await?;
            outcome.next = Some(Started { run_id: run.run_id, provider, ts, messages, version: None });
        }
    }
    if outcome.next.is_none() {
        batch.system(SystemEvent::ChatRunFinished { chat_id: chat_id.clone(), status: finish.status });
    }
    Ok(outcome)
}

/// Renames, pins, changes settings.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat_id))]
pub(super) async fn update_chat(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &ChatId,
    patch: ChatPatch,
) -> Result<()> {
    live_chat(conn, chat_id).await?;
    let now = now_ms();
    if let Some(title) = &patch.title {
        db::chats::set_title(conn, chat_id, title, true, now).await?;
        db::search::index_title(conn, chat_id).await?;
        let title: String = title.chars().take(db::chats::MAX_TITLE_CHARS).collect();
        batch.emit(conn, chat_id, ChatEvent::ChatRenamed { title: title.clone() }).await?;
        batch.system(SystemEvent::ChatRenamed { chat_id: chat_id.clone(), title });
    }
    db::chats::update_settings(conn, chat_id, &patch.settings, now).await?;
    if let Some((scope, label)) = &patch.scope {
        db::embeds::set_chat_scope(conn, chat_id, scope.as_deref(), label.as_deref()).await?;
    }
    if let Some(on) = patch.auto_resume {
        db::chats::set_auto_resume(conn, chat_id, on).await?;
    }
    batch.system(SystemEvent::ChatUpdated { chat_id: chat_id.clone() });
    Ok(())
}

/// Soft delete (the caller stopped the turn first).
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat_id))]
pub(super) async fn delete_chat(conn: &mut SqliteConnection, batch: &mut Batch, chat_id: &ChatId) -> Result<()> {
    live_chat(conn, chat_id).await?;
    if let Some(run) = db::runs::running_run(&mut *conn, chat_id).await? {
        let end = db::runs::RunEnd { status: RunStatus::Stopped.as_str().into(), ..Default::default() };
        db::runs::close_run(conn, &run, &end, now_ms()).await?;
        db::runs::delete_live(conn, chat_id).await?;
    }
    batch.emit(conn, chat_id, ChatEvent::ChatDeleted).await?;
    db::chats::soft_delete(conn, chat_id, now_ms()).await?;
    batch.system(SystemEvent::ChatDeleted { chat_id: chat_id.clone() });
    Ok(())
}

/// Undelete within the window.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat_id))]
pub(super) async fn recover_chat(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &ChatId,
    cutoff: i64,
) -> Result<()> {
    match db::chats::get(&mut *conn, chat_id).await? {
        None => return Err(Domain::ChatNotFound.into()),
        Some(c) if c.deleted_at.is_none() => return Ok(()),
        Some(_) => {}
    }
    if !db::chats::recover(conn, chat_id, cutoff).await? {
        return Err(Domain::ChatPurged.into());
    }
    batch.system(SystemEvent::ChatRecovered { chat_id: chat_id.clone() });
    Ok(())
}

/// A provider switch or a compaction: the marker message joins the transcript, and the
/// chat's next turn starts a new session on `card.to_provider` seeded with the summary.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat_id))]
pub(super) async fn handoff(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &ChatId,
    card: HandoffCard,
    agent_settings: Option<String>,
) -> Result<Message> {
    let chat = live_chat(conn, chat_id).await?;
    if db::runs::running_run(&mut *conn, chat_id).await?.is_some() {
        return Err(Domain::ChatBusy.into());
    }
    if chat.pending_question_id.is_some() {
        return Err(Domain::PendingQuestionOpen.into());
    }
    let now = now_ms();
    let (to, summary, switch_id) = (card.to_provider, card.summary.clone(), card.switch_id.clone());
    let message = Message::assistant(now, vec![Block::Handoff(card)]);
    store(conn, chat_id, &message).await?;
    db::chats::set_handoff(conn, chat_id, to.id(), &summary, &switch_id, agent_settings.as_deref(), now).await?;
    db::chats::set_resume(conn, chat_id, None).await?;
    db::chats::touch_activity(conn, chat_id, now).await?;
    batch.emit(conn, chat_id, ChatEvent::Handoff { message: message.clone() }).await?;
    batch.system(SystemEvent::ChatUpdated { chat_id: chat_id.clone() });
    Ok(message)
}

/// Why a chat is parked (`chats.resume_reason`).
pub const RESUME_USAGE_LIMIT: &str = "usage_limit";
pub const RESUME_RESTART: &str = "restart";
/// The hidden message's cid of a continuation after a restart (and a usage limit).
const RESTART_CID_PREFIX: &str = "resume-restart-";
const LIMIT_CID_PREFIX: &str = "resume-limit-";

/// Whether `cid` is the hidden message of an automatic continuation (after a restart or a
/// usage limit): work the owner did not start just now.
pub fn is_continuation(cid: &str) -> bool {
    cid.starts_with(RESTART_CID_PREFIX) || cid.starts_with(LIMIT_CID_PREFIX)
}
/// The note on a turn cut by a restart that continues by itself.
const RESTART_NOTE: &str = "The server restarted during this turn; it continues by itself.";
/// What the agent is told when a parked chat continues.
const RESTART_CONTINUE: &str =
    "The server restarted while you were working and your last turn was cut short. Continue where you left off.";
const LIMIT_CONTINUE: &str = "The usage limit has reset. Continue where you left off.";

/// The continuation of a parked chat whose time has come: a hidden message starts a run
/// (with any queued messages before it, as a send would). Nothing when it is not due, was
/// un-parked meanwhile, runs, waits on a question, or is gone.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat_id, run.id = %run_id))]
pub(super) async fn resume(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &ChatId,
    run_id: RunId,
    now: i64,
    start: bool,
) -> Result<Option<Started>> {
    let Some(chat) = db::chats::get(&mut *conn, chat_id).await? else { return Ok(None) };
    let (Some(at), reason) = (chat.resume_at, chat.resume_reason.clone()) else { return Ok(None) };
    if at > now {
        return Ok(None);
    }
    db::chats::set_resume(conn, chat_id, None).await?;
    if !start {
        return Ok(None);
    }
    let provider = chat.provider;
    let running = db::runs::running_run(&mut *conn, chat_id).await?.is_some();
    let (Some(provider), false, None, None) = (provider, running, &chat.pending_question_id, chat.deleted_at) else {
        return Ok(None);
    };
    let (prefix, text) = match reason.as_deref() {
        Some(RESUME_RESTART) => (RESTART_CID_PREFIX, RESTART_CONTINUE),
        _ => (LIMIT_CID_PREFIX, LIMIT_CONTINUE),
    };
    let message = UserInput { hidden: true, ..UserInput::text(Cid::from(format!("{prefix}{at}")), text.to_owned()) };
    let send = Send { chat_id: chat_id.clone(), message, run_id, provider, answering: None };
    match self::send(conn, batch, send).await? {
        SendOutcome::Started(started) => Ok(Some(started)),
        _ => Ok(None),
    }
}

/// Most journal events folded into an interrupted message at boot (the journal keeps fewer).
const MAX_BOOT_FOLD_EVENTS: i64 = 10_000;

/// Boot reconciliation of runs left `running` by a crash or kill: the live message — its last
/// snapshot plus the journal's events after it — becomes the transcript's message.
#[tracing::instrument(level = "debug", skip_all)]
pub(super) async fn reconcile_startup(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    resume: &[ProviderKind],
) -> Result<Vec<ChatId>> {
    let mut chats = Vec::new();
    for (run_id, chat_id) in db::runs::all_running_runs(conn).await? {
        let (run_id, chat_id) = (RunId::from(run_id), ChatId::from(chat_id));
        let chat = db::chats::get(&mut *conn, &chat_id).await?;
        let deleted = chat.as_ref().is_none_or(|c| c.deleted_at.is_some());
        let waiting = chat.as_ref().and_then(|c| c.pending_question_id.clone()).is_some();
        let now = now_ms();
        // It continues by itself once: not when it waits on the owner, nor when the cut turn
        // was itself the continuation after a restart.
        let connected = chat.as_ref().and_then(|c| c.provider);
        let resumes = !deleted
            && !waiting
            && connected.is_some_and(|p| resume.contains(&p))
            && !db::messages::last_user_cid(conn, &chat_id)
                .await?
                .is_some_and(|cid| cid.starts_with(RESTART_CID_PREFIX));
        let note = if resumes {
            ChatEvent::Error {
                message: RESTART_NOTE.to_owned(),
                resumable: Some(true),
                fix: None,
                pause: Some(Pause { kind: PauseKind::Restart, resumes_at: Some(now) }),
            }
        } else {
            ChatEvent::Error { message: INTERRUPTED_NOTE.to_owned(), resumable: Some(true), fix: None, pause: None }
        };
        if resumes {
            db::chats::set_resume(conn, &chat_id, Some((now, RESUME_RESTART))).await?;
        }
        if !deleted {
            let mut live = match db::runs::live_body(conn, &chat_id).await? {
                Some((run, body)) if run_id == run.as_str() => {
                    let mut live = serde_json::from_str::<Message>(&body)
                        .map(LiveMessage::from_message)
                        .unwrap_or_else(|_| LiveMessage::new(now));
                    // What streamed after the last snapshot is committed too, and clients saw it.
                    for data in db::runs::events_after_live(conn, &chat_id, MAX_BOOT_FOLD_EVENTS).await? {
                        if let Ok(entry) = serde_json::from_str::<JournalEntry>(&data) {
                            live.apply(&entry.event);
                        }
                    }
                    live
                }
                _ => LiveMessage::new(now),
            };
            live.close_running_tools(ToolStatus::Done);
            if !waiting {
                live.apply(&note);
            }
            let mut message = live.into_message();
            message.run_id = Some(run_id.clone());
            store(conn, &chat_id, &message).await?;
        }
        db::runs::delete_live(conn, &chat_id).await?;
        let end = db::runs::RunEnd { status: RunStatus::Interrupted.as_str().into(), ..Default::default() };
        db::runs::close_run(conn, &run_id, &end, now).await?;
        if !deleted {
            if !waiting {
                batch.emit(conn, &chat_id, note).await?;
            }
            let done = ChatEvent::Done {
                run_id,
                status: RunStatus::Interrupted,
                usage: TokenCounts::default(),
                cost_usd: None,
                error: None,
            };
            batch.emit(conn, &chat_id, done).await?;
            chats.push(chat_id);
        }
    }
    Ok(chats)
}
