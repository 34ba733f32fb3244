//! `/api/auth/*`: first-boot setup, login, sign-out-everywhere, and the session probe.

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::limits::Attempter;
use super::password::Lane;
use super::{Claims, OWNER_TOKEN_TTL_SECS, Owner, Scope, devices};
use crate::api::{ApiJson, JsonOrForm};
use crate::error::{Error, Result};
use crate::net::client::ClientAddr;
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
        .route("/auth/password", post(change_password))
        .route("/admin/sign-out-everywhere", post(logout_all))
        .route("/auth/session", get(session))
        .route("/auth/devices", get(list_devices))
        .route("/auth/devices/{id}", axum::routing::delete(revoke_device))
        .route("/auth/pairing", post(create_pairing).get(pairing_status).delete(cancel_pairing))
        .route("/auth/pair", post(pair))
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

#[tracing::instrument(level = "debug", skip_all)]
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

/// 429 for an attempt that must wait `wait` (sign-ins, notification buttons).
pub(crate) fn throttled(wait: std::time::Duration) -> Error {
    let secs = wait.as_secs_f64().ceil() as u64;
    Error::too_many("too_many_attempts", format!("Too many attempts; try again in {secs} s."), secs)
}

/// A new session for a device that signed in (or was paired, or redeemed an install pass):
/// the device remembered with it, and its owner token and device cookie.
pub(crate) async fn open_session(
    state: &AppState,
    headers: &HeaderMap,
    device: Option<String>,
    client: &ClientAddr,
    username: &str,
    epoch: i64,
) -> Result<(String, axum::http::HeaderValue)> {
    let sid = super::sessions::new_session_id();
    let cookie = remember(state, headers, device, &sid, &client.0.to_string()).await?;
    let mut claims = Claims::new(username, Scope::Owner, epoch, OWNER_TOKEN_TTL_SECS);
    claims.sid = Some(sid);
    Ok((state.keys.issue(&claims)?, cookie))
}

/// A token for a successful sign-in, with this device remembered in its cookie.
async fn signed_in(
    state: &AppState,
    headers: &HeaderMap,
    device: Option<String>,
    client: &ClientAddr,
    username: &str,
    epoch: i64,
) -> Result<Response> {
    let (token, cookie) = open_session(state, headers, device, client, username, epoch).await?;
    let mut response = Json(TokenOut { access_token: token, token_type: "bearer" }).into_response();
    response.headers_mut().insert(header::SET_COOKIE, cookie);
    Ok(response)
}

/// Who a password attempt is counted against, after checking it may be made now: a known
/// device only waits after its own failures; anyone else waits after their address's
/// failures and takes from the global bucket.
async fn admit_attempt(
    state: &AppState,
    headers: &HeaderMap,
    client: ClientAddr,
) -> Result<(Attempter, Option<String>)> {
    let device = devices::known(&state.db.read, headers).await?;
    let who = match &device {
        Some(digest) => Attempter::Device(digest.clone()),
        None => Attempter::Address(client.key()),
    };
    state.login_limits.check(&who).map_err(throttled)?;
    if device.is_none() {
        state.login_limits.take_global().map_err(throttled)?;
    }
    Ok((who, device))
}

#[tracing::instrument(level = "debug", skip_all)]
async fn setup(
    State(state): State<AppState>,
    client: ClientAddr,
    headers: HeaderMap,
    JsonOrForm(creds): JsonOrForm<Credentials>,
) -> Result<Response> {
    if state.owner.get().is_some() {
        return Err(Error::conflict("already_configured", "The owner account already exists; sign in instead."));
    }
    let username = validate(&creds)?;
    let (who, _) = admit_attempt(&state, &headers, client).await?;
    let password_hash = state.passwords.hash(creds.password).await?;
    state.writer.call(|ack| WriteCommand::CreateOwner { username: username.clone(), password_hash, ack }).await?;
    state.owner.set(username.clone(), 0);
    state.login_limits.record_success(&who);
    tracing::info!("owner account created");
    signed_in(&state, &headers, None, &client, &username, 0).await
}

#[tracing::instrument(level = "debug", skip_all)]
async fn login(
    State(state): State<AppState>,
    client: ClientAddr,
    headers: HeaderMap,
    JsonOrForm(creds): JsonOrForm<Credentials>,
) -> Result<Response> {
    let username = creds.username.trim().to_owned();
    if username.is_empty() || creds.password.is_empty() {
        return Err(Error::bad_request("invalid_request", "Enter your username and password."));
    }
    if creds.password.chars().count() > MAX_PASSWORD_CHARS || username.chars().count() > MAX_USERNAME_CHARS {
        return Err(Error::unauthorized("invalid_credentials", "Incorrect username or password."));
    }
    let (who, device) = admit_attempt(&state, &headers, client).await?;
    let owner = crate::db::owner::get(&state.db.read).await?;
    let (hash, epoch) = match &owner {
        Some(o) if o.username == username => (Some(o.password_hash.clone()), o.token_epoch),
        _ => (None, 0),
    };
    let lane = if device.is_some() { Lane::KnownDevice } else { Lane::Anyone };
    if state.passwords.verify(creds.password, hash, lane).await? {
        state.login_limits.record_success(&who);
        signed_in(&state, &headers, device, &client, &username, epoch).await
    } else {
        state.login_limits.record_failure(who);
        tracing::info!(client = %client.0, "failed login attempt");
        Err(Error::unauthorized("invalid_credentials", "Incorrect username or password."))
    }
}

