//! Shell-wide routes: the system event stream and `POST /api/notify`.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, KeepAliveStream, Sse};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::{Stream, StreamExt};
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;
use tokio::time::Instant;
use tokio_stream::wrappers::BroadcastStream;

use crate::api::ApiJson;
use crate::auth::Owner;
use crate::chats::access::{ChatCaller, EmbedSession, session_live};
use crate::error::{Error, Result};
use crate::net::client::ClientAddr;
use crate::protocol::SystemEvent;
use crate::state::AppState;

/// Events the agent (or the owner) may announce to every open shell.
const NOTIFY_TYPES: &[&str] = &["theme_updated", "app_updated", "open_item", "build_phase", "notice"];

/// The routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new().route("/events/system", get(system_stream)).route("/notify", post(notify))
}

const KEEPALIVE_EVERY: Duration = Duration::from_secs(15);

/// How often at most an embedded chat's system stream re-checks its session…
const EMBED_RECHECK: Duration = Duration::from_secs(1);
/// …and how often it wakes to do so when no event comes.
const EMBED_WAKE: Duration = Duration::from_secs(30);

type EventStream = Pin<Box<dyn Stream<Item = std::result::Result<Event, Infallible>> + Send>>;

/// `GET /api/events/system`: shell-wide events (no replay; clients refetch on reconnect).
/// The stream reads the broadcast directly, so a delivery is one hop. An embedded chat's
/// session may open it too: it hears only the events about its chat, and the stream ends once
/// the session is revoked or expired. App tokens are refused.
async fn system_stream(
    State(state): State<AppState>,
    who: ChatCaller,
    client: ClientAddr,
) -> Result<Sse<KeepAliveStream<impl Stream<Item = std::result::Result<Event, Infallible>>>>> {
    let (embed, ended) = match who {
        ChatCaller::Owner(claims) => (None, state.sessions.ended(&claims)),
        ChatCaller::Embed(session) => (Some(session), tokio_util::sync::CancellationToken::new()),
        ChatCaller::App(_) => return Err(Error::forbidden("wrong_scope", "An app cannot open the system stream.")),
    };
    let slot = state.streams.acquire(client.key())?;
    // Neither can fail to serialize (strings only).
    let hello = serde_json::to_string(&SystemEvent::SystemStreamOpen { boot_id: state.boot.boot_id.clone() })
        .unwrap_or_default();
    let resync: Arc<str> = serde_json::to_string(&SystemEvent::Resync).unwrap_or_default().into();
    let rx = state.hub.subscribe_system();
    let live: EventStream = match embed {
        None => Box::pin(BroadcastStream::new(rx).map(move |received| {
            Ok(match received {
                Ok(data) => Event::default().data(&*data),
                Err(_lagged) => Event::default().data(&*resync),
            })
        })),
        Some(session) => Box::pin(embed_events(state.clone(), session, rx, resync)),
    };
    // The stream holds its slot until it is dropped.
    let live = live.map(move |event| {
        let _held = &slot;
        event
    });
    let mut shutdown = state.shutdown.clone();
    let stream = futures_util::stream::once(async move { Ok(Event::default().data(hello)) }).chain(live).take_until(
        async move {
            // Shutdown, or the owner's device was signed out.
            tokio::select! {
                () = crate::state::stopping(&mut shutdown) => {}
                () = ended.cancelled_owned() => {}
            }
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEPALIVE_EVERY).text("keepalive")))
}

/// What an embedded chat's system stream carries: the events naming its chat, until its
/// session ends.
fn embed_events(
    state: AppState,
    session: EmbedSession,
    rx: broadcast::Receiver<Arc<str>>,
    resync: Arc<str>,
) -> impl Stream<Item = std::result::Result<Event, Infallible>> + Send {
    let wake = tokio::time::interval_at(Instant::now() + EMBED_WAKE, EMBED_WAKE);
    let start = (rx, wake, Instant::now());
    futures_util::stream::unfold(start, move |(mut rx, mut wake, mut checked)| {
        let (state, session, resync) = (state.clone(), session.clone(), resync.clone());
        async move {
            loop {
                let received = tokio::select! {
                    received = rx.recv() => Some(received),
                    _ = wake.tick() => None,
                };
                if checked.elapsed() >= EMBED_RECHECK {
                    checked = Instant::now();
                    if !session_live(&state, &session).await.unwrap_or(false) {
                        return None;
                    }
                }
                let data = match received {
                    None => continue,
                    Some(Ok(data)) => data,
                    Some(Err(broadcast::error::RecvError::Lagged(_))) => resync.clone(),
                    Some(Err(broadcast::error::RecvError::Closed)) => return None,
                };
                if Arc::ptr_eq(&data, &resync) || about_chat(&data, &session.chat_id) {
                    return Some((Ok(Event::default().data(&*data)), (rx, wake, checked)));
                }
            }
        }
    })
}

/// True when the system event `data` names `chat_id` (`chat_id`, or the original's `chatId`).
fn about_chat(data: &str, chat_id: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct About<'a> {
        #[serde(borrow, alias = "chatId")]
        chat_id: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_str::<About<'_>>(data).is_ok_and(|a| a.chat_id.as_deref() == Some(chat_id))
}

/// `POST /api/notify {type, …}`: publishes a system event to every shell.
async fn notify(
    State(state): State<AppState>,
    _owner: Owner,
    ApiJson(body): ApiJson<Map<String, Value>>,
) -> Result<Json<Value>> {
    let kind = body.get("type").and_then(Value::as_str).unwrap_or_default();
    if !NOTIFY_TYPES.contains(&kind) {
        return Err(Error::bad_request("invalid_event", format!("type must be one of {}", NOTIFY_TYPES.join(", "))));
    }
    state.hub.publish_system(Value::Object(body).to_string());
    Ok(Json(json!({ "ok": true })))
}
