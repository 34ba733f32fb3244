//! Web Push end to end: a push service stand-in (a local HTTP endpoint) checks each request's
//! VAPID token and headers and decrypts the payload with the device's private key, so the
//! tests assert the exact JSON a phone would get. Turns run on fake CLIs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode as AxumStatus};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::chats::{asking_claude, fake_claude};
use crate::helpers::{TestApp, assert_error, eventually};
use mobius::locks::Unpoisoned;

/// One push as the stand-in received it: checked headers and the decrypted JSON.
#[derive(Debug)]
struct Delivered {
    device: String,
    headers: HeaderMap,
    payload: Value,
}

/// A phone's push subscription: its key pair and auth secret.
struct Device {
    name: String,
    secret: p256::SecretKey,
    auth: [u8; 16],
}

impl Device {
    fn new(name: &str) -> Self {
        let secret = p256::SecretKey::random(&mut rand::rngs::OsRng);
        let mut auth = [0u8; 16];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut auth);
        Self { name: name.into(), secret, auth }
    }

    fn public(&self) -> Vec<u8> {
        use p256::elliptic_curve::sec1::ToEncodedPoint;
        self.secret.public_key().to_encoded_point(false).as_bytes().to_vec()
    }

    /// `PushSubscription.toJSON()` for the stand-in at `base`.
    fn subscription(&self, base: &str) -> Value {
        json!({
            "endpoint": format!("{base}/push/{}", self.name),
            "keys": { "p256dh": URL_SAFE_NO_PAD.encode(self.public()), "auth": URL_SAFE_NO_PAD.encode(self.auth) },
            "label": format!("{} · test", self.name),
        })
    }

    /// RFC 8291 decryption, written independently of the server's code (p256 ECDH).
    fn decrypt(&self, body: &[u8]) -> Vec<u8> {
        use ring::aead::{AES_128_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
        let (salt, rest) = body.split_at(16);
        let rs = u32::from_be_bytes(rest[..4].try_into().expect("rs"));
        assert_eq!(rs, 4096, "record size");
        let idlen = usize::from(rest[4]);
        assert_eq!(idlen, 65, "the key id is the sender's public key");
        let as_public = &rest[5..5 + idlen];
        let record = &rest[5 + idlen..];
        let peer = p256::PublicKey::from_sec1_bytes(as_public).expect("sender key");
        let shared = p256::ecdh::diffie_hellman(self.secret.to_nonzero_scalar(), peer.as_affine());
        let mut info = b"WebPush: info\0".to_vec();
        info.extend_from_slice(&self.public());
        info.extend_from_slice(as_public);
        let ikm: [u8; 32] = hkdf(&self.auth, shared.raw_secret_bytes(), &info);
        let cek: [u8; 16] = hkdf(salt, &ikm, b"Content-Encoding: aes128gcm\0");
        let nonce: [u8; 12] = hkdf(salt, &ikm, b"Content-Encoding: nonce\0");
        let key = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &cek).expect("key"));
        let mut record = record.to_vec();
        let plain = key
            .open_in_place(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut record)
            .expect("the payload decrypts with the device's key");
        let end = plain.iter().rposition(|b| *b != 0).expect("delimiter");
        assert_eq!(plain[end], 2, "a single, final record");
        plain[..end].to_vec()
    }
}

fn hkdf<const N: usize>(salt: &[u8], ikm: &[u8], info: &[u8]) -> [u8; N] {
    struct Len(usize);
    impl ring::hkdf::KeyType for Len {
        fn len(&self) -> usize {
            self.0
        }
    }
    let mut out = [0u8; N];
    let infos = [info];
    ring::hkdf::Salt::new(ring::hkdf::HKDF_SHA256, salt)
        .extract(ikm)
        .expand(&infos, Len(N))
        .expect("expand")
        .fill(&mut out)
        .expect("fill");
    out
}

