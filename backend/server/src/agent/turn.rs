//! One chat's turns: start the provider, fold its events into the live message and the
//! journal (through the writer), answer questions and approvals, stop, and run queued
//! follow-ups until the queue is empty.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tracing::{Instrument, info, info_span, warn};

use super::live::{LiveMessage, MAX_INLINE_TOOL_OUTPUT, reduce_output};
use super::registry::TurnHandle;
use super::{
    AgentEvent, ApprovalPolicy, Ask, Control, Finish, FinishStatus, ProviderKind, ProviderTurn, Reply, TurnRequest,
};
use crate::app::AppState;
use crate::auth::{Claims, Scope};
use crate::db::{self, now_ms};
use crate::error::{Error, Result};
use crate::writer::{EventBody, FinishRun, WriteCommand, event};

/// How long a stopped CLI gets to wind down before its process group is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(2);
/// Minimum spacing of live snapshots sent by a turn (the writer coalesces further).
const SNAPSHOT_EVERY: Duration = Duration::from_millis(900);
/// Agent-run tokens live at most this long (and die earlier when the run ends).
const AGENT_TOKEN_TTL_SECS: i64 = 26 * 3600;
/// Most provider events folded into one writer command.
const MAX_EVENTS_PER_EMIT: usize = 64;

/// Requests routes make to a running turn.
#[derive(Debug)]
pub enum TurnCommand {
    /// Stop now; the reply carries the cids of the queued messages that were cleared.
    Stop { reply: oneshot::Sender<Vec<String>> },
    /// The owner answered question `question_id`.
    Answer { question_id: String, answers: Value, reply: oneshot::Sender<Result<()>> },
    /// Add the owner's message to the running turn. The reply carries the stored message, or
    /// `None` when the CLI cannot take it now (the caller queues it instead).
    Steer { message: crate::writer::UserMessage, reply: oneshot::Sender<Result<Option<Value>>> },
}

/// A run that is about to start: its id and the user messages it answers.
#[derive(Debug, Clone)]
pub struct TurnStart {
    pub chat_id: String,
    pub run_id: String,
    pub messages: Vec<Value>,
}

/// What the agent reads of a user message: its text, plus the `<app_state>` an embedding app
/// attached to it (kept out of the visible text).
fn agent_text(message: &Value) -> Option<String> {
    let content = message.get("content").and_then(Value::as_str)?;
    Some(match message.get("agent_context").and_then(Value::as_str).filter(|c| !c.is_empty()) {
        Some(context) => format!("{content}\n\n{context}"),
        None => content.to_owned(),
    })
}

/// The system prompt a chat starts with: the platform's, or an app chat's own `system_prompt`
/// in its place; app chats then get an `<app_context>` block naming their app.
async fn compose_for(state: &AppState, chat: &db::chats::ChatRow) -> Result<String> {
    let settings: Value = chat.agent_settings.as_deref().and_then(|s| serde_json::from_str(s).ok()).unwrap_or_default();
    let own = settings.get("system_prompt").and_then(Value::as_str).filter(|p| !p.trim().is_empty());
    let mut prompt = match own {
        Some(p) => p.to_owned(),
        None => super::prompt::compose(&state.config.skill_dir)?,
    };
    if let Some(Some(app_id)) = db::embeds::chat_app(&state.db.read, &chat.id).await?
        && let Some(app) = db::apps::get(&state.db.read, app_id).await?
    {
        let description: String = app.description.chars().take(1000).collect();
        let storage = match settings.get("project_id").and_then(Value::as_str) {
            Some(project) => format!("app-data/{app_id}/projects/{project}/"),
            None => format!("app-data/{app_id}/"),
        };
        prompt.push_str(&format!(
            "\n<app_context>\nThis chat was opened by the app {:?} (id {app_id}, folder apps/{}/, entry index.jsx).\n\
             Description: {description}\nIts storage: {storage}\nOwning chat: {}\n</app_context>\n",
            app.name,
            app.slug,
            app.chat_id.as_deref().unwrap_or("none"),
        ));
    }
    Ok(prompt)
}

/// Registers the chat's turn and runs it (and any queued follow-ups) in the background.
pub fn spawn(state: &AppState, start: TurnStart) {
    let (commands, rx) = mpsc::channel(16);
    state.turns.insert(&start.chat_id, TurnHandle { run_id: start.run_id.clone(), commands });
    let span = info_span!(parent: None, "turn", chat.id = %start.chat_id);
    tokio::spawn(run_chat(state.clone(), start, rx).instrument(span));
}

