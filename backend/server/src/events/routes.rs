//! Shell-wide routes: the system event stream and `POST /api/notify`.

use axum::extract::State;
use axum::response::sse::Event;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::api::ApiJson;
use crate::app::AppState;
use crate::auth::Owner;
use crate::chats::stream::{EventStream, sse};
use crate::error::{Error, Result};

/// Events the agent (or the owner) may announce to every open shell.
const NOTIFY_TYPES: &[&str] = &["theme_updated", "app_updated", "open_item", "build_phase", "notice"];

/// The routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new().route("/events/system", get(system_stream)).route("/notify", post(notify))
}

/// Buffered events per connection.
const CONNECTION_BUFFER: usize = 256;

/// `GET /api/events/system`: shell-wide events (no replay; clients refetch on reconnect).
async fn system_stream(State(state): State<AppState>, _owner: Owner) -> EventStream {
    let mut live = state.hub.subscribe_system();
    let (tx, rx) = mpsc::channel(CONNECTION_BUFFER);
    let mut shutdown = state.shutdown.clone();
    tokio::spawn(async move {
        let hello = json!({ "type": "system_stream_open", "boot_id": state.boot.boot_id }).to_string();
        if tx.send(Ok(Event::default().data(hello))).await.is_err() {
            return;
        }
        loop {
            tokio::select! {
                received = live.recv() => match received {
                    Ok(data) => {
                        if tx.send(Ok(Event::default().data(&*data))).await.is_err() {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        if tx.send(Ok(Event::default().data(json!({ "type": "resync" }).to_string()))).await.is_err() {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                () = crate::app::stopping(&mut shutdown) => return,
                () = tx.closed() => return,
            }
        }
    });
    sse(rx)
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
