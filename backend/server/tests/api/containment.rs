//! Containing the agent (issue 13): keys that rotate, the agent token's narrow reach, the
//! sandbox around the agent's processes, process lifetime (escapes, hangs) and output
//! ceilings — each a reproduction that passed before the fix, driven by scripted fake CLIs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mobius::auth::{Claims, Keys, Scope};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{PASSWORD, TestApp, USERNAME, assert_error, eventually, journal, script, token_of};

/// The server's signing key as it is on disk now (what a tricked agent could read before).
fn stolen_keys(app: &TestApp) -> Keys {
    app.keys()
}

/// An owner token minted with `keys`, valid until 2100, for every epoch up to 5, naming the
/// session of `real` (readable in its payload).
fn forged_tokens(keys: &Keys, real: &str) -> Vec<String> {
    use base64::Engine;
    let payload = real.split('.').nth(1).expect("payload");
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).expect("base64");
    let sid = serde_json::from_slice::<serde_json::Value>(&payload).expect("json")["sid"].as_str().map(str::to_owned);
    (0..5)
        .map(|epoch| {
            let mut claims = Claims::new(USERNAME, Scope::Owner, epoch, 0);
            claims.exp = 4_102_444_800;
            claims.sid = sid.clone();
            keys.issue(&claims).expect("forge")
        })
        .collect()
}

async fn status_of(app: &TestApp, token: &str) -> StatusCode {
    app.get("/api/auth/session", Some(token)).await.status()
}

#[tokio::test]
async fn sign_out_everywhere_rotates_the_key_so_tokens_forged_with_a_stolen_key_die() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let forged = forged_tokens(&stolen_keys(&app), &token);
    assert_eq!(status_of(&app, &forged[0]).await, StatusCode::OK, "the stolen key works before");
    let r = app.post("/api/auth/logout-all", json!({}), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    for t in forged.iter().chain([&token]) {
        assert_error(app.get("/api/auth/session", Some(t)).await, StatusCode::UNAUTHORIZED, "token_revoked").await;
    }
    // The rotation is durable, and signing in works with the new key.
    let dir = app.stop().await;
    let app = TestApp::spawn_in(dir, |_| {}).await;
    for t in &forged {
        assert_eq!(status_of(&app, t).await, StatusCode::UNAUTHORIZED);
    }
    let fresh =
        token_of(app.post("/api/auth/token", json!({ "username": USERNAME, "password": PASSWORD }), None).await).await;
    assert_eq!(status_of(&app, &fresh).await, StatusCode::OK);
}

#[tokio::test]
async fn a_new_password_rotates_the_key_and_signs_every_session_and_device_out() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let forged = forged_tokens(&stolen_keys(&app), &token);
    let change = |current: &str, new: &str| json!({ "current_password": current, "new_password": new });
    let wrong = app.post("/api/auth/password", change("not the password", "a brand new password"), Some(&token)).await;
    assert_error(wrong, StatusCode::UNAUTHORIZED, "invalid_credentials").await;
    let weak = app.post("/api/auth/password", change(PASSWORD, "short"), Some(&token)).await;
    assert_error(weak, StatusCode::BAD_REQUEST, "weak_password").await;
    assert_eq!(status_of(&app, &token).await, StatusCode::OK, "refused changes change nothing");

    let r = app.post("/api/auth/password", change(PASSWORD, "a brand new password"), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let cookie = r.headers().get("set-cookie").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    assert!(cookie.starts_with("mobius_device=") && !cookie.starts_with("mobius_device=;"), "{cookie}");
    let new_token = token_of(r).await;
    assert_eq!(status_of(&app, &new_token).await, StatusCode::OK, "this browser stays signed in");
    for t in forged.iter().chain([&token]) {
        assert_eq!(status_of(&app, t).await, StatusCode::UNAUTHORIZED);
    }
    let old = app.post("/api/auth/token", json!({ "username": USERNAME, "password": PASSWORD }), None).await;
    assert_error(old, StatusCode::UNAUTHORIZED, "invalid_credentials").await;
    let new =
        app.post("/api/auth/token", json!({ "username": USERNAME, "password": "a brand new password" }), None).await;
    assert_eq!(new.status(), StatusCode::OK);
}

