//! Secure input (issue 36, the original's `/api/secure-inputs`): the agent asks the owner for a
//! secret — an API key for an app's job, a password for a service — and never sees it. The
//! agent's `mobius secret request` creates the request (its run's token, its own chat): the turn
//! shows a `secure_input` card (durable first, with a push) naming the secret and the app it is
//! (or the connector) it is for. The owner types the value into the card; it goes to `/submit`,
//! is sealed as that app's secret (`apps::secrets::store`) or as the connector's credential
//! (`connectors::routes::set_secret`, which connects again with it), and the card records only
//! `stored` or `declined`. The agent
//! waits on `/wait` and learns the outcome and the secret's name — the handle its app reads
//! the secret by (the proxy's `{{secret:NAME}}`) — never the value, which is in no event, row,
//! log line, answer or the model's context.
//!
//! Requests live in memory with their turn: one card at a time per chat, at most
//! [`MAX_OPEN_REQUESTS`] in all, and a request whose turn ended reads `expired`.

use std::time::Duration;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::watch;
use tracing::warn;

use crate::apps::secrets::{MAX_SECRET_BYTES, store, valid_name};
use crate::auth::{Owner, Scope};
use crate::db;
use crate::error::{Domain, Error, Result};
use crate::locks::Unpoisoned;
use crate::protocol::{Answers, Card, ChatId, QuestionCard, QuestionId, SecretAnswers, SecretStatus};
use crate::state::AppState;

/// Requests open at once, all chats together.
pub const MAX_OPEN_REQUESTS: usize = 64;
/// Longest reason the card shows.
pub const MAX_REASON_CHARS: usize = 500;
/// Longest one `/wait` holds before answering `pending` (the CLI asks again).
pub const MAX_WAIT: Duration = Duration::from_secs(50);

/// A default name for a connector's credential.
const CONNECTOR_SECRET_NAME: &str = "token";

use super::secure_requests::{Request, Status, Target};

/// The secure-input routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/secure-inputs/{chat}", post(create))
        .route("/secure-inputs/{chat}/{req}/wait", get(wait))
        .route("/secure-inputs/{chat}/{req}/submit", post(submit))
        .route("/secure-inputs/{chat}/{req}/decline", post(decline))
}

/// The running turn of `chat` if it is still run `run_id`'s.
fn asking(state: &AppState, chat: &str, run_id: &str) -> Option<crate::agent::handle::TurnHandle> {
    state.agents.turns.get(chat).filter(|h| h.run_id().as_str() == run_id)
}

fn not_found() -> Error {
    Error::not_found("secure_input_not_found", "No such secret request in this chat (it may have ended).")
}

