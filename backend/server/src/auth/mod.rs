//! Owner authentication: setup, login, tokens, the extractors that guard routes, the
//! cross-site request check and login throttling.

pub mod agent;
pub mod csrf;
pub mod devices;
pub mod jwt;
pub mod known;
pub mod limits;
pub mod owner;
pub mod pairing;
pub mod password;
mod routes;
pub mod sessions;

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

pub use jwt::{Claims, Keys, Scope, bearer_of};
pub use owner::OwnerCache;
pub(crate) use routes::open_session;
pub use routes::router;
pub(crate) use routes::throttled;

use crate::error::{Error, Result};
use crate::state::AppState;

/// Login tokens live this long.
pub const OWNER_TOKEN_TTL_SECS: i64 = 30 * 24 * 3600;

/// Pulls the bearer token out of `Authorization`.
pub fn bearer(parts: &Parts) -> Result<&str> {
    let header = parts
        .headers
        .get(AUTHORIZATION)
        .ok_or_else(|| Error::unauthorized("missing_token", "Sign in first: this request has no token."))?;
    let value =
        header.to_str().map_err(|_| Error::unauthorized("malformed_token", "The Authorization header is not text."))?;
    match value.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() => Ok(token.trim()),
        _ => Err(Error::unauthorized("malformed_token", "Expected `Authorization: Bearer <token>`.")),
    }
}

/// The claims of this request's bearer token, verified once by [`crate::api::gate`] and kept
/// for the route's extractors (a token is verified once per request, not once per check).
#[derive(Clone, Debug)]
pub struct Verified(pub std::sync::Arc<Claims>);

/// The verified claims of the request's bearer: the gate's, else verified now.
pub fn claims_of(parts: &Parts, state: &AppState, token: &str) -> Result<Claims> {
    match parts.extensions.get::<Verified>() {
        Some(Verified(claims)) => Ok(Claims::clone(claims)),
        None => state.keys.verify(token),
    }
}

/// Verifies a token as owner-derived (owner or agent scope): signature, expiry, owner and epoch.
pub async fn verify_owner_token(state: &AppState, token: &str) -> Result<Claims> {
    owner_claims(state, state.keys.verify(token)?).await
}

/// Checks verified claims as owner-derived (owner or agent scope): owner and epoch, and for an
/// agent token its run.
pub async fn owner_claims(state: &AppState, claims: Claims) -> Result<Claims> {
    match claims.scope {
        Scope::Owner | Scope::Agent => {}
        Scope::App | Scope::ChatEmbed | Scope::Media => {
            return Err(Error::forbidden("wrong_scope", "Only an owner token can use this route."));
        }
    }
    let Some((username, epoch)) = state.owner.get() else {
        return Err(Error::unauthorized("invalid_token", "No owner account exists."));
    };
    if claims.sub != username {
        return Err(Error::unauthorized("invalid_token", "This token belongs to another account."));
    }
    if claims.epoch != epoch {
        return Err(Error::unauthorized("token_revoked", "This session was signed out everywhere; sign in again."));
    }
    if claims.scope == Scope::Owner && !state.sessions.check(claims.sid.as_deref().unwrap_or(sessions::LEGACY_SESSION))
    {
        return Err(Error::unauthorized("token_revoked", "This device was signed out; sign in again."));
    }
    if claims.scope == Scope::Agent {
        let run_id = claims.run_id.as_deref().unwrap_or_default();
        // A kept process's token names the run that started it; its later turns are served
        // by it while they run.
        let kept = claims.chat_id.as_deref().is_some_and(|chat| state.agents.turns.served_by(chat, run_id));
        if !kept && !crate::db::runs::run_is_running_read(&state.db.read, run_id).await? {
            return Err(Error::unauthorized("token_revoked", "This agent run has ended."));
        }
    }
    Ok(claims)
}

/// App tokens live this long.
pub const APP_TOKEN_TTL_SECS: i64 = 8 * 3600;

/// App job tokens (`POST /api/auth/app-job-token`, and the scheduler's jobs) live this long.
pub const APP_JOB_TOKEN_TTL_SECS: i64 = 2 * 3600;

/// Issues an app-scoped token for `app` (owner-derived: signing out everywhere kills it).
pub fn issue_app_token(state: &AppState, app: &crate::db::apps::AppRow) -> Result<String> {
    app_token(&state.keys, &state.owner, app, APP_TOKEN_TTL_SECS)
}

