//! Apps from the phone, against local fixture repositories: the install review (and what bad
//! sources get), installing the reviewed release, update checks, previews and applies, a
//! conflicting update that opens a resolver chat, history and restore, uninstall keeping or
//! deleting data, the store's catalog, `manage_apps` apps, install passes and rendered icons.

use std::path::Path;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error};

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=Ada Author", "-c", "user.email=ada@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbaImage::from_fn(w, h, |x, _| image::Rgba([(x % 255) as u8, 120, 200, 255]));
    let mut out = Vec::new();
    image::DynamicImage::ImageRgba8(img)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .expect("png");
    out
}

/// A fixture app repository: `mobius.json` (with `extra` merged in), `index.jsx` and
/// `title.jsx` showing `title`, committed as `message`.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new(id: &str, version: &str, title: &str, extra: Value) -> Self {
        let dir = tempfile::tempdir().expect("fixture");
        let f = Self { dir };
        f.write_manifest(id, version, extra);
        f.write("index.jsx", "import Title from \"./title.jsx\";\nexport default function App() {\n  return <main><Title /><p>body</p></main>;\n}\n");
        f.title(title);
        git(f.path(), &["init", "-q"]);
        f.commit("first release");
        f
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn source(&self) -> String {
        self.path().display().to_string()
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.path().join(name), text).expect("write");
    }

    fn write_manifest(&self, id: &str, version: &str, extra: Value) {
        let mut m = json!({
            "id": id, "name": "Notes", "version": version, "description": "Keeps notes.",
            "entry": "index.jsx", "author": "Ada Author",
        });
        if let (Some(m), Some(extra)) = (m.as_object_mut(), extra.as_object()) {
            m.extend(extra.clone());
        }
        self.write("mobius.json", &m.to_string());
    }

    fn title(&self, title: &str) {
        self.write("title.jsx", &format!("export default function Title() {{\n  return <h1>{title}</h1>;\n}}\n"));
    }

    fn commit(&self, message: &str) -> String {
        git(self.path(), &["add", "-A"]);
        git(self.path(), &["commit", "-qm", message]);
        let out = std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(self.path())
            .output()
            .expect("rev-parse");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

async fn json_of(r: reqwest::Response) -> Value {
    let status = r.status();
    let body: Value = r.json().await.expect("json");
    assert!(status.is_success(), "{status}: {body}");
    body
}

async fn module(app: &TestApp, token: &str, id: i64) -> String {
    let r = app.get(&format!("/api/apps/{id}/module"), Some(token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    r.text().await.expect("module")
}

async fn install(app: &TestApp, token: &str, source: &str) -> Value {
    json_of(app.post("/api/apps/install", json!({ "source": source }), Some(token)).await).await
}

async fn listed(app: &TestApp, token: &str) -> Vec<Value> {
    json_of(app.get("/api/apps", Some(token)).await).await.as_array().cloned().unwrap_or_default()
}

async fn delete(app: &TestApp, token: &str, path: &str) -> reqwest::Response {
    app.client.delete(app.url(path)).bearer_auth(token).send().await.expect("DELETE")
}

#[tokio::test]
async fn a_review_describes_the_app_and_everything_it_asks_for_before_anything_is_installed() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let fixture = Fixture::new(
        "notes",
        "1.0.0",
        "Release one",
        json!({
            "icon": "icon.png", "theme_color": "#0f766e", "embeds_agent": true,
            "permissions": { "cross_app_access": "read", "manage_apps": true },
            "requires": ["github_access"],
            "schedule": { "default": "30 6 * * *", "job": "job.sh" },
        }),
    );
    std::fs::write(fixture.path().join("icon.png"), png(300, 200)).expect("icon");
    fixture.write("job.sh", "#!/bin/sh\necho hi\n");
    fixture.write(
        "net.js",
        "export const load = () => fetch(`/api/proxy?url=x`).then(() => fetch(`/api/apps/1/secrets/KEY`));\n",
    );
    let head = fixture.commit("icon, job and network");

    let review = json_of(app.post("/api/apps/review", json!({ "source": fixture.source() }), Some(&token)).await).await;
    assert_eq!(review["id"], "notes");
    assert_eq!(review["name"], "Notes");
    assert_eq!(review["version"], "1.0.0");
    assert_eq!(review["author"], "Ada Author");
    assert_eq!(review["description"], "Keeps notes.");
    assert_eq!(review["commit"], head);
    assert_eq!(review["source"], fixture.source());
    assert!(review["icon"].as_str().is_some_and(|i| i.starts_with("data:image/png;base64,")), "{review}");
    assert!(review["existing"].is_null());
    let keys: Vec<&str> =
        review["permissions"].as_array().expect("permissions").iter().filter_map(|p| p["key"].as_str()).collect();
    for key in [
        "storage.cross_app_access",
        "network",
        "secrets",
        "schedule",
        "agent.embed",
        "grant.manage_apps",
        "grant.github_access",
    ] {
        assert!(keys.contains(&key), "{key} missing from {keys:?}");
    }
    let schedule = review["permissions"]
        .as_array()
        .expect("p")
        .iter()
        .find(|p| p["key"] == "schedule")
        .cloned()
        .expect("schedule");
    assert_eq!(schedule["detail"], "Runs job.sh every day at 06:30.");
    let github = review["permissions"]
        .as_array()
        .expect("p")
        .iter()
        .find(|p| p["key"] == "grant.github_access")
        .cloned()
        .expect("gh");
    assert_eq!(github["effective"], false, "this Möbius has no GitHub API for apps");

    // Nothing was installed by the review.
    assert!(listed(&app, &token).await.is_empty());
    assert!(!app.data_dir().join("apps/notes").exists());
}

#[tokio::test]
async fn bad_sources_get_a_clear_error_on_the_review_and_nothing_is_installed() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let review = |source: String| {
        let app = &app;
        let token = token.clone();
        async move { app.post("/api/apps/review", json!({ "source": source }), Some(&token)).await }
    };
    let plain = tempfile::tempdir().expect("plain");
    std::fs::write(plain.path().join("readme.txt"), "not an app").expect("w");
    assert_error(
        review(plain.path().display().to_string()).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "manifest_missing",
    )
    .await;

    let broken = Fixture::new("broken", "1.0.0", "x", json!({}));
    broken.write("mobius.json", "{ \"id\": \"broken\", ");
    broken.commit("broken manifest");
    let r = assert_error(review(broken.source()).await, StatusCode::UNPROCESSABLE_ENTITY, "manifest_invalid").await;
    assert!(r["message"].as_str().expect("m").contains("JSON"), "{r}");

    let wrong = Fixture::new("wrong", "1.0.0", "x", json!({ "permissions": { "cross_app_access": "everything" } }));
    let r = assert_error(review(wrong.source()).await, StatusCode::UNPROCESSABLE_ENTITY, "manifest_invalid").await;
    assert!(r["message"].as_str().expect("m").contains("permissions.cross_app_access"), "{r}");

    assert_error(review("https://127.0.0.1/app.git".into()).await, StatusCode::BAD_REQUEST, "source_not_allowed").await;
    assert_error(review("https://10.1.2.3/app.git".into()).await, StatusCode::BAD_REQUEST, "source_not_allowed").await;
    assert_error(review("http://example.com/app.git".into()).await, StatusCode::BAD_REQUEST, "invalid_source").await;
    assert_error(review("/no/such/folder".into()).await, StatusCode::BAD_REQUEST, "invalid_source").await;
    assert_error(review("ftp://x".into()).await, StatusCode::BAD_REQUEST, "invalid_source").await;

    assert!(listed(&app, &token).await.is_empty());
    let apps_dir = app.data_dir().join("apps");
    let left: Vec<_> = std::fs::read_dir(&apps_dir).map(|d| d.filter_map(|e| e.ok()).collect()).unwrap_or_default();
    assert!(left.is_empty(), "nothing left behind: {left:?}");
    let reviews = app.data_dir().join("run/reviews");
    assert_eq!(std::fs::read_dir(&reviews).map(|d| d.count()).unwrap_or(0), 0, "review staging is cleaned up");
}

#[tokio::test]
async fn an_install_takes_the_reviewed_release_and_refuses_a_source_that_moved() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let fixture = Fixture::new("notes", "1.0.0", "Release one", json!({}));
    let review = json_of(app.post("/api/apps/review", json!({ "source": fixture.source() }), Some(&token)).await).await;
    fixture.title("Release two");
    fixture.commit("second");
    let moved = app
        .post("/api/apps/install", json!({ "source": fixture.source(), "commit": review["commit"] }), Some(&token))
        .await;
    assert_error(moved, StatusCode::CONFLICT, "source_changed").await;
    assert!(listed(&app, &token).await.is_empty());

    let again = json_of(app.post("/api/apps/review", json!({ "source": fixture.source() }), Some(&token)).await).await;
    let installed = json_of(
        app.post("/api/apps/install", json!({ "source": fixture.source(), "commit": again["commit"] }), Some(&token))
            .await,
    )
    .await;
    let id = installed["app"]["id"].as_i64().expect("id");
    assert!(module(&app, &token, id).await.contains("Release two"));
    assert_eq!(installed["app"]["update"]["available"], false);
    let existing =
        json_of(app.post("/api/apps/review", json!({ "source": fixture.source() }), Some(&token)).await).await;
    assert_eq!(existing["existing"]["id"], id, "the review says it is installed");
}

