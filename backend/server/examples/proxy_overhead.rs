//! Benchmark helper: what `/api/proxy` adds to a GET. Runs the real server in-process (the
//! test-only loopback allowance is a `Config` field no environment variable sets) and a local
//! upstream serving 100 KiB, then times direct GETs and proxied GETs alternately over
//! keep-alive connections. Prints one JSON line. Used by `scripts/bench`.

use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use mobius::config::Config;

const BODY_BYTES: usize = 100 * 1024;

fn percentile(samples: &mut [f64], q: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[((samples.len() as f64 - 1.0) * q) as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> mobius::Result<()> {
    let runs: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(500);
    let dir = tempfile::tempdir()?;
    let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let upstream_url = format!("http://{}/data", upstream.local_addr()?);
    let body = vec![b'x'; BODY_BYTES];
    let app = Router::new().route("/data", get(move || std::future::ready(body.clone())));
    tokio::spawn(async move { axum::serve(upstream, app).await });

    let mut config = Config::for_test(dir.path());
    config.proxy_allow_loopback = true;
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
            return Err(mobius::Error::Internal("the server never became ready".into()));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let setup: serde_json::Value = client
        .post(format!("{base}/api/auth/setup"))
        .json(&serde_json::json!({ "username": "owner", "password": "correct horse battery" }))
        .send()
        .await
        .map_err(|e| mobius::Error::Internal(e.to_string()))?
        .json()
        .await
        .map_err(|e| mobius::Error::Internal(e.to_string()))?;
    let token = setup["access_token"].as_str().unwrap_or_default().to_owned();
    let proxied = format!("{base}/api/proxy?url={upstream_url}");

    let fetch = |url: String, token: Option<String>| {
        let client = client.clone();
        async move {
            let started = Instant::now();
            let mut request = client.get(url);
            if let Some(t) = token {
                request = request.bearer_auth(t);
            }
            let bytes = request
                .send()
                .await
                .and_then(|r| r.error_for_status())
                .map_err(|e| mobius::Error::Internal(e.to_string()))?;
            let got = bytes.bytes().await.map_err(|e| mobius::Error::Internal(e.to_string()))?.len();
            if got != BODY_BYTES {
                return Err(mobius::Error::Internal(format!("got {got} bytes")));
            }
            Ok::<f64, mobius::Error>(started.elapsed().as_secs_f64() * 1000.0)
        }
    };
    for _ in 0..50 {
        fetch(upstream_url.clone(), None).await?;
        fetch(proxied.clone(), Some(token.clone())).await?;
    }
    let (mut direct, mut via) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        direct.push(fetch(upstream_url.clone(), None).await?);
        via.push(fetch(proxied.clone(), Some(token.clone())).await?);
    }
    let (d50, p50) = (percentile(&mut direct, 0.5), percentile(&mut via, 0.5));
    println!(
        "{}",
        serde_json::json!({
            "runs": runs, "direct_p50_ms": d50, "proxy_p50_ms": p50, "overhead_p50_ms": p50 - d50,
            "proxy_p99_ms": percentile(&mut via, 0.99),
        })
    );
    let _ = stop.send(());
    let _ = server.await;
    Ok(())
}