struct StandIn {
    devices: HashMap<String, Device>,
    /// Status each device's endpoint answers (201 unless set).
    status: HashMap<String, u16>,
    /// The server's VAPID public key, which every token must be signed with.
    vapid_key: String,
    base: String,
    tx: mpsc::UnboundedSender<Delivered>,
}

/// A local push service.
struct PushService {
    base: String,
    state: Arc<Mutex<StandIn>>,
    rx: mpsc::UnboundedReceiver<Delivered>,
    /// Pushes received per device, whatever was answered.
    hits: Arc<Mutex<HashMap<String, usize>>>,
}

impl PushService {
    async fn start(vapid_key: &str) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let (tx, rx) = mpsc::unbounded_channel();
        let state = Arc::new(Mutex::new(StandIn {
            devices: HashMap::new(),
            status: HashMap::new(),
            vapid_key: vapid_key.to_owned(),
            base: base.clone(),
            tx,
        }));
        let hits = Arc::new(Mutex::new(HashMap::new()));
        let router = axum::Router::new()
            .route("/push/{device}", axum::routing::post(receive))
            .with_state((state.clone(), hits.clone()));
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self { base, state, rx, hits }
    }

    fn add(&self, device: Device) -> Value {
        let sub = device.subscription(&self.base);
        self.state.locked().devices.insert(device.name.clone(), device);
        sub
    }

    fn answer(&self, device: &str, status: u16) {
        self.state.locked().status.insert(device.into(), status);
    }

    fn hits(&self, device: &str) -> usize {
        self.hits.locked().get(device).copied().unwrap_or(0)
    }

    async fn next(&mut self) -> Delivered {
        tokio::time::timeout(Duration::from_secs(20), self.rx.recv()).await.expect("a push in time").expect("push")
    }
}

type Shared = (Arc<Mutex<StandIn>>, Arc<Mutex<HashMap<String, usize>>>);

async fn receive(
    State((state, hits)): State<Shared>,
    UrlPath(device): UrlPath<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> AxumStatus {
    *hits.locked().entry(device.clone()).or_default() += 1;
    let state = state.locked();
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    // RFC 8292: `vapid t=<JWT>, k=<public key>`, signed ES256 by the server's key.
    let auth = header("authorization");
    let (t, k) = auth.strip_prefix("vapid t=").and_then(|r| r.split_once(", k=")).expect("vapid authorization");
    assert_eq!(k, state.vapid_key, "the token names the server's VAPID key");
    let (signed, signature) = t.rsplit_once('.').expect("jwt");
    let key = ring::signature::UnparsedPublicKey::new(
        &ring::signature::ECDSA_P256_SHA256_FIXED,
        URL_SAFE_NO_PAD.decode(k).expect("key"),
    );
    key.verify(signed.as_bytes(), &URL_SAFE_NO_PAD.decode(signature).expect("sig")).expect("the JWT verifies");
    let (head, claims) = signed.split_once('.').expect("jwt parts");
    let head: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(head).expect("b64")).expect("json");
    assert_eq!(head["alg"], "ES256");
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).expect("b64")).expect("json");
    assert_eq!(claims["aud"], state.base, "audience is the push service's origin");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs() as i64;
    let exp = claims["exp"].as_i64().expect("exp");
    assert!(exp > now && exp <= now + 24 * 3600, "exp within 24 h: {exp}");
    assert!(claims["sub"].as_str().expect("sub").starts_with("mailto:"), "{claims}");
    assert_eq!(header("content-encoding"), "aes128gcm");
    assert!(header("ttl").parse::<u32>().is_ok(), "TTL is seconds");
    assert!(["very-low", "low", "normal", "high"].contains(&header("urgency").as_str()));
    let status = state.status.get(&device).copied().unwrap_or(201);
    if status < 300 {
        let dev = state.devices.get(&device).expect("a known device");
        let payload = serde_json::from_slice(&dev.decrypt(&body)).expect("JSON payload");
        let _ = state.tx.send(Delivered { device, headers, payload });
    }
    AxumStatus::from_u16(status).expect("status")
}