#[tokio::test]
async fn updates_are_checked_previewed_with_their_permission_changes_and_applied() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let fixture = Fixture::new("notes", "1.0.0", "Release one", json!({}));
    let id = install(&app, &token, &fixture.source()).await["app"]["id"].as_i64().expect("id");

    let none = json_of(app.post("/api/apps/updates/check", json!({ "force": true }), Some(&token)).await).await;
    assert_eq!((none["checked"].as_i64(), none["available"].as_i64()), (Some(1), Some(0)), "{none}");

    fixture.write_manifest("notes", "1.1.0", json!({ "permissions": { "share_with_apps": "read" } }));
    fixture.title("Release two");
    fixture.write("net.js", "export const ping = () => fetch('/api/proxy?url=https://example.com');\n");
    let release = fixture.commit("Share notes and ping");
    let checked = json_of(app.post("/api/apps/updates/check", json!({ "force": true }), Some(&token)).await).await;
    assert_eq!(checked["available"], 1, "{checked}");
    let listed_app = listed(&app, &token).await.into_iter().find(|a| a["id"] == id).expect("listed");
    assert_eq!(listed_app["update"]["available"], true);
    assert!(listed_app["update"]["checked_at"].as_i64().is_some());
    let soon = json_of(app.post("/api/apps/updates/check", json!({}), Some(&token)).await).await;
    assert_eq!(soon["ran"], false, "a check right after another answers from it");

    let preview = json_of(app.get(&format!("/api/apps/{id}/update/preview"), Some(&token)).await).await;
    assert_eq!(preview["commit"], release);
    assert_eq!(preview["current_version"], "1.0.0");
    assert_eq!(preview["version"], "1.1.0");
    assert_eq!(preview["up_to_date"], false);
    assert_eq!(preview["commits"][0]["summary"], "Share notes and ping");
    assert_eq!(preview["commits"][0]["author"], "Ada Author");
    let files: Vec<&str> =
        preview["files"].as_array().expect("files").iter().filter_map(|f| f["path"].as_str()).collect();
    assert!(files.contains(&"title.jsx") && files.contains(&"net.js") && files.contains(&"mobius.json"), "{files:?}");
    let added = preview["files"].as_array().expect("f").iter().find(|f| f["path"] == "net.js").cloned().expect("net");
    assert_eq!((added["status"].as_str(), added["additions"].as_i64()), (Some("added"), Some(1)));
    let changes: Vec<(String, String)> = preview["permission_changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| (c["change"].as_str().unwrap_or("").to_owned(), c["key"].as_str().unwrap_or("").to_owned()))
        .collect();
    assert!(changes.contains(&("added".into(), "storage.share_with_apps".into())), "{changes:?}");
    assert!(changes.contains(&("added".into(), "network".into())), "{changes:?}");
    assert!(module(&app, &token, id).await.contains("Release one"), "a preview changes nothing served");

    let updated =
        json_of(app.post(&format!("/api/apps/{id}/update"), json!({ "commit": release }), Some(&token)).await).await;
    assert_eq!(updated["mode"], "updated", "{updated}");
    assert_eq!(updated["app"]["version"], "1.1.0");
    assert_eq!(updated["app"]["update"]["available"], false);
    assert!(module(&app, &token, id).await.contains("Release two"));
    let nothing = json_of(app.post(&format!("/api/apps/{id}/update"), json!({}), Some(&token)).await).await;
    assert_eq!(nothing["mode"], "up_to_date");
}

