//! OAuth 2.1 for connectors (the MCP authorization spec): the server discovers where the
//! connector's server signs its users in (protected-resource metadata, RFC 9728, then the
//! authorization server's metadata, RFC 8414 / OpenID), registers itself as a public client
//! (RFC 7591) unless the owner pasted one, and sends the owner's browser to sign in with PKCE
//! (S256) and a one-time `state`. The callback exchanges the code; access and refresh tokens are
//! sealed under the data key in the connector's row and the access token is renewed shortly
//! before it expires, the refresh token rotated when the server issues a new one. Every URL the
//! metadata names is held to the connectors' address rules and every answer is bounded; no
//! token ever leaves the server (the broker adds it to each upstream call).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures_util::StreamExt;
use rand::RngCore;
use reqwest::Url;
use reqwest::header::{HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::auth::jwt::Keys;
use crate::db::connectors::{ConnectorRow, sealed_context};
use crate::error::{Error, Result};
use crate::locks::Unpoisoned;

/// Where the authorization server sends the owner's browser back (under the public origin).
pub const CALLBACK_PATH: &str = "/api/connectors/oauth/callback";
/// A started sign-in must come back within this.
const FLOW_TTL: Duration = Duration::from_secs(10 * 60);
/// Sign-ins in flight at once (each one a connector the owner is signing in to).
const MAX_FLOWS: usize = 16;
/// The largest metadata or token answer read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// One metadata, registration or token request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// An access token this close to its end is renewed before use.
const RENEW_MARGIN_SECS: i64 = 60;
/// Longest token, client id or secret kept.
const MAX_VALUE_BYTES: usize = 8192;

/// What a connector signed in with OAuth keeps, sealed in its row's `secret`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Grant {
    /// The client: pasted by the owner (`pasted`) or registered by the server.
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    #[serde(default)]
    pub pasted: bool,
    /// Where tokens are renewed.
    pub token_endpoint: Option<String>,
    pub access_token: Option<String>,
    pub refresh_token: Option<String>,
    /// Unix seconds; `None` when the server did not say.
    pub expires_at: Option<i64>,
}

impl Grant {
    /// Opens a row's grant (an empty one when it has none yet).
    pub fn of(keys: &Keys, row: &ConnectorRow) -> Result<Self> {
        let Some(sealed) = &row.secret else { return Ok(Self::default()) };
        let plain = keys.open(&sealed_context(&row.name), sealed)?;
        serde_json::from_slice(&plain).map_err(|_| Error::Internal("a connector's OAuth grant is unreadable".into()))
    }

    /// Seals it for connector `name`'s row.
    pub fn seal(&self, keys: &Keys, name: &str) -> Result<Vec<u8>> {
        let plain = serde_json::to_vec(self).map_err(|e| Error::Internal(e.to_string()))?;
        keys.seal(&sealed_context(name), &plain)
    }

    /// The same client with no tokens (signed out).
    pub fn signed_out(&self) -> Self {
        Self {
            client_id: self.client_id.clone().filter(|_| self.pasted),
            client_secret: self.client_secret.clone().filter(|_| self.pasted),
            pasted: self.pasted,
            ..Self::default()
        }
    }

    /// Whether the access token should be renewed before use at unix time `now`.
    pub fn needs_renewal(&self, now: i64) -> bool {
        self.refresh_token.is_some() && self.expires_at.is_some_and(|at| at - now <= RENEW_MARGIN_SECS)
    }

    /// `Authorization: Bearer <access token>`, if signed in.
    pub fn header(&self) -> Result<Option<(HeaderName, HeaderValue)>> {
        let Some(token) = &self.access_token else { return Ok(None) };
        let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| Error::Internal("an access token is not a header value".into()))?;
        value.set_sensitive(true);
        Ok(Some((reqwest::header::AUTHORIZATION, value)))
    }
}

/// A sign-in the owner started and has not finished.
#[derive(Debug, Clone)]
pub struct Flow {
    pub connector_id: i64,
    pub verifier: String,
    pub token_endpoint: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    pub redirect_uri: String,
    pub resource: String,
    started: Instant,
}

