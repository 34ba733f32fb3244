//! Shell-wide routes: the system event stream and `POST /api/notify`.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, HttpBody};
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use hyper::body::Frame;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;
use tokio::time::Instant;
use tokio_stream::wrappers::BroadcastStream;

use super::{StreamSlot, SystemFrame};
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

/// `GET /api/events/system`: shell-wide events (no replay; clients refetch on reconnect).
/// The owner's stream is a body of its own ([`SystemBody`]) reading the broadcast directly: a
/// delivery is one hop and one shared buffer; it ends when the owner's device is signed out. An
/// embedded chat's session may open it too: it hears only the events about its chat, and the
/// stream ends once the session is revoked or expired. App tokens are refused.
#[tracing::instrument(level = "debug", skip_all)]
async fn system_stream(State(state): State<AppState>, who: ChatCaller, client: ClientAddr) -> Result<Response> {
    let (embed, ended) = match who {
        ChatCaller::Owner(claims) => (None, state.sessions.ended(&claims)),
        ChatCaller::Embed(session) => (Some(session), tokio_util::sync::CancellationToken::new()),
        ChatCaller::App(_) => return Err(Error::forbidden("wrong_scope", "An app cannot open the system stream.")),
    };
    let slot = state.streams.acquire(client.key())?;
    // Neither can fail to serialize (strings only).
    let hello = serde_json::to_string(&SystemEvent::SystemStreamOpen { boot_id: state.boot.boot_id.clone() })
        .unwrap_or_default();
    let resync = SystemFrame::new(serde_json::to_string(&SystemEvent::Resync).unwrap_or_default());
    let rx = state.hub.subscribe_system();
    let mut shutdown = state.shutdown.clone();
    // Shutdown, or the owner's device was signed out.
    let stopping: Stopping = Box::pin(async move {
        tokio::select! {
            () = crate::shutdown::stopping(&mut shutdown) => {}
            () = ended.cancelled_owned() => {}
        }
    });
    let Some(session) = embed else {
        let body = SystemBody {
            hello: Some(SystemFrame::new(hello).sse),
            events: BroadcastStream::new(rx),
            resync: resync.sse,
            keepalive: keepalive_timer(),
            stopping,
            done: false,
            _slot: slot,
        };
        return Ok(event_stream_response(Body::new(body)));
    };
    let resync: Arc<str> = Arc::from(&*resync.json);
    let live = embed_events(state.clone(), session, rx, resync).map(move |event| {
        // The stream holds its slot until it is dropped.
        let _held = &slot;
        event
    });
    let stream =
        futures_util::stream::once(async move { Ok(Event::default().data(hello)) }).chain(live).take_until(stopping);
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEPALIVE_EVERY).text("keepalive")).into_response())
}

type Stopping = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The SSE comment sent after [`KEEPALIVE_EVERY`] (what axum's `KeepAlive` sends).
const KEEPALIVE_FRAME: &[u8] = b":keepalive\n\n";

fn keepalive_timer() -> tokio::time::Interval {
    let mut timer = tokio::time::interval_at(Instant::now() + KEEPALIVE_EVERY, KEEPALIVE_EVERY);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    timer
}

fn event_stream_response(body: Body) -> Response {
    let mut response = Response::new(body);
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The owner's system stream: the hello, then each event's frame as the hub rendered it, a
/// comment every [`KEEPALIVE_EVERY`], until shutdown begins. A subscriber that fell behind the
/// channel gets `resync` (and refetches).
struct SystemBody {
    hello: Option<Bytes>,
    events: BroadcastStream<Arc<SystemFrame>>,
    resync: Bytes,
    keepalive: tokio::time::Interval,
    stopping: Stopping,
    done: bool,
    _slot: StreamSlot,
}

impl HttpBody for SystemBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if let Some(hello) = this.hello.take() {
            return Poll::Ready(Some(Ok(Frame::data(hello))));
        }
        match this.events.poll_next_unpin(cx) {
            Poll::Ready(Some(Ok(event))) => return Poll::Ready(Some(Ok(Frame::data(event.sse.clone())))),
            Poll::Ready(Some(Err(_lagged))) => return Poll::Ready(Some(Ok(Frame::data(this.resync.clone())))),
            Poll::Ready(None) => {
                this.done = true;
                return Poll::Ready(None);
            }
            Poll::Pending => {}
        }
        if this.stopping.as_mut().poll(cx).is_ready() {
            this.done = true;
            return Poll::Ready(None);
        }
        if this.keepalive.poll_tick(cx).is_ready() {
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(KEEPALIVE_FRAME)))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

/// What an embedded chat's system stream carries: the events naming its chat, until its
/// session ends.
fn embed_events(
    state: AppState,
    session: EmbedSession,
    rx: broadcast::Receiver<Arc<SystemFrame>>,
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
                    Some(Ok(frame)) => frame,
                    Some(Err(broadcast::error::RecvError::Lagged(_))) => {
                        return Some((Ok(Event::default().data(&*resync)), (rx, wake, checked)));
                    }
                    Some(Err(broadcast::error::RecvError::Closed)) => return None,
                };
                if about_chat(&data.json, &session.chat_id) {
                    return Some((Ok(Event::default().data(&*data.json)), (rx, wake, checked)));
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
#[tracing::instrument(level = "debug", skip_all)]
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
