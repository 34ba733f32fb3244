//! GitHub (issue 36): the owner connects a token the server checks against (a local fake of)
//! the GitHub API; the agent's git reaches GitHub through `mobius git-credential`, which asks
//! the server per operation with the turn's token, and gets the token only for a repository
//! the owner allowed. Against `tests/fake-providers/mock_github.py`: its `/api/user` and a
//! smart-HTTP git server (`git http-backend`) that wants the token as basic auth.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{PyMock, TestApp, assert_error, eventually, eventually_within, files_containing, script};

/// The owner's GitHub token: it must reach GitHub and nothing the agent keeps.
const TOKEN: &str = "github_pat_11ABCDEFG0123456789_fake7c1d";

/// The scripted GitHub.
/// The scripted GitHub (`mock_github.py`) serving the repositories under `root`.
async fn github_mock(dir: &Path, root: &Path) -> PyMock {
    let args: [&std::ffi::OsStr; 6] =
        ["--token".as_ref(), TOKEN.as_ref(), "--login".as_ref(), "octo".as_ref(), "--root".as_ref(), root.as_os_str()];
    PyMock::start(dir, "mock_github.py", &args).await
}

/// A server whose GitHub is the mock, running `cli` as Claude; the owner's token.
async fn app_with(
    dir: Arc<tempfile::TempDir>,
    mock: &PyMock,
    cli: PathBuf,
    helper: Option<PathBuf>,
) -> (TestApp, String) {
    let base = mock.base();
    let app = TestApp::spawn_in(dir, |c| {
        c.claude_bin = cli;
        c.agent_start_timeout = Duration::from_secs(10);
        c.connectors_allow_loopback = true;
        c.github_api_url = format!("{base}/api");
        c.github_url = base.clone();
        if let Some(helper) = helper {
            c.self_exe = helper;
        }
    })
    .await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    (app, token)
}

async fn wait_for_file(path: &Path) -> String {
    eventually(&format!("{} appears", path.display()), || async {
        std::fs::read_to_string(path).ok().filter(|text| !text.is_empty())
    })
    .await
}

async fn ask(app: &TestApp, bearer: &str, body: Value) -> reqwest::Response {
    app.post("/api/github/credential", body, Some(bearer)).await
}