async fn app_with(bin: Option<&dyn Fn(&Path) -> PathBuf>) -> (TestApp, String, PushService) {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let bin = bin.map(|b| b(dir.path()));
    let app = TestApp::spawn_in(dir, |c| {
        c.push_allow_loopback = true;
        if let Some(bin) = bin {
            c.claude_bin = bin;
        }
        c.agent_start_timeout = Duration::from_secs(5);
    })
    .await;
    let token = app.setup_owner().await;
    let key: Value = app.get("/api/push/vapid-key", None).await.json().await.expect("json");
    let service = PushService::start(key["publicKey"].as_str().expect("key")).await;
    (app, token, service)
}

async fn subscribe(app: &TestApp, token: &str, sub: Value) {
    let r = app.post("/api/push/subscribe", sub, Some(token)).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    assert_eq!(r.json::<Value>().await.expect("json"), json!({ "status": "subscribed" }));
}

async fn presence(app: &TestApp, token: &str, chat: Option<&str>) {
    let r = app
        .client
        .put(app.url("/api/push/presence"))
        .bearer_auth(token)
        .json(&json!({ "device": "phone-1", "chat_id": chat }))
        .send()
        .await
        .expect("presence");
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
}

async fn newest(app: &TestApp, token: &str) -> Value {
    let list: Value = app.get("/api/notifications?limit=1", Some(token)).await.json().await.expect("json");
    list[0].clone()
}

#[tokio::test]
async fn a_test_push_reaches_the_device_as_exact_json_and_bad_subscriptions_are_refused() {
    let (app, token, mut service) = app_with(None).await;
    let key: Value = app.get("/api/push/vapid-key", None).await.json().await.expect("json");
    assert_eq!(URL_SAFE_NO_PAD.decode(key["publicKey"].as_str().expect("key")).expect("b64").len(), 65);
    let key_file = app.data_dir().join("push/vapid.pem");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&key_file).expect("key file").permissions());
    assert_eq!(mode & 0o777, 0o600);

    // Bad input loses nothing and says why.
    let mut bad = Device::new("bad").subscription(&service.base);
    bad["keys"]["p256dh"] = json!("AAAA");
    assert_error(
        app.post("/api/push/subscribe", bad, Some(&token)).await,
        StatusCode::BAD_REQUEST,
        "invalid_subscription",
    )
    .await;
    let mut ftp = Device::new("ftp").subscription(&service.base);
    ftp["endpoint"] = json!("ftp://push.example/x");
    assert_error(
        app.post("/api/push/subscribe", ftp, Some(&token)).await,
        StatusCode::BAD_REQUEST,
        "invalid_subscription",
    )
    .await;
    assert_error(
        app.post("/api/push/subscribe", Device::new("anon").subscription(&service.base), None).await,
        StatusCode::UNAUTHORIZED,
        "missing_token",
    )
    .await;

    let sub = service.add(Device::new("phone"));
    subscribe(&app, &token, sub.clone()).await;
    subscribe(&app, &token, sub.clone()).await; // an upsert, not a second device
    let devices: Value = app.get("/api/push/devices", Some(&token)).await.json().await.expect("json");
    assert_eq!(devices.as_array().expect("list").len(), 1);
    assert_eq!(devices[0]["label"], "phone · test");

    assert_eq!(app.post("/api/push/test", json!({}), Some(&token)).await.status(), StatusCode::ACCEPTED);
    let push = service.next().await;
    assert_eq!(push.device, "phone");
    let id = newest(&app, &token).await["id"].clone();
    assert_eq!(
        push.payload,
        json!({
            "id": id, "title": "Notifications work",
            "body": "This device will tell you when the agent finishes or needs you.",
            "icon": null, "target": null, "actions": [], "kind": "test", "tag": null,
        })
    );
    assert_eq!(push.headers["urgency"], "normal");
    assert!(push.headers.get("topic").is_none(), "no topic: nothing to replace");

    let r = app
        .client
        .delete(app.url("/api/push/subscribe"))
        .bearer_auth(&token)
        .json(&json!({ "endpoint": sub["endpoint"] }))
        .send()
        .await
        .expect("delete");
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let devices: Value = app.get("/api/push/devices", Some(&token)).await.json().await.expect("json");
    assert_eq!(devices, json!([]));
}