/// The sign-ins in flight, by `state` (each taken once) and the lock renewals take turns on.
#[derive(Debug, Default)]
pub struct Flows {
    pending: Mutex<HashMap<String, Flow>>,
    renewing: tokio::sync::Mutex<()>,
}

impl Flows {
    /// Keeps `flow` under a new `state` (a connector's earlier unfinished sign-in is replaced;
    /// the oldest is dropped past [`MAX_FLOWS`]).
    fn put(&self, flow: Flow) -> String {
        let state = random_token();
        let mut pending = self.pending.locked();
        pending.retain(|_, f| f.started.elapsed() < FLOW_TTL && f.connector_id != flow.connector_id);
        if pending.len() >= MAX_FLOWS
            && let Some(oldest) = pending.iter().min_by_key(|(_, f)| f.started).map(|(s, _)| s.clone())
        {
            pending.remove(&oldest);
        }
        pending.insert(state.clone(), flow);
        state
    }

    /// The sign-in `state` names, once, if it has not expired.
    pub fn take(&self, state: &str) -> Option<Flow> {
        let flow = self.pending.locked().remove(state)?;
        (flow.started.elapsed() < FLOW_TTL).then_some(flow)
    }

    /// Held while a token is renewed, so two calls never spend one refresh token twice.
    pub async fn renewing(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.renewing.lock().await
    }
}

fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Why a sign-in step failed, in words for the owner.
fn refused(message: impl Into<String>) -> Error {
    Error::bad_gateway("connector_oauth_failed", message)
}

/// The outbound side of the flow: the connectors' client and address rules.
pub struct Outbound<'a> {
    pub client: &'a reqwest::Client,
    pub policy: &'a crate::apps::smart_http::FetchPolicy,
}

impl Outbound<'_> {
    fn checked(&self, raw: &str, what: &str) -> Result<Url> {
        let url = Url::parse(raw).map_err(|_| refused(format!("The {what} is not a URL.")))?;
        if let Some(why) = self.policy.refuse_url(&url) {
            return Err(refused(format!("The {what} may not be used: {why}.")));
        }
        Ok(url)
    }

    /// Reads a JSON answer of at most [`MAX_ANSWER_BYTES`].
    async fn json(&self, request: reqwest::RequestBuilder, what: &str) -> Result<(u16, Value)> {
        let response =
            request.timeout(REQUEST_TIMEOUT).header(reqwest::header::ACCEPT, "application/json").send().await.map_err(
                |e| {
                    refused(format!("The {what} could not be reached{}.", if e.is_timeout() { " in time" } else { "" }))
                },
            )?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|_| refused(format!("The {what} broke off its answer.")))?;
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(refused(format!("The {what}'s answer is too large.")));
            }
            body.extend_from_slice(&chunk);
        }
        let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        Ok((status, value))
    }

    async fn get_json(&self, url: &Url, what: &str) -> Result<Option<Value>> {
        let (status, value) = self.json(self.client.get(url.clone()), what).await?;
        Ok((status == 200 && value.is_object()).then_some(value))
    }
}

/// Where a connector's users sign in: what discovery found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerMetadata {
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    /// Scopes the protected resource lists (asked for, space-separated), if any.
    pub scope: Option<String>,
}

/// `resource_metadata="…"` of a `WWW-Authenticate: Bearer …` header.
pub fn resource_metadata_hint(header: &str) -> Option<String> {
    let at = header.find("resource_metadata=")? + "resource_metadata=".len();
    let rest = &header[at..];
    let value = match rest.strip_prefix('"') {
        Some(quoted) => &quoted[..quoted.find('"')?],
        None => rest.split([',', ' ']).next()?,
    };
    (!value.is_empty()).then(|| value.to_owned())
}

