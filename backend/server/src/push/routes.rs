//! `/api/push/*` (keys, devices, presence, switches, the test, answering from a notification)
//! and `/api/notifications/*` (sending, the centre).

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use super::notice::{self, MAX_ACTION_TITLE_CHARS, Notice, Source, clip};
use crate::api::{ApiJson, no_content};
use crate::auth::limits::Attempter;
use crate::auth::{Owner, Principal, Scope};
use crate::db::{self, now_ms};
use crate::error::{Error, Result};
use crate::net::client::ClientAddr;
use crate::protocol::{ChatId, NotificationAction, NotificationItem, NotificationKind as Kind};
use crate::state::AppState;
use crate::writer::{PushWrite, WriteCommand};

/// Longest push endpoint URL accepted.
const MAX_ENDPOINT_CHARS: usize = 2048;
/// Longest device label kept (characters).
const MAX_LABEL_CHARS: usize = 80;
/// Longest device id a page reports presence under.
const MAX_DEVICE_ID_CHARS: usize = 64;
/// Longest icon or target URL (characters).
const MAX_URL_CHARS: usize = 512;
/// Notifications listed per page by default, and at most.
const DEFAULT_LIST: i64 = 20;
const MAX_LIST: i64 = 100;

/// The routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/push/vapid-key", get(vapid_key))
        .route("/push/subscribe", post(subscribe).delete(unsubscribe))
        .route("/push/devices", get(devices))
        .route("/push/devices/{id}", delete(remove_device))
        .route("/push/presence", put(presence))
        .route("/push/prefs", get(prefs).put(set_prefs))
        .route("/push/test", post(test))
        .route("/push/action", post(action))
        .route("/notifications", get(list).delete(delete_all))
        .route("/notifications/{id}", delete(delete_one))
        .route("/notifications/unread-count", get(unread_count))
        .route("/notifications/read-all", post(read_all))
        .route("/notifications/send", post(send))
}

async fn write(state: &AppState, op: PushWrite) -> Result<u64> {
    state.writer.call(|ack| WriteCommand::Push { op, ack }).await
}

/// `GET /api/push/vapid-key` → `{publicKey}` (no auth: it is public by nature).
#[tracing::instrument(level = "debug", skip_all)]
async fn vapid_key(State(state): State<AppState>) -> Result<Json<Value>> {
    Ok(Json(json!({ "publicKey": state.push.public_key()? })))
}

#[derive(Deserialize)]
struct SubscriptionIn {
    endpoint: String,
    keys: KeysIn,
    #[serde(default)]
    label: Option<String>,
}

#[derive(Deserialize)]
struct KeysIn {
    p256dh: String,
    auth: String,
}

/// `POST /api/push/subscribe {endpoint, keys: {p256dh, auth}, label?}` → 201.
#[tracing::instrument(level = "debug", skip_all)]
async fn subscribe(
    State(state): State<AppState>,
    who: Principal,
    ApiJson(body): ApiJson<SubscriptionIn>,
) -> Result<Response> {
    let endpoint = checked_endpoint(&state, &body.endpoint)?;
    if super::crypto::ClientKeys::decode(&body.keys.p256dh, &body.keys.auth).is_none() {
        return Err(Error::bad_request(
            "invalid_subscription",
            "keys.p256dh must be a P-256 point and keys.auth 16 bytes, both base64url.",
        ));
    }
    let subscription = db::push::NewSubscription {
        endpoint,
        p256dh: body.keys.p256dh.trim().to_owned(),
        auth: body.keys.auth.trim().to_owned(),
        label: clip(body.label.as_deref().unwrap_or_default(), MAX_LABEL_CHARS),
        app_id: who.app_id(),
    };
    write(&state, PushWrite::Subscribe(subscription)).await?;
    Ok((StatusCode::CREATED, Json(json!({ "status": "subscribed" }))).into_response())
}

/// Push endpoints are https URLs of a public push service (checked again as each push
/// connects); test configurations may use loopback http.
fn checked_endpoint(state: &AppState, raw: &str) -> Result<String> {
    let invalid = |why: &str| Error::bad_request("invalid_subscription", format!("endpoint {why}."));
    if raw.len() > MAX_ENDPOINT_CHARS {
        return Err(invalid("is too long"));
    }
    let url = reqwest::Url::parse(raw.trim()).map_err(|_| invalid("is not a URL"))?;
    let loopback = state.push.allow_loopback();
    let loopback_literal = url
        .host_str()
        .and_then(|h| h.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>().ok())
        .is_some_and(|ip| ip.is_loopback());
    if url.scheme() != "https" && !(loopback && loopback_literal && url.scheme() == "http") {
        return Err(invalid("must be https"));
    }
    if let Some(why) = super::deliver::policy(loopback).refuse_url(&url) {
        return Err(invalid(&format!("is not allowed: {why}")));
    }
    Ok(url.to_string())
}

