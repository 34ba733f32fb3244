//! What browsers report about themselves: `POST /api/client-error` (a mini-app or the shell
//! crashed) and `POST /api/client-signal` (an app's fire-and-forget `mobius.signal`).
//!
//! Both land in the server log (target `mobius::client`), nowhere else: an owner reads them
//! with `docker compose logs`, and the agent sees a crash when the owner sends it the app's
//! "Report to agent" draft. The same error repeated within a minute is logged once, and the
//! log gets at most 60 reports a minute (`reports.rs`), so a looping app cannot flood it.

pub mod reports;

use std::time::Instant;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::ApiJson;
use crate::auth::Principal;
use crate::error::{Error, Result};
use crate::redact::redact_text;
use crate::state::AppState;

/// Longest message kept; longer ones are cut (a report is never refused for its length).
const MAX_MESSAGE_CHARS: usize = 2_000;
/// Longest stack kept.
const MAX_STACK_CHARS: usize = 8_000;
/// Longest `source` / `url` / signal name.
const MAX_LABEL_CHARS: usize = 300;
/// Signals in one batch (the runtime's offline queue flushes in batches).
const MAX_SIGNALS_PER_BATCH: usize = 100;
/// Largest signal payload, serialised.
const MAX_SIGNAL_PAYLOAD_BYTES: usize = 4 * 1024;

pub use reports::ClientReports;

/// The routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new().route("/client-error", post(client_error)).route("/client-signal", post(client_signal))
}

/// `text` cut to `max` characters (marked), with control characters other than newlines
/// and tabs replaced so a report cannot forge log lines.
fn clip(text: &str, max: usize) -> String {
    let mut out: String =
        text.chars().take(max).map(|c| if c.is_control() && c != '\n' && c != '\t' { '\u{fffd}' } else { c }).collect();
    if text.chars().nth(max).is_some() {
        out.push_str(" […]");
    }
    out
}

/// Removes the values of `token`-like query parameters from a reported URL.
fn redact_url(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else { return url.to_owned() };
    let query: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if name.to_ascii_lowercase().contains("token") => format!("{name}=[redacted]"),
            _ => pair.to_owned(),
        })
        .collect();
    format!("{base}?{}", query.join("&"))
}

