//! `GET /api/chats/{id}/stream`: a chat's journal as server-sent events, replayed from
//! `Last-Event-ID` (or `?after=`), then live. The shell-wide stream is `events/routes.rs`.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, KeepAliveStream, Sse};
use serde::Deserialize;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use super::access::{ChatCaller, Op};
use crate::db::{self, now_ms};
use crate::error::{Domain, Result};
use crate::events::{ChatSubscription, StreamSlot};
use crate::net::client::ClientAddr;
use crate::protocol::{ChatId, StreamControl};
use crate::state::AppState;

/// Journal rows read per replay query.
const REPLAY_BATCH: i64 = 500;
/// Events buffered per connection before the producer waits for the client.
const CONNECTION_BUFFER: usize = 256;
const KEEPALIVE_EVERY: Duration = Duration::from_secs(15);

#[derive(Deserialize)]
pub struct StreamQuery {
    after: Option<i64>,
}

pub(crate) type EventStream = Sse<KeepAliveStream<ReceiverStream<std::result::Result<Event, Infallible>>>>;

pub(crate) fn sse(rx: mpsc::Receiver<std::result::Result<Event, Infallible>>) -> EventStream {
    Sse::new(ReceiverStream::new(rx)).keep_alive(KeepAlive::new().interval(KEEPALIVE_EVERY).text("keepalive"))
}

/// `GET /api/chats/{id}/stream`: replays the journal after `Last-Event-ID` (or `?after=`),
/// then streams live events.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn chat_stream(
    State(state): State<AppState>,
    who: ChatCaller,
    client: ClientAddr,
    Path(id): Path<String>,
    Query(query): Query<StreamQuery>,
    headers: HeaderMap,
) -> Result<EventStream> {
    let id = ChatId::parse(&id).ok_or(Domain::ChatNotFound)?;
    who.allow(&state, &id, Op::Stream).await?;
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok())
        .or(query.after);
    let live_chat = |row: Option<db::chats::ChatRow>| match row {
        Some(c) if c.deleted_at.is_none() => Ok(c),
        _ => Err(Domain::ChatNotFound),
    };
    // A missing chat costs nothing: no slot, no channel.
    live_chat(db::chats::get(&state.db.read, &id).await?)?;
    let slot = state.streams.acquire(client.key())?;
    // Subscribe before reading the head, so nothing committed in between is missed.
    let live = state.hub.subscribe(&id);
    let chat = live_chat(db::chats::get(&state.db.read, &id).await?)?;
    let (tx, rx) = mpsc::channel(CONNECTION_BUFFER);
    // The stream of a device that is signed out ends with its session.
    let ended = match &who {
        ChatCaller::Owner(claims) => state.sessions.ended(claims),
        _ => tokio_util::sync::CancellationToken::new(),
    };
    let pumping = pump(state, id, after, chat.last_seq, live, tx, slot);
    tokio::spawn(async move {
        tokio::select! {
            () = pumping => {}
            () = ended.cancelled_owned() => {}
        }
    });
    Ok(sse(rx))
}

fn journal_event(seq: i64, data: &str) -> Event {
    Event::default().id(seq.to_string()).data(data)
}

fn control_event(control: &StreamControl) -> Event {
    Event::default().data(serde_json::to_string(control).unwrap_or_default())
}

fn resync(seq: i64) -> Event {
    control_event(&StreamControl::Resync { seq, ts: now_ms() })
}

/// Sends journal rows after `cursor` from the database; returns the new cursor, or `None`
/// when the range can no longer be replayed (pruned) or the client left.
async fn replay(
    state: &AppState,
    chat_id: &str,
    mut cursor: i64,
    tx: &mpsc::Sender<std::result::Result<Event, Infallible>>,
) -> Option<i64> {
    loop {
        let rows = db::journal::events_after(&state.db.read, chat_id, cursor, REPLAY_BATCH).await.ok()?;
        if let Some((first, _)) = rows.first()
            && *first != cursor + 1
        {
            return None;
        }
        let n = rows.len();
        for (seq, data) in rows {
            tx.send(Ok(journal_event(seq, &data))).await.ok()?;
            cursor = seq;
        }
        if (n as i64) < REPLAY_BATCH {
            return Some(cursor);
        }
    }
}

async fn pump(
    state: AppState,
    chat_id: ChatId,
    after: Option<i64>,
    head: i64,
    mut live: ChatSubscription,
    tx: mpsc::Sender<std::result::Result<Event, Infallible>>,
    _slot: StreamSlot,
) {
    let mut shutdown = state.shutdown.clone();
    let mut cursor = match after {
        Some(after) if after >= 0 && after <= head => match replay(&state, &chat_id, after, &tx).await {
            Some(c) => c,
            None => {
                if tx.send(Ok(resync(head))).await.is_err() {
                    return;
                }
                head
            }
        },
        Some(_) => {
            if tx.send(Ok(resync(head))).await.is_err() {
                return;
            }
            head
        }
        None => head,
    };
    if tx.send(Ok(control_event(&StreamControl::CatchUpDone { seq: cursor, ts: now_ms() }))).await.is_err() {
        return;
    }
    loop {
        tokio::select! {
            received = live.recv() => match received {
                Ok(event) => {
                    if event.seq <= cursor {
                        continue;
                    }
                    if event.seq != cursor + 1 {
                        // Missed something: fill the hole from the journal.
                        match replay(&state, &chat_id, cursor, &tx).await {
                            Some(c) => cursor = c,
                            None => break,
                        }
                        if event.seq <= cursor {
                            continue;
                        }
                    }
                    if tx.send(Ok(journal_event(event.seq, &event.data))).await.is_err() {
                        return;
                    }
                    cursor = event.seq;
                }
                Err(broadcast::error::RecvError::Lagged(_)) => match replay(&state, &chat_id, cursor, &tx).await {
                    Some(c) => cursor = c,
                    None => {
                        let _ = tx.send(Ok(resync(cursor))).await;
                        return;
                    }
                },
                Err(broadcast::error::RecvError::Closed) => return,
            },
            () = crate::shutdown::stopping(&mut shutdown) => return,
            () = tx.closed() => return,
        }
    }
}
