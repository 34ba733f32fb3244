//! App and shared file storage: body shapes, ETags and compare-and-swap, path safety, quotas,
//! cross-app permissions, listings, moves, folder deletes and manifest seeds.

use std::path::PathBuf;
use std::sync::Arc;

use reqwest::header::{CONTENT_TYPE, ETAG, IF_MATCH, IF_NONE_MATCH};
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{TestApp, assert_error};

/// A server with an owner, plus helpers to register apps behind the server's back.
struct Env {
    app: TestApp,
    owner: String,
}

impl Env {
    async fn new() -> Self {
        Self::with(|_| {}).await
    }

    /// A server whose configuration `tweak` adjusts.
    async fn with(tweak: impl FnOnce(&mut mobius::config::Config)) -> Self {
        let app = TestApp::spawn_in(Arc::new(tempfile::tempdir().expect("tmp")), tweak).await;
        let owner = app.setup_owner().await;
        Self { app, owner }
    }

    /// Registers a live app and returns its id and an app token for it.
    async fn create_app(&self, slug: &str) -> (i64, String) {
        self.app.register_app(slug).await
    }

    /// Changes an app's sharing levels through the owner API (read fresh on every request).
    async fn set_sharing(&self, id: i64, cross_app_access: &str, share_with_apps: &str) {
        let body = json!({ "cross_app_access": cross_app_access, "share_with_apps": share_with_apps });
        let r = self.app.client.patch(self.url(&format!("/api/apps/{id}"))).bearer_auth(&self.owner).json(&body);
        assert_eq!(r.send().await.expect("PATCH").status(), StatusCode::OK);
    }

    async fn soft_delete(&self, id: i64) {
        let r = self.app.client.delete(self.url(&format!("/api/apps/{id}"))).bearer_auth(&self.owner);
        assert!(r.send().await.expect("DELETE").status().is_success());
    }

    fn url(&self, path: &str) -> String {
        self.app.url(path)
    }

    fn data_dir(&self) -> PathBuf {
        self.app.data_dir().to_path_buf()
    }

    fn app_dir(&self, id: i64) -> PathBuf {
        mobius::storage::app_data_dir(self.app.data_dir(), id)
    }

    async fn get(&self, path: &str, token: &str) -> Response {
        self.app.client.get(self.url(path)).bearer_auth(token).send().await.expect("GET")
    }

    async fn put(&self, path: &str, token: &str, content_type: &str, body: impl Into<reqwest::Body>) -> Response {
        self.app
            .client
            .put(self.url(path))
            .bearer_auth(token)
            .header(CONTENT_TYPE, content_type)
            .body(body)
            .send()
            .await
            .expect("PUT")
    }

    async fn put_json(&self, path: &str, token: &str, value: &Value) -> Response {
        self.put(path, token, "application/json", value.to_string()).await
    }

    async fn delete(&self, path: &str, token: &str) -> Response {
        self.app.client.delete(self.url(path)).bearer_auth(token).send().await.expect("DELETE")
    }

    async fn list(&self, path: &str, token: &str) -> Value {
        let r = self.get(path, token).await;
        assert_eq!(r.status(), StatusCode::OK, "list {path}");
        r.json().await.expect("json")
    }
}

fn etag_of(r: &Response) -> String {
    r.headers().get(ETAG).expect("an ETag header").to_str().expect("ascii").to_owned()
}

fn content_type_of(r: &Response) -> String {
    r.headers().get(CONTENT_TYPE).map(|v| v.to_str().expect("ascii").to_owned()).unwrap_or_default()
}

fn assert_strong(tag: &str) {
    assert!(tag.starts_with('"') && tag.ends_with('"') && tag.len() > 2, "not a strong ETag: {tag}");
}

/// Sends `request_line` verbatim (no client-side URL normalisation) and returns the status
/// and body.
async fn raw_request(env: &Env, method: &str, target: &str, token: &str, body: &[u8]) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(env.app.addr).await.expect("connect");
    let head = format!(
        "{method} {target} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nContent-Type: text/plain\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        env.app.addr,
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    stream.write_all(body).await.expect("write body");
    let mut out = Vec::new();
    stream.read_to_end(&mut out).await.expect("read");
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("status line");
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn json_text_and_binary_round_trip_with_their_content_types() {
    let env = Env::new().await;
    let (id, token) = env.create_app("notes").await;
    let base = format!("/api/storage/apps/{id}");

    let doc = json!({ "items": [1, 2, 3], "title": "Ünïcode" });
    assert_eq!(env.put_json(&format!("{base}/state.json"), &token, &doc).await.status(), StatusCode::NO_CONTENT);
    let r = env.get(&format!("{base}/state.json"), &token).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(content_type_of(&r).starts_with("application/json"), "{}", content_type_of(&r));
    assert_eq!(r.json::<Value>().await.expect("json"), doc);

    // `{"content": …}` to a non-JSON path stores the text itself.
    let r = env.put_json(&format!("{base}/notes/today.md"), &token, &json!({ "content": "# Hello\nworld" })).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let r = env.get(&format!("{base}/notes/today.md"), &token).await;
    assert_eq!(content_type_of(&r), "text/plain; charset=utf-8");
    assert_eq!(r.text().await.expect("text"), "# Hello\nworld");

    // text/* is stored as UTF-8 text with its type.
    let r = env.put(&format!("{base}/log.txt"), &token, "text/csv", "a,b\n1,2\n").await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let r = env.get(&format!("{base}/log.txt"), &token).await;
    assert_eq!(content_type_of(&r), "text/csv; charset=utf-8");
    assert_eq!(r.text().await.expect("text"), "a,b\n1,2\n");

    // Anything else is raw bytes with the Content-Type recorded.
    let png: Vec<u8> = (0..=255u8).cycle().take(3000).collect();
    let r = env.put(&format!("{base}/img/pic"), &token, "image/png", png.clone()).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let r = env.get(&format!("{base}/img/pic"), &token).await;
    assert_eq!(content_type_of(&r), "image/png");
    assert_eq!(r.bytes().await.expect("bytes").to_vec(), png);

    // A large file is streamed back intact.
    let big: Vec<u8> = (0..700_000u32).map(|i| (i % 251) as u8).collect();
    let r = env.put(&format!("{base}/big.bin"), &token, "application/octet-stream", big.clone()).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let r = env.get(&format!("{base}/big.bin"), &token).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.bytes().await.expect("bytes").len(), big.len());

    // The files live apart from the source, with their metadata outside the app's tree.
    assert!(env.app_dir(id).join("notes/today.md").is_file());
    let sidecars = env.data_dir().join(".storage-meta");
    assert!(sidecars.is_dir());
    assert!(!std::fs::read_dir(env.app_dir(id)).expect("ls").any(|e| {
        let name = e.expect("entry").file_name().into_string().expect("utf8");
        name.contains("meta") || name.starts_with('.')
    }));

    // Body shapes that make no sense are refused.
    let r = env.put(&format!("{base}/bad.json"), &token, "application/json", "{not json").await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_json").await;
    let r = env.put(&format!("{base}/text.json"), &token, "text/plain", "hello").await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_body").await;
    let r = env.put(&format!("{base}/bad.txt"), &token, "text/plain", vec![0xff, 0xfe]).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_text").await;
    assert_error(env.get(&format!("{base}/missing.json"), &token).await, StatusCode::NOT_FOUND, "not_found").await;
}

