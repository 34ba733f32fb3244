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
/// Domain code (`writer/`, `db/`, the turn) says what went wrong with a [`Domain`] error;
/// only this file maps it to an HTTP status. Routes build `Client` errors for requests they
/// refuse themselves (validation).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request the client can fix or must not repeat.
    #[error("{message}")]
    Client { status: StatusCode, code: &'static str, message: String, retry_after_secs: Option<u64> },
    /// A rule of the domain refused the operation.
    #[error(transparent)]
    Domain(#[from] Domain),
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

/// Refusals of the chat, app and owner domains, each with its one code, sentence and status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Domain {
    #[error("No such chat.")]
    ChatNotFound,
    #[error("This chat has no pinned goal.")]
    GoalNotFound,
    #[error("A deleted chat has this id; recover it instead.")]
    ChatDeleted,
    #[error("This chat was deleted too long ago to recover.")]
    ChatPurged,
    #[error("A turn is already running in this chat.")]
    ChatBusy,
    #[error("This turn has already ended.")]
    RunNotRunning,
    #[error("Answer the open question (or stop the turn) first.")]
    PendingQuestionOpen,
    #[error("That question is no longer open.")]
    QuestionStale,
    /// Regenerate asked for a reply that is not the last one (or that a handoff followed).
    #[error("Only the reply to your last message can be regenerated.")]
    NotRegenerable,
    /// Two messages of one import share a cid.
    #[error("Two messages share the same cid.")]
    DuplicateCid,
    /// A message with this cid is already in the transcript.
    #[error("This message was already sent.")]
    AlreadySent,
    #[error("The owner account already exists.")]
    AlreadyConfigured,
    #[error("No owner account exists yet.")]
    NotConfigured,
    #[error("No such app.")]
    AppNotFound,
    #[error("An app with the id {0:?} already exists.")]
    AppIdTaken(String),
    #[error("There is no file at this path.")]
    FileNotFound,
    #[error("A stored file can be at most 50 MiB.")]
    FileTooLarge,
    #[error("This path is a folder; use the folder route for folders.")]
    IsADirectory,
    #[error("This app's storage quota is full.")]
    QuotaExceeded,
    #[error("The uploads quota is full; delete old chats or files, or raise MOBIUS_UPLOAD_QUOTA_MB.")]
    UploadQuotaExceeded,
    /// A chat file past the per-file limit: which file, and the limit in MiB.
    #[error("{0} is larger than {1} MiB, the most a file may be.")]
    UploadTooLarge(String, u64),
    /// A file whose bytes are of a kind a chat does not take: why.
    #[error("{0}")]
    UnsupportedType(&'static str),
    /// An image that could not be decoded: which, and what the decoder said.
    #[error("{0}: {1}")]
    UnreadableImage(String, String),
    /// A file name a client may not send: why.
    #[error("{0}")]
    InvalidFileName(String),
    #[error("This chat already has too many files of that name.")]
    FileNameTaken,
    /// An `If-Match` / `If-None-Match` precondition failed: which one, and what to do.
    #[error("{0}")]
    PreconditionFailed(&'static str),
    #[error("This chat grant is not valid (anymore); ask the app for a new one.")]
    InvalidGrant,
    #[error("An app keeps at most {0} secrets; delete one first.")]
    TooManySecrets(i64),
    #[error("At most {0} connectors; remove one first.")]
    TooManyConnectors(i64),
    #[error("A connector named {0:?} exists already; pick another name.")]
    ConnectorNameTaken(String),
    #[error("At most {0} devices receive notifications; remove one in Settings.")]
    TooManyDevices(i64),
    /// An app tried to renew or remove a push endpoint it did not subscribe.
    #[error("This push endpoint was not subscribed by this app.")]
    PushEndpointNotYours,
    /// The answers do not fit the card (a choice for an approval, a decision for questions).
    #[error("{0}")]
    InvalidAnswers(&'static str),
    #[error("The agent did not take the answer in time; try again.")]
    TurnBusy,
    /// `Some(name)`: that provider; `None`: none at all.
    #[error("{}", match .0 {
        Some(name) => format!("{name} is not connected. Connect it in Settings → Providers."),
        None => "No agent is connected yet. Connect Claude or Codex in Settings → Providers.".to_owned(),
    })]
    ProviderNotConnected(Option<&'static str>),
    #[error("No such schedule.")]
    ScheduleNotFound,
    #[error("At most {0} schedules; remove some first.")]
    TooManySchedules(i64),
    /// The agent's schedules: at most so many from one chat, and so many in all.
    #[error(
        "The agent may keep at most {0} schedules from one chat ({1} in all); remove one first \
         (mobius schedule remove), or ask the owner to add it in Settings."
    )]
    TooManyAgentSchedules(i64, i64),
    /// The theme file broke a rule of `theme/css.rs`: where and what.
    #[error("theme/theme.css was not applied ({0}); the last good theme stays.")]
    ThemeInvalid(String),
    #[error("No such theme version (only the last ones are kept).")]
    ThemeVersionNotFound,
    /// The shell's source was refused before building (a link, a special file, too large).
    #[error("The shell was not rebuilt: {0}. The current shell stays.")]
    ShellSourceRefused(String),
    /// The shell's build failed: its output, bounded.
    #[error("The shell's build failed; the current shell stays. Its output:\n{0}")]
    ShellBuildFailed(String),
    /// A rebuild is already running.
    #[error("A shell rebuild is already running; wait for it to end, then try again.")]
    ShellBuildRunning,
    /// No such shell build (only the last ones are kept).
    #[error("No such shell version (only the last ones are kept).")]
    ShellBuildNotFound,
    /// This server has no shell source to edit.
    #[error("The shell is not editable on this server (no MOBIUS_SHELL_SOURCE).")]
    ShellNotEditable,
    /// A platform update's conflict markers are still in these files of the shell's source.
    #[error(
        "Conflict markers from the platform update are still in: {0}. Keep both sides' intent, remove \
         every marker, then rebuild; the current shell stays."
    )]
    ShellConflictUnresolved(String),
    #[error("At most {0} published pages; unpublish one first.")]
    TooManySites(i64),
    /// An app's data past what a published copy may hold: the limit in MiB and in files.
    #[error(
        "This app's data is larger than a published copy may be ({0} MiB, {1} files); publish it with live data instead."
    )]
    SnapshotTooLarge(u64, u64),
    #[error("This app is not published.")]
    SiteNotFound,
}

