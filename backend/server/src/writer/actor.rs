//! The actor loop: batching, savepoints, commit-then-ack-then-publish, snapshot coalescing.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sqlx::SqliteConnection;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tracing::{error, warn};

use super::batch::Batch;
use super::commands::{Ack, LiveSnapshot, RegenerateOutcome, SendOutcome, WriteCommand, WriterStats};
use crate::db::{self, now_ms};
use crate::error::{Domain, Error, Result};
use crate::events::{Hub, JournalEvent};
use crate::protocol::{ChatId, RunId};

/// Minimum spacing of live-snapshot writes for one chat.
pub const SNAPSHOT_INTERVAL: Duration = Duration::from_secs(1);
/// Most commands folded into one transaction.
const MAX_BATCH: usize = 256;
/// Quiet time after the last commit before the WAL is checkpointed and truncated to nothing
/// (under steady writes SQLite's own checkpoints and `journal_size_limit` bound it instead).
pub const CHECKPOINT_AFTER_IDLE: Duration = Duration::from_secs(2);
/// Imported messages given their search documents per transaction when the writer has nothing
/// else to do (a few milliseconds each, so commands never wait long behind an import's indexing).
const INDEX_BACKLOG_PER_TRANSACTION: i64 = 512;

/// A snapshot waiting for its chat's next write slot.
struct PendingSnapshot {
    run_id: RunId,
    body: String,
    upto_seq: i64,
    due: Instant,
}

pub(super) struct Actor {
    conn: SqliteConnection,
    hub: Arc<Hub>,
    rx: mpsc::Receiver<WriteCommand>,
    alive: Arc<AtomicBool>,
    stats: Arc<WriterStats>,
    pending: HashMap<ChatId, PendingSnapshot>,
    last_write: HashMap<ChatId, Instant>,
    /// Something was committed since the last full checkpoint.
    unchecked: bool,
    /// Imported messages may be waiting for their search documents (true at start: an import
    /// may have been committed just before the last shutdown).
    search_backlog: bool,
}

/// Marks the writer dead however the task ends (return, panic, abort).
struct AliveGuard(Arc<AtomicBool>);

impl Drop for AliveGuard {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Actor {
    pub(super) fn new(
        conn: SqliteConnection,
        hub: Arc<Hub>,
        rx: mpsc::Receiver<WriteCommand>,
        alive: Arc<AtomicBool>,
        stats: Arc<WriterStats>,
    ) -> Self {
        Self {
            conn,
            hub,
            rx,
            alive,
            stats,
            pending: HashMap::new(),
            last_write: HashMap::new(),
            unchecked: true,
            search_backlog: true,
        }
    }

    pub(super) async fn run(mut self) {
        let _guard = AliveGuard(self.alive.clone());
        let mut shutdown: Option<oneshot::Sender<()>> = None;
        loop {
            let next_due = self.pending.values().map(|p| p.due).min();
            let first = tokio::select! {
                biased;
                command = self.rx.recv() => command,
                // Only when no command waits (`biased`: commands come first).
                () = std::future::ready(()), if self.search_backlog => {
                    self.index_backlog().await;
                    continue;
                }
                () = sleep_until_opt(next_due), if next_due.is_some() => {
                    self.flush_snapshots(false).await;
                    continue;
                }
                () = tokio::time::sleep(CHECKPOINT_AFTER_IDLE), if self.unchecked && next_due.is_none() => {
                    self.checkpoint().await;
                    continue;
                }
            };
            let Some(first) = first else { break };
            let mut commands = vec![first];
            while commands.len() < MAX_BATCH {
                match self.rx.try_recv() {
                    Ok(command) => commands.push(command),
                    Err(_) => break,
                }
            }
            if let Some(done) = self.apply_batch(commands).await {
                // Take nothing new, but apply whatever was queued before the channel closed.
                self.rx.close();
                shutdown = Some(done);
            }
        }
        self.flush_snapshots(true).await;
        if let Some(done) = shutdown {
            let _ = done.send(());
        }
    }

