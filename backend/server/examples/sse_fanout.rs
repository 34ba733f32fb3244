//! Benchmark helper: delivery latency of one system event to N SSE subscribers.
//! `sse_fanout PORT TOKEN SUBSCRIBERS EVENTS` opens the subscribers on `/api/events/system`,
//! then per event records the time from just before `POST /api/notify` is written until each
//! subscriber has read it. Prints one JSON line. Used by `scripts/bench` (pinned to CPU 1).
//! Subscribers connect from 127.0.0.2 on, one address per [`STREAMS_PER_ADDRESS`] of them, as
//! devices do: a single address may hold only a few streams (`MOBIUS_MAX_STREAMS_PER_ADDRESS`).

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::mpsc;

/// Subscribers sharing one source address (below the server's per-address stream cap).
const STREAMS_PER_ADDRESS: usize = 4;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = args[1].parse().expect("port");
    let token = args[2].clone();
    let subscribers: usize = args[3].parse().expect("subscribers");
    let events: usize = args[4].parse().expect("events");
    let (tx, mut rx) = mpsc::unbounded_channel::<(usize, Instant, String)>();
    let (ready_tx, mut ready_rx) = mpsc::unbounded_channel::<()>();
    for n in 0..subscribers {
        let (tx, ready_tx, token) = (tx.clone(), ready_tx.clone(), token.clone());
        tokio::spawn(async move {
            let from = u8::try_from(2 + n / STREAMS_PER_ADDRESS).expect("at most 1,000 subscribers");
            let socket = TcpSocket::new_v4().expect("socket");
            socket.bind(([127, 0, 0, from], 0).into()).expect("bind");
            let mut sock = socket.connect(([127, 0, 0, 1], port).into()).await.expect("connect");
            sock.set_nodelay(true).expect("nodelay");
            let req = format!(
                "GET /api/events/system HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
            );
            sock.write_all(req.as_bytes()).await.expect("write");
            let mut buf = vec![0u8; 65536];
            let mut hello = false;
            loop {
                let Ok(read) = sock.read(&mut buf).await else { return };
                if read == 0 {
                    return;
                }
                let at = Instant::now();
                let text = String::from_utf8_lossy(&buf[..read]).into_owned();
                if !hello && text.contains("system_stream_open") {
                    hello = true;
                    let _ = ready_tx.send(());
                }
                for marker in text.split("\"label\":\"").skip(1) {
                    if let Some(end) = marker.find('"') {
                        let _ = tx.send((n, at, marker[..end].to_owned()));
                    }
                }
            }
        });
    }
    for _ in 0..subscribers {
        ready_rx.recv().await.expect("subscriber ready");
    }
    let mut latencies = Vec::new();
    let mut missed = 0;
    for i in 0..events + 2 {
        let marker = format!("bench-{i}");
        let body = json!({ "type": "notice", "label": marker }).to_string();
        let req = format!(
            "POST /api/notify HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let mut poster = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
        poster.set_nodelay(true).expect("nodelay");
        let t0 = Instant::now();
        poster.write_all(req.as_bytes()).await.expect("post");
        let mut got = vec![false; subscribers];
        let deadline = t0 + Duration::from_secs(5);
        let mut count = 0;
        while count < subscribers {
            let Ok(Some((n, at, seen))) = tokio::time::timeout_at(deadline.into(), rx.recv()).await else { break };
            if seen == marker && !got[n] {
                got[n] = true;
                count += 1;
                if i >= 2 {
                    latencies.push(at.duration_since(t0).as_secs_f64() * 1000.0);
                }
            }
        }
        if i >= 2 {
            missed += subscribers - count;
        }
        drop(poster);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    latencies.sort_by(f64::total_cmp);
    let pick =
        |q: f64| latencies.get(((latencies.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(f64::NAN);
    println!(
        "{}",
        json!({ "subscribers": subscribers, "p50_ms": pick(0.5), "p99_ms": pick(0.99), "max_ms": pick(1.0), "missed": missed, "samples": latencies.len() })
    );
}
