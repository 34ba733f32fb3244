//! GitHub (issue 36): the owner connects a fine-grained personal access token, which the server
//! checks against the GitHub API (`GET /user`, the account's login kept) and stores sealed under
//! the data key; the owner lists the repositories the agent may use (`owner/name`, `owner/*`).
//! The agent's git reaches GitHub over https through a credential helper, `mobius
//! git-credential` (configured in the agent's git config by `providers`), which asks
//! `POST /api/github/credential` with the turn's own token for each operation: the server
//! answers with the token only for an allowed repository on GitHub's host, and logs every
//! request — granted or refused — where Settings shows it. So the token is never in the
//! agent's workspace, environment, arguments or files, and an ended turn gets 401.
//!
//! The device flow needs GitHub reachable from the server at sign-in (and an OAuth app of the
//! owner's); the token path needs neither, so it is the one built. `gh` is not in the image:
//! nothing hands it `GH_TOKEN` (which would put the token in the agent's environment).

use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use crate::api::ApiJson;
use crate::auth::{Owner, Scope};
use crate::db::github::{self as sql, NewRequest, RequestRow, SEALED_CONTEXT};
use crate::error::{Error, Result};
use crate::state::AppState;
use crate::writer::WriteCommand;

/// Repositories (or `owner/*` patterns) the owner may allow.
pub const MAX_REPOS: usize = 100;
/// Credential requests kept in the log.
const KEEP_REQUESTS: i64 = 200;
/// Credential requests Settings shows.
const SHOWN_REQUESTS: i64 = 50;
/// Longest token accepted, in bytes.
const MAX_TOKEN_BYTES: usize = 1024;
/// The token check against the API, all of it.
const CHECK_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest `/user` answer read.
const MAX_USER_BYTES: usize = 256 * 1024;
/// Longest field of a credential request (git's host and path).
const MAX_FIELD_CHARS: usize = 512;
/// The user name git sends with the token (GitHub ignores it for a token).
pub const GIT_USERNAME: &str = "x-access-token";

/// The GitHub routes (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/github", get(show).put(connect).delete(disconnect))
        .route("/github/repos", put(set_repos))
        .route("/github/credential", post(credential))
}

/// `owner/name` or `owner/*` as typed (a pasted `https://github.com/owner/name(.git)` too),
/// checked: the owner 1–39 letters, digits or `-`; the name 1–100 letters, digits, `.`, `_`, `-`
/// (not `.` or `..`), or `*`. `None` when it is not one.
pub fn normalize_pattern(raw: &str) -> Option<String> {
    let raw = raw.trim();
    let path = match reqwest::Url::parse(raw) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => url.path().to_owned(),
        _ => raw.to_owned(),
    };
    let (owner, name) = repo_of_path(&path).or_else(|| {
        let (owner, star) = path.trim_matches('/').split_once('/')?;
        (star == "*" && valid_owner(owner)).then(|| (owner.to_owned(), "*".to_owned()))
    })?;
    Some(format!("{owner}/{name}"))
}