#[tokio::test]
async fn app_secrets_outlive_key_rotations_and_legacy_ones_are_sealed_again() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let (id, _) = app.register_app("vault").await;
    let put = app
        .client
        .put(app.url(&format!("/api/apps/{id}/secrets/NEW")))
        .bearer_auth(&token)
        .json(&json!({ "value": "sealed under the data key" }))
        .send()
        .await
        .expect("put");
    assert_eq!(put.status(), StatusCode::NO_CONTENT);
    // A secret as an earlier release stored it: sealed with a key derived from secret.key.
    let legacy = stolen_keys(&app).seal(&format!("app-secret:{id}:OLD"), b"sealed the old way").expect("seal");
    let dir = app.stop().await;
    let url = format!("sqlite://{}", dir.path().join("db/mobius.sqlite3").display());
    let mut conn = <sqlx::SqliteConnection as sqlx::Connection>::connect(&url).await.expect("db");
    sqlx::query("INSERT INTO app_secrets (app_id, name, sealed, created_at, updated_at) VALUES (?, 'OLD', ?, 0, 0)")
        .bind(id)
        .bind(&legacy)
        .execute(&mut conn)
        .await
        .expect("insert");
    sqlx::Connection::close(conn).await.expect("close");

    let app = TestApp::spawn_in(dir, |_| {}).await;
    let token =
        token_of(app.post("/api/auth/token", json!({ "username": USERNAME, "password": PASSWORD }), None).await).await;
    let r = app.post("/api/auth/logout-all", json!({}), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let token =
        token_of(app.post("/api/auth/token", json!({ "username": USERNAME, "password": PASSWORD }), None).await).await;
    for (name, value) in [("NEW", "sealed under the data key"), ("OLD", "sealed the old way")] {
        let r = app.get(&format!("/api/apps/{id}/secrets/{name}"), Some(&token)).await;
        assert_eq!(r.status(), StatusCode::OK, "{name}");
        assert_eq!(r.text().await.expect("text"), value);
    }
}

/// A Claude imitation that saves its agent token and process id in its HOME, says hello, and
/// keeps the turn running until stopped.
fn token_keeper(dir: &Path) -> PathBuf {
    script(
        dir,
        "fake-claude-keeper",
        r#"IFS= read -r init
IFS= read -r user
printf '%s' "$MOBIUS_AGENT_TOKEN" > "$HOME/agent-token.tmp" && mv "$HOME/agent-token.tmp" "$HOME/agent-token"
printf '{"type":"system","subtype":"init","session_id":"s1"}\n'
exec sleep 300"#,
    )
}

async fn wait_for_file(path: &Path) -> String {
    eventually(&format!("{} appears", path.display()), || async {
        std::fs::read_to_string(path).ok().filter(|text| !text.is_empty())
    })
    .await
}

async fn app_with_cli(
    bin: impl FnOnce(&Path) -> PathBuf,
    tweak: impl FnOnce(&mut mobius::config::Config),
) -> (TestApp, String) {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let bin = bin(dir.path());
    let app = TestApp::spawn_in(dir, |c| {
        c.claude_bin = bin;
        c.agent_start_timeout = Duration::from_secs(10);
        tweak(c);
    })
    .await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    (app, token)
}

/// A concrete request path for a route of the agent table.
fn concrete(route: &str, own_chat: &str, app_id: i64) -> String {
    let path = route
        .replace("/chats/{id}", &format!("/chats/{own_chat}"))
        .replace("{chat}", own_chat)
        .replace("{id}", &app_id.to_string())
        .replace("{tool_use_id}", "t1")
        .replace("{*path}", "notes/a.json")
        .replace("{*prefix}", "notes");
    format!("/api{path}")
}

async fn call(app: &TestApp, method: Method, path: &str, token: &str) -> reqwest::Response {
    let mut request = app.client.request(method.clone(), app.url(path)).bearer_auth(token);
    if method != Method::GET && method != Method::HEAD {
        request = request.json(&json!({}));
    }
    // Event streams answer with headers at once; nothing below reads their body.
    request.timeout(Duration::from_secs(20)).send().await.expect("request")
}

async fn code_of(r: reqwest::Response) -> (StatusCode, String) {
    let status = r.status();
    if r.headers().get("content-type").is_some_and(|v| v.to_str().unwrap_or_default().starts_with("text/event-stream"))
    {
        return (status, String::new());
    }
    let body: Value = r.json().await.unwrap_or(Value::Null);
    (status, body["code"].as_str().unwrap_or_default().to_owned())
}

