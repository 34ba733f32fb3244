//! A chat's pinned goal (`/goal`), applied inside the writer's transaction: set when a goal
//! turn starts, moved on by the agent's plan updates, unpinned when every step is done or the
//! owner dismisses it. Each change is journalled (`goal_changed`) so every device follows.

use sqlx::SqliteConnection;

use super::batch::Batch;
use crate::db::{self, now_ms};
use crate::error::{Domain, Result};
use crate::protocol::{ChatEvent, ChatId, GoalPin, PlanCard};

/// Longest goal kept, in characters (the pin shows one line of it; the turn has it all).
pub const MAX_GOAL_CHARS: usize = 2_000;

/// Pins a new goal on the chat (replacing any it had), with no plan yet.
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat_id))]
pub(super) async fn set(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &ChatId,
    objective: &str,
) -> Result<()> {
    match db::chats::get(&mut *conn, chat_id).await? {
        Some(chat) if chat.deleted_at.is_none() => {}
        _ => return Err(Domain::ChatNotFound.into()),
    }
    let now = now_ms();
    let goal = GoalPin { objective: objective.chars().take(MAX_GOAL_CHARS).collect(), plan: None, started_at: now };
    db::goals::put(conn, chat_id, &goal, now).await?;
    changed(conn, batch, chat_id, Some(goal)).await.map(|_| ())
}

/// The agent's plan moved: the chat's goal (if one is pinned) takes it, and is unpinned once
/// every step is done. Answers the seq of the `goal_changed` event, when there was a goal.
pub(super) async fn follow_plan(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &ChatId,
    plan: &PlanCard,
) -> Result<Option<i64>> {
    let Some(mut goal) = db::goals::get(&mut *conn, chat_id).await? else { return Ok(None) };
    goal.plan = Some(plan.clone());
    if goal.done() {
        db::goals::remove(conn, chat_id).await?;
        return changed(conn, batch, chat_id, None).await.map(Some);
    }
    db::goals::put(conn, chat_id, &goal, now_ms()).await?;
    changed(conn, batch, chat_id, Some(goal)).await.map(Some)
}

/// The owner dismisses the chat's goal (`goal_not_found` when none is pinned).
#[tracing::instrument(level = "debug", skip_all, fields(chat.id = %chat_id))]
pub(super) async fn dismiss(conn: &mut SqliteConnection, batch: &mut Batch, chat_id: &ChatId) -> Result<()> {
    match db::chats::get(&mut *conn, chat_id).await? {
        Some(chat) if chat.deleted_at.is_none() => {}
        _ => return Err(Domain::ChatNotFound.into()),
    }
    if !db::goals::remove(conn, chat_id).await? {
        return Err(Domain::GoalNotFound.into());
    }
    changed(conn, batch, chat_id, None).await.map(|_| ())
}

async fn changed(
    conn: &mut SqliteConnection,
    batch: &mut Batch,
    chat_id: &ChatId,
    goal: Option<GoalPin>,
) -> Result<i64> {
    batch.emit(conn, chat_id, ChatEvent::GoalChanged { goal }).await
}