/// An app-scoped token for `app`, valid `ttl_secs` (and only while the app stays installed).
pub fn app_token(keys: &Keys, owner: &OwnerCache, app: &crate::db::apps::AppRow, ttl_secs: i64) -> Result<String> {
    let (username, epoch) =
        owner.get().ok_or_else(|| Error::unauthorized("invalid_token", "No owner account exists."))?;
    let mut claims = Claims::new(&username, Scope::App, epoch, ttl_secs);
    claims.app_id = Some(app.id);
    claims.app_nonce = Some(app.token_nonce.clone());
    keys.issue(&claims)
}

/// The token of an app job's run `run_id`: app-scoped like [`app_token`], and accepted only
/// while that run is its app's running job (it dies with the run, whatever its `exp`).
pub fn job_token(
    keys: &Keys,
    owner: &OwnerCache,
    app: &crate::db::apps::AppRow,
    run_id: i64,
    ttl_secs: i64,
) -> Result<String> {
    let (username, epoch) =
        owner.get().ok_or_else(|| Error::unauthorized("invalid_token", "No owner account exists."))?;
    let mut claims = Claims::new(&username, Scope::App, epoch, ttl_secs);
    claims.app_id = Some(app.id);
    claims.app_nonce = Some(app.token_nonce.clone());
    claims.job_run = Some(run_id);
    keys.issue(&claims)
}

/// Who calls a route that both the owner and mini-apps may use.
#[derive(Debug, Clone)]
pub enum Principal {
    /// The owner (or an agent run on the owner's behalf).
    Owner(Box<Claims>),
    /// A mini-app, with its live registry row (permissions are read fresh on every request).
    App(std::sync::Arc<crate::db::apps::AppRow>),
}

impl Principal {
    /// The app id when an app is calling.
    pub fn app_id(&self) -> Option<i64> {
        match self {
            Principal::Owner(_) => None,
            Principal::App(app) => Some(app.id),
        }
    }
}

/// Verifies any token: owner-derived, or an app token whose app is live with the same nonce.
pub async fn verify_principal(state: &AppState, token: &str) -> Result<Principal> {
    principal_of(state, state.keys.verify(token)?).await
}

/// Checks verified claims as [`verify_principal`] does.
pub async fn principal_of(state: &AppState, claims: Claims) -> Result<Principal> {
    match claims.scope {
        Scope::App => {}
        Scope::ChatEmbed => return Err(Error::forbidden("wrong_scope", "An embedded chat cannot use this route.")),
        Scope::Media => return Err(Error::forbidden("wrong_scope", "A media token only loads a chat's files.")),
        Scope::Owner | Scope::Agent => {
            return owner_claims(state, claims).await.map(|c| Principal::Owner(Box::new(c)));
        }
    }
    let Some((username, epoch)) = state.owner.get() else {
        return Err(Error::unauthorized("invalid_token", "No owner account exists."));
    };
    if claims.sub != username {
        return Err(Error::unauthorized("invalid_token", "This token belongs to another account."));
    }
    if claims.epoch != epoch {
        return Err(Error::unauthorized("token_revoked", "This session was signed out everywhere."));
    }
    let (Some(app_id), Some(nonce)) = (claims.app_id, claims.app_nonce.as_deref()) else {
        return Err(Error::unauthorized("malformed_token", "The app token lacks its app."));
    };
    if let Some(run) = claims.job_run
        && !state.schedules.job_running(app_id, run)
    {
        return Err(Error::unauthorized("token_revoked", "This app job's run has ended."));
    }
    match state.app_rows.get(&state.db.read, state.hub.data_version(), app_id).await? {
        Some(app) if app.deleted_at.is_none() && app.token_nonce == nonce => Ok(Principal::App(app)),
        _ => Err(Error::unauthorized("token_revoked", "This app was removed or reinstalled.")),
    }
}

impl FromRequestParts<AppState> for Principal {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let token = bearer(parts)?;
        principal_of(state, claims_of(parts, state, token)?).await
    }
}

/// Extractor: the request carries a valid owner (or live agent-run) token.
#[derive(Debug, Clone)]
pub struct Owner(pub Claims);

impl FromRequestParts<AppState> for Owner {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let token = bearer(parts)?;
        owner_claims(state, claims_of(parts, state, token)?).await.map(Owner)
    }
}
