//! App-attributed chats (`/api/app-chats`) and the embedded chat's sessions.
//!
//! An app creates chats of its own (hidden from the owner's drawer unless `owner_visible`),
//! sends to and streams them through the ordinary chat routes with its app token, and may
//! embed one in a nested frame: it mints a one-use grant for an embed instance
//! (`embed-capability`, 60 s), the nested frame trades it for a 15-minute `chat_embed` session
//! (`/api/app-chat-embeds/session`), and `DELETE …/embed-sessions/{instance}` ends them all.
//! Chats are created and changed through the writer's ordinary chat commands.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, patch, post};
use axum::{Json, Router};
use base64::Engine as _;
use rand::RngCore;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::access::EMBED_OPERATIONS;
use crate::agent::ProviderKind;
use crate::agent::settings::AgentSettings;
use crate::api::ApiJson;
use crate::auth::{Claims, Principal, Scope};
use crate::db::{self, apps::AppRow, now_ms};
use crate::error::{Domain, Error, Result};
use crate::protocol::ChatId;
use crate::state::AppState;
use crate::writer::{ChatPatch, NewAppChat, NewChat, WriteCommand};

/// A grant is good for this long after it is minted.
const GRANT_TTL_MS: i64 = 60 * 1000;
/// An embedded chat's session lasts this long (the frame asks for a new grant before).
pub const EMBED_SESSION_TTL_SECS: i64 = 15 * 60;
const MAX_SYSTEM_PROMPT_CHARS: usize = 20_000;
const MAX_MODEL_CHARS: usize = 256;
const MAX_SCOPE_CHARS: usize = 160;
const MAX_SCOPE_LABEL_CHARS: usize = 120;
const MAX_TITLE_CHARS: usize = 200;
const MAX_REPORT_KIND_CHARS: usize = 64;
/// Most chats `GET /api/app-chats` lists.
const MAX_LISTED_APP_CHATS: i64 = 200;
/// Random bytes in a grant (43 characters once encoded).
const GRANT_BYTES: usize = 32;

/// The routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/app-chats", get(list).post(create))
        .route("/app-chats/{id}", patch(update))
        .route("/app-chats/{id}/embed-capability", post(embed_capability))
        .route("/app-chats/{id}/embed-sessions/{instance}", delete(revoke))
        .route("/app-chat-embeds/session", post(exchange))
}

/// The calling app: app tokens only (the owner has the ordinary chat routes).
fn calling_app(who: Principal) -> Result<Arc<AppRow>> {
    match who {
        Principal::App(app) => Ok(app),
        Principal::Owner(_) => Err(Error::forbidden("wrong_scope", "Only an app token can use its app chats.")),
    }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::unprocessable("invalid_app_chat", message)
}

/// A bounded string without control characters; `None` when absent.
fn text(value: Option<String>, field: &str, max: usize) -> Result<Option<String>> {
    match value {
        Some(v) if v.chars().count() > max || v.chars().any(|c| c.is_control() && c != '\n' && c != '\t') => {
            Err(invalid(format!("{field} is at most {max} characters, without control characters.")))
        }
        other => Ok(other),
    }
}

fn one_line(value: Option<String>, field: &str, max: usize) -> Result<Option<String>> {
    let value = text(value, field, max)?;
    if value.as_deref().is_some_and(|v| v.contains(['\n', '\t'])) {
        return Err(invalid(format!("{field} is one line.")));
    }
    Ok(value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()))
}

#[derive(Deserialize)]
struct ListQuery {
    scope: Option<String>,
}

/// `GET /api/app-chats?scope=` → this app's live chats, newest activity first.
#[tracing::instrument(level = "debug", skip_all)]
async fn list(State(state): State<AppState>, who: Principal, Query(q): Query<ListQuery>) -> Result<Response> {
    let app = calling_app(who)?;
    let scope = one_line(q.scope, "scope", MAX_SCOPE_CHARS)?;
    let chats = db::embeds::app_chats(&state.db.read, app.id, scope.as_deref(), MAX_LISTED_APP_CHATS).await?;
    Ok(Json(chats).into_response())
}

#[derive(Deserialize)]
struct CreateIn {
    title: Option<String>,
    system_prompt: Option<String>,
    model: Option<String>,
    provider: Option<String>,
    report_date: Option<String>,
    report_kind: Option<String>,
    project_id: Option<String>,
    scope: Option<String>,
    scope_label: Option<String>,
    #[serde(default)]
    owner_visible: bool,
}

