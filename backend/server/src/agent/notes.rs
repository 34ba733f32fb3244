//! The note turn: when a chat has been idle a while, a quiet agent process (`quiet.rs`) writes
//! its note; what a note is, how one is read and when one is due live in `recall::notes`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sqlx::SqlitePool;
use tracing::{Instrument, info, info_span, warn};

use super::quiet;
use crate::db;
use crate::error::Result;
use crate::protocol::ChatId;
use crate::providers::Providers;
use crate::recall::notes::{
    FIRST_NOTE_DELAY, MAX_NOTE_LINES, MAX_NOTE_TURN, NoteReceiver, fallback, instructions, note_input, parse, render,
    schedule,
};
use crate::writer::{NoteWrite, WriteCommand, WriterHandle};

/// What note turns use.
pub struct NoteRunner {
    pub read: SqlitePool,
    pub writer: WriterHandle,
    pub providers: Arc<Providers>,
    pub data_dir: PathBuf,
    /// The agent's sandbox: a note turn runs confined like every turn.
    pub sandbox: super::sandbox::Sandbox,
    /// How long a chat stays idle before its note is written.
    pub idle: Duration,
}

impl NoteRunner {
    /// Runs until every [`NoteSignals`] is gone.
    pub async fn run(self, receiver: NoteReceiver) {
        let runner = Arc::new(self);
        let delays = runner.clone();
        let delay_for = move |id: ChatId| {
            let runner = delays.clone();
            async move {
                match db::notes::get(&runner.read, &id).await {
                    Ok(None) => runner.idle.min(FIRST_NOTE_DELAY),
                    _ => runner.idle,
                }
            }
        };
        let start = move |id: ChatId| {
            let span = info_span!(parent: None, "note", chat.id = %id);
            tokio::spawn(runner.clone().write_note(id).instrument(span))
        };
        schedule(receiver, delay_for, start).await;
    }

    /// One note turn for `chat_id`; failures are logged, never shown.
    async fn write_note(self: Arc<Self>, chat_id: ChatId) {
        match self.try_write_note(&chat_id).await {
            Ok(true) => info!("chat note written"),
            Ok(false) => {}
            Err(e) => warn!(error = %e, "the chat note could not be written"),
        }
    }

    async fn try_write_note(&self, chat_id: &ChatId) -> Result<bool> {
        let Some(state) = db::notes::state(&self.read, chat_id).await? else { return Ok(false) };
        if state.deleted || state.running {
            return Ok(false);
        }
        let Some(provider) = state.provider else { return Ok(false) };
        let existing = db::notes::get(&self.read, chat_id).await?;
        let from = existing.as_ref().map_or(0, |n| n.source_count);
        if state.message_count <= from {
            return Ok(false);
        }
        let lines = db::notes::transcript_since(&self.read, chat_id, from, MAX_NOTE_LINES).await?;
        if lines.is_empty() {
            return Ok(false);
        }
        let previous = existing.as_ref().map(|n| n.summary.as_str()).unwrap_or_default();
        let transcript = render(&lines);
        let asked = quiet::run(
            &self.providers,
            &self.sandbox,
            provider,
            chat_id,
            &self.data_dir,
            quiet::QuietAsk {
                system_prompt: instructions(),
                prompt: note_input(previous, &transcript),
                timeout: MAX_NOTE_TURN,
            },
        )
        .await;
        let parsed = match asked {
            Ok(text) => parse(&text),
            Err(e) => {
                info!(error = %e, "the note turn failed; writing an extractive note");
                None
            }
        };
        let note = parsed.unwrap_or_else(|| fallback(previous, &lines));
        let write = NoteWrite {
            digest: note.digest,
            summary: note.summary,
            title: note.title.filter(|_| existing.is_none()),
            expect_count: Some(state.message_count),
        };
        self.writer.call(|ack| WriteCommand::SetNote { chat_id: chat_id.clone(), note: write, ack }).await
    }
}
