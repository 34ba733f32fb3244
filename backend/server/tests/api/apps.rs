//! Mini-apps: apply (validate → commit → bundle → serve), failures that keep the old build,
//! concurrent applies, install/update/undo from a git source, registry, tokens, serving.

use std::path::Path;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, eventually};

const MANIFEST: &str =
    r#"{"id":"counter","name":"Counter","version":"0.1.0","description":"Counts.","entry":"index.jsx"}"#;

fn counter_source(label: &str) -> String {
    format!(
        "import {{ useState }} from \"react\";\nimport Label from \"./label.jsx\";\nexport default function App() {{\n  const [n, setN] = useState(0);\n  return <div><Label n={{n}} text=\"{label}\" /><button onClick={{() => setN(n + 1)}}>+1</button></div>;\n}}\n"
    )
}

fn write_app(root: &Path, slug: &str, manifest: &str, index: &str) {
    let dir = root.join("apps").join(slug);
    std::fs::create_dir_all(&dir).expect("app dir");
    std::fs::write(dir.join("mobius.json"), manifest.replace("\"counter\"", &format!("\"{slug}\""))).expect("manifest");
    std::fs::write(dir.join("index.jsx"), index).expect("index");
    std::fs::write(
        dir.join("label.jsx"),
        "export default function Label({ n, text }) { return <h1>{text}: {n}</h1>; }\n",
    )
    .expect("label");
}

async fn apply(app: &TestApp, token: &str, slug: &str) -> reqwest::Response {
    app.post("/api/apps/apply", json!({ "slug": slug }), Some(token)).await
}

async fn module_etag(app: &TestApp, token: &str, id: i64) -> (String, String) {
    let r = app.get(&format!("/api/apps/{id}/module"), Some(token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let etag = r.headers()["etag"].to_str().expect("etag").to_owned();
    (etag, r.text().await.expect("body"))
}

#[tokio::test]
async fn an_applied_app_is_served_and_an_edit_gets_a_new_etag() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    write_app(app.data_dir(), "counter", MANIFEST, &counter_source("Count"));
    let r = apply(&app, &token, "counter").await;
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["mode"], "created");
    let id = body["app"]["id"].as_i64().expect("id");
    let (etag, code) = module_etag(&app, &token, id).await;
    assert!(code.starts_with("/* mobius-compiled-runtime-abi:1 */"));
    assert!(
        code.contains("Count") && !code.contains("from\"react\"") && !code.contains("from \"react\""),
        "self-contained"
    );
    let again: Value = apply(&app, &token, "counter").await.json().await.expect("json");
    assert_eq!(again["mode"], "unchanged");
    std::fs::write(app.data_dir().join("apps/counter/index.jsx"), counter_source("Total")).expect("edit");
    let edited: Value = apply(&app, &token, "counter").await.json().await.expect("json");
    assert_eq!(edited["mode"], "updated");
    let (new_etag, code) = module_etag(&app, &token, id).await;
    assert_ne!(etag, new_etag);
    assert!(code.contains("Total"));
    // Conditional requests.
    let cached = app
        .client
        .get(app.url(&format!("/api/apps/{id}/module")))
        .bearer_auth(&token)
        .header("if-none-match", &new_etag)
        .send()
        .await
        .expect("req");
    assert_eq!(cached.status(), StatusCode::NOT_MODIFIED);
    let v = edited["app"]["v"].as_str().expect("v");
    let immutable = app.get(&format!("/api/apps/{id}/module?v={v}"), Some(&token)).await;
    assert!(immutable.headers()["cache-control"].to_str().expect("cc").contains("immutable"));
    // Only one bundle file is kept.
    let bundles = std::fs::read_dir(app.data_dir().join("compiled")).expect("compiled").count();
    assert_eq!(bundles, 1);
    // The module needs a token.
    assert_error(app.get(&format!("/api/apps/{id}/module"), None).await, StatusCode::UNAUTHORIZED, "missing_token")
        .await;
}

