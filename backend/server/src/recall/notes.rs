//! Chat notes: when a chat has been idle for a while after new turns, a short tool-less turn
//! on the chat's provider (its cheapest model) writes the chat's digest and running summary.
//!
//! One task (`agent::notes::NoteRunner::run`) keeps a due time per chat from the turn signals
//! ([`NoteSignals`]): a settled chat is due after the idle delay (its first note sooner, so a
//! new chat gets its title quickly); a turn that starts takes the chat off the list and ends
//! its note turn if one is running (the owner's turn wins; the note waits for the next idle
//! spell). One note turn runs at a time, bounded in time by [`MAX_NOTE_TURN`] and in output
//! by the quiet turn's own cap. The result is stored only if the transcript is still what the
//! turn read (`WriteCommand::SetNote` compares).

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::info;

use super::{MAX_DIGEST_CHARS, MAX_NOTE_TITLE_CHARS, MAX_SUMMARY_CHARS, cut_chars};
use crate::db;
use crate::protocol::ChatId;

/// Longest a note turn may take before it is ended (and the note left as it was).
pub const MAX_NOTE_TURN: Duration = Duration::from_secs(120);
/// A chat's first note is due this soon after its first turn (or after the idle delay, if shorter).
pub const FIRST_NOTE_DELAY: Duration = Duration::from_secs(10);
/// Signals waiting for the note task; more are dropped (a dropped start only costs a note
/// turn that the compare-and-swap then refuses).
const SIGNAL_QUEUE: usize = 256;
/// Chats waiting for their note; beyond this the oldest wait is dropped.
const MAX_DUE_CHATS: usize = 1024;
/// Transcript lines one note turn reads at most.
pub const MAX_NOTE_LINES: i64 = 400;
/// The transcript part of a note turn's input, in characters.
const MAX_NOTE_INPUT_CHARS: usize = 24_000;
/// One message's part of it, in characters.
const MAX_LINE_CHARS: usize = 2_000;
/// Marks a note turn's instructions (the scripted model servers of the tests look for it).
pub const NOTE_MARKER: &str = "mobius-chat-note";

/// What turns tell the note task.
#[derive(Debug)]
enum Signal {
    Started(ChatId),
    Settled(ChatId),
}

/// The sending side, held by the turns (`agent::turn::Agents`).
#[derive(Clone, Debug)]
pub struct NoteSignals {
    /// `None`: chat notes are off.
    tx: Option<mpsc::Sender<Signal>>,
}

impl NoteSignals {
    /// A pair: the signals for the turns, and the receiver for the note task (`agent::notes::NoteRunner::run`).
    pub fn channel() -> (Self, NoteReceiver) {
        let (tx, rx) = mpsc::channel(SIGNAL_QUEUE);
        (Self { tx: Some(tx) }, NoteReceiver(rx))
    }

    /// Signals that go nowhere (chat notes are off).
    pub fn off() -> Self {
        Self { tx: None }
    }

    /// A turn of `chat_id` starts: its note waits, and a note turn in progress ends.
    pub fn started(&self, chat_id: &ChatId) {
        if let Some(tx) = &self.tx {
            let _ = tx.try_send(Signal::Started(chat_id.clone()));
        }
    }

    /// The turns of `chat_id` are over for now: its note is due after the idle delay.
    pub fn settled(&self, chat_id: &ChatId) {
        if let Some(tx) = &self.tx {
            let _ = tx.try_send(Signal::Settled(chat_id.clone()));
        }
    }
}

/// The receiving side of [`NoteSignals`].
#[derive(Debug)]
pub struct NoteReceiver(mpsc::Receiver<Signal>);