#[derive(Deserialize)]
struct EndpointIn {
    endpoint: String,
}

/// `DELETE /api/push/subscribe {endpoint}` → 204 (also when it was not subscribed).
#[tracing::instrument(level = "debug", skip_all)]
async fn unsubscribe(
    State(state): State<AppState>,
    who: Principal,
    ApiJson(body): ApiJson<EndpointIn>,
) -> Result<Response> {
    write(&state, PushWrite::Unsubscribe(body.endpoint.trim().to_owned(), who.app_id())).await?;
    Ok(no_content())
}

/// `GET /api/push/devices` → `[{id, label, service, app_id, created_at, last_ok_at}]`.
#[tracing::instrument(level = "debug", skip_all)]
async fn devices(State(state): State<AppState>, _owner: Owner) -> Result<Json<Value>> {
    let devices = db::push::subscriptions(&state.db.read).await?;
    Ok(Json(Value::Array(
        devices
            .into_iter()
            .map(|d| {
                let service = reqwest::Url::parse(&d.endpoint).ok().and_then(|u| u.host_str().map(str::to_owned));
                json!({
                    "id": d.id, "label": d.label, "service": service, "app_id": d.app_id,
                    "created_at": d.created_at, "last_ok_at": d.last_ok_at, "endpoint": d.endpoint,
                })
            })
            .collect(),
    )))
}

/// `DELETE /api/push/devices/{id}` → 204; 404 when there is no such device.
#[tracing::instrument(level = "debug", skip_all)]
async fn remove_device(State(state): State<AppState>, _owner: Owner, Path(id): Path<i64>) -> Result<Response> {
    match write(&state, PushWrite::UnsubscribeId(id)).await? {
        0 => Err(Error::not_found("device_not_found", "No such device.")),
        _ => Ok(no_content()),
    }
}

#[derive(Deserialize)]
struct PresenceIn {
    device: String,
    /// The chat open and visible on that device; `null` when hidden or elsewhere.
    chat_id: Option<String>,
}

/// `PUT /api/push/presence {device, chat_id}` → 204.
#[tracing::instrument(level = "debug", skip_all)]
async fn presence(
    State(state): State<AppState>,
    _owner: Owner,
    ApiJson(body): ApiJson<PresenceIn>,
) -> Result<Response> {
    if body.device.is_empty() || body.device.len() > MAX_DEVICE_ID_CHARS {
        return Err(Error::bad_request("invalid_device", format!("device is 1 to {MAX_DEVICE_ID_CHARS} characters.")));
    }
    let chat = body.chat_id.as_deref().and_then(ChatId::parse);
    state.push.presence().report(&body.device, chat.as_deref());
    Ok(no_content())
}

/// `GET /api/push/prefs` → `{kinds: {turn_done: true, …}}`.
#[tracing::instrument(level = "debug", skip_all)]
async fn prefs(State(state): State<AppState>, _owner: Owner) -> Result<Json<Value>> {
    let off = db::push::disabled_kinds(&state.db.read).await?;
    let kinds: serde_json::Map<String, Value> =
        Kind::SWITCHABLE.iter().map(|k| (k.as_str().to_owned(), json!(!off.iter().any(|o| o == k.as_str())))).collect();
    Ok(Json(json!({ "kinds": kinds })))
}

#[derive(Deserialize)]
struct PrefsIn {
    kinds: serde_json::Map<String, Value>,
}

/// `PUT /api/push/prefs {kinds: {turn_done: false, …}}` → the switches as now set.
#[tracing::instrument(level = "debug", skip_all)]
async fn set_prefs(
    State(state): State<AppState>,
    owner: Owner,
    ApiJson(body): ApiJson<PrefsIn>,
) -> Result<Json<Value>> {
    let mut changes = Vec::new();
    for (name, value) in &body.kinds {
        let kind = Kind::parse(name).filter(|k| *k != Kind::Test);
        let (Some(kind), Some(enabled)) = (kind, value.as_bool()) else {
            return Err(Error::bad_request("invalid_prefs", "kinds maps a notification kind to true or false."));
        };
        changes.push((kind, enabled));
    }
    for (kind, enabled) in changes {
        write(&state, PushWrite::SetPref { kind, enabled }).await?;
    }
    prefs(State(state), owner).await
}

