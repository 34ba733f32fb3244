//! Issue 32, item 1: the server never follows a link, opens a FIFO or reads a device the agent
//! planted in a folder it can write. Each test plants what the attacker planted — links to
//! `secret.key`, to the database, to a file outside the data folder, FIFOs, `/dev/zero` — at
//! the paths the server touches, then checks the server refused (a clear error where it is an
//! API call), did not hang, did not read the target and did not write through the link.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, eventually, script};

fn fifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
}

/// The bytes of the files a planted link aims at, to compare after.
struct Targets {
    secret: Vec<u8>,
    outside: PathBuf,
    _outside_dir: tempfile::TempDir,
}

impl Targets {
    fn of(app: &TestApp) -> Self {
        let outside_dir = tempfile::tempdir().expect("outside");
        let outside = outside_dir.path().join("outside.txt");
        std::fs::write(&outside, b"a file outside the data folder\n").expect("outside");
        Self {
            secret: std::fs::read(app.data_dir().join("secret.key")).expect("secret"),
            outside,
            _outside_dir: outside_dir,
        }
    }

    fn secret(app: &TestApp) -> PathBuf {
        app.data_dir().join("secret.key")
    }

    fn database(app: &TestApp) -> PathBuf {
        app.data_dir().join("db/mobius.sqlite3")
    }

    /// Nothing was written through a link: the key and the outside file are as they were, and
    /// the database is still a database the server answers from.
    async fn unchanged(&self, app: &TestApp, token: &str) {
        assert_eq!(std::fs::read(Self::secret(app)).expect("secret"), self.secret, "secret.key was written");
        assert_eq!(std::fs::read(&self.outside).expect("outside"), b"a file outside the data folder\n");
        let db = std::fs::read(Self::database(app)).expect("db");
        assert!(db.starts_with(b"SQLite format 3\0"), "the database was overwritten");
        assert_eq!(app.get("/api/chats", Some(token)).await.status(), StatusCode::OK);
    }
}

async fn until_idle(app: &TestApp, token: &str, chat: &str) -> Value {
    eventually("the turn ends (a planted FIFO must not hold it)", || async {
        let detail = app.detail(token, chat).await;
        (detail["running"] == false).then_some(detail)
    })
    .await
}

#[tokio::test]
async fn a_turn_neither_reads_the_key_through_nor_writes_through_links_in_the_agents_folders() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    // A Claude imitation that says which API key it was given.
    let bin = script(
        dir.path(),
        "fake-claude-key",
        r#"IFS= read -r init
IFS= read -r user
printf '{"type":"system","subtype":"init","session_id":"s1"}\n'
printf '{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"key=%s"}]},"session_id":"s1"}\n' "$ANTHROPIC_API_KEY"
printf '{"type":"result","subtype":"success","is_error":false,"session_id":"s1"}\n'
cat >/dev/null"#,
    );
    let app = TestApp::spawn_in(dir, |c| c.claude_bin = bin).await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    let targets = Targets::of(&app);
    let data = app.data_dir().to_path_buf();
    // What the agent planted in its own folders (it can write them; see the sandbox test).
    let claude = data.join("cli-auth/claude");
    std::fs::create_dir_all(&claude).expect("claude");
    symlink(Targets::secret(&app), claude.join("mobius-api-key")).expect("old key name");
    symlink(Targets::secret(&app), claude.join(".credentials.json")).expect("credentials");
    let home = data.join("agent-home");
    std::fs::create_dir_all(&home).expect("home");
    symlink(Targets::database(&app), home.join(".mobius-profile")).expect("profile");
    symlink(&targets.outside, home.join(".profile")).expect("outside");
    fifo(&home.join(".bashrc"));

    app.chat(&token, "c").await;
    app.send(&token, "c", "go", "m1").await;
    let detail = until_idle(&app, &token, "c").await;
    let reply = detail["messages"][1].to_string();
    assert!(reply.contains("key=sk-test"), "the CLI got the owner's key: {reply}");
    let secret = String::from_utf8_lossy(&targets.secret).trim().to_owned();
    assert!(!reply.contains(&secret), "the signing key reached the agent");
    targets.unchanged(&app, &token).await;
    for name in [".mobius-profile", ".profile", ".bashrc"] {
        let meta = std::fs::symlink_metadata(home.join(name)).expect(name);
        assert!(meta.is_file(), "{name}: replaced by a plain file");
    }
    assert!(std::fs::read_to_string(home.join(".profile")).expect("profile").contains(".mobius-profile"));
    assert!(std::fs::symlink_metadata(claude.join(".credentials.json")).is_err(), "an API key writes no login file");
}

