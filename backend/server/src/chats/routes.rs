//! `/api/chats…` and `/api/chat/stop`.

use std::time::Duration;

use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::access::{ChatCaller, Op};
use super::{DEFAULT_PAGE, MAX_MESSAGE_CHARS, MAX_PAGE, RECOVERY_WINDOW_MS, valid_chat_id};
use crate::agent::ProviderKind;
use crate::agent::turn::{self, TurnCommand, TurnStart, new_run_id};
use crate::api::{ApiJson, MAX_LARGE_BODY_BYTES};
use crate::app::AppState;
use crate::auth::Owner;
use crate::db::{self, now_ms};
use crate::error::{Error, Result};
use crate::writer::{ChatCreated, ChatPatch, FinishRun, NewChat, SendOutcome, UserMessage, WriteCommand};

/// How long a stop waits for the turn to record itself as stopped.
const STOP_WAIT: Duration = Duration::from_secs(3);
/// How long a steering message waits for the CLI to take it before it is queued instead.
const STEER_WAIT: Duration = Duration::from_secs(10);
/// Largest agent-only context a message may carry (an embedding app's `<app_state>`).
const MAX_AGENT_CONTEXT_BYTES: usize = 16 * 1024;
/// How long an answer waits for the turn to take it.
const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// The chat routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/chats", get(list).post(create).layer(DefaultBodyLimit::max(MAX_LARGE_BODY_BYTES)))
        .route("/chats/{id}", get(detail).patch(update).delete(delete_chat))
        .route("/chats/{id}/recover", post(recover))
        .route("/chats/{id}/messages", post(send))
        .route("/chats/{id}/pending/{cid}", patch(edit_pending).delete(remove_pending))
        .route("/chats/{id}/stream", get(super::stream::chat_stream))
        .route("/chats/{id}/tool-output/{tool_use_id}", get(tool_output))
        .route("/chats/{id}/runs", get(runs))
        .route("/chat/stop", post(stop))
}

fn checked_id(id: &str) -> Result<&str> {
    if valid_chat_id(id) { Ok(id) } else { Err(Error::not_found("chat_not_found", "No such chat.")) }
}

/// Cache key of the chat list (chat ids never contain a space).
const LIST_KEY: &str = "chat list";

fn json_body(body: bytes::Bytes) -> Response {
    let mut response = body.into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    no_store(response)
}

async fn list(State(state): State<AppState>, _owner: Owner) -> Result<Response> {
    if state.purge_clock.due() {
        tokio::spawn(crate::housekeeping::purge_tombstones(state.clone()));
    }
    // Read the version first: a change committed during the query makes the next request
    // refresh, never the other way round.
    let version = state.hub.list_version();
    let body = match state.response_cache.get(LIST_KEY, version) {
        Some(body) => body,
        None => {
            let chats = db::chats::list(&state.db.read).await?;
            let body = bytes::Bytes::from(serde_json::to_vec(&chats).map_err(|e| Error::Internal(e.to_string()))?);
            state.response_cache.put(LIST_KEY, version, body.clone());
            body
        }
    };
    Ok(json_body(body))
}

fn no_store(mut response: Response) -> Response {
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

#[derive(Deserialize)]
struct CreateIn {
    id: Option<String>,
    title: Option<String>,
    #[serde(default)]
    messages: Vec<Map<String, Value>>,
}

/// Most messages accepted when importing a transcript.
const MAX_IMPORTED_MESSAGES: usize = 20_000;

async fn create(State(state): State<AppState>, _owner: Owner, ApiJson(body): ApiJson<CreateIn>) -> Result<Response> {
    let id = match body.id {
        Some(id) if valid_chat_id(&id) => id,
        Some(_) => return Err(Error::bad_request("invalid_chat_id", "Chat ids are 1–64 letters, digits, '-' or '_'.")),
        None => uuid::Uuid::new_v4().to_string(),
    };
    if body.messages.len() > MAX_IMPORTED_MESSAGES {
        return Err(Error::too_large(
            "too_many_messages",
            format!("At most {MAX_IMPORTED_MESSAGES} messages per import."),
        ));
    }
    let chat = NewChat { id: id.clone(), title: body.title, messages: body.messages, app: None };
    let created = state.writer.call(|ack| WriteCommand::CreateChat { chat, ack }).await?;
    let summary = db::chats::list(&state.db.read).await?.into_iter().find(|c| c.id == id);
    let status = if created == ChatCreated::Created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(summary)).into_response())
}