#[tokio::test]
async fn the_agent_token_reaches_its_table_and_nothing_else() {
    let (app, token) = app_with_cli(token_keeper, |_| {}).await;
    let (app_id, _) = app.register_app("notes").await;
    // A local catalog, so reading it needs no network.
    let catalog_dir = tempfile::tempdir().expect("catalog dir");
    let index = catalog_dir.path().join("catalog.json");
    std::fs::write(&index, json!({ "schema": 1, "apps": [] }).to_string()).expect("index");
    let set = app
        .client
        .put(app.url("/api/catalog/indexes"))
        .bearer_auth(&token)
        .json(&json!({ "indexes": [index.display().to_string()] }))
        .send()
        .await
        .expect("PUT");
    assert_eq!(set.status(), StatusCode::OK, "{}", set.text().await.unwrap_or_default());
    app.chat(&token, "mine").await;
    app.chat(&token, "other").await;
    app.send(&token, "mine", "hello", "m1").await;
    let agent = wait_for_file(&app.data_dir().join("agent-home/agent-token")).await;

    // Every row of the table (API.md, "The agent's token") is reachable.
    for (method, route) in mobius::auth::agent::AGENT_ROUTES {
        let method = if *method == "*" { Method::GET } else { Method::from_bytes(method.as_bytes()).expect("method") };
        let path = concrete(route, "mine", app_id);
        let (status, code) = code_of(call(&app, method.clone(), &path, &agent).await).await;
        assert!(
            code != "agent_not_allowed" && code != "wrong_scope" && status != StatusCode::UNAUTHORIZED,
            "{method} {path}: {status} {code}"
        );
    }
    // Everything else is refused before the route runs.
    let denied = [
        (Method::POST, "/api/auth/logout-all".to_owned()),
        (Method::POST, "/api/admin/sign-out-everywhere".to_owned()),
        (Method::POST, "/api/auth/password".to_owned()),
        (Method::GET, "/api/auth/session".to_owned()),
        (Method::POST, "/api/auth/app-token".to_owned()),
        (Method::POST, "/api/auth/install-pass".to_owned()),
        (Method::POST, "/api/providers/claude/api-key".to_owned()),
        (Method::DELETE, "/api/providers/codex".to_owned()),
        (Method::POST, "/api/auth/provider/login".to_owned()),
        (Method::GET, "/api/settings".to_owned()),
        (Method::POST, "/api/settings".to_owned()),
        (Method::GET, "/api/chats".to_owned()),
        (Method::POST, "/api/chats".to_owned()),
        (Method::GET, "/api/chats/other".to_owned()),
        (Method::POST, "/api/chats/other/messages".to_owned()),
        (Method::PATCH, "/api/chats/mine".to_owned()),
        (Method::DELETE, "/api/chats/mine".to_owned()),
        (Method::POST, "/api/chats/mine/messages".to_owned()),
        (Method::POST, "/api/chat/stop".to_owned()),
        (Method::GET, "/api/chats/search?q=x".to_owned()),
        (Method::GET, format!("/api/apps/{app_id}/secrets/KEY")),
        (Method::PUT, format!("/api/apps/{app_id}/secrets/KEY")),
        (Method::POST, "/api/apps/install".to_owned()),
        (Method::DELETE, format!("/api/apps/{app_id}")),
        (Method::GET, "/api/events/system".to_owned()),
        (Method::POST, "/api/app-chats".to_owned()),
        (Method::PATCH, "/api/schedules/1".to_owned()),
        (Method::POST, "/api/schedules/1/run".to_owned()),
        (Method::GET, "/api/schedules/1/runs".to_owned()),
        (Method::PUT, "/api/schedules/timezone".to_owned()),
        (Method::POST, "/api/auth/app-job-token".to_owned()),
        (Method::POST, format!("/api/apps/{app_id}/run-job")),
        (Method::POST, format!("/api/apps/{app_id}/schedule")),
        (Method::GET, "/api/connectors".to_owned()),
        (Method::POST, "/api/connectors".to_owned()),
        (Method::PUT, "/api/chats/mine/connectors".to_owned()),
        (Method::GET, "/api/chats/mine/context".to_owned()),
    ];
    for (method, path) in denied {
        let r = call(&app, method.clone(), &path, &agent).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{method} {path}");
        assert_error(r, StatusCode::FORBIDDEN, "agent_not_allowed").await;
    }
    // Nothing of the above happened: the owner is still signed in, the chat still runs.
    assert_eq!(status_of(&app, &token).await, StatusCode::OK);
    assert_eq!(app.detail(&token, "mine").await["running"], true);
}