/// The note task's loop: a due time per chat, one job at a time, a started turn ends its
/// chat's job. `delay_for` says how long a settled chat waits; `start` starts its job.
pub async fn schedule<D, F, S>(NoteReceiver(mut rx): NoteReceiver, delay_for: D, mut start: S)
where
    D: Fn(ChatId) -> F,
    F: std::future::Future<Output = Duration>,
    S: FnMut(ChatId) -> JoinHandle<()>,
{
    // When each chat is due, and in what order it became due (ties go to the first).
    let mut due: HashMap<ChatId, (Instant, u64)> = HashMap::new();
    let mut seq = 0u64;
    let mut running: Option<(ChatId, JoinHandle<()>)> = None;
    loop {
        let next = due.iter().min_by_key(|(_, at)| **at).map(|(id, (at, _))| (id.clone(), *at));
        let wake = next.as_ref().map_or_else(|| Instant::now() + Duration::from_secs(3600), |(_, at)| *at);
        tokio::select! {
            signal = rx.recv() => match signal {
                None => break,
                Some(Signal::Started(id)) => {
                    due.remove(&id);
                    if running.as_ref().is_some_and(|(chat, _)| *chat == id)
                        && let Some((_, job)) = running.take()
                    {
                        job.abort();
                        info!(chat.id = %id, "a turn started: the note turn gave way");
                    }
                }
                Some(Signal::Settled(id)) => {
                    let delay = delay_for(id.clone()).await;
                    if due.len() >= MAX_DUE_CHATS
                        && !due.contains_key(&id)
                        && let Some(oldest) = due.iter().min_by_key(|(_, at)| **at).map(|(id, _)| id.clone())
                    {
                        due.remove(&oldest);
                    }
                    seq += 1;
                    due.insert(id, (Instant::now() + delay, seq));
                }
            },
            () = tokio::time::sleep_until(wake), if running.is_none() && next.is_some() => {
                if let Some((id, _)) = next {
                    due.remove(&id);
                    running = Some((id.clone(), start(id)));
                }
            }
            () = finished(&mut running) => running = None,
        }
    }
    if let Some((_, job)) = running {
        job.abort();
    }
}

/// Resolves when the running note turn ends (never while none runs).
async fn finished(running: &mut Option<(ChatId, JoinHandle<()>)>) {
    match running {
        Some((_, job)) => {
            let _ = job.await;
        }
        None => std::future::pending().await,
    }
}

/// The note turn's instructions.
pub fn instructions() -> String {
    format!(
        "You write the private notes ({NOTE_MARKER}) of one chat between the owner and their coding agent. \
         You have no tools and you do not continue the conversation. Reply in exactly this form and nothing else:\n\
         TITLE: <a short title for the chat, at most six words, no quotes>\n\
         DIGEST: <one to three short lines: the topic, what was made, where it stands>\n\
         SUMMARY:\n<the running summary: the previous summary updated with the new messages — goals, decisions, \
         what was built and where, open questions, the next step; at most a few paragraphs>"
    )
}

/// The note turn's input: the previous summary and the new messages.
pub fn note_input(previous: &str, transcript: &str) -> String {
    let previous = previous.trim();
    let previous = if previous.is_empty() { "(none yet)" } else { previous };
    format!("Previous summary:\n{previous}\n\nNew messages:\n{transcript}")
}

/// The new messages as `Owner:` / `Agent:` paragraphs, within [`MAX_NOTE_INPUT_CHARS`]: the
/// first message (what the chat is about) and as many of the latest as fit.
pub fn render(lines: &[db::notes::Line]) -> String {
    let para = |l: &db::notes::Line| {
        let who = if l.role == "user" { "Owner" } else { "Agent" };
        format!("{who}: {}", cut_chars(l.text.trim(), MAX_LINE_CHARS))
    };
    let mut parts: Vec<String> = lines.iter().map(para).collect();
    let mut total: usize = parts.iter().map(|p| p.chars().count() + 2).sum();
    while total > MAX_NOTE_INPUT_CHARS && parts.len() > 2 {
        total -= parts[1].chars().count() + 2;
        parts.remove(1);
    }
    parts.join("\n\n")
}

/// A note as written by a note turn (or built without one).
#[derive(Debug, PartialEq)]
pub struct ParsedNote {
    pub title: Option<String>,
    pub digest: String,
    pub summary: String,
}

