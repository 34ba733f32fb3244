//! `/api/auth/*`: first-boot setup, login, sign-out-everywhere, and the session probe.

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Claims, OWNER_TOKEN_TTL_SECS, Owner, Scope};
use crate::api::JsonOrForm;
use crate::error::{Error, Result};
use crate::state::AppState;
use crate::writer::WriteCommand;

/// Longest username, in characters.
pub const MAX_USERNAME_CHARS: usize = 64;
/// Shortest and longest password, in characters.
pub const MIN_PASSWORD_CHARS: usize = 8;
pub const MAX_PASSWORD_CHARS: usize = 1024;

/// The auth routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/auth/setup/status", get(setup_status))
        .route("/auth/setup", post(setup))
        .route("/auth/token", post(login))
        .route("/auth/logout-all", post(logout_all))
        .route("/admin/sign-out-everywhere", post(logout_all))
        .route("/auth/session", get(session))
}

#[derive(Deserialize)]
struct Credentials {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
}

#[derive(Serialize)]
struct TokenOut {
    access_token: String,
    token_type: &'static str,
}

async fn setup_status(State(state): State<AppState>) -> Json<Value> {
    Json(json!({ "configured": state.owner.get().is_some(), "auth_mode": "local" }))
}

fn validate(creds: &Credentials) -> Result<String> {
    let username = creds.username.trim();
    if username.is_empty() {
        return Err(Error::bad_request("invalid_username", "Choose a username."));
    }
    if username.chars().count() > MAX_USERNAME_CHARS {
        return Err(Error::bad_request(
            "invalid_username",
            format!("Usernames are at most {MAX_USERNAME_CHARS} characters."),
        ));
    }
    if username.chars().any(char::is_control) {
        return Err(Error::bad_request("invalid_username", "Usernames cannot contain control characters."));
    }
    let length = creds.password.chars().count();
    if length < MIN_PASSWORD_CHARS {
        return Err(Error::bad_request(
            "weak_password",
            format!("Use a password of at least {MIN_PASSWORD_CHARS} characters."),
        ));
    }
    if length > MAX_PASSWORD_CHARS {
        return Err(Error::bad_request(
            "invalid_password",
            format!("Passwords are at most {MAX_PASSWORD_CHARS} characters."),
        ));
    }
    Ok(username.to_owned())
}

fn throttled(wait: std::time::Duration) -> Error {
    let secs = wait.as_secs_f64().ceil() as u64;
    Error::too_many("too_many_attempts", format!("Too many attempts; try again in {secs} s."), secs)
}

fn owner_token(state: &AppState, username: &str, epoch: i64) -> Result<Json<TokenOut>> {
    let token = state.keys.issue(&Claims::new(username, Scope::Owner, epoch, OWNER_TOKEN_TTL_SECS))?;
    Ok(Json(TokenOut { access_token: token, token_type: "bearer" }))
}

async fn setup(State(state): State<AppState>, JsonOrForm(creds): JsonOrForm<Credentials>) -> Result<Json<TokenOut>> {
    if state.owner.get().is_some() {
        return Err(Error::conflict("already_configured", "The owner account already exists; sign in instead."));
    }
    let username = validate(&creds)?;
    state.login_limits.take_global().map_err(throttled)?;
    let password_hash = state.passwords.hash(creds.password).await?;
    state.writer.call(|ack| WriteCommand::CreateOwner { username: username.clone(), password_hash, ack }).await?;
    state.owner.set(username.clone(), 0);
    tracing::info!("owner account created");
    owner_token(&state, &username, 0)
}

async fn login(State(state): State<AppState>, JsonOrForm(creds): JsonOrForm<Credentials>) -> Result<Json<TokenOut>> {
    let username = creds.username.trim().to_owned();
    if username.is_empty() || creds.password.is_empty() {
        return Err(Error::bad_request("invalid_request", "Enter your username and password."));
    }
    if creds.password.chars().count() > MAX_PASSWORD_CHARS || username.chars().count() > MAX_USERNAME_CHARS {
        return Err(Error::unauthorized("invalid_credentials", "Incorrect username or password."));
    }
    state.login_limits.check(&username).map_err(throttled)?;
    state.login_limits.take_global().map_err(throttled)?;
    let owner = crate::db::owner::get(&state.db.read).await?;
    let (hash, epoch) = match &owner {
        Some(o) if o.username == username => (Some(o.password_hash.clone()), o.token_epoch),
        _ => (None, 0),
    };
    if state.passwords.verify(creds.password, hash).await? {
        state.login_limits.record_success(&username);
        owner_token(&state, &username, epoch)
    } else {
        state.login_limits.record_failure(&username);
        tracing::info!("failed login attempt");
        Err(Error::unauthorized("invalid_credentials", "Incorrect username or password."))
    }
}

async fn logout_all(State(state): State<AppState>, _owner: Owner) -> Result<Json<Value>> {
    let epoch = state.writer.call(|ack| WriteCommand::BumpTokenEpoch { ack }).await?;
    state.owner.set_epoch(epoch);
    tracing::info!(epoch, "every session signed out");
    Ok(Json(json!({ "ok": true })))
}

async fn session(Owner(claims): Owner) -> Json<Value> {
    Json(json!({ "username": claims.sub, "scope": claims.scope, "expires_at": claims.exp }))
}
