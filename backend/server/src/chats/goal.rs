//! `DELETE /api/chats/{id}/goal`: the owner dismisses the goal pinned at the top of a chat
//! (`/goal`; the pin itself is set and moved on by the turn, `writer/goals.rs`). Whoever may
//! change the chat's settings may dismiss it: the owner, the app that created the chat, an
//! embedded chat granted `chat:settings` for that chat; an agent's token is refused by the gate.

use axum::extract::{Path, State};
use axum::response::Response;

use super::access::{ChatCaller, Op};
use crate::error::{Domain, Result};
use crate::protocol::ChatId;
use crate::state::AppState;
use crate::writer::WriteCommand;

/// Unpins the chat's goal: 204, or `goal_not_found` when none is pinned.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn dismiss_goal(State(state): State<AppState>, who: ChatCaller, Path(id): Path<String>) -> Result<Response> {
    let chat_id = ChatId::parse(&id).ok_or(Domain::ChatNotFound)?;
    who.allow(&state, &chat_id, Op::Settings).await?;
    state.writer.call(|ack| WriteCommand::DismissGoal { chat_id, ack }).await?;
    Ok(crate::api::no_content())
}