    /// Applies one batch in one transaction. Returns the shutdown ack if the batch held one.
    async fn apply_batch(&mut self, commands: Vec<WriteCommand>) -> Option<oneshot::Sender<()>> {
        let mut batch = Batch::default();
        let mut shutdown = None;
        let mut broken = self.exec("BEGIN IMMEDIATE").await.err();
        // A lone command runs without a savepoint: when it fails the transaction is rolled back
        // instead, which undoes the same. A savepoint inside a transaction keeps a statement
        // journal, a copy of every page the command changes (~1 MB for a 2,000-message import).
        let alone = commands.len() == 1;
        let mut failed = false;
        for command in commands {
            self.stats.commands.fetch_add(1, Ordering::Relaxed);
            if let WriteCommand::Shutdown(done) = command {
                shutdown = Some(done);
                continue;
            }
            if broken.is_some() {
                // Its ack, dropped unanswered, tells the caller the transaction did not commit.
                drop(command);
                continue;
            }
            if alone {
                failed = !self.apply(command, &mut batch).await;
            } else if let Err(e) = self.apply_in_savepoint(command, &mut batch).await {
                broken = Some(e);
            }
        }
        let mut disk_full = batch.disk_full;
        let committed = match broken {
            // Its error is its answer; nothing else is in the transaction.
            None if failed => false,
            None => match self.exec("COMMIT").await {
                Ok(()) => true,
                Err(e) => {
                    disk_full |= e.is_disk_full();
                    error!(error = %e, "writer commit failed; rolling the batch back");
                    false
                }
            },
            Some(e) => {
                disk_full |= e.is_disk_full();
                error!(error = %e, "writer transaction broke; rolling the batch back");
                false
            }
        };
        if disk_full && !self.stats.disk_full.swap(true, Ordering::Relaxed) {
            error!("the disk is full: writes fail until space is freed");
        } else if committed && !disk_full && self.stats.disk_full.swap(false, Ordering::Relaxed) {
            tracing::info!("writes succeed again: the disk has room");
        }
        if !committed {
            let _ = self.exec("ROLLBACK").await;
        } else {
            self.stats.commits.fetch_add(1, Ordering::Relaxed);
            self.unchecked = true;
            self.search_backlog |= batch.search_backlog;
        }
        self.finish(batch, committed);
        shutdown
    }

    /// Resolves acks and, after a commit, publishes the batch's events.
    fn finish(&self, batch: Batch, committed: bool) {
        if committed {
            self.hub.bump_data_version();
        }
        if committed && batch.list_changed {
            self.hub.bump_list_version();
        }
        if committed && batch.schedules_changed {
            self.hub.bump_schedules();
        }
        if committed {
            let mut by_chat: Vec<(Arc<str>, Vec<Arc<JournalEvent>>)> = Vec::new();
            for (chat, event) in batch.events {
                match by_chat.last_mut() {
                    Some((last, events)) if *last == chat => events.push(event),
                    _ => by_chat.push((chat, vec![event])),
                }
            }
            for (chat, events) in by_chat {
                self.hub.publish(&chat, events);
            }
            for data in batch.system {
                self.hub.publish_system(data);
            }
        }
        for completion in batch.completions {
            completion(committed);
        }
    }

    /// Runs one command inside a savepoint. A command error rolls back only that command;
    /// an `Err` return means the transaction itself is unusable.
    async fn apply_in_savepoint(&mut self, command: WriteCommand, batch: &mut Batch) -> Result<()> {
        self.exec("SAVEPOINT cmd").await?;
        let events_mark = batch.events.len();
        let system_mark = batch.system.len();
        let pending_before = batch.completions.len();
        let ok = self.apply(command, batch).await;
        if ok {
            self.exec("RELEASE cmd").await?;
        } else {
            self.exec("ROLLBACK TO cmd").await?;
            self.exec("RELEASE cmd").await?;
            batch.events.truncate(events_mark);
            batch.system.truncate(system_mark);
        }
        debug_assert!(batch.completions.len() <= pending_before + 1);
        Ok(())
    }