#[tokio::test]
async fn an_update_whose_manifest_no_longer_parses_leaves_the_installed_version_running() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let fixture = Fixture::new("notes", "1.0.0", "Release one", json!({}));
    let id = install(&app, &token, &fixture.source()).await["app"]["id"].as_i64().expect("id");
    fixture.write("mobius.json", "{\"id\":\"notes\",\"name\":\"Notes\"}");
    fixture.title("Release two");
    fixture.commit("broken release");
    let preview = json_of(app.get(&format!("/api/apps/{id}/update/preview"), Some(&token)).await).await;
    assert!(preview["manifest_error"].as_str().is_some_and(|m| m.contains("version")), "{preview}");
    let r = app.post(&format!("/api/apps/{id}/update"), json!({}), Some(&token)).await;
    let err = assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "manifest_invalid").await;
    assert!(err["message"].as_str().expect("m").contains("keeps running"), "{err}");
    assert!(module(&app, &token, id).await.contains("Release one"), "the installed version still serves");
    let local = std::fs::read_to_string(app.data_dir().join("apps/notes/title.jsx")).expect("title");
    assert!(local.contains("Release one"), "the app's source did not move");
}

#[tokio::test]
async fn a_conflicting_update_opens_a_resolver_chat_primed_with_the_files_and_an_apply_completes_it() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    let fixture = Fixture::new("notes", "1.0.0", "Release one", json!({}));
    let id = install(&app, &token, &fixture.source()).await["app"]["id"].as_i64().expect("id");
    let local = app.data_dir().join("apps/notes");
    std::fs::write(local.join("title.jsx"), "export default function Title() {\n  return <h1>Mine</h1>;\n}\n")
        .expect("edit");
    fixture.title("Release two");
    fixture.commit("two");

    let preview = json_of(app.get(&format!("/api/apps/{id}/update/preview"), Some(&token)).await).await;
    assert_eq!(preview["local_edits"], true);
    assert_eq!(preview["conflict_paths"], json!(["title.jsx"]));
    let before = module(&app, &token, id).await;
    let r = json_of(app.post(&format!("/api/apps/{id}/update"), json!({}), Some(&token)).await).await;
    assert_eq!(r["mode"], "conflict", "{r}");
    assert_eq!(r["conflict_paths"], json!(["title.jsx"]));
    assert_eq!(r["resolver_started"], true);
    let chat_id = r["resolver_chat_id"].as_str().expect("resolver chat").to_owned();
    assert_eq!(module(&app, &token, id).await, before, "the live app is untouched");

    let chat = json_of(app.get(&format!("/api/chats/{chat_id}"), Some(&token)).await).await;
    assert!(chat["title"].as_str().expect("title").contains("Notes"));
    let first = &chat["messages"][0];
    assert!(first["content"].as_str().expect("content").contains("title.jsx"), "{first}");
    let context = first["agent_context"].as_str().expect("agent_context");
    assert!(context.contains("<<<<<<<") && context.contains("Mine") && context.contains("Release two"), "{context}");
    let worktree = std::fs::read_to_string(local.join("title.jsx")).expect("merged");
    assert!(worktree.contains("<<<<<<<"), "the worktree holds the merge with markers");
    let listed_app = listed(&app, &token).await.into_iter().find(|a| a["id"] == id).expect("listed");
    assert_eq!(listed_app["update"]["resolver_chat_id"], chat_id.as_str());
    let again = json_of(app.post(&format!("/api/apps/{id}/update"), json!({}), Some(&token)).await).await;
    assert_eq!(again["resolver_chat_id"], chat_id.as_str(), "the same chat, not a second one");

    // The agent applies while markers are left: refused; once resolved, the update completes.
    let r = app.post("/api/apps/apply", json!({ "slug": "notes" }), Some(&token)).await;
    assert_error(r, StatusCode::CONFLICT, "update_unresolved").await;
    std::fs::write(
        local.join("title.jsx"),
        "export default function Title() {\n  return <h1>Mine, release two</h1>;\n}\n",
    )
    .expect("resolve");
    let applied = json_of(app.post("/api/apps/apply", json!({ "slug": "notes" }), Some(&token)).await).await;
    assert_eq!(applied["mode"], "updated");
    assert!(module(&app, &token, id).await.contains("Mine, release two"));
    let done = json_of(app.post(&format!("/api/apps/{id}/update"), json!({}), Some(&token)).await).await;
    assert_eq!(done["mode"], "up_to_date", "the release was taken: {done}");
}