/// The well-known URLs for `suffix` of `url`: path-inserted first (RFC 8414 §3.1), then at the
/// origin's root.
fn well_known(url: &Url, suffix: &str) -> Vec<String> {
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let mut out = Vec::new();
    if !path.is_empty() {
        out.push(format!("{origin}/.well-known/{suffix}{path}"));
    }
    out.push(format!("{origin}/.well-known/{suffix}"));
    out
}

/// Discovers where connector `mcp_url` signs users in.
pub async fn discover(out: &Outbound<'_>, mcp_url: &str) -> Result<ServerMetadata> {
    let resource = out.checked(mcp_url, "connector's address")?;
    // The resource's metadata: named by its 401, else at the well-known places.
    let mut candidates = Vec::new();
    let probe = out.client.post(resource.clone()).timeout(REQUEST_TIMEOUT).header("content-type", "application/json").body(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mobius","version":"0"}}}"#,
    );
    if let Ok(answer) = probe.send().await
        && answer.status() == reqwest::StatusCode::UNAUTHORIZED
        && let Some(hint) = answer
            .headers()
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .and_then(resource_metadata_hint)
    {
        candidates.push(hint);
    }
    candidates.extend(well_known(&resource, "oauth-protected-resource"));
    let mut issuer = None;
    let mut scope = None;
    for candidate in candidates {
        let url = out.checked(&candidate, "resource metadata address")?;
        if let Some(meta) = out.get_json(&url, "connector's resource metadata").await? {
            issuer = meta["authorization_servers"]
                .as_array()
                .and_then(|a| a.first())
                .and_then(Value::as_str)
                .map(str::to_owned);
            scope = meta["scopes_supported"]
                .as_array()
                .map(|s| s.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "))
                .filter(|s| !s.is_empty());
            break;
        }
    }
    // Servers from before resource metadata sign in at the connector's own origin.
    let issuer = issuer.unwrap_or_else(|| resource.origin().ascii_serialization());
    let issuer = out.checked(&issuer, "authorization server's address")?;
    let mut metadata = None;
    let mut places = well_known(&issuer, "oauth-authorization-server");
    places.extend(well_known(&issuer, "openid-configuration"));
    places.push(format!("{}/.well-known/openid-configuration", issuer.as_str().trim_end_matches('/')));
    places.dedup();
    for place in places {
        let url = out.checked(&place, "authorization server's metadata address")?;
        if let Some(meta) = out.get_json(&url, "authorization server's metadata").await? {
            metadata = Some(meta);
            break;
        }
    }
    let meta = metadata
        .ok_or_else(|| refused("The connector's server does not say where to sign in (no OAuth metadata found)."))?;
    if let Some(methods) = meta["code_challenge_methods_supported"].as_array()
        && !methods.iter().any(|m| m == "S256")
    {
        return Err(refused("The connector's sign-in does not support PKCE (S256), which OAuth 2.1 requires."));
    }
    let endpoint = |key: &str| -> Result<Option<String>> {
        match meta[key].as_str() {
            Some(raw) => Ok(Some(out.checked(raw, &key.replace('_', " "))?.to_string())),
            None => Ok(None),
        }
    };
    Ok(ServerMetadata {
        authorization_endpoint: endpoint("authorization_endpoint")?
            .ok_or_else(|| refused("The connector's sign-in metadata has no authorization endpoint."))?,
        token_endpoint: endpoint("token_endpoint")?
            .ok_or_else(|| refused("The connector's sign-in metadata has no token endpoint."))?,
        registration_endpoint: endpoint("registration_endpoint")?,
        scope,
    })
}

fn bounded(value: Option<&str>) -> Option<String> {
    value.filter(|v| !v.is_empty() && v.len() <= MAX_VALUE_BYTES).map(str::to_owned)
}

/// Registers this server as a public client (RFC 7591): `(client_id, client_secret)`.
pub async fn register(out: &Outbound<'_>, endpoint: &str, redirect_uri: &str) -> Result<(String, Option<String>)> {
    let url = out.checked(endpoint, "registration endpoint")?;
    let body = serde_json::json!({
        "client_name": "Möbius",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let (status, answer) = out.json(out.client.post(url).json(&body), "registration endpoint").await?;
    let client_id =
        bounded(answer["client_id"].as_str()).filter(|_| (200..300).contains(&status)).ok_or_else(|| {
            refused(format!(
                "The connector's server refused to register Möbius as a client (HTTP {status}); paste a client instead."
            ))
        })?;
    Ok((client_id, bounded(answer["client_secret"].as_str())))
}

/// Starts a sign-in for connector `row`: discovery, a client, and the URL to open.
pub async fn start(
    out: &Outbound<'_>,
    flows: &Flows,
    grant: &Grant,
    row: &ConnectorRow,
    redirect_uri: &str,
) -> Result<(String, Option<(String, Option<String>)>)> {
    let meta = discover(out, &row.url).await?;
    let (client_id, client_secret, registered) = match (&grant.client_id, grant.pasted) {
        (Some(id), true) => (id.clone(), grant.client_secret.clone(), None),
        _ => {
            let endpoint = meta.registration_endpoint.as_deref().ok_or_else(|| {
                refused("The connector's server does not register clients itself: paste a client ID for it.")
            })?;
            let (id, secret) = register(out, endpoint, redirect_uri).await?;
            (id.clone(), secret.clone(), Some((id, secret)))
        }
    };
    let verifier = random_token();
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    let state = flows.put(Flow {
        connector_id: row.id,
        verifier,
        token_endpoint: meta.token_endpoint.clone(),
        client_id: client_id.clone(),
        client_secret,
        redirect_uri: redirect_uri.to_owned(),
        resource: row.url.clone(),
        started: Instant::now(),
    });
    let mut url = Url::parse(&meta.authorization_endpoint).map_err(|e| Error::Internal(e.to_string()))?;
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", &client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", &state)
            .append_pair("resource", &row.url);
        if let Some(scope) = &meta.scope {
            query.append_pair("scope", scope);
        }
    }
    Ok((url.into(), registered))
}

/// The tokens a token endpoint answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokens {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_at: Option<i64>,
}