#[derive(Deserialize)]
struct PageQuery {
    limit: Option<i64>,
    before: Option<i64>,
}

async fn detail(
    State(state): State<AppState>,
    who: ChatCaller,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Result<Response> {
    let id = checked_id(&id)?;
    who.allow(&state, id, Op::Read).await?;
    let limit = q.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE);
    // Any commit may change a page (new events move `seq`), so pages are cached per writer
    // version: repeated reads between two commits cost a lookup.
    let version = state.hub.data_version();
    let key = format!("{id} {limit} {}", q.before.unwrap_or(-1));
    if let Some(body) = state.response_cache.get(&key, version) {
        return Ok(json_body(body));
    }
    let page = db::chats::page(&state.db.read, id, limit, q.before).await?;
    let page = match page {
        Some(p) if p.chat.deleted_at.is_none() => p,
        _ => return Err(Error::not_found("chat_not_found", "No such chat.")),
    };
    let body = bytes::Bytes::from(render_detail(page, q.before.is_none()));
    state.response_cache.put(&key, version, body.clone());
    Ok(json_body(body))
}

/// Builds the detail JSON by splicing the stored message bodies (no re-parsing).
fn render_detail(page: db::chats::Page, newest: bool) -> String {
    let chat = &page.chat;
    let live = page.live.as_ref().filter(|(run, _, _)| page.running_run.as_deref() == Some(run.as_str()));
    let seq = live.map_or(chat.last_seq, |(_, _, upto)| *upto);
    let size = 512 + page.messages.len() + live.map_or(0, |(_, b, _)| b.len()) + page.pending.len();
    let mut out = String::with_capacity(size);
    out.push_str("{\"messages\":[");
    out.push_str(&page.messages);
    if newest
        && let Some((_, body, _)) = live
        && !body.contains("\"blocks\":[]")
        && let Some(stripped) = body.strip_suffix('}')
    {
        if !page.messages.is_empty() {
            out.push(',');
        }
        out.push_str(stripped);
        out.push_str(",\"live\":true}");
    }
    out.push_str("],\"pending_messages\":[");
    out.push_str(&page.pending);
    out.push_str("],");
    let model = chat
        .agent_settings
        .as_deref()
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .and_then(|s| s.get("model").cloned())
        .unwrap_or(Value::Null);
    let meta = json!({
        "id": chat.id,
        "title": chat.title,
        "provider": chat.provider,
        "approval_policy": chat.approval_policy,
        "model": model,
        "session_id": chat.session_id,
        "offset": page.offset,
        "total": chat.message_count,
        "has_more": page.offset > 0,
        "running": page.running_run.is_some(),
        "run_id": page.running_run,
        "pending_question_id": chat.pending_question_id,
        "pinned_at": chat.pinned_at,
        "created_at": chat.created_at,
        "updated_at": chat.updated_at,
        "seq": seq,
    })
    .to_string();
    out.push_str(&meta[1..]);
    out
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
}

fn double_option<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