#[tokio::test]
async fn history_lists_each_version_and_restore_goes_back_and_forward() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let fixture = Fixture::new("notes", "1.0.0", "Release one", json!({}));
    let id = install(&app, &token, &fixture.source()).await["app"]["id"].as_i64().expect("id");
    fixture.write_manifest("notes", "2.0.0", json!({}));
    fixture.title("Release two");
    fixture.commit("two");
    json_of(app.post(&format!("/api/apps/{id}/update"), json!({}), Some(&token)).await).await;

    let history = json_of(app.get(&format!("/api/apps/{id}/history"), Some(&token)).await).await;
    let versions = history["versions"].as_array().expect("versions").clone();
    assert_eq!(versions.len(), 2, "{history}");
    assert_eq!((versions[0]["kind"].as_str(), versions[0]["version"].as_str()), (Some("update"), Some("2.0.0")));
    assert_eq!((versions[1]["kind"].as_str(), versions[1]["version"].as_str()), (Some("install"), Some("1.0.0")));
    assert_eq!(versions[0]["live"], true);
    assert!(versions[0]["files"].as_array().expect("files").iter().any(|f| f == "title.jsx"));
    assert!(versions[0]["at"].as_i64().is_some());

    let old = versions[1]["commit"].as_str().expect("commit").to_owned();
    let restored =
        json_of(app.post(&format!("/api/apps/{id}/restore"), json!({ "commit": old }), Some(&token)).await).await;
    assert_eq!(restored["app"]["version"], "1.0.0");
    assert!(module(&app, &token, id).await.contains("Release one"));
    let history = json_of(app.get(&format!("/api/apps/{id}/history"), Some(&token)).await).await;
    assert_eq!(history["versions"][0]["kind"], "restore");
    assert_eq!(history["versions"].as_array().map(Vec::len), Some(3), "nothing is lost: {history}");
    let check = json_of(app.post(&format!("/api/apps/{id}/update/check"), json!({}), Some(&token)).await).await;
    assert_eq!(check["available"], true, "the newer release is offered again");

    let newer = history["versions"][1]["commit"].as_str().expect("commit").to_owned();
    json_of(app.post(&format!("/api/apps/{id}/restore"), json!({ "commit": newer }), Some(&token)).await).await;
    assert!(module(&app, &token, id).await.contains("Release two"));
    let bogus = app
        .post(
            &format!("/api/apps/{id}/restore"),
            json!({ "commit": "0123456789012345678901234567890123456789" }),
            Some(&token),
        )
        .await;
    assert_error(bogus, StatusCode::BAD_REQUEST, "invalid_commit").await;
}

