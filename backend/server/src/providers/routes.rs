//! Provider and settings routes (mounted under `/api`).

use super::check::{self, KeyCheck};
use axum::extract::{Path, State};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::agent::ProviderKind;
use crate::agent::models::AgentDefaults;
use crate::api::ApiJson;
use crate::auth::Owner;
use crate::error::{Error, Result};
use crate::state::AppState;
use crate::writer::WriteCommand;

/// The provider routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/auth/providers", get(list))
        .route("/auth/providers/status", get(status))
        .route("/auth/providers/models", get(provider_models))
        .route("/auth/provider/login", post(claude_login))
        .route("/auth/provider/code", post(claude_code))
        .route("/auth/provider/codex/login", post(codex_login))
        .route("/auth/provider/codex/status", get(codex_status))
        .route("/providers/{id}/api-key", post(api_key))
        .route("/providers/{id}", delete(disconnect))
        .route("/models", get(models))
        .route("/settings", get(settings).post(update_settings))
        .route("/settings/provider-usage/{id}", get(provider_usage))
}

fn kind(id: &str) -> Result<ProviderKind> {
    ProviderKind::parse(id).ok_or_else(|| Error::not_found("unknown_provider", format!("No provider named {id:?}.")))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn list(State(state): State<AppState>, _owner: Owner) -> Json<Value> {
    let versions = state.providers.versions().await;
    let rows: Vec<Value> = ProviderKind::ALL
        .iter()
        .zip(versions)
        .map(|(k, v)| json!({ "id": k.id(), "name": k.name(), "available": v.is_some(), "version": v }))
        .collect();
    Json(Value::Array(rows))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn status(State(state): State<AppState>, _who: crate::chats::access::ChatCaller) -> Result<Json<Value>> {
    let mut providers = serde_json::Map::new();
    for k in ProviderKind::ALL {
        providers.insert(k.id().into(), serde_json::to_value(state.providers.status(k)).unwrap_or(Value::Null));
    }
    let default = state.providers.default_provider(&state.db.read).await?.map(ProviderKind::id);
    Ok(Json(json!({ "default_provider": default, "providers": providers })))
}

#[derive(Deserialize)]
struct ApiKeyIn {
    api_key: String,
}

#[tracing::instrument(level = "debug", skip_all)]
async fn api_key(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ApiKeyIn>,
) -> Result<Json<Value>> {
    let k = kind(&id)?;
    let verdict = state.providers.set_api_key(k, &body.api_key).await?;
    state.agents.warm.retire_provider(k);
    tracing::info!(provider = k.id(), check = ?verdict, "provider connected with an API key");
    Ok(Json(match verdict {
        KeyCheck::Unknown(why) => json!({
            "ok": true,
            "checked": false,
            "warning": format!("Saved, but {} couldn't check it: {why}.", check::provider_name(k)),
        }),
        _ => json!({ "ok": true, "checked": true }),
    }))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn disconnect(State(state): State<AppState>, _owner: Owner, Path(id): Path<String>) -> Result<Json<Value>> {
    let k = kind(&id)?;
    state.providers.disconnect(k)?;
    state.agents.warm.retire_provider(k);
    tracing::info!(provider = k.id(), "provider disconnected");
    Ok(Json(json!({ "ok": true })))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn claude_login(State(state): State<AppState>, _owner: Owner) -> Json<Value> {
    Json(json!({ "auth_url": state.providers.oauth.start() }))
}

#[derive(Deserialize)]
struct CodeIn {
    code: String,
}

#[tracing::instrument(level = "debug", skip_all)]
async fn claude_code(
    State(state): State<AppState>,
    _owner: Owner,
    ApiJson(body): ApiJson<CodeIn>,
) -> Result<Json<Value>> {
    let credentials = state.providers.oauth.finish(&body.code).await?;
    state.providers.credentials.save(ProviderKind::Claude, super::Method::Oauth, &credentials)?;
    state.agents.warm.retire_provider(ProviderKind::Claude);
    tracing::info!("Claude connected with OAuth");
    Ok(Json(json!({ "ok": true })))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn codex_login(State(state): State<AppState>, _owner: Owner) -> Result<Json<Value>> {
    let login = state.providers.codex_device_login().await?;
    Ok(Json(json!({ "url": login.url, "code": login.code })))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn codex_status(State(state): State<AppState>, _owner: Owner) -> Json<Value> {
    let login = state.providers.codex_device_status();
    Json(json!({ "status": login.status, "error": login.error }))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn models(State(state): State<AppState>, _who: crate::chats::access::ChatCaller) -> Json<Value> {
    let (claude, codex) =
        tokio::join!(state.providers.models(ProviderKind::Claude), state.providers.models(ProviderKind::Codex));
    Json(json!({ "providers": { "claude": claude, "codex": codex } }))
}

/// `GET /api/auth/providers/models` (the original's shape, for apps written for it):
/// `{claude:[{id,name,tier?}], codex:[…]}` — the same lists as `/api/models`, whose hidden
/// models are already left out. Owner, app tokens, and embedded chats granted `models:read`.
#[tracing::instrument(level = "debug", skip_all)]
async fn provider_models(State(state): State<AppState>, who: crate::chats::access::ChatCaller) -> Result<Json<Value>> {
    who.allow_models()?;
    let (claude, codex) =
        tokio::join!(state.providers.models(ProviderKind::Claude), state.providers.models(ProviderKind::Codex));
    let short = |list: Vec<crate::agent::models::ModelInfo>| -> Vec<Value> {
        list.into_iter()
            .map(|m| {
                let mut row = json!({ "id": m.id, "name": m.label });
                if m.is_default {
                    row["tier"] = json!("default");
                }
                row
            })
            .collect()
    };
    Ok(Json(json!({ "claude": short(claude), "codex": short(codex) })))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn settings(State(state): State<AppState>, _owner: Owner) -> Result<Json<Value>> {
    let ([claude_version, codex_version], toolbox) =
        tokio::join!(state.providers.versions(), state.providers.toolbox());
    let default = state.providers.default_provider(&state.db.read).await?.map(ProviderKind::id);
    let defaults = AgentDefaults::parse(crate::db::owner::agent_defaults(&state.db.read).await?.as_deref());
    Ok(Json(json!({
        "default_provider": default,
        "claude_version": claude_version,
        "codex_version": codex_version,
        "sandbox": state.agents.sandbox.state(),
        "toolbox": toolbox,
        "agent_defaults": defaults,
        "warm": state.agents.warm.state(),
        "agent_slots": state.agents.slots.state(),
        "agent_limits": {
            "memory": state.providers.memory().state(),
            "output_max_bytes": state.providers.output_max(),
        },
    })))
}

#[derive(Deserialize)]
struct SettingsIn {
    default_provider: Option<String>,
    /// The default model and effort per provider (replaces what was stored).
    agent_defaults: Option<AgentDefaults>,
}

#[tracing::instrument(level = "debug", skip_all)]
async fn update_settings(
    State(state): State<AppState>,
    _owner: Owner,
    ApiJson(body): ApiJson<SettingsIn>,
) -> Result<Json<Value>> {
    let provider = body.default_provider.as_deref().map(kind).transpose()?;
    let defaults = match body.agent_defaults {
        Some(d) => Some(serde_json::to_string(&d.checked()?).map_err(|e| Error::Internal(e.to_string()))?),
        None => None,
    };
    if let Some(defaults) = defaults {
        state.writer.call(|ack| WriteCommand::SetAgentDefaults { defaults, ack }).await?;
    }
    if let Some(provider) = provider {
        state.writer.call(|ack| WriteCommand::SetDefaultProvider { provider: Some(provider), ack }).await?;
    }
    Ok(Json(json!({ "ok": true })))
}

/// `GET /api/settings/provider-usage/{id}`: the plan's windows as the provider's CLI last
/// reported them (empty until a turn ran on a plan that reports them).
#[tracing::instrument(level = "debug", skip_all)]
async fn provider_usage(
    State(state): State<AppState>,
    _who: crate::chats::access::ChatCaller,
    Path(id): Path<String>,
) -> Result<Json<Value>> {
    let k = kind(&id)?;
    let stored = crate::db::usage::limits(&state.db.read, k.id()).await?;
    let (windows, updated_at) = match stored {
        Some((windows, at)) => (serde_json::from_str::<Value>(&windows).unwrap_or(Value::Array(Vec::new())), Some(at)),
        None => (Value::Array(Vec::new()), None),
    };
    Ok(Json(json!({ "provider": k.id(), "windows": windows, "updated_at": updated_at })))
}