async fn token_request(out: &Outbound<'_>, endpoint: &str, form: &[(&str, &str)], now: i64) -> Result<Tokens> {
    let url = out.checked(endpoint, "token endpoint")?;
    let (status, answer) = out.json(out.client.post(url).form(form), "token endpoint").await?;
    if !(200..300).contains(&status) {
        let reason = answer["error"].as_str().unwrap_or("refused").chars().take(60).collect::<String>();
        return Err(refused(format!("The connector's sign-in refused the token request ({reason}).")));
    }
    if answer["token_type"].as_str().is_some_and(|t| !t.eq_ignore_ascii_case("bearer")) {
        return Err(refused("The connector's sign-in issued a token that is not a bearer token."));
    }
    let access_token = bounded(answer["access_token"].as_str())
        .filter(|t| HeaderValue::from_str(&format!("Bearer {t}")).is_ok())
        .ok_or_else(|| refused("The connector's sign-in answered without a usable access token."))?;
    Ok(Tokens {
        access_token,
        refresh_token: bounded(answer["refresh_token"].as_str()),
        expires_at: answer["expires_in"].as_i64().filter(|s| *s > 0).map(|s| now.saturating_add(s)),
    })
}

/// Exchanges the callback's `code` for tokens.
pub async fn exchange(out: &Outbound<'_>, flow: &Flow, code: &str, now: i64) -> Result<Tokens> {
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", flow.redirect_uri.as_str()),
        ("client_id", flow.client_id.as_str()),
        ("code_verifier", flow.verifier.as_str()),
        ("resource", flow.resource.as_str()),
    ];
    if let Some(secret) = &flow.client_secret {
        form.push(("client_secret", secret));
    }
    token_request(out, &flow.token_endpoint, &form, now).await
}

