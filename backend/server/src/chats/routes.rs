//! `/api/chats…` and `/api/chat/stop`.

use axum::extract::rejection::QueryRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, patch, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::access::{ChatCaller, Op};
use super::{DEFAULT_PAGE, MAX_MESSAGE_CHARS, MAX_PAGE, RECOVERY_WINDOW_MS};
use crate::agent::turn;
use crate::api::{ApiJson, ApiJsonBytes, MAX_LARGE_BODY_BYTES};
use crate::auth::Owner;
use crate::db::{self, now_ms};
use crate::error::{Domain, Error, Result};
use crate::protocol::{
    AnswerTurn, Answers, ApprovalPolicy, ChatDetail, ChatId, Cid, HandoffReason, ImportedMessage, Message,
    ProviderKind, QuestionId, RegenerateResult, Rows, RunId, RunStatus, SendResult, StopResult, UserInput,
};
use crate::state::AppState;
use crate::writer::{ChatCreated, ChatPatch, FinishRun, NewChat, WriteCommand};

/// Most messages accepted when importing a transcript.
const MAX_IMPORTED_MESSAGES: usize = 20_000;
/// Largest accepted answers object, serialised.
const MAX_ANSWERS_BYTES: usize = 64 * 1024;
/// Longest accepted time-zone name.
const MAX_TIMEZONE_BYTES: usize = 64;
/// Largest agent-only context a message may carry (an embedding app's `<app_state>`).
const MAX_AGENT_CONTEXT_BYTES: usize = 16 * 1024;
/// Runs listed by `GET /chats/{id}/runs`.
const RUNS_LISTED: i64 = 100;

/// The chat routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/chats", get(list).post(create).layer(DefaultBodyLimit::max(MAX_LARGE_BODY_BYTES)))
        .route("/chats/{id}", get(detail).patch(update).delete(delete_chat))
        .route("/chats/{id}/summary", get(summary))
        .route("/chats/{id}/recover", post(recover))
        .route("/chats/{id}/messages", post(send))
        .route("/chats/{id}/regenerate", post(regenerate))
        .route("/chats/{id}/pending/{cid}", patch(edit_pending).delete(remove_pending))
        .route("/chats/{id}/stream", get(super::stream::chat_stream))
        .route("/chats/{id}/tool-output/{tool_use_id}", get(tool_output))
        .route("/chats/{id}/runs", get(runs))
        .route("/chats/{id}/usage", get(usage))
        .route("/chats/{id}/context", get(super::context::agent_context))
        .route("/chats/{id}/goal", delete(super::goal::dismiss_goal))
        .route("/chats/{id}/provider-switch", post(provider_switch))
        .route("/chats/{id}/compact", post(compact))
        .route("/chat/stop", post(stop))
}

/// A chat id from a path: anything malformed names no chat.
fn checked_id(id: &str) -> Result<ChatId> {
    ChatId::parse(id).ok_or_else(|| Domain::ChatNotFound.into())
}

/// Cache key of the chat list (chat ids never contain a space).
const LIST_KEY: &str = "chat list";

fn json_body(body: bytes::Bytes) -> Response {
    let mut response = body.into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    no_store(response)
}