fn no_store(mut response: Response) -> Response {
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The agent token of `chat`'s running turn (403 for any other token).
fn agent_of(owner: &Owner, chat: &str) -> Result<()> {
    if owner.0.scope != Scope::Agent || owner.0.chat_id.as_deref() != Some(chat) {
        return Err(Error::forbidden(
            "agent_only",
            "Only the agent's turn in this chat asks for a secret (mobius secret request).",
        ));
    }
    Ok(())
}

/// The owner themself: an agent's token never answers a card.
fn owner_only(owner: &Owner) -> Result<()> {
    if owner.0.scope != Scope::Owner {
        return Err(Error::forbidden("owner_only", "Only the owner enters a secret."));
    }
    Ok(())
}

#[derive(Deserialize)]
struct CreateIn {
    #[serde(default)]
    name: Option<String>,
    /// The app's slug or id.
    #[serde(default)]
    app: Option<Value>,
    /// The connector's id or name.
    #[serde(default)]
    connector: Option<Value>,
    #[serde(default)]
    reason: Option<String>,
}

/// `Some(id)` for a number or a numeric string.
fn id_of(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// The live, built app `app` names (slug or id): its id and name.
async fn app_target(state: &AppState, app: &Value) -> Result<(Target, String)> {
    let row = match (id_of(app), app) {
        (Some(id), _) => db::apps::get(&state.db.read, id).await?,
        (None, Value::String(slug)) => db::apps::by_slug(&state.db.read, slug).await?,
        _ => None,
    };
    match row.filter(|a| a.deleted_at.is_none() && a.bundle_sha.is_some()) {
        Some(app) => Ok((Target::App(app.id), app.name)),
        None => Err(Domain::AppNotFound.into()),
    }
}

/// The connector `connector` names (id or name) that takes a credential.
async fn connector_target(state: &AppState, connector: &Value) -> Result<(Target, String)> {
    let rows = db::connectors::list(&state.db.read).await?;
    let found = rows.into_iter().find(|row| match (id_of(connector), connector) {
        (Some(id), _) => row.id == id,
        (None, Value::String(name)) => row.name == *name,
        _ => false,
    });
    match found {
        Some(row) if row.auth == "none" => {
            Err(Error::bad_request("connector_takes_no_secret", "This connector uses no key or token."))
        }
        Some(row) => Ok((Target::Connector(row.id), row.name)),
        None => Err(Error::not_found("connector_not_found", "No such connector.")),
    }
}

/// `POST /api/secure-inputs/{chat}` (the agent) `{name, app | connector, reason?}` → 201 `{id,
/// status, name, app_id, connector_id}`: the card is in the chat (and on the owner's devices).
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat))]
async fn create(
    State(state): State<AppState>,
    owner: Owner,
    Path(chat): Path<String>,
    body: std::result::Result<Json<CreateIn>, JsonRejection>,
) -> Result<Response> {
    agent_of(&owner, &chat)?;
    let Ok(Json(body)) = body else {
        return Err(Error::bad_request("invalid_request", "Send JSON: {\"name\", \"app\", \"reason\"}."));
    };
    let name = match (&body.name, &body.connector) {
        (Some(name), _) => name.clone(),
        (None, Some(_)) => CONNECTOR_SECRET_NAME.to_owned(),
        (None, None) => String::new(),
    };
    if !valid_name(&name) {
        return Err(Error::bad_request(
            "invalid_secret_name",
            "Secret names are 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit.",
        ));
    }
    let reason = body.reason.map(|r| r.trim().to_owned()).filter(|r| !r.is_empty());
    if reason.as_ref().is_some_and(|r| r.chars().count() > MAX_REASON_CHARS || r.chars().any(char::is_control)) {
        return Err(Error::bad_request(
            "invalid_reason",
            format!("reason is one line of at most {MAX_REASON_CHARS} characters."),
        ));
    }
    let (target, target_name) = match (&body.app, &body.connector) {
        (Some(app), None) => app_target(&state, app).await?,
        (None, Some(connector)) => connector_target(&state, connector).await?,
        _ => {
            return Err(Error::bad_request("invalid_request", "Name where the secret goes: app or connector (one)."));
        }
    };
    let run_id = owner.0.run_id.clone().unwrap_or_default();
    let Some(handle) = state.agents.turns.get(&chat).filter(|h| h.run_id().as_str() == run_id) else {
        return Err(Domain::RunNotRunning.into());
    };
    let question_id = QuestionId::random();
    let id = question_id.as_str().to_owned();
    {
        let mut open = state.secure_inputs.0.locked();
        // Requests of turns that ended are over.
        open.retain(|_, r| asking(&state, &r.chat_id, &r.run_id).is_some());
        if open.len() >= MAX_OPEN_REQUESTS {
            return Err(Error::too_many(
                "too_many_secure_inputs",
                "Too many secret requests are open; answer some first.",
                60,
            ));
        }
        let (status, _) = watch::channel(Status::Pending);
        let request = Request { chat_id: chat.clone(), run_id, target, name: name.clone(), status };
        open.insert(id.clone(), request);
    }
    let (app_id, connector_id) = target.json();
    let card = Card::SecureInput {
        name: name.clone(),
        app_id: app_id.as_i64(),
        connector_id: connector_id.as_i64(),
        target_name,
        reason,
        answers: None,
    };
    if let Err(e) = handle.secure_input(QuestionCard { question_id, card }).await {
        state.secure_inputs.0.locked().remove(&id);
        return Err(e);
    }
    let out = serde_json::json!({
        "id": id, "status": Status::Pending, "name": name, "app_id": app_id, "connector_id": connector_id,
    });
    Ok(no_store((StatusCode::CREATED, Json(out)).into_response()))
}

