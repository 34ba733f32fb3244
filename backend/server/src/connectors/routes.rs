//! `/api/connectors…` (Settings › Connectors) and `/api/chats/{id}/connectors` (a chat's info
//! sheet): the owner adds a remote MCP server by URL with no auth, a bearer/header secret or
//! OAuth (`…/oauth/start` → the owner signs in → the public `…/oauth/callback`), the server
//! connects and lists its tools, and the owner reconnects, disconnects, removes it and says
//! which chats may use it. Owner only (but the callback, which a one-time `state` guards);
//! secrets are write-only.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::MAX_CONNECTORS;
use super::broker::authorization;
use super::mcp::{self, Tool};
use super::oauth::{self, Grant};
use crate::api::ApiJson;
use crate::auth::Owner;
use crate::db::connectors::sealed_context;
use crate::db::connectors::{self as sql, ConnectorPatch, ConnectorRow, NewConnector};
use crate::error::{Domain, Error, Result};
use crate::state::AppState;
use crate::writer::WriteCommand;

/// Longest URL accepted.
const MAX_URL_CHARS: usize = 2048;
/// Longest secret accepted, in bytes.
const MAX_SECRET_BYTES: usize = 8192;
/// Longest stored connect error.
const MAX_ERROR_CHARS: usize = 300;

/// The connector routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/connectors", get(list).post(create))
        .route("/connectors/{id}", get(one).patch(update).delete(remove))
        .route("/connectors/{id}/refresh", post(refresh))
        .route("/connectors/{id}/disconnect", post(disconnect))
        .route("/connectors/{id}/oauth/start", post(oauth_start))
        .route("/connectors/{id}/oauth/client", post(oauth_client).delete(oauth_forget_client))
        .route("/connectors/{id}/oauth/disconnect", post(oauth_disconnect))
        .route("/connectors/oauth/callback", get(oauth_callback))
        .route("/chats/{id}/connectors", get(chat_connectors).put(set_chat_connectors))
}

/// `[a-z0-9][a-z0-9_-]{0,31}`: what the CLIs name its tools by (`mcp__<name>__<tool>`).
pub fn valid_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// A connector as Settings reads it (never its secret).
#[derive(Serialize)]
struct ConnectorOut {
    id: i64,
    name: String,
    url: String,
    auth: String,
    header_name: Option<String>,
    has_secret: bool,
    chats: String,
    read_only_auto: bool,
    status: String,
    last_error: Option<String>,
    tools: Vec<Tool>,
    /// `streamable` or `sse` (legacy HTTP+SSE), as found at connect.
    transport: String,
    created_at: i64,
    updated_at: i64,
}

