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
    let before = goal.plan.replace(plan.clone());
    if finishes(before.as_ref(), &goal) {
        db::goals::remove(conn, chat_id).await?;
        return changed(conn, batch, chat_id, None).await.map(Some);
    }
    db::goals::put(conn, chat_id, &goal, now_ms()).await?;
    changed(conn, batch, chat_id, Some(goal)).await.map(Some)
}

/// Whether this plan update finishes the goal: every step is done now, and the pin had seen the
/// plan with a step still open (on its card or left out of it). A plan that comes in already
/// finished — the finished steps of earlier work in Claude Code's task list, or that list while
/// the agent clears it one task at a time for the new goal — does not end a goal it never
/// tracked.
fn finishes(before: Option<&PlanCard>, goal: &GoalPin) -> bool {
    before.is_some_and(PlanCard::is_open) && goal.done()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{PlanCounts, PlanStatus, PlanStep};

    fn plan(statuses: &[PlanStatus]) -> PlanCard {
        PlanCard {
            steps: statuses.iter().map(|&status| PlanStep { text: "step".into(), status }).collect(),
            ..PlanCard::default()
        }
    }

    #[test]
    fn a_goal_finishes_when_a_plan_it_saw_open_is_done() {
        use PlanStatus::*;
        let goal = |p: PlanCard| GoalPin { objective: "ship".into(), plan: Some(p), started_at: 0 };
        let done = goal(plan(&[Completed, Completed]));
        assert!(finishes(Some(&plan(&[Completed, InProgress])), &done));
        assert!(!finishes(None, &done), "a new goal's first plan, already finished (earlier work)");
        assert!(!finishes(Some(&plan(&[Completed, Completed, Completed])), &done), "finished tasks being cleared");
        assert!(!finishes(Some(&plan(&[Completed])), &goal(plan(&[]))), "an empty plan finishes nothing");
        assert!(!finishes(Some(&plan(&[Pending])), &goal(plan(&[Completed, Pending]))));
    }

    #[test]
    fn a_goal_is_not_done_while_a_step_left_off_its_card_is_open() {
        use PlanStatus::*;
        let goal = |p: PlanCard| GoalPin { objective: "ship".into(), plan: Some(p), started_at: 0 };
        let shown_done = |omitted: PlanCounts| PlanCard { omitted, ..plan(&[Completed; 50]) };
        let open = shown_done(PlanCounts { pending: 9, in_progress: 1, completed: 0 });
        assert!(!goal(open.clone()).done(), "steps 51-60 are still to do");
        assert!(!finishes(Some(&plan(&[Completed, InProgress])), &goal(open.clone())));
        // Once the left-out steps are done too, the goal finishes: the pin saw them open.
        let done = goal(shown_done(PlanCounts { completed: 10, ..PlanCounts::default() }));
        assert!(done.done());
        assert!(finishes(Some(&open), &done));
    }
}