fn no_store(mut response: Response) -> Response {
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// Chats per page of `GET /api/chats?limit=` unless asked, and at most.
const DEFAULT_LIST_PAGE: i64 = 50;
const MAX_LIST_PAGE: i64 = 200;
/// Most chats the unpaginated `GET /api/chats` (clients before pages) answers: the top of
/// the drawer. Beyond it an old client sees the newest chats only.
const MAX_UNPAGED_CHATS: i64 = 1_000;

#[derive(Deserialize)]
struct ListIn {
    limit: Option<String>,
    cursor: Option<String>,
}

/// One page of the drawer list.
#[derive(Serialize)]
struct ListPage {
    chats: Vec<db::chat_list::ChatSummary>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    next_cursor: Option<String>,
}

#[tracing::instrument(level = "debug", skip_all)]
async fn list(
    State(state): State<AppState>,
    _owner: Owner,
    input: std::result::Result<Query<ListIn>, QueryRejection>,
) -> Result<Response> {
    let Query(input) =
        input.map_err(|_| Error::bad_request("invalid_query", "The chat list takes limit and cursor, once each."))?;
    let paged = input.limit.is_some() || input.cursor.is_some();
    let limit = match input.limit.as_deref().map(str::trim).filter(|l| !l.is_empty()) {
        None if paged => DEFAULT_LIST_PAGE,
        None => MAX_UNPAGED_CHATS,
        Some(l) => l
            .parse::<i64>()
            .ok()
            .filter(|l| *l >= 1)
            .ok_or_else(|| Error::bad_request("invalid_limit", "The limit is a whole number of at least 1."))?
            .min(MAX_LIST_PAGE),
    };
    let cursor = match input.cursor.as_deref().filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => Some(
            db::chat_list::ListCursor::parse(c)
                .ok_or_else(|| Error::bad_request("invalid_cursor", "That cursor came from no chat list."))?,
        ),
    };
    // Read the version first: a change committed during the query makes the next request
    // refresh, never the other way round.
    let version = state.hub.list_version();
    // Only the top of the list is cached: later pages are read once each, and would push the
    // open chats' pages out of the small cache.
    let key = match (&cursor, paged) {
        (Some(_), _) => None,
        (None, false) => Some(LIST_KEY.to_owned()),
        (None, true) => Some(format!("{LIST_KEY} {limit}")),
    };
    if let Some(body) = key.as_deref().and_then(|k| state.response_cache.get(k, version)) {
        return Ok(json_body(body));
    }
    let body = if paged {
        // One extra row tells whether there is a next page.
        let mut chats = db::chat_list::page(&state.db.read, cursor.as_ref(), limit + 1).await?;
        let keep = usize::try_from(limit).unwrap_or(usize::MAX);
        let more = chats.len() > keep;
        chats.truncate(keep);
        let next_cursor = if more { chats.last().map(|c| db::chat_list::ListCursor::after(c).encode()) } else { None };
        serde_json::to_vec(&ListPage { chats, next_cursor })
    } else {
        serde_json::to_vec(&db::chat_list::page(&state.db.read, None, limit).await?)
    };
    let body = bytes::Bytes::from(body.map_err(|e| Error::Internal(e.to_string()))?);
    if let Some(key) = key {
        state.response_cache.put(&key, version, body.clone());
    }
    Ok(json_body(body))
}

/// `GET /api/chats/{id}/summary`: one row of the drawer list (what a system event about a chat
/// not loaded yet needs).
#[tracing::instrument(level = "debug", skip_all)]
async fn summary(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<String>,
) -> Result<Json<db::chat_list::ChatSummary>> {
    let id = checked_id(&id)?;
    Ok(Json(db::chat_list::summary(&state.db.read, &id).await?.ok_or(Domain::ChatNotFound)?))
}

#[derive(Deserialize)]
struct CreateIn<'a> {
    id: Option<String>,
    title: Option<String>,
    /// Read in place from the body: a 2,000-message import allocates only what it keeps.
    #[serde(default, borrow)]
    messages: Vec<ImportedMessage<'a>>,
}

#[tracing::instrument(level = "debug", skip_all)]
async fn create(State(state): State<AppState>, _owner: Owner, raw: ApiJsonBytes) -> Result<Response> {
    let body: CreateIn<'_> = raw.parse()?;
    let id = match body.id {
        Some(id) => ChatId::parse(&id)
            .ok_or_else(|| Error::bad_request("invalid_chat_id", "Chat ids are 1–64 letters, digits, '-' or '_'."))?,
        None => ChatId::random(),
    };
    if body.messages.len() > MAX_IMPORTED_MESSAGES {
        return Err(Error::too_large(
            "too_many_messages",
            format!("At most {MAX_IMPORTED_MESSAGES} messages per import."),
        ));
    }
    let now = now_ms();
    let messages = body
        .messages
        .into_iter()
        .enumerate()
        .map(|(idx, m)| Message::import(m, now, idx))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::bad_request("invalid_message", e.0))?;
    let chat = NewChat { id: id.clone(), title: body.title, messages, app: None };
    let created = state.writer.call(|ack| WriteCommand::CreateChat { chat, ack }).await?;
    let summary = db::chat_list::summary(&state.db.read, &id).await?;
    let status = if created == ChatCreated::Created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(summary)).into_response())
}

#[derive(Deserialize)]
struct PageQuery {
    limit: Option<i64>,
    before: Option<i64>,
}