#[tokio::test]
async fn a_runtime_update_rebuilds_live_apps_from_their_live_commit_at_start_up() {
    // The runtime files live in a folder of the test's own, so the "platform update" can
    // change them between two runs of the server.
    let runtime = tempfile::tempdir().expect("tmp");
    let shipped = mobius::config::checkout_root().join("frontend/public");
    for file in mobius::apps::apply::RUNTIME_FILES {
        std::fs::copy(shipped.join(file), runtime.path().join(file)).expect("copy the runtime");
    }
    std::fs::create_dir(runtime.path().join("runtime")).expect("mkdir");
    for entry in std::fs::read_dir(shipped.join("runtime")).expect("the runtime's modules") {
        let path = entry.expect("entry").path();
        std::fs::copy(&path, runtime.path().join("runtime").join(path.file_name().expect("name")))
            .expect("copy a module");
    }
    let runtime_dir = runtime.path().to_path_buf();
    let dir = std::sync::Arc::new(tempfile::tempdir().expect("tmp"));
    let tweak = |c: &mut mobius::config::Config| c.app_runtime_dir = runtime_dir.clone();
    let app = TestApp::spawn_in(dir.clone(), tweak).await;
    let token = app.setup_owner().await;
    write_app(app.data_dir(), "counter", MANIFEST, &counter_source("Live label"));
    let applied: Value = apply(&app, &token, "counter").await.json().await.expect("json");
    let id = applied["app"]["id"].as_i64().expect("id");
    let live_commit = |app: &TestApp| {
        let (app, token) = (app.url(&format!("/api/apps/{id}/history")), token.clone());
        async move {
            let history: Value = reqwest::Client::new()
                .get(app)
                .bearer_auth(token)
                .send()
                .await
                .expect("GET")
                .json()
                .await
                .expect("json");
            let versions = history["versions"].as_array().expect("versions").clone();
            versions.into_iter().find(|v| v["live"] == true).expect("a live version")["commit"].clone()
        }
    };
    let commit = live_commit(&app).await;
    assert_eq!(app.post(&format!("/api/apps/{id}/seen"), json!({}), Some(&token)).await.status(), StatusCode::OK);
    let (etag, _) = module_etag(&app, &token, id).await;
    // The agent has started an edit it has not applied.
    std::fs::write(app.data_dir().join("apps/counter/index.jsx"), counter_source("Unapplied edit")).expect("edit");
    let dir = app.stop().await;

    // Same runtime: a restart rebuilds nothing.
    let app = TestApp::spawn_in(dir.clone(), tweak).await;
    let again: Value = app.get(&format!("/api/apps/{id}"), Some(&token)).await.json().await.expect("json");
    assert_eq!(module_etag(&app, &token, id).await.0, etag);
    assert_eq!(again["bundle_sha"], applied["app"]["bundle_sha"]);
    let dir = app.stop().await;

    // The update changes one of the runtime's modules (not the entry file).
    let module = runtime.path().join("runtime/bridge.js");
    let mut js = std::fs::read_to_string(&module).expect("runtime module");
    js.insert_str(0, "globalThis.__mobiusRuntimeMark = \"runtime-v2\";\n");
    std::fs::write(&module, js).expect("update the runtime");
    let app = TestApp::spawn_in(dir, tweak).await;
    // The "seen" mark follows the rebuild in a second write: wait for both.
    let rebuilt: Value = eventually("the app is rebuilt and seen", || async {
        let rebuilt: Value = app.get(&format!("/api/apps/{id}"), Some(&token)).await.json().await.expect("json");
        (rebuilt["bundle_sha"] != applied["app"]["bundle_sha"] && rebuilt["has_unseen_update"] == false)
            .then_some(rebuilt)
    })
    .await;
    assert_ne!(rebuilt["bundle_sha"], applied["app"]["bundle_sha"], "the app was not rebuilt");
    let (_, code) = module_etag(&app, &token, id).await;
    assert!(code.contains("runtime-v2"), "the rebuilt bundle lacks the new runtime");
    assert!(code.contains("Live label") && !code.contains("Unapplied edit"), "the rebuild published an unapplied edit");
    assert_eq!(live_commit(&app).await, commit);
    assert_eq!(rebuilt["has_unseen_update"], false, "a rebuild is not an update the owner must look at");
    let bundles = std::fs::read_dir(app.data_dir().join("compiled")).expect("compiled").count();
    assert_eq!(bundles, 1);
    // The agent's edit is still there, and applying it now works as always.
    let edited: Value = apply(&app, &token, "counter").await.json().await.expect("json");
    assert_eq!(edited["mode"], "updated");
    assert!(module_etag(&app, &token, id).await.1.contains("Unapplied edit"));
}

