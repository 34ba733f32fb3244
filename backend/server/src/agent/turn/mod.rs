//! One chat's turns: start the provider, fold its events into the live message and the
//! journal (through the writer), answer questions and approvals, stop, and run queued
//! follow-ups until the queue is empty.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sqlx::SqlitePool;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tracing::{Instrument, info, info_span, warn};

mod launch;
pub(crate) use launch::compose_for;
mod media;

use super::fold::{ChatFold, Folded};
use super::handle::{COMMAND_QUEUE, TurnCommand, TurnHandle};
use super::registry::Turns;
use super::{AgentEvent, ApprovalPolicy, Ask, Control, Finish, FinishStatus, ProviderKind, ProviderTurn, Reply};
use crate::auth::jwt::Keys;
use crate::auth::owner::OwnerCache;
use crate::db;
use crate::error::{Domain, Result};
use crate::protocol::{
    Answers, Card, ChatEvent, ChatId, Choice, Decision, LiveMessage, Message, QuestionCard, QuestionId,
    RegenerateResult, RunId, RunStatus, SendResult, ToolStatus, UserInput, Waiting,
};
use crate::providers::Providers;
use crate::push::Push;
use crate::writer::{ChatPatch, FinishRun, RegenerateOutcome, SendOutcome, Started, WriteCommand, WriterHandle};

/// How long a stopped CLI gets to wind down before its process group is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(2);
/// Minimum spacing of live snapshots sent by a turn (the writer coalesces further).
const SNAPSHOT_EVERY: Duration = Duration::from_millis(900);
/// Agent-run tokens live at most this long (and die earlier when the run ends).
const AGENT_TOKEN_TTL_SECS: i64 = 26 * 3600;
/// The error card of a turn ended because the disk is full.
const DISK_FULL: &str = "The disk is full, so the turn was stopped (what was saved before is kept). \
                         Free some space, then send a message to continue.";
/// While the disk is full, how often a stopped turn tries again to record its end.
const DISK_FULL_RETRY: Duration = Duration::from_secs(5);
/// And for how long at most (a restart closes the run otherwise).
const DISK_FULL_RETRIES: u32 = 720;
/// Most provider events folded into one writer command.
const MAX_EVENTS_PER_EMIT: usize = 64;

/// What turns use from the rest of the server, handed over once at start-up.
pub struct Agents {
    pub writer: WriterHandle,
    pub read: SqlitePool,
    pub providers: Arc<Providers>,
    pub keys: Keys,
    pub owner: Arc<OwnerCache>,
    /// Tells the owner when a turn ends or asks (off the turn's path).
    pub push: Arc<Push>,
    /// The agent's constitution and skills.
    pub skill_dir: PathBuf,
    /// The agent's working directory (and where its process groups are recorded).
    pub data_dir: PathBuf,
    /// The running turn of each chat.
    pub turns: Turns,
    /// Tells the note task when a chat's turns start and settle (`recall::notes`).
    pub notes: crate::recall::notes::NoteSignals,
    /// The skills index (the agent's own skills go into new prompts; reads mark them used).
    pub skills: Arc<crate::skills::Skills>,
    /// Tells the scheduler when a run that answered a scheduled message ends.
    pub schedule_ends: crate::agent::schedule_ends::TurnEnds,
    /// What the agent's processes may touch.
    pub sandbox: super::sandbox::Sandbox,
    /// How long a turn may run, and stay silent.
    pub limits: TurnLimits,
    /// Where text past the inline caps goes (`DATA_DIR/agent-output`).
    pub overflow_dir: PathBuf,
    /// Chat files: what a message attaches, where the agent's images go.
    pub uploads: Arc<crate::uploads::Uploads>,
    /// CLI processes kept between a chat's turns.
    pub warm: Arc<super::warm::WarmPool>,
    /// Wakes the task that continues parked chats.
    pub resumer: super::park::Resumer,
    /// How many agents (turns and app jobs) run at once.
    pub slots: Arc<super::slots::Slots>,
}

/// The ceilings of one turn (`MOBIUS_AGENT_TURN_MAX_SECS`, `MOBIUS_AGENT_SILENCE_MAX_SECS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TurnLimits {
    /// Wall-clock time from start to end.
    pub max_duration: Duration,
    /// Time without any event from the CLI (not counted while a card waits for the owner).
    pub max_silence: Duration,
}

/// A run that is about to start (decided by a send or a queue promotion).
#[derive(Debug, Clone)]
pub struct TurnStart {
    pub chat_id: ChatId,
    pub started: Started,
}

/// The provider a send runs on: the chat's (stored at its first send), else the default;
/// 409 when it is not connected. This is the only place a provider is chosen.
pub async fn provider_for(agents: &Agents, chat_id: &ChatId) -> Result<ProviderKind> {
    let chat = match db::chats::get(&agents.read, chat_id).await? {
        Some(c) if c.deleted_at.is_none() => c,
        _ => return Err(Domain::ChatNotFound.into()),
    };
    let kind = match chat.provider {
        Some(kind) => kind,
        None => agents.providers.default_provider(&agents.read).await?.ok_or(Domain::ProviderNotConnected(None))?,
    };
    if !agents.providers.status(kind).connected {
        return Err(Domain::ProviderNotConnected(Some(kind.name())).into());
    }
    Ok(kind)
}