#[tokio::test]
async fn the_agent_token_sees_and_removes_only_its_own_chats_schedules_and_makes_few_and_slow_ones() {
    let (app, token) = app_with_cli(token_keeper, |_| {}).await;
    app.chat(&token, "mine").await;
    app.chat(&token, "other").await;
    let create = |token: String, body: Value| {
        let app = &app;
        async move { app.post("/api/schedules", body, Some(&token)).await }
    };
    let id_of = |v: &Value| v["id"].as_i64().expect("id");
    let theirs = create(token.clone(), json!({ "prompt": "other's", "cron": "0 8 * * *", "chat_id": "other" })).await;
    assert_eq!(theirs.status(), StatusCode::CREATED);
    let theirs = id_of(&theirs.json::<Value>().await.expect("json"));
    let here =
        create(token.clone(), json!({ "prompt": "the owner's here", "cron": "0 9 * * *", "chat_id": "mine" })).await;
    let here = id_of(&here.json::<Value>().await.expect("json"));
    app.send(&token, "mine", "hello", "m1").await;
    let agent = wait_for_file(&app.data_dir().join("agent-home/agent-token")).await;

    // Its own: a reminder into a new chat counts as its own (it made it from this chat).
    let made = create(agent.clone(), json!({ "prompt": "brief me", "cron": "0 7 * * *", "new_chat": true })).await;
    assert_eq!(made.status(), StatusCode::CREATED);
    let made: Value = made.json().await.expect("json");
    assert_eq!((made["origin_chat_id"].as_str(), made["chat_id"].as_str()), (Some("mine"), None));
    let listed = |token: String| {
        let app = &app;
        async move {
            let list: Value = app.get("/api/schedules", Some(&token)).await.json().await.expect("list");
            let mut ids: Vec<i64> = list["schedules"].as_array().expect("schedules").iter().map(id_of).collect();
            ids.sort_unstable();
            ids
        }
    };
    assert_eq!(listed(agent.clone()).await, vec![here, id_of(&made)], "the agent reads its own chat's only");
    assert_eq!(listed(token.clone()).await, vec![theirs, here, id_of(&made)], "the owner reads all");
    let r = call(&app, Method::DELETE, &format!("/api/schedules/{theirs}"), &agent).await;
    assert_error(r, StatusCode::NOT_FOUND, "schedule_not_found").await;
    assert_eq!(listed(token.clone()).await.len(), 3, "another chat's schedule is untouched");
    let r = call(&app, Method::DELETE, &format!("/api/schedules/{}", id_of(&made)), &agent).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    // Editing stays the owner's.
    let r = app
        .client
        .patch(app.url(&format!("/api/schedules/{here}")))
        .bearer_auth(&agent)
        .json(&json!({ "paused": true }));
    assert_error(r.send().await.expect("patch"), StatusCode::FORBIDDEN, "agent_not_allowed").await;

    // Not more often than every 10 minutes, even where the short gap is rare.
    for cron in ["* * * * *", "*/5 * * * *", "0,59 0,23 * * *", "* * 1 1 *"] {
        let r = create(agent.clone(), json!({ "prompt": "flood", "cron": cron })).await;
        assert_error(r, StatusCode::BAD_REQUEST, "schedule_too_frequent").await;
    }
    // And at most 10 from one chat (reminders count until they fire).
    for i in 0..10 {
        let body = if i % 2 == 0 {
            json!({ "prompt": "tick", "cron": "*/10 * * * *" })
        } else {
            json!({ "prompt": "later", "in": "3h" })
        };
        let r = create(agent.clone(), body).await;
        assert_eq!(r.status(), StatusCode::CREATED, "schedule {i}: {}", r.text().await.unwrap_or_default());
    }
    let r = create(agent.clone(), json!({ "prompt": "one more", "in": "2h" })).await;
    assert_error(r, StatusCode::PAYLOAD_TOO_LARGE, "too_many_agent_schedules").await;
    // The owner is not held to the agent's bounds.
    let r = create(token.clone(), json!({ "prompt": "every minute", "cron": "* * * * *", "chat_id": "mine" })).await;
    assert_eq!(r.status(), StatusCode::CREATED);
}

#[test]
fn the_agent_table_in_api_md_is_the_one_the_server_enforces() {
    let doc = std::fs::read_to_string(mobius::config::checkout_root().join("backend/server/API.md")).expect("API.md");
    let section = doc.split("### The agent's token").nth(1).expect("the agent's token section");
    let section = section.split("\n#").next().unwrap_or_default();
    let mut documented: Vec<(String, String)> = section
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let route = cells.get(2)?.strip_prefix("`/api")?.strip_suffix('`')?;
            Some((cells.get(1)?.trim_matches('`').to_owned(), route.to_owned()))
        })
        .collect();
    let mut enforced: Vec<(String, String)> =
        mobius::auth::agent::AGENT_ROUTES.iter().map(|(m, r)| ((*m).to_owned(), (*r).to_owned())).collect();
    documented.sort();
    enforced.sort();
    assert_eq!(documented, enforced);
}

/// Waits until the process `pid` is gone (or a zombie); `what` names it when it is not.
async fn gone(pid: &str, what: &str) {
    eventually(what, || async {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
        (stat.is_empty() || stat.contains(") Z ")).then_some(())
    })
    .await
}

async fn until_idle(app: &TestApp, token: &str, chat: &str) -> Value {
    eventually("the turn ends", || async {
        let detail = app.detail(token, chat).await;
        (detail["running"] == false).then_some(detail)
    })
    .await
}

/// Every way out of a turn that the environment-based sweep missed or never looked at: a
/// double fork into a new session, a cleared environment, the run's variables unset, the
/// server's own binary (`mobius push-deliver` waiting on a pipe), a grandchild of a process
/// that left, a lowered label. Each writes its pid to `$HOME/escaped/<name>`.
fn escapes(mobius: &str) -> String {
    format!(
        r#"mkdir -p "$HOME/escaped"; cd "$HOME/escaped"
( setsid sleep 300 & echo $! > double-fork )
( env -i /usr/bin/setsid /bin/sleep 300 & echo $! > cleared-env )
( env -u MOBIUS_RUN_ID -u MOBIUS_DATA_DIR setsid sleep 300 & echo $! > unset-env )
( setsid bash -c 'echo $$ > own-binary; exec "{mobius}" push-deliver < <(sleep 300)' & )
( setsid bash -c 'sleep 300 & echo $! > grandchild; wait' & )
( setsid bash -c 'ulimit -Hx 5; exec sleep 300' & echo $! > lowered-label )
for f in double-fork cleared-env unset-env own-binary grandchild lowered-label; do while [ ! -s $f ]; do sleep 0.05; done; done
echo escaped > done"#
    )
}