/// Revokes everything a session or a stolen key could use: the epoch moves (every token and
/// device credential dies) and the signing key rotates (so no token minted with the old key,
/// whatever epoch it names, verifies again).
async fn revoke_everything(state: &AppState, password_hash: Option<String>) -> Result<i64> {
    let epoch = state.writer.call(|ack| WriteCommand::BumpTokenEpoch { password_hash, ack }).await?;
    state.owner.set_epoch(epoch);
    state.sessions.reload(&state.db.read).await?;
    state.pairing.clear();
    state.devices.clear();
    state.keys.rotate()?;
    Ok(epoch)
}

#[tracing::instrument(level = "debug", skip_all)]
async fn logout_all(State(state): State<AppState>, _owner: Owner) -> Result<Response> {
    let epoch = revoke_everything(&state, None).await?;
    tracing::info!(epoch, "every session and device credential revoked; the signing key rotated");
    let mut response = Json(json!({ "ok": true })).into_response();
    response.headers_mut().insert(header::SET_COOKIE, devices::clear(state.config.public_origin.is_https()));
    Ok(response)
}

#[derive(Deserialize)]
struct PasswordChange {
    #[serde(default)]
    current_password: String,
    #[serde(default)]
    new_password: String,
}

/// `POST /api/auth/password {current_password, new_password}`: a new password signs every
/// session and device out and rotates the signing key; this browser gets a fresh token and
/// device credential.
#[tracing::instrument(level = "debug", skip_all)]
async fn change_password(
    State(state): State<AppState>,
    Owner(claims): Owner,
    client: ClientAddr,
    headers: HeaderMap,
    ApiJson(body): ApiJson<PasswordChange>,
) -> Result<Response> {
    let username = validate(&Credentials { username: claims.sub.clone(), password: body.new_password.clone() })?;
    if body.current_password.is_empty() || body.current_password.chars().count() > MAX_PASSWORD_CHARS {
        return Err(Error::unauthorized("invalid_credentials", "The current password is not right."));
    }
    let (who, device) = admit_attempt(&state, &headers, client).await?;
    let owner = crate::db::owner::get(&state.db.read)
        .await?
        .ok_or_else(|| Error::unauthorized("invalid_token", "No owner account exists."))?;
    let lane = if device.is_some() { Lane::KnownDevice } else { Lane::Anyone };
    if !state.passwords.verify(body.current_password, Some(owner.password_hash), lane).await? {
        state.login_limits.record_failure(who);
        return Err(Error::unauthorized("invalid_credentials", "The current password is not right."));
    }
    state.login_limits.record_success(&who);
    let hash = state.passwords.hash(body.new_password).await?;
    let epoch = revoke_everything(&state, Some(hash)).await?;
    tracing::info!(epoch, "the owner's password changed; every session revoked and the signing key rotated");
    signed_in(&state, &headers, None, &client, &username, epoch).await
}

async fn session(Owner(claims): Owner) -> Json<Value> {
    Json(json!({ "username": claims.sub, "scope": claims.scope, "expires_at": claims.exp }))
}

/// The caller's own session (owner tokens only: an agent's token manages no devices).
fn own_session(claims: &Claims) -> Result<String> {
    if claims.scope != Scope::Owner {
        return Err(Error::forbidden("wrong_scope", "Only a signed-in device manages devices."));
    }
    Ok(claims.sid.clone().unwrap_or_else(|| super::sessions::LEGACY_SESSION.to_owned()))
}

/// `GET /api/auth/devices`: the signed-in devices, most recently seen first; `current` marks
/// the caller's.
#[tracing::instrument(level = "debug", skip_all)]
async fn list_devices(State(state): State<AppState>, Owner(claims): Owner) -> Result<Json<Value>> {
    let mine = own_session(&claims)?;
    // Last-seen times live in memory between requests; store them when someone looks.
    let seen = state.sessions.seen();
    state.writer.call(|ack| WriteCommand::TouchSessions { seen, ack }).await?;
    let devices: Vec<Value> = crate::db::owner::devices(&state.db.read)
        .await?
        .into_iter()
        .map(|d| {
            let last_seen = state.sessions.last_seen(&d.session_id).unwrap_or(d.last_used_at).max(d.last_used_at);
            json!({
                "id": d.id,
                "label": d.label,
                "address": d.address,
                "signed_in_at": d.signed_in_at,
                "last_seen_at": last_seen,
                "current": d.session_id == mine,
                "legacy": d.session_id == super::sessions::LEGACY_SESSION,
            })
        })
        .collect();
    Ok(Json(json!({ "devices": devices })))
}