/// `POST /api/push/test` → 202: a test notification to every device.
#[tracing::instrument(level = "debug", skip_all)]
async fn test(State(state): State<AppState>, _owner: Owner) -> Result<Response> {
    let notice = Notice::new(
        Kind::Test,
        Source::Owner { source_type: "test".into(), source_id: None },
        "Notifications work",
        Some("This device will tell you when the agent finishes or needs you.".into()),
    );
    if !state.push.notify(notice) {
        return Err(Error::unavailable("push_busy", "Too many notifications are waiting; try again shortly."));
    }
    Ok((StatusCode::ACCEPTED, Json(json!({ "status": "queued" }))).into_response())
}

#[derive(Deserialize)]
struct ActionIn {
    token: String,
    question_id: String,
    action: String,
}

/// `POST /api/push/action {token, question_id, action}`: a notification button answers its
/// question. Authorised by the action token alone (the service worker holds no owner token),
/// so it is throttled like a sign-in: a client address that presents wrong tokens waits, and
/// every attempt takes from the global bucket of unauthenticated attempts.
#[tracing::instrument(level = "debug", skip_all)]
async fn action(
    State(state): State<AppState>,
    client: ClientAddr,
    ApiJson(body): ApiJson<ActionIn>,
) -> Result<Response> {
    let who = Attempter::Address(client.key());
    state.login_limits.check(&who).map_err(crate::auth::throttled)?;
    state.login_limits.take_global().map_err(crate::auth::throttled)?;
    let redeemed = match state.push.actions().redeem(&body.token, &body.question_id, &body.action) {
        Ok(redeemed) => redeemed,
        Err(e) => {
            if e.status() == StatusCode::UNAUTHORIZED {
                state.login_limits.record_failure(who);
            }
            return Err(e);
        }
    };
    match crate::chats::deliver_answer(&state, &redeemed.chat_id, redeemed.question_id, redeemed.answers).await {
        Ok(response) => Ok(response),
        Err(e) => {
            if e.status() == StatusCode::SERVICE_UNAVAILABLE {
                // Not taken in time: the button may try again.
                state.push.actions().restore(&body.token);
            }
            Err(e)
        }
    }
}

#[derive(Deserialize)]
struct SendIn {
    title: String,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    icon: Option<String>,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    actions: Vec<ActionDef>,
    #[serde(default)]
    source_type: Option<String>,
    #[serde(default)]
    source_id: Option<String>,
}

#[derive(Deserialize)]
struct ActionDef {
    action: String,
    title: String,
    #[serde(default)]
    target: Option<String>,
}