async fn update(
    State(state): State<AppState>,
    who: ChatCaller,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<PatchIn>,
) -> Result<Json<Value>> {
    let id = checked_id(&id)?.to_owned();
    who.allow(&state, &id, Op::Settings).await?;
    if !who.is_owner() && (body.title.is_some() || body.pinned.is_some() || body.approval_policy.is_some()) {
        return Err(Error::forbidden("forbidden", "An app or embedded chat may change only the model and provider."));
    }
    let mut patch = ChatPatch::default();
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
        let policy = crate::agent::ApprovalPolicy::parse(&policy)
            .ok_or_else(|| Error::bad_request("invalid_approval_policy", "approval_policy is \"full\" or \"ask\"."))?;
        patch.settings.approval_policy = Some(policy.id().to_owned());
    }
    if let Some(provider) = body.provider {
        let kind = ProviderKind::parse(&provider)
            .ok_or_else(|| Error::bad_request("unknown_provider", "provider is \"claude\" or \"codex\"."))?;
        let chat = db::chats::get(&state.db.read, &id)
            .await?
            .ok_or_else(|| Error::not_found("chat_not_found", "No such chat."))?;
        if chat.session_id.is_some() && chat.provider.as_deref() != Some(kind.id()) {
            return Err(Error::conflict(
                "provider_locked",
                "This conversation already runs on another provider; start a new chat to switch.",
            ));
        }
        patch.settings.provider = Some(kind.id().to_owned());
    }
    if let Some(model) = body.model {
        let model = model.filter(|m| !m.trim().is_empty());
        if model.as_ref().is_some_and(|m| m.len() > 128 || m.chars().any(char::is_whitespace)) {
            return Err(Error::bad_request("invalid_model", "Model ids are short and have no spaces."));
        }
        // Other agent settings (an app chat's system prompt) stay as they are.
        let current = db::chats::get(&state.db.read, &id).await?.and_then(|c| c.agent_settings);
        let mut settings: Map<String, Value> =
            current.as_deref().and_then(|s| serde_json::from_str(s).ok()).unwrap_or_default();
        match model {
            Some(m) => settings.insert("model".into(), m.into()),
            None => settings.remove("model"),
        };
        patch.settings.agent_settings = Some((!settings.is_empty()).then(|| Value::Object(settings).to_string()));
    }
    state.writer.call(|ack| WriteCommand::UpdateChat { chat_id: id, patch, ack }).await?;
    Ok(Json(json!({ "ok": true })))
}

/// Stops the chat's turn if one runs; answers the cleared queue cids, and whether a turn stopped.
async fn stop_turn(state: &AppState, chat_id: &str) -> Result<(bool, Vec<String>)> {
    if let Some(handle) = state.turns.get(chat_id) {
        let (reply, rx) = tokio::sync::oneshot::channel();
        if handle.commands.send(TurnCommand::Stop { reply }).await.is_ok()
            && let Ok(Ok(cleared)) = tokio::time::timeout(STOP_WAIT, rx).await
        {
            return Ok((true, cleared));
        }
        // The turn did not answer in time: close its run here; its later writes are fenced off.
        state.turns.remove(chat_id, &handle.run_id);
    }
    match db::chats::running_run(&state.db.read, chat_id).await? {
        Some(run_id) => {
            let finish = FinishRun {
                chat_id: chat_id.to_owned(),
                run_id,
                status: "stopped",
                body: None,
                end: db::chats::RunEnd::default(),
                next_run_id: new_run_id(),
            };
            let outcome = state.writer.call(|ack| WriteCommand::FinishRun { finish, ack }).await?;
            Ok((true, outcome.cleared))
        }
        None => {
            let cleared =
                state.writer.call(|ack| WriteCommand::ClearQueue { chat_id: chat_id.to_owned(), ack }).await?;
            Ok((false, cleared))
        }
    }
}

async fn delete_chat(State(state): State<AppState>, _owner: Owner, Path(id): Path<String>) -> Result<Response> {
    let id = checked_id(&id)?;
    let _lock = state.chat_locks.lock(id).await;
    if state.turns.get(id).is_some() {
        stop_turn(&state, id).await?;
    }
    state.writer.call(|ack| WriteCommand::DeleteChat { chat_id: id.to_owned(), ack }).await?;
    Ok(crate::app::no_content())
}