const ESCAPED: [&str; 6] = ["double-fork", "cleared-env", "unset-env", "own-binary", "grandchild", "lowered-label"];

fn escaped_pids(app: &TestApp) -> Vec<(String, String)> {
    ESCAPED
        .iter()
        .map(|name| {
            let pid = std::fs::read_to_string(app.data_dir().join("agent-home/escaped").join(name)).expect(name);
            ((*name).to_owned(), pid.lines().next().unwrap_or_default().trim().to_owned())
        })
        .collect()
}

#[tokio::test]
async fn processes_that_escaped_any_way_die_with_the_turn() {
    let escape = escapes(env!("CARGO_BIN_EXE_mobius"));
    let (app, token) = app_with_cli(
        |dir| {
            script(
                dir,
                "fake-claude-escape",
                &format!(
                    r#"IFS= read -r init
IFS= read -r user
{escape}
printf '{{"type":"system","subtype":"init","session_id":"s1"}}\n'
printf '{{"type":"result","subtype":"success","is_error":false,"session_id":"s1"}}\n'
cat >/dev/null"#
                ),
            )
        },
        |_| {},
    )
    .await;
    app.chat(&token, "c").await;
    app.send(&token, "c", "go", "m1").await;
    wait_for_file(&app.data_dir().join("agent-home/escaped/done")).await;
    let escaped = escaped_pids(&app);
    until_idle(&app, &token, "c").await;
    for (name, pid) in escaped {
        gone(&pid, &format!("the {name} escapee {pid} ends with its turn")).await;
    }
}

#[tokio::test]
async fn a_server_that_stops_ends_its_running_turns_processes_and_what_escaped_them() {
    let escape = escapes(env!("CARGO_BIN_EXE_mobius"));
    let (app, token) = app_with_cli(
        |dir| {
            script(
                dir,
                "fake-claude-escape-and-hang",
                &format!(
                    r#"IFS= read -r init
IFS= read -r user
echo $$ > "$HOME/cli.pid"
{escape}
printf '{{"type":"system","subtype":"init","session_id":"s1"}}\n'
exec sleep 300"#
                ),
            )
        },
        |_| {},
    )
    .await;
    app.chat(&token, "c").await;
    app.send(&token, "c", "go", "m1").await;
    wait_for_file(&app.data_dir().join("agent-home/escaped/done")).await;
    let mut left = escaped_pids(&app);
    left.push(("cli".into(), wait_for_file(&app.data_dir().join("agent-home/cli.pid")).await.trim().to_owned()));
    let _dir = app.stop().await;
    for (name, pid) in left {
        gone(&pid, &format!("the {name} process {pid} ends with the server")).await;
    }
}

#[tokio::test]
async fn processes_that_escaped_a_turn_die_at_the_next_start_after_the_server_was_killed() {
    let bin_dir = tempfile::tempdir().expect("bin dir");
    let bin = script(
        bin_dir.path(),
        "fake-claude-escape-and-hang",
        &format!(
            r#"[ "$1" = --version ] && echo "2.1.332 (Claude Code)" && exit 0
IFS= read -r init
IFS= read -r user
echo $$ > "$HOME/cli.pid"
{}
printf '{{"type":"system","subtype":"init","session_id":"s1"}}\n'
exec sleep 300"#,
            escapes(env!("CARGO_BIN_EXE_mobius"))
        ),
    );
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let env = [("MOBIUS_CLAUDE_BIN", bin.display().to_string())];
    let app = TestApp::spawn_process(dir, &env).await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    let settings: Value = app.get("/api/settings", Some(&token)).await.json().await.expect("settings");
    app.chat(&token, "c").await;
    app.send(&token, "c", "go", "m1").await;
    wait_for_file(&app.data_dir().join("agent-home/escaped/done")).await;
    let mut left = escaped_pids(&app);
    left.push(("cli".into(), wait_for_file(&app.data_dir().join("agent-home/cli.pid")).await.trim().to_owned()));
    let markers: Vec<_> =
        std::fs::read_dir(app.data_dir().join("run/agents")).expect("markers").flatten().map(|e| e.path()).collect();
    assert_eq!(markers.len(), 1, "one tree, one marker: {markers:?}");
    let dir = app.kill9();
    let alive = |pid: &str| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        !stat.is_empty() && !stat.contains(") Z ")
    };
    // The killed server's orphans are reparented to the nearest subreaper, which is this test
    // process when an in-process server of another test made it one; that server's next sweep
    // may then take the lowered-label escapee (lowered labels are anyone's strays) before the
    // restart does. Its death at a turn's end is `processes_that_escaped_any_way_die_with_the_turn`.
    left.retain(|(name, pid)| name != "lowered-label" || alive(pid));
    for (name, pid) in &left {
        assert!(alive(pid), "{name} {pid} died with the server (nothing left to test)");
    }
    let app = TestApp::spawn_process(dir, &env).await;
    for (name, pid) in left {
        gone(&pid, &format!("the {name} process {pid} ends at the server's restart")).await;
    }
    assert!(markers.iter().all(|m| !m.exists()), "the dead server's markers are gone");
    assert_eq!(settings["sandbox"]["mode"], "landlock", "the real server confines them: {settings}");
    // The cut turn continues by itself (and escapes again): a clean stop ends it all.
    app.stop().await;
}

