//! Safe to put on the internet: nobody locks the owner out, claims the instance through
//! another host name, or exhausts the server with slow, idle or endless connections.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{PASSWORD, TestApp, USERNAME, assert_error, eventually, token_of};

/// A client whose connections come from `ip` (any 127.0.0.0/8 address reaches the server).
fn client_from(ip: &str) -> Client {
    Client::builder()
        .local_address(ip.parse::<IpAddr>().expect("ip"))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

async fn login(app: &TestApp, client: &Client, password: &str, cookie: Option<&str>) -> reqwest::Response {
    let mut req = client.post(app.url("/api/auth/token")).json(&json!({ "username": USERNAME, "password": password }));
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    req.send().await.expect("login")
}

/// `name=value` of the device cookie a response sets.
fn device_cookie(r: &reqwest::Response) -> String {
    let set = r.headers().get("set-cookie").expect("a device cookie").to_str().expect("text").to_owned();
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains("Path=/api/auth"), "{set}");
    set.split(';').next().expect("pair").to_owned()
}

// ---- 1. nobody locks the owner out ----

#[tokio::test]
async fn guessing_the_owners_name_from_one_address_does_not_lock_out_another() {
    let app = TestApp::spawn().await;
    app.setup_owner().await;
    let attacker = client_from("127.0.0.2");
    for _ in 0..8 {
        let r = login(&app, &attacker, "wrong-guess", None).await;
        assert!(matches!(r.status(), StatusCode::UNAUTHORIZED | StatusCode::TOO_MANY_REQUESTS), "{}", r.status());
    }
    let r = login(&app, &attacker, "wrong-guess", None).await;
    assert_error(r, StatusCode::TOO_MANY_REQUESTS, "too_many_attempts").await;
    let owner = client_from("127.0.0.3");
    let r = login(&app, &owner, PASSWORD, None).await;
    assert_eq!(r.status(), StatusCode::OK, "the owner at another address signs in");
}

#[tokio::test]
async fn a_burst_of_random_names_does_not_lock_out_everyone() {
    let app = TestApp::spawn().await;
    app.setup_owner().await;
    let attacker = client_from("127.0.0.4");
    for i in 0..30 {
        let body = json!({ "username": format!("user{i}"), "password": "whatever-123" });
        attacker.post(app.url("/api/auth/token")).json(&body).send().await.expect("attempt");
    }
    let r = login(&app, &client_from("127.0.0.5"), PASSWORD, None).await;
    assert_eq!(r.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_known_device_signs_in_through_an_attack_until_signed_out_everywhere() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| {
        c.login.free_failures = 2;
        c.login.global_burst = 3;
        c.login.global_refill_every = Duration::from_secs(3600);
    })
    .await;
    app.setup_owner().await;
    // The owner's phone signs in once and keeps its device credential.
    let phone = client_from("127.0.0.6");
    let r = login(&app, &phone, PASSWORD, None).await;
    assert_eq!(r.status(), StatusCode::OK);
    let cookie = device_cookie(&r);
    // An attacker on the same network, and others elsewhere, trip every limit.
    for ip in ["127.0.0.6", "127.0.0.7", "127.0.0.8", "127.0.0.9"] {
        login(&app, &client_from(ip), "wrong-guess", None).await;
    }
    let r = login(&app, &client_from("127.0.0.10"), PASSWORD, None).await;
    assert_error(r, StatusCode::TOO_MANY_REQUESTS, "too_many_attempts").await;
    let r = login(&app, &phone, PASSWORD, None).await;
    assert_error(r, StatusCode::TOO_MANY_REQUESTS, "too_many_attempts").await;
    // The device credential gets the owner in, with the right password only.
    let r = login(&app, &phone, "wrong-guess", Some(&cookie)).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "invalid_credentials").await;
    let r = login(&app, &client_from("127.0.0.11"), PASSWORD, Some(&cookie)).await;
    assert_eq!(r.status(), StatusCode::OK, "a device waits only after its own failures");
    assert_eq!(device_cookie(&r), cookie, "a known device keeps its credential");
    let token = token_of(r).await;
    // Sign out everywhere revokes the device credential too.
    let r = app.post("/api/auth/logout-all", json!({}), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.headers()["set-cookie"].to_str().expect("text").contains("Max-Age=0"), "the cookie is cleared");
    let r = login(&app, &client_from("127.0.0.12"), PASSWORD, Some(&cookie)).await;
    assert_error(r, StatusCode::TOO_MANY_REQUESTS, "too_many_attempts").await;
}

