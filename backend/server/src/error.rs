//! The crate-wide error type and its mapping to `{code, message}` JSON responses.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while serving a request or running a command.
///
/// Client errors carry a stable snake_case `code` and a human sentence. Library errors
/// (SQLite, I/O) keep their cause for the logs and show clients only a generic message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request the client can fix or must not repeat.
    #[error("{message}")]
    Client { status: StatusCode, code: &'static str, message: String, retry_after_secs: Option<u64> },
    /// The database refused or failed an operation.
    #[error("database error")]
    Db(#[from] sqlx::Error),
    /// A migration could not be applied.
    #[error("database migration failed")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A filesystem operation failed.
    #[error("i/o error")]
    Io(#[from] std::io::Error),
    /// The single-writer actor is gone or did not answer in time.
    #[error("the database writer is unavailable")]
    WriterUnavailable,
    /// A bug or an impossible state; the message goes to the logs only.
    #[error("internal error: {0}")]
    Internal(String),
}

#[derive(Serialize)]
struct Body<'a> {
    code: &'a str,
    message: &'a str,
}

impl Error {
    fn client(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Error::Client { status, code, message: message.into(), retry_after_secs: None }
    }

    /// 400: the request is malformed or fails validation.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::client(StatusCode::BAD_REQUEST, code, message)
    }

    /// 401: missing or invalid credentials.
    pub fn unauthorized(code: &'static str, message: impl Into<String>) -> Self {
        Self::client(StatusCode::UNAUTHORIZED, code, message)
    }

    /// 403: authenticated, but not allowed.
    pub fn forbidden(code: &'static str, message: impl Into<String>) -> Self {
        Self::client(StatusCode::FORBIDDEN, code, message)
    }

    /// 404: nothing here.
    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::client(StatusCode::NOT_FOUND, code, message)
    }

    /// 409: the request conflicts with the current state.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::client(StatusCode::CONFLICT, code, message)
    }

    /// 410: it existed but is gone for good.
    pub fn gone(code: &'static str, message: impl Into<String>) -> Self {
        Self::client(StatusCode::GONE, code, message)
    }

    /// 412: a precondition (`If-Match`) failed.
    pub fn precondition_failed(code: &'static str, message: impl Into<String>) -> Self {
        Self::client(StatusCode::PRECONDITION_FAILED, code, message)
    }

    /// 413: the body or the stored total is too large.
    pub fn too_large(code: &'static str, message: impl Into<String>) -> Self {
        Self::client(StatusCode::PAYLOAD_TOO_LARGE, code, message)
    }

    /// 422: well-formed, but semantically unusable (e.g. a compile error).
    pub fn unprocessable(code: &'static str, message: impl Into<String>) -> Self {
        Self::client(StatusCode::UNPROCESSABLE_ENTITY, code, message)
    }

    /// 429: slow down; `retry_after_secs` goes into `Retry-After`.
    pub fn too_many(code: &'static str, message: impl Into<String>, retry_after_secs: u64) -> Self {
        Error::Client {
            status: StatusCode::TOO_MANY_REQUESTS,
            code,
            message: message.into(),
            retry_after_secs: Some(retry_after_secs.max(1)),
        }
    }

    /// 502: a server we fetch from failed or could not be reached.
    pub fn bad_gateway(code: &'static str, message: impl Into<String>) -> Self {
        Self::client(StatusCode::BAD_GATEWAY, code, message)
    }

    /// 504: a server we fetch from did not answer in time.
    pub fn gateway_timeout(code: &'static str, message: impl Into<String>) -> Self {
        Self::client(StatusCode::GATEWAY_TIMEOUT, code, message)
    }

    /// 503: temporarily unable to serve.
    pub fn unavailable(code: &'static str, message: impl Into<String>) -> Self {
        Self::client(StatusCode::SERVICE_UNAVAILABLE, code, message)
    }

    /// The HTTP status this error maps to.
    pub fn status(&self) -> StatusCode {
        match self {
            Error::Client { status, .. } => *status,
            Error::WriterUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Error::Db(sqlx::Error::PoolTimedOut) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Client { code, .. } => code,
            Error::WriterUnavailable | Error::Db(sqlx::Error::PoolTimedOut) => "unavailable",
            _ => "internal_error",
        }
    }

    /// True when the database reported a UNIQUE constraint violation.
    pub fn is_unique_violation(&self) -> bool {
        matches!(self, Error::Db(sqlx::Error::Database(e)) if e.is_unique_violation())
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status();
        let message = match &self {
            Error::Client { message, .. } => message.as_str(),
            Error::WriterUnavailable => "The server is busy or restarting; try again shortly.",
            Error::Db(sqlx::Error::PoolTimedOut) => "The server is busy; try again shortly.",
            _ => "Something went wrong on the server; it has been logged.",
        };
        if status.is_server_error() {
            // Log the full cause chain once, here; the client gets only the generic sentence.
            let mut cause = String::new();
            let mut source = std::error::Error::source(&self);
            while let Some(s) = source {
                cause.push_str(": ");
                cause.push_str(&s.to_string());
                source = s.source();
            }
            tracing::error!(code = self.code(), "{self}{cause}");
        }
        let mut response = (status, Json(Body { code: self.code(), message })).into_response();
        if let Error::Client { retry_after_secs: Some(secs), .. } = self
            && let Ok(value) = HeaderValue::from_str(&secs.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn storage_engine_text_never_reaches_the_client() {
        let err = Error::Db(sqlx::Error::Protocol("near \"SELEC\": syntax error in table chats".into()));
        let response = err.into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let bytes = axum::body::to_bytes(response.into_body(), 4096).await.expect("body");
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("internal_error"), "{text}");
        assert!(!text.contains("SELEC") && !text.contains("chats"), "{text}");
    }

    #[tokio::test]
    async fn too_many_sets_retry_after() {
        let response = Error::too_many("login_backoff", "wait", 7).into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "7");
    }
}