#[tokio::test]
async fn a_silent_cli_is_ended_at_the_silence_ceiling_with_a_clear_card() {
    let (app, token) = app_with_cli(
        |dir| {
            script(
                dir,
                "fake-claude-hang",
                r#"IFS= read -r init
IFS= read -r user
echo $$ > "$HOME/cli.pid"
printf '{"type":"system","subtype":"init","session_id":"s1"}\n'
exec sleep 300"#,
            )
        },
        |c| c.agent_silence_max = Duration::from_secs(2),
    )
    .await;
    app.chat(&token, "c").await;
    app.send(&token, "c", "go", "m1").await;
    let cli = wait_for_file(&app.data_dir().join("agent-home/cli.pid")).await;
    let detail = until_idle(&app, &token, "c").await;
    let last = detail["messages"].as_array().expect("messages").last().expect("reply").clone();
    let error = last["blocks"].as_array().expect("blocks").iter().find(|b| b["type"] == "error").expect("error card");
    assert!(error["message"].as_str().expect("message").contains("printed nothing"), "{error}");
    let runs: Value = app.get("/api/chats/c/runs", Some(&token)).await.json().await.expect("runs");
    assert_eq!(runs[0]["status"], "failed");
    gone(&cli, &format!("the hung CLI {} is killed", cli.trim())).await;
}

#[tokio::test]
async fn a_chatty_cli_is_ended_at_the_wall_clock_ceiling() {
    let (app, token) = app_with_cli(
        |dir| {
            script(
                dir,
                "fake-claude-chatty",
                r#"IFS= read -r init
IFS= read -r user
printf '{"type":"system","subtype":"init","session_id":"s1"}\n'
printf '{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}},"session_id":"s1"}\n'
while :; do
  printf '{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"more "}},"session_id":"s1"}\n'
  sleep 0.1
done"#,
            )
        },
        |c| c.agent_turn_max = Duration::from_secs(2),
    )
    .await;
    app.chat(&token, "c").await;
    app.send(&token, "c", "go", "m1").await;
    let detail = until_idle(&app, &token, "c").await;
    let last = detail["messages"].as_array().expect("messages").last().expect("reply").clone();
    let error = last["blocks"].as_array().expect("blocks").iter().find(|b| b["type"] == "error").expect("error card");
    assert!(error["message"].as_str().expect("message").contains("ran for"), "{error}");
}

/// Bytes of the database and its WAL.
fn db_bytes(dir: &Path) -> u64 {
    ["db/mobius.sqlite3", "db/mobius.sqlite3-wal"]
        .iter()
        .map(|f| std::fs::metadata(dir.join(f)).map(|m| m.len()).unwrap_or(0))
        .sum()
}

#[tokio::test]
async fn a_flood_of_model_text_is_capped_inline_and_kept_whole_in_a_file() {
    const LINES: usize = 12_000;
    const CHUNK: usize = 1000;
    let (app, token) = app_with_cli(
        |dir| {
            script(
                dir,
                "fake-claude-flood",
                &format!(
                    r#"IFS= read -r init
IFS= read -r user
chunk=$(printf '%0{CHUNK}d' 0)
printf '{{"type":"system","subtype":"init","session_id":"s1"}}\n'
printf '{{"type":"stream_event","event":{{"type":"message_start","message":{{"id":"m1"}}}},"session_id":"s1"}}\n'
i=0
while [ $i -lt {LINES} ]; do
  printf '{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"%s"}}}},"session_id":"s1"}}\n' "$chunk"
  i=$((i+1))
done
printf '{{"type":"result","subtype":"success","is_error":false,"session_id":"s1"}}\n'
cat >/dev/null"#
                ),
            )
        },
        |_| {},
    )
    .await;
    let before = db_bytes(app.data_dir());
    app.chat(&token, "c").await;
    app.send(&token, "c", "go", "m1").await;
    let detail = until_idle(&app, &token, "c").await;
    let reply = detail["messages"].as_array().expect("messages").last().expect("reply").clone();
    let text = reply["blocks"][0]["content"].as_str().expect("text block");
    assert!(text.len() <= mobius::agent::fold::MAX_INLINE_TEXT_BYTES + mobius::agent::fold::OVERFLOW_NOTE.len());
    assert!(text.ends_with(mobius::agent::fold::OVERFLOW_NOTE), "the block says it was cut");
    let deltas = journal(&app, &token, "c")
        .await
        .iter()
        .filter(|e| matches!(e.event, mobius::protocol::ChatEvent::Text { .. }))
        .count();
    assert!(deltas <= mobius::agent::fold::MAX_INLINE_TEXT_BYTES / CHUNK + 1, "{deltas} text events journaled");
    let rest = app.get("/api/chats/c/tool-output/m1:0", Some(&token)).await;
    assert_eq!(rest.status(), StatusCode::OK);
    let rest = rest.text().await.expect("text");
    assert_eq!(rest.len() - "… ".len(), LINES * CHUNK - mobius::agent::fold::MAX_INLINE_TEXT_BYTES, "nothing lost");
    let grown = db_bytes(app.data_dir()).saturating_sub(before);
    assert!(grown < 8 << 20, "the database grew by {grown} bytes for {} bytes of text", LINES * CHUNK);
}