/// Renews `grant`'s access token with its refresh token; the refresh token is replaced when the
/// server rotates it.
pub async fn renew(out: &Outbound<'_>, grant: &Grant, resource: &str, now: i64) -> Result<Grant> {
    let (Some(refresh), Some(endpoint), Some(client_id)) =
        (&grant.refresh_token, &grant.token_endpoint, &grant.client_id)
    else {
        return Err(refused("The connector's sign-in cannot be renewed: sign in again."));
    };
    let mut form = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh.as_str()),
        ("client_id", client_id.as_str()),
        ("resource", resource),
    ];
    if let Some(secret) = &grant.client_secret {
        form.push(("client_secret", secret));
    }
    let tokens = token_request(out, endpoint, &form, now).await?;
    Ok(Grant {
        access_token: Some(tokens.access_token),
        refresh_token: tokens.refresh_token.or_else(|| grant.refresh_token.clone()),
        expires_at: tokens.expires_at,
        ..grant.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_metadata_hint_is_read_quoted_or_bare() {
        assert_eq!(
            resource_metadata_hint(
                r#"Bearer realm="mcp", resource_metadata="https://a.example/.well-known/oauth-protected-resource""#
            )
            .as_deref(),
            Some("https://a.example/.well-known/oauth-protected-resource")
        );
        assert_eq!(
            resource_metadata_hint("Bearer resource_metadata=https://a.example/m, x=1").as_deref(),
            Some("https://a.example/m")
        );
        assert_eq!(resource_metadata_hint("Bearer"), None);
        assert_eq!(resource_metadata_hint(r#"Bearer resource_metadata=""#), None);
    }

    #[test]
    fn well_known_places_insert_the_path_first() {
        let url = Url::parse("https://a.example/tenant/mcp/").expect("url");
        assert_eq!(
            well_known(&url, "oauth-protected-resource"),
            [
                "https://a.example/.well-known/oauth-protected-resource/tenant/mcp",
                "https://a.example/.well-known/oauth-protected-resource"
            ]
        );
        let root = Url::parse("https://a.example").expect("url");
        assert_eq!(well_known(&root, "openid-configuration"), ["https://a.example/.well-known/openid-configuration"]);
    }

    #[test]
    fn a_flow_is_taken_once_and_a_newer_one_replaces_the_connectors_older_one() {
        let flows = Flows::default();
        let flow = |id| Flow {
            connector_id: id,
            verifier: "v".into(),
            token_endpoint: "https://a.example/token".into(),
            client_id: "c".into(),
            client_secret: None,
            redirect_uri: "https://me.example/cb".into(),
            resource: "https://a.example/mcp".into(),
            started: Instant::now(),
        };
        let first = flows.put(flow(1));
        let second = flows.put(flow(1));
        let other = flows.put(flow(2));
        assert!(flows.take(&first).is_none(), "replaced by the connector's newer sign-in");
        assert_eq!(flows.take(&second).map(|f| f.connector_id), Some(1));
        assert!(flows.take(&second).is_none(), "a state is used once");
        assert!(flows.take("forged").is_none());
        for id in 10..40 {
            flows.put(flow(id));
        }
        assert!(flows.pending.locked().len() <= MAX_FLOWS, "bounded");
        assert!(flows.take(&other).is_none(), "the oldest went first");
    }

    #[test]
    fn renewal_is_due_near_the_end_and_signing_out_keeps_only_a_pasted_client() {
        let grant = Grant {
            client_id: Some("c".into()),
            client_secret: Some("s".into()),
            pasted: true,
            token_endpoint: Some("https://a.example/token".into()),
            access_token: Some("at".into()),
            refresh_token: Some("rt".into()),
            expires_at: Some(1_000),
        };
        assert!(!grant.needs_renewal(900));
        assert!(grant.needs_renewal(950));
        assert!(!Grant { refresh_token: None, ..grant.clone() }.needs_renewal(2_000), "nothing to renew with");
        let out = grant.signed_out();
        assert_eq!((out.client_id.as_deref(), out.access_token, out.refresh_token), (Some("c"), None, None));
        let registered = Grant { pasted: false, ..grant }.signed_out();
        assert_eq!(registered, Grant::default(), "a registered client is registered again next time");
    }
}