impl Domain {
    /// The HTTP status of this refusal.
    pub fn status(&self) -> StatusCode {
        match self {
            Domain::ChatNotFound
            | Domain::GoalNotFound
            | Domain::AppNotFound
            | Domain::FileNotFound
            | Domain::ScheduleNotFound
            | Domain::ThemeVersionNotFound
            | Domain::ShellBuildNotFound
            | Domain::SiteNotFound => StatusCode::NOT_FOUND,
            Domain::FileTooLarge
            | Domain::QuotaExceeded
            | Domain::UploadQuotaExceeded
            | Domain::UploadTooLarge(..)
            | Domain::TooManySecrets(_)
            | Domain::TooManyConnectors(_)
            | Domain::TooManyDevices(_)
            | Domain::TooManySchedules(_)
            | Domain::TooManyAgentSchedules(..)
            | Domain::TooManySites(_)
            | Domain::SnapshotTooLarge(..) => StatusCode::PAYLOAD_TOO_LARGE,
            Domain::PushEndpointNotYours => StatusCode::FORBIDDEN,
            Domain::UnsupportedType(_) | Domain::UnreadableImage(..) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Domain::InvalidFileName(_) => StatusCode::BAD_REQUEST,
            Domain::FileNameTaken => StatusCode::CONFLICT,
            Domain::IsADirectory => StatusCode::BAD_REQUEST,
            Domain::PreconditionFailed(_) => StatusCode::PRECONDITION_FAILED,
            Domain::ChatPurged | Domain::QuestionStale => StatusCode::GONE,
            Domain::DuplicateCid | Domain::InvalidAnswers(_) => StatusCode::BAD_REQUEST,
            Domain::TurnBusy => StatusCode::SERVICE_UNAVAILABLE,
            Domain::InvalidGrant => StatusCode::UNAUTHORIZED,
            Domain::ThemeInvalid(_) | Domain::ShellSourceRefused(_) | Domain::ShellBuildFailed(_) => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            Domain::ChatDeleted
            | Domain::ChatBusy
            | Domain::RunNotRunning
            | Domain::PendingQuestionOpen
            | Domain::NotRegenerable
            | Domain::AlreadySent
            | Domain::AlreadyConfigured
            | Domain::NotConfigured
            | Domain::AppIdTaken(_)
            | Domain::ConnectorNameTaken(_)
            | Domain::ProviderNotConnected(_)
            | Domain::ShellBuildRunning
            | Domain::ShellNotEditable
            | Domain::ShellConflictUnresolved(_) => StatusCode::CONFLICT,
        }
    }

