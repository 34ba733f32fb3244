//! The activity log: `POST /api/admin/activity/emit` (what apps and their jobs report — the
//! original's scheduled jobs send `{ev:"cron_outcome", app_id, job, exit_code, duration_ms}`)
//! and `GET /api/admin/activity` (the owner reads it). App-scoped: an app token (a frame's or a
//! job's) emits only into its own app's log; the owner may emit into any app's or the
//! owner-level one. Bounded: a body of [`MAX_ENTRY_BYTES`], [`KEEP_PER_APP`] entries per log.

use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::api::ApiJson;
use crate::auth::{Owner, Principal};
use crate::db;
use crate::error::{Domain, Error, Result};
use crate::state::AppState;
use crate::writer::WriteCommand;

/// Largest emitted entry, in bytes of JSON.
pub const MAX_ENTRY_BYTES: usize = 8 * 1024;
/// Entries each log (one per app, one for the owner) keeps; older ones are trimmed.
pub const KEEP_PER_APP: i64 = 500;
/// Most entries one `GET` returns.
const MAX_PAGE: i64 = 500;
const DEFAULT_PAGE: i64 = 100;
const MAX_EV_BYTES: usize = 64;
const MAX_JOB_BYTES: usize = 255;

/// The activity routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/admin/activity", get(list))
        .route("/admin/activity/emit", post(emit).layer(DefaultBodyLimit::max(MAX_ENTRY_BYTES)))
}

fn invalid(message: impl Into<String>) -> Error {
    Error::bad_request("invalid_activity", message)
}

/// Checks an emitted entry: a JSON object whose known fields have their types; its event name.
fn check_entry(entry: &Map<String, Value>) -> Result<String> {
    let ev = match entry.get("ev") {
        None | Some(Value::Null) => "event".to_owned(),
        Some(Value::String(ev))
            if !ev.is_empty()
                && ev.len() <= MAX_EV_BYTES
                && ev.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-')) =>
        {
            ev.clone()
        }
        Some(_) => {
            return Err(invalid(format!("ev is a name of 1 to {MAX_EV_BYTES} letters, digits, '_', '.', ':' or '-'.")));
        }
    };
    match entry.get("job") {
        None | Some(Value::Null) => {}
        Some(Value::String(job)) if job.len() <= MAX_JOB_BYTES && !job.chars().any(char::is_control) => {}
        Some(_) => return Err(invalid(format!("job is a file name of at most {MAX_JOB_BYTES} bytes."))),
    }
    match entry.get("exit_code") {
        None | Some(Value::Null) => {}
        Some(v) if v.as_i64().is_some_and(|c| i32::try_from(c).is_ok()) => {}
        Some(_) => return Err(invalid("exit_code is an integer.")),
    }
    match entry.get("duration_ms") {
        None | Some(Value::Null) => {}
        Some(v) if v.as_u64().is_some() => {}
        Some(_) => return Err(invalid("duration_ms is a whole number of milliseconds, not negative.")),
    }
    Ok(ev)
}

/// `POST {ev?, app_id?, job?, exit_code?, duration_ms?, …}` → 201 `{ok, id}`.
#[tracing::instrument(level = "debug", skip_all)]
async fn emit(
    State(state): State<AppState>,
    who: Principal,
    ApiJson(body): ApiJson<Value>,
) -> Result<(StatusCode, Json<Value>)> {
    let Value::Object(mut entry) = body else {
        return Err(invalid(
            "Send a JSON object, e.g. {\"ev\":\"cron_outcome\",\"job\":\"daily.sh\",\"exit_code\":0}.",
        ));
    };
    let ev = check_entry(&entry)?;
    let named = match entry.remove("app_id") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_i64().ok_or_else(|| invalid("app_id is an app's id (an integer)."))?),
    };
    let app_id = match &who {
        Principal::App(app) => match named {
            Some(id) if id != app.id => {
                return Err(Error::forbidden("forbidden", "An app can only add to its own activity log."));
            }
            _ => Some(app.id),
        },
        Principal::Owner(_) => match named {
            None => None,
            Some(id) => match db::apps::get(&state.db.read, id).await? {
                Some(app) if app.deleted_at.is_none() => Some(app.id),
                _ => return Err(Domain::AppNotFound.into()),
            },
        },
    };
    let data = Value::Object(entry).to_string();
    let id =
        state.writer.call(|ack| WriteCommand::ActivityAppend { app_id, ev, data, keep: KEEP_PER_APP, ack }).await?;
    Ok((StatusCode::CREATED, Json(json!({ "ok": true, "id": id }))))
}

#[derive(Deserialize)]
struct ListQuery {
    app_id: Option<i64>,
    before: Option<i64>,
    limit: Option<i64>,
}

/// `GET ?app_id=&before=&limit=` → `{entries:[{id, app_id, ev, data, created_at}], next_before}`,
/// newest first; `next_before` pages on (null at the end).
#[tracing::instrument(level = "debug", skip_all)]
async fn list(
    State(state): State<AppState>,
    _owner: Owner,
    query: std::result::Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>> {
    let Ok(Query(query)) = query else {
        return Err(Error::bad_request("invalid_query", "app_id, before and limit are integers."));
    };
    let limit = query.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE);
    let rows = db::activity::list(&state.db.read, query.app_id, query.before, limit).await?;
    let next_before = if rows.len() as i64 == limit { rows.last().map(|r| r.id) } else { None };
    let entries: Vec<Value> = rows
        .into_iter()
        .map(|r| {
            json!({
                "id": r.id,
                "app_id": r.app_id,
                "ev": r.ev,
                "data": serde_json::from_str::<Value>(&r.data).unwrap_or(Value::Null),
                "created_at": crate::chats::apps::iso(r.created_at),
            })
        })
        .collect();
    Ok(Json(json!({ "entries": entries, "next_before": next_before })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn entries_with_mistyped_known_fields_are_refused() {
        let ok = entry(json!({ "ev": "cron_outcome", "job": "daily.sh", "exit_code": 1, "duration_ms": 12 }));
        assert_eq!(check_entry(&ok).expect("ok"), "cron_outcome");
        assert_eq!(check_entry(&entry(json!({ "note": "hi" }))).expect("ok"), "event");
        for bad in [
            json!({ "ev": "two words" }),
            json!({ "ev": "x".repeat(65) }),
            json!({ "exit_code": "0" }),
            json!({ "exit_code": 1.5 }),
            json!({ "duration_ms": -1 }),
            json!({ "job": 7 }),
        ] {
            assert_eq!(check_entry(&entry(bad.clone())).expect_err("bad").code(), "invalid_activity", "{bad}");
        }
    }
}