/// The provider an app chat runs on, decided (and stored) when the app creates it.
async fn provider_of(state: &AppState, provider: Option<&str>) -> Result<Option<ProviderKind>> {
    match provider.map(str::trim).filter(|p| !p.is_empty()) {
        Some(p) => ProviderKind::parse(p).map(Some).ok_or_else(|| invalid("provider is \"claude\" or \"codex\".")),
        None => state.providers.default_provider(&state.db.read).await,
    }
}

fn check_model(model: Option<String>, provider: Option<&str>) -> Result<Option<String>> {
    let model = text(model, "model", MAX_MODEL_CHARS)?.map(|m| m.trim().to_owned()).filter(|m| !m.is_empty());
    if let Some(m) = &model {
        if m.chars().any(char::is_whitespace) {
            return Err(invalid("model ids have no spaces."));
        }
        let claude_model = m.starts_with("claude") || ["opus", "sonnet", "haiku"].contains(&m.as_str());
        let wrong = match provider {
            Some("codex") => claude_model,
            Some("claude") => m.starts_with("gpt") || m.starts_with("o3") || m.starts_with("o4") || m.contains("codex"),
            _ => false,
        };
        if wrong {
            return Err(invalid(format!("model {m:?} belongs to the other provider.")));
        }
    }
    Ok(model)
}