#[tokio::test]
async fn reads_and_writes_carry_strong_etags_and_if_none_match_answers_304() {
    let env = Env::new().await;
    let (id, token) = env.create_app("tags").await;
    let path = format!("/api/storage/apps/{id}/doc.json");
    let put = env.put_json(&path, &token, &json!({ "v": 1 })).await;
    assert_eq!(put.status(), StatusCode::NO_CONTENT);
    let written = etag_of(&put);
    assert_strong(&written);
    let got = env.get(&path, &token).await;
    assert_eq!(etag_of(&got), written);
    let again = env.app.client.get(env.url(&path)).bearer_auth(&token).header(IF_NONE_MATCH, &written).send().await;
    let again = again.expect("GET");
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(etag_of(&again), written);
    let stale = env.app.client.get(env.url(&path)).bearer_auth(&token).header(IF_NONE_MATCH, "\"old\"").send().await;
    assert_eq!(stale.expect("GET").status(), StatusCode::OK);

    let second = env.put_json(&path, &token, &json!({ "v": 2 })).await;
    assert_ne!(etag_of(&second), written, "a new write must get a new ETag");
}

#[tokio::test]
async fn if_match_writes_only_over_the_version_it_names() {
    let env = Env::new().await;
    let (id, token) = env.create_app("cas").await;
    let path = format!("/api/storage/apps/{id}/counter.json");
    let first = etag_of(&env.put_json(&path, &token, &json!(1)).await);
    let put_if = |tag: String, value: Value| {
        let req = env.app.client.put(env.url(&path)).bearer_auth(&token).header(IF_MATCH, tag).json(&value);
        async move { req.send().await.expect("PUT") }
    };

    let ok = put_if(first.clone(), json!(2)).await;
    assert_eq!(ok.status(), StatusCode::NO_CONTENT);
    let second = etag_of(&ok);
    // The old version no longer matches, and nothing is written.
    assert_error(put_if(first.clone(), json!(99)).await, StatusCode::PRECONDITION_FAILED, "precondition_failed").await;
    assert_eq!(env.get(&path, &token).await.json::<Value>().await.expect("json"), json!(2));
    // Weak tags never match; a list matches if any member does; proxies' suffixes are tolerated.
    let weak = format!("W/{second}");
    assert_error(put_if(weak, json!(99)).await, StatusCode::PRECONDITION_FAILED, "precondition_failed").await;
    let gzipped = format!("{}-gzip\"", second.trim_end_matches('"'));
    let r = put_if(format!("\"nope\", {gzipped}"), json!(3)).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let third = etag_of(&r);
    let brotli = format!("{}-br\"", third.trim_end_matches('"'));
    assert_eq!(put_if(brotli, json!(4)).await.status(), StatusCode::NO_CONTENT);
    assert_eq!(put_if("*".into(), json!(5)).await.status(), StatusCode::NO_CONTENT);
    assert_eq!(env.get(&path, &token).await.json::<Value>().await.expect("json"), json!(5));

    // `*` on a missing file fails.
    let missing = format!("/api/storage/apps/{id}/other.json");
    let r = env.app.client.put(env.url(&missing)).bearer_auth(&token).header(IF_MATCH, "*").json(&json!(1)).send();
    assert_error(r.await.expect("PUT"), StatusCode::PRECONDITION_FAILED, "precondition_failed").await;
    assert_error(env.get(&missing, &token).await, StatusCode::NOT_FOUND, "not_found").await;
}

#[tokio::test]
async fn if_none_match_star_creates_a_file_only_once() {
    let env = Env::new().await;
    let (id, token) = env.create_app("once").await;
    let path = format!("/api/storage/apps/{id}/claim.json");
    let create = |value: Value| {
        let req = env.app.client.put(env.url(&path)).bearer_auth(&token).header(IF_NONE_MATCH, "*").json(&value);
        async move { req.send().await.expect("PUT") }
    };
    assert_eq!(create(json!({ "owner": "first" })).await.status(), StatusCode::NO_CONTENT);
    assert_error(create(json!({ "owner": "second" })).await, StatusCode::PRECONDITION_FAILED, "precondition_failed")
        .await;
    assert_eq!(env.get(&path, &token).await.json::<Value>().await.expect("json"), json!({ "owner": "first" }));
}