async fn run_chat(state: AppState, start: TurnStart, mut commands: mpsc::Receiver<TurnCommand>) {
    let chat_id = start.chat_id.clone();
    let mut next = Some(start);
    let mut last_run = String::new();
    while let Some(turn) = next.take() {
        last_run.clone_from(&turn.run_id);
        state.turns.set_run(&chat_id, &turn.run_id);
        next = run_turn(&state, turn, &mut commands).await;
    }
    state.turns.remove(&chat_id, &last_run);
    // Anything that raced with the end of the last turn gets a clear answer.
    commands.close();
    while let Ok(command) = commands.try_recv() {
        match command {
            TurnCommand::Stop { reply } => {
                let _ = reply.send(Vec::new());
            }
            TurnCommand::Answer { reply, .. } => {
                let _ = reply.send(Err(Error::gone("question_stale", "That question is no longer open.")));
            }
            TurnCommand::Steer { reply, .. } => {
                let _ = reply.send(Ok(None));
            }
        }
    }
}

/// A question or approval waiting for the owner.
struct PendingAsk {
    question_id: String,
    approval_tool: Option<String>,
    reply: oneshot::Sender<Reply>,
}

/// State of one running turn.
struct Turn<'a> {
    state: &'a AppState,
    chat_id: String,
    run_id: String,
    live: LiveMessage,
    last_snapshot: Instant,
    /// The live message changed since the last snapshot.
    dirty: bool,
    pending_ask: Option<PendingAsk>,
    approval: ApprovalPolicy,
    allowed_tools: HashSet<String>,
    /// Characters of streamed output per tool, to stop streaming past the inline cap.
    streamed: HashMap<String, usize>,
    usage: Option<super::Usage>,
    session: Option<String>,
    /// A steering message handed to the CLI and not yet taken or refused.
    pending_steer: Option<(crate::writer::UserMessage, oneshot::Sender<Result<Option<Value>>>)>,
}

async fn run_turn(state: &AppState, start: TurnStart, commands: &mut mpsc::Receiver<TurnCommand>) -> Option<TurnStart> {
    let mut turn = Turn {
        state,
        chat_id: start.chat_id.clone(),
        run_id: start.run_id.clone(),
        live: LiveMessage::new(now_ms()),
        last_snapshot: Instant::now(),
        dirty: false,
        pending_ask: None,
        approval: ApprovalPolicy::Full,
        allowed_tools: HashSet::new(),
        streamed: HashMap::new(),
        usage: None,
        session: None,
        pending_steer: None,
    };
    let provider_turn = match turn.prepare_and_start(&start).await {
        Ok(p) => p,
        Err(e) => {
            let message = match &e {
                Error::Client { message, .. } => message.clone(),
                other => other.to_string(),
            };
            warn!(error = %message, "the turn could not start");
            return turn.finish(Finish::failed(message), false).await.next;
        }
    };
    info!(run.id = %turn.run_id, "turn started");
    turn.drive(provider_turn, commands).await
}