#[tracing::instrument(level = "debug", skip_all)]
async fn detail(
    State(state): State<AppState>,
    who: ChatCaller,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Result<Response> {
    let id = checked_id(&id)?;
    who.allow(&state, &id, Op::Read).await?;
    let limit = q.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE);
    // Any commit may change a page (new events move `seq`), so pages are cached per writer
    // version: repeated reads between two commits cost a lookup.
    let version = state.hub.data_version();
    let key = format!("{id} {limit} {}", q.before.unwrap_or(-1));
    if let Some(body) = state.response_cache.get(&key, version) {
        return Ok(json_body(body));
    }
    let page = db::chats::page(&state.db.read, &id, limit, q.before).await?;
    let page = match page {
        Some(p) if p.chat.deleted_at.is_none() => p,
        _ => return Err(Domain::ChatNotFound.into()),
    };
    let waiting = state.agents.turns.waiting(&id);
    let body = bytes::Bytes::from(render_detail(&page, q.before.is_none(), waiting)?);
    state.response_cache.put(&key, version, body.clone());
    Ok(json_body(body))
}

/// Stored rows (a JSON array the query built) as raw JSON values: checked, never re-built.
fn raw_rows(array: &str) -> Result<Vec<&RawValue>> {
    serde_json::from_str(array).map_err(|e| Error::Internal(format!("a stored message is not JSON: {e}")))
}

/// The detail JSON: stored message bodies are copied as they are (raw), the live message is
/// read and marked `live`.
fn render_detail(page: &db::chats::Page, newest: bool, waiting: Option<crate::protocol::Waiting>) -> Result<Vec<u8>> {
    let chat = &page.chat;
    let live = page.live.as_ref().filter(|(run, _, _)| page.running_run.as_deref() == Some(run.as_str()));
    let seq = live.map_or(chat.last_seq, |(_, _, upto)| *upto);
    let last = match live {
        Some((_, body, _)) if newest => {
            serde_json::from_str::<Message>(body).ok().filter(Message::has_blocks).map(|m| Message { live: true, ..m })
        }
        _ => None,
    };
    let settings = crate::agent::settings::AgentSettings::parse(chat.agent_settings.as_deref());
    let pick = settings.pick();
    let detail = ChatDetail {
        id: &chat.id,
        title: &chat.title,
        provider: chat.provider.map(ProviderKind::id),
        approval_policy: &chat.approval_policy,
        model: pick.model,
        effort: pick.effort,
        plan_mode: settings.plan_mode == Some(true),
        auto_resume: chat.auto_resume,
        resume_at: chat.resume_at,
        session_id: chat.session_id.as_deref(),
        messages: Rows { stored: raw_rows(&page.messages)?, last },
        offset: page.offset,
        total: chat.message_count,
        has_more: page.offset > 0,
        running: page.running_run.is_some(),
        run_id: page.running_run.as_deref(),
        waiting: waiting.filter(|_| page.running_run.is_some()),
        pending_question_id: chat.pending_question_id.as_deref(),
        pending_messages: Rows { stored: raw_rows(&page.pending)?, last: None },
        pinned_at: chat.pinned_at,
        goal: page
            .goal
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| Error::Internal(format!("a stored goal is not JSON: {e}")))?,
        created_at: chat.created_at,
        updated_at: chat.updated_at,
        seq,
    };
    serde_json::to_vec(&detail).map_err(|e| Error::Internal(e.to_string()))
}

#[derive(Deserialize)]
struct PatchIn {
    title: Option<String>,
    pinned: Option<bool>,
    approval_policy: Option<String>,
    provider: Option<String>,
    /// `null` clears the model (provider default).
    #[serde(default, deserialize_with = "double_option")]
    model: Option<Option<String>>,
    /// `null` clears the effort level.
    #[serde(default, deserialize_with = "double_option")]
    effort: Option<Option<String>>,
    /// Continue by itself after a usage limit.
    auto_resume: Option<bool>,
    /// Every turn plans first (the owner approves the plan before the agent acts).
    plan_mode: Option<bool>,
}

fn double_option<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