#[tokio::test]
async fn a_hundred_concurrent_compare_and_swap_increments_all_land() {
    // A hundred clients on one address: more connections than one address may hold by default.
    let env = Arc::new(Env::with(|c| c.net.max_connections_per_address = 256).await);
    let (id, token) = env.create_app("counter").await;
    let path = format!("/api/storage/apps/{id}/count.json");
    assert_eq!(env.put_json(&path, &token, &json!(0)).await.status(), StatusCode::NO_CONTENT);
    let mut tasks = Vec::new();
    for _ in 0..100 {
        let (env, token, path) = (env.clone(), token.clone(), path.clone());
        tasks.push(tokio::spawn(async move {
            let mut conflicts = 0u32;
            loop {
                let r = env.get(&path, &token).await;
                assert_eq!(r.status(), StatusCode::OK);
                let tag = etag_of(&r);
                let n = r.json::<Value>().await.expect("json").as_i64().expect("number");
                let put = env.app.client.put(env.url(&path)).bearer_auth(&token).header(IF_MATCH, tag);
                let r = put.json(&json!(n + 1)).send().await.expect("PUT");
                match r.status() {
                    StatusCode::NO_CONTENT => return conflicts,
                    StatusCode::PRECONDITION_FAILED => conflicts += 1,
                    other => panic!("unexpected {other}: {}", r.text().await.unwrap_or_default()),
                }
            }
        }));
    }
    let mut conflicts = 0;
    for task in tasks {
        conflicts += task.await.expect("task");
    }
    assert_eq!(env.get(&path, &token).await.json::<Value>().await.expect("json"), json!(100));
    assert!(conflicts > 0, "100 racing clients never conflicted: the test did not race");
}