#[tokio::test]
async fn forwarded_for_names_the_client_only_behind_a_trusted_proxy() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| {
        c.trusted_proxies = mobius::config::TrustedProxies::parse("127.0.0.20").expect("proxies");
    })
    .await;
    app.setup_owner().await;
    let guess = |client: Client, forwarded: &'static str, password: &'static str| {
        let url = app.url("/api/auth/token");
        async move {
            client
                .post(url)
                .header("x-forwarded-for", forwarded)
                .json(&json!({ "username": USERNAME, "password": password }))
                .send()
                .await
                .expect("attempt")
                .status()
        }
    };
    // Behind the proxy, each forwarded client counts on its own.
    for _ in 0..8 {
        guess(client_from("127.0.0.20"), "203.0.113.1", "wrong-guess").await;
    }
    assert_eq!(guess(client_from("127.0.0.20"), "203.0.113.1", PASSWORD).await, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(guess(client_from("127.0.0.20"), "203.0.113.2", PASSWORD).await, StatusCode::OK);
    // Anyone else cannot pick an address by sending the header.
    for _ in 0..8 {
        guess(client_from("127.0.0.21"), "198.51.100.1", "wrong-guess").await;
    }
    assert_eq!(guess(client_from("127.0.0.21"), "198.51.100.2", PASSWORD).await, StatusCode::TOO_MANY_REQUESTS);
}

// ---- 2. DNS rebinding ----

#[tokio::test]
async fn an_extra_host_name_reaches_the_instance_and_others_still_do_not() {
    let dir = Arc::new(tempfile::tempdir().expect("temp dir"));
    let app = TestApp::spawn_in(dir, |c| {
        c.extra_hosts = mobius::config::ExtraHost::parse_list("mobius.lan, 192.168.1.20:8000").expect("hosts");
    })
    .await;
    let status = |host: &'static str| {
        let request = app.client.get(app.url("/api/auth/setup/status")).header("host", host);
        async move { request.send().await.expect("status").status() }
    };
    assert_eq!(status("mobius.lan").await, StatusCode::OK);
    assert_eq!(status("mobius.lan:8443").await, StatusCode::OK);
    assert_eq!(status("192.168.1.20:8000").await, StatusCode::OK);
    assert_eq!(status("192.168.1.20:9000").await, StatusCode::MISDIRECTED_REQUEST);
    assert_eq!(status("evil.mobius.lan").await, StatusCode::MISDIRECTED_REQUEST);
}

#[tokio::test]
async fn another_host_name_can_neither_claim_nor_drive_the_instance() {
    let app = TestApp::spawn().await;
    let port = app.addr.port();
    let rebound = format!("rebind.attacker.example:{port}");
    let status =
        app.client.get(app.url("/api/auth/setup/status")).header("host", &rebound).send().await.expect("status");
    assert_error(status, StatusCode::MISDIRECTED_REQUEST, "wrong_host").await;
    let claim = app
        .client
        .post(app.url("/api/auth/setup"))
        .header("host", &rebound)
        .json(&json!({ "username": "attacker", "password": "attacker-password" }))
        .send()
        .await
        .expect("setup");
    assert_error(claim, StatusCode::MISDIRECTED_REQUEST, "wrong_host").await;
    let shell = app.client.get(app.url("/")).header("host", &rebound).send().await.expect("shell");
    assert_eq!(shell.status(), StatusCode::MISDIRECTED_REQUEST);
    // The instance is still unclaimed; the loopback names with the port reach it.
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        let r = app.client.get(app.url("/api/auth/setup/status")).header("host", &host).send().await.expect("status");
        assert_eq!(r.status(), StatusCode::OK, "{host}");
        assert_eq!(r.json::<Value>().await.expect("json")["configured"], false);
    }
    let token = app.setup_owner().await;
    let driven = app
        .client
        .post(app.url("/api/chats"))
        .header("host", &rebound)
        .bearer_auth(&token)
        .json(&json!({ "title": "planted" }))
        .send()
        .await
        .expect("create");
    assert_eq!(driven.status(), StatusCode::MISDIRECTED_REQUEST);
    // Probes answer whatever the host (orchestrators use addresses).
    let health = app.client.get(app.url("/api/health")).header("host", "10.9.8.7:8000").send().await.expect("health");
    assert_eq!(health.status(), StatusCode::OK);
}