#[tokio::test]
async fn a_broken_source_is_refused_with_a_location_and_the_old_build_keeps_serving() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    write_app(app.data_dir(), "counter", MANIFEST, &counter_source("Count"));
    let body: Value = apply(&app, &token, "counter").await.json().await.expect("json");
    let id = body["app"]["id"].as_i64().expect("id");
    let (etag, _) = module_etag(&app, &token, id).await;
    std::fs::write(
        app.data_dir().join("apps/counter/index.jsx"),
        "export default function App() {\n  return <div>;\n}\n",
    )
    .expect("break");
    let err =
        assert_error(apply(&app, &token, "counter").await, StatusCode::UNPROCESSABLE_ENTITY, "compile_failed").await;
    let message = err["message"].as_str().expect("message");
    assert!(
        message.contains("index.jsx:3:1") && message.contains("> 3 |"),
        "file:line:col and a code frame: {message}"
    );
    assert_eq!(module_etag(&app, &token, id).await.0, etag, "the previous build still serves");
    std::fs::write(
        app.data_dir().join("apps/counter/index.jsx"),
        "import x from \"left-pad\";\nexport default function App() { return x; }\n",
    )
    .expect("import");
    let err =
        assert_error(apply(&app, &token, "counter").await, StatusCode::UNPROCESSABLE_ENTITY, "compile_failed").await;
    assert!(err["message"].as_str().expect("m").contains("left-pad"), "{err}");
    std::fs::write(app.data_dir().join("apps/counter/index.jsx"), "export const x = 1;\n").expect("no default");
    let err =
        assert_error(apply(&app, &token, "counter").await, StatusCode::UNPROCESSABLE_ENTITY, "compile_failed").await;
    assert!(err["message"].as_str().expect("m").contains("export default"), "{err}");
    std::fs::write(
        app.data_dir().join("apps/counter/mobius.json"),
        r#"{"id":"counter","name":"","version":"1","entry":"main.js"}"#,
    )
    .expect("manifest");
    let err =
        assert_error(apply(&app, &token, "counter").await, StatusCode::UNPROCESSABLE_ENTITY, "manifest_invalid").await;
    assert!(err["message"].as_str().expect("m").contains("mobius.json › description: is required"));
    assert_eq!(module_etag(&app, &token, id).await.0, etag);
    // A first build that fails leaves no app behind.
    write_app(app.data_dir(), "broken", MANIFEST, "export default function App() { return <div> }");
    assert_error(apply(&app, &token, "broken").await, StatusCode::UNPROCESSABLE_ENTITY, "compile_failed").await;
    let list: Value = app.get("/api/apps", Some(&token)).await.json().await.expect("json");
    assert_eq!(list.as_array().map(Vec::len), Some(1));
    assert_error(apply(&app, &token, "nope").await, StatusCode::NOT_FOUND, "app_source_missing").await;
    assert_error(apply(&app, &token, "../etc").await, StatusCode::BAD_REQUEST, "invalid_slug").await;
}

#[tokio::test]
async fn concurrent_applies_of_one_app_run_one_after_the_other() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    write_app(app.data_dir(), "counter", MANIFEST, &counter_source("v0"));
    let first: Value = apply(&app, &token, "counter").await.json().await.expect("json");
    let id = first["app"]["id"].as_i64().expect("id");
    let mut tasks = Vec::new();
    for i in 1..=4 {
        std::fs::write(app.data_dir().join("apps/counter/index.jsx"), counter_source(&format!("v{i}"))).expect("edit");
        tasks.push(apply(&app, &token, "counter"));
    }
    for r in futures_util::future::join_all(tasks).await {
        assert_eq!(r.status(), StatusCode::OK);
    }
    // Whatever ran last, the served build is the committed source of record.
    let detail: Value = app.get(&format!("/api/apps/{id}"), Some(&token)).await.json().await.expect("json");
    let (_, code) = module_etag(&app, &token, id).await;
    assert!(code.contains("v4"), "the final source is served");
    assert_eq!(std::fs::read_dir(app.data_dir().join("compiled")).expect("dir").count(), 1);
    assert!(detail["bundle_sha"].is_string());
}

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(status.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&status.stderr));
}

