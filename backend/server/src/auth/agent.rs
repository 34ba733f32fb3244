//! What an agent run's token may call. The token (`Scope::Agent`, bound to one chat and one
//! running run) reaches only the routes of [`AGENT_ROUTES`] — its own chat, publishing and
//! reading apps, app storage, the proxy, notifications and its schedules — and nothing in auth, providers,
//! settings, app tokens, secrets or other chats. The table is API.md's "Agent token" table;
//! every row has a test (`tests/api/agent_scope.rs`).

use axum::extract::{MatchedPath, Request};
use axum::http::Method;

use super::{Claims, Scope};
use crate::error::Error;

/// `(method, route)` pairs an agent token may call (`*`: any method); a route naming
/// `/chats/{id}` is allowed for the token's own chat only. HEAD goes wherever GET does.
pub const AGENT_ROUTES: &[(&str, &str)] = &[
    ("GET", "/chats/{id}"),
    ("GET", "/chats/{id}/stream"),
    ("GET", "/chats/{id}/runs"),
    ("GET", "/chats/{id}/tool-output/{tool_use_id}"),
    ("POST", "/chats/{id}/media"),
    ("POST", "/apps/apply"),
    ("GET", "/apps"),
    ("GET", "/apps/"),
    ("GET", "/apps/{id}"),
    ("GET", "/apps/{id}/history"),
    ("POST", "/apps/review"),
    ("GET", "/catalog"),
    ("*", "/storage/apps/{id}/{*path}"),
    ("*", "/storage/apps/{id}/folder/{*path}"),
    ("*", "/storage/apps/{id}/move"),
    ("GET", "/storage/apps-list/{id}"),
    ("GET", "/storage/apps-list/{id}/"),
    ("GET", "/storage/apps-list/{id}/{*prefix}"),
    ("*", "/storage/shared/{*path}"),
    ("GET", "/storage/shared-list"),
    ("GET", "/storage/shared-list/"),
    ("GET", "/storage/shared-list/{*prefix}"),
    ("GET", "/proxy"),
    ("POST", "/proxy"),
    ("POST", "/notify"),
    ("POST", "/notifications/send"),
    ("GET", "/schedules"),
    ("POST", "/schedules"),
    ("DELETE", "/schedules/{id}"),
    // The connector broker checks the token is bound to the chat in its path.
    ("*", "/mcp/{chat}/{id}"),
    // Secure input: the handler checks the token is bound to the chat in its path; the owner's
    // `/submit` and `/decline` are not here.
    // GitHub: the credential helper's request (the repository is checked there); the
    // connection and its repositories are the owner's.
    ("POST", "/github/credential"),
    ("POST", "/secure-inputs/{chat}"),
    ("GET", "/secure-inputs/{chat}/{req}/wait"),
    ("GET", "/theme"),
    ("POST", "/theme/apply"),
    ("GET", "/shell"),
    ("POST", "/shell/rebuild"),
    ("POST", "/shell/use"),
    ("POST", "/screenshots"),
];

/// May an agent token bound to `own_chat` call `method` on `path`, which matched `route`?
pub fn allowed(method: &Method, route: &str, path: &str, own_chat: Option<&str>) -> bool {
    let method = if *method == Method::HEAD { "GET" } else { method.as_str() };
    let listed = AGENT_ROUTES.iter().any(|(m, r)| (*m == "*" || *m == method) && *r == route);
    if !listed {
        return false;
    }
    // `/chats/{id}…`: the second segment must be the token's own chat.
    if route.starts_with("/chats/{id}") {
        let id = path.trim_start_matches('/').split('/').nth(1);
        return id.is_some() && id == own_chat;
    }
    true
}

/// A request carrying a valid agent token (`claims`, verified by [`crate::api::gate`]) goes on
/// only to the routes of [`AGENT_ROUTES`] (403 `agent_not_allowed` otherwise). Other requests
/// pass; the routes' own extractors check their tokens.
pub fn check(request: &Request, claims: Option<&Claims>) -> Result<(), Error> {
    let Some(claims) = claims else {
        return Ok(());
    };
    // No route matched: the API's own 404 answers.
    let (Scope::Agent, Some(matched)) = (claims.scope, request.extensions().get::<MatchedPath>()) else {
        return Ok(());
    };
    let route = matched.as_str().strip_prefix("/api").unwrap_or(matched.as_str());
    let path = request.uri().path();
    let path = path.strip_prefix("/api").unwrap_or(path);
    if allowed(request.method(), route, path, claims.chat_id.as_deref()) {
        Ok(())
    } else {
        Err(Error::forbidden("agent_not_allowed", "The agent's token cannot use this route; ask the owner to do it."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_chat_only_and_listed_methods_only() {
        let own = Some("c1");
        assert!(allowed(&Method::GET, "/chats/{id}", "/chats/c1", own));
        assert!(allowed(&Method::HEAD, "/chats/{id}/runs", "/chats/c1/runs", own));
        assert!(!allowed(&Method::GET, "/chats/{id}", "/chats/c2", own));
        assert!(!allowed(&Method::PATCH, "/chats/{id}", "/chats/c1", own), "not its approval policy");
        assert!(!allowed(&Method::POST, "/chats/{id}/messages", "/chats/c1/messages", own));
        assert!(!allowed(&Method::GET, "/chats/{id}", "/chats/c1", None));
        assert!(allowed(&Method::PUT, "/storage/apps/{id}/{*path}", "/storage/apps/3/a.json", own));
        assert!(!allowed(&Method::POST, "/auth/logout-all", "/auth/logout-all", own));
        assert!(!allowed(&Method::POST, "/auth/app-token", "/auth/app-token", own));
    }
}