#[tokio::test]
async fn a_checked_token_is_handed_only_to_the_live_turn_for_an_allowed_repository() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let root = tempfile::tempdir().expect("repos");
    let mock = github_mock(dir.path(), root.path()).await;
    let cli = script(
        dir.path(),
        "fake-claude-token",
        r#"IFS= read -r init
IFS= read -r user
printf '%s' "$MOBIUS_AGENT_TOKEN" > "$HOME/agent-token.tmp" && mv "$HOME/agent-token.tmp" "$HOME/agent-token"
printf '{"type":"system","subtype":"init","session_id":"s1"}\n'
exec sleep 300"#,
    );
    let (app, token) = app_with(dir, &mock, cli, None).await;
    let shown: Value = app.get("/api/github", Some(&token)).await.json().await.expect("json");
    assert_eq!((shown["connected"].as_bool(), shown["repos"].clone()), (Some(false), json!([])), "{shown}");

    // A token GitHub refuses, or one that is not a token, changes nothing.
    let wrong = app.put_json("/api/github", json!({ "token": "github_pat_wrong" }), &token).await;
    assert_error(wrong, StatusCode::BAD_REQUEST, "github_token_refused").await;
    let spaced = app.put_json("/api/github", json!({ "token": "two words" }), &token).await;
    assert_error(spaced, StatusCode::BAD_REQUEST, "invalid_github_token").await;
    let shown: Value = app.get("/api/github", Some(&token)).await.json().await.expect("json");
    assert_eq!(shown["connected"], false);
    let connected = app.put_json("/api/github", json!({ "token": TOKEN }), &token).await;
    assert_eq!(connected.status(), StatusCode::OK);
    let connected = connected.text().await.expect("text");
    assert!(!connected.contains(TOKEN), "the token is never read back");
    let connected: Value = serde_json::from_str(&connected).expect("json");
    assert_eq!((connected["connected"].as_bool(), connected["login"].as_str()), (Some(true), Some("octo")));
    let checks = mock.requests().await;
    assert_eq!(checks.iter().filter(|r| r["path"] == "/api/user" && r["token"] == true).count(), 1);

    // The allowed repositories: checked, normalized, duplicates dropped.
    let set = app
        .put_json(
            "/api/github/repos",
            json!({ "repos": ["octo/site", "team/*", "https://github.com/Octo/Site.git"] }),
            &token,
        )
        .await;
    assert_eq!(set.json::<Value>().await.expect("json")["repos"], json!(["octo/site", "team/*"]));
    let bad = app.put_json("/api/github/repos", json!({ "repos": ["octo/site", "nope"] }), &token).await;
    let body = assert_error(bad, StatusCode::BAD_REQUEST, "invalid_github_repo").await;
    assert!(body["message"].as_str().unwrap_or_default().contains("nope"), "{body}");
    let many: Vec<String> = (0..101).map(|i| format!("octo/r{i}")).collect();
    let many = app.put_json("/api/github/repos", json!({ "repos": many }), &token).await;
    assert_error(many, StatusCode::BAD_REQUEST, "too_many_github_repos").await;

    // A running turn's own token asks; the owner's cannot, and the agent cannot manage GitHub.
    app.chat(&token, "mine").await;
    app.send(&token, "mine", "hello", "m1").await;
    let agent = wait_for_file(&app.data_dir().join("agent-home/agent-token")).await;
    let host = format!("127.0.0.1:{}", mock.port);
    let get = |path: &str| json!({ "operation": "get", "protocol": "http", "host": host, "path": path });
    assert_error(ask(&app, &token, get("octo/site.git")).await, StatusCode::FORBIDDEN, "agent_only").await;
    assert_error(app.get("/api/github", Some(&agent)).await, StatusCode::FORBIDDEN, "agent_not_allowed").await;
    let put = app.put_json("/api/github/repos", json!({ "repos": ["evil/*"] }), &agent).await;
    assert_error(put, StatusCode::FORBIDDEN, "agent_not_allowed").await;

    let granted = ask(&app, &agent, get("octo/site.git")).await;
    assert_eq!(granted.status(), StatusCode::OK);
    assert_eq!(granted.headers()["cache-control"], "no-store");
    let granted: Value = granted.json().await.expect("json");
    assert_eq!((granted["username"].as_str(), granted["password"].as_str()), (Some("x-access-token"), Some(TOKEN)));
    let pattern: Value = ask(&app, &agent, get("Team/anything")).await.json().await.expect("json");
    assert_eq!(pattern["password"], TOKEN, "an owner/* pattern allows every repository of that owner");
    let refused = assert_error(
        ask(&app, &agent, get("other/secret.git")).await,
        StatusCode::FORBIDDEN,
        "github_repo_not_allowed",
    )
    .await;
    assert!(refused["message"].as_str().unwrap_or_default().contains("other/secret"), "{refused}");
    assert!(!refused.to_string().contains(TOKEN));
    let elsewhere =
        json!({ "operation": "get", "protocol": "https", "host": "github.com.evil.example", "path": "octo/site.git" });
    assert_error(ask(&app, &agent, elsewhere).await, StatusCode::FORBIDDEN, "github_host_not_allowed").await;
    let plain_http = json!({ "operation": "get", "protocol": "https", "host": host, "path": "octo/site.git" });
    assert_error(ask(&app, &agent, plain_http).await, StatusCode::FORBIDDEN, "github_host_not_allowed").await;
    let no_path = json!({ "operation": "get", "protocol": "http", "host": host });
    assert_error(ask(&app, &agent, no_path).await, StatusCode::BAD_REQUEST, "github_repo_missing").await;
    let erase = json!({ "operation": "erase", "protocol": "http", "host": host, "path": "octo/site.git" });
    assert_eq!(ask(&app, &agent, erase).await.status(), StatusCode::NO_CONTENT);
    let odd = json!({ "operation": "approve", "protocol": "http", "host": host, "path": "octo/site.git" });
    assert_error(ask(&app, &agent, odd).await, StatusCode::BAD_REQUEST, "invalid_operation").await;

    // Every request is there for the owner to see, newest first, without the token.
    let shown = app.get("/api/github", Some(&token)).await.text().await.expect("text");
    assert!(!shown.contains(TOKEN));
    let shown: Value = serde_json::from_str(&shown).expect("json");
    let seen: Vec<(String, String)> = shown["requests"]
        .as_array()
        .expect("requests")
        .iter()
        .map(|r| {
            (r["repo"].as_str().unwrap_or_default().to_owned(), r["outcome"].as_str().unwrap_or_default().to_owned())
        })
        .collect();
    for expected in [
        ("octo/site", "granted"),
        ("Team/anything", "granted"),
        ("other/secret", "not_allowed"),
        ("octo/site", "wrong_host"),
        ("octo/site", "rejected"),
    ] {
        assert!(seen.contains(&(expected.0.to_owned(), expected.1.to_owned())), "{expected:?} in {seen:?}");
    }
    assert_eq!(shown["requests"][0]["outcome"], "rejected", "newest first");
    assert_eq!(shown["requests"][0]["chat_id"], "mine");

    // Disconnected: refused at once; the allowed list stays for the next connection.
    assert_eq!(app.delete_with("/api/github", &token).await.status(), StatusCode::NO_CONTENT);
    assert_error(ask(&app, &agent, get("octo/site.git")).await, StatusCode::CONFLICT, "github_not_connected").await;
    let shown: Value = app.get("/api/github", Some(&token)).await.json().await.expect("json");
    assert_eq!((shown["connected"].as_bool(), shown["login"].clone()), (Some(false), Value::Null));
    assert_eq!(shown["repos"], json!(["octo/site", "team/*"]));
    app.put_json("/api/github", json!({ "token": TOKEN }), &token).await;

    // The turn ends: its token is refused.
    let stop = app.post("/api/chat/stop", json!({ "chat_id": "mine" }), Some(&token)).await;
    assert!(stop.status().is_success());
    eventually("the turn ends", || async { (app.detail(&token, "mine").await["running"] == false).then_some(()) })
        .await;
    assert_eq!(ask(&app, &agent, get("octo/site.git")).await.status(), StatusCode::UNAUTHORIZED);
    assert!(files_containing(app.data_dir(), TOKEN.as_bytes()).is_empty(), "the token is sealed at rest");
}