/// Reads a note turn's reply; `None` when it is not in the asked form.
pub fn parse(reply: &str) -> Option<ParsedNote> {
    let mut title = None;
    let mut digest: Vec<&str> = Vec::new();
    let mut summary: Vec<&str> = Vec::new();
    enum Part {
        None,
        Digest,
        Summary,
    }
    let mut part = Part::None;
    for line in reply.lines() {
        // Labels may come in Markdown emphasis or as headings (`**TITLE:**`, `## Digest:`).
        let trimmed = line.trim().trim_start_matches(['*', '#', ' ']);
        let upper: String = trimmed.chars().take(8).collect::<String>().to_ascii_uppercase();
        let after = |label: usize| trimmed[label..].trim().trim_matches('*').trim();
        if upper.starts_with("TITLE:") {
            title = Some(after(6).trim_matches(['"', '#']).trim().to_owned());
            part = Part::None;
        } else if upper.starts_with("DIGEST:") {
            digest.push(after(7));
            part = Part::Digest;
        } else if upper.starts_with("SUMMARY:") {
            summary.push(after(8));
            part = Part::Summary;
        } else {
            match part {
                Part::Digest => digest.push(trimmed),
                Part::Summary => summary.push(line.trim_end()),
                Part::None => {}
            }
        }
    }
    let digest_lines: Vec<&str> = digest.into_iter().filter(|l| !l.is_empty()).take(3).collect();
    let digest = cut_chars(&digest_lines.join("\n"), MAX_DIGEST_CHARS);
    if digest.is_empty() {
        return None;
    }
    let summary = cut_chars(summary.join("\n").trim(), MAX_SUMMARY_CHARS);
    let title = title.map(|t| cut_chars(&t, MAX_NOTE_TITLE_CHARS)).filter(|t| !t.is_empty());
    Some(ParsedNote { title, digest, summary })
}

/// A note built from the transcript itself, when the provider could not write one: the
/// digest is the chat's first request and the agent's latest words, the summary the previous
/// one plus the new messages (both within their limits). No title.
pub fn fallback(previous: &str, lines: &[db::notes::Line]) -> ParsedNote {
    let first_line = |text: &str| text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default().to_owned();
    let asked = lines.iter().find(|l| l.role == "user").map(|l| first_line(&l.text)).unwrap_or_default();
    let said = lines.iter().rev().find(|l| l.role != "user").map(|l| first_line(&l.text)).unwrap_or_default();
    let digest_lines: Vec<String> =
        [cut_chars(&asked, 200), cut_chars(&said, 200)].into_iter().filter(|l| !l.is_empty()).collect();
    let mut summary = previous.trim().to_owned();
    let new = render(lines);
    if !summary.is_empty() {
        summary.push_str("\n\n");
    }
    summary.push_str(&new);
    // The newest part of the summary matters most when it is too long.
    let count = summary.chars().count();
    let summary: String =
        if count > MAX_SUMMARY_CHARS { summary.chars().skip(count - MAX_SUMMARY_CHARS).collect() } else { summary };
    ParsedNote { title: None, digest: cut_chars(&digest_lines.join("\n"), MAX_DIGEST_CHARS), summary }
}

#[cfg(test)]
mod tests {
    use super::*;
    use db::notes::Line;

    fn line(idx: i64, role: &str, text: &str) -> Line {
        Line { idx, role: role.into(), text: text.into() }
    }

    #[test]
    fn a_reply_in_the_asked_form_is_read_and_bounded() {
        let reply = "TITLE: \"Garden planner\"\nDIGEST: Built a garden planner app.\nIt tracks beds.\nThird.\nFourth.\n\
                     SUMMARY:\nThe owner wanted a planner.\n\n- beds: 4";
        let note = parse(reply).expect("parsed");
        assert_eq!(note.title.as_deref(), Some("Garden planner"));
        assert_eq!(note.digest, "Built a garden planner app.\nIt tracks beds.\nThird.");
        assert_eq!(note.summary, "The owner wanted a planner.\n\n- beds: 4");
        assert!(parse("Sure! Here is a summary of the chat.").is_none(), "no digest, no note");
        let long = format!("DIGEST: {}\nSUMMARY: {}", "d".repeat(5000), "s".repeat(50_000));
        let note = parse(&long).expect("long");
        assert_eq!(note.digest.chars().count(), MAX_DIGEST_CHARS);
        assert_eq!(note.summary.chars().count(), MAX_SUMMARY_CHARS);
        assert_eq!(note.title, None);
    }

