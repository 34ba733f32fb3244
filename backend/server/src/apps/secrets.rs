//! App secrets `/api/apps/{id}/secrets/{name}`: API keys and the like an app needs for its
//! proxied calls. The owner (or the app itself) sets and replaces them; an app may check that
//! one exists but never read it back, and never another app's. Values are sealed at rest with
//! the data key (`DATA_DIR/data.key`, bound to the app and the name; see `sealed.rs`), live in the database
//! (so backups carry them), and never appear in a log line or an error message.

use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use serde::Deserialize;

use crate::auth::Principal;
use crate::db;
use crate::error::{Domain, Error, Result};
use crate::state::AppState;
use crate::writer::WriteCommand;

/// Secrets one app may keep.
pub const MAX_SECRETS_PER_APP: i64 = 16;
/// Longest secret value, in bytes.
pub const MAX_SECRET_BYTES: usize = 8192;
const MAX_NAME_CHARS: usize = 64;

/// The secret routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/apps/{id}/secrets", get(list_secrets))
        .route("/apps/{id}/secrets/{name}", put(put_secret).get(get_secret).head(head_secret).delete(delete_secret))
}

/// `[A-Za-z0-9][A-Za-z0-9_.-]{0,63}` without `..`: no `/`, no control characters, no traversal.
pub fn valid_name(name: &str) -> bool {
    name.len() <= MAX_NAME_CHARS
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        && !name.contains("..")
}

/// The app (live) whose secret `name` the caller may touch; `read` asks for the value itself.
async fn authorise(state: &AppState, who: &Principal, id: i64, name: &str, read: bool) -> Result<i64> {
    if !valid_name(name) {
        return Err(Error::bad_request(
            "invalid_secret_name",
            "Secret names are 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit.",
        ));
    }
    match who {
        Principal::Owner(_) => {}
        Principal::App(app) if app.id == id && !read => {}
        Principal::App(app) if app.id == id => {
            return Err(Error::forbidden("forbidden", "Apps can check and replace their secrets, not read them back."));
        }
        Principal::App(_) => return Err(Error::forbidden("forbidden", "An app can only touch its own secrets.")),
    }
    match db::apps::get(&state.db.read, id).await? {
        Some(app) if app.deleted_at.is_none() && app.bundle_sha.is_some() => Ok(app.id),
        _ => Err(Domain::AppNotFound.into()),
    }
}

use super::sealed::context;

fn not_found() -> Error {
    Error::not_found("secret_not_found", "Secret not found.")
}

fn no_store(mut response: Response) -> Response {
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[derive(Deserialize)]
struct PutIn {
    value: serde_json::Value,
}

/// `PUT {value}` → 204.
#[tracing::instrument(level = "debug", skip_all)]
async fn put_secret(
    State(state): State<AppState>,
    who: Principal,
    Path((id, name)): Path<(i64, String)>,
    body: std::result::Result<Json<PutIn>, axum::extract::rejection::JsonRejection>,
) -> Result<Response> {
    let id = authorise(&state, &who, id, &name, false).await?;
    // The rejection text could quote the body; the message here never does.
    let Ok(Json(body)) = body else {
        return Err(Error::bad_request("invalid_request", "Send JSON: {\"value\": \"<the secret>\"}."));
    };
    let value = match body.value {
        serde_json::Value::String(v) if !v.is_empty() && v.len() <= MAX_SECRET_BYTES => v,
        _ => {
            return Err(Error::bad_request(
                "invalid_secret_value",
                format!("value is a string of 1 to {MAX_SECRET_BYTES} bytes."),
            ));
        }
    };
    store(&state, id, name, &value).await?;
    Ok(no_store(StatusCode::NO_CONTENT.into_response()))
}

/// Seals `value` as app `app_id`'s secret `name` (created or replaced; 413 past
/// [`MAX_SECRETS_PER_APP`]). Also what a secure-input card stores (`chats::secure_input`).
pub async fn store(state: &AppState, app_id: i64, name: String, value: &str) -> Result<()> {
    let sealed = state.keys.seal(&context(app_id, &name), value.as_bytes())?;
    state.writer.call(|ack| WriteCommand::AppSecretPut { app_id, name, sealed, max: MAX_SECRETS_PER_APP, ack }).await
}

/// The live app `id` whose secrets the caller may list.
async fn listable(state: &AppState, who: &Principal, id: i64) -> Result<i64> {
    if let Principal::App(app) = who
        && app.id != id
    {
        return Err(Error::forbidden("forbidden", "An app can only touch its own secrets."));
    }
    match db::apps::get(&state.db.read, id).await? {
        Some(app) if app.deleted_at.is_none() && app.bundle_sha.is_some() => Ok(app.id),
        _ => Err(Domain::AppNotFound.into()),
    }
}

/// `GET /api/apps/{id}/secrets` → `{secrets: [{name, updated_at}]}`: names only, never a value.
#[tracing::instrument(level = "debug", skip_all)]
async fn list_secrets(State(state): State<AppState>, who: Principal, Path(id): Path<i64>) -> Result<Response> {
    let id = listable(&state, &who, id).await?;
    let secrets: Vec<serde_json::Value> = db::apps::secret_names(&state.db.read, id)
        .await?
        .into_iter()
        .map(|(name, updated_at)| serde_json::json!({ "name": name, "updated_at": updated_at }))
        .collect();
    Ok(no_store(Json(serde_json::json!({ "secrets": secrets })).into_response()))
}

/// `HEAD` → 204 or 404.
#[tracing::instrument(level = "debug", skip_all)]
async fn head_secret(
    State(state): State<AppState>,
    who: Principal,
    Path((id, name)): Path<(i64, String)>,
) -> Result<Response> {
    let id = authorise(&state, &who, id, &name, false).await?;
    db::apps::secret(&state.db.read, id, &name).await?.ok_or_else(not_found)?;
    Ok(no_store(StatusCode::NO_CONTENT.into_response()))
}

/// `GET` → the value as text (owner only).
#[tracing::instrument(level = "debug", skip_all)]
async fn get_secret(
    State(state): State<AppState>,
    who: Principal,
    Path((id, name)): Path<(i64, String)>,
) -> Result<Response> {
    let id = authorise(&state, &who, id, &name, true).await?;
    let sealed = db::apps::secret(&state.db.read, id, &name).await?.ok_or_else(not_found)?;
    let value = String::from_utf8(state.keys.open(&context(id, &name), &sealed)?)
        .map_err(|_| Error::Internal("a secret is not text".into()))?;
    let mut response = value.into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    Ok(no_store(response))
}

/// `DELETE` → 204 or 404.
#[tracing::instrument(level = "debug", skip_all)]
async fn delete_secret(
    State(state): State<AppState>,
    who: Principal,
    Path((id, name)): Path<(i64, String)>,
) -> Result<Response> {
    let id = authorise(&state, &who, id, &name, false).await?;
    if !state.writer.call(|ack| WriteCommand::AppSecretDelete { app_id: id, name, ack }).await? {
        return Err(not_found());
    }
    Ok(no_store(StatusCode::NO_CONTENT.into_response()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_slashes_dots_or_control_characters_are_refused() {
        assert!(valid_name("OPENAI_API_KEY"));
        assert!(valid_name("token.v2-b"));
        for bad in ["", "a/b", "..", "a..b", ".hidden", "-x", "a\nb", "a\u{0}b", "ä", &"x".repeat(65)] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }
}