fn valid_owner(owner: &str) -> bool {
    (1..=39).contains(&owner.len()) && owner.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

fn valid_name(name: &str) -> bool {
    (1..=100).contains(&name.len())
        && name != "."
        && name != ".."
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The repository a git URL path names (`owner/name`, `/owner/name.git/`), if it names one.
pub fn repo_of_path(path: &str) -> Option<(String, String)> {
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let (owner, name) = path.split_once('/')?;
    (valid_owner(owner) && valid_name(name)).then(|| (owner.to_owned(), name.to_owned()))
}

/// Whether `owner/name` is one of `patterns` (GitHub's names are case-insensitive).
pub fn allowed(patterns: &[String], owner: &str, name: &str) -> bool {
    patterns.iter().any(|p| {
        let Some((p_owner, p_name)) = p.split_once('/') else { return false };
        p_owner.eq_ignore_ascii_case(owner) && (p_name == "*" || p_name.eq_ignore_ascii_case(name))
    })
}

/// `(protocol, host)` as git names them for `base` (`https`, `github.com`; a port only when
/// the URL gives a non-default one).
pub fn git_host(base: &str) -> Option<(String, String)> {
    let url = reqwest::Url::parse(base).ok()?;
    let host = url.host_str()?;
    let host = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    Some((url.scheme().to_owned(), host.to_ascii_lowercase()))
}

/// Why a token was not accepted.
#[derive(Debug)]
enum CheckFailure {
    Refused(u16),
    Answered(u16),
    Unreachable(String),
    Garbled,
}

/// Asks the API who `token` belongs to: the account's login.
async fn check_token(
    client: &reqwest::Client,
    api_url: &str,
    token: &str,
) -> std::result::Result<String, CheckFailure> {
    let mut auth = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| CheckFailure::Garbled)?;
    auth.set_sensitive(true);
    let response = client
        .get(format!("{api_url}/user"))
        .timeout(CHECK_TIMEOUT)
        .header(header::AUTHORIZATION, auth)
        .header(header::ACCEPT, "application/vnd.github+json")
        .header("x-github-api-version", "2022-11-28")
        .send()
        .await
        .map_err(|e| {
            CheckFailure::Unreachable(match crate::apps::smart_http::Refusal::of(&e) {
                Some(refusal) => format!("that address may not be reached: {refusal}"),
                None if e.is_timeout() => "GitHub did not answer in time".to_owned(),
                None => "GitHub could not be reached".to_owned(),
            })
        })?;
    let status = response.status().as_u16();
    if status == 401 || status == 403 {
        return Err(CheckFailure::Refused(status));
    }
    if !response.status().is_success() {
        return Err(CheckFailure::Answered(status));
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| CheckFailure::Unreachable("GitHub's answer broke off".into()))?;
        if body.len() + chunk.len() > MAX_USER_BYTES {
            return Err(CheckFailure::Garbled);
        }
        body.extend_from_slice(&chunk);
    }
    let user: serde_json::Value = serde_json::from_slice(&body).map_err(|_| CheckFailure::Garbled)?;
    user.get("login")
        .and_then(serde_json::Value::as_str)
        .filter(|login| valid_owner(login) || login.ends_with("[bot]"))
        .map(str::to_owned)
        .ok_or(CheckFailure::Garbled)
}

/// What Settings reads (never the token).
#[derive(Serialize)]
struct GithubOut {
    connected: bool,
    login: Option<String>,
    connected_at: Option<i64>,
    repos: Vec<String>,
    max_repos: usize,
    /// Where the agent's git reaches GitHub.
    git_url: String,
    /// The agent's newest credential requests, newest first.
    requests: Vec<RequestRow>,
}

async fn current(state: &AppState) -> Result<GithubOut> {
    let account = sql::account(&state.db.read).await?;
    Ok(GithubOut {
        connected: account.is_some(),
        login: account.as_ref().map(|a| a.login.clone()),
        connected_at: account.as_ref().map(|a| a.connected_at),
        repos: sql::repos(&state.db.read).await?,
        max_repos: MAX_REPOS,
        git_url: state.config.github_url.clone(),
        requests: sql::requests(&state.db.read, SHOWN_REQUESTS).await?,
    })
}

fn owner_only(owner: &Owner) -> Result<()> {
    if owner.0.scope == Scope::Owner {
        Ok(())
    } else {
        Err(Error::forbidden("owner_only", "Only the owner manages the GitHub connection."))
    }
}

/// `GET /api/github` → `{connected, login, connected_at, repos, max_repos, git_url, requests}`.
#[tracing::instrument(level = "debug", skip_all)]
async fn show(State(state): State<AppState>, owner: Owner) -> Result<Json<GithubOut>> {
    owner_only(&owner)?;
    Ok(Json(current(&state).await?))
}

#[derive(Deserialize)]
struct ConnectIn {
    token: String,
}

/// `PUT /api/github {token}`: checks the token against the API and stores it sealed with its
/// account's login (replacing the one connected before). A token GitHub refuses is 400
/// `github_token_refused` and nothing changes.
#[tracing::instrument(level = "debug", skip_all)]
async fn connect(
    State(state): State<AppState>,
    owner: Owner,
    ApiJson(body): ApiJson<ConnectIn>,
) -> Result<Json<GithubOut>> {
    owner_only(&owner)?;
    let token = body.token.trim();
    if token.is_empty() || token.len() > MAX_TOKEN_BYTES || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::bad_request(
            "invalid_github_token",
            format!("Paste the personal access token: 1 to {MAX_TOKEN_BYTES} characters, no spaces."),
        ));
    }
    let client = state.connectors.client()?;
    let login = match check_token(client, &state.config.github_api_url, token).await {
        Ok(login) => login,
        Err(CheckFailure::Refused(status)) => {
            return Err(Error::bad_request(
                "github_token_refused",
                format!("GitHub refused this token ({status}): check it was copied whole and has not expired."),
            ));
        }
        Err(CheckFailure::Answered(status)) => {
            return Err(Error::bad_gateway(
                "github_unavailable",
                format!("GitHub answered {status}; try again later."),
            ));
        }
        Err(CheckFailure::Unreachable(why)) => {
            return Err(Error::bad_gateway("github_unreachable", format!("{why}; try again later.")));
        }
        Err(CheckFailure::Garbled) => {
            return Err(Error::bad_gateway("github_unavailable", "GitHub's answer did not name an account."));
        }
    };
    let sealed = state.keys.seal(SEALED_CONTEXT, token.as_bytes())?;
    let who = login.clone();
    state.writer.call(|ack| WriteCommand::GithubConnect { token: sealed, login: who, ack }).await?;
    tracing::info!(github.login = %login, "GitHub was connected");
    Ok(Json(current(&state).await?))
}