#[tracing::instrument(level = "debug", skip_all)]
async fn update(
    State(state): State<AppState>,
    who: ChatCaller,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<PatchIn>,
) -> Result<Json<Value>> {
    let id = checked_id(&id)?;
    who.allow(&state, &id, Op::Settings).await?;
    if !who.is_owner()
        && (body.title.is_some()
            || body.pinned.is_some()
            || body.approval_policy.is_some()
            || body.plan_mode.is_some()
            || body.auto_resume.is_some())
    {
        return Err(Error::forbidden("forbidden", "An app or embedded chat may change only the model and provider."));
    }
    let mut patch = ChatPatch { auto_resume: body.auto_resume, ..ChatPatch::default() };
    if let Some(title) = body.title {
        let title = title.trim();
        if title.is_empty() {
            return Err(Error::bad_request("invalid_title", "A chat needs a title."));
        }
        patch.title = Some(title.to_owned());
    }
    if let Some(pinned) = body.pinned {
        patch.settings.pinned_at = Some(pinned.then(now_ms));
    }
    if let Some(policy) = body.approval_policy {
        let policy = ApprovalPolicy::parse(&policy).ok_or_else(|| {
            Error::bad_request("invalid_approval_policy", "approval_policy is \"full\", \"workspace\" or \"ask\".")
        })?;
        patch.settings.approval_policy = Some(policy.id().to_owned());
    }
    if let Some(provider) = body.provider {
        let kind = ProviderKind::parse(&provider)
            .ok_or_else(|| Error::bad_request("unknown_provider", "provider is \"claude\" or \"codex\"."))?;
        let chat = db::chats::get(&state.db.read, &id).await?.ok_or(Domain::ChatNotFound)?;
        if chat.session_id.is_some() && chat.provider != Some(kind) {
            return Err(Error::conflict(
                "provider_locked",
                "This conversation already runs on another provider; start a new chat to switch.",
            ));
        }
        patch.settings.provider = Some(kind);
    }
    if body.model.is_some() || body.effort.is_some() || body.plan_mode.is_some() {
        let asked = crate::agent::models::AgentPick {
            model: body.model.clone().flatten(),
            effort: body.effort.clone().flatten(),
        }
        .checked()?;
        // Other agent settings (an app chat's system prompt) stay as they are.
        let current = db::chats::get(&state.db.read, &id).await?.and_then(|c| c.agent_settings);
        let mut settings = crate::agent::settings::AgentSettings::parse(current.as_deref());
        if body.model.is_some() {
            settings.model = asked.model;
        }
        if body.effort.is_some() {
            settings.effort = asked.effort;
        }
        if let Some(on) = body.plan_mode {
            settings.plan_mode = on.then_some(true);
        }
        patch.settings.agent_settings = Some(settings.stored());
    }
    state.writer.call(|ack| WriteCommand::UpdateChat { chat_id: id, patch, ack }).await?;
    Ok(Json(json!({ "ok": true })))
}

/// Stops the chat's turn if one runs; answers whether a turn stopped and the cleared queue.
async fn stop_turn(state: &AppState, chat_id: &ChatId) -> Result<StopResult> {
    if let Some(handle) = state.agents.turns.get(chat_id) {
        if let Some(cleared) = handle.stop().await {
            return Ok(StopResult { stopped: true, cleared_pending_cids: cleared });
        }
        // The turn did not answer in time: close its run here; its later writes are fenced off.
        tracing::warn!(chat.id = %chat_id, "the turn did not answer the stop in time; closing its run here");
        state.agents.turns.remove(chat_id, handle.run_id());
    }
    match db::runs::running_run(&state.db.read, chat_id).await? {
        Some(run_id) => {
            let finish = FinishRun {
                chat_id: chat_id.clone(),
                run_id: RunId::from(run_id),
                status: RunStatus::Stopped,
                body: None,
                end: db::runs::RunEnd::default(),
                provider: None,
                next_run_id: RunId::random(),
                fix: None,
                pause: None,
            };
            let outcome = state.writer.call(|ack| WriteCommand::FinishRun { finish, ack }).await?;
            Ok(StopResult { stopped: true, cleared_pending_cids: outcome.cleared })
        }
        None => {
            let cleared = state.writer.call(|ack| WriteCommand::ClearQueue { chat_id: chat_id.clone(), ack }).await?;
            Ok(StopResult { stopped: false, cleared_pending_cids: cleared })
        }
    }
}

#[tracing::instrument(level = "debug", skip_all)]
async fn delete_chat(State(state): State<AppState>, _owner: Owner, Path(id): Path<String>) -> Result<Response> {
    let id = checked_id(&id)?;
    let _lock = state.chat_locks.lock(&id).await;
    if state.agents.turns.get(&id).is_some() {
        stop_turn(&state, &id).await?;
    }
    state.agents.warm.retire(&id);
    state.writer.call(|ack| WriteCommand::DeleteChat { chat_id: id, ack }).await?;
    Ok(crate::api::no_content())
}