#[tokio::test]
async fn a_restore_to_a_version_that_does_not_build_keeps_the_current_one_and_says_why() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let fixture = Fixture::new("notes", "1.0.0", "Release one", json!({}));
    let id = install(&app, &token, &fixture.source()).await["app"]["id"].as_i64().expect("id");
    let local = app.data_dir().join("apps/notes");
    std::fs::write(local.join("title.jsx"), "export default function Title( {\n").expect("break");
    let failed = app.post("/api/apps/apply", json!({ "slug": "notes" }), Some(&token)).await;
    assert_error(failed, StatusCode::UNPROCESSABLE_ENTITY, "compile_failed").await;
    std::fs::write(local.join("title.jsx"), "export default function Title() {\n  return <h1>Fixed</h1>;\n}\n")
        .expect("fix");
    json_of(app.post("/api/apps/apply", json!({ "slug": "notes" }), Some(&token)).await).await;

    let broken = {
        // The app's repository is the server's (`app-repos/`), not in the agent's folder.
        let repo = app.data_dir().join("app-repos/notes");
        let out =
            std::process::Command::new("git").args(["rev-parse", "main~1"]).current_dir(&repo).output().expect("git");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let r = app.post(&format!("/api/apps/{id}/restore"), json!({ "commit": broken }), Some(&token)).await;
    let err = assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "compile_failed").await;
    assert!(err["message"].as_str().expect("m").contains("keeps running"), "{err}");
    assert!(module(&app, &token, id).await.contains("Fixed"), "the current version still serves");
    let title = std::fs::read_to_string(local.join("title.jsx")).expect("title");
    assert!(title.contains("Fixed"), "the source stays on the current version");
}