/// The turn path of every message: decides the provider, sends `WriteCommand::Send` (which
/// starts a run when the chat is idle, else queues) and spawns the turn. The caller holds the
/// chat's lock (the routes' per-chat locks): the owner's sends and the scheduler's go through here.
pub async fn start_or_queue(
    agents: &Arc<Agents>,
    chat_id: &ChatId,
    message: UserInput,
    answering: Option<QuestionId>,
) -> Result<SendResult> {
    let provider = provider_for(agents, chat_id).await?;
    let send = crate::writer::Send { chat_id: chat_id.clone(), message, run_id: RunId::random(), provider, answering };
    let outcome = agents.writer.call(|ack| WriteCommand::Send { send, ack }).await?;
    Ok(match outcome {
        SendOutcome::Started(started) => {
            let result = SendResult::Started {
                run_id: started.run_id.clone(),
                messages: started.messages.clone(),
                answer_turn: None,
            };
            spawn(agents, TurnStart { chat_id: chat_id.clone(), started });
            result
        }
        SendOutcome::Queued { position, message, pending } => {
            SendResult::Queued { position, message, pending_messages: pending }
        }
        SendOutcome::Duplicate { message, running } => SendResult::Duplicate { message, running },
    })
}

/// Regenerate: a new turn answers the owner's last message again, and its reply becomes the
/// next version of the last reply. `message_idx` names that message and `versions` the
/// versions the caller shows (both optional checks: a stale or repeated request is refused or
/// answered as a duplicate).
pub async fn regenerate(
    agents: &Arc<Agents>,
    chat_id: &ChatId,
    message_idx: Option<i64>,
    versions: Option<u32>,
) -> Result<RegenerateResult> {
    let provider = provider_for(agents, chat_id).await?;
    let regenerate = crate::writer::Regenerate {
        chat_id: chat_id.clone(),
        message_idx,
        versions,
        run_id: RunId::random(),
        provider,
    };
    let outcome = agents.writer.call(|ack| WriteCommand::Regenerate { regenerate, ack }).await?;
    Ok(match outcome {
        RegenerateOutcome::Started(started) => {
            let result = RegenerateResult::Started { run_id: started.run_id.clone(), version: started.version };
            spawn(agents, TurnStart { chat_id: chat_id.clone(), started });
            result
        }
        RegenerateOutcome::Duplicate { versions, running } => RegenerateResult::Duplicate { versions, running },
    })
}

/// Registers the chat's turn and runs it (and any queued follow-ups) in the background.
pub fn spawn(agents: &Arc<Agents>, start: TurnStart) {
    let (commands, rx) = mpsc::channel(COMMAND_QUEUE);
    agents.turns.insert(&start.chat_id, TurnHandle::new(start.started.run_id.clone(), commands));
    agents.notes.started(&start.chat_id);
    let span = info_span!(parent: None, "turn", chat.id = %start.chat_id);
    tokio::spawn(run_chat(agents.clone(), start, rx).instrument(span));
}

async fn run_chat(agents: Arc<Agents>, start: TurnStart, mut commands: mpsc::Receiver<TurnCommand>) {
    let chat_id = start.chat_id.clone();
    let mut last_run = start.started.run_id.clone();
    let mut next = Some(start);
    while let Some(turn) = next.take() {
        last_run.clone_from(&turn.started.run_id);
        agents.turns.set_run(&chat_id, &turn.started.run_id);
        next = run_turn(&agents, turn, &mut commands).await;
    }
    agents.turns.remove(&chat_id, &last_run);
    agents.notes.settled(&chat_id);
    // Anything that raced with the end of the last turn gets a clear answer.
    commands.close();
    while let Ok(command) = commands.try_recv() {
        match command {
            TurnCommand::Stop { reply } => {
                let _ = reply.send(Vec::new());
            }
            TurnCommand::Answer { reply, .. } | TurnCommand::SecureInput { reply, .. } => {
                let _ = reply.send(Err(Domain::QuestionStale.into()));
            }
            TurnCommand::Steer { reply, .. } => {
                let _ = reply.send(Ok(None));
            }
        }
    }
}

/// A card waiting for the owner.
struct PendingAsk {
    question_id: QuestionId,
    /// The tool an approval card is about; `None` for questions.
    approval_tool: Option<String>,
    /// The plan a plan card proposes (approved as it is unless the owner edits it).
    plan: Option<String>,
    /// The CLI's waiting call; `None` for a secure-input card, whose outcome its own route
    /// reports to the agent (`chats::secure_input`).
    reply: Option<oneshot::Sender<Reply>>,
}