#[tracing::instrument(level = "debug", skip_all)]
async fn recover(State(state): State<AppState>, _owner: Owner, Path(id): Path<String>) -> Result<Json<Value>> {
    let id = checked_id(&id)?;
    let cutoff = now_ms() - RECOVERY_WINDOW_MS;
    state.writer.call(|ack| WriteCommand::RecoverChat { chat_id: id, cutoff, ack }).await?;
    Ok(Json(json!({ "ok": true })))
}

#[derive(Deserialize)]
struct SendIn {
    content: Option<String>,
    cid: Option<String>,
    answers: Option<Value>,
    question_id: Option<String>,
    timezone: Option<String>,
    attachments: Option<Value>,
    /// Text for the agent only (an embedding app's `<app_state>` block), not shown as the message.
    agent_context: Option<String>,
    /// While a turn runs: add this message to it instead of queueing (when the CLI can).
    #[serde(default)]
    steer: bool,
}

fn checked_cid(cid: Option<String>) -> Result<Cid> {
    match cid {
        None => Ok(Cid::server()),
        Some(cid) => {
            Cid::parse(&cid).ok_or_else(|| Error::bad_request("invalid_cid", "cid is 1–128 printable characters."))
        }
    }
}

/// The owner's time zone as the PWA sends it: an IANA-shaped name (`Europe/Paris`). A name the
/// server's zone database does not know is kept (the turn falls back to the owner's setting).
fn checked_timezone(timezone: Option<String>) -> Result<Option<String>> {
    let Some(name) = timezone.filter(|t| !t.is_empty()) else { return Ok(None) };
    let shaped = name.len() <= MAX_TIMEZONE_BYTES
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '+'));
    if !shaped {
        return Err(Error::bad_request("invalid_timezone", "timezone is an IANA time-zone name such as Europe/Paris."));
    }
    Ok(Some(name))
}

fn accepted(result: SendResult) -> Response {
    (StatusCode::ACCEPTED, Json(result)).into_response()
}

#[tracing::instrument(level = "debug", skip_all)]
async fn send(
    State(state): State<AppState>,
    who: ChatCaller,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<SendIn>,
) -> Result<Response> {
    let id = checked_id(&id)?;
    who.allow(&state, &id, Op::Send).await?;
    if let Some(answers) = body.answers {
        let question_id = body
            .question_id
            .filter(|q| !q.is_empty())
            .ok_or_else(|| Error::bad_request("invalid_request", "answers need the question_id they answer."))?;
        return answer(&state, &id, QuestionId::from(question_id), answers).await;
    }
    let content = body.content.unwrap_or_default();
    let attachments = attachments(&state, &id, body.attachments).await?;
    if content.trim().is_empty() && attachments.is_none() {
        return Err(Error::bad_request("empty_message", "Write something first."));
    }
    if content.chars().count() > MAX_MESSAGE_CHARS {
        return Err(Error::too_large(
            "message_too_long",
            format!("Messages are at most {MAX_MESSAGE_CHARS} characters."),
        ));
    }
    let agent_context = match body.agent_context.filter(|c| !c.trim().is_empty()) {
        Some(context) if context.len() > MAX_AGENT_CONTEXT_BYTES => {
            return Err(Error::too_large(
                "agent_context_too_large",
                format!("agent_context is at most {} KiB.", MAX_AGENT_CONTEXT_BYTES >> 10),
            ));
        }
        context => context,
    };
    let message = UserInput {
        cid: checked_cid(body.cid)?,
        content,
        hidden: false,
        timezone: checked_timezone(body.timezone)?,
        attachments,
        agent_context,
    };
    let _lock = state.chat_locks.lock(&id).await;
    // Files go with a turn of their own: a steer carries words only.
    if body.steer
        && message.attachments.is_none()
        && let Some(handle) = state.agents.turns.get(&id)
        && let Some(stored) = handle.steer(message.clone()).await?
    {
        return Ok(accepted(SendResult::Steered { message: stored }));
    }
    // No turn, or the CLI could not take it right now: it waits in the queue like any other.
    turn::start_or_queue(&state.agents, &id, message, None).await.map(send_response)
}