/// `POST /api/app-chats` → 201 `{id, title, created_by_app_id}`.
#[tracing::instrument(level = "debug", skip_all)]
async fn create(State(state): State<AppState>, who: Principal, ApiJson(body): ApiJson<CreateIn>) -> Result<Response> {
    let app = calling_app(who)?;
    let title = one_line(body.title, "title", MAX_TITLE_CHARS)?.unwrap_or_else(|| "New chat".into());
    let provider = provider_of(&state, body.provider.as_deref()).await?;
    let model = check_model(body.model, provider.map(ProviderKind::id))?;
    let system_prompt =
        text(body.system_prompt, "system_prompt", MAX_SYSTEM_PROMPT_CHARS)?.filter(|p| !p.trim().is_empty());
    if let Some(date) = &body.report_date
        && !(date.len() == 10
            && date.bytes().enumerate().all(|(i, b)| if i == 4 || i == 7 { b == b'-' } else { b.is_ascii_digit() }))
    {
        return Err(invalid("report_date is YYYY-MM-DD."));
    }
    let report_kind = one_line(body.report_kind, "report_kind", MAX_REPORT_KIND_CHARS)?;
    if let Some(project) = &body.project_id
        && !(1..=64).contains(&project.len())
    {
        return Err(invalid("project_id is 1 to 64 letters, digits, '_' or '-'."));
    }
    if body
        .project_id
        .as_deref()
        .is_some_and(|p| !p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'))
    {
        return Err(invalid("project_id is 1 to 64 letters, digits, '_' or '-'."));
    }
    let scope = one_line(body.scope, "scope", MAX_SCOPE_CHARS)?;
    let scope_label = one_line(body.scope_label, "scope_label", MAX_SCOPE_LABEL_CHARS)?;
    let settings = AgentSettings {
        system_prompt,
        model,
        project_id: body.project_id,
        report_date: body.report_date,
        report_kind,
        ..Default::default()
    };
    let id = ChatId::random();
    let chat = NewChat {
        id: id.clone(),
        title: Some(title.clone()),
        messages: Vec::new(),
        app: Some(NewAppChat {
            app_id: app.id,
            owner_visible: body.owner_visible,
            scope,
            scope_label,
            provider,
            agent_settings: settings.stored(),
        }),
    };
    state.writer.call(|ack| WriteCommand::CreateChat { chat, ack }).await?;
    Ok((StatusCode::CREATED, Json(json!({ "id": id, "title": title, "created_by_app_id": app.id }))).into_response())
}

/// This app's live chat `id`, or 404/403.
async fn own_chat(state: &AppState, app: &AppRow, id: &str) -> Result<db::chats::ChatRow> {
    let missing = || Error::from(Domain::ChatNotFound);
    if ChatId::parse(id).is_none() {
        return Err(missing());
    }
    match db::embeds::chat_app(&state.db.read, id).await?.ok_or_else(missing)? {
        Some(owner) if owner == app.id => {}
        _ => return Err(Error::forbidden("forbidden", "This chat belongs to someone else.")),
    }
    db::chats::get(&state.db.read, id).await?.filter(|c| c.deleted_at.is_none()).ok_or_else(missing)
}

#[derive(Deserialize)]
struct PatchIn {
    /// `""` clears it; `null` and absence leave it alone.
    system_prompt: Option<String>,
    model: Option<String>,
    provider: Option<String>,
    scope: Option<String>,
    scope_label: Option<String>,
}

/// `PATCH /api/app-chats/{id}` → `{ok, id, provider, agent_settings_json}`.
#[tracing::instrument(level = "debug", skip_all)]
async fn update(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<PatchIn>,
) -> Result<Json<Value>> {
    let app = calling_app(who)?;
    let chat = own_chat(&state, &app, &id).await?;
    let started = chat.message_count > 0
        || chat.session_id.is_some()
        || chat.system_prompt_id.is_some()
        || db::runs::running_run(&state.db.read, &id).await?.is_some();
    let mut settings = AgentSettings::parse(chat.agent_settings.as_deref());
    let mut patch = ChatPatch::default();
    if let Some(provider) = body.provider.as_deref().map(str::trim).filter(|p| !p.is_empty()) {
        let kind = ProviderKind::parse(provider).ok_or_else(|| invalid("provider is \"claude\" or \"codex\"."))?;
        if started && chat.provider != Some(kind) {
            return Err(Error::conflict(
                "provider_locked",
                "This chat has started; its provider can no longer change.",
            ));
        }
        patch.settings.provider = Some(kind);
    }
    let provider = patch.settings.provider.or(chat.provider).map(ProviderKind::id);
    if let Some(prompt) = text(body.system_prompt, "system_prompt", MAX_SYSTEM_PROMPT_CHARS)? {
        let current = settings.system_prompt.as_deref().unwrap_or_default();
        if current != prompt.as_str() {
            if started {
                return Err(Error::conflict(
                    "chat_started",
                    "This chat has started; its system prompt is fixed for the conversation.",
                ));
            }
            settings.system_prompt = Some(prompt).filter(|p| !p.is_empty());
        }
    }
    if let Some(model) = body.model {
        settings.model = check_model(Some(model), provider)?;
    }
    let agent_settings = settings.stored();
    patch.settings.agent_settings = Some(agent_settings.clone());
    let scope = one_line(body.scope, "scope", MAX_SCOPE_CHARS)?;
    let scope_label = one_line(body.scope_label, "scope_label", MAX_SCOPE_LABEL_CHARS)?;
    if scope.is_some() || scope_label.is_some() {
        patch.scope = Some((scope, scope_label));
    }
    let chat_id = ChatId::from(id.clone());
    state.writer.call(|ack| WriteCommand::UpdateChat { chat_id, patch, ack }).await?;
    Ok(Json(json!({ "ok": true, "id": id, "provider": provider, "agent_settings_json": agent_settings })))
}

/// 16 to 160 visible ASCII characters, trimmed.
fn instance_id(raw: &str) -> Result<String> {
    let id = raw.trim();
    if (16..=160).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(id.to_owned())
    } else {
        Err(Error::bad_request("invalid_instance_id", "instance_id is 16 to 160 visible ASCII characters."))
    }
}

#[derive(Deserialize)]
struct InstanceIn {
    instance_id: String,
}

/// `ms` (unix milliseconds) as an ISO 8601 UTC timestamp (times past jiff's range, ±9999
/// years, read as the epoch: only expiries computed from now reach here).
pub fn iso(ms: i64) -> String {
    let at = jiff::Timestamp::from_millisecond(ms).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    format!("{}.{:03}Z", at.strftime("%Y-%m-%dT%H:%M:%S"), ms.rem_euclid(1000))
}

fn grant_id(capability: &str) -> String {
    hex::encode(Sha256::digest(capability.as_bytes()))
}