#[tokio::test]
async fn a_gone_device_is_removed_and_a_failing_one_backs_off() {
    let (app, token, mut service) = app_with(None).await;
    for name in ["good", "gone", "flaky"] {
        subscribe(&app, &token, service.add(Device::new(name))).await;
    }
    service.answer("gone", 410);
    service.answer("flaky", 500);
    for round in 1..=2 {
        assert_eq!(app.post("/api/push/test", json!({}), Some(&token)).await.status(), StatusCode::ACCEPTED);
        assert_eq!(service.next().await.device, "good", "round {round}");
    }
    // The worker handles notices in order: after the second push to `good`, the first round's
    // outcomes are recorded.
    let devices: Value = app.get("/api/push/devices", Some(&token)).await.json().await.expect("json");
    let names: Vec<&str> =
        devices.as_array().expect("list").iter().map(|d| d["label"].as_str().expect("label")).collect();
    assert_eq!(names, ["good · test", "flaky · test"], "410 removed the device");
    assert_eq!(service.hits("gone"), 1);
    assert_eq!(service.hits("flaky"), 1, "the failing device is skipped while it backs off");
}

#[tokio::test]
async fn a_sender_that_dies_or_answers_nonsense_costs_a_push_but_nothing_else() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let liar = dir.path().join("liar.sh");
    // Reads the setup and the job, then answers for no device at all.
    std::fs::write(&liar, "#!/bin/sh\nread setup\nread job\necho '{\"outcomes\": []}'\nsleep 30\n").expect("script");
    std::fs::set_permissions(&liar, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    for sender in [PathBuf::from("/bin/false"), liar, dir.path().join("missing")] {
        let sub_dir = Arc::new(tempfile::tempdir().expect("tmp"));
        let chosen = sender.clone();
        let app = TestApp::spawn_in(sub_dir, move |c| {
            c.push_allow_loopback = true;
            c.self_exe = chosen;
        })
        .await;
        let token = app.setup_owner().await;
        let key: Value = app.get("/api/push/vapid-key", None).await.json().await.expect("json");
        let service = PushService::start(key["publicKey"].as_str().expect("key")).await;
        subscribe(&app, &token, service.add(Device::new("phone"))).await;
        assert_eq!(app.post("/api/push/test", json!({}), Some(&token)).await.status(), StatusCode::ACCEPTED);
        // The notice is stored before anything is sent; the worker then carries on.
        let stored = eventually("the test notification is stored", || async {
            Some(newest(&app, &token).await).filter(|n| n["kind"] == "test")
        })
        .await;
        assert_eq!(stored["title"], "Notifications work", "{}", sender.display());
        let devices: Value = app.get("/api/push/devices", Some(&token)).await.json().await.expect("json");
        assert_eq!(devices.as_array().map(Vec::len), Some(1), "a failed send removes no device");
        assert_eq!(service.hits("phone"), 0);
        // Not stuck on the broken sender: the next notice is handled at once.
        assert_eq!(app.post("/api/push/test", json!({}), Some(&token)).await.status(), StatusCode::ACCEPTED);
        eventually("the next notification is stored", || async {
            let list: Value = app.get("/api/notifications?limit=10", Some(&token)).await.json().await.expect("json");
            (list.as_array().map(Vec::len) == Some(2)).then_some(())
        })
        .await;
    }
}