#[tokio::test]
async fn apps_install_from_a_git_repo_update_with_and_without_conflicts_and_undo() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let upstream = tempfile::tempdir().expect("upstream");
    let src = upstream.path();
    std::fs::write(src.join("mobius.json"), MANIFEST.replace("\"counter\"", "\"notes\"")).expect("m");
    std::fs::write(src.join("index.jsx"), "import Title from \"./title.jsx\";\nexport default function App() {\n  return <main><Title /><p>body one</p></main>;\n}\n").expect("i");
    std::fs::write(src.join("title.jsx"), "export default function Title() {\n  return <h1>Release one</h1>;\n}\n")
        .expect("t");
    git(src, &["init", "-q"]);
    git(src, &["add", "-A"]);
    git(src, &["commit", "-qm", "one"]);

    let r = app.post("/api/apps/install", json!({ "source": src.display().to_string() }), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap_or_default());
    let installed: Value = app.get("/api/apps", Some(&token)).await.json().await.expect("json");
    let id = installed[0]["id"].as_i64().expect("id");
    assert_eq!(installed[0]["slug"], "notes");
    assert!(module_etag(&app, &token, id).await.1.contains("Release one"));
    let again = app.post("/api/apps/install", json!({ "source": src.display().to_string() }), Some(&token)).await;
    assert_error(again, StatusCode::CONFLICT, "app_exists").await;

    // A local edit (another file) and a new release merge cleanly.
    let local = app.data_dir().join("apps/notes");
    std::fs::write(local.join("index.jsx"), "import Title from \"./title.jsx\";\nexport default function App() {\n  return <main><Title /><p>body edited here</p></main>;\n}\n").expect("local edit");
    std::fs::write(src.join("title.jsx"), "export default function Title() {\n  return <h1>Release two</h1>;\n}\n")
        .expect("t2");
    git(src, &["commit", "-qam", "two"]);
    let up: Value =
        app.post(&format!("/api/apps/{id}/update"), json!({}), Some(&token)).await.json().await.expect("json");
    assert_eq!(up["mode"], "updated", "{up}");
    let (etag_two, code) = module_etag(&app, &token, id).await;
    assert!(code.contains("Release two") && code.contains("body edited here"), "both changes are live");
    let nothing: Value =
        app.post(&format!("/api/apps/{id}/update"), json!({}), Some(&token)).await.json().await.expect("json");
    assert_eq!(nothing["mode"], "up_to_date");

    // Both sides change the same line: the live app is untouched and the paths are named.
    std::fs::write(local.join("title.jsx"), "export default function Title() {\n  return <h1>Mine</h1>;\n}\n")
        .expect("mine");
    std::fs::write(src.join("title.jsx"), "export default function Title() {\n  return <h1>Release three</h1>;\n}\n")
        .expect("t3");
    git(src, &["commit", "-qam", "three"]);
    let conflict: Value =
        app.post(&format!("/api/apps/{id}/update"), json!({}), Some(&token)).await.json().await.expect("json");
    assert_eq!(conflict["mode"], "conflict", "{conflict}");
    assert_eq!(conflict["conflict_paths"], json!(["title.jsx"]));
    assert_eq!(module_etag(&app, &token, id).await.0, etag_two, "live app untouched");
    assert!(std::fs::read_to_string(local.join("title.jsx")).expect("title").contains("Mine"), "local edit kept");

    // Undo: back to the version that was live before the update.
    let history: Value = app.get(&format!("/api/apps/{id}/history"), Some(&token)).await.json().await.expect("json");
    assert!(history["versions"].as_array().is_some_and(|v| v.len() >= 2), "{history}");
    let undone = app.post(&format!("/api/apps/{id}/undo"), json!({}), Some(&token)).await;
    assert_eq!(undone.status(), StatusCode::OK, "{}", undone.text().await.unwrap_or_default());
    let (_, code) = module_etag(&app, &token, id).await;
    assert!(code.contains("Release one") && !code.contains("Release two"), "rolled back to the first release");
    assert!(std::fs::read_to_string(local.join("title.jsx")).expect("title").contains("Release one"), "the source too");

    let remote = app.post("/api/apps/install", json!({ "source": "https://127.0.0.1/evil.git" }), Some(&token)).await;
    assert_error(remote, StatusCode::BAD_REQUEST, "source_not_allowed").await;
    let relative = app.post("/api/apps/install", json!({ "source": "relative/path" }), Some(&token)).await;
    assert_error(relative, StatusCode::BAD_REQUEST, "invalid_source").await;
}