/// `DELETE /api/github` → 204: the token is forgotten (the allowed repositories stay, for a
/// later connection); the agent's next credential request is refused.
#[tracing::instrument(level = "debug", skip_all)]
async fn disconnect(State(state): State<AppState>, owner: Owner) -> Result<StatusCode> {
    owner_only(&owner)?;
    if state.writer.call(|ack| WriteCommand::GithubDisconnect { ack }).await? {
        tracing::info!("GitHub was disconnected");
    }
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
struct ReposIn {
    repos: Vec<String>,
}

/// `PUT /api/github/repos {repos}`: the repositories the agent may use, replaced whole
/// (duplicates dropped, case-insensitively). 400 `invalid_github_repo` naming the first that
/// is not `owner/name` or `owner/*`; 400 `too_many_github_repos` past [`MAX_REPOS`].
#[tracing::instrument(level = "debug", skip_all)]
async fn set_repos(
    State(state): State<AppState>,
    owner: Owner,
    ApiJson(body): ApiJson<ReposIn>,
) -> Result<Json<GithubOut>> {
    owner_only(&owner)?;
    if body.repos.len() > MAX_REPOS {
        return Err(Error::bad_request("too_many_github_repos", format!("At most {MAX_REPOS} repositories.")));
    }
    let mut repos: Vec<String> = Vec::with_capacity(body.repos.len());
    for raw in &body.repos {
        let Some(pattern) = normalize_pattern(raw) else {
            return Err(Error::bad_request(
                "invalid_github_repo",
                format!(
                    "{:?} is not a repository: write owner/name, or owner/* for all of an owner's.",
                    raw.chars().take(120).collect::<String>()
                ),
            ));
        };
        if !repos.iter().any(|r| r.eq_ignore_ascii_case(&pattern)) {
            repos.push(pattern);
        }
    }
    state.writer.call(|ack| WriteCommand::GithubReposSet { repos, ack }).await?;
    Ok(Json(current(&state).await?))
}

#[derive(Deserialize)]
struct CredentialIn {
    /// git's helper action: `get`, `store` or `erase`.
    operation: String,
    #[serde(default)]
    protocol: Option<String>,
    #[serde(default)]
    host: Option<String>,
    #[serde(default)]
    path: Option<String>,
}

#[derive(Serialize)]
struct CredentialOut {
    username: &'static str,
    password: String,
}

/// `POST /api/github/credential {operation, protocol, host, path}` (the agent's turn token
/// only; `mobius git-credential` sends what git gave it). `get` → `{username, password}` for an
/// allowed repository on GitHub's host, else 403 `github_repo_not_allowed` /
/// `github_host_not_allowed`, 409 `github_not_connected`, 400 `github_repo_missing` (git did not
/// send the path: `credential.useHttpPath`); `erase` (git says the token it got was refused) →
/// 204, logged; `store` → 204. Every `get` and `erase` is logged for Settings.
#[tracing::instrument(level = "debug", skip_all)]
async fn credential(
    State(state): State<AppState>,
    owner: Owner,
    ApiJson(body): ApiJson<CredentialIn>,
) -> Result<Response> {
    if owner.0.scope != Scope::Agent {
        return Err(Error::forbidden("agent_only", "Only an agent's turn asks for git credentials."));
    }
    let chat_id = owner.0.chat_id.clone();
    let field = |v: &Option<String>| v.as_deref().unwrap_or_default().chars().take(MAX_FIELD_CHARS).collect::<String>();
    let (protocol, host, path) = (field(&body.protocol).to_ascii_lowercase(), field(&body.host), field(&body.path));
    let log = |outcome: &str, repo: &str| NewRequest {
        chat_id: chat_id.clone(),
        host: host.clone(),
        repo: repo.to_owned(),
        operation: body.operation.clone(),
        outcome: outcome.to_owned(),
    };
    let repo = repo_of_path(&path);
    let repo_text = repo.as_ref().map_or_else(|| path.clone(), |(o, n)| format!("{o}/{n}"));
    match body.operation.as_str() {
        "store" => return Ok(StatusCode::NO_CONTENT.into_response()),
        "erase" => {
            record(&state, log("rejected", &repo_text)).await?;
            tracing::info!(repo = %repo_text, "GitHub refused the credential git was given");
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
        "get" => {}
        _ => return Err(Error::bad_request("invalid_operation", "operation is \"get\", \"store\" or \"erase\".")),
    }
    let ours = git_host(&state.config.github_url);
    let on_github = ours.as_ref().is_some_and(|(p, h)| {
        let asked = host.to_ascii_lowercase();
        let asked = match p.as_str() {
            "https" => asked.strip_suffix(":443").unwrap_or(&asked).to_owned(),
            _ => asked.strip_suffix(":80").unwrap_or(&asked).to_owned(),
        };
        *p == protocol && *h == asked
    });
    if !on_github {
        record(&state, log("wrong_host", &repo_text)).await?;
        return Err(Error::forbidden(
            "github_host_not_allowed",
            format!("The GitHub connection is for {} only.", state.config.github_url),
        ));
    }
    let Some((repo_owner, repo_name)) = repo else {
        record(&state, log("not_allowed", &repo_text)).await?;
        return Err(Error::bad_request(
            "github_repo_missing",
            "git did not say which repository: set `git config --global credential.useHttpPath true`.",
        ));
    };
    let Some(account) = sql::account(&state.db.read).await? else {
        record(&state, log("not_connected", &repo_text)).await?;
        return Err(Error::conflict(
            "github_not_connected",
            "GitHub is not connected: ask the owner to connect it in Settings › Connectors › GitHub.",
        ));
    };
    let patterns = sql::repos(&state.db.read).await?;
    if !allowed(&patterns, &repo_owner, &repo_name) {
        record(&state, log("not_allowed", &repo_text)).await?;
        tracing::info!(repo = %repo_text, "the agent asked for a GitHub repository the owner did not allow");
        return Err(Error::forbidden(
            "github_repo_not_allowed",
            format!(
                "The owner has not allowed the agent to use {repo_text}: ask them to add it in Settings › Connectors › GitHub."
            ),
        ));
    }
    let token = state.keys.open(SEALED_CONTEXT, &account.token)?;
    let password = String::from_utf8(token).map_err(|_| Error::Internal("the GitHub token is not text".into()))?;
    record(&state, log("granted", &repo_text)).await?;
    tracing::info!(repo = %repo_text, "a GitHub credential was handed to the agent's git");
    let mut response = Json(CredentialOut { username: GIT_USERNAME, password }).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

async fn record(state: &AppState, request: NewRequest) -> Result<()> {
    state.writer.call(|ack| WriteCommand::GithubRequestLog { request, keep: KEEP_REQUESTS, ack }).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repositories_and_owner_patterns_are_checked_and_normalized() {
        assert_eq!(normalize_pattern(" octo/hello-world ").as_deref(), Some("octo/hello-world"));
        assert_eq!(normalize_pattern("octo/*").as_deref(), Some("octo/*"));
        assert_eq!(normalize_pattern("https://github.com/octo/site.git").as_deref(), Some("octo/site"));
        assert_eq!(normalize_pattern("octo/my.repo_1").as_deref(), Some("octo/my.repo_1"));
        for bad in ["octo", "octo/", "/x", "octo/a/b", "oc to/x", "octo/..", "*/*", "octo/a*", "-"] {
            assert_eq!(normalize_pattern(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_path_names_one_repository_and_patterns_match_case_insensitively() {
        assert_eq!(repo_of_path("octo/site.git"), Some(("octo".into(), "site".into())));
        assert_eq!(repo_of_path("/octo/site/"), Some(("octo".into(), "site".into())));
        assert_eq!(repo_of_path("octo/site.git/info/refs"), None);
        assert_eq!(repo_of_path(""), None);
        let patterns = vec!["Octo/Site".to_owned(), "team/*".to_owned()];
        assert!(allowed(&patterns, "octo", "site"));
        assert!(allowed(&patterns, "team", "anything"));
        assert!(!allowed(&patterns, "octo", "other"));
        assert!(!allowed(&patterns, "teams", "x"));
    }

    #[test]
    fn git_names_the_host_with_a_port_only_when_one_is_given() {
        assert_eq!(git_host("https://github.com"), Some(("https".into(), "github.com".into())));
        assert_eq!(git_host("http://127.0.0.1:8123"), Some(("http".into(), "127.0.0.1:8123".into())));
    }
}
