//! Who may use a chat route: the owner (any chat), an app (only chats it created, through
//! `/api/app-chats`), or an embedded chat's session (only its one chat, only the operations
//! it was granted, only with its `X-Mobius-Embed-Instance` header, and only while its grant
//! row is live).

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::auth::{Claims, Principal, Scope, bearer, claims_of, principal_of};
use crate::db::{self, apps::AppRow, now_ms};
use crate::error::{Domain, Error, Result};
use crate::state::AppState;

/// The header an embedded chat sends its instance id in.
pub const EMBED_INSTANCE_HEADER: &str = "x-mobius-embed-instance";

/// Operations a chat-embed session is granted.
pub const EMBED_OPERATIONS: &[&str] = &[
    "chat:read",
    "chat:send",
    "chat:stream",
    "chat:stop",
    "chat:settings",
    "chat:uploads",
    "chat:media",
    "models:read",
];

/// One operation on a chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    Send,
    Stream,
    Stop,
    Settings,
    /// Attach files.
    Uploads,
    /// Load the chat's files and images (and mint media tokens for them).
    Media,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Read => "chat:read",
            Op::Send => "chat:send",
            Op::Stream => "chat:stream",
            Op::Stop => "chat:stop",
            Op::Settings => "chat:settings",
            Op::Uploads => "chat:uploads",
            Op::Media => "chat:media",
        }
    }
}

/// A live chat-embed session.
#[derive(Debug, Clone)]
pub struct EmbedSession {
    pub app_id: i64,
    /// The grant row that became this session.
    pub session: String,
    pub chat_id: String,
    pub ops: Vec<String>,
}

/// The caller of a chat route.
#[derive(Debug, Clone)]
pub enum ChatCaller {
    Owner(Box<Claims>),
    App(Arc<AppRow>),
    Embed(EmbedSession),
}

impl ChatCaller {
    /// True for the owner (or an agent run on the owner's behalf).
    pub fn is_owner(&self) -> bool {
        matches!(self, ChatCaller::Owner(_))
    }

    /// Checks this caller may list the providers' models: the owner, an app, or an embedded
    /// chat granted `models:read`.
    pub fn allow_models(&self) -> Result<()> {
        match self {
            ChatCaller::Embed(session) if !session.ops.iter().any(|o| o == "models:read") => {
                Err(Error::forbidden("forbidden", "This embedded chat may not list models."))
            }
            _ => Ok(()),
        }
    }

    /// Checks this caller may do `op` on `chat_id` (404 when there is no such chat for them).
    pub async fn allow(&self, state: &AppState, chat_id: &str, op: Op) -> Result<()> {
        match self {
            ChatCaller::Owner(_) => Ok(()),
            ChatCaller::App(app) => match db::embeds::chat_app(&state.db.read, chat_id).await? {
                Some(Some(owner)) if owner == app.id => Ok(()),
                Some(_) => Err(Error::forbidden("forbidden", "An app can only use the chats it created.")),
                None => Err(Domain::ChatNotFound.into()),
            },
            ChatCaller::Embed(session) if session.chat_id == chat_id => {
                if session.ops.iter().any(|o| o == op.name()) {
                    Ok(())
                } else {
                    Err(Error::forbidden("forbidden", "This embedded chat may not do that."))
                }
            }
            ChatCaller::Embed(_) => Err(Error::forbidden("forbidden", "This embedded chat belongs to another chat.")),
        }
    }
}

/// Verifies a chat-embed session token against its header and its grant row.
pub async fn verify_embed(state: &AppState, claims: &Claims, instance_header: Option<&str>) -> Result<EmbedSession> {
    let revoked = || Error::unauthorized("token_revoked", "This embedded chat session has ended; it will reconnect.");
    let Some((username, epoch)) = state.owner.get() else {
        return Err(Error::unauthorized("invalid_token", "No owner account exists."));
    };
    if claims.sub != username || claims.epoch != epoch {
        return Err(revoked());
    }
    let (Some(instance), Some(session), Some(app_id), Some(nonce), Some(chat_id)) = (
        claims.embed_instance.as_deref(),
        claims.embed_session.as_deref(),
        claims.app_id,
        claims.app_nonce.as_deref(),
        claims.chat_id.as_deref(),
    ) else {
        return Err(Error::unauthorized("malformed_token", "The embedded chat token is incomplete."));
    };
    if instance_header != Some(instance) {
        return Err(Error::unauthorized(
            "embed_instance_mismatch",
            "This request does not carry the embedded chat's instance header.",
        ));
    }
    let grant = db::embeds::grant(&state.db.read, session).await?.ok_or_else(revoked)?;
    let live = grant.revoked_at.is_none()
        && grant.consumed_at.is_some()
        && grant.session_expires_at.is_some_and(|t| t > now_ms())
        && grant.app_id == app_id
        && grant.chat_id == chat_id
        && grant.instance_id == instance;
    if !live {
        return Err(revoked());
    }
    match state.app_rows.get(&state.db.read, state.hub.data_version(), app_id).await? {
        Some(app) if app.deleted_at.is_none() && app.token_nonce == nonce => {}
        _ => return Err(revoked()),
    }
    Ok(EmbedSession {
        app_id,
        session: session.to_owned(),
        chat_id: chat_id.to_owned(),
        ops: claims.embed_ops.clone().unwrap_or_default(),
    })
}

/// True while `session`'s grant row is still live (not revoked, not expired): a long-lived
/// stream re-checks this as it runs.
pub async fn session_live(state: &AppState, session: &EmbedSession) -> Result<bool> {
    Ok(db::embeds::grant(&state.db.read, &session.session)
        .await?
        .is_some_and(|g| g.revoked_at.is_none() && g.session_expires_at.is_some_and(|t| t > now_ms())))
}

impl FromRequestParts<AppState> for ChatCaller {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let token = bearer(parts)?;
        let claims = claims_of(parts, state, token)?;
        if claims.scope == Scope::ChatEmbed {
            let header = parts.headers.get(EMBED_INSTANCE_HEADER).and_then(|v| v.to_str().ok());
            return verify_embed(state, &claims, header).await.map(ChatCaller::Embed);
        }
        Ok(match principal_of(state, claims).await? {
            Principal::Owner(claims) => ChatCaller::Owner(claims),
            Principal::App(app) => ChatCaller::App(app),
        })
    }
}

#[cfg(test)]
mod model_tests {
    use super::*;

    #[test]
    fn an_embedded_chat_lists_models_only_when_granted_models_read() {
        let embed = |ops: &[&str]| {
            ChatCaller::Embed(EmbedSession {
                app_id: 1,
                session: "s".into(),
                chat_id: "c".into(),
                ops: ops.iter().map(|o| (*o).to_owned()).collect(),
            })
        };
        assert!(embed(&["chat:read", "models:read"]).allow_models().is_ok());
        assert_eq!(embed(&["chat:read"]).allow_models().expect_err("no grant").code(), "forbidden");
    }
}