#[tokio::test]
async fn the_public_origins_host_is_answered() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| {
        c.public_origin = mobius::config::PublicOrigin::parse("https://mobius.example.com").expect("origin");
    })
    .await;
    for host in ["mobius.example.com", "mobius.example.com:443"] {
        let r = app.client.get(app.url("/api/auth/setup/status")).header("host", host).send().await.expect("status");
        assert_eq!(r.status(), StatusCode::OK, "{host}");
    }
    let r = app.client.get(app.url("/api/auth/setup/status")).header("host", "mobius.example.com:8443").send().await;
    assert_eq!(r.expect("status").status(), StatusCode::MISDIRECTED_REQUEST);
}

// ---- 3. slow and idle clients ----

/// Polls until the server closes `stream` (reads drain whatever it sent first).
async fn closed_by_server(stream: &mut TcpStream, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

async fn tcp_from(app: &TestApp, ip: &str) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.bind(format!("{ip}:0").parse().expect("addr")).expect("bind");
    socket.connect(app.addr).await.expect("connect")
}

#[tokio::test]
async fn a_request_head_that_never_finishes_is_cut_off() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| c.net.header_read_timeout = Duration::from_secs(1)).await;
    let mut slow = tcp_from(&app, "127.0.0.30").await;
    slow.write_all(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a").await.expect("partial head");
    let mut silent = tcp_from(&app, "127.0.0.30").await;
    assert!(closed_by_server(&mut slow, Duration::from_secs(30)).await, "a trickling head is closed");
    assert!(closed_by_server(&mut silent, Duration::from_secs(30)).await, "a silent connection is closed");
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| c.net.keep_alive_idle = Duration::from_secs(1)).await;
    let mut conn = tcp_from(&app, "127.0.0.31").await;
    let request = format!("GET /api/health HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n", app.addr.port());
    conn.write_all(request.as_bytes()).await.expect("request");
    let mut buf = [0u8; 1024];
    let n = conn.read(&mut buf).await.expect("response");
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    assert!(closed_by_server(&mut conn, Duration::from_secs(30)).await);
}

#[tokio::test]
async fn a_request_body_that_stops_arriving_gets_408() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| c.net.request_body_timeout = Duration::from_secs(1)).await;
    let mut conn = tcp_from(&app, "127.0.0.32").await;
    let head = format!(
        "POST /api/auth/token HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{{\"username\":",
        app.addr.port()
    );
    conn.write_all(head.as_bytes()).await.expect("partial request");
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), conn.read_to_end(&mut answer))
        .await
        .expect("answered")
        .expect("read");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("\"request_timeout\""), "{text}");
}

#[tokio::test]
async fn one_address_cannot_hold_more_than_its_connections() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| c.net.max_connections_per_address = 3).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(tcp_from(&app, "127.0.0.33").await);
    }
    let mut extra = tcp_from(&app, "127.0.0.33").await;
    assert!(closed_by_server(&mut extra, Duration::from_secs(30)).await, "the fourth is closed at once");
    let r = client_from("127.0.0.34").get(app.url("/api/health")).send().await.expect("health");
    assert_eq!(r.status(), StatusCode::OK);
    drop(held);
}

#[tokio::test]
async fn a_full_server_makes_room_for_a_new_client_by_closing_an_idle_one() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| c.net.max_connections = 4).await;
    let mut held = Vec::new();
    for i in 0..4 {
        held.push(tcp_from(&app, &format!("127.0.0.{}", 40 + i)).await);
    }
    // Every slot is taken by a connection that never sends a request.
    let r = client_from("127.0.0.50").get(app.url("/api/health")).send().await.expect("health");
    assert_eq!(r.status(), StatusCode::OK);
    assert!(closed_by_server(&mut held[0], Duration::from_secs(30)).await, "the longest-waiting one made room");
}

// ---- 3b. slow request bodies (issue 32, item 4) ----

/// Starts a login whose JSON body (`length` bytes announced) has barely begun: the handler reads
/// a body that is still arriving, so it counts as an upload until the connection goes.
async fn start_upload(app: &TestApp, ip: &str, length: usize, extra_header: &str) -> TcpStream {
    let mut conn = tcp_from(app, ip).await;
    let head = format!(
        "POST /api/auth/token HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n{extra_header}Content-Length: {length}\r\n\r\n{{\"username\":",
        app.addr.port()
    );
    conn.write_all(head.as_bytes()).await.expect("partial request");
    conn
}