impl Turn<'_> {
    /// Reads the chat, composes the prompt and environment, and starts the provider.
    async fn prepare_and_start(&mut self, start: &TurnStart) -> Result<ProviderTurn> {
        let state = self.state;
        let chat = db::chats::get(&state.db.read, &self.chat_id)
            .await?
            .ok_or_else(|| Error::not_found("chat_not_found", "No such chat."))?;
        let kind = chat.provider.as_deref().and_then(ProviderKind::parse).unwrap_or(ProviderKind::Claude);
        self.approval = ApprovalPolicy::parse(&chat.approval_policy).unwrap_or_default();
        self.allowed_tools = chat
            .allowed_tools
            .as_deref()
            .and_then(|t| serde_json::from_str::<Vec<String>>(t).ok())
            .unwrap_or_default()
            .into_iter()
            .collect();
        let credentials = state.providers.credentials_env(kind)?;
        let composed = compose_for(state, &chat).await?;
        let id = super::prompt::prompt_id(&composed);
        let (_, system_prompt) = state
            .writer
            .call(|ack| WriteCommand::PinPrompt { chat_id: self.chat_id.clone(), id, content: composed, ack })
            .await?;
        let model = chat
            .agent_settings
            .as_deref()
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
            .and_then(|s| s.get("model").and_then(Value::as_str).map(str::to_owned))
            .filter(|m| !m.is_empty());
        let prompt = start.messages.iter().filter_map(agent_text).collect::<Vec<_>>().join("\n\n");
        let mut claims =
            Claims::new(&state.owner.get().map(|o| o.0).unwrap_or_default(), Scope::Agent, 0, AGENT_TOKEN_TTL_SECS);
        claims.epoch = state.owner.get().map_or(0, |o| o.1);
        claims.chat_id = Some(self.chat_id.clone());
        claims.run_id = Some(self.run_id.clone());
        let token = state.keys.issue(&claims)?;
        let env = state.providers.agent_env(kind, &self.chat_id, &self.run_id, &token, credentials)?;
        let request = TurnRequest {
            prompt,
            system_prompt,
            resume: chat.session_id.clone(),
            model,
            cwd: state.config.data_dir.clone(),
            env,
            approval: self.approval,
            pid_dir: crate::agent::agent_pid_dir(&state.config.data_dir),
        };
        state.providers.provider(kind).start(request)
    }

    async fn drive(
        mut self,
        mut provider: ProviderTurn,
        commands: &mut mpsc::Receiver<TurnCommand>,
    ) -> Option<TurnStart> {
        loop {
            let snapshot_due = self.last_snapshot + SNAPSHOT_EVERY;
            tokio::select! {
                // A quiet spell after some output (e.g. a long tool run): persist what we have.
                () = tokio::time::sleep_until(snapshot_due), if self.dirty => self.snapshot(),
                event = provider.events.recv() => {
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
                }
                command = commands.recv() => match command {
                    Some(TurnCommand::Stop { reply }) => {
                        let outcome = self.stop(provider).await;
                        let _ = reply.send(outcome.cleared);
                        return None;
                    }
                    Some(TurnCommand::Answer { question_id, answers, reply }) => {
                        let _ = reply.send(self.answer(&question_id, answers).await);
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

    /// Applies a batch of provider events; returns the finish if the turn ended.
    async fn handle_events(&mut self, batch: Vec<AgentEvent>) -> Option<Finish> {
        let mut out: Vec<EventBody> = Vec::new();
        let mut finished = None;
        for agent_event in batch {
            match agent_event {
                AgentEvent::Session(id) => {
                    self.session = Some(id.clone());
                    self.state
                        .writer
                        .enqueue(WriteCommand::RecordSession {
                            chat_id: self.chat_id.clone(),
                            run_id: self.run_id.clone(),
                            session_id: id,
                        })
                        .await;
                }
                AgentEvent::Text { item_id, delta } => {
                    out.push(event("text", json!({ "content": delta, "item_id": item_id })))
                }
                AgentEvent::TextFinal { item_id, text } => {
                    out.push(event("text_final", json!({ "content": text, "item_id": item_id })));
                }
                AgentEvent::Thinking { item_id, delta } => {
                    out.push(event("thinking", json!({ "content": delta, "item_id": item_id })));
                }
                AgentEvent::ToolStart { id, name, input } => {
                    out.push(event("tool_start", json!({ "tool_use_id": id, "tool": name, "input": input })));
                }
                AgentEvent::ToolOutput { id, text, append, exit_code } => {
                    if let Some(e) = self.tool_output(&id, &text, append, exit_code).await {
                        out.push(e);
                    }
                }
                AgentEvent::ToolEnd { id, is_error, interrupted } => {
                    let mut fields = json!({ "tool_use_id": id, "is_error": is_error });
                    if interrupted {
                        fields["interrupted"] = true.into();
                    }
                    out.push(event("tool_end", fields));
                }
                AgentEvent::Usage(u) => self.usage = Some(u),
                AgentEvent::SteerAccepted => {
                    self.flush(std::mem::take(&mut out)).await;
                    self.seal_for_steer().await;
                }
                AgentEvent::SteerRejected(why) => {
                    info!(reason = %why, "steering refused; the message will be queued");
                    if let Some((_, reply)) = self.pending_steer.take() {
                        let _ = reply.send(Ok(None));
                    }
                }
                AgentEvent::Warning(w) => warn!(warning = %w, "agent CLI"),
                AgentEvent::Ask { ask, reply } => {
                    // Everything before the question is journaled first, in order.
                    self.flush(std::mem::take(&mut out)).await;
                    self.ask(ask, reply).await;
                }
                AgentEvent::Finished(f) => {
                    finished = Some(f);
                    break;
                }
            }
        }
        self.flush(out).await;
        finished
    }

    async fn tool_output(&mut self, id: &str, text: &str, append: bool, exit_code: Option<i64>) -> Option<EventBody> {
        if append {
            let sent = self.streamed.entry(id.to_owned()).or_insert(0);
            if *sent >= MAX_INLINE_TOOL_OUTPUT {
                return None;
            }
            *sent += text.chars().count();
            return Some(event("tool_output", json!({ "tool_use_id": id, "content": text, "append": true })));
        }
        let reduced = reduce_output(text);
        let mut fields = json!({ "tool_use_id": id, "content": reduced.inline });
        if reduced.truncated {
            self.state
                .writer
                .enqueue(WriteCommand::StashToolOutput {
                    chat_id: self.chat_id.clone(),
                    tool_use_id: id.to_owned(),
                    content: text.to_owned(),
                })
                .await;
            fields["output_truncated"] = true.into();
            fields["output_full_len"] = reduced.full_len.into();
        }
        if let Some(code) = exit_code {
            fields["output_exit_code"] = code.into();
        }
        Some(event("tool_output", fields))
    }

    /// Folds events into the live message, journals them, and snapshots now and then.
    async fn flush(&mut self, events: Vec<EventBody>) {
        if events.is_empty() {
            return;
        }
        for e in &events {
            self.live.apply(e);
        }
        self.state
            .writer
            .enqueue(WriteCommand::Emit {
                chat_id: self.chat_id.clone(),
                run_id: Some(self.run_id.clone()),
                events,
                ack: None,
            })
            .await;
        self.dirty = true;
        if self.last_snapshot.elapsed() >= SNAPSHOT_EVERY {
            self.snapshot();
        }
    }

    /// Hands the current live message to the writer (which coalesces per chat).
    fn snapshot(&mut self) {
        self.last_snapshot = Instant::now();
        self.dirty = false;
        self.state.writer.snapshot_live(&self.chat_id, &self.run_id, self.live.to_body().to_string());
    }

    /// A question always goes to the owner; an approval only under the `ask` policy.
    async fn ask(&mut self, ask: Ask, reply: oneshot::Sender<Reply>) {
        let question_id = format!("q-{}", uuid::Uuid::new_v4().simple());
        let (fields, approval_tool) = match ask {
            Ask::Question { questions } => {
                (json!({ "question_id": question_id, "kind": "question", "questions": questions }), None)
            }
            Ask::Approval { tool, input, reason } => {
                if self.approval == ApprovalPolicy::Full || self.allowed_tools.contains(&tool) {
                    let _ = reply.send(Reply::Allow);
                    return;
                }
                let summary = super::summarize_input(&tool, &input);
                (
                    json!({ "question_id": question_id, "kind": "approval", "tool": tool, "input": summary, "reason": reason }),
                    Some(tool),
                )
            }
        };
        let body = event("question", fields.clone());
        self.live.apply(&body);
        let committed = self
            .state
            .writer
            .call(|ack| WriteCommand::QuestionCommit {
                chat_id: self.chat_id.clone(),
                run_id: self.run_id.clone(),
                question_id: question_id.clone(),
                event: body,
                live: self.live.to_body(),
                ack,
            })
            .await;
        match committed {
            Ok(()) => {
                self.state.push.question_waiting(&self.chat_id, &question_id, &fields);
                self.pending_ask = Some(PendingAsk { question_id, approval_tool, reply });
            }
            Err(e) => {
                warn!(error = %e, "a question could not be recorded; declining it");
                let _ = reply.send(Reply::Deny("The question could not be delivered to the owner.".into()));
            }
        }
    }

    /// Records the owner's answer (durably first), then hands it to the CLI.
    async fn answer(&mut self, question_id: &str, answers: Value) -> Result<()> {
        match &self.pending_ask {
            Some(p) if p.question_id == question_id => {}
            _ => return Err(Error::gone("question_stale", "That question is no longer open.")),
        }
        let approval_tool = self.pending_ask.as_ref().and_then(|p| p.approval_tool.clone());
        let reply = match &approval_tool {
            None => {
                let Value::Object(map) = &answers else {
                    return Err(Error::bad_request("invalid_answers", "answers must map each question to a choice"));
                };
                Reply::Answers(map.clone())
            }
            Some(_) => match answers.get("decision").and_then(Value::as_str) {
                Some("allow") => Reply::Allow,
                Some("allow_chat") => Reply::AllowAlways,
                Some("deny") => Reply::Deny(
                    answers
                        .get("reason")
                        .and_then(Value::as_str)
                        .filter(|r| !r.trim().is_empty())
                        .unwrap_or("The owner declined this.")
                        .to_owned(),
                ),
                _ => return Err(Error::bad_request("invalid_answers", "decision must be allow, allow_chat or deny")),
            },
        };
        self.state
            .writer
            .call(|ack| WriteCommand::AnswerQuestion {
                chat_id: self.chat_id.clone(),
                question_id: question_id.to_owned(),
                answers: answers.clone(),
                ack,
            })
            .await?;
        self.live.apply(&event("answers_applied", json!({ "question_id": question_id, "answers": answers })));
        if let (Reply::AllowAlways, Some(tool)) = (&reply, &approval_tool) {
            self.allowed_tools.insert(tool.clone());
            let mut tools: Vec<&String> = self.allowed_tools.iter().collect();
            tools.sort();
            let settings =
                db::chats::ChatSettings { allowed_tools: Some(json!(tools).to_string()), ..Default::default() };
            let patch = crate::writer::ChatPatch { title: None, settings, scope: None };
            let _ = self
                .state
                .writer
                .call(|ack| WriteCommand::UpdateChat { chat_id: self.chat_id.clone(), patch, ack })
                .await;
        }
        if let Some(pending) = self.pending_ask.take() {
            let _ = pending.reply.send(reply);
        }
        Ok(())
    }

    /// The CLI took the steering message: what was said so far becomes its own assistant
    /// message, the owner's words follow it, and the reply goes on as a new live message.
    async fn seal_for_steer(&mut self) {
        let Some((message, reply)) = self.pending_steer.take() else { return };
        self.live.close_running_tools("done");
        let sealed = self.live.to_body();
        let committed = self
            .state
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
                self.live = LiveMessage::new(now_ms());
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
        if let Some(pending) = self.pending_ask.take() {
            let _ = pending.reply.send(Reply::Deny("Stopped by the owner.".into()));
        }
        let _ = provider.control.try_send(Control::Interrupt);
        let finish =
            Finish { status: FinishStatus::Interrupted, error: None, usage: None, cost_usd: None, session_id: None };
        let outcome = self.finish(finish, true).await;
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
        if let Some(pending) = self.pending_ask.take() {
            let _ = pending.reply.send(Reply::Deny("The turn ended.".into()));
        }
        if let Some((_, reply)) = self.pending_steer.take() {
            let _ = reply.send(Ok(None));
        }
        let status = match (stopped, finish.status) {
            (true, _) => "stopped",
            (false, FinishStatus::Completed) => "completed",
            (false, FinishStatus::Failed) => "failed",
            (false, FinishStatus::Interrupted) => "interrupted",
        };
        if let Some(message) = &finish.error {
            self.live.apply(&event("error", json!({ "message": message, "resumable": true })));
        }
        self.live.close_running_tools(if stopped { "stopped" } else { "done" });
        let usage = finish.usage.clone().or_else(|| self.usage.clone());
        let end = db::chats::RunEnd {
            status: status.to_owned(),
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
            body: Some(self.live.to_body()),
            end,
            next_run_id: new_run_id(),
        };
        info!(run.id = %self.run_id, status, "turn ended");
        let reply =
            run.body.as_ref().and_then(|b| b.get("content")).and_then(Value::as_str).unwrap_or_default().to_owned();
        match self.state.writer.call(|ack| WriteCommand::FinishRun { finish: run, ack }).await {
            Ok(outcome) if !stopped && outcome.next.is_none() && matches!(status, "completed" | "failed") => {
                self.state.push.turn_ended(&self.chat_id, status == "failed", &reply, finish.error.as_deref());
                Outcome { next: None, cleared: outcome.cleared }
            }
            Ok(outcome) => Outcome {
                next: outcome.next.map(|(run_id, messages)| TurnStart {
                    chat_id: self.chat_id.clone(),
                    run_id,
                    messages,
                }),
                cleared: outcome.cleared,
            },
            Err(e) => {
                // Someone else (a stop, a delete) already closed this run: nothing more to write.
                info!(error = %e, "the run was already closed");
                Outcome { next: None, cleared: Vec::new() }
            }
        }
    }
}

/// A fresh run id: `rt-` + 32 hex.
pub fn new_run_id() -> String {
    format!("rt-{}", uuid::Uuid::new_v4().simple())
}

/// What ending a turn led to, as the turn runner sees it.
pub struct Outcome {
    pub next: Option<TurnStart>,
    pub cleared: Vec<String>,
}

/// Builds a user message object for answers delivered after a restart.
pub fn answers_text(questions: &[Value], answers: &Map<String, Value>) -> String {
    let mut lines = vec!["My answers to your questions:".to_owned()];
    for (question, answer) in answers {
        let answer = match answer {
            Value::String(s) => s.clone(),
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "),
            other => other.to_string(),
        };
        lines.push(format!("- {question}: {answer}"));
    }
    if questions.is_empty() && answers.is_empty() {
        lines.push("(no answer)".into());
    }
    lines.join("\n")
}