fn fingerprint(parts: &[&str]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

/// Which app a report is about: an app token names itself; the owner may name one.
fn reporting_app(principal: &Principal, claimed: Option<i64>) -> Result<Option<i64>> {
    match (principal, claimed) {
        (Principal::App(app), Some(other)) if other != app.id => {
            Err(Error::forbidden("forbidden", "An app can only report its own errors."))
        }
        (Principal::App(app), _) => Ok(Some(app.id)),
        (Principal::Owner(_), claimed) => Ok(claimed.filter(|id| *id > 0)),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrorIn {
    message: String,
    #[serde(default)]
    stack: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    app_id: Option<i64>,
    #[serde(default)]
    chat_id: Option<String>,
}

/// `POST /api/client-error {message, stack?, source?, url?, app_id?, chat_id?}` → 202
/// `{logged}` (`false` when it repeated a report of the last minute or the log is at its limit).
#[tracing::instrument(level = "debug", skip_all)]
async fn client_error(
    State(state): State<AppState>,
    principal: Principal,
    ApiJson(body): ApiJson<ErrorIn>,
) -> Result<(StatusCode, Json<Value>)> {
    let message = body.message.trim();
    if message.is_empty() {
        return Err(Error::bad_request("invalid_report", "`message` must say what went wrong."));
    }
    let app_id = reporting_app(&principal, body.app_id)?;
    let message = clip(&redact_text(message), MAX_MESSAGE_CHARS);
    let source = clip(body.source.as_deref().unwrap_or("app"), MAX_LABEL_CHARS);
    let logged = state.client_reports.admit((app_id.unwrap_or(0), fingerprint(&[&source, &message])), Instant::now());
    if logged {
        let stack = body.stack.as_deref().map(|s| clip(&redact_text(s), MAX_STACK_CHARS)).unwrap_or_default();
        let url = body.url.as_deref().map(|u| clip(&redact_url(u), MAX_LABEL_CHARS)).unwrap_or_default();
        let chat = body.chat_id.as_deref().map(|c| clip(c, 64)).unwrap_or_default();
        let suppressed = state.client_reports.take_suppressed();
        tracing::warn!(
            target: "mobius::client",
            app_id = app_id.unwrap_or(0),
            %source,
            %url,
            chat = %chat,
            suppressed_since_last = suppressed,
            %stack,
            "client error: {message}"
        );
    }
    Ok((StatusCode::ACCEPTED, Json(json!({ "logged": logged }))))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SignalIn {
    name: String,
    #[serde(default)]
    payload: Value,
    /// The app that sent it, when the owner's shell forwards it.
    #[serde(default)]
    app_id: Option<i64>,
    /// The event's own id (the runtime's queue retries with the same one).
    #[serde(default)]
    id: Option<String>,
    /// When the app signalled (events wait in a queue while offline), as the client said.
    #[serde(default)]
    occurred_at: Option<String>,
    /// The app installation that sent it (the app token's nonce).
    #[serde(default)]
    app_instance_id: Option<String>,
}

/// Longest event id, timestamp and instance id a signal may carry.
const MAX_SIGNAL_TAG_CHARS: usize = 100;

#[derive(Deserialize)]
#[serde(untagged)]
enum SignalsIn {
    Batch { signals: Vec<SignalIn> },
    One(SignalIn),
}

/// `POST /api/client-signal {name, payload?, app_id?, id?, occurred_at?, app_instance_id?}` or
/// `{signals: [{…}, …]}` → 202
/// `{accepted}`. Signals are logged at debug level (`MOBIUS_LOG=mobius::client=debug`).
#[tracing::instrument(level = "debug", skip_all)]
async fn client_signal(
    State(_state): State<AppState>,
    principal: Principal,
    ApiJson(body): ApiJson<SignalsIn>,
) -> Result<(StatusCode, Json<Value>)> {
    let signals = match body {
        SignalsIn::Batch { signals } => signals,
        SignalsIn::One(one) => vec![one],
    };
    if signals.len() > MAX_SIGNALS_PER_BATCH {
        return Err(Error::bad_request(
            "too_many_signals",
            format!("Send at most {MAX_SIGNALS_PER_BATCH} signals at once."),
        ));
    }
    // Every signal is checked before any is logged: a batch is taken whole or refused.
    let mut checked = Vec::with_capacity(signals.len());
    for signal in &signals {
        let name = signal.name.trim();
        if name.is_empty() || name.chars().count() > MAX_LABEL_CHARS {
            return Err(Error::bad_request(
                "invalid_signal",
                format!("A signal needs a name of 1 to {MAX_LABEL_CHARS} characters."),
            ));
        }
        let app_id = reporting_app(&principal, signal.app_id)?.unwrap_or(0);
        for tag in [&signal.id, &signal.occurred_at, &signal.app_instance_id].into_iter().flatten() {
            if tag.is_empty() || tag.chars().count() > MAX_SIGNAL_TAG_CHARS || tag.chars().any(char::is_control) {
                return Err(Error::bad_request(
                    "invalid_signal",
                    format!(
                        "A signal's id, occurred_at and app_instance_id are 1 to {MAX_SIGNAL_TAG_CHARS} printable characters."
                    ),
                ));
            }
        }
        if signal.payload.to_string().len() > MAX_SIGNAL_PAYLOAD_BYTES {
            return Err(Error::too_large(
                "signal_too_large",
                format!("A signal's payload can be at most {MAX_SIGNAL_PAYLOAD_BYTES} bytes of JSON."),
            ));
        }
        checked.push((app_id, name, signal));
    }
    for (app_id, name, signal) in checked {
        tracing::debug!(
            target: "mobius::client",
            app_id,
            name = %clip(name, MAX_LABEL_CHARS),
            payload = %signal.payload,
            id = signal.id.as_deref().unwrap_or(""),
            occurred_at = signal.occurred_at.as_deref().unwrap_or(""),
            "signal"
        );
    }
    Ok((StatusCode::ACCEPTED, Json(json!({ "accepted": signals.len() }))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_cannot_forge_log_lines_or_leak_tokens() {
        assert_eq!(clip("a\u{1b}[31mb\r\nc", 100), "a\u{fffd}[31mb\u{fffd}\nc");
        assert_eq!(clip("abcdef", 3), "abc […]");
        assert_eq!(
            redact_url("https://x/api/apps/1/frame?v=3&token=eyJ.secret&app_token=abc"),
            "https://x/api/apps/1/frame?v=3&token=[redacted]&app_token=[redacted]"
        );
        assert_eq!(redact_url("/plain/path"), "/plain/path");
    }

    #[test]
    fn credentials_in_free_text_are_redacted() {
        assert_eq!(
            redact_text("GET /api/apps/1/module?token=eyJhbGciOi.eyJzdWIi.c2ln failed"),
            "GET /api/apps/1/module?token=[redacted] failed"
        );
        assert_eq!(redact_text("load failed: app_token=abc123&v=2"), "load failed: app_token=[redacted]&v=2");
        assert_eq!(
            redact_text("header Authorization: Bearer s3cr3t-value!"),
            "header Authorization: Bearer [redacted]"
        );
        assert_eq!(redact_text("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvIn0.sig_-x in text"), "jwt [redacted] in text");
        let plain = "TypeError: x is undefined (eyJ is not a token here) é";
        assert_eq!(redact_text(plain), plain);
        assert_eq!(redact_text("tokens=3 and token_count: 4"), "tokens=[redacted] and token_count: 4");
    }
}