/// The status line and body of one raw response (the server closes after it).
async fn raw_answer(conn: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), conn.read_to_end(&mut answer))
        .await
        .expect("answered")
        .expect("read");
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn a_body_slower_than_the_minimum_rate_gets_408() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| {
        c.net.request_body_min_rate = 1000;
        c.net.request_body_grace = Duration::from_secs(1);
    })
    .await;
    let mut conn = start_upload(&app, "127.0.0.35", 100_000, "").await;
    let (mut read, mut write) = conn.split();
    // One byte every 200 ms: never a pause, but far below 1,000 bytes a second.
    let trickle = async {
        loop {
            // allow-sleep: a body trickled at one byte per 200 ms is the slow client under test.
            tokio::time::sleep(Duration::from_millis(200)).await;
            if write.write_all(b" ").await.is_err() {
                return;
            }
        }
    };
    let answer = tokio::select! {
        answer = async {
            let mut answer = Vec::new();
            let _ = tokio::time::timeout(Duration::from_secs(30), read.read_to_end(&mut answer)).await;
            String::from_utf8_lossy(&answer).into_owned()
        } => answer,
        () = trickle => String::new(),
    };
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"request_timeout\"") && answer.contains("too slowly"), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("connection: close"), "{answer}");
    // A body that keeps the rate is not cut: a login with a whole body in one go answers.
    let r = login(&app, &client_from("127.0.0.36"), "wrong-guess", None).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn uploads_beyond_the_per_address_cap_get_429_except_from_the_owners_devices() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| c.net.max_uploads_per_address = 2).await;
    let token = app.setup_owner().await;
    let mut slow =
        vec![start_upload(&app, "127.0.0.37", 200, "").await, start_upload(&app, "127.0.0.37", 200, "").await];
    // Wait until both count: the third from the address is refused before its body is read.
    let third = eventually("a third upload from the address is refused", || async {
        let mut conn = start_upload(&app, "127.0.0.37", 200, "").await;
        conn.write_all(b"\"owner\"").await.expect("more body");
        let _ = conn.shutdown().await;
        let third = raw_answer(&mut conn).await;
        third.starts_with("HTTP/1.1 429").then_some(third)
    })
    .await;
    assert!(third.contains("\"too_many_uploads\"") && third.to_ascii_lowercase().contains("retry-after"), "{third}");
    // The owner's device (a bearer token) is not held to the cap, from the same address.
    let r = client_from("127.0.0.37")
        .post(app.url("/api/chats"))
        .bearer_auth(&token)
        .json(&json!({ "title": "Sent while the address uploads" }))
        .send()
        .await
        .expect("create");
    assert_eq!(r.status(), StatusCode::CREATED);
    // Another address has its own share.
    let r = login(&app, &client_from("127.0.0.38"), "wrong-guess", None).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    // An upload that ends gives its slot back.
    drop(slow.pop());
    eventually("the slot comes back", || async {
        let r = login(&app, &client_from("127.0.0.37"), "wrong-guess", None).await;
        (r.status() != StatusCode::TOO_MANY_REQUESTS).then_some(())
    })
    .await;
    drop(slow);
}

#[tokio::test]
async fn strangers_filling_the_server_leave_room_for_the_owners_devices() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| {
        c.net.max_connections = 8;
        c.net.reserved_connections = 4;
    })
    .await;
    let token = app.setup_owner().await;
    let phone = client_from("127.0.0.80");
    let r = login(&app, &phone, PASSWORD, None).await;
    assert_eq!(r.status(), StatusCode::OK);
    let cookie = device_cookie(&r);
    // Four strangers keep requests in progress (bodies that never finish): all they may hold.
    let mut strangers = Vec::new();
    for i in 0..4 {
        strangers.push(start_upload(&app, &format!("127.0.0.{}", 81 + i), 200, "").await);
    }
    // Once they are all in progress, a fifth stranger is turned away at once…
    let refused = eventually("a stranger is refused while the server is full", || async {
        let r = client_from("127.0.0.85").get(app.url("/api/chats/search?q=x")).send().await.expect("search");
        (r.status() == StatusCode::SERVICE_UNAVAILABLE).then_some(r)
    })
    .await;
    assert_eq!(refused.headers()["connection"], "close");
    assert_error(refused, StatusCode::SERVICE_UNAVAILABLE, "server_busy").await;
    // …while the owner's devices get in: a bearer token, or the device credential at sign-in.
    let r = client_from("127.0.0.86").get(app.url("/api/chats")).bearer_auth(&token).send().await.expect("list");
    assert_eq!(r.status(), StatusCode::OK);
    let r = login(&app, &client_from("127.0.0.87"), PASSWORD, Some(&cookie)).await;
    assert_eq!(r.status(), StatusCode::OK);
    // A health probe is never held back.
    let r = client_from("127.0.0.88").get(app.url("/api/health")).send().await.expect("health");
    assert_eq!(r.status(), StatusCode::OK);
    // When the strangers go, anyone gets in again.
    drop(strangers);
    eventually("the slots come back", || async {
        let r = client_from("127.0.0.85").get(app.url("/api/chats/search?q=x")).send().await.expect("search");
        (r.status() != StatusCode::SERVICE_UNAVAILABLE).then_some(())
    })
    .await;
}