#[tokio::test]
async fn credentials_of_the_old_layout_that_are_links_are_never_read_at_start_up() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let first = TestApp::spawn_in(dir.clone(), |_| {}).await;
    let token = first.setup_owner().await;
    let secret = std::fs::read(Targets::secret(&first)).expect("secret");
    drop(first.stop().await);
    // Before the upgrade, the agent swapped the old layout's key file for a link to the key.
    let claude = dir.path().join("cli-auth/claude");
    std::fs::create_dir_all(&claude).expect("claude");
    symlink(dir.path().join("secret.key"), claude.join("mobius-api-key")).expect("link");
    fifo(&dir.path().join("cli-auth/claude/.credentials.json"));
    let app = TestApp::spawn_in(dir, |_| {}).await;
    let status: Value = app.get("/api/auth/providers/status", Some(&token)).await.json().await.expect("json");
    assert_eq!(status["providers"]["claude"]["connected"], false, "{status}");
    assert_eq!(std::fs::read(Targets::secret(&app)).expect("secret"), secret);
    assert!(!app.data_dir().join("credentials/claude-api-key").exists());
}

fn write_app(data: &Path, slug: &str, extra: &str) -> PathBuf {
    let dir = data.join("apps").join(slug);
    std::fs::create_dir_all(&dir).expect("app");
    std::fs::write(
        dir.join("mobius.json"),
        format!(
            r#"{{"id":"{slug}","name":"Notes","version":"0.1.0","description":"Notes.","entry":"index.jsx"{extra}}}"#
        ),
    )
    .expect("manifest");
    std::fs::write(dir.join("index.jsx"), "export default function App() { return <p>notes</p>; }\n").expect("index");
    dir
}

#[tokio::test]
async fn an_apply_leaves_planted_links_pipes_and_devices_out_and_writes_through_none() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let targets = Targets::of(&app);
    let data = app.data_dir().to_path_buf();
    let folder = write_app(&data, "notes", "");
    let r = app.post("/api/apps/apply", json!({ "slug": "notes" }), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap_or_default());
    assert!(!folder.join(".git").exists(), "the repository is the server's, not in the agent's folder");

    // The agent plants: the ignore file the server used to append to, a source file linked to
    // the key, a FIFO, a device, a folder link, and a `.git` of its own pointing elsewhere.
    std::fs::remove_file(folder.join(".gitignore")).expect("gitignore");
    symlink(Targets::database(&app), folder.join(".gitignore")).expect("gitignore link");
    symlink(Targets::secret(&app), folder.join("key.js")).expect("key link");
    symlink("/dev/zero", folder.join("zero.js")).expect("zero");
    fifo(&folder.join("pipe.js"));
    symlink(data.join("db"), folder.join("db")).expect("folder link");
    std::fs::create_dir_all(folder.join(".git")).expect("own git");
    std::fs::write(folder.join(".git/config"), format!("[core]\n\tworktree = {}\n", data.display())).expect("cfg");
    std::fs::write(folder.join("index.jsx"), "export default function App() { return <p>second</p>; }\n")
        .expect("edit");
    let r = app.post("/api/apps/apply", json!({ "slug": "notes" }), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap_or_default());
    targets.unchanged(&app, &token).await;
    // What was committed: the plain files only.
    let out = std::process::Command::new("git")
        .args(["ls-tree", "-r", "--name-only", "main"])
        .current_dir(data.join("app-repos/notes"))
        .output()
        .expect("git");
    let tree = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(tree.contains("index.jsx") && tree.contains("mobius.json"), "{tree}");
    for planted in ["key.js", "zero.js", "pipe.js", "db/"] {
        assert!(!tree.contains(planted), "{planted} was committed: {tree}");
    }

    // A manifest that is a link, a FIFO or a device is refused with a clear error, at once.
    for plant in [
        |p: &Path, secret: &Path| symlink(secret, p).expect("link"),
        |p: &Path, _: &Path| fifo(p),
        |p: &Path, _: &Path| symlink("/dev/zero", p).expect("zero"),
    ] {
        std::fs::remove_file(folder.join("mobius.json")).expect("rm");
        plant(&folder.join("mobius.json"), &Targets::secret(&app));
        let r = app.post("/api/apps/apply", json!({ "slug": "notes" }), Some(&token)).await;
        let err = assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "manifest_invalid").await;
        assert!(err["message"].as_str().is_some_and(|m| m.contains("not a plain file")), "{err}");
    }
    targets.unchanged(&app, &token).await;
}