#[tokio::test]
async fn uninstall_keeps_or_deletes_the_data_and_data_alone_can_be_deleted() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let fixture =
        Fixture::new("notes", "1.0.0", "Release one", json!({ "storage_seeds": { "start.json": { "n": 0 } } }));
    let id = install(&app, &token, &fixture.source()).await["app"]["id"].as_i64().expect("id");
    let data = app.data_dir().join(format!("app-data/{id}"));
    let put = |name: &'static str| {
        let (app, token) = (&app, token.clone());
        async move {
            let r = app
                .client
                .put(app.url(&format!("/api/storage/apps/{id}/{name}")))
                .bearer_auth(&token)
                .json(&json!({ "x": 1 }))
                .send()
                .await;
            assert_eq!(r.expect("PUT").status(), StatusCode::NO_CONTENT);
        }
    };
    put("mine.json").await;
    let secret = app
        .client
        .put(app.url(&format!("/api/apps/{id}/secrets/KEY")))
        .bearer_auth(&token)
        .json(&json!({ "value": "v" }))
        .send()
        .await;
    assert_eq!(secret.expect("PUT").status(), StatusCode::NO_CONTENT);

    // Data alone: wiped, the starting documents come back, the app stays.
    assert_eq!(delete(&app, &token, &format!("/api/apps/{id}/data")).await.status(), StatusCode::NO_CONTENT);
    assert!(!data.join("mine.json").exists() && data.join("start.json").exists());
    assert_eq!(listed(&app, &token).await.len(), 1);
    put("mine.json").await;

    // Uninstall keeping the data: installing again brings the same app and its data back.
    assert_eq!(delete(&app, &token, &format!("/api/apps/{id}?data=keep")).await.status(), StatusCode::NO_CONTENT);
    assert!(listed(&app, &token).await.is_empty());
    assert!(data.join("mine.json").exists());
    let again = install(&app, &token, &fixture.source()).await;
    assert_eq!(again["app"]["id"], id, "the same app, its id kept");
    assert!(data.join("mine.json").exists(), "its data is back");
    let head = app.client.head(app.url(&format!("/api/apps/{id}/secrets/KEY"))).bearer_auth(&token).send().await;
    assert_eq!(head.expect("HEAD").status(), StatusCode::NO_CONTENT, "and its secrets");

    // Uninstall deleting the data: gone at once.
    assert_eq!(delete(&app, &token, &format!("/api/apps/{id}?data=delete")).await.status(), StatusCode::NO_CONTENT);
    assert!(!data.join("mine.json").exists());
    let fresh = install(&app, &token, &fixture.source()).await;
    let id2 = fresh["app"]["id"].as_i64().expect("id");
    assert!(!app.data_dir().join(format!("app-data/{id2}/mine.json")).exists(), "nothing came back");
    let head = app.client.head(app.url(&format!("/api/apps/{id2}/secrets/KEY"))).bearer_auth(&token).send().await;
    assert_eq!(head.expect("HEAD").status(), StatusCode::NOT_FOUND);
    assert_error(
        delete(&app, &token, &format!("/api/apps/{id2}?data=maybe")).await,
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await;
}

#[tokio::test]
async fn the_store_reads_catalog_indexes_searches_them_and_marks_installed_apps() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let notes = Fixture::new("notes", "1.0.0", "Notes", json!({}));
    let tasks = Fixture::new("tasks", "0.3.0", "Tasks", json!({}));
    let catalogs = tempfile::tempdir().expect("catalogs");
    let index = catalogs.path().join("catalog.json");
    std::fs::write(
        &index,
        json!({ "schema": 1, "apps": [
            { "id": "notes", "name": "Notes", "description": "Keeps notes.", "source": notes.source(), "keywords": ["journal"], "manifest": { "version": "1.0.0" } },
            { "id": "tasks", "name": "Tasks", "description": "A to-do list.", "source": tasks.source(), "categories": ["productivity"] },
        ]})
        .to_string(),
    )
    .expect("index");
    let defaults = json_of(app.get("/api/catalog/indexes", Some(&token)).await).await;
    assert_eq!(defaults["indexes"][0], defaults["default"]);
    assert!(defaults["default"].as_str().expect("d").starts_with("https://"));

    let set = app
        .client
        .put(app.url("/api/catalog/indexes"))
        .bearer_auth(&token)
        .json(&json!({ "indexes": [index.display().to_string()] }))
        .send()
        .await;
    assert_eq!(set.expect("PUT").status(), StatusCode::OK);
    let all = json_of(app.get("/api/catalog", Some(&token)).await).await;
    let ids: Vec<&str> = all["apps"].as_array().expect("apps").iter().filter_map(|a| a["id"].as_str()).collect();
    assert_eq!(ids, ["notes", "tasks"], "{all}");
    let found = json_of(app.get("/api/catalog?q=journal", Some(&token)).await).await;
    assert_eq!(found["apps"].as_array().map(Vec::len), Some(1));
    assert_eq!(found["apps"][0]["id"], "notes");

    let source = all["apps"][1]["source"].as_str().expect("source").to_owned();
    let review = json_of(app.post("/api/apps/review", json!({ "source": source }), Some(&token)).await).await;
    assert_eq!(review["id"], "tasks");
    install(&app, &token, &source).await;
    let after = json_of(app.get("/api/catalog", Some(&token)).await).await;
    assert!(after["apps"][1]["installed"]["id"].as_i64().is_some(), "{after}");
    assert!(after["apps"][0]["installed"].is_null());

    let bad = |body: Value| {
        let (app, token) = (&app, token.clone());
        async move {
            app.client.put(app.url("/api/catalog/indexes")).bearer_auth(&token).json(&body).send().await.expect("PUT")
        }
    };
    assert_error(
        bad(json!({ "indexes": ["http://example.com/c.json"] })).await,
        StatusCode::BAD_REQUEST,
        "invalid_catalog_index",
    )
    .await;
    let inside = app.data_dir().join("c.json");
    std::fs::write(&inside, "{}").expect("w");
    assert_error(
        bad(json!({ "indexes": [inside.display().to_string()] })).await,
        StatusCode::BAD_REQUEST,
        "invalid_catalog_index",
    )
    .await;
    std::fs::write(&index, "not json").expect("w");
    let broken = json_of(app.get("/api/catalog?refresh=true", Some(&token)).await).await;
    assert!(broken["apps"].as_array().is_some_and(Vec::is_empty));
    assert_eq!(broken["errors"][0]["index"], index.display().to_string());
}