/// Longest plan a plan card shows (characters; a plan is a page, not a book).
const MAX_PLAN_CHARS: usize = 32 * 1024;
/// What a plan card stands for where a tool name is kept (never the name of a real tool).
const PLAN_TOOL: &str = "mobius:plan";
/// Why a plan-mode turn's tool approval is refused before its plan is approved.
const PLAN_FIRST: &str = "Plan mode: only read and plan until the owner approves your plan. Propose the plan now.";

/// State of one running turn.
struct Turn<'a> {
    agents: &'a Agents,
    chat_id: ChatId,
    run_id: RunId,
    provider: ProviderKind,
    live: LiveMessage,
    fold: ChatFold,
    last_snapshot: Instant,
    /// The live message changed since the last snapshot.
    dirty: bool,
    pending_ask: Option<PendingAsk>,
    approval: ApprovalPolicy,
    allowed_tools: crate::agent::settings::AllowedTools,
    /// Connector tools that run unasked: read-only ones of connectors the owner marked so.
    auto_approved: std::collections::HashSet<String>,
    usage: Option<super::Usage>,
    session: Option<String>,
    /// A steering message handed to the CLI and not yet taken or refused.
    pending_steer: Option<(UserInput, oneshot::Sender<Result<Option<Message>>>)>,
    /// Overflow files of this turn's blocks, and the bytes written to them.
    overflow: HashMap<String, std::fs::File>,
    overflow_written: u64,
    /// Local image links of replies already copied into the chat's media (`None`: not showable).
    media: HashMap<String, Option<String>>,
    /// Images this turn stored as chat media.
    media_count: usize,
    /// Scheduled messages this run answers (their end goes to the scheduler).
    scheduled: Vec<crate::protocol::Cid>,
    /// The chat continues by itself after a usage limit.
    auto_resume: bool,
    /// A plan-mode turn whose plan the owner has not approved yet: the agent only reads, so
    /// every tool approval it asks for is refused (`Ask::Plan` is how it goes on).
    planning: bool,
}

async fn run_turn(agents: &Agents, start: TurnStart, commands: &mut mpsc::Receiver<TurnCommand>) -> Option<TurnStart> {
    let mut turn = Turn {
        agents,
        chat_id: start.chat_id.clone(),
        run_id: start.started.run_id.clone(),
        provider: start.started.provider,
        live: LiveMessage::regenerating(start.started.ts, start.started.version),
        fold: ChatFold::in_workspace(&crate::agent::workspace::path(&agents.data_dir, start.chat_id.as_str()))
            .with_root(&agents.data_dir),
        last_snapshot: Instant::now(),
        dirty: false,
        pending_ask: None,
        approval: ApprovalPolicy::Full,
        allowed_tools: Default::default(),
        auto_approved: std::collections::HashSet::new(),
        usage: None,
        session: None,
        pending_steer: None,
        overflow: HashMap::new(),
        overflow_written: 0,
        media: HashMap::new(),
        media_count: 0,
        scheduled: start
            .started
            .messages
            .iter()
            .filter_map(|m| m.cid.clone())
            .filter(|c| crate::agent::schedule_ends::is_scheduled(c))
            .collect(),
        auto_resume: true,
        planning: false,
    };
    // Nothing starts until the turn has its place among the agents that may run at once.
    let _slot = match turn.slot(super::slots::Class::of(&start.started.messages), commands).await {
        Ok(slot) => slot,
        Err(next) => return next,
    };
    let provider_turn = match turn.prepare_and_start(&start.started.messages).await {
        Ok(p) => p,
        Err(e) => {
            let message = e.client_message().unwrap_or_else(|| e.to_string());
            warn!(error = %message, "the turn could not start");
            return turn.finish(Finish::failed(message), false).await.next;
        }
    };
    info!(run.id = %turn.run_id, warm = provider_turn.warm(), "turn started");
    turn.drive(provider_turn, commands).await
}

