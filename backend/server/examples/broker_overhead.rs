//! Benchmark helper: what the connector broker (`/api/mcp/{chat}/{id}`) adds to an MCP call,
//! and whether a large answer streams through it in flat memory. Runs the real server
//! in-process (the loopback allowance for connectors is a `Config` field), a local upstream that
//! answers a small JSON-RPC result (or, for `tools/call` of `big`, 100 MiB streamed), and a
//! stand-in CLI that keeps a turn running so its agent token is live. Times direct calls and
//! brokered calls alternately, then streams 100 MiB through the broker while sampling this
//! process's RSS. Prints one JSON line. Used by `scripts/bench`.

use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::routing::post;
use mobius::config::Config;

const BIG_BYTES: usize = 100 * 1024 * 1024;
const SMALL_ANSWER: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}"#;

const TOOLS_ANSWER: &str = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo"},{"name":"big"}]}}"#;

fn percentile(samples: &mut [f64], q: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[((samples.len() as f64 - 1.0) * q) as usize]
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

fn fail(e: impl std::fmt::Display) -> mobius::Error {
    mobius::Error::Internal(e.to_string())
}

async fn upstream_answer(body: String) -> axum::response::Response {
    if body.contains("\"big\"") {
        let chunk = bytes::Bytes::from(vec![b'x'; 64 * 1024]);
        let stream = futures_util::stream::iter(
            (0..BIG_BYTES / chunk.len()).map(move |_| Ok::<_, std::io::Error>(chunk.clone())),
        );
        return axum::response::Response::new(Body::from_stream(stream));
    }
    let answer = if body.contains("tools/list") { TOOLS_ANSWER } else { SMALL_ANSWER };
    let mut response = axum::response::Response::new(Body::from(answer));
    response.headers_mut().insert("content-type", axum::http::HeaderValue::from_static("application/json"));
    response
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> mobius::Result<()> {
    let runs: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(500);
    let dir = tempfile::tempdir()?;
    let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let upstream_url = format!("http://{}/mcp", upstream.local_addr()?);
    tokio::spawn(async move { axum::serve(upstream, Router::new().route("/mcp", post(upstream_answer))).await });

    // A stand-in CLI: keeps its turn running and leaves its agent token in its HOME.
    let cli = dir.path().join("fake-claude");
    std::fs::write(
        &cli,
        "#!/bin/sh\nIFS= read -r init\nIFS= read -r user\nprintf '%s' \"$MOBIUS_AGENT_TOKEN\" > \"$HOME/t.tmp\" && mv \"$HOME/t.tmp\" \"$HOME/agent-token\"\nprintf '{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s1\"}\\n'\nexec sleep 600\n",
    )?;
    std::fs::set_permissions(&cli, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;

    let mut config = Config::for_test(dir.path());
    config.connectors_allow_loopback = true;
    config.claude_bin = cli;
    config.log_filter = "error".into();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(mobius::app::serve(listener, config, async move {
        let _ = stopped.await;
    }));
    let client = reqwest::Client::new();
    let ready = Instant::now();
    while client.get(format!("{base}/api/ready")).send().await.map(|r| r.status().as_u16()).unwrap_or(0) != 200 {
        if ready.elapsed() > Duration::from_secs(30) {
            return Err(fail("the server never became ready"));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let post = |path: &str, body: serde_json::Value, token: &str| {
        client.post(format!("{base}{path}")).bearer_auth(token).json(&body).send()
    };
    let setup: serde_json::Value = client
        .post(format!("{base}/api/auth/setup"))
        .json(&serde_json::json!({ "username": "owner", "password": "correct horse battery" }))
        .send()
        .await
        .map_err(fail)?
        .json()
        .await
        .map_err(fail)?;
    let token = setup["access_token"].as_str().unwrap_or_default().to_owned();
    post("/api/providers/claude/api-key", serde_json::json!({ "api_key": "sk-bench" }), &token).await.map_err(fail)?;
    // The upstream answers `initialize` with the small result: enough for a connect.
    let connector: serde_json::Value =
        post("/api/connectors", serde_json::json!({ "name": "bench", "url": upstream_url }), &token)
            .await
            .map_err(fail)?
            .json()
            .await
            .map_err(fail)?;
    let id = connector["id"].as_i64().ok_or_else(|| fail(format!("no connector: {connector}")))?;
    post("/api/chats", serde_json::json!({ "id": "b" }), &token).await.map_err(fail)?;
    post("/api/chats/b/messages", serde_json::json!({ "content": "go", "cid": "m1" }), &token).await.map_err(fail)?;
    let token_file = dir.path().join("agent-home/agent-token");
    let waited = Instant::now();
    let agent = loop {
        if let Ok(t) = std::fs::read_to_string(&token_file) {
            break t;
        }
        if waited.elapsed() > Duration::from_secs(30) {
            return Err(fail("the stand-in CLI never started"));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let brokered = format!("{base}/api/mcp/b/{id}");
    let call =
        serde_json::json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}});

    let time = |url: String, bearer: Option<String>, body: serde_json::Value| {
        let client = client.clone();
        async move {
            let started = Instant::now();
            let mut request = client.post(url).json(&body);
            if let Some(t) = bearer {
                request = request.bearer_auth(t);
            }
            let answer = request.send().await.and_then(|r| r.error_for_status()).map_err(fail)?;
            let got = answer.bytes().await.map_err(fail)?.len();
            Ok::<(f64, usize), mobius::Error>((started.elapsed().as_secs_f64() * 1000.0, got))
        }
    };
    for _ in 0..50 {
        time(upstream_url.clone(), None, call.clone()).await?;
        time(brokered.clone(), Some(agent.clone()), call.clone()).await?;
    }
    let (mut direct, mut via) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        direct.push(time(upstream_url.clone(), None, call.clone()).await?.0);
        via.push(time(brokered.clone(), Some(agent.clone()), call.clone()).await?.0);
    }

    // 100 MiB through the broker, read as it streams, this process's RSS sampled meanwhile.
    let before = rss_kib();
    let big = serde_json::json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{}}});
    let mut answer = client.post(&brokered).bearer_auth(&agent).json(&big).send().await.map_err(fail)?;
    let (mut streamed, mut peak) = (0usize, before);
    let started = Instant::now();
    while let Some(chunk) = answer.chunk().await.map_err(fail)? {
        streamed += chunk.len();
        peak = peak.max(rss_kib());
    }
    let stream_secs = started.elapsed().as_secs_f64();
    let (d50, p50) = (percentile(&mut direct, 0.5), percentile(&mut via, 0.5));
    println!(
        "{}",
        serde_json::json!({
            "runs": runs, "direct_p50_ms": d50, "broker_p50_ms": p50, "overhead_p50_ms": p50 - d50,
            "broker_p99_ms": percentile(&mut via, 0.99),
            "streamed_mib": streamed / (1024 * 1024), "stream_secs": stream_secs,
            "rss_before_mib": before / 1024, "rss_peak_mib": peak / 1024, "rss_growth_mib": (peak.saturating_sub(before)) / 1024,
        })
    );
    let _ = stop.send(());
    let _ = server.await;
    Ok(())
}