/// The files a message carries: each names an upload of this chat (a name, or an object with
/// `name`, as the original's clients send), recorded as the server stored it. `None` for none.
async fn attachments(
    state: &AppState,
    chat_id: &ChatId,
    given: Option<Value>,
) -> Result<Option<Vec<crate::protocol::Attachment>>> {
    let items = match given {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(Error::bad_request("invalid_attachments", "attachments is a list of upload names.")),
    };
    if items.len() > crate::uploads::MAX_FILES_PER_MESSAGE {
        return Err(Error::bad_request(
            "too_many_files",
            format!("At most {} files go with one message.", crate::uploads::MAX_FILES_PER_MESSAGE),
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    let mut seen = std::collections::HashSet::new();
    for item in items {
        let name = match &item {
            Value::String(name) => name.as_str(),
            Value::Object(map) => map.get("name").and_then(Value::as_str).unwrap_or_default(),
            _ => "",
        };
        if !seen.insert(name.to_owned()) {
            continue;
        }
        let row = match crate::uploads::names::is_stored_name(name) {
            true => state.uploads.get(chat_id, crate::uploads::Kind::Upload, name).await?,
            false => None,
        };
        let row = row.ok_or_else(|| {
            Error::bad_request("unknown_attachment", format!("{name:?} is not a file of this chat; attach it again."))
        })?;
        out.push(crate::protocol::Attachment {
            name: row.name,
            mime_type: row.mime_type,
            size: row.size,
            width: row.width,
            height: row.height,
            preview: row.preview,
        });
    }
    Ok((!out.is_empty()).then_some(out))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RegenerateIn {
    /// The owner's message whose reply is regenerated (the last one; checked when given).
    #[serde(default)]
    message_idx: Option<i64>,
    /// How many versions of that reply the client shows (a repeat of an accepted request is
    /// answered as a duplicate).
    #[serde(default)]
    versions: Option<u32>,
}

/// `POST /api/chats/{id}/regenerate`: a new reply to the owner's last message, kept as the
/// next version of the reply already there; the owner's message is not sent again.
#[tracing::instrument(level = "debug", skip_all)]
async fn regenerate(
    State(state): State<AppState>,
    who: ChatCaller,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response> {
    let id = checked_id(&id)?;
    who.allow(&state, &id, Op::Send).await?;
    let body: RegenerateIn = if body.iter().all(u8::is_ascii_whitespace) {
        RegenerateIn::default()
    } else {
        serde_json::from_slice(&body).map_err(|_| {
            Error::bad_request(
                "invalid_request",
                "The body is empty or {\"message_idx\": <index>, \"versions\": <count>} (both optional).",
            )
        })?
    };
    let _lock = state.chat_locks.lock(&id).await;
    let result = turn::regenerate(&state.agents, &id, body.message_idx, body.versions).await?;
    let status = match result {
        RegenerateResult::Started { .. } => StatusCode::ACCEPTED,
        RegenerateResult::Duplicate { .. } => StatusCode::OK,
    };
    Ok((status, Json(result)).into_response())
}

fn send_response(result: SendResult) -> Response {
    match result {
        SendResult::Duplicate { .. } => Json(result).into_response(),
        other => accepted(other),
    }
}

/// Creates an owner chat titled `title` and, when an agent is connected, sends it `content`
/// (with `agent_context` for the agent only), starting a turn. Answers the chat id and whether
/// the message went out (without an agent the chat waits, empty, for the owner).
pub async fn open_primed_chat(
    state: &AppState,
    title: &str,
    content: String,
    agent_context: String,
) -> Result<(ChatId, bool)> {
    let id = ChatId::random();
    let chat = NewChat { id: id.clone(), title: Some(title.to_owned()), messages: Vec::new(), app: None };
    state.writer.call(|ack| WriteCommand::CreateChat { chat, ack }).await?;
    if turn::provider_for(&state.agents, &id).await.is_err() {
        return Ok((id, false));
    }
    let cid = Cid::from(format!("server-{}", uuid::Uuid::new_v4().simple()));
    let message = UserInput { agent_context: Some(agent_context), ..UserInput::text(cid, content) };
    let _lock = state.chat_locks.lock(&id).await;
    turn::start_or_queue(&state.agents, &id, message, None).await?;
    Ok((id, true))
}

/// Routes an answer to the waiting turn; after a restart, starts a new turn with it.
async fn answer(state: &AppState, chat_id: &ChatId, question_id: QuestionId, answers: Value) -> Result<Response> {
    let too_big = serde_json::to_vec(&answers).map_or(true, |b| b.len() > MAX_ANSWERS_BYTES);
    let answers: Answers = match answers {
        Value::Object(_) if !too_big => serde_json::from_value(answers).map_err(|_| {
            Error::bad_request("invalid_answers", "answers map each question to a choice, or carry a decision.")
        })?,
        _ => return Err(Error::bad_request("invalid_answers", "answers is an object of at most 64 KiB.")),
    };
    if matches!(answers, Answers::Secret(_)) {
        return Err(Error::bad_request(
            "invalid_answers",
            "A secret request is answered through /api/secure-inputs/{chat}/{request}/submit or /decline.",
        ));
    }
    deliver_answer(state, chat_id, question_id, answers).await
}

/// Hands the owner's answers to the waiting turn; after a restart, records them and starts a
/// new turn with them. Also used by a notification's buttons (`push::routes`).
pub(crate) async fn deliver_answer(
    state: &AppState,
    chat_id: &ChatId,
    question_id: QuestionId,
    answers: Answers,
) -> Result<Response> {
    let _lock = state.chat_locks.lock(chat_id).await;
    if let Some(handle) = state.agents.turns.get(chat_id) {
        handle.answer(question_id, answers).await?;
        return Ok(accepted(SendResult::AnswerDelivered { answer_turn: AnswerTurn::Same }));
    }
    // No live turn: the server restarted while the question waited. Record the answers and
    // continue the conversation with them as a hidden message.
    let text = turn::answers_text(&answers);
    state
        .writer
        .call(|ack| WriteCommand::AnswerQuestion {
            chat_id: chat_id.clone(),
            question_id: question_id.clone(),
            answers,
            ack,
        })
        .await?;
    let message = UserInput { hidden: true, ..UserInput::text(Cid::from(format!("answer-{question_id}")), text) };
    Ok(send_response(match turn::start_or_queue(&state.agents, chat_id, message, None).await? {
        SendResult::Started { run_id, messages, .. } => {
            SendResult::Started { run_id, messages, answer_turn: Some(AnswerTurn::New) }
        }
        other => other,
    }))
}

#[derive(Deserialize)]
struct EditIn {
    content: String,
}

#[tracing::instrument(level = "debug", skip_all)]
async fn edit_pending(
    State(state): State<AppState>,
    who: ChatCaller,
    Path((id, cid)): Path<(String, String)>,
    ApiJson(body): ApiJson<EditIn>,
) -> Result<Json<Value>> {
    let id = checked_id(&id)?;
    who.allow(&state, &id, Op::Send).await?;
    if body.content.trim().is_empty() || body.content.chars().count() > MAX_MESSAGE_CHARS {
        return Err(Error::bad_request("empty_message", "A queued message needs text (and not too much)."));
    }
    let (cid, content) = (Cid::from(cid), body.content);
    let (updated, pending) =
        state.writer.call(|ack| WriteCommand::UpdatePending { chat_id: id, cid, content, ack }).await?;
    Ok(Json(json!({ "updated": updated, "pending_messages": pending })))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn remove_pending(
    State(state): State<AppState>,
    who: ChatCaller,
    Path((id, cid)): Path<(String, String)>,
) -> Result<Json<Value>> {
    let id = checked_id(&id)?;
    who.allow(&state, &id, Op::Send).await?;
    let cid = Cid::from(cid);
    let (removed, pending) = state.writer.call(|ack| WriteCommand::CancelPending { chat_id: id, cid, ack }).await?;
    Ok(Json(json!({ "removed": removed, "pending_messages": pending })))
}

#[derive(Deserialize)]
struct StopIn {
    chat_id: String,
}

#[tracing::instrument(level = "debug", skip_all)]
async fn stop(
    State(state): State<AppState>,
    who: ChatCaller,
    ApiJson(body): ApiJson<StopIn>,
) -> Result<Json<StopResult>> {
    let id = checked_id(&body.chat_id)?;
    who.allow(&state, &id, Op::Stop).await?;
    let _lock = state.chat_locks.lock(&id).await;
    Ok(Json(stop_turn(&state, &id).await?))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn tool_output(
    State(state): State<AppState>,
    who: ChatCaller,
    Path((id, tool_use_id)): Path<(String, String)>,
) -> Result<Response> {
    let id = checked_id(&id)?;
    who.allow(&state, &id, Op::Read).await?;
    let text = match db::messages::tool_output(&state.db.read, &id, &tool_use_id).await? {
        Some(text) => text,
        // A text block past its inline cap keeps the rest in its overflow file.
        None => {
            let file = crate::agent::fold::overflow_file(&state.agents.overflow_dir, &id, &tool_use_id);
            let mut text = tokio::fs::read_to_string(&file)
                .await
                .map_err(|_| Error::not_found("output_not_found", "No stored output for this tool call."))?;
            text.insert_str(0, "… ");
            text
        }
    };
    let mut response = text.into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("private, max-age=31536000, immutable"));
    Ok(response)
}

#[tracing::instrument(level = "debug", skip_all)]
async fn runs(
    State(state): State<AppState>,
    who: ChatCaller,
    Path(id): Path<String>,
) -> Result<Json<Vec<db::runs::RunRow>>> {
    let id = checked_id(&id)?;
    who.allow(&state, &id, Op::Read).await?;
    Ok(Json(db::runs::runs(&state.db.read, &id, RUNS_LISTED).await?))
}

/// `GET /api/chats/{id}/usage`: what the chat's turns used in all.
#[tracing::instrument(level = "debug", skip_all)]
async fn usage(
    State(state): State<AppState>,
    who: ChatCaller,
    Path(id): Path<String>,
) -> Result<Json<db::usage::ChatUsage>> {
    let id = checked_id(&id)?;
    who.allow(&state, &id, Op::Read).await?;
    Ok(Json(db::usage::chat_usage(&state.db.read, &id).await?))
}

/// Longest accepted switch id.
const MAX_SWITCH_ID_CHARS: usize = 128;

#[derive(Deserialize)]
struct SwitchIn {
    provider: String,
    #[serde(default)]
    agent_settings_json: Option<crate::agent::models::AgentPick>,
    #[serde(default)]
    switch_id: Option<String>,
}

#[derive(Deserialize, Default)]
struct CompactIn {
    #[serde(default)]
    switch_id: Option<String>,
}

/// `POST /api/chats/{id}/provider-switch`: moves the chat to another provider, its
/// conversation summarised (by the old provider, else from the transcript) to seed the new
/// session.
#[tracing::instrument(level = "debug", skip_all)]
async fn provider_switch(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<SwitchIn>,
) -> Result<Json<Value>> {
    let id = checked_id(&id)?;
    let to = ProviderKind::parse(&body.provider)
        .ok_or_else(|| Error::bad_request("unknown_provider", "provider is \"claude\" or \"codex\"."))?;
    let pick = body.agent_settings_json.unwrap_or_default().checked()?;
    handoff(&state, &id, to, HandoffReason::Switch, Some(pick), body.switch_id).await
}

/// `POST /api/chats/{id}/compact` (the composer's `/compact`): the same handoff on the chat's
/// own provider: a fresh session that starts from the summary.
#[tracing::instrument(level = "debug", skip_all)]
async fn compact(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Result<Json<Value>> {
    let id = checked_id(&id)?;
    // The original's bodyless route, or `{switch_id}`.
    let body: CompactIn = if body.iter().all(u8::is_ascii_whitespace) {
        CompactIn::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|_| Error::bad_request("invalid_json", "The body is empty or {\"switch_id\": \"…\"}."))?
    };
    let provider = turn::provider_for(&state.agents, &id).await?;
    let switch_id = body.switch_id;
    handoff(&state, &id, provider, HandoffReason::Compact, None, switch_id).await
}

async fn handoff(
    state: &AppState,
    chat_id: &ChatId,
    to: ProviderKind,
    reason: HandoffReason,
    pick: Option<crate::agent::models::AgentPick>,
    switch_id: Option<String>,
) -> Result<Json<Value>> {
    let switch_id = switch_id.unwrap_or_else(|| RunId::random().to_string());
    if switch_id.is_empty() || switch_id.chars().count() > MAX_SWITCH_ID_CHARS {
        return Err(Error::bad_request("invalid_switch_id", "switch_id is 1 to 128 characters."));
    }
    let done = crate::agent::handoff::hand_off(&state.agents, chat_id, to, reason, pick, &switch_id).await?;
    let pick = crate::agent::settings::AgentSettings::parse(done.agent_settings.as_deref()).pick();
    Ok(Json(json!({
        "ok": true, "protocol": "provider-switch-v1", "switch_id": switch_id, "summary": done.summary,
        "stored": done.stored, "provider": to.id(), "agent_settings_json": pick, "effective": pick,
    })))
}