/// `POST /api/app-chats/{id}/embed-capability {instance_id}` → a one-use grant.
#[tracing::instrument(level = "debug", skip_all)]
async fn embed_capability(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<InstanceIn>,
) -> Result<Json<Value>> {
    let app = calling_app(who)?;
    let instance = instance_id(&body.instance_id)?;
    if !app.manifest.embeds_agent() {
        return Err(Error::forbidden(
            "embeds_agent_required",
            "This app does not declare `\"embeds_agent\": true` in its mobius.json, so it cannot embed the chat.",
        ));
    }
    own_chat(&state, &app, &id).await?;
    let epoch = state.owner.get().map(|o| o.1).ok_or_else(|| Error::unauthorized("invalid_token", "No owner."))?;
    let mut bytes = [0u8; GRANT_BYTES];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let capability = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let now = now_ms();
    let grant = db::embeds::Grant {
        id: grant_id(&capability),
        app_id: app.id,
        app_nonce: app.token_nonce.clone(),
        chat_id: id,
        instance_id: instance,
        epoch,
        created_at: now,
        expires_at: now + GRANT_TTL_MS,
        consumed_at: None,
        revoked_at: None,
        session_expires_at: None,
    };
    let expires_at = grant.expires_at;
    state.writer.call(|ack| WriteCommand::EmbedGrantMint { grant, ack }).await?;
    Ok(Json(json!({ "capability": capability, "expires_at": iso(expires_at), "role": "participant" })))
}

/// `POST /api/app-chat-embeds/session {instance_id}` with `Authorization: Bearer <grant>`.
#[tracing::instrument(level = "debug", skip_all)]
async fn exchange(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<InstanceIn>,
) -> Result<Json<Value>> {
    let refused = || Error::from(Domain::InvalidGrant);
    let capability = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|c| c.len() >= 32 && c.len() <= 128)
        .ok_or_else(refused)?;
    let instance = instance_id(&body.instance_id)?;
    let id = grant_id(capability);
    // Everything the grant was minted under must still hold.
    let grant = db::embeds::grant(&state.db.read, &id).await?.ok_or_else(refused)?;
    let (username, epoch) = state.owner.get().ok_or_else(refused)?;
    let app = db::apps::get(&state.db.read, grant.app_id).await?.ok_or_else(refused)?;
    let chat_app = db::embeds::chat_app(&state.db.read, &grant.chat_id).await?;
    if grant.epoch != epoch
        || app.deleted_at.is_some()
        || app.token_nonce != grant.app_nonce
        || chat_app != Some(Some(app.id))
    {
        return Err(refused());
    }
    let session_expires_at = now_ms() + EMBED_SESSION_TTL_SECS * 1000;
    let grant = state
        .writer
        .call(|ack| WriteCommand::EmbedGrantExchange { id, instance_id: instance, session_expires_at, ack })
        .await?;
    let mut claims = Claims::new(&username, Scope::ChatEmbed, epoch, EMBED_SESSION_TTL_SECS);
    claims.app_id = Some(app.id);
    claims.app_nonce = Some(app.token_nonce.clone());
    claims.chat_id = Some(grant.chat_id.clone());
    claims.embed_instance = Some(grant.instance_id.clone());
    claims.embed_session = Some(grant.id.clone());
    claims.embed_role = Some("participant".into());
    claims.embed_ops = Some(EMBED_OPERATIONS.iter().map(|s| (*s).to_owned()).collect());
    let token = state.keys.issue(&claims)?;
    Ok(Json(json!({
        "token": token,
        "chat_id": grant.chat_id,
        "app_id": app.id,
        "instance_id": grant.instance_id,
        "role": "participant",
        "operations": EMBED_OPERATIONS,
        "expires_at": iso(session_expires_at),
        "theme": Value::Null,
    })))
}

/// `DELETE /api/app-chats/{id}/embed-sessions/{instance}` → `{revoked}`.
#[tracing::instrument(level = "debug", skip_all)]
async fn revoke(
    State(state): State<AppState>,
    who: Principal,
    Path((id, instance)): Path<(String, String)>,
) -> Result<Json<Value>> {
    let app = calling_app(who)?;
    let instance = instance_id(&instance)?;
    own_chat(&state, &app, &id).await?;
    let app_id = app.id;
    let revoked =
        state.writer.call(|ack| WriteCommand::EmbedRevoke { app_id, chat_id: id, instance_id: instance, ack }).await?;
    Ok(Json(json!({ "revoked": revoked })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_utc_with_a_z() {
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(iso(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn instance_ids_are_bounded_visible_ascii() {
        assert!(instance_id("  42:1:1700000000000  ").is_ok());
        for bad in ["short", "has a space in it....", "ümlaut-ümlaut-ümlaut"] {
            assert!(instance_id(bad).is_err(), "{bad:?}");
        }
        assert!(instance_id(&"x".repeat(161)).is_err());
    }
}