// ---- 4. streams: bounded, and nothing left behind ----

async fn open_stream(app: &TestApp, client: &Client, token: &str, chat: &str) -> reqwest::Response {
    client.get(app.url(&format!("/api/chats/{chat}/stream"))).bearer_auth(token).send().await.expect("stream")
}

#[tokio::test]
async fn event_streams_are_capped_per_address_and_in_all() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| {
        c.net.max_streams_per_address = 2;
        c.net.max_streams = 3;
    })
    .await;
    let token = app.setup_owner().await;
    app.chat(&token, "s").await;
    let a = client_from("127.0.0.60");
    let first = open_stream(&app, &a, &token, "s").await;
    let second = a.get(app.url("/api/events/system")).bearer_auth(&token).send().await.expect("system");
    assert_eq!((first.status(), second.status()), (StatusCode::OK, StatusCode::OK));
    let third = open_stream(&app, &a, &token, "s").await;
    let body = assert_error(third, StatusCode::SERVICE_UNAVAILABLE, "too_many_streams").await;
    assert!(body["message"].as_str().expect("message").contains("stream"));
    let b = client_from("127.0.0.61");
    let other = open_stream(&app, &b, &token, "s").await;
    assert_eq!(other.status(), StatusCode::OK, "another address has its own share");
    let over = open_stream(&app, &client_from("127.0.0.62"), &token, "s").await;
    assert_error(over, StatusCode::SERVICE_UNAVAILABLE, "too_many_streams").await;
    // Closing a stream gives its slot back.
    drop(first);
    eventually("the slot comes back after the stream closed", || async {
        (open_stream(&app, &a, &token, "s").await.status() == StatusCode::OK).then_some(())
    })
    .await;
    drop((second, other));
}

#[tokio::test]
async fn a_stream_of_a_missing_chat_leaves_no_channel_and_a_closed_stream_frees_its_chat_channel() {
    use axum::body::Body;
    use axum::extract::ConnectInfo;
    use axum::http::Request;
    use tower::ServiceExt;

    let dir = tempfile::tempdir().expect("tmp");
    let config = mobius::config::Config::for_test(dir.path());
    let (_stop, stopped) = tokio::sync::watch::channel(false);
    let (state, _writer) =
        mobius::state::AppState::build(config, "http://127.0.0.1:9".into(), mobius::ops::Boot::new(), stopped)
            .await
            .expect("state");
    let router = mobius::app::router(state.clone());
    let call = |request: Request<Body>| {
        let mut request = request;
        request.extensions_mut().insert(ConnectInfo(std::net::SocketAddr::from(([127, 0, 0, 1], 9))));
        router.clone().oneshot(request)
    };
    let setup = Request::post("/api/auth/setup")
        .header("content-type", "application/json")
        .body(Body::from(json!({ "username": USERNAME, "password": PASSWORD }).to_string()))
        .expect("request");
    let response = call(setup).await.expect("setup");
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.expect("body");
    let token =
        serde_json::from_slice::<Value>(&bytes).expect("json")["access_token"].as_str().expect("token").to_owned();
    for i in 0..50 {
        let request = Request::get(format!("/api/chats/missing-{i}/stream"))
            .header("authorization", format!("Bearer {token}"))
            .body(Body::empty())
            .expect("request");
        assert_eq!(call(request).await.expect("stream").status(), 404);
    }
    assert_eq!(state.hub.chat_channels(), 0, "a missing chat's stream leaves nothing behind");
    let create = Request::post("/api/chats")
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(Body::from(json!({ "id": "real" }).to_string()))
        .expect("request");
    assert!(call(create).await.expect("create").status().is_success());
    let request =
        Request::get("/api/chats/real/stream").header("authorization", format!("Bearer {token}")).body(Body::empty());
    let stream = call(request.expect("request")).await.expect("stream");
    assert_eq!(stream.status(), 200);
    assert_eq!(state.hub.chat_channels(), 1);
    drop(stream);
    eventually("the chat's channel goes with its last receiver", || async {
        (state.hub.chat_channels() == 0).then_some(())
    })
    .await;
}