    #[test]
    fn the_fallback_digest_names_the_request_and_the_latest_answer() {
        let lines = [line(0, "user", "Make a todo app\nwith tags"), line(1, "assistant", "Done: apps/todo.")];
        let note = fallback("Earlier work.", &lines);
        assert_eq!(note.digest, "Make a todo app\nDone: apps/todo.");
        assert!(note.summary.starts_with("Earlier work.\n\nOwner: Make a todo app"));
        assert_eq!(note.title, None);
    }

    #[test]
    fn the_input_keeps_the_first_message_and_the_latest_within_its_bound() {
        let mut lines = vec![line(0, "user", "the very first request")];
        lines.extend((1..200).map(|i| line(i, "assistant", &format!("{i} {}", "x".repeat(1000)))));
        let text = render(&lines);
        assert!(text.chars().count() <= MAX_NOTE_INPUT_CHARS);
        assert!(text.starts_with("Owner: the very first request"));
        assert!(text.ends_with(&"x".repeat(1000)) && text.contains("Agent: 199 "));
    }

    /// Sends the chat id when dropped (a job that ends or is aborted).
    struct Gone(mpsc::UnboundedSender<String>, String);
    impl Drop for Gone {
        fn drop(&mut self) {
            let _ = self.0.send(self.1.clone());
        }
    }

    #[tokio::test(start_paused = true)]
    async fn notes_wait_for_idle_run_one_at_a_time_and_give_way_to_a_turn() {
        let (signals, rx) = NoteSignals::channel();
        let (started_tx, mut started) = mpsc::unbounded_channel::<(String, Instant)>();
        let (gone_tx, mut gone) = mpsc::unbounded_channel::<String>();
        let (release_tx, release) = tokio::sync::watch::channel(false);
        let start = move |id: ChatId| {
            let _ = started_tx.send((id.to_string(), Instant::now()));
            let guard = Gone(gone_tx.clone(), id.to_string());
            let mut release = release.clone();
            tokio::spawn(async move {
                let _guard = guard;
                let _ = release.wait_for(|r| *r).await;
            })
        };
        let task = tokio::spawn(schedule(rx, |_| async { Duration::from_secs(60) }, start));
        let t0 = Instant::now();
        let (a, b) = (ChatId::from("a".to_owned()), ChatId::from("b".to_owned()));
        signals.settled(&a);
        signals.settled(&b);
        let (first, at) = started.recv().await.expect("a note starts");
        assert_eq!(first, "a");
        assert!(at - t0 >= Duration::from_secs(60), "a note waits for the idle delay");
        // One at a time: b is due too but waits while a's job runs.
        tokio::time::sleep(Duration::from_secs(600)).await;
        assert!(started.try_recv().is_err(), "a second note turn started alongside the first");
        // The owner's turn in chat a ends a's note turn; b's starts.
        signals.started(&a);
        assert_eq!(gone.recv().await.as_deref(), Some("a"));
        assert_eq!(started.recv().await.expect("b starts").0, "b");
        // A settled chat whose turn starts before the delay ends is never noted.
        let c = ChatId::from("c".to_owned());
        let _ = release_tx.send(true);
        assert_eq!(gone.recv().await.as_deref(), Some("b"));
        signals.settled(&c);
        tokio::time::sleep(Duration::from_secs(30)).await;
        signals.started(&c);
        tokio::time::sleep(Duration::from_secs(600)).await;
        assert!(started.try_recv().is_err(), "c's note ran although its turn started");
        drop(signals);
        task.await.expect("the loop ends with its signals");
    }
}