/// `DELETE /api/auth/devices/{id}`: signs that device out at once (its token and its cookie).
#[tracing::instrument(level = "debug", skip_all)]
async fn revoke_device(
    State(state): State<AppState>,
    Owner(claims): Owner,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Result<Response> {
    own_session(&claims)?;
    let id = id.parse::<i64>().map_err(|_| Error::not_found("device_not_found", "There is no such device."))?;
    let sid = state.writer.call(|ack| WriteCommand::ForgetDevice { id, ack }).await?;
    let Some(sid) = sid else {
        return Err(Error::not_found("device_not_found", "There is no such device."));
    };
    state.sessions.remove(&sid);
    state.devices.reload(&state.db.read).await?;
    state.pairing.cancel(&sid);
    tracing::info!(device = id, "a device was signed out");
    Ok(crate::api::no_content())
}

/// `POST /api/auth/pairing`: a pairing code for a new device (replaces a pending one).
#[tracing::instrument(level = "debug", skip_all)]
async fn create_pairing(State(state): State<AppState>, Owner(claims): Owner) -> Result<Json<Value>> {
    let mine = own_session(&claims)?;
    let (code, expires_at) = state.pairing.create(&mine);
    let url = format!("{}/pair?code={}", state.config.public_origin.as_str(), code);
    Ok(Json(json!({ "code": code, "expires_at": expires_at, "url": url })))
}

/// `GET /api/auth/pairing`: the caller's code: `pending` (until when), `paired` (which device),
/// or `none`.
#[tracing::instrument(level = "debug", skip_all)]
async fn pairing_status(State(state): State<AppState>, Owner(claims): Owner) -> Result<Json<Value>> {
    let mine = own_session(&claims)?;
    Ok(Json(match state.pairing.status(&mine) {
        super::pairing::Status::None => json!({ "status": "none" }),
        super::pairing::Status::Pending { expires_at_ms } => {
            json!({ "status": "pending", "expires_at": expires_at_ms })
        }
        super::pairing::Status::Paired { label } => json!({ "status": "paired", "label": label }),
    }))
}

/// `DELETE /api/auth/pairing`: withdraws the caller's code.
#[tracing::instrument(level = "debug", skip_all)]
async fn cancel_pairing(State(state): State<AppState>, Owner(claims): Owner) -> Result<Response> {
    let mine = own_session(&claims)?;
    state.pairing.cancel(&mine);
    Ok(crate::api::no_content())
}

#[derive(Deserialize)]
struct PairBody {
    #[serde(default)]
    code: String,
}

/// `POST /api/auth/pair {code}` (no token): a new device trades a pairing code for its own
/// session and device cookie. Attempts count against the sign-in limits.
#[tracing::instrument(level = "debug", skip_all)]
async fn pair(
    State(state): State<AppState>,
    client: ClientAddr,
    headers: HeaderMap,
    ApiJson(body): ApiJson<PairBody>,
) -> Result<Response> {
    let code = super::pairing::normalize(&body.code);
    if code.is_empty() || body.code.chars().count() > 64 {
        return Err(Error::bad_request("invalid_request", "Enter the code the other device shows."));
    }
    let (who, device) = admit_attempt(&state, &headers, client).await?;
    let Some((username, epoch)) = state.owner.get() else {
        return Err(Error::unauthorized("invalid_pairing_code", "This code is wrong or has expired."));
    };
    let label = devices::label_of(&headers);
    if !state.pairing.redeem(&code, &label) {
        state.login_limits.record_failure(who);
        tracing::info!(client = %client.0, "failed pairing attempt");
        return Err(Error::unauthorized("invalid_pairing_code", "This code is wrong or has expired."));
    }
    state.login_limits.record_success(&who);
    tracing::info!(client = %client.0, "a device was paired");
    signed_in(&state, &headers, device, &client, &username, epoch).await
}

/// Remembers the device after a successful sign-in, with its new session `session_id` signed
/// in from `address`, and returns the `Set-Cookie` to send: a known device keeps its
/// credential (its lifetime starts again), a new one gets one.
async fn remember(
    state: &AppState,
    headers: &HeaderMap,
    known: Option<String>,
    session_id: &str,
    address: &str,
) -> Result<HeaderValue> {
    let (credential, digest) = match (devices::presented(headers), known) {
        (Some(credential), Some(digest)) => (credential, digest),
        _ => {
            let credential = devices::mint();
            let digest = devices::hash(&credential);
            (credential, digest)
        }
    };
    let label = devices::label_of(headers);
    let sign_in = crate::db::owner::DeviceSignIn {
        token_hash: digest,
        label,
        session_id: session_id.to_owned(),
        address: address.to_owned(),
    };
    state.writer.call(|ack| WriteCommand::RememberDevice { sign_in, keep: devices::MAX_DEVICES, ack }).await?;
    state.sessions.reload(&state.db.read).await?;
    state.devices.reload(&state.db.read).await?;
    Ok(devices::cookie(&credential, devices::DEVICE_TTL.as_secs(), state.config.public_origin.is_https()))
}
