//! Checking a pasted API key before it is saved: one `GET …/models` (the provider answers it
//! without spending a turn), so a wrong key is refused in Settings with the provider's own reason
//! instead of failing the owner's first turn.

use std::time::Duration;

use serde_json::Value;

use crate::agent::ProviderKind;

/// The whole check, connection included; a provider that does not answer by then is "unknown".
const KEY_CHECK_TIMEOUT: Duration = Duration::from_secs(8);
const KEY_CHECK_CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// The provider's reason is shown to the owner; longer bodies are cut.
const MAX_REASON_CHARS: usize = 300;
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// What the provider said about a key.
#[derive(Debug, PartialEq, Eq)]
pub enum KeyCheck {
    /// The provider accepted it.
    Accepted,
    /// The provider refused it (401/403), with its reason.
    Refused(String),
    /// The provider could not be asked (offline, timeout, a 5xx): the key is kept unchecked.
    Unknown(String),
}

/// The provider's display name.
pub fn provider_name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Claude => "Anthropic",
        ProviderKind::Codex => "OpenAI",
    }
}

/// Asks the provider at `api_url` whether `key` is valid.
pub async fn check_key(kind: ProviderKind, api_url: &str, key: &str) -> KeyCheck {
    let client = match reqwest::Client::builder()
        .timeout(KEY_CHECK_TIMEOUT)
        .connect_timeout(KEY_CHECK_CONNECT_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
    {
        Ok(client) => client,
        Err(error) => return KeyCheck::Unknown(format!("no HTTP client: {error}")),
    };
    let base = api_url.trim_end_matches('/');
    let request = match kind {
        ProviderKind::Claude => client
            .get(format!("{base}/v1/models?limit=1"))
            .header("x-api-key", key)
            .header("anthropic-version", ANTHROPIC_VERSION),
        ProviderKind::Codex => client.get(format!("{base}/models")).bearer_auth(key),
    };
    let response = match request.send().await {
        Ok(response) => response,
        Err(error) if error.is_timeout() => return KeyCheck::Unknown("it did not answer in time".into()),
        Err(_) => return KeyCheck::Unknown("it could not be reached".into()),
    };
    let status = response.status();
    if status.is_success() {
        return KeyCheck::Accepted;
    }
    let body = response.text().await.unwrap_or_default();
    match status.as_u16() {
        401 | 403 => KeyCheck::Refused(reason_of(&body).unwrap_or_else(|| format!("HTTP {}", status.as_u16()))),
        code => KeyCheck::Unknown(format!("it answered HTTP {code}")),
    }
}

/// `error.message` of a provider's error body (both use that shape), cut to one short line.
fn reason_of(body: &str) -> Option<String> {
    let value: Value = serde_json::from_str(body).ok()?;
    let message = value.pointer("/error/message").and_then(Value::as_str)?;
    let line: String = message.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(line.chars().take(MAX_REASON_CHARS).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_is_the_providers_message_on_one_short_line() {
        let body = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid\n x-api-key"}}"#;
        assert_eq!(reason_of(body).as_deref(), Some("invalid x-api-key"));
        assert_eq!(reason_of("not json"), None);
        let long = format!(r#"{{"error":{{"message":"{}"}}}}"#, "a".repeat(1000));
        assert_eq!(reason_of(&long).map(|r| r.chars().count()), Some(MAX_REASON_CHARS));
    }

    #[tokio::test]
    async fn an_unreachable_provider_is_unknown_not_refused() {
        let check = check_key(ProviderKind::Claude, crate::config::UNREACHABLE_TEST_URL, "k").await;
        assert!(matches!(check, KeyCheck::Unknown(_)), "{check:?}");
    }
}