#[tokio::test]
async fn a_seed_linked_to_the_key_is_refused_and_the_key_never_becomes_app_data() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let data = app.data_dir().to_path_buf();
    let folder = write_app(&data, "seeded", r#","storage_seeds":{"start.json":"seed.json"}"#);
    symlink(Targets::secret(&app), folder.join("seed.json")).expect("link");
    let r = app.post("/api/apps/apply", json!({ "slug": "seeded" }), Some(&token)).await;
    let err = assert_error(r, StatusCode::BAD_REQUEST, "invalid_seed").await;
    assert!(err["message"].as_str().is_some_and(|m| m.contains("seed.json")), "{err}");
    let secret = std::fs::read_to_string(Targets::secret(&app)).expect("secret");
    let stored = walk(&data.join("app-data"));
    assert!(!stored.iter().any(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains(secret.trim()))));
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() { out.extend(walk(&path)) } else { out.push(path) }
    }
    out
}

#[tokio::test]
async fn an_apps_old_repository_moves_out_of_its_folder_at_start_up_with_its_history() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir.clone(), |_| {}).await;
    let token = app.setup_owner().await;
    let folder = write_app(app.data_dir(), "notes", "");
    let r = app.post("/api/apps/apply", json!({ "slug": "notes" }), Some(&token)).await;
    let id = r.json::<Value>().await.expect("json")["app"]["id"].as_i64().expect("id");
    drop(app.stop().await);
    // The old layout: the repository inside the app's folder (as releases before this one
    // kept it), with a hook and a config the agent wrote.
    std::fs::rename(dir.path().join("app-repos/notes/.git"), folder.join(".git")).expect("old layout");
    std::fs::remove_dir_all(dir.path().join("app-repos")).expect("no new layout");
    std::fs::write(folder.join(".git/hooks/post-commit"), "#!/bin/sh\ntouch /tmp/never\n").expect("hook");
    std::fs::write(folder.join(".git/config"), "[core]\n\tbare = false\n\tworktree = /\n").expect("config");
    let app = TestApp::spawn_in(dir, |_| {}).await;
    assert!(!folder.join(".git").exists(), "moved out of the agent's folder");
    let repo = app.data_dir().join("app-repos/notes/.git");
    assert!(!repo.join("hooks").exists());
    assert!(!std::fs::read_to_string(repo.join("config")).expect("config").contains("worktree"));
    let history: Value = app.get(&format!("/api/apps/{id}/history"), Some(&token)).await.json().await.expect("json");
    assert!(history.to_string().contains("apply"), "the history came along: {history}");
    std::fs::write(folder.join("index.jsx"), "export default function App() { return <p>after</p>; }\n").expect("edit");
    let r = app.post("/api/apps/apply", json!({ "slug": "notes" }), Some(&token)).await;
    assert_eq!(r.json::<Value>().await.expect("json")["mode"], "updated");
}

#[tokio::test]
async fn a_memory_file_the_agent_swapped_for_a_link_or_a_pipe_is_refused_and_saving_replaces_it() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let targets = Targets::of(&app);
    let memory = app.data_dir().join("memory");
    std::fs::create_dir_all(&memory).expect("memory");
    symlink(Targets::secret(&app), memory.join("owner.md")).expect("link");
    let r = app.get("/api/memory", Some(&token)).await;
    let err = assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "memory_file_unusable").await;
    let secret = String::from_utf8_lossy(&targets.secret).trim().to_owned();
    assert!(!err.to_string().contains(&secret));
    std::fs::remove_file(memory.join("owner.md")).expect("rm");
    fifo(&memory.join("owner.md"));
    assert_error(app.get("/api/memory", Some(&token)).await, StatusCode::UNPROCESSABLE_ENTITY, "memory_file_unusable")
        .await;
    // Saving from Settings replaces whatever is there (never writing through it).
    let r = app.put_json("/api/memory/owner", json!({ "content": "- likes tea\n" }), &token).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap_or_default());
    let body: Value = app.get("/api/memory", Some(&token)).await.json().await.expect("json");
    assert_eq!(body["owner_md"], "- likes tea\n");
    targets.unchanged(&app, &token).await;
}

