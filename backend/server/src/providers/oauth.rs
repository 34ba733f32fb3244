//! Claude's OAuth login (authorization code + PKCE, the flow Claude Code itself uses): the
//! owner opens the authorize URL, signs in, and pastes back the code Anthropic shows.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::locks::Unpoisoned;

/// Claude Code's public OAuth client.
const CLIENT_ID: &str = "9d1c250a-e61b-44d9-88ed-5944d1962f5e";
const REDIRECT_URI: &str = "https://console.anthropic.com/oauth/code/callback";
const SCOPES: &str = "org:create_api_key user:profile user:inference";
/// A started login must be finished within this.
const FLOW_TTL: Duration = Duration::from_secs(10 * 60);
const TOKEN_EXCHANGE_TIMEOUT: Duration = Duration::from_secs(20);

struct Flow {
    verifier: String,
    state: String,
    started: Instant,
}

/// The one login in flight.
pub struct ClaudeOAuth {
    authorize_url: String,
    token_url: String,
    flow: Mutex<Option<Flow>>,
    /// Built on first use: a TLS client with its root store costs memory the idle server
    /// does not need.
    http: std::sync::OnceLock<reqwest::Client>,
}

fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

impl ClaudeOAuth {
    pub fn new(config: &Config) -> Self {
        Self {
            authorize_url: config.claude_oauth_authorize_url.clone(),
            token_url: config.claude_oauth_token_url.clone(),
            flow: Mutex::new(None),
            http: std::sync::OnceLock::new(),
        }
    }

    fn http(&self) -> &reqwest::Client {
        self.http.get_or_init(|| {
            reqwest::Client::builder()
                .timeout(TOKEN_EXCHANGE_TIMEOUT)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap_or_default()
        })
    }

    /// Starts a login; returns the URL to open.
    pub fn start(&self) -> String {
        let verifier = random_token();
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        let state = random_token();
        let url = format!(
            "{}?code=true&client_id={CLIENT_ID}&response_type=code&redirect_uri={}&scope={}&code_challenge={challenge}&code_challenge_method=S256&state={state}",
            self.authorize_url,
            encode(REDIRECT_URI),
            encode(SCOPES),
        );
        *self.flow.locked() = Some(Flow { verifier, state, started: Instant::now() });
        url
    }

    /// Exchanges the pasted code (`code#state`, a bare code, or the callback URL) for tokens
    /// and answers Claude Code's credentials file (`.credentials.json`) for them.
    pub async fn finish(&self, pasted: &str) -> Result<Vec<u8>> {
        let (code, state) = parse_pasted(pasted)?;
        let (verifier, expected_state) = {
            let guard = self.flow.locked();
            match guard.as_ref() {
                Some(f) if f.started.elapsed() < FLOW_TTL => (f.verifier.clone(), f.state.clone()),
                _ => {
                    return Err(Error::gone(
                        "oauth_flow_expired",
                        "Start the Claude login again; the last one expired.",
                    ));
                }
            }
        };
        if let Some(state) = &state
            && *state != expected_state
        {
            return Err(Error::bad_request("oauth_state_mismatch", "This code belongs to a different login attempt."));
        }
        let body = json!({
            "grant_type": "authorization_code",
            "code": code,
            "state": state.unwrap_or(expected_state),
            "client_id": CLIENT_ID,
            "redirect_uri": REDIRECT_URI,
            "code_verifier": verifier,
        });
        let response = self.http().post(&self.token_url).json(&body).send().await.map_err(|e| {
            tracing::warn!(error = %e, "claude token exchange failed");
            Error::unavailable("oauth_unreachable", "Anthropic could not be reached to finish the login.")
        })?;
        let status = response.status();
        let tokens: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            let reason = tokens
                .pointer("/error_description")
                .or_else(|| tokens.get("error"))
                .and_then(Value::as_str)
                .unwrap_or("no details");
            return Err(Error::bad_request(
                "oauth_code_rejected",
                format!("Anthropic rejected the code ({status}): {reason}"),
            ));
        }
        let access = tokens
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::bad_request("oauth_code_rejected", "Anthropic's answer carried no access token."))?;
        let expires_in = tokens.get("expires_in").and_then(Value::as_i64).unwrap_or(3600);
        let scopes: Vec<&str> =
            tokens.get("scope").and_then(Value::as_str).unwrap_or(SCOPES).split_whitespace().collect();
        let credentials = json!({ "claudeAiOauth": {
            "accessToken": access,
            "refreshToken": tokens.get("refresh_token"),
            "expiresAt": crate::db::now_ms() + expires_in * 1000,
            "scopes": scopes,
        }});
        *self.flow.locked() = None;
        Ok(credentials.to_string().into_bytes())
    }
}

fn parse_pasted(pasted: &str) -> Result<(String, Option<String>)> {
    let text = pasted.trim();
    let text = match text.split_once("code=") {
        Some((_, rest)) if text.starts_with("http") => rest.replace("&state=", "#"),
        _ => text.to_owned(),
    };
    let (code, state) = match text.split_once('#') {
        Some((c, s)) => (c.to_owned(), Some(s.split('&').next().unwrap_or(s).to_owned())),
        None => (text.clone(), None),
    };
    if code.is_empty() || code.len() > 2048 || code.chars().any(char::is_whitespace) {
        return Err(Error::bad_request("invalid_code", "Paste the code Anthropic showed after you signed in."));
    }
    Ok((code, state.filter(|s| !s.is_empty())))
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pasted_codes_come_in_three_shapes() {
        assert_eq!(parse_pasted(" abc#xyz ").expect("ok"), ("abc".into(), Some("xyz".into())));
        assert_eq!(parse_pasted("abc").expect("ok"), ("abc".into(), None));
        assert_eq!(
            parse_pasted("https://console.anthropic.com/oauth/code/callback?code=abc&state=xyz").expect("ok"),
            ("abc".into(), Some("xyz".into()))
        );
        assert!(parse_pasted("two words").is_err());
    }

    #[test]
    fn the_authorize_url_carries_pkce_and_state() {
        let dir = tempfile::tempdir().expect("tmp");
        let oauth = ClaudeOAuth::new(&Config::for_test(dir.path()));
        let url = oauth.start();
        assert!(url.starts_with("https://claude.ai/oauth/authorize?"));
        assert!(url.contains("code_challenge_method=S256") && url.contains("&state=") && url.contains(CLIENT_ID));
        assert!(url.contains("redirect_uri=https%3A%2F%2Fconsole.anthropic.com"));
    }
}