/// `POST /api/notifications/send {title, body?, icon?, target?, actions?, source_type?,
/// source_id?}` → `{id}`. An app's notification is always attributed to the app, an agent
/// run's to its chat; each sender may send [`super::MAX_SENDS_PER_WINDOW`] a minute.
#[tracing::instrument(level = "debug", skip_all)]
async fn send(State(state): State<AppState>, who: Principal, ApiJson(body): ApiJson<SendIn>) -> Result<Json<Value>> {
    if body.title.trim().is_empty() {
        return Err(Error::bad_request("invalid_notification", "title is required."));
    }
    let target = body.target.as_deref().map(checked_target).transpose()?;
    let icon = body.icon.filter(|i| !i.trim().is_empty());
    if icon.as_ref().is_some_and(|i| i.len() > MAX_URL_CHARS) {
        return Err(Error::bad_request("invalid_notification", "icon is too long."));
    }
    if body.actions.len() > notice::MAX_NOTIFICATION_ACTIONS {
        return Err(Error::bad_request(
            "invalid_notification",
            format!("at most {} actions.", notice::MAX_NOTIFICATION_ACTIONS),
        ));
    }
    let mut actions = Vec::new();
    for a in body.actions {
        if a.action.is_empty() || a.action.len() > 64 || a.title.trim().is_empty() {
            return Err(Error::bad_request("invalid_notification", "each action has an action id and a title."));
        }
        let target = a.target.as_deref().map(checked_target).transpose()?;
        actions.push(NotificationAction { action: a.action, title: clip(&a.title, MAX_ACTION_TITLE_CHARS), target });
    }
    let (kind, source, key) = match &who {
        Principal::App(app) => (Kind::App, Source::App(app.id), format!("app:{}", app.id)),
        Principal::Owner(claims) if claims.scope == Scope::Agent => {
            let key = format!("run:{}", claims.run_id.as_deref().unwrap_or_default());
            let source = match claims.chat_id.as_deref().and_then(ChatId::parse) {
                Some(chat) => Source::Chat(chat),
                None => Source::Owner { source_type: "agent".into(), source_id: None },
            };
            (Kind::Agent, source, key)
        }
        Principal::Owner(_) => {
            let source_type = body.source_type.as_deref().map(str::trim).filter(|s| !s.is_empty()).unwrap_or("agent");
            let source_type = clip(source_type, 40);
            let kind = if source_type == "schedule" { Kind::Schedule } else { Kind::Agent };
            let source_id = body.source_id.map(|s| clip(&s, 128));
            let chat = source_id
                .as_deref()
                .filter(|_| source_type == "chat" || source_type == "agent")
                .and_then(ChatId::parse);
            let source = match chat {
                Some(chat) => Source::Chat(chat),
                None => Source::Owner { source_type, source_id },
            };
            (kind, source, "owner".to_owned())
        }
    };
    if let Err(retry) = state.push.admit_send(&key) {
        return Err(Error::too_many(
            "rate_limited",
            format!("At most {} notifications a minute.", super::MAX_SENDS_PER_WINDOW),
            retry,
        ));
    }
    let mut notice = Notice::new(kind, source, body.title, body.body);
    notice.target = target.or_else(|| notice.source.default_target());
    notice.icon = icon;
    notice.actions = actions;
    let (source_type, source_id) = notice.source.attribution();
    let stored_actions = if notice.actions.is_empty() {
        None
    } else {
        Some(serde_json::to_string(&notice.actions).map_err(|e| Error::Internal(e.to_string()))?)
    };
    let row = db::push::Notification {
        id: uuid::Uuid::new_v4().to_string(),
        kind,
        source_type,
        source_id,
        title: notice.title.clone(),
        body: notice.body.clone(),
        icon: notice.icon.clone(),
        target: notice.target.clone(),
        actions: stored_actions,
        sent_at: now_ms(),
        clicked_at: None,
        read_at: None,
    };
    let id = row.id.clone();
    if kind_enabled(&state, kind).await? {
        write(&state, PushWrite::Store(Box::new(row))).await?;
        notice.stored_id = Some(id.clone());
        state.push.notify(notice);
    }
    Ok(Json(json!({ "id": id })))
}

async fn kind_enabled(state: &AppState, kind: Kind) -> Result<bool> {
    Ok(!db::push::disabled_kinds(&state.db.read).await?.iter().any(|k| k == kind.as_str()))
}

/// The deep links a notification may carry (the service worker and shell accept the same):
/// `/`, `/shell/?chat=<id>`, `/shell/?app=<id or slug>[&intent=…]`, each optionally with
/// `&question=<id>`, or the same as a same-origin absolute URL.
fn checked_target(raw: &str) -> Result<String> {
    let invalid = || {
        Error::bad_request(
            "invalid_target",
            "target is /, /shell/?chat=<id> or /shell/?app=<id> (optionally with &intent= or &question=).",
        )
    };
    let raw = raw.trim();
    if raw.len() > MAX_URL_CHARS {
        return Err(invalid());
    }
    let url = reqwest::Url::parse("http://self.invalid").and_then(|base| base.join(raw)).map_err(|_| invalid())?;
    if url.host_str() != Some("self.invalid") {
        // Absolute URLs of another origin are not deep links.
        return Err(invalid());
    }
    if url.path() == "/" && url.query().is_none() {
        return Ok("/".into());
    }
    if url.path() != "/shell/" && url.path() != "/shell" {
        return Err(invalid());
    }
    let ident = |v: &str, max: usize, extra: &str| {
        !v.is_empty()
            && v.len() <= max
            && v.chars().all(|c| c.is_ascii_alphanumeric() || "-_".contains(c) || extra.contains(c))
    };
    let (mut chat, mut app) = (false, false);
    for (k, v) in url.query_pairs() {
        let ok = match &*k {
            "chat" => {
                chat = true;
                ident(&v, 128, "")
            }
            "app" => {
                app = true;
                ident(&v, 128, "")
            }
            "intent" => ident(&v, 128, ".:"),
            "question" => ident(&v, 128, ""),
            _ => false,
        };
        if !ok {
            return Err(invalid());
        }
    }
    if chat == app {
        return Err(invalid());
    }
    Ok(format!("/shell/?{}", url.query().unwrap_or_default()))
}