    /// The stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Domain::ChatNotFound => "chat_not_found",
            Domain::GoalNotFound => "goal_not_found",
            Domain::ChatDeleted => "chat_deleted",
            Domain::ChatPurged => "chat_purged",
            Domain::ChatBusy => "chat_busy",
            Domain::RunNotRunning => "run_not_running",
            Domain::PendingQuestionOpen => "pending_question_open",
            Domain::QuestionStale => "question_stale",
            Domain::NotRegenerable => "not_regenerable",
            Domain::DuplicateCid | Domain::AlreadySent => "duplicate_cid",
            Domain::AlreadyConfigured => "already_configured",
            Domain::NotConfigured => "not_configured",
            Domain::AppNotFound => "app_not_found",
            Domain::AppIdTaken(_) => "app_id_taken",
            Domain::FileNotFound => "not_found",
            Domain::FileTooLarge => "file_too_large",
            Domain::IsADirectory => "is_a_directory",
            Domain::QuotaExceeded => "quota_exceeded",
            Domain::UploadQuotaExceeded => "upload_quota_exceeded",
            Domain::UploadTooLarge(..) => "file_too_large",
            Domain::UnsupportedType(_) => "unsupported_type",
            Domain::UnreadableImage(..) => "unreadable_image",
            Domain::InvalidFileName(_) => "invalid_file_name",
            Domain::FileNameTaken => "file_name_taken",
            Domain::PreconditionFailed(_) => "precondition_failed",
            Domain::InvalidAnswers(_) => "invalid_answers",
            Domain::TurnBusy => "turn_busy",
            Domain::InvalidGrant => "invalid_grant",
            Domain::TooManySecrets(_) => "too_many_secrets",
            Domain::TooManyDevices(_) => "too_many_devices",
            Domain::TooManyConnectors(_) => "too_many_connectors",
            Domain::ConnectorNameTaken(_) => "connector_name_taken",
            Domain::PushEndpointNotYours => "forbidden",
            Domain::ProviderNotConnected(_) => "provider_not_connected",
            Domain::ScheduleNotFound => "schedule_not_found",
            Domain::TooManySchedules(_) => "too_many_schedules",
            Domain::TooManyAgentSchedules(..) => "too_many_agent_schedules",
            Domain::ThemeInvalid(_) => "theme_invalid",
            Domain::ThemeVersionNotFound => "theme_version_not_found",
            Domain::ShellSourceRefused(_) => "shell_source_refused",
            Domain::ShellBuildFailed(_) => "shell_build_failed",
            Domain::ShellBuildRunning => "shell_build_running",
            Domain::ShellBuildNotFound => "shell_build_not_found",
            Domain::ShellNotEditable => "shell_not_editable",
            Domain::ShellConflictUnresolved(_) => "shell_conflict_unresolved",
            Domain::TooManySites(_) => "too_many_sites",
            Domain::SnapshotTooLarge(..) => "snapshot_too_large",
            Domain::SiteNotFound => "site_not_found",
        }
    }
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

    /// The sentence a client is shown, if this error is one the client may read.
    pub fn client_message(&self) -> Option<String> {
        match self {
            Error::Client { message, .. } => Some(message.clone()),
            Error::Domain(d) => Some(d.to_string()),
            _ => None,
        }
    }

    /// The HTTP status this error maps to.
    pub fn status(&self) -> StatusCode {
        match self {
            Error::Client { status, .. } => *status,
            Error::Domain(d) => d.status(),
            Error::WriterUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Error::Db(sqlx::Error::PoolTimedOut) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Client { code, .. } => code,
            Error::Domain(d) => d.code(),
            Error::WriterUnavailable | Error::Db(sqlx::Error::PoolTimedOut) => "unavailable",
            _ => "internal_error",
        }
    }

    /// True when the database reported a UNIQUE constraint violation.
    pub fn is_unique_violation(&self) -> bool {
        matches!(self, Error::Db(sqlx::Error::Database(e)) if e.is_unique_violation())
    }

    /// True when the disk (or the database's page limit) is full: SQLite's `SQLITE_FULL`, or
    /// `ENOSPC` from a file write.
    pub fn is_disk_full(&self) -> bool {
        const SQLITE_FULL: &str = "13";
        match self {
            Error::Db(sqlx::Error::Database(e)) => e.code().is_some_and(|c| c == SQLITE_FULL),
            Error::Db(sqlx::Error::Io(e)) | Error::Io(e) => e.raw_os_error() == Some(libc_enospc()),
            _ => false,
        }
    }
}

/// `ENOSPC` on Linux.
const fn libc_enospc() -> i32 {
    28
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status();
        let domain_message = match &self {
            Error::Domain(d) => d.to_string(),
            _ => String::new(),
        };
        let message = match &self {
            Error::Client { message, .. } => message.as_str(),
            Error::Domain(_) => domain_message.as_str(),
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
    async fn domain_refusals_map_to_their_status_code_and_sentence() {
        let response = Error::from(Domain::QuestionStale).into_response();
        assert_eq!(response.status(), StatusCode::GONE);
        let bytes = axum::body::to_bytes(response.into_body(), 4096).await.expect("body");
        let body: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(body["code"], "question_stale");
        assert_eq!(body["message"], "That question is no longer open.");
        assert_eq!(Error::from(Domain::ProviderNotConnected(Some("Codex"))).status(), StatusCode::CONFLICT);
    }

    #[tokio::test]
    async fn too_many_sets_retry_after() {
        let response = Error::too_many("login_backoff", "wait", 7).into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "7");
    }
}