#[tokio::test]
async fn a_done_push_waits_for_nobody_watching_and_names_the_chat() {
    let claude = |d: &Path| fake_claude(d, "0", 1);
    let (app, token, mut service) = app_with(Some(&claude)).await;
    app.connect_claude(&token).await;
    subscribe(&app, &token, service.add(Device::new("phone"))).await;
    let r = app.post("/api/chats", json!({ "id": "c1", "title": "Garden planner" }), Some(&token)).await;
    assert!(r.status().is_success());

    // Watched: the notification is stored (already read) and not pushed.
    presence(&app, &token, Some("c1")).await;
    app.send(&token, "c1", "hello", "m1").await;
    let stored = eventually("the turn's notification is stored", || async {
        Some(newest(&app, &token).await).filter(|n| n["kind"] == "turn_done")
    })
    .await;
    assert!(stored["read_at"].is_string(), "seen while it happened: {stored}");
    // The worker handles notices in order: a later test push arrives first only if the
    // watched turn pushed nothing.
    assert_eq!(app.post("/api/push/test", json!({}), Some(&token)).await.status(), StatusCode::ACCEPTED);
    assert_eq!(service.next().await.payload["kind"], "test");

    // Hidden (the page reported no visible chat): pushed.
    presence(&app, &token, None).await;
    wait_idle(&app, &token, "c1").await;
    app.send(&token, "c1", "again", "m2").await;
    let push = service.next().await;
    let id = newest(&app, &token).await["id"].clone();
    assert_eq!(
        push.payload,
        json!({
            "id": id, "title": "Garden planner", "body": "reply for c1", "icon": null,
            "target": "/shell/?chat=c1", "actions": [], "kind": "turn_done", "tag": "chat:c1",
        })
    );
    assert_eq!(push.headers["ttl"], "86400");
    assert!(!push.headers["topic"].is_empty(), "a topic per chat");
    let unread: Value = app.get("/api/notifications/unread-count", Some(&token)).await.json().await.expect("json");
    assert_eq!(unread, json!({ "count": 2, "decisions": 0 }), "the test and the hidden turn; not the watched one");
}

async fn wait_idle(app: &TestApp, token: &str, chat: &str) {
    eventually("the turn ends", || async { (app.detail(token, chat).await["running"] == false).then_some(()) }).await
}

#[tokio::test]
async fn a_question_push_answers_from_its_button_once_and_only_its_question() {
    let questions = r#"{"questions":[{"question":"Which color?","header":"Color","multiSelect":false,"options":[{"label":"Blue","description":""},{"label":"Red","description":""}]}]}"#;
    let claude = move |d: &Path| asking_claude(d, "AskUserQuestion", questions);
    let (app, token, mut service) = app_with(Some(&claude)).await;
    app.connect_claude(&token).await;
    subscribe(&app, &token, service.add(Device::new("phone"))).await;
    app.chat(&token, "ask").await;
    presence(&app, &token, Some("ask")).await; // questions push even while watched
    app.send(&token, "ask", "pick a color", "m1").await;
    let push = service.next().await;
    let qid = app.detail(&token, "ask").await["pending_question_id"].as_str().expect("pending").to_owned();
    let token_value = push.payload["action_token"].as_str().expect("an action token").to_owned();
    let id = newest(&app, &token).await["id"].clone();
    assert_eq!(
        push.payload,
        json!({
            "id": id, "title": "pick a color", "body": "Which color?", "icon": null,
            "target": format!("/shell/?chat=ask&question={qid}"),
            "actions": [{ "action": "option-0", "title": "Blue" }, { "action": "option-1", "title": "Red" }],
            "kind": "question", "tag": "chat:ask", "chat_id": "ask", "question_id": qid, "action_token": token_value,
        })
    );
    assert_eq!(push.headers["urgency"], "high");
    let unread: Value = app.get("/api/notifications/unread-count", Some(&token)).await.json().await.expect("json");
    assert_eq!(unread["decisions"], 1);

    let act = |q: &str, action: &str, t: &str| {
        app.post("/api/push/action", json!({ "token": t, "question_id": q, "action": action }), None)
    };
    assert_error(act("q-other", "option-1", &token_value).await, StatusCode::UNAUTHORIZED, "invalid_action_token")
        .await;
    assert_error(act(&qid, "option-1", "forged").await, StatusCode::UNAUTHORIZED, "invalid_action_token").await;
    assert_error(act(&qid, "option-9", &token_value).await, StatusCode::BAD_REQUEST, "invalid_action").await;
    // The owner token is not an action token.
    assert_error(act(&qid, "option-1", &token).await, StatusCode::UNAUTHORIZED, "invalid_action_token").await;
    assert_eq!(app.detail(&token, "ask").await["pending_question_id"], qid, "nothing changed");

    let ok = act(&qid, "option-1", &token_value).await;
    assert_eq!(ok.status(), StatusCode::ACCEPTED);
    assert_error(act(&qid, "option-0", &token_value).await, StatusCode::GONE, "action_token_used").await;
    wait_idle(&app, &token, "ask").await;
    let reply = app.detail(&token, "ask").await["messages"][1].to_string();
    assert!(reply.contains("'Which color?':'Red'"), "the CLI got the button's answer: {reply}");
    // Answered: its notification no longer waits in the centre as unread.
    let list: Value = app.get("/api/notifications?limit=10", Some(&token)).await.json().await.expect("json");
    let question =
        list.as_array().expect("list").iter().find(|n| n["kind"] == "question").expect("the question").clone();
    assert!(!question["read_at"].is_null(), "the answered question's notification is read: {question}");
    let unread: Value = app.get("/api/notifications/unread-count", Some(&token)).await.json().await.expect("json");
    assert_eq!((unread["count"].as_i64(), unread["decisions"].as_i64()), (Some(0), Some(0)));
}