impl Turn<'_> {
    /// The turn's slot: at once when one is free, else after waiting for it — the chat shows
    /// that it waits (a `waiting` event, the detail's `waiting`), and so do the schedule runs
    /// it answers. A stop meanwhile ends the run before anything started (`Err`, with what
    /// follows); an answer finds no question and a steer is queued.
    async fn slot(
        &mut self,
        class: super::slots::Class,
        commands: &mut mpsc::Receiver<TurnCommand>,
    ) -> std::result::Result<super::slots::Slot, Option<TurnStart>> {
        let slots = self.agents.slots.clone();
        let ticket = match slots.take(class) {
            Ok(slot) => return Ok(slot),
            Err(ticket) => ticket,
        };
        let state = slots.state();
        let waiting = match class {
            super::slots::Class::Owner => Waiting { busy: state.running as u32, limit: state.max as u32 },
            super::slots::Class::Background => {
                Waiting { busy: state.background_running as u32, limit: state.background_max as u32 }
            }
        };
        info!(run.id = %self.run_id, busy = waiting.busy, limit = waiting.limit, "the turn waits for a free agent");
        self.agents.turns.set_waiting(&self.chat_id, Some(waiting));
        self.flush(vec![ChatEvent::Waiting(waiting)]).await;
        self.agents.schedule_ends.waiting(&self.scheduled, true);
        let granted = ticket.wait();
        tokio::pin!(granted);
        let outcome = loop {
            tokio::select! {
                slot = &mut granted => break Ok(slot),
                command = commands.recv() => match command {
                    Some(TurnCommand::Stop { reply }) => {
                        let outcome = self.finish(Finish::stopped(), true).await;
                        let _ = reply.send(outcome.cleared);
                        break Err(None);
                    }
                    Some(TurnCommand::Answer { reply, .. } | TurnCommand::SecureInput { reply, .. }) => {
                        let _ = reply.send(Err(Domain::QuestionStale.into()));
                    }
                    Some(TurnCommand::Steer { reply, .. }) => {
                        let _ = reply.send(Ok(None));
                    }
                    None => {
                        self.finish(Finish::stopped(), true).await;
                        break Err(None);
                    }
                },
            }
        };
        self.agents.turns.set_waiting(&self.chat_id, None);
        if outcome.is_ok() {
            self.agents.schedule_ends.waiting(&self.scheduled, false);
        }
        outcome
    }

    async fn drive(
        mut self,
        mut provider: ProviderTurn,
        commands: &mut mpsc::Receiver<TurnCommand>,
    ) -> Option<TurnStart> {
        let limits = self.agents.limits;
        let deadline = Instant::now() + limits.max_duration;
        let mut heard = Instant::now();
        loop {
            let snapshot_due = self.last_snapshot + SNAPSHOT_EVERY;
            let silent_until = heard + limits.max_silence;
            tokio::select! {
                // A quiet spell after some output (e.g. a long tool run): persist what we have.
                () = tokio::time::sleep_until(snapshot_due), if self.dirty => self.snapshot(),
                () = tokio::time::sleep_until(deadline) => {
                    let message = format!(
                        "The turn ran for {} and was ended: that is the longest a turn may run \
                         (MOBIUS_AGENT_TURN_MAX_SECS). Send a message to continue.",
                        minutes(limits.max_duration)
                    );
                    return self.end_at_ceiling(provider, message).await;
                }
                () = tokio::time::sleep_until(silent_until), if self.pending_ask.is_none() => {
                    let message = format!(
                        "The agent printed nothing for {} and was ended as stuck \
                         (MOBIUS_AGENT_SILENCE_MAX_SECS). Send a message to continue.",
                        minutes(limits.max_silence)
                    );
                    return self.end_at_ceiling(provider, message).await;
                }
                event = provider.events.recv() => {
                    heard = Instant::now();
                    let Some(event) = event else {
                        return self.finish(Finish::failed("The agent stopped without finishing the turn."), false).await.next;
                    };
                    let mut batch = vec![event];
                    while batch.len() < MAX_EVENTS_PER_EMIT {
                        match provider.events.try_recv() {
                            Ok(e) => batch.push(e),
                            Err(_) => break,
                        }
                    }
                    if let Some(finish) = self.handle_events(batch).await {
                        return self.finish(finish, false).await.next;
                    }
                    // Nothing more of this turn could be kept: end it before it does more.
                    if self.agents.writer.disk_full() {
                        return self.end_at_ceiling(provider, DISK_FULL.to_owned()).await;
                    }
                }
                command = commands.recv() => match command {
                    Some(TurnCommand::Stop { reply }) => {
                        let outcome = self.stop(provider).await;
                        let _ = reply.send(outcome.cleared);
                        return None;
                    }
                    Some(TurnCommand::Answer { question_id, answers, reply }) => {
                        let _ = reply.send(self.answer(&question_id, answers).await);
                        heard = Instant::now();
                    }
                    Some(TurnCommand::SecureInput { card, reply }) => {
                        let _ = reply.send(self.secure_input(card).await);
                    }
                    Some(TurnCommand::Steer { message, reply }) => {
                        if self.pending_ask.is_some() || self.pending_steer.is_some() {
                            let _ = reply.send(Ok(None));
                        } else if provider.control.send(Control::Steer(message.content.clone())).await.is_ok() {
                            self.pending_steer = Some((message, reply));
                        } else {
                            let _ = reply.send(Ok(None));
                        }
                    }
                    None => {
                        let _ = self.stop(provider).await;
                        return None;
                    }
                },
            }
        }
    }

    /// Ends a turn that passed a ceiling: the run fails with `message` as its error card (the
    /// queue goes on as after any failure), and the CLI's process group and everything that
    /// escaped it are killed.
    async fn end_at_ceiling(mut self, provider: ProviderTurn, message: String) -> Option<TurnStart> {
        warn!(run.id = %self.run_id, reason = %message, "turn ended at a ceiling");
        let _ = provider.control.try_send(Control::Interrupt);
        let outcome = self.finish(Finish::failed(message), false).await;
        drop(provider);
        outcome.next
    }

    /// Applies a batch of provider events; returns the finish if the turn ended.
    async fn handle_events(&mut self, batch: Vec<AgentEvent>) -> Option<Finish> {
        let mut out: Vec<ChatEvent> = Vec::new();
        for agent_event in batch {
            let event = match self.fold.fold(agent_event) {
                Folded::Chat(ChatEvent::TextFinal { content, item_id }) => {
                    let content = self.show_local_images(content).await;
                    ChatEvent::TextFinal { content, item_id }
                }
                Folded::Chat(event) => {
                    if let ChatEvent::ToolStart { input, .. } = &event {
                        self.agents.skills.touch(input, db::now_ms());
                    }
                    event
                }
                Folded::Truncated { event, tool_use_id, full } => {
                    self.agents
                        .writer
                        .enqueue(WriteCommand::StashToolOutput {
                            chat_id: self.chat_id.clone(),
                            tool_use_id,
                            content: full,
                        })
                        .await;
                    event
                }
                Folded::Files { event, stash } => {
                    for (tool_use_id, content) in stash {
                        self.agents
                            .writer
                            .enqueue(WriteCommand::StashToolOutput {
                                chat_id: self.chat_id.clone(),
                                tool_use_id,
                                content,
                            })
                            .await;
                    }
                    event
                }
                Folded::Overflow { event, item_id, rest } => {
                    self.spill(&item_id, &rest);
                    match event {
                        Some(event) => event,
                        None => continue,
                    }
                }
                Folded::Nothing => continue,
                Folded::Turn(other) => {
                    if let Some(finish) = self.handle_turn_event(other, &mut out).await {
                        self.flush(out).await;
                        return Some(finish);
                    }
                    continue;
                }
            };
            out.push(event);
        }
        self.flush(out).await;
        None
    }

    /// The provider events that are not transcript: returns the finish if the turn ended.
    async fn handle_turn_event(&mut self, event: AgentEvent, out: &mut Vec<ChatEvent>) -> Option<Finish> {
        match event {
            AgentEvent::Session(id) => {
                self.session = Some(id.clone());
                let record = WriteCommand::RecordSession {
                    chat_id: self.chat_id.clone(),
                    run_id: self.run_id.clone(),
                    session_id: id,
                };
                self.agents.writer.enqueue(record).await;
            }
            AgentEvent::Usage(u) => self.usage = Some(u),
            AgentEvent::Limits(windows) => match serde_json::to_string(&windows) {
                Ok(windows) => {
                    self.agents.writer.enqueue(WriteCommand::RecordLimits { provider: self.provider, windows }).await;
                }
                Err(e) => warn!(error = %e, "plan windows could not be encoded"),
            },
            AgentEvent::SteerAccepted => {
                self.flush(std::mem::take(out)).await;
                self.seal_for_steer().await;
            }
            AgentEvent::SteerRejected(why) => {
                info!(reason = %why, "steering refused; the message will be queued");
                if let Some((_, reply)) = self.pending_steer.take() {
                    let _ = reply.send(Ok(None));
                }
            }
            AgentEvent::Warning(w) => warn!(warning = %w, "agent CLI"),
            AgentEvent::ToolImage { id, image } => {
                if let Some(url) = self.save_tool_image(image).await {
                    out.push(ChatEvent::ToolImage { tool_use_id: id, url });
                }
            }
            AgentEvent::Ask { ask, reply } => {
                // Everything before the question is journaled first, in order.
                self.flush(std::mem::take(out)).await;
                self.ask(ask, reply).await;
            }
            AgentEvent::Finished(f) => return Some(f),
            transcript => warn!(event = ?transcript, "a transcript event reached the turn unfolded"),
        }
        None
    }

    /// Folds events into the live message, journals them, and snapshots now and then.
    async fn flush(&mut self, events: Vec<ChatEvent>) {
        if events.is_empty() {
            return;
        }
        for e in &events {
            self.live.apply(e);
        }
        let emit =
            WriteCommand::Emit { chat_id: self.chat_id.clone(), run_id: Some(self.run_id.clone()), events, ack: None };
        self.agents.writer.enqueue(emit).await;
        self.dirty = true;
        if self.last_snapshot.elapsed() >= SNAPSHOT_EVERY {
            self.snapshot();
        }
    }

    /// Hands the current live message to the writer (which coalesces per chat).
    fn snapshot(&mut self) {
        self.last_snapshot = Instant::now();
        self.dirty = false;
        match serde_json::to_string(&self.live.to_message()) {
            Ok(body) => {
                self.agents.writer.snapshot_live(&self.chat_id, &self.run_id, body);
            }
            Err(e) => warn!(error = %e, "the live message could not be encoded"),
        }
    }

    /// A question always goes to the owner; an approval only under the `ask` policy.
    async fn ask(&mut self, ask: Ask, reply: oneshot::Sender<Reply>) {
        // The chat shows one card at a time; a secure-input card is answered first.
        if self.pending_ask.as_ref().is_some_and(|p| p.reply.is_none()) {
            let _ = reply.send(Reply::Deny("A secret request waits for the owner; ask again after it.".into()));
            return;
        }
        let question_id = QuestionId::random();
        let proposed = match &ask {
            Ask::Plan { plan } => Some(plan.chars().take(MAX_PLAN_CHARS).collect::<String>()),
            _ => None,
        };
        let (card, approval_tool) = match ask {
            Ask::Question { questions } => (Card::Question { questions, answers: None }, None),
            Ask::Plan { .. } => {
                (Card::Plan { plan: proposed.clone().unwrap_or_default(), answers: None }, Some(PLAN_TOOL.to_owned()))
            }
            Ask::Approval { .. } if self.planning => {
                let _ = reply.send(Reply::Deny(PLAN_FIRST.into()));
                return;
            }
            Ask::Approval { tool, input, reason } => {
                if self.approval == ApprovalPolicy::Full
                    || self.allowed_tools.contains(&tool)
                    || self.auto_approved.contains(&tool)
                {
                    let _ = reply.send(Reply::Allow);
                    return;
                }
                let input = super::summarize_input(&tool, &input);
                (Card::Approval { tool: tool.clone(), input, reason, answers: None }, Some(tool))
            }
        };
        let card = QuestionCard { question_id: question_id.clone(), card };
        self.live.apply(&ChatEvent::Question(card.clone()));
        let notice = crate::push::Notice::question(&self.chat_id, &card);
        let committed = self
            .agents
            .writer
            .call(|ack| WriteCommand::QuestionCommit {
                chat_id: self.chat_id.clone(),
                run_id: self.run_id.clone(),
                card,
                live: self.live.to_message(),
                ack,
            })
            .await;
        match committed {
            Ok(()) => {
                self.agents.push.notify(notice);
                self.pending_ask = Some(PendingAsk { question_id, approval_tool, plan: proposed, reply: Some(reply) });
            }
            Err(e) => {
                warn!(error = %e, "a question could not be recorded; declining it");
                let _ = reply.send(Reply::Deny("The question could not be delivered to the owner.".into()));
            }
        }
    }

    /// Shows a secure-input card (durable first, then a push): the agent's `mobius secret
    /// request` waits on its own route while the owner types the value into the card.
    async fn secure_input(&mut self, card: QuestionCard) -> Result<()> {
        if self.pending_ask.is_some() {
            return Err(Domain::PendingQuestionOpen.into());
        }
        let question_id = card.question_id.clone();
        self.live.apply(&ChatEvent::Question(card.clone()));
        let notice = crate::push::Notice::question(&self.chat_id, &card);
        let committed = self
            .agents
            .writer
            .call(|ack| WriteCommand::QuestionCommit {
                chat_id: self.chat_id.clone(),
                run_id: self.run_id.clone(),
                card,
                live: self.live.to_message(),
                ack,
            })
            .await;
        committed?;
        self.agents.push.notify(notice);
        self.pending_ask = Some(PendingAsk { question_id, approval_tool: None, plan: None, reply: None });
        Ok(())
    }

    /// Records the owner's answer (durably first), then hands it to the CLI.
    async fn answer(&mut self, question_id: &QuestionId, answers: Answers) -> Result<()> {
        let (approval_tool, proposed, secure) = match &self.pending_ask {
            Some(p) if p.question_id == *question_id => (p.approval_tool.clone(), p.plan.clone(), p.reply.is_none()),
            _ => return Err(Domain::QuestionStale.into()),
        };
        let reply = match (&approval_tool, &answers) {
            _ if secure != matches!(answers, Answers::Secret(_)) => {
                return Err(Domain::InvalidAnswers("a secure-input card is answered through its own route").into());
            }
            (_, Answers::Secret(_)) => Reply::Deny(String::new()),
            (None, Answers::Choices(choices)) => Reply::Answers(choices.clone()),
            (None, Answers::Approval(_)) => {
                return Err(Domain::InvalidAnswers("answers must map each question to a choice").into());
            }
            (Some(tool), Answers::Approval(a)) if tool == PLAN_TOOL => match a.decision {
                Decision::Allow | Decision::AllowChat => {
                    let edited = a.plan.as_deref().map(str::trim).filter(|p| !p.is_empty());
                    if edited.is_some_and(|p| p.chars().count() > MAX_PLAN_CHARS) {
                        return Err(Domain::InvalidAnswers("plan is longer than 32,768 characters").into());
                    }
                    match edited {
                        Some(p) => Reply::Plan(p.to_owned()),
                        None => Reply::Plan(proposed.unwrap_or_default()),
                    }
                }
                Decision::Deny => Reply::Deny(
                    a.reason
                        .as_deref()
                        .filter(|r| !r.trim().is_empty())
                        .unwrap_or("The owner rejected this plan. Ask what they want instead.")
                        .to_owned(),
                ),
            },
            (Some(_), Answers::Approval(a)) => match a.decision {
                Decision::Allow => Reply::Allow,
                Decision::AllowChat => Reply::AllowAlways,
                Decision::Deny => Reply::Deny(
                    a.reason
                        .as_deref()
                        .filter(|r| !r.trim().is_empty())
                        .unwrap_or("The owner declined this.")
                        .to_owned(),
                ),
            },
            (Some(_), Answers::Choices(_)) => {
                return Err(Domain::InvalidAnswers("decision must be allow, allow_chat or deny").into());
            }
        };
        self.agents
            .writer
            .call(|ack| WriteCommand::AnswerQuestion {
                chat_id: self.chat_id.clone(),
                question_id: question_id.clone(),
                answers: answers.clone(),
                ack,
            })
            .await?;
        self.live.apply(&ChatEvent::AnswersApplied { question_id: question_id.clone(), answers });
        if matches!(reply, Reply::Plan(_)) {
            // Approved: the same turn goes on and may edit now.
            self.planning = false;
        }
        // The answered card reaches the stored live message with the next snapshot.
        self.dirty = true;
        if let (Reply::AllowAlways, Some(tool)) = (&reply, &approval_tool) {
            self.allowed_tools.insert(tool.clone());
            let settings =
                db::chats::ChatSettings { allowed_tools: Some(self.allowed_tools.stored()), ..Default::default() };
            let patch = ChatPatch { title: None, settings, scope: None, auto_resume: None };
            let _ = self
                .agents
                .writer
                .call(|ack| WriteCommand::UpdateChat { chat_id: self.chat_id.clone(), patch, ack })
                .await;
        }
        if let Some(PendingAsk { reply: Some(waiting), .. }) = self.pending_ask.take() {
            let _ = waiting.send(reply);
        }
        Ok(())
    }

    /// The CLI took the steering message: what was said so far becomes its own assistant
    /// message, the owner's words follow it, and the reply goes on as a new live message.
    async fn seal_for_steer(&mut self) {
        let Some((message, reply)) = self.pending_steer.take() else { return };
        self.live.close_running_tools(ToolStatus::Done);
        let sealed = self.live.to_message();
        let committed = self
            .agents
            .writer
            .call(|ack| WriteCommand::SteerCommit {
                chat_id: self.chat_id.clone(),
                run_id: self.run_id.clone(),
                message,
                sealed,
                ack,
            })
            .await;
        match committed {
            Ok(stored) => {
                self.live = LiveMessage::new(stored.ts);
                self.dirty = false;
                let _ = reply.send(Ok(Some(stored)));
            }
            Err(e) => {
                warn!(error = %e, "a steering message could not be recorded");
                let _ = reply.send(Err(e));
            }
        }
    }

    /// Stop: record the partial message as stopped and clear the queue at once, then let the
    /// CLI wind down (interrupt, grace, kill) in the background.
    async fn stop(mut self, provider: ProviderTurn) -> Outcome {
        if let Some(PendingAsk { reply: Some(waiting), .. }) = self.pending_ask.take() {
            let _ = waiting.send(Reply::Deny("Stopped by the owner.".into()));
        }
        let _ = provider.control.try_send(Control::Interrupt);
        let outcome = self.finish(Finish::stopped(), true).await;
        tokio::spawn(async move {
            let mut provider = provider;
            let deadline = tokio::time::sleep(STOP_GRACE);
            tokio::pin!(deadline);
            loop {
                tokio::select! {
                    e = provider.events.recv() => match e {
                        Some(AgentEvent::Finished(_)) | None => break,
                        Some(AgentEvent::Ask { reply, .. }) => { let _ = reply.send(Reply::Deny("Stopped by the owner.".into())); }
                        Some(_) => {}
                    },
                    () = &mut deadline => break,
                }
            }
            drop(provider);
        });
        outcome
    }

    /// Records the end of the run; a stop clears the queue, anything else promotes it.
    async fn finish(&mut self, finish: Finish, stopped: bool) -> Outcome {
        if let Some(PendingAsk { reply: Some(waiting), .. }) = self.pending_ask.take() {
            let _ = waiting.send(Reply::Deny("The turn ended.".into()));
        }
        if let Some((_, reply)) = self.pending_steer.take() {
            let _ = reply.send(Ok(None));
        }
        let status = match (stopped, finish.status) {
            (true, _) => RunStatus::Stopped,
            (false, FinishStatus::Completed) => RunStatus::Completed,
            (false, FinishStatus::Failed) => RunStatus::Failed,
            (false, FinishStatus::Interrupted) => RunStatus::Interrupted,
        };
        // A usage limit parks the chat until the reset (unless its switch is off).
        let pause = finish.limit.map(|hit| super::park::limit_pause(hit.resets_at, self.auto_resume, db::now_ms()));
        if let Some(message) = &finish.error {
            self.live.apply(&ChatEvent::Error {
                message: message.clone(),
                resumable: Some(finish.fix.is_none()),
                fix: finish.fix,
                pause: pause.clone(),
            });
        }
        self.live.close_running_tools(if stopped { ToolStatus::Stopped } else { ToolStatus::Done });
        let usage = finish.usage.clone().or_else(|| self.usage.clone());
        let end = db::runs::RunEnd {
            status: status.as_str().to_owned(),
            cost_usd: finish.cost_usd,
            input_tokens: usage.as_ref().map(|u| u.input_tokens),
            output_tokens: usage.as_ref().map(|u| u.output_tokens),
            cache_read_tokens: usage.as_ref().map(|u| u.cache_read_tokens),
            cache_write_tokens: usage.as_ref().map(|u| u.cache_write_tokens),
            usage: usage.as_ref().and_then(|u| serde_json::to_string(u).ok()),
            error: finish.error.clone(),
            session_id: finish.session_id.clone().or_else(|| self.session.clone()),
        };
        let run = FinishRun {
            chat_id: self.chat_id.clone(),
            run_id: self.run_id.clone(),
            status,
            body: Some(self.live.to_message()),
            end,
            provider: Some(self.provider),
            next_run_id: RunId::random(),
            fix: finish.fix,
            pause: pause.clone(),
        };
        info!(run.id = %self.run_id, status = status.as_str(), "turn ended");
        let reply = run.body.as_ref().map(|m| m.content.clone()).unwrap_or_default();
        // The promoted queue of a retried end is not started by it (the chat stays idle).
        let retry = FinishRun { provider: None, ..run.clone() };
        let result = self.agents.writer.call(|ack| WriteCommand::FinishRun { finish: run, ack }).await;
        if let Ok(outcome) = &result {
            self.agents.schedule_ends.ended(crate::agent::schedule_ends::TurnEnded {
                chat_id: self.chat_id.clone(),
                run_id: self.run_id.clone(),
                status,
                error: finish.error.clone(),
                reply: reply.clone(),
                answered: std::mem::take(&mut self.scheduled),
                cleared: outcome.cleared.clone(),
            });
        }
        match result {
            Ok(outcome) if outcome.next.is_none() => {
                if pause.is_some_and(|p| p.resumes_at.is_some()) {
                    self.agents.resumer.poke();
                }
                // The push goes after the commit, off this path (a bounded enqueue).
                self.agents.push.turn_ended(&self.chat_id, status, &reply, finish.error.as_deref());
                Outcome { next: None, cleared: outcome.cleared }
            }
            Ok(outcome) => Outcome {
                next: outcome.next.map(|started| TurnStart { chat_id: self.chat_id.clone(), started }),
                cleared: outcome.cleared,
            },
            Err(e) if e.is_disk_full() || self.agents.writer.disk_full() => {
                // The end could not be recorded: try again until the disk has room, so the
                // chat does not look busy for ever.
                warn!(error = %e, "the turn's end could not be recorded: the disk is full; retrying");
                let writer = self.agents.writer.clone();
                let chat_id = self.chat_id.clone();
                tokio::spawn(async move {
                    for _ in 0..DISK_FULL_RETRIES {
                        tokio::time::sleep(DISK_FULL_RETRY).await;
                        let run = FinishRun { next_run_id: RunId::random(), ..retry.clone() };
                        match writer.call(|ack| WriteCommand::FinishRun { finish: run, ack }).await {
                            Ok(_) => return,
                            Err(e) if e.is_disk_full() || writer.disk_full() => {}
                            Err(_) => return,
                        }
                    }
                    warn!(chat.id = %chat_id, "the turn's end was never recorded; the next boot closes it");
                });
                Outcome { next: None, cleared: Vec::new() }
            }
            Err(e) => {
                // Someone else (a stop, a delete) already closed this run: nothing more to write.
                info!(error = %e, "the run was already closed");
                Outcome { next: None, cleared: Vec::new() }
            }
        }
    }
}