#[tokio::test]
async fn settings_say_whether_the_sandbox_is_on() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let settings: Value = app.get("/api/settings", Some(&token)).await.json().await.expect("json");
    assert_eq!(settings["sandbox"]["mode"], "off", "tests turn it off: {settings}");
    assert!(settings["sandbox"]["reason"].as_str().is_some_and(|r| r.contains("MOBIUS_AGENT_SANDBOX")));
    let dir = app.stop().await;
    let app = TestApp::spawn_in(dir, |c| c.agent_sandbox = true).await;
    let token =
        token_of(app.post("/api/auth/token", json!({ "username": USERNAME, "password": PASSWORD }), None).await).await;
    let settings: Value = app.get("/api/settings", Some(&token)).await.json().await.expect("json");
    match mobius_sys::landlock::abi_version() {
        Ok(abi) => {
            assert_eq!(settings["sandbox"]["mode"], "landlock");
            assert_eq!(settings["sandbox"]["abi"], abi);
            let signals = if abi >= 6 { "scoped" } else { "open" };
            assert_eq!(settings["sandbox"]["signals"]["mode"], signals, "{settings}");
        }
        Err(_) => assert_eq!(settings["sandbox"]["mode"], "off"),
    }
}

/// A Claude imitation: in chat `victim` it records its pid and keeps its turn running; in any
/// other chat it tries to signal (`kill -0`: would a signal be allowed) the server (its
/// parent), the victim turn's CLI, the running app job and a process of its own, and reports
/// each as its reply.
fn signaller(dir: &Path) -> PathBuf {
    script(
        dir,
        "fake-claude-signaller",
        r#"IFS= read -r init
IFS= read -r user
printf '{"type":"system","subtype":"init","session_id":"s1"}\n'
if [ "$MOBIUS_CHAT_ID" = victim ]; then
  echo $$ > "$HOME/victim.tmp" && mv "$HOME/victim.tmp" "$HOME/victim.pid"
  exec sleep 120
fi
report=""
reach() { if kill -0 "$1" 2>/dev/null; then report="$report REACHED:$2"; else report="$report REFUSED:$2"; fi; }
reach "$PPID" server
reach "$(cat "$HOME/victim.pid")" other-turn
reach "$(cat "$MOBIUS_DATA_DIR"/apps/*/job-state/pid)" job
sleep 60 & own=$!
reach "$own" own
kill "$own"
printf '{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"%s"}]},"session_id":"s1"}\n' "$report"
printf '{"type":"result","subtype":"success","is_error":false,"session_id":"s1"}\n'
cat >/dev/null"#,
    )
}