#[tokio::test]
async fn an_app_with_manage_apps_reads_the_registry_and_reviews_but_only_the_owner_installs() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let store = Fixture::new("store", "1.0.0", "Store", json!({ "permissions": { "manage_apps": true } }));
    let plain = Fixture::new("plain", "1.0.0", "Plain", json!({}));
    let store_id = install(&app, &token, &store.source()).await["app"]["id"].as_i64().expect("id");
    let plain_id = install(&app, &token, &plain.source()).await["app"]["id"].as_i64().expect("id");
    let mint = |id: i64| {
        let (app, token) = (&app, token.clone());
        async move {
            json_of(app.post("/api/auth/app-token", json!({ "app_id": id }), Some(&token)).await).await["token"]
                .as_str()
                .expect("t")
                .to_owned()
        }
    };
    let store_token = mint(store_id).await;
    let plain_token = mint(plain_id).await;
    let other = Fixture::new("other", "1.0.0", "Other", json!({}));

    let review = app.post("/api/apps/review", json!({ "source": other.source() }), Some(&store_token)).await;
    assert_eq!(json_of(review).await["id"], "other");
    assert_eq!(app.get(&format!("/api/apps/{plain_id}/history"), Some(&store_token)).await.status(), StatusCode::OK);
    assert_eq!(app.post("/api/apps/updates/check", json!({}), Some(&store_token)).await.status(), StatusCode::OK);
    let install = app.post("/api/apps/install", json!({ "source": other.source() }), Some(&store_token)).await;
    assert_error(install, StatusCode::FORBIDDEN, "wrong_scope").await;
    assert_error(
        delete(&app, &store_token, &format!("/api/apps/{plain_id}")).await,
        StatusCode::FORBIDDEN,
        "wrong_scope",
    )
    .await;

    let refused = app.post("/api/apps/review", json!({ "source": other.source() }), Some(&plain_token)).await;
    assert_error(refused, StatusCode::FORBIDDEN, "manage_apps_required").await;
    assert_error(app.get("/api/catalog", Some(&plain_token)).await, StatusCode::FORBIDDEN, "manage_apps_required")
        .await;
}

