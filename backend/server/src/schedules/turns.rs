//! Scheduled agent turns: the prompt goes into its chat (or a new chat) through the normal turn
//! path (`agent::turn::start_or_queue`, under the chat's lock like the owner's sends), so it is
//! journaled, streamed, stoppable and visible in the chat. Its message's cid
//! (`schedule-<schedule>-<run>`) ties the run's end (`signal.rs`) back to the schedule run.

use std::sync::Arc;

use super::context::{Claim, Ctx, lock};
use crate::agent::schedule_ends::{SCHEDULED_CID_PREFIX, TurnEnded};
use crate::db::schedules::{RunEnd, ScheduleRow};
use crate::protocol::{ChatId, Cid, RunStatus, SendResult, UserInput};
use crate::writer::{NewChat, ScheduleWrite, WriteCommand};

/// Longest chat title a scheduled turn gives a new chat.
const MAX_TITLE_CHARS: usize = 80;

/// Sends `schedule`'s prompt as run `run_id`. The run stays `running` until its turn ends.
pub async fn start(ctx: Arc<Ctx>, schedule: ScheduleRow, run_id: i64, claim: Claim) {
    claim.keep(run_id);
    if let Err(why) = send(&ctx, &schedule, run_id).await {
        lock(&ctx.turns).remove(&schedule.id);
        let end =
            RunEnd { status: "failed".into(), reason: Some(why), ended_at: ctx.clock.now_ms(), ..RunEnd::default() };
        ctx.finish(run_id, end, Some(true), false).await;
    }
}

async fn send(ctx: &Ctx, schedule: &ScheduleRow, run_id: i64) -> Result<(), String> {
    let agents = &ctx.agents;
    let prompt = schedule.prompt.clone().filter(|p| !p.trim().is_empty()).ok_or("This schedule has no prompt.")?;
    let chat_id = match &schedule.chat_id {
        Some(id) => ChatId::from(id.clone()),
        None => {
            let id = ChatId::random();
            let title: String = schedule.name.chars().take(MAX_TITLE_CHARS).collect();
            let chat = NewChat { id: id.clone(), title: Some(title), messages: Vec::new(), app: None };
            agents.writer.call(|ack| WriteCommand::CreateChat { chat, ack }).await.map_err(|e| describe(&e))?;
            id
        }
    };
    let cid = format!("{SCHEDULED_CID_PREFIX}{}-{run_id}", schedule.id);
    if let Some(o) = lock(&ctx.turns).get_mut(&schedule.id) {
        o.cid = Some(cid.clone());
        o.chat_id = Some(chat_id.to_string());
    }
    let message = UserInput::text(Cid::from(cid), prompt);
    let sent = {
        let _lock = ctx.chat_locks.lock(&chat_id).await;
        crate::agent::turn::start_or_queue(agents, &chat_id, message, None).await.map_err(|e| describe(&e))?
    };
    let turn = match sent {
        SendResult::Started { run_id, .. } => Some(run_id.to_string()),
        _ => None,
    };
    let link = ScheduleWrite::Link { run_id, chat_id: chat_id.to_string(), turn };
    agents.writer.call(|ack| WriteCommand::Schedule { op: link, ack }).await.map_err(|e| describe(&e))?;
    Ok(())
}

fn describe(e: &crate::error::Error) -> String {
    e.client_message().unwrap_or_else(|| e.to_string())
}

/// The turn answering `cids` waits for a free agent, or no longer does: their schedule runs
/// say so.
pub async fn waiting(ctx: &Ctx, cids: &[crate::protocol::Cid], waiting: bool) {
    let runs: Vec<i64> = {
        let turns = lock(&ctx.turns);
        turns
            .values()
            .filter(|o| o.cid.as_deref().is_some_and(|c| cids.iter().any(|x| x.as_str() == c)))
            .map(|o| o.run_id)
            .collect()
    };
    for run_id in runs {
        ctx.waiting(run_id, waiting).await;
    }
}

/// A run that answered (or dropped) scheduled messages ended: closes their schedule runs.
pub async fn ended(ctx: &Ctx, end: TurnEnded) {
    let settle = |cid: &str| {
        let mut turns = lock(&ctx.turns);
        let schedule = turns.iter().find(|(_, o)| o.cid.as_deref() == Some(cid)).map(|(id, _)| *id)?;
        turns.remove(&schedule)
    };
    for cid in &end.answered {
        let Some(outstanding) = settle(cid) else { continue };
        let (status, failed) = match end.status {
            RunStatus::Completed => ("succeeded", Some(false)),
            RunStatus::Failed => ("failed", Some(true)),
            RunStatus::Stopped => ("cancelled", None),
            RunStatus::Interrupted => ("interrupted", None),
        };
        let reason = match end.status {
            RunStatus::Stopped => Some("Stopped by the owner.".to_owned()),
            _ => end.error.clone(),
        };
        let record = RunEnd {
            status: status.into(),
            reason,
            output_bytes: i64::try_from(end.reply.len()).unwrap_or(0),
            output: Some(end.reply.clone()),
            ended_at: ctx.clock.now_ms(),
            ..RunEnd::default()
        };
        if let Some(chat) = &outstanding.chat_id {
            let link = ScheduleWrite::Link {
                run_id: outstanding.run_id,
                chat_id: chat.clone(),
                turn: Some(end.run_id.to_string()),
            };
            let _ = ctx.agents.writer.call(|ack| WriteCommand::Schedule { op: link, ack }).await;
        }
        // A failed turn already told the owner (turn_failed).
        ctx.finish(outstanding.run_id, record, failed, true).await;
    }
    for cid in &end.cleared {
        let Some(outstanding) = settle(cid) else { continue };
        let record = RunEnd {
            status: "cancelled".into(),
            reason: Some("Taken out of the queue when the turn before it was stopped.".into()),
            ended_at: ctx.clock.now_ms(),
            ..RunEnd::default()
        };
        ctx.finish(outstanding.run_id, record, None, true).await;
    }
}