/// Runs `git` in `dir` with a clean configuration.
fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["-c", "user.name=Owner", "-c", "user.email=owner@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A bare repository `<root>/<owner>/<name>.git` with one commit on `main`.
fn bare_repo(root: &Path, owner: &str, name: &str) -> PathBuf {
    let seed = root.join(format!("seed-{owner}-{name}"));
    std::fs::create_dir_all(&seed).expect("seed");
    git(&seed, &["init", "-q"]);
    std::fs::write(seed.join("README.md"), format!("{owner}/{name}\n")).expect("readme");
    git(&seed, &["add", "README.md"]);
    git(&seed, &["commit", "-qm", "first"]);
    let bare = root.join(owner).join(format!("{name}.git"));
    std::fs::create_dir_all(bare.parent().expect("owner dir")).expect("owner dir");
    git(root, &["clone", "-q", "--bare", &seed.display().to_string(), &bare.display().to_string()]);
    bare
}

#[tokio::test]
async fn the_agents_git_clones_and_pushes_an_allowed_repository_through_the_helper_and_no_other() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let root = tempfile::tempdir().expect("repos");
    let site = bare_repo(root.path(), "octo", "site");
    bare_repo(root.path(), "other", "secret");
    let mock = github_mock(dir.path(), root.path()).await;
    // The helper git runs is the real `mobius`, behind a wrapper that records how it was run.
    let seen = dir.path().join("helper-seen.txt");
    let helper = script(
        dir.path(),
        "mobius-recorded",
        &format!(
            "{{ echo \"argv: $*\"; env; }} >> '{}'\nexec '{}' \"$@\"",
            seen.display(),
            env!("CARGO_BIN_EXE_mobius")
        ),
    );
    // The agent's turn: clone, commit and push the allowed repository, then try another.
    let cli = script(
        dir.path(),
        "fake-claude-git",
        &format!(
            r#"IFS= read -r init
IFS= read -r user
env > "$HOME/env.txt"
printf '{{"type":"system","subtype":"init","session_id":"s1"}}\n'
base={base}
git clone "$base/octo/site.git" site > "$HOME/git-clone.log" 2>&1; echo $? > "$HOME/git-clone.rc"
( cd site && echo hello > hello.txt && git add hello.txt && git -c user.name=Agent -c user.email=agent@example.com commit -qm "from the agent" && git push origin HEAD ) > "$HOME/git-push.log" 2>&1; echo $? > "$HOME/git-push.rc"
git clone "$base/other/secret.git" secret > "$HOME/git-refused.log" 2>&1; echo $? > "$HOME/git-refused.rc"
touch "$HOME/git-done"
exec sleep 300"#,
            base = mock.base()
        ),
    );
    let (app, token) = app_with(dir, &mock, cli, Some(helper)).await;
    assert_eq!(app.put_json("/api/github", json!({ "token": TOKEN }), &token).await.status(), StatusCode::OK);
    let set = app.put_json("/api/github/repos", json!({ "repos": ["octo/site"] }), &token).await;
    assert_eq!(set.status(), StatusCode::OK);
    app.chat(&token, "mine").await;
    app.send(&token, "mine", "work on octo/site", "m1").await;
    let home = app.data_dir().join("agent-home");
    eventually_within(Duration::from_secs(120), "the agent's git is done", || async {
        home.join("git-done").exists().then_some(())
    })
    .await;
    let read = |name: &str| std::fs::read_to_string(home.join(name)).unwrap_or_default();

    // Cloned and pushed: the commit is in the server's repository.
    assert_eq!(read("git-clone.rc").trim(), "0", "{}", read("git-clone.log"));
    assert_eq!(read("git-push.rc").trim(), "0", "{}", read("git-push.log"));
    let log = std::process::Command::new("git")
        .args(["--git-dir", &site.display().to_string(), "log", "-1", "--format=%s", "main"])
        .output()
        .expect("git log");
    assert_eq!(String::from_utf8_lossy(&log.stdout).trim(), "from the agent");
    // The other repository: refused by the server, the reason on git's stderr, no prompt.
    assert_ne!(read("git-refused.rc").trim(), "0");
    let refused = read("git-refused.log");
    assert!(refused.contains("github_repo_not_allowed") && refused.contains("other/secret"), "{refused}");
    let requests = mock.requests().await;
    assert!(
        requests
            .iter()
            .any(|r| r["path"].as_str().is_some_and(|p| p.starts_with("/octo/site.git")) && r["token"] == true)
    );
    assert!(
        !requests
            .iter()
            .any(|r| r["path"].as_str().is_some_and(|p| p.starts_with("/other/secret.git")) && r["auth"] == true),
        "git never sent a credential for the refused repository"
    );
    let shown: Value = app.get("/api/github", Some(&token)).await.json().await.expect("json");
    let outcomes: Vec<(&str, &str)> = shown["requests"]
        .as_array()
        .expect("requests")
        .iter()
        .map(|r| (r["repo"].as_str().unwrap_or_default(), r["outcome"].as_str().unwrap_or_default()))
        .collect();
    assert!(
        outcomes.contains(&("octo/site", "granted")) && outcomes.contains(&("other/secret", "not_allowed")),
        "{outcomes:?}"
    );

    // The helper ran as `git-credential get`, and the token is in no file, argument or
    // environment of the agent's: not the workspace, not the git config, not the helper's.
    let helper_seen = std::fs::read_to_string(&seen).expect("the helper ran");
    assert!(helper_seen.contains("argv: git-credential get"), "{helper_seen}");
    assert!(!helper_seen.contains(TOKEN), "the helper's arguments and environment never hold the token");
    let gitconfig = read(".gitconfig");
    assert!(gitconfig.contains("git-credential") && gitconfig.contains("useHttpPath = true"), "{gitconfig}");
    assert!(!read("env.txt").contains(TOKEN));
    assert!(files_containing(app.data_dir(), TOKEN.as_bytes()).is_empty(), "no file of the agent's holds the token");
}