#[tokio::test]
async fn the_registry_tokens_frame_and_standalone_host_behave() {
    let app = TestApp::spawn().await;
    let dist = crate::helpers::fake_dist(app.data_dir());
    // With the PWA built, the bootstrap is inlined so the frame needs nothing else to start.
    std::fs::write(dist.join("app-frame.js"), "window.__bootMarker = 1;").expect("write");
    let token = app.setup_owner().await;
    let manifest = r##"{"id":"counter","name":"Counter","version":"0.1.0","description":"Counts.","entry":"index.jsx","theme_color":"#336699","offline_capable":true}"##;
    write_app(app.data_dir(), "counter", manifest, &counter_source("Count"));
    let body: Value = apply(&app, &token, "counter").await.json().await.expect("json");
    let id = body["app"]["id"].as_i64().expect("id");
    assert_eq!(body["app"]["has_unseen_update"], true);

    let t: Value =
        app.post("/api/auth/app-token", json!({ "app_id": id }), Some(&token)).await.json().await.expect("json");
    let app_token = t["token"].as_str().expect("token").to_owned();
    assert_eq!(app.get(&format!("/api/apps/{id}"), Some(&app_token)).await.status(), StatusCode::OK);
    assert_error(app.get("/api/chats", Some(&app_token)).await, StatusCode::FORBIDDEN, "wrong_scope").await;
    assert_error(
        app.post("/api/apps/apply", json!({ "slug": "counter" }), Some(&app_token)).await,
        StatusCode::FORBIDDEN,
        "wrong_scope",
    )
    .await;
    assert_eq!(app.get(&format!("/api/apps/{id}/module"), Some(&app_token)).await.status(), StatusCode::OK);

    let frame = app.get(&format!("/api/apps/{id}/frame"), None).await;
    assert_eq!(frame.status(), StatusCode::OK);
    let csp = frame.headers()["content-security-policy"].to_str().expect("csp").to_owned();
    assert!(csp.starts_with("sandbox allow-scripts") && !csp.contains("allow-same-origin"), "{csp}");
    assert_eq!(frame.headers()["x-mobius-offline"], "1");
    let html = frame.text().await.expect("html");
    assert!(html.contains("mobius-frame-config") && !html.contains(&token));
    // Painted as the original platform paints apps: its theme variables in both palettes (before
    // the shell sends the current ones), the same values as --mobius-*, and a full-height root.
    for needle in [
        "html, body { margin: 0; height: 100%; background: var(--bg); touch-action: manipulation; }",
        "body { color: var(--text); font-family: var(--font); font-size: 14px;",
        "#root { height: 100%; }",
        "--bg: #0d0d0d;",
        "--bg: #f0eeeb;",
        "--surface2: #212121;",
        "--accent-dim: rgba(139,108,247,0.08);",
        "--mobius-surface: var(--surface);",
    ] {
        assert!(html.contains(needle), "the frame document lacks {needle:?}:\n{html}");
    }
    assert!(!html.contains("min-height: 100vh"), "the root takes the full height, not a minimum");
    assert!(html.contains("<script>window.__bootMarker = 1;</script>") && !html.contains("/app-frame.js"), "{html}");

    let page = app.get("/apps/counter/", None).await;
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.expect("html");
    assert!(html.contains("/apps/counter/manifest.json") && html.contains("__mobius-standalone-app__"));
    let manifest: Value = app.get("/apps/counter/manifest.json", None).await.json().await.expect("json");
    assert_eq!(manifest["start_url"], "/apps/counter/");
    assert_eq!(manifest["theme_color"], "#336699");
    let icon = app.get("/apps/counter/icon.png?size=192", None).await;
    assert_eq!(icon.headers()["content-type"], "image/png");
    assert!(icon.bytes().await.expect("png").starts_with(b"\x89PNG"));
    assert_eq!(app.get("/apps/missing/", None).await.status(), StatusCode::NOT_FOUND);

    let r = app
        .client
        .patch(app.url(&format!("/api/apps/{id}")))
        .bearer_auth(&token)
        .json(&json!({ "name": "Tally", "pinned": true }))
        .send()
        .await
        .expect("patch");
    assert_eq!(r.status(), StatusCode::OK);
    let r = app.post(&format!("/api/apps/{id}/opened"), json!({}), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let listed: Value = app.get("/api/apps", Some(&token)).await.json().await.expect("json");
    assert_eq!(listed[0]["name"], "Tally");
    assert_eq!(listed[0]["has_unseen_update"], false);
    assert!(listed[0]["pinned_at"].is_i64());

    let del = app.client.delete(app.url(&format!("/api/apps/{id}"))).bearer_auth(&token).send().await.expect("delete");
    assert_eq!(del.status(), StatusCode::NO_CONTENT);
    assert_error(app.get(&format!("/api/apps/{id}"), Some(&token)).await, StatusCode::NOT_FOUND, "app_not_found").await;
    assert_error(
        app.get(&format!("/api/apps/{id}/module"), Some(&app_token)).await,
        StatusCode::UNAUTHORIZED,
        "token_revoked",
    )
    .await;
    let rec = app.post(&format!("/api/apps/{id}/recover"), json!({}), Some(&token)).await;
    assert_eq!(rec.status(), StatusCode::OK);
    assert_eq!(app.get(&format!("/api/apps/{id}/module"), Some(&app_token)).await.status(), StatusCode::OK);
}

/// The shell's `index.html` as the build writes it: its identity block between the markers.
const SHELL_INDEX: &str = "<!doctype html><html><head><meta charset=\"utf-8\">\
    <!-- mobius:identity (shell) -->\
    <meta name=\"theme-color\" content=\"#f6f6f3\" media=\"(prefers-color-scheme: light)\">\
    <meta name=\"apple-mobile-web-app-title\" content=\"Möbius\">\
    <link rel=\"manifest\" href=\"/manifest.webmanifest\">\
    <link rel=\"icon\" href=\"/favicon.svg\" type=\"image/svg+xml\">\
    <link rel=\"apple-touch-icon\" href=\"/icons/apple-touch-icon.png\">\
    <title>Möbius</title>\
    <!-- /mobius:identity -->\
    <script type=\"module\" src=\"/assets/main.js\"></script></head><body><div id=\"root\"></div></body></html>";

#[tokio::test]
async fn a_standalone_app_page_names_and_paints_its_home_screen_entry_as_the_app() {
    let app = TestApp::spawn().await;
    let dist = crate::helpers::fake_dist(app.data_dir());
    std::fs::write(dist.join("index.html"), SHELL_INDEX).expect("index");
    let token = app.setup_owner().await;
    let manifest = r##"{"id":"counter","name":"Tally <&> \"Co\"","version":"0.1.0","description":"Counts.","entry":"index.jsx","theme_color":"#336699","background_color":"#fafafa"}"##;
    write_app(app.data_dir(), "counter", manifest, &counter_source("Count"));
    assert_eq!(apply(&app, &token, "counter").await.status(), StatusCode::OK);

    let html = app.get("/apps/counter/", None).await.text().await.expect("html");
    // The shell's name, colours, icons and manifest are gone…
    for shell in [
        "#f6f6f3",
        "content=\"Möbius\"",
        "/manifest.webmanifest",
        "/favicon.svg",
        "/icons/apple-touch-icon.png",
        "<title>Möbius</title>",
    ] {
        assert!(!html.contains(shell), "the standalone page still carries the shell's {shell:?}:\n{html}");
    }
    // …and the app's stand in their place, its name escaped.
    for own in [
        "<meta name=\"theme-color\" content=\"#336699\">",
        "<meta name=\"apple-mobile-web-app-title\" content=\"Tally &lt;&amp;&gt; &quot;Co&quot;\">",
        "<link rel=\"manifest\" href=\"/apps/counter/manifest.json\">",
        "<link rel=\"apple-touch-icon\" href=\"/apps/counter/icon.png?v=",
        "<link rel=\"icon\" href=\"/apps/counter/icon.png?v=",
        "<title>Tally &lt;&amp;&gt; &quot;Co&quot;</title>",
        "id=\"__mobius-standalone-app__\"",
        "<script type=\"module\" src=\"/assets/main.js\"></script>",
    ] {
        assert!(html.contains(own), "the standalone page lacks {own:?}:\n{html}");
    }
    assert_eq!(html.matches("<!-- mobius:identity").count(), 1, "one identity block:\n{html}");
    let manifest: Value = app.get("/apps/counter/manifest.json", None).await.json().await.expect("json");
    assert_eq!(
        (manifest["theme_color"].as_str(), manifest["background_color"].as_str()),
        (Some("#336699"), Some("#fafafa"))
    );
    assert!(
        manifest["icons"][0]["src"].as_str().is_some_and(|s| s.starts_with("/apps/counter/icon.png?v=")),
        "{manifest}"
    );
}

#[tokio::test]
async fn deleted_chats_and_apps_are_purged_with_their_files_after_the_recovery_window() {
    use sqlx::Connection;
    let dir = std::sync::Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| c.purge_every = std::time::Duration::from_millis(100)).await;
    let token = app.setup_owner().await;
    write_app(app.data_dir(), "counter", MANIFEST, &counter_source("Count"));
    let body: Value = apply(&app, &token, "counter").await.json().await.expect("json");
    let id = body["app"]["id"].as_i64().expect("id");
    app.chat(&token, "old").await;
    let del = app.client.delete(app.url(&format!("/api/apps/{id}"))).bearer_auth(&token).send().await.expect("delete");
    assert_eq!(del.status(), StatusCode::NO_CONTENT);
    let del = app.client.delete(app.url("/api/chats/old")).bearer_auth(&token).send().await.expect("delete");
    assert_eq!(del.status(), StatusCode::NO_CONTENT);
    // Age the tombstones past the window (test-only second connection; WAL allows it).
    let url = format!("sqlite://{}", app.data_dir().join("db/mobius.sqlite3").display());
    let mut db = sqlx::SqliteConnection::connect(&url).await.expect("db");
    let old = mobius::db::now_ms() - 8 * 24 * 3600 * 1000;
    sqlx::query("UPDATE apps SET deleted_at = ?").bind(old).execute(&mut db).await.expect("age app");
    sqlx::query("UPDATE chats SET deleted_at = ?").bind(old).execute(&mut db).await.expect("age chat");
    db.close().await.expect("close");
    // Housekeeping purges every 100 ms here.
    let source = app.data_dir().join("apps/counter");
    let builds = || std::fs::read_dir(app.data_dir().join("compiled")).map_or(0, Iterator::count);
    // The purge runs in the background: the source goes first, then the data, then the builds.
    eventually("the purge removes the source and the builds", || async {
        (!source.exists() && builds() == 0).then_some(())
    })
    .await;
    assert!(!source.exists(), "the app's source is gone");
    assert_eq!(builds(), 0, "and its builds");
    assert_error(
        app.post(&format!("/api/apps/{id}/recover"), json!({}), Some(&token)).await,
        StatusCode::NOT_FOUND,
        "app_not_found",
    )
    .await;
    assert_error(
        app.post("/api/chats/old/recover", json!({}), Some(&token)).await,
        StatusCode::NOT_FOUND,
        "chat_not_found",
    )
    .await;
}