    /// Applies one command; returns whether it succeeded (its ack is queued either way).
    async fn apply(&mut self, command: WriteCommand, batch: &mut Batch) -> bool {
        match command {
            WriteCommand::CreateOwner { username, password_hash, ack } => {
                let result = match db::owner::insert(&mut self.conn, &username, &password_hash, now_ms()).await {
                    Err(e) if e.is_unique_violation() => Err(Domain::AlreadyConfigured.into()),
                    other => other,
                };
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::BumpTokenEpoch { password_hash, ack } => {
                let result = match db::owner::bump_token_epoch(&mut self.conn, now_ms()).await {
                    Ok(Some(epoch)) => {
                        let password = match password_hash {
                            Some(hash) => db::owner::set_password(&mut self.conn, &hash, now_ms()).await,
                            None => Ok(()),
                        };
                        match password {
                            Ok(()) => db::owner::forget_devices(&mut self.conn).await.map(|()| epoch),
                            Err(e) => Err(e),
                        }
                    }
                    Ok(None) => Err(Domain::NotConfigured.into()),
                    Err(e) => Err(e),
                };
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::RememberDevice { sign_in, keep, ack } => {
                let result = db::owner::remember_device(&mut self.conn, &sign_in, keep, now_ms()).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::ForgetDevice { id, ack } => {
                let result = db::owner::forget_device(&mut self.conn, id).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::TouchSessions { seen, ack } => {
                let result = db::owner::touch_sessions(&mut self.conn, &seen).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::CreateChat { chat, ack } => {
                let result = super::chat::create(&mut self.conn, batch, chat).await;
                reply(batch, ack, result, Stale::LIST)
            }
            WriteCommand::Emit { chat_id, run_id, events, ack } => {
                let result = super::chat::emit(&mut self.conn, batch, &chat_id, run_id.as_ref(), events).await;
                match ack {
                    Some(ack) => reply(batch, ack, result, Stale::NOTHING),
                    None => batch.noted(&result),
                }
            }
            WriteCommand::StartRun { run, ack } => {
                let result = super::chat::start_run(&mut self.conn, batch, &run).await.map(|_| ());
                if result.is_ok() {
                    self.pending.remove(&run.chat_id);
                }
                reply(batch, ack, result, Stale::LIST)
            }
            WriteCommand::Send { send, ack } => {
                let chat_id = send.chat_id.clone();
                let result = super::chat::send(&mut self.conn, batch, send).await;
                if matches!(result, Ok(SendOutcome::Started(_))) {
                    self.pending.remove(&chat_id);
                }
                reply(batch, ack, result, Stale::LIST)
            }
            WriteCommand::Regenerate { regenerate, ack } => {
                let chat_id = regenerate.chat_id.clone();
                let result = super::chat::regenerate(&mut self.conn, batch, regenerate).await;
                if matches!(result, Ok(RegenerateOutcome::Started(_))) {
                    self.pending.remove(&chat_id);
                }
                reply(batch, ack, result, Stale::LIST)
            }
            WriteCommand::UpdatePending { chat_id, cid, content, ack } => {
                let result = super::chat::update_pending(&mut self.conn, batch, &chat_id, &cid, &content).await;
                reply(batch, ack, result, Stale::LIST)
            }
            WriteCommand::ClearQueue { chat_id, ack } => {
                let result = super::chat::clear_queue(&mut self.conn, batch, &chat_id).await;
                reply(batch, ack, result, Stale::LIST)
            }
            WriteCommand::CancelPending { chat_id, cid, ack } => {
                let result = super::chat::cancel_pending(&mut self.conn, batch, &chat_id, &cid).await;
                reply(batch, ack, result, Stale::LIST)
            }
            WriteCommand::QuestionCommit { chat_id, run_id, card, live, ack } => {
                // The strict write supersedes any snapshot still waiting for its slot.
                self.pending.remove(&chat_id);
                let result = super::chat::question_commit(&mut self.conn, batch, &chat_id, &run_id, card, &live).await;
                reply(batch, ack, result, Stale::LIST)
            }
            WriteCommand::AnswerQuestion { chat_id, question_id, answers, ack } => {
                let result =
                    super::chat::answer_question(&mut self.conn, batch, &chat_id, &question_id, &answers).await;
                reply(batch, ack, result, Stale::LIST)
            }
            WriteCommand::FinishRun { finish: run, ack } => {
                self.pending.remove(&run.chat_id);
                let result = super::chat::finish_run(&mut self.conn, batch, run).await;
                reply(batch, ack, result, Stale::LIST)
            }
            WriteCommand::SteerCommit { chat_id, run_id, message, sealed, ack } => {
                self.pending.remove(&chat_id);
                let result =
                    super::chat::steer_commit(&mut self.conn, batch, &chat_id, &run_id, &message, sealed).await;
                reply(batch, ack, result, Stale::LIST)
            }
            WriteCommand::RecordSession { chat_id, run_id, session_id } => {
                db::chats::set_session(&mut self.conn, &chat_id, &run_id, &session_id).await.is_ok()
            }
            WriteCommand::StashToolOutput { chat_id, tool_use_id, content } => {
                db::messages::stash_tool_output(&mut self.conn, &chat_id, &tool_use_id, &content, now_ms())
                    .await
                    .is_ok()
            }
            WriteCommand::UpdateChat { chat_id, patch, ack } => {
                let result = super::chat::update_chat(&mut self.conn, batch, &chat_id, patch).await;
                reply(batch, ack, result, Stale::LIST)
            }
            WriteCommand::DeleteChat { chat_id, ack } => {
                self.pending.remove(&chat_id);
                let result = super::chat::delete_chat(&mut self.conn, batch, &chat_id).await;
                reply(batch, ack, result, Stale::LIST_AND_SCHEDULES)
            }
            WriteCommand::RecoverChat { chat_id, cutoff, ack } => {
                let result = super::chat::recover_chat(&mut self.conn, batch, &chat_id, cutoff).await;
                reply(batch, ack, result, Stale::LIST_AND_SCHEDULES)
            }
            WriteCommand::PurgeDeleted { cutoff, ack } => {
                let result = db::chats::purge_deleted(&mut self.conn, cutoff).await;
                reply(batch, ack, result, Stale::LIST_AND_SCHEDULES)
            }
            WriteCommand::FileAdd { file, quota, ack } => {
                let result = super::uploads::add(&mut self.conn, &file, quota).await;
                reply(batch, ack, result, Stale::LIST)
            }
            WriteCommand::FileRemove { chat_id, kind, name, ack } => {
                let result = db::uploads::delete(&mut self.conn, &chat_id, kind, &name).await;
                reply(batch, ack, result, Stale::LIST)
            }
            WriteCommand::ReconcileStartup { resume, ack } => {
                let result = super::chat::reconcile_startup(&mut self.conn, batch, &resume).await;
                reply(batch, ack, result, Stale::LIST)
            }
            WriteCommand::Handoff { chat_id, card, agent_settings, ack } => {
                let result = super::chat::handoff(&mut self.conn, batch, &chat_id, card, agent_settings).await;
                reply(batch, ack, result, Stale::LIST)
            }
            WriteCommand::Resume { chat_id, run_id, now, start, ack } => {
                let result = super::chat::resume(&mut self.conn, batch, &chat_id, run_id, now, start).await;
                if matches!(result, Ok(Some(_))) {
                    self.pending.remove(&chat_id);
                }
                reply(batch, ack, result, Stale::LIST)
            }
            WriteCommand::PinPrompt { chat_id, id, content, ack } => {
                let result = db::chats::pin_prompt(&mut self.conn, &chat_id, &id, &content, now_ms()).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::SetGoal { chat_id, objective, ack } => {
                let result = super::goals::set(&mut self.conn, batch, &chat_id, &objective).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::DismissGoal { chat_id, ack } => {
                let result = super::goals::dismiss(&mut self.conn, batch, &chat_id).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::SetNote { chat_id, note, ack } => {
                let result = super::notes::set_note(&mut self.conn, batch, &chat_id, note).await;
                reply(batch, ack, result, Stale::LIST)
            }
            WriteCommand::SetMemoryEnabled { on, ack } => {
                let result = db::notes::set_memory_enabled(&mut self.conn, on, now_ms()).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::SetDefaultProvider { provider, ack } => {
                let result = db::owner::set_default_provider(&mut self.conn, provider.map(|p| p.id()), now_ms()).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::RecordLimits { provider, windows } => {
                db::usage::set_limits(&mut self.conn, provider.id(), &windows, now_ms()).await.is_ok()
            }
            WriteCommand::SetAgentDefaults { defaults, ack } => {
                let result = db::owner::set_agent_defaults(&mut self.conn, &defaults, now_ms()).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::AppReserve { slug, name, nonce, ack } => {
                let result = match db::apps::insert(&mut self.conn, &slug, &name, &nonce, now_ms()).await {
                    Err(e) if e.is_unique_violation() => Err(Domain::AppIdTaken(slug).into()),
                    other => other,
                };
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::AppRecordApply { id, applied, created, ack } => {
                let result = super::apps::record_apply(&mut self.conn, batch, id, &applied, created).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::AppForgetUnbuilt { id, ack } => {
                let result = db::apps::forget_unbuilt(&mut self.conn, id).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::AppPatch { id, patch, ack } => {
                let result = super::apps::patch(&mut self.conn, batch, id, &patch).await;
                reply(batch, ack, result, Stale::SCHEDULES)
            }
            WriteCommand::AppSecretPut { app_id, name, sealed, max, ack } => {
                let result = match db::apps::put_secret(&mut self.conn, app_id, &name, &sealed, max, now_ms()).await {
                    Ok(true) => Ok(()),
                    Ok(false) => Err(Domain::TooManySecrets(max).into()),
                    Err(e) => Err(e),
                };
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::ActivityAppend { app_id, ev, data, keep, ack } => {
                let result = db::activity::append(&mut self.conn, app_id, &ev, &data, keep, now_ms()).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::AppSecretDelete { app_id, name, ack } => {
                let result = db::apps::delete_secret(&mut self.conn, app_id, &name).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::ConnectorCreate { connector, max, ack } => {
                let result = match db::connectors::insert(&mut self.conn, &connector, max, now_ms()).await {
                    Ok(Some(id)) => Ok(id),
                    Ok(None) => Err(Domain::TooManyConnectors(max).into()),
                    Err(e) if e.is_unique_violation() => Err(Domain::ConnectorNameTaken(connector.name).into()),
                    Err(e) => Err(e),
                };
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::ConnectorUpdate { id, patch, ack } => {
                let result = db::connectors::update(&mut self.conn, id, &patch, now_ms()).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::SitePut { site, max, ack } => {
                let result = match db::published::put(&mut self.conn, &site, max, now_ms()).await {
                    Ok(db::published::Put::Replaced(previous)) => Ok(Some(previous)),
                    Ok(db::published::Put::Created) => Ok(None),
                    Ok(db::published::Put::Full) => Err(Domain::TooManySites(max).into()),
                    Err(e) => Err(e),
                };
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::SiteDelete { app_id, ack } => {
                let result = db::published::delete(&mut self.conn, app_id).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::ConnectorDelete { id, ack } => {
                let result = db::connectors::delete(&mut self.conn, id).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::ChatConnectorsSet { chat_id, ids, ack } => {
                let result = db::connectors::set_chosen(&mut self.conn, &chat_id, &ids).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::GithubConnect { token, login, ack } => {
                let result = db::github::connect(&mut self.conn, &token, &login, now_ms()).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::GithubDisconnect { ack } => {
                let result = db::github::disconnect(&mut self.conn).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::GithubReposSet { repos, ack } => {
                let result = db::github::set_repos(&mut self.conn, &repos, now_ms()).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::GithubRequestLog { request, keep, ack } => {
                let result = db::github::log_request(&mut self.conn, &request, keep, now_ms()).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::EmbedGrantMint { grant, ack } => {
                let result = super::apps::mint_grant(&mut self.conn, &grant).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::EmbedGrantExchange { id, instance_id, session_expires_at, ack } => {
                let result = super::apps::exchange_grant(&mut self.conn, &id, &instance_id, session_expires_at).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::EmbedRevoke { app_id, chat_id, instance_id, ack } => {
                let result = db::embeds::revoke(&mut self.conn, app_id, &chat_id, &instance_id, now_ms()).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::AppAdopt { id, slug, ack } => {
                let result = super::apps::adopt(&mut self.conn, batch, id, &slug).await;
                reply(batch, ack, result, Stale::SCHEDULES)
            }
            WriteCommand::Push { op, ack } => {
                let result = super::push::apply(&mut self.conn, batch, op).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::Schedule { op, ack } => {
                let result = super::schedules::apply(&mut self.conn, batch, op).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::ScheduleFinish { run_id, end, failed, ack } => {
                let result = super::schedules::finish(&mut self.conn, batch, run_id, &end, failed).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::AppPurge { cutoff, keep, ack } => {
                let result = db::apps::purge_deleted(&mut self.conn, cutoff, &keep).await;
                reply(batch, ack, result, Stale::SCHEDULES)
            }
            WriteCommand::AppDeleteSecrets { app_id, ack } => {
                let result = db::apps::delete_secrets(&mut self.conn, app_id).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::InstallPassMint { pass, ack } => {
                let now = now_ms();
                let result = db::apps::insert_install_pass(&mut self.conn, &pass, now - 24 * 3600 * 1000).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::InstallPassRedeem { id, ack } => {
                let result = db::apps::consume_install_pass(&mut self.conn, &id, now_ms()).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::SetCatalogIndexes { indexes, ack } => {
                let result = db::owner::set_catalog_indexes(&mut self.conn, indexes.as_deref(), now_ms()).await;
                reply(batch, ack, result, Stale::NOTHING)
            }
            WriteCommand::SnapshotLive(snapshot) => self.snapshot(snapshot).await,
            WriteCommand::Barrier(ack) => reply(batch, ack, Ok(()), Stale::NOTHING),
            WriteCommand::Shutdown(_) => true,
        }
    }

    /// Records a snapshot; writes it now if the chat's slot is free, else keeps the latest.
    async fn snapshot(&mut self, snapshot: LiveSnapshot) -> bool {
        self.stats.snapshots_received.fetch_add(1, Ordering::Relaxed);
        let upto_seq = match db::journal::head_seq(&mut self.conn, &snapshot.chat_id).await {
            Ok(Some(seq)) => seq,
            Ok(None) => return false,
            Err(e) => {
                warn!(error = %e, "could not read the journal head for a snapshot");
                return false;
            }
        };
        let now = Instant::now();
        let due = self.last_write.get(&snapshot.chat_id).map_or(now, |t| *t + SNAPSHOT_INTERVAL);
        let chat_id = snapshot.chat_id.clone();
        self.pending
            .insert(snapshot.chat_id, PendingSnapshot { run_id: snapshot.run_id, body: snapshot.body, upto_seq, due });
        if due <= now { self.write_snapshot(&chat_id, now).await } else { true }
    }

    async fn write_snapshot(&mut self, chat_id: &ChatId, now: Instant) -> bool {
        let Some(p) = self.pending.remove(chat_id) else { return true };
        self.last_write.insert(chat_id.clone(), now);
        self.stats.snapshot_writes.fetch_add(1, Ordering::Relaxed);
        match db::runs::update_live(&mut self.conn, chat_id, &p.run_id, &p.body, p.upto_seq, now_ms()).await {
            Ok(_) => true,
            Err(e) => {
                if e.is_disk_full() {
                    self.stats.disk_full.store(true, Ordering::Relaxed);
                }
                warn!(error = %e, "live snapshot write failed");
                false
            }
        }
    }

    /// Writes due snapshots (or all of them) in their own transaction.
    async fn flush_snapshots(&mut self, all: bool) {
        let now = Instant::now();
        let due: Vec<ChatId> =
            self.pending.iter().filter(|(_, p)| all || p.due <= now).map(|(chat, _)| chat.clone()).collect();
        self.last_write.retain(|_, t| now.duration_since(*t) < SNAPSHOT_INTERVAL * 4);
        if due.is_empty() {
            return;
        }
        if let Err(e) = self.exec("BEGIN IMMEDIATE").await {
            error!(error = %e, "could not begin a snapshot flush");
            return;
        }
        for chat in due {
            self.write_snapshot(&chat, now).await;
        }
        if let Err(e) = self.exec("COMMIT").await {
            if e.is_disk_full() {
                self.stats.disk_full.store(true, Ordering::Relaxed);
            }
            error!(error = %e, "snapshot flush commit failed");
            let _ = self.exec("ROLLBACK").await;
        } else {
            self.stats.commits.fetch_add(1, Ordering::Relaxed);
            self.unchecked = true;
            self.hub.bump_data_version();
        }
    }

    /// Copies the WAL into the database and truncates it to nothing. When a reader is in the
    /// way the next quiet spell tries again.
    /// Gives one transaction's worth of imported messages their search documents; stops asking
    /// once none wait (or on an error: the next import, or the next start, tries again).
    async fn index_backlog(&mut self) {
        // At start there is usually nothing: a read says so without a write transaction (and
        // without compiling the full-text triggers), which kept the first boot steps waiting.
        match db::search::indexing(&mut self.conn).await {
            Ok(false) => {
                self.search_backlog = false;
                return;
            }
            Ok(true) => {}
            Err(e) => warn!(error = %e, "cannot tell whether imported messages wait for the search index"),
        }
        let result = async {
            self.exec("BEGIN IMMEDIATE").await?;
            let worked = db::search::index_backlog(&mut self.conn, INDEX_BACKLOG_PER_TRANSACTION).await?;
            self.exec("COMMIT").await?;
            Ok::<bool, Error>(worked)
        }
        .await;
        match result {
            Ok(worked) => {
                self.unchecked |= worked;
                self.search_backlog = worked;
            }
            Err(e) => {
                let _ = self.exec("ROLLBACK").await;
                self.search_backlog = false;
                warn!(error = %e, "indexing imported messages for search failed; retried after the next import or start");
            }
        }
    }

    async fn checkpoint(&mut self) {
        let outcome: std::result::Result<(i64, i64, i64), sqlx::Error> =
            sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)").fetch_one(&mut self.conn).await;
        match outcome {
            Ok((0, _, _)) => {
                self.unchecked = false;
                self.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
            }
            Ok(_) => tracing::debug!("the WAL checkpoint waits for a reader; trying again later"),
            Err(e) => {
                // Not worth a retry loop: SQLite's own checkpoints still bound the WAL.
                self.unchecked = false;
                warn!(error = %e, "the WAL checkpoint failed");
            }
        }
    }

    async fn exec(&mut self, sql: &'static str) -> Result<()> {
        sqlx::query(sql).execute(&mut self.conn).await?;
        Ok(())
    }
}

/// What a command's success makes stale for readers that cache (besides the data version).
#[derive(Clone, Copy)]
struct Stale {
    /// A field the chat list shows (`Hub::bump_list_version`).
    list: bool,
    /// A schedule, or what decides whether one is due: its chat's or its app's deletion.
    schedules: bool,
}

impl Stale {
    const NOTHING: Self = Self { list: false, schedules: false };
    const LIST: Self = Self { list: true, schedules: false };
    const SCHEDULES: Self = Self { list: false, schedules: true };
    const LIST_AND_SCHEDULES: Self = Self { list: true, schedules: true };
}

/// Queues an ack with its result and, when it succeeded, marks what it made stale; returns
/// whether the command succeeded.
fn reply<T: Send + 'static>(batch: &mut Batch, ack: Ack<T>, result: Result<T>, stale: Stale) -> bool {
    let ok = result.is_ok();
    if ok {
        batch.list_changed |= stale.list;
        batch.schedules_changed |= stale.schedules;
    }
    batch.complete(ack, result);
    ok
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