#[tokio::test]
async fn app_storage_never_serves_writes_or_removes_through_what_the_agent_planted_in_it() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let targets = Targets::of(&app);
    let (id, _) = app.register_app("notes").await;
    let base = format!("/api/storage/apps/{id}");
    let r = app.put_json(&format!("{base}/doc.json"), json!({ "n": 1 }), &token).await;
    assert!(r.status().is_success(), "{}", r.status());
    // The agent can write app storage: it plants links, a FIFO and a folder link.
    let tree = app.data_dir().join(format!("app-data/{id}"));
    symlink(Targets::secret(&app), tree.join("key.json")).expect("key link");
    symlink("/dev/zero", tree.join("zero.json")).expect("zero");
    fifo(&tree.join("pipe.json"));
    symlink(app.data_dir().join("db"), tree.join("db")).expect("folder link");
    for path in ["key.json", "zero.json", "pipe.json", "db/mobius.sqlite3"] {
        let r = app.get(&format!("{base}/{path}"), Some(&token)).await;
        let err = assert_error(r, StatusCode::BAD_REQUEST, "invalid_path").await;
        assert!(!err.to_string().contains("SQLite"), "{path}: {err}");
    }
    let r = app.put_json(&format!("{base}/db/mobius.sqlite3"), json!({ "overwritten": true }), &token).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_path").await;
    let r = app.put_json(&format!("{base}/key.json"), json!({ "overwritten": true }), &token).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_path").await;
    let r = app.delete_with(&format!("{base}/db/mobius.sqlite3"), &token).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_path").await;
    let list = format!("/api/storage/apps-list/{id}?include_content=1");
    let listed: Value = app.get(&list, Some(&token)).await.json().await.expect("list");
    let names: Vec<&str> =
        listed["entries"].as_array().expect("entries").iter().filter_map(|e| e["name"].as_str()).collect();
    assert_eq!(names, ["doc.json"], "links and the FIFO are not listed: {listed}");
    targets.unchanged(&app, &token).await;
    // The tree's root itself swapped for a link to the data folder.
    std::fs::rename(&tree, app.data_dir().join("moved")).expect("move");
    symlink(app.data_dir(), &tree).expect("root link");
    let r = app.get(&format!("{base}/secret.key"), Some(&token)).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_path").await;
    let r = app.put_json(&format!("{base}/secret.key"), json!({ "overwritten": true }), &token).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_path").await;
    targets.unchanged(&app, &token).await;
}

#[tokio::test]
async fn a_job_state_folder_planted_as_a_link_is_refused_and_never_granted() {
    use std::os::unix::fs::PermissionsExt;
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let targets = Targets::of(&app);
    let (id, _) = app.register_app("notes").await;
    let folder = app.data_dir().join("apps/notes");
    std::fs::create_dir_all(&folder).expect("app");
    let job = folder.join("job.sh");
    std::fs::write(&job, "#!/bin/bash\necho overwritten > \"$APP_JOB_STATE_DIR/mobius.sqlite3\"\n").expect("job");
    std::fs::set_permissions(&job, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // `apps/` is the agent's: it makes the job's state folder a link to the database's folder.
    std::fs::create_dir_all(app.data_dir().join(format!("apps/{id}"))).expect("id dir");
    symlink(app.data_dir().join("db"), app.data_dir().join(format!("apps/{id}/job-state"))).expect("link");
    let r = app.post(&format!("/api/apps/{id}/run-job"), json!({}), Some(&token)).await;
    let body: Value = r.json().await.expect("json");
    let (schedule, run) = (body["schedule_id"].as_i64().expect("schedule"), body["run_id"].as_i64().expect("run"));
    let done: Value = eventually("the job's run ends", || async {
        let done: Value =
            app.get(&format!("/api/schedules/{schedule}/runs/{run}"), Some(&token)).await.json().await.expect("run");
        (done["status"] != "running").then_some(done)
    })
    .await;
    assert_eq!(done["status"], "failed", "{done}");
    assert!(done.to_string().contains("state folder"), "the run says why: {done}");
    targets.unchanged(&app, &token).await;
}

#[tokio::test]
async fn an_icon_linked_to_the_key_is_never_served() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let data = app.data_dir().to_path_buf();
    let folder = write_app(&data, "pics", r#","icon":"icon.png""#);
    symlink(Targets::secret(&app), folder.join("icon.png")).expect("icon link");
    let r = app.post("/api/apps/apply", json!({ "slug": "pics" }), Some(&token)).await;
    let body: Value = r.json().await.expect("json");
    let id = body["app"]["id"].as_i64().unwrap_or_else(|| panic!("{body}"));
    let icon = app.get(&format!("/api/apps/{id}/icon?size=192"), Some(&token)).await;
    assert_eq!(icon.status(), StatusCode::OK);
    let bytes = icon.bytes().await.expect("icon");
    assert!(bytes.starts_with(b"\x89PNG"), "the generated icon stands in");
    let secret = std::fs::read(Targets::secret(&app)).expect("secret");
    assert!(!bytes.windows(secret.len().min(16)).any(|w| secret.starts_with(w)), "the key's bytes were served");
}