/// The sandbox flags the shell puts on the app iframe (`FRAME_SANDBOX` in AppCanvas.tsx).
fn shell_iframe_sandbox() -> Vec<String> {
    let source = std::fs::read_to_string(mobius::config::checkout_root().join("frontend/src/apps/AppCanvas.tsx"))
        .expect("AppCanvas.tsx");
    let start = source.find("FRAME_SANDBOX = \"").expect("the FRAME_SANDBOX constant") + "FRAME_SANDBOX = \"".len();
    let end = start + source[start..].find('"').expect("closing quote");
    source[start..end].split_whitespace().map(str::to_owned).collect()
}

#[tokio::test]
async fn an_app_frame_stays_sandboxed_and_an_app_token_reaches_only_its_own_app() {
    let app = TestApp::spawn().await;
    crate::helpers::fake_dist(app.data_dir());
    let token = app.setup_owner().await;
    for slug in ["first", "second"] {
        write_app(app.data_dir(), slug, MANIFEST, &counter_source("Count"));
    }
    let built = app.post("/api/apps/apply", json!({ "slug": "first", "chat_id": "chat-that-built-it" }), Some(&token));
    let first = built.await.json::<Value>().await.expect("json")["app"]["id"].as_i64().expect("id");
    let second =
        apply(&app, &token, "second").await.json::<Value>().await.expect("json")["app"]["id"].as_i64().expect("id");

    // The frame: the iframe's sandbox is the CSP's, no popup escapes, the chat is not named.
    let listed: Value = app.get("/api/apps", Some(&token)).await.json().await.expect("json");
    let frame_url = listed.as_array().expect("apps").iter().find(|a| a["id"] == first).expect("first")["frame_url"]
        .as_str()
        .expect("frame_url")
        .to_owned();
    assert!(frame_url.contains("&b="), "{frame_url}");
    let frame = app.get(&frame_url, None).await;
    assert_eq!(frame.headers()["cache-control"], "private, max-age=31536000, immutable", "kept for offline starts");
    let csp = frame.headers()["content-security-policy"].to_str().expect("csp").to_owned();
    let flags: Vec<String> = csp
        .split(';')
        .next()
        .and_then(|d| d.trim().strip_prefix("sandbox"))
        .expect("a sandbox directive")
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    assert_eq!(flags, shell_iframe_sandbox(), "the iframe carries exactly the frame CSP's sandbox");
    assert!(!flags.iter().any(|f| f == "allow-popups-to-escape-sandbox" || f == "allow-same-origin"), "{csp}");
    assert!(!frame.text().await.expect("html").contains("chat-that-built-it"), "the frame names no chat");
    let unversioned = app.get(&format!("/api/apps/{first}/frame"), None).await;
    assert_eq!(unversioned.headers()["cache-control"], "no-cache");

    // An app token: its own entry and module, nothing else.
    let minted = app.post("/api/auth/app-token", json!({ "app_id": first }), Some(&token)).await;
    let app_token = minted.json::<Value>().await.expect("json")["token"].as_str().expect("token").to_owned();
    // Only the owner, and a store app (manage_apps), may list the apps.
    assert_error(app.get("/api/apps", Some(&app_token)).await, StatusCode::FORBIDDEN, "manage_apps_required").await;
    assert_eq!(app.get(&format!("/api/apps/{first}"), Some(&app_token)).await.status(), StatusCode::OK);
    let other = app.get(&format!("/api/apps/{second}"), Some(&app_token)).await;
    assert_error(other, StatusCode::FORBIDDEN, "forbidden").await;
    let other = app.get(&format!("/api/apps/{second}/module"), Some(&app_token)).await;
    assert_error(other, StatusCode::FORBIDDEN, "forbidden").await;
    let other = app.get(&format!("/api/apps/{second}/module?token={app_token}"), None).await;
    assert_error(other, StatusCode::FORBIDDEN, "forbidden").await;
    let own = app.get(&format!("/api/apps/{first}/module?token={app_token}"), None).await;
    assert_eq!(own.status(), StatusCode::OK);
    // The owner's token never travels in a URL.
    let owner_in_url = app.get(&format!("/api/apps/{first}/module?token={token}"), None).await;
    assert_error(owner_in_url, StatusCode::UNAUTHORIZED, "token_in_url").await;
    assert_eq!(app.get(&format!("/api/apps/{second}/module"), Some(&token)).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_standalone_path_that_is_no_app_id_is_a_400() {
    let app = TestApp::spawn().await;
    crate::helpers::fake_dist(app.data_dir());
    for path in ["/apps/a%0Ab", "/apps/a%0Ab/", "/apps/a%0Ab/manifest.json", "/apps/Bad%20Id/icon.png"] {
        assert_error(app.get(path, None).await, StatusCode::BAD_REQUEST, "invalid_slug").await;
    }
    assert_eq!(app.get("/apps/missing/", None).await.status(), StatusCode::NOT_FOUND);
}

/// A plain folder (no git) holding an app with `manifest`.
fn plain_source(manifest: &str) -> tempfile::TempDir {
    let src = tempfile::tempdir().expect("src");
    std::fs::write(src.path().join("mobius.json"), manifest).expect("manifest");
    std::fs::write(src.path().join("index.jsx"), counter_source("From a plain folder")).expect("index");
    std::fs::write(
        src.path().join("label.jsx"),
        "export default function Label({ n, text }) {\n  return <span>{text}: {n}</span>;\n}\n",
    )
    .expect("label");
    src
}

#[tokio::test]
async fn an_app_installs_from_a_plain_folder() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let src = plain_source(&MANIFEST.replace("\"counter\"", "\"plain\""));
    std::fs::create_dir_all(src.path().join("node_modules/junk")).expect("junk");
    std::fs::write(src.path().join("node_modules/junk/x.js"), "never copied").expect("junk");
    let r = app.post("/api/apps/install", json!({ "source": src.path().display().to_string() }), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap_or_default());
    let listed: Value = app.get("/api/apps", Some(&token)).await.json().await.expect("json");
    let id = listed[0]["id"].as_i64().expect("id");
    assert!(module_etag(&app, &token, id).await.1.contains("From a plain folder"));
    assert!(!app.data_dir().join("apps/plain/node_modules").exists());
}

#[tokio::test]
async fn a_failed_first_install_leaves_nothing_behind_and_the_id_stays_free() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let broken = r#"{"id":"seeded","name":"Seeded","version":"0.1.0","description":"x","entry":"index.jsx","storage_seeds":{"data/start.json":"missing-file.json"}}"#;
    let src = plain_source(broken);
    let r = app.post("/api/apps/install", json!({ "source": src.path().display().to_string() }), Some(&token)).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_seed").await;
    let listed: Value = app.get("/api/apps", Some(&token)).await.json().await.expect("json");
    assert_eq!(listed, json!([]), "no app row is left behind");
    assert!(!app.data_dir().join("apps/seeded").exists());
    let compiled = app.data_dir().join("compiled");
    assert!(!compiled.exists() || std::fs::read_dir(&compiled).expect("compiled").next().is_none(), "no bundle left");
    // Fixed, the same id installs.
    std::fs::write(src.path().join("missing-file.json"), "{\"n\":1}").expect("seed file");
    let r = app.post("/api/apps/install", json!({ "source": src.path().display().to_string() }), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap_or_default());
}