#[derive(Deserialize)]
struct ListQuery {
    #[serde(default)]
    limit: Option<i64>,
    #[serde(default)]
    before: Option<String>,
}

/// `GET /api/notifications?limit=20&before=<id>` → newest first.
#[tracing::instrument(level = "debug", skip_all)]
async fn list(
    State(state): State<AppState>,
    _owner: Owner,
    Query(q): Query<ListQuery>,
) -> Result<Json<Vec<NotificationItem>>> {
    let limit = q.limit.unwrap_or(DEFAULT_LIST);
    if !(1..=MAX_LIST).contains(&limit) {
        return Err(Error::bad_request("invalid_limit", format!("limit is 1 to {MAX_LIST}.")));
    }
    let Some(rows) = db::push::notifications(&state.db.read, limit, q.before.as_deref()).await? else {
        return Err(Error::bad_request("invalid_cursor", "Invalid notification cursor."));
    };
    let iso = |ms: Option<i64>| ms.map(crate::chats::apps::iso);
    Ok(Json(
        rows.into_iter()
            .map(|n| NotificationItem {
                actions: n.actions.as_deref().and_then(|a| serde_json::from_str(a).ok()),
                id: n.id,
                kind: n.kind,
                source_type: n.source_type,
                source_id: n.source_id,
                title: n.title,
                body: n.body,
                icon: n.icon,
                target: n.target,
                sent_at: crate::chats::apps::iso(n.sent_at),
                clicked_at: iso(n.clicked_at),
                read_at: iso(n.read_at),
            })
            .collect(),
    ))
}

/// `GET /api/notifications/unread-count` → `{count, decisions}`: unread notifications, and
/// chats whose question or approval waits (the app badge shows their sum).
#[tracing::instrument(level = "debug", skip_all)]
async fn unread_count(State(state): State<AppState>, _owner: Owner) -> Result<Json<Value>> {
    let count = db::push::unread_count(&state.db.read).await?;
    let decisions = db::push::decisions_waiting(&state.db.read).await?;
    Ok(Json(json!({ "count": count, "decisions": decisions })))
}

/// `POST /api/notifications/read-all` → `{updated}`.
#[tracing::instrument(level = "debug", skip_all)]
async fn read_all(State(state): State<AppState>, _owner: Owner) -> Result<Json<Value>> {
    let updated = write(&state, PushWrite::ReadAll).await?;
    Ok(Json(json!({ "updated": updated })))
}

/// `DELETE /api/notifications` → `{deleted}`: all of them.
#[tracing::instrument(level = "debug", skip_all)]
async fn delete_all(State(state): State<AppState>, _owner: Owner) -> Result<Json<Value>> {
    let deleted = write(&state, PushWrite::Delete(None)).await?;
    Ok(Json(json!({ "deleted": deleted })))
}

/// `DELETE /api/notifications/{id}` → 204; 404 when there is no such notification.
#[tracing::instrument(level = "debug", skip_all)]
async fn delete_one(State(state): State<AppState>, _owner: Owner, Path(id): Path<String>) -> Result<Response> {
    match write(&state, PushWrite::Delete(Some(id))).await? {
        0 => Err(Error::not_found("notification_not_found", "No such notification.")),
        _ => Ok(no_content()),
    }
}

#[cfg(test)]
mod tests {
    use super::checked_target;

    #[test]
    fn only_deep_links_are_targets() {
        for ok in ["/", "/shell/?chat=c-1", "/shell?app=notes&intent=open:today", "/shell/?chat=c1&question=q-1"] {
            assert!(checked_target(ok).is_ok(), "{ok}");
        }
        for bad in [
            "https://evil.example/shell/?chat=c1",
            "javascript:alert(1)",
            "/shell/?chat=c1&app=2",
            "/shell/?chat=../x",
            "/api/chats",
            "/shell/?chat=c1&next=/x",
            "//evil.example/",
        ] {
            assert!(checked_target(bad).is_err(), "{bad}");
        }
    }
}