async fn recover(State(state): State<AppState>, _owner: Owner, Path(id): Path<String>) -> Result<Json<Value>> {
    let id = checked_id(&id)?.to_owned();
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

fn checked_cid(cid: Option<String>) -> Result<String> {
    match cid {
        None => Ok(format!("server-{}", uuid::Uuid::new_v4().simple())),
        Some(cid) if !cid.is_empty() && cid.len() <= db::chats::MAX_CID_CHARS && !cid.chars().any(char::is_control) => {
            Ok(cid)
        }
        Some(_) => Err(Error::bad_request("invalid_cid", "cid is 1–128 printable characters.")),
    }
}

async fn send(
    State(state): State<AppState>,
    who: ChatCaller,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<SendIn>,
) -> Result<Response> {
    let id = checked_id(&id)?.to_owned();
    who.allow(&state, &id, Op::Send).await?;
    if let Some(answers) = body.answers {
        let question_id = body
            .question_id
            .filter(|q| !q.is_empty())
            .ok_or_else(|| Error::bad_request("invalid_request", "answers need the question_id they answer."))?;
        return answer(&state, &id, &question_id, answers).await;
    }
    let content = body.content.unwrap_or_default();
    if content.trim().is_empty() {
        return Err(Error::bad_request("empty_message", "Write something first."));
    }
    if content.chars().count() > MAX_MESSAGE_CHARS {
        return Err(Error::too_large(
            "message_too_long",
            format!("Messages are at most {MAX_MESSAGE_CHARS} characters."),
        ));
    }
    let mut extra = Map::new();
    if let Some(tz) = body.timezone.filter(|t| t.len() <= 64) {
        extra.insert("timezone".into(), tz.into());
    }
    if let Some(attachments) = body.attachments.filter(Value::is_array) {
        extra.insert("attachments".into(), attachments);
    }
    if let Some(context) = body.agent_context.filter(|c| !c.trim().is_empty()) {
        if context.len() > MAX_AGENT_CONTEXT_BYTES {
            return Err(Error::too_large(
                "agent_context_too_large",
                format!("agent_context is at most {} KiB.", MAX_AGENT_CONTEXT_BYTES >> 10),
            ));
        }
        extra.insert("agent_context".into(), context.into());
    }
    let message = UserMessage { cid: checked_cid(body.cid)?, content, hidden: false, extra };
    let _lock = state.chat_locks.lock(&id).await;
    if body.steer
        && let Some(handle) = state.turns.get(&id)
    {
        let (reply, rx) = tokio::sync::oneshot::channel();
        if handle.commands.send(TurnCommand::Steer { message: message.clone(), reply }).await.is_ok()
            && let Ok(Ok(taken)) = tokio::time::timeout(STEER_WAIT, rx).await
            && let Some(stored) = taken?
        {
            return Ok((StatusCode::ACCEPTED, Json(json!({ "status": "steered", "message": stored }))).into_response());
        }
        // The CLI could not take it right now: it waits in the queue like any other message.
    }
    start_or_queue(&state, &id, message, None).await
}

/// Creates an owner chat titled `title` and, when an agent is connected, sends it `content`
/// (with `agent_context` for the agent only), starting a turn. Answers the chat id and whether
/// the message went out (without an agent the chat waits, empty, for the owner).
pub async fn open_primed_chat(
    state: &AppState,
    title: &str,
    content: String,
    agent_context: String,
) -> Result<(String, bool)> {
    let id = uuid::Uuid::new_v4().to_string();
    let chat = NewChat { id: id.clone(), title: Some(title.to_owned()), messages: Vec::new(), app: None };
    state.writer.call(|ack| WriteCommand::CreateChat { chat, ack }).await?;
    if provider_for(state, &id).await.is_err() {
        return Ok((id, false));
    }
    let mut extra = Map::new();
    extra.insert("agent_context".into(), agent_context.into());
    let message =
        UserMessage { cid: format!("server-{}", uuid::Uuid::new_v4().simple()), content, hidden: false, extra };
    let _lock = state.chat_locks.lock(&id).await;
    start_or_queue(state, &id, message, None).await?;
    Ok((id, true))
}

/// The provider a send would run on; 409 when it is not connected.
async fn provider_for(state: &AppState, chat_id: &str) -> Result<ProviderKind> {
    let chat = db::chats::get(&state.db.read, chat_id).await?;
    let chat = match chat {
        Some(c) if c.deleted_at.is_none() => c,
        _ => return Err(Error::not_found("chat_not_found", "No such chat.")),
    };
    let kind = match chat.provider.as_deref().and_then(ProviderKind::parse) {
        Some(kind) => kind,
        None => crate::providers::default_provider(state).await?.ok_or_else(|| {
            Error::conflict(
                "provider_not_connected",
                "No agent is connected yet. Connect Claude or Codex in Settings → Providers.",
            )
        })?,
    };
    if !state.providers.status(kind).connected {
        return Err(Error::conflict(
            "provider_not_connected",
            format!("{} is not connected. Connect it in Settings → Providers.", kind.name()),
        ));
    }
    Ok(kind)
}

async fn start_or_queue(
    state: &AppState,
    chat_id: &str,
    message: UserMessage,
    answering: Option<String>,
) -> Result<Response> {
    let provider = provider_for(state, chat_id).await?;
    let run_id = new_run_id();
    let send = crate::writer::Send {
        chat_id: chat_id.to_owned(),
        message,
        run_id,
        provider: provider.id().to_owned(),
        answering,
    };
    let outcome = state.writer.call(|ack| WriteCommand::Send { send, ack }).await?;
    Ok(match outcome {
        SendOutcome::Started { run_id, messages } => {
            turn::spawn(
                state,
                TurnStart { chat_id: chat_id.to_owned(), run_id: run_id.clone(), messages: messages.clone() },
            );
            (StatusCode::ACCEPTED, Json(json!({ "status": "started", "run_id": run_id, "messages": messages })))
                .into_response()
        }
        SendOutcome::Queued { position, message, pending } => (
            StatusCode::ACCEPTED,
            Json(json!({ "status": "queued", "position": position, "message": message, "pending_messages": pending })),
        )
            .into_response(),
        SendOutcome::Duplicate { message, running } => {
            Json(json!({ "status": "duplicate", "message": message, "running": running })).into_response()
        }
    })
}

/// Routes an answer to the waiting turn; after a restart, starts a new turn with it.
/// Hands the owner's answers to the question (also used by notification buttons).
pub(crate) async fn answer(state: &AppState, chat_id: &str, question_id: &str, answers: Value) -> Result<Response> {
    if !(answers.is_object()) || answers.to_string().len() > 64 * 1024 {
        return Err(Error::bad_request("invalid_answers", "answers is an object of at most 64 KiB."));
    }
    let _lock = state.chat_locks.lock(chat_id).await;
    if let Some(handle) = state.turns.get(chat_id) {
        let (reply, rx) = tokio::sync::oneshot::channel();
        handle
            .commands
            .send(TurnCommand::Answer { question_id: question_id.to_owned(), answers, reply })
            .await
            .map_err(|_| Error::gone("question_stale", "That question is no longer open."))?;
        return match tokio::time::timeout(ANSWER_WAIT, rx).await {
            Ok(Ok(Ok(()))) => {
                Ok((StatusCode::ACCEPTED, Json(json!({ "status": "answer_delivered", "answer_turn": "same" })))
                    .into_response())
            }
            Ok(Ok(Err(e))) => Err(e),
            _ => Err(Error::unavailable("turn_busy", "The agent did not take the answer in time; try again.")),
        };
    }
    // No live turn: the server restarted while the question waited. Record the answers and
    // continue the conversation with them as a hidden message.
    state
        .writer
        .call(|ack| WriteCommand::AnswerQuestion {
            chat_id: chat_id.to_owned(),
            question_id: question_id.to_owned(),
            answers: answers.clone(),
            ack,
        })
        .await?;
    let text = turn::answers_text(&[], answers.as_object().unwrap_or(&Map::new()));
    let message = UserMessage { cid: format!("answer-{question_id}"), content: text, hidden: true, extra: Map::new() };
    let response = start_or_queue(state, chat_id, message, None).await?;
    if response.status() == StatusCode::ACCEPTED {
        let bytes =
            axum::body::to_bytes(response.into_body(), 1 << 20).await.map_err(|e| Error::Internal(e.to_string()))?;
        let mut body: Value = serde_json::from_slice(&bytes).unwrap_or_else(|_| json!({}));
        body["answer_turn"] = "new".into();
        return Ok((StatusCode::ACCEPTED, Json(body)).into_response());
    }
    Ok(response)
}

#[derive(Deserialize)]
struct EditIn {
    content: String,
}

async fn edit_pending(
    State(state): State<AppState>,
    who: ChatCaller,
    Path((id, cid)): Path<(String, String)>,
    ApiJson(body): ApiJson<EditIn>,
) -> Result<Json<Value>> {
    let id = checked_id(&id)?.to_owned();
    who.allow(&state, &id, Op::Send).await?;
    if body.content.trim().is_empty() || body.content.chars().count() > MAX_MESSAGE_CHARS {
        return Err(Error::bad_request("empty_message", "A queued message needs text (and not too much)."));
    }
    let (updated, pending) =
        state.writer.call(|ack| WriteCommand::UpdatePending { chat_id: id, cid, content: body.content, ack }).await?;
    Ok(Json(json!({ "updated": updated, "pending_messages": pending })))
}

async fn remove_pending(
    State(state): State<AppState>,
    who: ChatCaller,
    Path((id, cid)): Path<(String, String)>,
) -> Result<Json<Value>> {
    let id = checked_id(&id)?.to_owned();
    who.allow(&state, &id, Op::Send).await?;
    let (removed, pending) = state.writer.call(|ack| WriteCommand::CancelPending { chat_id: id, cid, ack }).await?;
    Ok(Json(json!({ "removed": removed, "pending_messages": pending })))
}

#[derive(Deserialize)]
struct StopIn {
    chat_id: String,
}

async fn stop(State(state): State<AppState>, who: ChatCaller, ApiJson(body): ApiJson<StopIn>) -> Result<Json<Value>> {
    let id = checked_id(&body.chat_id)?;
    who.allow(&state, id, Op::Stop).await?;
    let _lock = state.chat_locks.lock(id).await;
    let (stopped, cleared) = stop_turn(&state, id).await?;
    Ok(Json(json!({ "stopped": stopped, "cleared_pending_cids": cleared })))
}

async fn tool_output(
    State(state): State<AppState>,
    who: ChatCaller,
    Path((id, tool_use_id)): Path<(String, String)>,
) -> Result<Response> {
    let id = checked_id(&id)?;
    who.allow(&state, id, Op::Read).await?;
    let text = db::chats::tool_output(&state.db.read, id, &tool_use_id)
        .await?
        .ok_or_else(|| Error::not_found("output_not_found", "No stored output for this tool call."))?;
    let mut response = text.into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("private, max-age=31536000, immutable"));
    Ok(response)
}

async fn runs(
    State(state): State<AppState>,
    who: ChatCaller,
    Path(id): Path<String>,
) -> Result<Json<Vec<db::chats::RunRow>>> {
    let id = checked_id(&id)?;
    who.allow(&state, id, Op::Read).await?;
    Ok(Json(db::chats::runs(&state.db.read, id, 100).await?))
}