#[tokio::test]
async fn a_local_install_refuses_the_data_folder_system_folders_and_huge_trees() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let data = app.data_dir().display().to_string();
    let parent = app.data_dir().parent().expect("parent").display().to_string();
    let inside = app.data_dir().join("cli-auth").display().to_string();
    for source in [data.as_str(), parent.as_str(), inside.as_str(), "/proc/self", "/etc", "/", "/usr/share", "/sys"] {
        let r = app.post("/api/apps/install", json!({ "source": source }), Some(&token)).await;
        assert_error(r, StatusCode::BAD_REQUEST, "invalid_source").await;
    }
    let huge = plain_source(&MANIFEST.replace("\"counter\"", "\"huge\""));
    std::fs::create_dir_all(huge.path().join("many")).expect("many");
    for i in 0..=mobius::apps::git::MAX_LOCAL_SOURCE_ENTRIES {
        std::fs::write(huge.path().join("many").join(i.to_string()), "").expect("file");
    }
    let r = app.post("/api/apps/install", json!({ "source": huge.path().display().to_string() }), Some(&token)).await;
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "source_too_large").await;
    assert_eq!(app.get("/api/apps", Some(&token)).await.json::<Value>().await.expect("json"), json!([]));
}

#[tokio::test]
async fn each_app_carries_its_capability_contract_for_the_frame() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let manifest = r#"{"id":"counter","name":"Counter","version":"0.1.0","description":"Counts.","entry":"index.jsx",
        "offline_capable":true,"offline":{"reads":true,"precache":["static/logo.png"]},
        "capabilities":{"media.speech":{"version":1,"reason":"Reads notes aloud"}}}"#;
    write_app(app.data_dir(), "counter", manifest, &counter_source("Count"));
    let body: Value = apply(&app, &token, "counter").await.json().await.expect("json");
    let id = body["app"]["id"].as_i64().expect("id");
    let listed: Value = app.get("/api/apps", Some(&token)).await.json().await.expect("json");
    let contract =
        &listed.as_array().expect("list").iter().find(|a| a["id"] == id).expect("listed")["capability_contract"];
    assert_eq!(contract["schema"], 5);
    assert_eq!(
        contract["offline"],
        json!({ "capable": true, "contract": { "reads": true, "precache": ["static/logo.png"] } })
    );
    assert_eq!(contract["runtime"]["media.speech"]["version"], 1);
    assert_eq!(contract["runtime"]["media.speech"]["reason"], "Reads notes aloud");
    assert_eq!(contract["runtime"]["media.speech"]["limits"]["max_text_chars"], 50_000);
    let one: Value = app.get(&format!("/api/apps/{id}"), Some(&token)).await.json().await.expect("json");
    assert_eq!(&one["capability_contract"], contract);
}