/// `GET /api/secure-inputs/{chat}/{req}/wait` (the agent) → `{id, status, name, app_id,
/// connector_id}`,
/// once the owner answered or after [`MAX_WAIT`] (`pending`: ask again).
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat))]
async fn wait(
    State(state): State<AppState>,
    owner: Owner,
    Path((chat, req)): Path<(String, String)>,
) -> Result<Response> {
    agent_of(&owner, &chat)?;
    let (mut status, target, name, run_id) = {
        let open = state.secure_inputs.0.locked();
        let request = open.get(&req).filter(|r| r.chat_id == chat).ok_or_else(not_found)?;
        (request.status.subscribe(), request.target, request.name.clone(), request.run_id.clone())
    };
    let mut shutdown = state.shutdown.clone();
    let settled = tokio::select! {
        r = tokio::time::timeout(MAX_WAIT, status.wait_for(|s| *s != Status::Pending)) => r.ok().and_then(|r| r.ok()).map(|s| *s),
        _ = shutdown.wait_for(|down| *down) => None,
    };
    let now = match settled {
        Some(s) => s,
        None if asking(&state, &chat, &run_id).is_none() => Status::Expired,
        None => Status::Pending,
    };
    if now != Status::Pending {
        state.secure_inputs.0.locked().remove(&req);
    }
    let (app_id, connector_id) = target.json();
    let out =
        serde_json::json!({ "id": req, "status": now, "name": name, "app_id": app_id, "connector_id": connector_id });
    Ok(no_store(Json(out).into_response()))
}

#[derive(Deserialize)]
struct SubmitIn {
    value: Value,
}

/// The open request `req` of `chat` (404 otherwise), and the answer's outcome recorded.
async fn settle(state: &AppState, chat: &str, req: &str, outcome: SecretStatus, value: Option<&str>) -> Result<()> {
    let chat_id = ChatId::parse(chat).ok_or_else(not_found)?;
    let _lock = state.chat_locks.lock(&chat_id).await;
    let (target, name, status, run_id) = {
        let open = state.secure_inputs.0.locked();
        let request = open.get(req).filter(|r| r.chat_id == chat).ok_or_else(not_found)?;
        (request.target, request.name.clone(), request.status.clone(), request.run_id.clone())
    };
    if *status.borrow() != Status::Pending {
        return Err(Domain::QuestionStale.into());
    }
    let Some(handle) = asking(state, chat, &run_id) else {
        state.secure_inputs.0.locked().remove(req);
        return Err(Domain::QuestionStale.into());
    };
    match (value, target) {
        (Some(value), Target::App(app_id)) => store(state, app_id, name, value).await?,
        (Some(value), Target::Connector(id)) => crate::connectors::routes::set_secret(state, id, value).await?,
        (None, _) => {}
    }
    status.send_replace(match outcome {
        SecretStatus::Stored => Status::Stored,
        SecretStatus::Declined => Status::Declined,
    });
    // The value is stored whatever the card does now; a turn that ended meanwhile just
    // leaves the card unanswered.
    if let Err(e) =
        handle.answer(QuestionId::from(req.to_owned()), Answers::Secret(SecretAnswers { secret: outcome })).await
    {
        warn!(error = %e, "a secure-input card could not record its answer");
    }
    Ok(())
}

/// `POST /api/secure-inputs/{chat}/{req}/submit` (the owner) `{value}` → 204: the value is
/// sealed as the app's secret; it is never echoed, not even in an error.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat))]
async fn submit(
    State(state): State<AppState>,
    owner: Owner,
    Path((chat, req)): Path<(String, String)>,
    body: std::result::Result<Json<SubmitIn>, JsonRejection>,
) -> Result<Response> {
    owner_only(&owner)?;
    let Ok(Json(body)) = body else {
        return Err(Error::bad_request("invalid_request", "Send JSON: {\"value\": \"<the secret>\"}."));
    };
    let value = match body.value {
        Value::String(v) if !v.is_empty() && v.len() <= MAX_SECRET_BYTES => v,
        _ => {
            return Err(Error::bad_request(
                "invalid_secret_value",
                format!("value is a string of 1 to {MAX_SECRET_BYTES} bytes."),
            ));
        }
    };
    settle(&state, &chat, &req, SecretStatus::Stored, Some(&value)).await?;
    Ok(no_store(StatusCode::NO_CONTENT.into_response()))
}

/// `POST /api/secure-inputs/{chat}/{req}/decline` (the owner) → 204: nothing is stored and the
/// agent hears `declined`.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat))]
async fn decline(
    State(state): State<AppState>,
    owner: Owner,
    Path((chat, req)): Path<(String, String)>,
) -> Result<Response> {
    owner_only(&owner)?;
    settle(&state, &chat, &req, SecretStatus::Declined, None).await?;
    Ok(no_store(StatusCode::NO_CONTENT.into_response()))
}