/// What ending a turn led to, as the turn runner sees it.
struct Outcome {
    next: Option<TurnStart>,
    cleared: Vec<crate::protocol::Cid>,
}

/// "90 min" / "45 s": a ceiling as the owner reads it.
fn minutes(d: Duration) -> String {
    if d.as_secs() >= 120 { format!("{} min", d.as_secs() / 60) } else { format!("{} s", d.as_secs()) }
}

/// The hidden message that carries answers given after a restart (the turn that asked is
/// gone, so the next one reads them).
pub fn answers_text(answers: &Answers) -> String {
    let mut lines = vec!["My answers to your questions:".to_owned()];
    match answers {
        Answers::Choices(choices) => {
            for (question, choice) in choices {
                let answer = match choice {
                    Choice::One(s) => s.clone(),
                    Choice::Many(items) => items.join(", "),
                };
                lines.push(format!("- {question}: {answer}"));
            }
            if choices.is_empty() {
                lines.push("(no answer)".into());
            }
        }
        Answers::Secret(secret) => lines.push(format!(
            "- secret: {}",
            if secret.secret == crate::protocol::SecretStatus::Stored { "stored" } else { "declined" }
        )),
        Answers::Approval(approval) => {
            let decision = match approval.decision {
                Decision::Allow => "allow",
                Decision::AllowChat => "allow_chat",
                Decision::Deny => "deny",
            };
            lines.push(format!("- decision: {decision}"));
            if let Some(reason) = &approval.reason {
                lines.push(format!("- reason: {reason}"));
            }
        }
    }
    lines.join("\n")
}