// ---- 6. app frames (the app frame itself: apps.rs) ----

#[tokio::test]
async fn the_embedded_chat_page_is_sandboxed_and_its_popups_stay_sandboxed() {
    let app = TestApp::spawn().await;
    let dist = crate::helpers::fake_dist(app.data_dir());
    std::fs::write(dist.join("embed-chat.html"), "<!doctype html><title>chat</title>").expect("page");
    let page = app.get("/shell/embed/chat", None).await;
    assert_eq!(page.status(), StatusCode::OK);
    let csp = page.headers()["content-security-policy"].to_str().expect("csp").to_owned();
    let flags: Vec<&str> = csp
        .split(';')
        .next()
        .and_then(|d| d.trim().strip_prefix("sandbox"))
        .expect("a sandbox directive")
        .split_whitespace()
        .collect();
    assert!(flags.contains(&"allow-scripts"), "{csp}");
    for escape in ["allow-same-origin", "allow-popups-to-escape-sandbox", "allow-top-navigation"] {
        assert!(!flags.contains(&escape), "{escape} in {csp}");
    }
}

// ---- 7. smaller holes ----

#[tokio::test]
async fn a_path_segment_longer_than_a_file_name_may_be_is_a_400() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let long = "a".repeat(256);
    let put = app
        .client
        .put(app.url(&format!("/api/storage/shared/{}.json", "b".repeat(241))))
        .bearer_auth(&token)
        .json(&json!({ "x": 1 }))
        .send()
        .await
        .expect("put");
    assert_error(put, StatusCode::BAD_REQUEST, "invalid_path").await;
    let get = app.get(&format!("/api/storage/shared/notes/{long}"), Some(&token)).await;
    assert_error(get, StatusCode::BAD_REQUEST, "invalid_path").await;
    let fits = app
        .client
        .put(app.url(&format!("/api/storage/shared/{}.json", "a".repeat(240))))
        .bearer_auth(&token)
        .json(&json!({ "x": 1 }))
        .send()
        .await
        .expect("put");
    assert_eq!(fits.status(), StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn files_a_crash_left_half_written_are_removed_at_boot() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir.clone(), |_| {}).await;
    app.setup_owner().await;
    let dir = app.stop().await;
    let storage = dir.path().join("app-data/7/notes");
    let meta = dir.path().join(".storage-meta/shared");
    std::fs::create_dir_all(&storage).expect("storage");
    std::fs::create_dir_all(&meta).expect("meta");
    let leftovers = [storage.join(".~tmp-0123456789abcdef"), meta.join(".~tmp-fedcba9876543210")];
    for file in &leftovers {
        std::fs::write(file, "half a write").expect("leftover");
    }
    std::fs::write(storage.join("kept.json"), "{}").expect("a real file");
    let _app = TestApp::spawn_in(dir.clone(), |_| {}).await;
    eventually("the leftovers are swept", || async { leftovers.iter().all(|f| !f.exists()).then_some(()) }).await;
    assert!(storage.join("kept.json").is_file());
}

#[tokio::test]
async fn the_data_directory_and_everything_in_it_is_the_owners_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let data = dir.path().join("fresh/data");
    let app = TestApp::spawn_process(dir.clone(), &[("DATA_DIR", data.display().to_string())]).await;
    let token = app.setup_owner().await;
    app.chat(&token, "c").await;
    let put = app
        .client
        .put(app.url("/api/storage/shared/notes/today.md"))
        .bearer_auth(&token)
        .header("content-type", "text/markdown")
        .body("private")
        .send()
        .await
        .expect("put");
    assert_eq!(put.status(), StatusCode::NO_CONTENT);
    let mut folders = vec![data.clone()];
    let mut seen = 0;
    while let Some(folder) = folders.pop() {
        let mode = std::fs::metadata(&folder).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "{} is {mode:o}", folder.display());
        for entry in std::fs::read_dir(&folder).expect("read").flatten() {
            let meta = entry.metadata().expect("meta");
            if meta.is_dir() {
                folders.push(entry.path());
            } else {
                let mode = meta.permissions().mode() & 0o777;
                assert_eq!(mode & 0o077, 0, "{} is {mode:o}", entry.path().display());
                seen += 1;
            }
        }
    }
    assert!(seen >= 3, "the database, the key and the stored file were checked");
}