#[tokio::test]
async fn apps_send_attributed_notifications_within_their_rate_and_the_centre_keeps_them() {
    let (app, token, mut service) = app_with(None).await;
    subscribe(&app, &token, service.add(Device::new("phone"))).await;
    let (app_id, app_token) = app.register_app("notes").await;
    let send = |body: Value| app.post("/api/notifications/send", body, Some(&app_token));
    // An app cannot pass itself off as something else.
    let r = send(json!({ "title": "Saved", "body": "3 notes", "source_type": "agent", "source_id": "c1" })).await;
    assert_eq!(r.status(), StatusCode::OK);
    let id = r.json::<Value>().await.expect("json")["id"].clone();
    let listed = newest(&app, &token).await;
    assert_eq!((listed["id"].clone(), listed["source_type"].clone()), (id.clone(), json!("app")));
    assert_eq!(listed["source_id"], app_id.to_string());
    let push = service.next().await;
    assert_eq!(
        push.payload,
        json!({
            "id": id, "title": "Saved", "body": "3 notes", "icon": null, "target": format!("/shell/?app={app_id}"),
            "actions": [], "kind": "app", "tag": format!("app:{app_id}"),
        })
    );
    assert_error(
        send(json!({ "title": "x", "target": "https://evil.example/" })).await,
        StatusCode::BAD_REQUEST,
        "invalid_target",
    )
    .await;
    assert_error(send(json!({ "body": "no title" })).await, StatusCode::BAD_REQUEST, "invalid_request").await;
    for i in 1..10 {
        assert_eq!(send(json!({ "title": format!("n{i}") })).await.status(), StatusCode::OK, "send {i}");
    }
    assert_error(send(json!({ "title": "one too many" })).await, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;
    // Only the owner reads the centre.
    assert_eq!(app.get("/api/notifications", Some(&app_token)).await.status(), StatusCode::FORBIDDEN);
    let page: Value = app.get("/api/notifications?limit=4", Some(&token)).await.json().await.expect("json");
    assert_eq!(page.as_array().expect("list").len(), 4);
    let cursor = page[3]["id"].as_str().expect("id");
    let rest: Value =
        app.get(&format!("/api/notifications?before={cursor}"), Some(&token)).await.json().await.expect("json");
    assert_eq!(rest.as_array().expect("list").len(), 6);
    assert_error(
        app.get("/api/notifications?before=nope", Some(&token)).await,
        StatusCode::BAD_REQUEST,
        "invalid_cursor",
    )
    .await;
    let unread: Value = app.get("/api/notifications/unread-count", Some(&token)).await.json().await.expect("json");
    assert_eq!(unread["count"], 10);
    let r: Value = app.post("/api/notifications/read-all", json!({}), Some(&token)).await.json().await.expect("json");
    assert_eq!(r, json!({ "updated": 10 }));
    let r = app
        .client
        .delete(app.url(&format!("/api/notifications/{cursor}")))
        .bearer_auth(&token)
        .send()
        .await
        .expect("delete");
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let r: Value = app
        .client
        .delete(app.url("/api/notifications"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("delete")
        .json()
        .await
        .expect("json");
    assert_eq!(r, json!({ "deleted": 9 }));

    // Switched off: nothing is stored or pushed.
    let r = app
        .client
        .put(app.url("/api/push/prefs"))
        .bearer_auth(&token)
        .json(&json!({ "kinds": { "app": false } }))
        .send()
        .await
        .expect("prefs");
    assert_eq!(r.json::<Value>().await.expect("json")["kinds"]["app"], false);
    let (_, other) = app.register_app("other").await;
    let r = app.post("/api/notifications/send", json!({ "title": "muted" }), Some(&other)).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(app.get("/api/notifications", Some(&token)).await.json::<Value>().await.expect("json"), json!([]));
}

/// A fake Claude that runs `mobius notify … --chat` during its turn, then finishes.
fn notifying_claude(dir: &Path) -> PathBuf {
    crate::helpers::script(
        dir,
        "notifying-claude",
        &format!(
            r#"IFS= read -r init
IFS= read -r user
"{bin}" notify "Build done" "All green" --chat > "$TMPDIR/notify.out" 2>&1
printf '{{"type":"assistant","message":{{"id":"m1","content":[{{"type":"text","text":"notified: %s"}}]}},"session_id":"s1"}}\n' "$(tr -d '\n"' < "$TMPDIR/notify.out")"
printf '{{"type":"result","subtype":"success","is_error":false,"session_id":"s1","usage":{{}}}}\n'
cat >/dev/null"#,
            bin = env!("CARGO_BIN_EXE_mobius")
        ),
    )
}

#[tokio::test]
async fn the_agent_notifies_with_the_cli_attributed_to_its_chat() {
    let (app, token, mut service) = app_with(Some(&notifying_claude)).await;
    app.connect_claude(&token).await;
    subscribe(&app, &token, service.add(Device::new("phone"))).await;
    app.chat(&token, "n1").await;
    app.send(&token, "n1", "build it", "m1").await;
    let push = service.next().await;
    assert_eq!(push.payload["kind"], "agent", "{:?}", push.payload);
    assert_eq!(
        (&push.payload["title"], &push.payload["body"], &push.payload["target"], &push.payload["tag"]),
        (&json!("Build done"), &json!("All green"), &json!("/shell/?chat=n1"), &json!("chat:n1"))
    );
    let done = service.next().await;
    assert_eq!(done.payload["kind"], "turn_done");
    assert!(done.payload["body"].as_str().expect("body").starts_with("notified: notified ("), "{}", done.payload);
    let list: Value = app.get("/api/notifications", Some(&token)).await.json().await.expect("json");
    assert_eq!((&list[1]["source_type"], &list[1]["source_id"]), (&json!("chat"), &json!("n1")));
}

#[tokio::test]
async fn an_app_subscription_gets_only_that_apps_news_and_cannot_touch_the_owners() {
    let (app, token, mut service) = app_with(None).await;
    let (app_id, app_token) = app.register_app("notes").await;
    let owner_device = service.add(Device::new("phone"));
    subscribe(&app, &token, owner_device.clone()).await;
    subscribe(&app, &app_token, service.add(Device::new("app-endpoint"))).await;
    // An app can neither take over nor drop the owner's device.
    let mut hijack = owner_device.clone();
    hijack["keys"] = Device::new("x").subscription(&service.base)["keys"].clone();
    assert_error(app.post("/api/push/subscribe", hijack, Some(&app_token)).await, StatusCode::FORBIDDEN, "forbidden")
        .await;
    let r = app
        .client
        .delete(app.url("/api/push/subscribe"))
        .bearer_auth(&app_token)
        .json(&json!({ "endpoint": owner_device["endpoint"] }))
        .send()
        .await
        .expect("delete");
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        app.get("/api/push/devices", Some(&token)).await.json::<Value>().await.expect("json").as_array().map(Vec::len),
        Some(2)
    );

    // The owner's test reaches only the owner's device; the app's own notice reaches both.
    assert_eq!(app.post("/api/push/test", json!({}), Some(&token)).await.status(), StatusCode::ACCEPTED);
    assert_eq!(service.next().await.device, "phone");
    let r = app.post("/api/notifications/send", json!({ "title": "From the app" }), Some(&app_token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let mut got = [service.next().await, service.next().await];
    got.sort_by(|a, b| a.device.cmp(&b.device));
    assert_eq!((got[0].device.as_str(), got[1].device.as_str()), ("app-endpoint", "phone"));
    assert_eq!(got[0].payload["tag"], format!("app:{app_id}"));
    assert_eq!(service.hits("app-endpoint"), 1, "the owner's test never went to the app's endpoint");
}

#[tokio::test]
async fn wrong_action_tokens_are_throttled_per_address_like_sign_ins() {
    let (app, _token, _service) = app_with(None).await;
    let forged =
        || app.post("/api/push/action", json!({ "token": "forged", "question_id": "q-1", "action": "allow" }), None);
    let free = mobius::config::LoginPolicy::default().free_failures;
    for _ in 0..free {
        assert_error(forged().await, StatusCode::UNAUTHORIZED, "invalid_action_token").await;
    }
    let throttled = assert_error(forged().await, StatusCode::TOO_MANY_REQUESTS, "too_many_attempts").await;
    assert!(throttled["message"].as_str().is_some_and(|m| m.contains("try again")), "{throttled}");
}

/// A database that main's build made (every migration up to 0010, without this branch's 0009)
/// opens on this build: sqlx applies the missing lower version, and push works on it.
#[tokio::test]
async fn a_database_migrated_past_0009_without_it_gains_the_push_tables() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let without = dir.path().join("migrations-without-0009");
    std::fs::create_dir_all(&without).expect("dir");
    let source = mobius::config::checkout_root().join("backend/server/migrations");
    for entry in std::fs::read_dir(&source).expect("migrations") {
        let path = entry.expect("entry").path();
        let name = path.file_name().expect("name").to_string_lossy().into_owned();
        if !name.starts_with("0009_") {
            std::fs::copy(&path, without.join(&name)).expect("copy");
        }
    }
    let db = dir.path().join("db");
    std::fs::create_dir_all(&db).expect("db dir");
    let url = format!("sqlite://{}?mode=rwc", db.join("mobius.sqlite3").display());
    {
        use sqlx::Connection;
        let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("create");
        let old = sqlx::migrate::Migrator::new(without.as_path()).await.expect("migrator");
        old.run(&mut conn).await.expect("main's migrations");
        let versions: Vec<i64> = sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
            .fetch_all(&mut conn)
            .await
            .expect("versions");
        assert!(versions.contains(&10) && !versions.contains(&9), "{versions:?}");
        conn.close().await.expect("close");
    }
    let app = TestApp::spawn_in(dir.clone(), |c| c.push_allow_loopback = true).await;
    let token = app.setup_owner().await;
    let key: Value = app.get("/api/push/vapid-key", None).await.json().await.expect("json");
    let mut service = PushService::start(key["publicKey"].as_str().expect("key")).await;
    subscribe(&app, &token, service.add(Device::new("phone"))).await;
    assert_eq!(app.post("/api/push/test", json!({}), Some(&token)).await.status(), StatusCode::ACCEPTED);
    assert_eq!(service.next().await.payload["kind"], "test");
    let url = format!("sqlite://{}", db.join("mobius.sqlite3").display());
    use sqlx::Connection;
    let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("open");
    let versions: Vec<i64> = sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
        .fetch_all(&mut conn)
        .await
        .expect("versions");
    assert!(versions.contains(&9) && versions.contains(&10), "{versions:?}");
}
