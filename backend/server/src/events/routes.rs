//! Shell-wide routes: the system event stream and `POST /api/notify`.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, KeepAliveStream, Sse};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::{Stream, StreamExt};
use serde_json::{Map, Value, json};
use tokio_stream::wrappers::BroadcastStream;

use crate::api::ApiJson;
use crate::auth::Owner;
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

/// `GET /api/events/system`: shell-wide events (no replay; clients refetch on reconnect).
/// The stream reads the broadcast directly, so a delivery is one hop.
async fn system_stream(
    State(state): State<AppState>,
    _owner: Owner,
    client: ClientAddr,
) -> Result<Sse<KeepAliveStream<impl Stream<Item = std::result::Result<Event, Infallible>>>>> {
    let slot = state.streams.acquire(client.key())?;
    // Neither can fail to serialize (strings only).
    let hello = serde_json::to_string(&SystemEvent::SystemStreamOpen { boot_id: state.boot.boot_id.clone() })
        .unwrap_or_default();
    let resync = serde_json::to_string(&SystemEvent::Resync).unwrap_or_default();
    let live = BroadcastStream::new(state.hub.subscribe_system()).map(move |received| {
        // The stream holds its slot until it is dropped.
        let _held = &slot;
        Ok(match received {
            Ok(data) => Event::default().data(&*data),
            Err(_lagged) => Event::default().data(&resync),
        })
    });
    let mut shutdown = state.shutdown.clone();
    let stream = futures_util::stream::once(async move { Ok(Event::default().data(hello)) })
        .chain(live)
        .take_until(async move { crate::state::stopping(&mut shutdown).await });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEPALIVE_EVERY).text("keepalive")))
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