#[tokio::test]
async fn an_install_pass_signs_in_once_for_one_app_within_its_minute() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let notes = Fixture::new("notes", "1.0.0", "Notes", json!({}));
    let id = install(&app, &token, &notes.source()).await["app"]["id"].as_i64().expect("id");
    let pass = json_of(app.post("/api/auth/install-pass", json!({ "app_id": id }), Some(&token)).await).await;
    let secret = pass["install_pass"].as_str().expect("pass").to_owned();
    assert!(pass["expires_at"].as_i64().expect("exp") <= crate_now() + 60_000);

    let wrong_app =
        app.post("/api/auth/install-pass/redeem", json!({ "install_pass": secret, "slug": "other" }), None).await;
    assert_error(wrong_app, StatusCode::UNAUTHORIZED, "invalid_install_pass").await;
    // The failed try used it up: a pass works once, whatever happens.
    let used =
        app.post("/api/auth/install-pass/redeem", json!({ "install_pass": secret, "slug": "notes" }), None).await;
    assert_error(used, StatusCode::UNAUTHORIZED, "invalid_install_pass").await;

    let pass = json_of(app.post("/api/auth/install-pass", json!({ "app_id": id }), Some(&token)).await).await;
    let secret = pass["install_pass"].as_str().expect("pass").to_owned();
    let session = json_of(
        app.post("/api/auth/install-pass/redeem", json!({ "install_pass": secret, "slug": "notes" }), None).await,
    )
    .await;
    let owner = session["access_token"].as_str().expect("token");
    assert_eq!(app.get("/api/auth/session", Some(owner)).await.status(), StatusCode::OK);
    let twice =
        app.post("/api/auth/install-pass/redeem", json!({ "install_pass": secret, "slug": "notes" }), None).await;
    assert_error(twice, StatusCode::UNAUTHORIZED, "invalid_install_pass").await;

    // An expired pass (made a minute and a second ago) is refused.
    use sha2::{Digest, Sha256};
    let expired = "expired-pass-value";
    let url = format!("sqlite://{}?mode=rw", app.data_dir().join("db/mobius.sqlite3").display());
    let mut conn = <sqlx::SqliteConnection as sqlx::Connection>::connect(&url).await.expect("db");
    sqlx::query("INSERT INTO install_passes (id, app_id, epoch, created_at, expires_at) VALUES (?, ?, 0, ?, ?)")
        .bind(hex::encode(Sha256::digest(expired.as_bytes())))
        .bind(id)
        .bind(crate_now() - 61_000)
        .bind(crate_now() - 1_000)
        .execute(&mut conn)
        .await
        .expect("insert");
    let late =
        app.post("/api/auth/install-pass/redeem", json!({ "install_pass": expired, "slug": "notes" }), None).await;
    assert_error(late, StatusCode::UNAUTHORIZED, "invalid_install_pass").await;
}

fn crate_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

#[tokio::test]
async fn icons_are_rendered_at_each_advertised_size_and_the_standalone_manifest_lists_them() {
    let app = TestApp::spawn().await;
    crate::helpers::fake_dist(app.data_dir());
    let token = app.setup_owner().await;
    let notes = Fixture::new("notes", "1.0.0", "Notes", json!({ "icon": "icon.png", "theme_color": "#336699" }));
    std::fs::write(notes.path().join("icon.png"), png(640, 480)).expect("icon");
    notes.commit("icon");
    let id = install(&app, &token, &notes.source()).await["app"]["id"].as_i64().expect("id");
    for (query, size, maskable) in [
        ("size=192", 192, false),
        ("size=512", 512, false),
        ("size=512&purpose=maskable", 512, true),
        ("size=200", 192, false),
    ] {
        let r = app.get(&format!("/api/apps/{id}/icon?{query}"), None).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()["content-type"], "image/png");
        let decoded = image::load_from_memory(&r.bytes().await.expect("bytes")).expect("a PNG");
        assert_eq!((decoded.width(), decoded.height()), (size, size), "{query}");
        if maskable {
            assert_eq!(decoded.to_rgba8().get_pixel(0, 0).0, [0x33, 0x66, 0x99, 255]);
        }
    }
    let compiled: Vec<String> = std::fs::read_dir(app.data_dir().join("compiled"))
        .expect("compiled")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    assert!(compiled.iter().any(|n| n.ends_with("-icon-512-maskable.png")), "rendered once and kept: {compiled:?}");
    let manifest = json_of(app.get("/apps/notes/manifest.json", None).await).await;
    let icons = manifest["icons"].as_array().expect("icons");
    let sizes: Vec<(&str, &str)> =
        icons.iter().map(|i| (i["sizes"].as_str().unwrap_or(""), i["purpose"].as_str().unwrap_or(""))).collect();
    assert_eq!(sizes, [("192x192", "any"), ("512x512", "any"), ("512x512", "maskable")]);
    let with_pass = json_of(app.get("/apps/notes/manifest.json?install_pass=abc_DEF-1", None).await).await;
    assert_eq!(with_pass["start_url"], "/apps/notes/?install_pass=abc_DEF-1");
    let hostile = json_of(app.get("/apps/notes/manifest.json?install_pass=%22%3E%3Cx", None).await).await;
    assert_eq!(hostile["start_url"], "/apps/notes/");
    let page = app.get("/apps/notes/", None).await.text().await.expect("page");
    assert!(page.contains("rel=\"apple-touch-icon\""), "iOS gets a PNG icon too");
}