impl From<ConnectorRow> for ConnectorOut {
    fn from(row: ConnectorRow) -> Self {
        Self {
            tools: serde_json::from_str(&row.tools).unwrap_or_default(),
            has_secret: row.secret.is_some(),
            id: row.id,
            name: row.name,
            url: row.url,
            auth: row.auth,
            header_name: row.header_name,
            chats: row.chats,
            read_only_auto: row.read_only_auto,
            status: row.status,
            last_error: row.last_error,
            transport: row.transport,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

fn not_found() -> Error {
    Error::not_found("connector_not_found", "No such connector.")
}

async fn row(state: &AppState, id: i64) -> Result<ConnectorRow> {
    sql::get(&state.db.read, id).await?.ok_or_else(not_found)
}

/// `GET /api/connectors` → `{connectors, max}`.
#[tracing::instrument(level = "debug", skip_all)]
async fn list(State(state): State<AppState>, _owner: Owner) -> Result<Json<serde_json::Value>> {
    let rows: Vec<ConnectorOut> = sql::list(&state.db.read).await?.into_iter().map(ConnectorOut::from).collect();
    Ok(Json(json!({ "connectors": rows, "max": MAX_CONNECTORS })))
}

/// `GET /api/connectors/{id}`.
#[tracing::instrument(level = "debug", skip_all, fields(connector.id = id))]
async fn one(State(state): State<AppState>, _owner: Owner, Path(id): Path<i64>) -> Result<Json<ConnectorOut>> {
    Ok(Json(row(&state, id).await?.into()))
}

#[derive(Deserialize)]
struct CreateIn {
    name: String,
    url: String,
    #[serde(default = "none")]
    auth: String,
    #[serde(default)]
    secret: Option<String>,
    #[serde(default)]
    header_name: Option<String>,
    #[serde(default = "all")]
    chats: String,
    #[serde(default)]
    read_only_auto: bool,
}

fn none() -> String {
    "none".into()
}

fn all() -> String {
    "all".into()
}

fn check_chats(chats: &str) -> Result<()> {
    if matches!(chats, "all" | "chosen") {
        Ok(())
    } else {
        Err(Error::bad_request("invalid_chats", "chats is \"all\" or \"chosen\"."))
    }
}

/// Parses and checks an MCP URL before anything connects: http(s), no credentials in it, no
/// literal private, local or metadata address (names are checked as they resolve).
fn check_url(state: &AppState, raw: &str) -> Result<reqwest::Url> {
    let raw = raw.trim();
    if raw.is_empty() || raw.len() > MAX_URL_CHARS {
        return Err(Error::bad_request("invalid_url", "Give the MCP server's https address."));
    }
    let url = reqwest::Url::parse(raw).map_err(|_| Error::bad_request("invalid_url", "That is not a URL."))?;
    if let Some(why) = state.connectors.policy().refuse_url(&url) {
        return Err(Error::bad_request("connector_not_allowed", format!("That address may not be used: {why}.")));
    }
    Ok(url)
}

/// `POST /api/connectors {name, url, auth, secret?, header_name?, chats?, read_only_auto?}` →
/// 201 with the connector, connected or with the reason it could not be.
#[tracing::instrument(level = "debug", skip_all)]
async fn create(State(state): State<AppState>, _owner: Owner, ApiJson(body): ApiJson<CreateIn>) -> Result<Response> {
    if !valid_name(&body.name) {
        return Err(Error::bad_request(
            "invalid_connector_name",
            "A connector's name is 1 to 32 lower-case letters, digits, '_' or '-', starting with a letter or digit.",
        ));
    }
    let url = check_url(&state, &body.url)?;
    check_chats(&body.chats)?;
    let secret = match (body.auth.as_str(), body.secret) {
        ("none", _) => None,
        ("bearer" | "header", Some(s)) if !s.is_empty() && s.len() <= MAX_SECRET_BYTES => {
            if reqwest::header::HeaderValue::from_str(&s).is_err() {
                return Err(Error::bad_request("invalid_secret", "The secret cannot be sent in a header."));
            }
            Some(s)
        }
        ("bearer" | "header", _) => {
            return Err(Error::bad_request(
                "invalid_secret",
                format!("Give the secret: a string of 1 to {MAX_SECRET_BYTES} bytes."),
            ));
        }
        ("oauth", _) => None,
        _ => return Err(Error::bad_request("invalid_auth", "auth is \"none\", \"bearer\", \"header\" or \"oauth\".")),
    };
    let header_name = match body.auth.as_str() {
        "header" => {
            let name = body.header_name.unwrap_or_default();
            let valid = reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_ok_and(|h| {
                !matches!(h.as_str(), "host" | "content-length" | "content-type" | "accept" | "mcp-session-id")
            });
            if !valid {
                return Err(Error::bad_request("invalid_header_name", "Give the header the secret goes in."));
            }
            Some(name)
        }
        _ => None,
    };
    let sealed = match &secret {
        Some(s) => Some(state.keys.seal(&sealed_context(&body.name), s.as_bytes())?),
        None => None,
    };
    let connector = NewConnector {
        name: body.name,
        url: url.to_string(),
        auth: body.auth,
        header_name,
        secret: sealed,
        chats: body.chats,
        read_only_auto: body.read_only_auto,
    };
    let id = state.writer.call(|ack| WriteCommand::ConnectorCreate { connector, max: MAX_CONNECTORS, ack }).await?;
    let row = connect(&state, row(&state, id).await?).await?;
    Ok((StatusCode::CREATED, Json(ConnectorOut::from(row))).into_response())
}

/// Seals `value` as connector `id`'s credential (replacing the one it had) and connects again
/// with it, listing its tools anew. What a secure-input card for a connector stores
/// (`chats::secure_input`); 400 `connector_takes_no_secret` for a connector without auth.
pub(crate) async fn set_secret(state: &AppState, id: i64, value: &str) -> Result<()> {
    let current = row(state, id).await?;
    if current.auth == "none" {
        return Err(Error::bad_request("connector_takes_no_secret", "This connector uses no key or token."));
    }
    if current.auth == "oauth" {
        return Err(Error::bad_request(
            "connector_takes_no_secret",
            "This connector signs in with OAuth: the owner signs in from Settings › Connectors.",
        ));
    }
    let sealed = state.keys.seal(&sealed_context(&current.name), value.as_bytes())?;
    let patch = ConnectorPatch { secret: Some(Some(sealed)), ..ConnectorPatch::default() };
    if !state.writer.call(|ack| WriteCommand::ConnectorUpdate { id, patch, ack }).await? {
        return Err(not_found());
    }
    connect(state, row(state, id).await?).await?;
    Ok(())
}

/// Connects to the row's server, lists its tools and stores what it found (an OAuth connector
/// not signed in waits for its sign-in).
async fn connect(state: &AppState, row: ConnectorRow) -> Result<ConnectorRow> {
    let client = state.connectors.client()?;
    if row.auth == "oauth" && Grant::of(&state.keys, &row)?.access_token.is_none() {
        let patch = ConnectorPatch {
            state: Some(("needs_auth".into(), Some("Sign in to connect.".into()), Some("[]".into()))),
            ..ConnectorPatch::default()
        };
        let id = row.id;
        state.writer.call(|ack| WriteCommand::ConnectorUpdate { id, patch, ack }).await?;
        return self::row(state, id).await;
    }
    let credential = match authorization(state, &row).await {
        Ok(credential) => credential,
        // The renewal marked it as needing a new sign-in.
        Err(_) if row.auth == "oauth" => return self::row(state, row.id).await,
        Err(e) => return Err(e),
    };
    let found = mcp::list_tools(client, &row.url, credential).await;
    let (status, error, tools, transport) = match found {
        Ok((tools, cut, transport)) => {
            let note = cut.then(|| format!("Only the first {} tools are used.", mcp::MAX_TOOLS));
            let tools = serde_json::to_string(&tools).map_err(|e| Error::Internal(e.to_string()))?;
            ("connected", note, tools, Some(transport.as_str()))
        }
        Err(failure) => {
            tracing::info!(connector.id = row.id, "connecting a connector failed: {failure}");
            ("error", Some(failure.0.chars().take(MAX_ERROR_CHARS).collect()), "[]".to_owned(), None)
        }
    };
    let patch =
        ConnectorPatch { state: Some((status.into(), error, Some(tools))), transport, ..ConnectorPatch::default() };
    let id = row.id;
    if !state.writer.call(|ack| WriteCommand::ConnectorUpdate { id, patch, ack }).await? {
        return Err(not_found());
    }
    self::row(state, id).await
}

#[derive(Deserialize)]
struct UpdateIn {
    chats: Option<String>,
    read_only_auto: Option<bool>,
}

/// `PATCH /api/connectors/{id} {chats?, read_only_auto?}`.
#[tracing::instrument(level = "debug", skip_all, fields(connector.id = id))]
async fn update(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<i64>,
    ApiJson(body): ApiJson<UpdateIn>,
) -> Result<Json<ConnectorOut>> {
    if let Some(chats) = &body.chats {
        check_chats(chats)?;
    }
    let patch = ConnectorPatch { chats: body.chats, read_only_auto: body.read_only_auto, ..ConnectorPatch::default() };
    if !state.writer.call(|ack| WriteCommand::ConnectorUpdate { id, patch, ack }).await? {
        return Err(not_found());
    }
    Ok(Json(row(&state, id).await?.into()))
}

/// `POST /api/connectors/{id}/refresh`: connects again and lists its tools anew.
#[tracing::instrument(level = "debug", skip_all, fields(connector.id = id))]
async fn refresh(State(state): State<AppState>, _owner: Owner, Path(id): Path<i64>) -> Result<Json<ConnectorOut>> {
    let row = row(&state, id).await?;
    Ok(Json(connect(&state, row).await?.into()))
}

/// `POST /api/connectors/{id}/disconnect`: kept, but no turn gets it until it is refreshed.
#[tracing::instrument(level = "debug", skip_all, fields(connector.id = id))]
async fn disconnect(State(state): State<AppState>, _owner: Owner, Path(id): Path<i64>) -> Result<Json<ConnectorOut>> {
    let patch = ConnectorPatch { state: Some(("disconnected".into(), None, None)), ..ConnectorPatch::default() };
    if !state.writer.call(|ack| WriteCommand::ConnectorUpdate { id, patch, ack }).await? {
        return Err(not_found());
    }
    Ok(Json(row(&state, id).await?.into()))
}

/// `DELETE /api/connectors/{id}` → 204.
#[tracing::instrument(level = "debug", skip_all, fields(connector.id = id))]
async fn remove(State(state): State<AppState>, _owner: Owner, Path(id): Path<i64>) -> Result<StatusCode> {
    if !state.writer.call(|ack| WriteCommand::ConnectorDelete { id, ack }).await? {
        return Err(not_found());
    }
    Ok(StatusCode::NO_CONTENT)
}

/// Stores `grant` (sealed) and, when given, a new status.
async fn store_grant(
    state: &AppState,
    row: &ConnectorRow,
    grant: &Grant,
    status: Option<(&str, Option<String>)>,
) -> Result<()> {
    let patch = ConnectorPatch {
        secret: Some(Some(grant.seal(&state.keys, &row.name)?)),
        state: status.map(|(s, e)| (s.to_owned(), e, None)),
        ..ConnectorPatch::default()
    };
    let id = row.id;
    if !state.writer.call(|ack| WriteCommand::ConnectorUpdate { id, patch, ack }).await? {
        return Err(not_found());
    }
    Ok(())
}

async fn oauth_row(state: &AppState, id: i64) -> Result<ConnectorRow> {
    let row = row(state, id).await?;
    if row.auth != "oauth" {
        return Err(Error::bad_request("connector_not_oauth", "This connector does not sign in with OAuth."));
    }
    Ok(row)
}

/// Where the connector's sign-in sends the owner's browser back.
fn redirect_uri(state: &AppState) -> String {
    format!("{}{}", state.config.public_origin.as_str(), oauth::CALLBACK_PATH)
}

/// `POST /api/connectors/{id}/oauth/start` → `{authorization_url}`: discovers where the
/// connector signs in, registers Möbius there unless a client was pasted, and returns the URL
/// the owner opens (valid for one sign-in, for ten minutes).
#[tracing::instrument(level = "debug", skip_all, fields(connector.id = id))]
async fn oauth_start(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<i64>,
) -> Result<Json<serde_json::Value>> {
    let row = oauth_row(&state, id).await?;
    let grant = Grant::of(&state.keys, &row)?;
    let out = state.connectors.outbound()?;
    let (url, registered) = oauth::start(&out, &state.connectors.flows, &grant, &row, &redirect_uri(&state)).await?;
    if let Some((client_id, client_secret)) = registered {
        let grant = Grant { client_id: Some(client_id), client_secret, pasted: false, ..grant };
        store_grant(&state, &row, &grant, None).await?;
    }
    Ok(Json(json!({ "authorization_url": url })))
}

#[derive(Deserialize)]
struct ClientIn {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
}

/// `POST /api/connectors/{id}/oauth/client {client_id, client_secret?}`: a client the owner
/// registered at the connector's server themselves (for servers that do not register clients).
#[tracing::instrument(level = "debug", skip_all, fields(connector.id = id))]
async fn oauth_client(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<i64>,
    ApiJson(body): ApiJson<ClientIn>,
) -> Result<Json<ConnectorOut>> {
    let row = oauth_row(&state, id).await?;
    let fits = |v: &str| !v.trim().is_empty() && v.len() <= MAX_SECRET_BYTES && !v.chars().any(char::is_control);
    let secret = body.client_secret.filter(|s| !s.is_empty());
    if !fits(&body.client_id) || secret.as_deref().is_some_and(|s| !fits(s)) {
        return Err(Error::bad_request("invalid_client", "Give the client ID (and its secret, if it has one)."));
    }
    let grant = Grant {
        client_id: Some(body.client_id.trim().to_owned()),
        client_secret: secret,
        pasted: true,
        ..Grant::default()
    };
    store_grant(&state, &row, &grant, Some(("needs_auth", Some("Sign in to connect.".into())))).await?;
    Ok(Json(self::row(&state, id).await?.into()))
}

/// `DELETE /api/connectors/{id}/oauth/client`: forgets the pasted client and the sign-in.
#[tracing::instrument(level = "debug", skip_all, fields(connector.id = id))]
async fn oauth_forget_client(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<i64>,
) -> Result<Json<ConnectorOut>> {
    let row = oauth_row(&state, id).await?;
    store_grant(&state, &row, &Grant::default(), Some(("needs_auth", Some("Sign in to connect.".into())))).await?;
    Ok(Json(self::row(&state, id).await?.into()))
}

/// `POST /api/connectors/{id}/oauth/disconnect`: signs out (the tokens are forgotten; a pasted
/// client is kept); the next turn no longer gets the connector.
#[tracing::instrument(level = "debug", skip_all, fields(connector.id = id))]
async fn oauth_disconnect(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<i64>,
) -> Result<Json<ConnectorOut>> {
    let row = oauth_row(&state, id).await?;
    let grant = Grant::of(&state.keys, &row)?.signed_out();
    store_grant(&state, &row, &grant, Some(("needs_auth", Some("Signed out.".into())))).await?;
    Ok(Json(self::row(&state, id).await?.into()))
}

#[derive(Deserialize)]
struct CallbackIn {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

/// `GET /api/connectors/oauth/callback?code&state` (public: the owner's browser coming back from
/// the connector's sign-in): a `state` this server handed out, once, within ten minutes; the
/// code is exchanged with the flow's PKCE verifier, the tokens sealed, the connector connected,
/// and the browser sent to Settings › Connectors (`?connector=<id>&oauth=connected|failed`).
#[tracing::instrument(level = "debug", skip_all)]
async fn oauth_callback(
    State(state): State<AppState>,
    axum::extract::Query(query): axum::extract::Query<CallbackIn>,
) -> Result<Response> {
    let flow = query.state.as_deref().and_then(|s| state.connectors.flows.take(s)).ok_or_else(|| {
        Error::bad_request(
            "invalid_oauth_state",
            "This sign-in link is not valid any more: start again from Settings › Connectors.",
        )
    })?;
    let back = |outcome: &str| {
        axum::response::Redirect::to(&format!("/settings/connectors?connector={}&oauth={outcome}", flow.connector_id))
            .into_response()
    };
    let row = oauth_row(&state, flow.connector_id).await?;
    let code = match (query.code.as_deref(), query.error.as_deref()) {
        (Some(code), None) if !code.is_empty() && code.len() <= 4096 => code,
        (_, error) => {
            let why = format!(
                "The sign-in was not completed ({}).",
                error.unwrap_or("no code").chars().take(60).collect::<String>()
            );
            store_grant(&state, &row, &Grant::of(&state.keys, &row)?, Some(("needs_auth", Some(why)))).await?;
            return Ok(back("failed"));
        }
    };
    let now = crate::db::now_ms() / 1000;
    let out = state.connectors.outbound()?;
    match oauth::exchange(&out, &flow, code, now).await {
        Ok(tokens) => {
            let grant = Grant {
                client_id: Some(flow.client_id.clone()),
                client_secret: flow.client_secret.clone(),
                token_endpoint: Some(flow.token_endpoint.clone()),
                access_token: Some(tokens.access_token),
                refresh_token: tokens.refresh_token,
                expires_at: tokens.expires_at,
                ..Grant::of(&state.keys, &row)?
            };
            store_grant(&state, &row, &grant, None).await?;
            tracing::info!(connector.id = row.id, "a connector was signed in with OAuth");
            let row = connect(&state, self::row(&state, row.id).await?).await?;
            Ok(back(if row.status == "connected" { "connected" } else { "failed" }))
        }
        Err(error) => {
            store_grant(&state, &row, &Grant::of(&state.keys, &row)?, Some(("needs_auth", Some(format!("{error}")))))
                .await?;
            Ok(back("failed"))
        }
    }
}

async fn live_chat(state: &AppState, id: &str) -> Result<()> {
    match crate::db::chats::get(&state.db.read, id).await? {
        Some(chat) if chat.deleted_at.is_none() => Ok(()),
        _ => Err(Domain::ChatNotFound.into()),
    }
}

/// `GET /api/chats/{id}/connectors` → `{chosen: [id…], usable: [id…]}`: the connectors chosen
/// for the chat and those its next turn gets.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %id))]
async fn chat_connectors(
    State(state): State<AppState>,
    _owner: Owner,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>> {
    live_chat(&state, &id).await?;
    let chosen = sql::chosen(&state.db.read, &id).await?;
    let usable: Vec<i64> = super::for_chat(&state.db.read, &id).await?.into_iter().map(|s| s.id).collect();
    Ok(Json(json!({ "chosen": chosen, "usable": usable })))
}

#[derive(Deserialize)]
struct ChosenIn {
    ids: Vec<i64>,
}

/// `PUT /api/chats/{id}/connectors {ids}`: the connectors chosen for this chat (those set to
/// "chosen chats"; all-chats ones need no choice).
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %id))]
async fn set_chat_connectors(
    State(state): State<AppState>,
    owner: Owner,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ChosenIn>,
) -> Result<Json<serde_json::Value>> {
    live_chat(&state, &id).await?;
    if body.ids.len() > usize::try_from(MAX_CONNECTORS).unwrap_or(usize::MAX) {
        return Err(Error::bad_request("invalid_request", "Too many connectors."));
    }
    let chat_id = id.clone();
    let ids = body.ids;
    state.writer.call(|ack| WriteCommand::ChatConnectorsSet { chat_id, ids, ack }).await?;
    chat_connectors(State(state), owner, Path(id)).await
}