#[tokio::test]
async fn racing_document_writes_answer_as_if_applied_one_by_one() {
    // JSON and text bodies are group-committed: a batch keeps only each path's last version.
    // Every writer still gets its own tag, the file ends as the write its tag names, claims
    // made with If-None-Match in one batch succeed once, and the quota holds across a batch.
    let env = Arc::new(Env::with(|c| c.app_quota_bytes = 1000).await);
    let (id, token) = env.create_app("autosave").await;
    let path = format!("/api/storage/apps/{id}/doc.json");
    let mut tasks = Vec::new();
    for i in 0..40 {
        let (env, token, path) = (env.clone(), token.clone(), path.clone());
        tasks.push(tokio::spawn(async move {
            let r = env.put_json(&path, &token, &json!({ "i": i })).await;
            assert_eq!(r.status(), StatusCode::NO_CONTENT);
            (etag_of(&r), i)
        }));
    }
    let mut written = std::collections::HashMap::new();
    for task in tasks {
        let (tag, i) = task.await.expect("task");
        assert!(written.insert(tag, i).is_none(), "two writes shared a tag");
    }
    let r = env.get(&path, &token).await;
    let tag = etag_of(&r);
    let body = r.json::<Value>().await.expect("json");
    assert_eq!(body, json!({ "i": written[&tag] }), "the stored document is not the one its tag names");

    let claim = format!("/api/storage/apps/{id}/claim.json");
    let mut claims = Vec::new();
    for i in 0..10 {
        let (env, token, claim) = (env.clone(), token.clone(), claim.clone());
        claims.push(tokio::spawn(async move {
            let req = env.app.client.put(env.url(&claim)).bearer_auth(&token).header(IF_NONE_MATCH, "*");
            (req.json(&json!(i)).send().await.expect("PUT").status(), i)
        }));
    }
    let mut winners = Vec::new();
    for task in claims {
        match task.await.expect("task") {
            (StatusCode::NO_CONTENT, i) => winners.push(i),
            (StatusCode::PRECONDITION_FAILED, _) => {}
            (other, _) => panic!("unexpected {other}"),
        }
    }
    assert_eq!(winners.len(), 1, "If-None-Match: * let {winners:?} all claim the file");
    assert_eq!(env.get(&claim, &token).await.json::<Value>().await.expect("json"), json!(winners[0]));

    // Used so far: the two small documents. Twenty racing 100-byte documents: only what
    // fits in the remaining quota lands, and exactly that is on disk.
    let used: u64 = ["doc.json", "claim.json"]
        .iter()
        .map(|n| std::fs::metadata(env.app_dir(id).join(n)).expect("stat").len())
        .sum();
    let mut tasks = Vec::new();
    for i in 0..20 {
        let (env, token) = (env.clone(), token.clone());
        let url = format!("/api/storage/apps/{id}/many/{i}.json");
        tasks.push(tokio::spawn(async move { env.put_json(&url, &token, &json!("x".repeat(98))).await.status() }));
    }
    let mut stored = 0u64;
    for task in tasks {
        match task.await.expect("task") {
            StatusCode::NO_CONTENT => stored += 1,
            StatusCode::PAYLOAD_TOO_LARGE => {}
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(stored, (1000 - used) / 100);
    let on_disk = std::fs::read_dir(env.app_dir(id).join("many")).expect("ls").count() as u64;
    assert_eq!(on_disk, stored);
}

#[tokio::test]
async fn writes_within_one_clock_tick_still_get_different_etags() {
    let env = Arc::new(Env::new().await);
    let (id, token) = env.create_app("ticks").await;
    let path = format!("/api/storage/apps/{id}/same-size.txt");
    // Back-to-back writes of equal size land within the filesystem's timestamp granularity,
    // and a freed inode number is often reused at once: only a per-write version tells
    // them apart.
    let mut tags = Vec::new();
    for i in 0..40 {
        let r = env.put(&path, &token, "text/plain", format!("v{:02}", i % 100)).await;
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
        tags.push(etag_of(&r));
    }
    let mut concurrent = Vec::new();
    for i in 0..20 {
        let (env, token, path) = (env.clone(), token.clone(), path.clone());
        concurrent.push(tokio::spawn(async move {
            etag_of(&env.put(&path, &token, "text/plain", format!("c{i:02}")).await)
        }));
    }
    for task in concurrent {
        tags.push(task.await.expect("task"));
    }
    let unique: std::collections::HashSet<_> = tags.iter().collect();
    assert_eq!(unique.len(), tags.len(), "two writes shared an ETag: {tags:?}");
    // The GET agrees with the last write.
    let last = env.get(&path, &token).await;
    assert!(tags.contains(&etag_of(&last)));
}

#[tokio::test]
async fn files_written_behind_the_api_get_stable_tags_that_change_when_rewritten() {
    let env = Env::new().await;
    let (id, token) = env.create_app("agent").await;
    let dir = env.app_dir(id);
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("direct.json"), b"{\"by\":\"agent\"}").expect("write");
    let path = format!("/api/storage/apps/{id}/direct.json");
    let a = etag_of(&env.get(&path, &token).await);
    assert_strong(&a);
    assert_eq!(etag_of(&env.get(&path, &token).await), a, "the tag of an untouched file is stable");
    let b = etag_of(&env.put_json(&path, &token, &json!({ "by": "api" })).await);
    assert_ne!(a, b);
    assert_eq!(etag_of(&env.get(&path, &token).await), b);
    // The agent rewrites it again: the recorded version no longer applies.
    std::fs::remove_file(dir.join("direct.json")).expect("rm");
    std::fs::write(dir.join("direct.json"), b"{\"by\":\"agent again\"}").expect("write");
    let c = etag_of(&env.get(&path, &token).await);
    assert_ne!(c, b);
    assert_ne!(c, a);
}

#[tokio::test]
async fn traversal_and_odd_characters_are_refused_and_nothing_outside_is_touched() {
    let env = Env::new().await;
    let (id, token) = env.create_app("paths").await;
    std::fs::create_dir_all(env.app_dir(id)).expect("mkdir");
    let secret = std::fs::read(env.data_dir().join("secret.key")).expect("secret");
    let base = format!("/api/storage/apps/{id}");
    for target in [
        format!("{base}/../../../secret.key"),
        format!("{base}/%2e%2e/%2e%2e/%2e%2e/secret.key"),
        format!("{base}/notes/..%2F..%2F..%2Fsecret.key"),
        format!("{base}//etc/passwd"),
        format!("{base}/%2Fetc%2Fpasswd"),
        format!("{base}/a%00b"),
        format!("{base}/..%5C..%5Csecret.key"),
        format!("{base}/a%5Cb"),
        format!("{base}/a//b"),
        format!("{base}/./x"),
        format!("{base}/sp%20ace"),
        format!("{base}/{}", "a".repeat(513)),
    ] {
        let (status, body) = raw_request(&env, "GET", &target, &token, b"").await;
        assert_eq!(status, 400, "{target}: {body}");
        assert!(body.contains("invalid_path"), "{target}: {body}");
        assert!(!body.contains(&*env.data_dir().to_string_lossy()), "a path leaked: {body}");
        let (status, body) = raw_request(&env, "PUT", &target, &token, b"escaped").await;
        assert_eq!(status, 400, "PUT {target}: {body}");
    }
    // The raw `..` requests did not reach anything: the key is intact and nothing new exists.
    assert_eq!(std::fs::read(env.data_dir().join("secret.key")).expect("secret"), secret);
    for name in ["secret.key", "x", "b", "passwd"] {
        assert!(!env.app_dir(id).join(name).exists(), "{name} was written");
    }
    assert!(!env.data_dir().join("etc").exists());
    let listing = env.list(&format!("/api/storage/apps-list/{id}"), &token).await;
    assert_eq!(listing["entries"], json!([]), "nothing was written into the app either");

    // Move and list validate their paths too.
    let r = env.app.client.post(env.url(&format!("{base}/move"))).bearer_auth(&token);
    let r = r.json(&json!({ "from": "a.txt", "to": "../../escape.txt" })).send().await.expect("move");
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_path").await;
    let (status, _) = raw_request(&env, "GET", &format!("/api/storage/apps-list/{id}/%2e%2e"), &token, b"").await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn a_symlink_planted_in_app_storage_is_never_followed() {
    let env = Env::new().await;
    let (id, token) = env.create_app("links").await;
    let dir = env.app_dir(id);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let outside = env.data_dir().join("outside");
    std::fs::create_dir_all(&outside).expect("outside");
    std::fs::write(outside.join("secret.txt"), b"top secret").expect("secret");
    std::os::unix::fs::symlink(&outside, dir.join("linkdir")).expect("dir link");
    std::os::unix::fs::symlink(outside.join("secret.txt"), dir.join("linkfile")).expect("file link");
    std::fs::write(dir.join("ok.txt"), b"fine").expect("ok");
    let base = format!("/api/storage/apps/{id}");

    for path in ["linkdir/secret.txt", "linkfile"] {
        assert_error(env.get(&format!("{base}/{path}"), &token).await, StatusCode::BAD_REQUEST, "invalid_path").await;
        let r = env.put(&format!("{base}/{path}"), &token, "text/plain", "overwritten").await;
        assert_error(r, StatusCode::BAD_REQUEST, "invalid_path").await;
        assert_error(env.delete(&format!("{base}/{path}"), &token).await, StatusCode::BAD_REQUEST, "invalid_path")
            .await;
    }
    let r = env.put(&format!("{base}/linkdir/new.txt"), &token, "text/plain", "planted").await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_path").await;
    let r = env.get(&format!("/api/storage/apps-list/{id}/linkdir"), &token).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_path").await;
    let r = env.delete(&format!("{base}/folder/linkdir"), &token).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_path").await;
    for (from, to) in [("linkdir", "moved"), ("linkfile", "moved"), ("ok.txt", "linkdir/ok.txt")] {
        let r = env.app.client.post(env.url(&format!("{base}/move"))).bearer_auth(&token);
        let r = r.json(&json!({ "from": from, "to": to })).send().await.expect("move");
        assert_error(r, StatusCode::BAD_REQUEST, "invalid_path").await;
    }

    // Nothing outside was read, written, moved or deleted.
    assert_eq!(std::fs::read(outside.join("secret.txt")).expect("secret"), b"top secret");
    let names: Vec<_> = std::fs::read_dir(&outside).expect("ls").map(|e| e.expect("e").file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("secret.txt")]);
    assert!(dir.join("ok.txt").is_file() && !dir.join("moved").exists());
    // The listing shows the real file and hides the links.
    let listing = env.list(&format!("/api/storage/apps-list/{id}"), &token).await;
    let listed: Vec<&str> =
        listing["entries"].as_array().expect("entries").iter().map(|e| e["name"].as_str().expect("name")).collect();
    assert_eq!(listed, vec!["ok.txt"]);
}

#[tokio::test]
async fn the_quota_is_charged_by_size_difference_and_holds_under_concurrency() {
    let env = Arc::new(Env::with(|c| c.app_quota_bytes = 1000).await);
    let (id, token) = env.create_app("quota").await;
    let base = format!("/api/storage/apps/{id}");
    let put = |name: &str, size: usize| {
        let (env, token, url) = (env.clone(), token.clone(), format!("{base}/{name}"));
        async move { env.put(&url, &token, "application/octet-stream", vec![7u8; size]).await }
    };
    assert_eq!(put("a.bin", 600).await.status(), StatusCode::NO_CONTENT);
    assert_error(put("b.bin", 600).await, StatusCode::PAYLOAD_TOO_LARGE, "quota_exceeded").await;
    // Overwriting charges only the difference: 600 → 900 fits in 1000.
    assert_eq!(put("a.bin", 900).await.status(), StatusCode::NO_CONTENT);
    assert_eq!(put("b.bin", 100).await.status(), StatusCode::NO_CONTENT);
    assert_error(put("c.bin", 1).await, StatusCode::PAYLOAD_TOO_LARGE, "quota_exceeded").await;
    // Shrinking is always allowed, and deleting refunds.
    assert_eq!(put("a.bin", 500).await.status(), StatusCode::NO_CONTENT);
    assert_eq!(env.delete(&format!("{base}/b.bin"), &token).await.status(), StatusCode::NO_CONTENT);
    assert!(!env.app_dir(id).join("b.bin").exists());
    // 500 used: of twenty concurrent 50-byte writes exactly ten fit.
    let mut tasks = Vec::new();
    for i in 0..20 {
        let put = put(&format!("many/{i}.bin"), 50);
        tasks.push(tokio::spawn(put));
    }
    let mut stored = 0;
    for task in tasks {
        match task.await.expect("task").status() {
            StatusCode::NO_CONTENT => stored += 1,
            StatusCode::PAYLOAD_TOO_LARGE => {}
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(stored, 10);
    let on_disk: u64 = std::fs::read_dir(env.app_dir(id).join("many"))
        .expect("ls")
        .map(|e| e.expect("e").metadata().expect("m").len())
        .sum();
    assert_eq!(on_disk, 500);
    // A refused write leaves no staged file behind.
    let names: Vec<String> = std::fs::read_dir(env.app_dir(id))
        .expect("ls")
        .map(|e| e.expect("e").file_name().into_string().expect("utf8"))
        .collect();
    assert!(names.iter().all(|n| !n.starts_with(".~")), "{names:?}");
}

#[tokio::test]
async fn objects_over_fifty_mib_are_refused() {
    let env = Env::new().await;
    let (id, token) = env.create_app("huge").await;
    let path = format!("/api/storage/apps/{id}/huge.bin");
    let body = vec![1u8; 50 * 1024 * 1024 + 1];
    let r = env.put(&path, &token, "application/octet-stream", body).await;
    assert_error(r, StatusCode::PAYLOAD_TOO_LARGE, "file_too_large").await;
    assert_error(env.get(&path, &token).await, StatusCode::NOT_FOUND, "not_found").await;
    // Exactly 50 MiB is fine (the route's body limit is above the API default of 1 MiB).
    let r = env.put(&path, &token, "application/octet-stream", vec![2u8; 50 * 1024 * 1024]).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(std::fs::metadata(env.app_dir(id).join("huge.bin")).expect("stat").len(), 50 * 1024 * 1024);
}

#[tokio::test]
async fn apps_reach_each_others_storage_only_when_both_sides_allow_it() {
    let env = Env::new().await;
    let (a, token_a) = env.create_app("reader").await;
    let (b, token_b) = env.create_app("owner-of-data").await;
    let b_file = format!("/api/storage/apps/{b}/data.json");
    assert_eq!(env.put_json(&b_file, &token_b, &json!({ "secret": 1 })).await.status(), StatusCode::NO_CONTENT);
    let changed = json!({ "secret": "changed" });
    let write_as_a = || env.put_json(&b_file, &token_a, &changed);

    assert_error(env.get(&b_file, &token_a).await, StatusCode::FORBIDDEN, "forbidden").await;
    assert_error(env.get(&format!("/api/storage/apps-list/{b}"), &token_a).await, StatusCode::FORBIDDEN, "forbidden")
        .await;
    // One side alone is not enough.
    env.set_sharing(a, "read", "none").await;
    assert_error(env.get(&b_file, &token_a).await, StatusCode::FORBIDDEN, "forbidden").await;
    env.set_sharing(b, "none", "read").await;
    let r = env.get(&b_file, &token_a).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.expect("json"), json!({ "secret": 1 }));
    assert_eq!(env.get(&format!("/api/storage/apps-list/{b}"), &token_a).await.status(), StatusCode::OK);
    // Reading does not imply writing, moving or deleting.
    assert_error(write_as_a().await, StatusCode::FORBIDDEN, "forbidden").await;
    assert_error(env.delete(&b_file, &token_a).await, StatusCode::FORBIDDEN, "forbidden").await;
    let mv = env.app.client.post(env.url(&format!("/api/storage/apps/{b}/move"))).bearer_auth(&token_a);
    let mv = mv.json(&json!({ "from": "data.json", "to": "x.json" })).send().await.expect("move");
    assert_error(mv, StatusCode::FORBIDDEN, "forbidden").await;
    // Write on one side is capped by read on the other.
    env.set_sharing(b, "none", "write").await;
    assert_error(write_as_a().await, StatusCode::FORBIDDEN, "forbidden").await;
    env.set_sharing(a, "write", "none").await;
    assert_eq!(write_as_a().await.status(), StatusCode::NO_CONTENT);
    // Revocation is immediate; B never gained access to A.
    env.set_sharing(b, "none", "none").await;
    assert_error(env.get(&b_file, &token_a).await, StatusCode::FORBIDDEN, "forbidden").await;
    assert_error(env.get(&format!("/api/storage/apps/{a}/x.json"), &token_b).await, StatusCode::FORBIDDEN, "forbidden")
        .await;
    // The owner reaches every live app; nobody reaches a deleted or unknown one.
    assert_eq!(env.get(&b_file, &env.owner).await.status(), StatusCode::OK);
    env.soft_delete(b).await;
    assert_error(env.get(&b_file, &env.owner).await, StatusCode::NOT_FOUND, "app_not_found").await;
    assert_error(env.get("/api/storage/apps/9999/x.json", &env.owner).await, StatusCode::NOT_FOUND, "app_not_found")
        .await;
    assert_error(env.get("/api/storage/apps/abc/x.json", &env.owner).await, StatusCode::NOT_FOUND, "app_not_found")
        .await;
    assert_error(
        env.get(&format!("/api/storage/apps/{a}/x.json"), "").await,
        StatusCode::UNAUTHORIZED,
        "malformed_token",
    )
    .await;
}

#[tokio::test]
async fn app_tokens_are_refused_on_owner_only_routes_and_the_shared_tree_is_read_only_for_apps() {
    let env = Env::new().await;
    let (_, token) = env.app.register_app_with("shared-reader", r#"{"shared_memory":"read"}"#).await;
    assert_eq!(env.get("/api/chats", &token).await.status(), StatusCode::FORBIDDEN);
    let r = env.put("/api/storage/shared/theme.css", &token, "text/css", "body{}").await;
    assert_error(r, StatusCode::FORBIDDEN, "forbidden").await;

    let r = env.put("/api/storage/shared/theme.css", &env.owner, "text/css", ":root{--bg:#000}").await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let r = env.get("/api/storage/shared/theme.css", &token).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(content_type_of(&r), "text/css; charset=utf-8");
    assert_eq!(r.text().await.expect("text"), ":root{--bg:#000}");
    assert!(env.data_dir().join("shared/theme.css").is_file());
    let listing = env.list("/api/storage/shared-list", &token).await;
    assert_eq!(listing["entries"][0]["name"], "theme.css");
    assert_eq!(env.list("/api/storage/shared-list/", &token).await["entries"].as_array().expect("a").len(), 1);

    assert_error(env.delete("/api/storage/shared/theme.css", &token).await, StatusCode::FORBIDDEN, "forbidden").await;
    assert!(env.data_dir().join("shared/theme.css").is_file());
    assert_eq!(env.delete("/api/storage/shared/theme.css", &env.owner).await.status(), StatusCode::NO_CONTENT);
    assert!(!env.data_dir().join("shared/theme.css").exists());
}

#[tokio::test]
async fn an_app_reads_shared_files_only_when_its_manifest_asks_for_shared_memory() {
    let env = Env::new().await;
    let r = env.put("/api/storage/shared/memory/notes.md", &env.owner, "text/markdown", "private notes").await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let (_, plain) = env.create_app("plain").await;
    let (_, none) = env.app.register_app_with("opted-out", r#"{"shared_memory":"none"}"#).await;
    for token in [&plain, &none] {
        let r = env.get("/api/storage/shared/memory/notes.md", token).await;
        assert_error(r, StatusCode::FORBIDDEN, "forbidden").await;
        let r = env.get("/api/storage/shared-list/memory", token).await;
        assert_error(r, StatusCode::FORBIDDEN, "forbidden").await;
        assert_error(env.get("/api/storage/shared-list", token).await, StatusCode::FORBIDDEN, "forbidden").await;
    }
    let (_, reader) = env.app.register_app_with("memory-reader", r#"{"shared_memory":"write"}"#).await;
    let r = env.get("/api/storage/shared/memory/notes.md", &reader).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.text().await.expect("text"), "private notes");
    assert_eq!(env.get("/api/storage/shared/memory/notes.md", &env.owner).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn listings_page_by_name_under_a_prefix_and_inline_small_contents() {
    let env = Env::new().await;
    let (id, token) = env.create_app("lister").await;
    let base = format!("/api/storage/apps/{id}");
    for name in ["e.txt", "a.json", "c.bin", "b.txt", "d.json"] {
        let r = match name.rsplit_once('.').map(|(_, e)| e) {
            Some("json") => env.put_json(&format!("{base}/notes/{name}"), &token, &json!({ "name": name })).await,
            Some("txt") => {
                env.put(&format!("{base}/notes/{name}"), &token, "text/plain", format!("text of {name}")).await
            }
            _ => env.put(&format!("{base}/notes/{name}"), &token, "application/x-thing", vec![0u8, 1, 2]).await,
        };
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
    }
    assert_eq!(
        env.put(&format!("{base}/notes/sub/deep.txt"), &token, "text/plain", "deep").await.status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(env.put(&format!("{base}/top.txt"), &token, "text/plain", "top").await.status(), StatusCode::NO_CONTENT);

    // The root, with and without a trailing slash: non-recursive.
    for root in [format!("/api/storage/apps-list/{id}"), format!("/api/storage/apps-list/{id}/")] {
        let page = env.list(&root, &token).await;
        let names: Vec<_> = page["entries"].as_array().expect("a").iter().map(|e| e["name"].clone()).collect();
        assert_eq!(names, vec![json!("notes"), json!("top.txt")], "{root}");
        assert_eq!(page["entries"][0]["type"], "dir");
        assert_eq!(page["next_cursor"], Value::Null);
    }

    // Paging through `notes` two at a time, in name order.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut url = format!("/api/storage/apps-list/{id}/notes?limit=2");
        if let Some(c) = &cursor {
            url.push_str(&format!("&cursor={c}"));
        }
        let page = env.list(&url, &token).await;
        pages += 1;
        let entries = page["entries"].as_array().expect("entries");
        assert!(entries.len() <= 2);
        for e in entries {
            seen.push(e["path"].as_str().expect("path").to_owned());
            assert!(e.get("content").is_none(), "content only when asked for");
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, ["notes/a.json", "notes/b.txt", "notes/c.bin", "notes/d.json", "notes/e.txt", "notes/sub"]);

    let page = env.list(&format!("/api/storage/apps-list/{id}/notes?include_content=1"), &token).await;
    let entries = page["entries"].as_array().expect("entries");
    let by_name = |n: &str| entries.iter().find(|e| e["name"] == n).expect(n).clone();
    let a = by_name("a.json");
    assert_eq!(a["content"], json!({ "name": "a.json" }));
    assert_eq!(a["type"], "file");
    assert_eq!(a["mime_type"], "application/json");
    assert!(a["modified_at"].as_i64().expect("ms") > 1_600_000_000_000);
    assert_strong(a["etag"].as_str().expect("etag"));
    assert_eq!(by_name("b.txt")["content"], "text of b.txt");
    let c = by_name("c.bin");
    assert!(c.get("content").is_none(), "binary is never inlined: {c}");
    assert_eq!(c["mime_type"], "application/x-thing");
    assert_eq!(c["size"], 3);
    assert!(by_name("sub").get("content").is_none());

    // A missing folder is empty; a bad cursor or limit is refused.
    assert_eq!(env.list(&format!("/api/storage/apps-list/{id}/nothing/here"), &token).await["entries"], json!([]));
    let r = env.get(&format!("/api/storage/apps-list/{id}/notes?cursor=%%%"), &token).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_cursor").await;
    let r = env.get(&format!("/api/storage/apps-list/{id}/notes?limit=0"), &token).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_limit").await;
    let page = env.list(&format!("/api/storage/apps-list/{id}/notes?limit=100000"), &token).await;
    assert_eq!(page["entries"].as_array().expect("a").len(), 6, "an oversized limit is capped, not refused");
}

#[tokio::test]
async fn move_renames_without_overwriting_and_folder_delete_removes_everything_below() {
    let env = Env::new().await;
    let (id, token) = env.create_app("mover").await;
    let base = format!("/api/storage/apps/{id}");
    let post_move = |from: &str, to: &str| {
        let req = env.app.client.post(env.url(&format!("{base}/move"))).bearer_auth(&token);
        let req = req.json(&json!({ "from": from, "to": to }));
        async move { req.send().await.expect("move") }
    };
    let tag = etag_of(&env.put_json(&format!("{base}/drafts/one.json"), &token, &json!(1)).await);
    env.put_json(&format!("{base}/drafts/two.json"), &token, &json!(2)).await;
    env.put_json(&format!("{base}/final.json"), &token, &json!("final")).await;

    assert_eq!(post_move("drafts/one.json", "archive/2024/one.json").await.status(), StatusCode::NO_CONTENT);
    let moved = env.get(&format!("{base}/archive/2024/one.json"), &token).await;
    assert_eq!(etag_of(&moved), tag, "a move keeps the version");
    assert_eq!(moved.json::<Value>().await.expect("json"), json!(1));
    assert_error(env.get(&format!("{base}/drafts/one.json"), &token).await, StatusCode::NOT_FOUND, "not_found").await;

    assert_error(post_move("drafts/two.json", "final.json").await, StatusCode::CONFLICT, "destination_exists").await;
    assert_eq!(env.get(&format!("{base}/final.json"), &token).await.json::<Value>().await.expect("j"), json!("final"));
    assert_error(post_move("nope.json", "x.json").await, StatusCode::NOT_FOUND, "not_found").await;
    assert_error(post_move("archive", "archive/inner").await, StatusCode::BAD_REQUEST, "invalid_move").await;
    // Folders move too.
    assert_eq!(post_move("drafts", "old-drafts").await.status(), StatusCode::NO_CONTENT);
    assert_eq!(env.get(&format!("{base}/old-drafts/two.json"), &token).await.status(), StatusCode::OK);

    // A plain DELETE refuses folders; the folder route removes them whole.
    assert_error(env.delete(&format!("{base}/archive"), &token).await, StatusCode::BAD_REQUEST, "is_a_directory").await;
    assert_eq!(env.delete(&format!("{base}/folder/archive"), &token).await.status(), StatusCode::NO_CONTENT);
    assert!(!env.app_dir(id).join("archive").exists());
    assert_error(env.get(&format!("{base}/archive/2024/one.json"), &token).await, StatusCode::NOT_FOUND, "not_found")
        .await;
    assert_error(env.delete(&format!("{base}/folder/archive"), &token).await, StatusCode::NOT_FOUND, "not_found").await;
    assert_eq!(env.delete(&format!("{base}/final.json"), &token).await.status(), StatusCode::NO_CONTENT);
    assert_error(env.delete(&format!("{base}/final.json"), &token).await, StatusCode::NOT_FOUND, "not_found").await;

    // Files may be named like the fixed routes.
    assert_eq!(
        env.put_json(&format!("{base}/move"), &token, &json!({ "content": "a file named move" })).await.status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(env.get(&format!("{base}/move"), &token).await.text().await.expect("t"), "a file named move");
    assert_eq!(
        env.put(&format!("{base}/folder/x.txt"), &token, "text/plain", "in folder").await.status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(env.get(&format!("{base}/folder/x.txt"), &token).await.text().await.expect("t"), "in folder");
}

#[tokio::test]
async fn seeds_are_written_once_and_never_overwrite_existing_data() {
    let env = Env::new().await;
    let (id, token) = env.create_app("seeded").await;
    let source = env.data_dir().join("seed-source");
    std::fs::create_dir_all(source.join("data")).expect("mkdir");
    std::fs::write(source.join("data/welcome.md"), "# Welcome").expect("write");
    let seeds = json!({
        "state.json": { "count": 0 },
        "docs/welcome.md": "data/welcome.md",
        "kept.json": { "from": "seed" },
    });
    let seeds = seeds.as_object().expect("object").clone();
    let base = format!("/api/storage/apps/{id}");
    env.put_json(&format!("{base}/kept.json"), &token, &json!({ "from": "user" })).await;
    // Seeding outside a running apply, with a store of its own (the server's is internal).
    let store = mobius::storage::Store::new(mobius::config::DEFAULT_APP_QUOTA_BYTES);

    mobius::storage::write_seeds(store.clone(), env.app.data_dir(), id, &source, &seeds).await.expect("seed");
    assert_eq!(
        env.get(&format!("{base}/state.json"), &token).await.json::<Value>().await.expect("j"),
        json!({ "count": 0 })
    );
    let md = env.get(&format!("{base}/docs/welcome.md"), &token).await;
    assert!(content_type_of(&md).starts_with("text/markdown"));
    assert_eq!(md.text().await.expect("t"), "# Welcome");
    assert_eq!(
        env.get(&format!("{base}/kept.json"), &token).await.json::<Value>().await.expect("j"),
        json!({ "from": "user" })
    );

    // Seeding again (an update) leaves the app's changes alone.
    env.put_json(&format!("{base}/state.json"), &token, &json!({ "count": 5 })).await;
    mobius::storage::write_seeds(store.clone(), env.app.data_dir(), id, &source, &seeds).await.expect("seed again");
    assert_eq!(
        env.get(&format!("{base}/state.json"), &token).await.json::<Value>().await.expect("j"),
        json!({ "count": 5 })
    );

    // Bad seeds are refused before anything is written.
    std::os::unix::fs::symlink(env.data_dir().join("secret.key"), source.join("leak")).expect("symlink");
    for bad in [
        json!({ "fresh.json": 1, "../escape.json": 1 }),
        json!({ "fresh.json": 1, "leak.txt": "leak" }),
        json!({ "fresh.json": 1, "x.txt": "../secret.key" }),
        json!({ "fresh.json": 1, "x.txt": "missing.txt" }),
        json!({ "fresh.json": 1, "big.json": { "blob": "x".repeat(4 * 1024 * 1024 + 1) } }),
    ] {
        let err =
            mobius::storage::write_seeds(store.clone(), env.app.data_dir(), id, &source, bad.as_object().expect("o"))
                .await
                .expect_err("refused");
        assert_eq!(err.code(), "invalid_seed", "{bad:.80}");
        assert!(!err.to_string().contains(&*env.data_dir().to_string_lossy()), "{err}");
    }
    assert!(!env.app_dir(id).join("fresh.json").exists());
    assert!(!env.app_dir(id).join("leak.txt").exists());
    let too_many: serde_json::Map<String, Value> = (0..65).map(|i| (format!("s{i}.json"), json!(i))).collect();
    let err = mobius::storage::write_seeds(store.clone(), env.app.data_dir(), id, &source, &too_many)
        .await
        .expect_err("too many");
    assert_eq!(err.code(), "invalid_seed");
}

/// Commits `files` on top of `parent` in `repo` (no branch moves): the new commit's id.
fn commit(repo: &git2::Repository, parent: Option<git2::Oid>, files: &[(&str, &[u8])]) -> git2::Oid {
    let mut index = git2::Index::new().expect("index");
    for (path, bytes) in files {
        let blob = repo.blob(bytes).expect("blob");
        let entry = git2::IndexEntry {
            ctime: git2::IndexTime::new(0, 0),
            mtime: git2::IndexTime::new(0, 0),
            dev: 0,
            ino: 0,
            mode: 0o100644,
            uid: 0,
            gid: 0,
            file_size: 0,
            id: blob,
            flags: 0,
            flags_extended: 0,
            path: path.as_bytes().to_vec(),
        };
        index.add(&entry).expect("add");
    }
    let tree = repo.find_tree(index.write_tree_to(repo).expect("tree")).expect("tree");
    let sig = git2::Signature::now("t", "t@localhost").expect("sig");
    let parents: Vec<git2::Commit<'_>> = parent.map(|p| repo.find_commit(p).expect("parent")).into_iter().collect();
    let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
    repo.commit(None, &sig, &sig, "c", &tree, &parents).expect("commit")
}

#[tokio::test]
async fn shared_git_serves_a_file_of_a_commit_on_main_to_those_who_may_read_the_app() {
    let env = Env::new().await;
    let (id, token) = env.create_app("notes").await;
    let (reader_id, reader) = env.create_app("reader").await;
    let repo = git2::Repository::init(env.data_dir().join("app-repos/notes")).expect("repo");
    let first = commit(&repo, None, &[("data/a.txt", b"first"), ("index.jsx", b"x")]);
    let second = commit(&repo, Some(first), &[("data/a.txt", b"second")]);
    let elsewhere = commit(&repo, Some(second), &[("data/a.txt", b"not on main")]);
    repo.reference("refs/heads/main", second, true, "main").expect("main");
    let get = |who: &str, query: String| {
        env.app.client.get(env.url(&format!("/api/storage/shared-git/{query}"))).bearer_auth(who.to_owned()).send()
    };

    // The app itself, by slug or id; pinned to a commit (immutable) or main's tip (revalidated).
    let r = get(&token, format!("notes?revision={first}&file=data/a.txt")).await.expect("get");
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.headers()["cache-control"].to_str().expect("cc").contains("immutable"));
    assert_eq!(r.headers()["x-mobius-revision"], first.to_string().as_str());
    assert_eq!(r.bytes().await.expect("body").as_ref(), b"first");
    let r = get(&env.owner, format!("{id}?file=data/a.txt")).await.expect("get");
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["cache-control"], "no-cache");
    assert_eq!(r.headers()["x-mobius-revision"], second.to_string().as_str());
    assert_eq!(r.bytes().await.expect("body").as_ref(), b"second");

    // Not on main, not there, not a file, bad input.
    for (query, status, code) in [
        (format!("notes?revision={elsewhere}&file=data/a.txt"), StatusCode::NOT_FOUND, "not_found"),
        (format!("notes?revision={second}&file=data/missing.txt"), StatusCode::NOT_FOUND, "not_found"),
        (format!("notes?revision={second}&file=data"), StatusCode::NOT_FOUND, "not_found"),
        ("nobody?file=a".to_owned(), StatusCode::NOT_FOUND, "repo_not_found"),
        ("notes?file=../secret.key".to_owned(), StatusCode::BAD_REQUEST, "invalid_request"),
        ("notes?file=/etc/passwd".to_owned(), StatusCode::BAD_REQUEST, "invalid_request"),
        ("notes?revision=main&file=a".to_owned(), StatusCode::BAD_REQUEST, "invalid_request"),
        ("notes".to_owned(), StatusCode::BAD_REQUEST, "invalid_request"),
    ] {
        assert_error(get(&token, query.clone()).await.expect("get"), status, code).await;
    }

    // Another app reads it only when both sides allow it.
    let q = || format!("notes?revision={second}&file=data/a.txt");
    assert_error(get(&reader, q()).await.expect("get"), StatusCode::FORBIDDEN, "forbidden").await;
    env.set_sharing(reader_id, "read", "none").await;
    assert_error(get(&reader, q()).await.expect("get"), StatusCode::FORBIDDEN, "forbidden").await;
    env.set_sharing(id, "none", "read").await;
    assert_eq!(get(&reader, q()).await.expect("get").status(), StatusCode::OK);
}