/// What the signaller reports under a sandbox held to `max_abi` (`None`: the kernel's), with
/// Settings' word on signals.
async fn signals_reached(bin: &Path, max_abi: Option<u32>) -> (String, Value) {
    let bin = bin.to_path_buf();
    let (app, token) = app_with_cli(
        |_| bin,
        |c| {
            c.agent_sandbox = true;
            c.agent_landlock_max_abi = max_abi;
            c.job_timeout = Duration::from_secs(60);
        },
    )
    .await;
    let settings: Value = app.get("/api/settings", Some(&token)).await.json().await.expect("settings");
    let (id, _) = app.register_app("sleeper").await;
    let job = app.data_dir().join("apps/sleeper/job.sh");
    std::fs::create_dir_all(job.parent().expect("dir")).expect("app dir");
    std::fs::write(&job, "echo $$ > \"$APP_JOB_STATE_DIR/pid.tmp\" && mv \"$APP_JOB_STATE_DIR/pid.tmp\" \"$APP_JOB_STATE_DIR/pid\"\nexec sleep 60\n")
        .expect("job");
    let r = app.post(&format!("/api/apps/{id}/run-job"), json!({}), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    wait_for_file(&app.data_dir().join(format!("apps/{id}/job-state/pid"))).await;
    app.chat(&token, "victim").await;
    app.send(&token, "victim", "hold on", "v1").await;
    wait_for_file(&app.data_dir().join("agent-home/victim.pid")).await;
    app.chat(&token, "c").await;
    app.send(&token, "c", "go", "m1").await;
    let detail = until_idle(&app, &token, "c").await;
    let reply = detail["messages"].as_array().expect("messages").last().expect("reply")["content"].to_string();
    assert_eq!(app.detail(&token, "victim").await["running"], true, "the victim turn still runs");
    let stop = app.post("/api/chat/stop", json!({ "chat_id": "victim" }), Some(&token)).await;
    assert!(stop.status().is_success());
    (reply, settings["sandbox"].clone())
}

#[tokio::test]
async fn with_landlock_6_the_agent_signals_only_its_own_processes_and_below_settings_say_it_can_not() {
    let Ok(abi) = mobius_sys::landlock::abi_version() else {
        eprintln!("this kernel has no Landlock; the sandbox state test covers it");
        return;
    };
    // The fake CLI lives outside the data dir, as a real one does.
    let bin_dir = tempfile::tempdir().expect("bin dir");
    let bin = signaller(bin_dir.path());
    if abi >= 6 {
        let (reply, sandbox) = signals_reached(&bin, None).await;
        assert_eq!(sandbox["signals"]["mode"], "scoped", "{sandbox}");
        for target in ["server", "other-turn", "job"] {
            assert!(reply.contains(&format!("REFUSED:{target}")), "{target}: {reply}");
        }
        assert!(reply.contains("REACHED:own"), "its own processes stay its to signal: {reply}");
    } else {
        eprintln!("this kernel's Landlock is ABI {abi}: only the fallback is checked");
    }
    // The fallback: held below ABI 6 the agent reaches the server again, and Settings says so.
    let (reply, sandbox) = signals_reached(&bin, Some(5)).await;
    assert_eq!(sandbox["signals"]["mode"], "open", "{sandbox}");
    assert!(sandbox["signals"]["reason"].as_str().is_some_and(|r| r.contains("ABI 6")), "{sandbox}");
    for target in ["server", "other-turn", "job", "own"] {
        assert!(reply.contains(&format!("REACHED:{target}")), "{target}: {reply}");
    }
}

/// A Claude imitation that tries to read what the sandbox keeps from it and reports each
/// attempt as its reply.
fn prober(dir: &Path) -> PathBuf {
    script(
        dir,
        "fake-claude-prober",
        r#"IFS= read -r init
IFS= read -r user
report=""
probe() { if cat "$1" >/dev/null 2>&1; then report="$report READ:$2"; else report="$report DENIED:$2"; fi; }
probe /etc/passwd passwd
probe "$MOBIUS_DATA_DIR/secret.key" secret.key
probe "$MOBIUS_DATA_DIR/data.key" data.key
probe "$MOBIUS_DATA_DIR/db/mobius.sqlite3" db
probe "$MOBIUS_DATA_DIR/cli-auth/codex/auth.json" codex
probe "$MOBIUS_DATA_DIR/credentials/claude-api-key" masters
probe "$MOBIUS_DATA_DIR/run/agents/$(ls "$MOBIUS_DATA_DIR/run/agents" | head -n 1)" run
if echo ok > "$MOBIUS_DATA_DIR/apps/probe.txt" && echo ok > "$HOME/probe.txt" && echo ok > "$TMPDIR/probe.txt"; then report="$report WROTE"; fi
printf '{"type":"system","subtype":"init","session_id":"s1"}\n'
printf '{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"%s"}]},"session_id":"s1"}\n' "$report"
printf '{"type":"result","subtype":"success","is_error":false,"session_id":"s1"}\n'
cat >/dev/null"#,
    )
}

#[tokio::test]
async fn with_landlock_the_agent_cannot_read_keys_database_other_credentials_or_run() {
    if mobius_sys::landlock::abi_version().is_err() {
        eprintln!("this kernel has no Landlock; the sandbox state test covers the fallback");
        return;
    }
    // The fake CLI lives outside the data dir, as a real one does.
    let bin_dir = tempfile::tempdir().expect("bin dir");
    let bin = prober(bin_dir.path());
    let mut replies = Vec::new();
    for sandbox in [false, true] {
        let bin = bin.clone();
        let (app, token) = app_with_cli(|_| bin, |c| c.agent_sandbox = sandbox).await;
        std::fs::create_dir_all(app.data_dir().join("cli-auth/codex")).expect("codex dir");
        std::fs::write(app.data_dir().join("cli-auth/codex/auth.json"), "{}").expect("codex credentials");
        std::fs::create_dir_all(app.data_dir().join("apps")).expect("apps");
        app.chat(&token, "c").await;
        app.send(&token, "c", "go", "m1").await;
        let detail = until_idle(&app, &token, "c").await;
        let reply = detail["messages"].as_array().expect("messages").last().expect("reply").to_string();
        replies.push(reply);
    }
    let (open, confined) = (&replies[0], &replies[1]);
    // Without the sandbox (as before) the agent reads everything; the probe is sound.
    assert!(open.contains("READ:secret.key") && open.contains("READ:db"), "{open}");
    assert!(open.contains("READ:masters"), "the probe reads the server's credentials when open: {open}");
    for f in ["secret.key", "data.key", "db", "codex", "masters", "run"] {
        assert!(confined.contains(&format!("DENIED:{f}")), "{f}: {confined}");
    }
    assert!(confined.contains("READ:passwd"), "system files stay readable: {confined}");
    assert!(confined.contains("WROTE"), "its own folders stay writable: {confined}");
}
