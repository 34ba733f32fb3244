//! Benchmark helper: what a finished turn pays for notifications. The turn, right after its
//! `FinishRun` commit, copies its reply and hands a notice to `Push::turn_ended` (a bounded
//! enqueue); the worker then stores it and pushes to every device. With 10 devices on a local
//! push service, prints one JSON line: the caller's cost (p50/p99 µs) and the time until all
//! 10 pushes arrived (p50/p99 ms). Used by `scripts/bench`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mobius::config::Config;
use mobius::db;
use mobius::events::Hub;
use mobius::protocol::{ChatId, RunStatus};
use mobius::push::Push;
use mobius::writer::PushWrite;
use mobius::writer::{WriteCommand, WriterHandle};

const DEVICES: usize = 10;
const TURNS: usize = 200;
/// A valid P-256 point (RFC 8291's example device key): encryption needs a real curve point.
const DEVICE_KEY: &str = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> mobius::Result<()> {
    let dir = tempfile::tempdir()?;
    let received = Arc::new(AtomicUsize::new(0));
    let counter = received.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let service = axum::Router::new().route(
        "/push/{device}",
        axum::routing::post(move || {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::Relaxed);
                axum::http::StatusCode::CREATED
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, service).await });

    let mut config = Config::for_test(dir.path());
    config.push_allow_loopback = true;
    // Pushes are sent by `mobius push-deliver`: the server binary built beside this example
    // (target/<profile>/examples/push_cost → target/<profile>/mobius), or MOBIUS_BIN.
    config.self_exe = match std::env::var_os("MOBIUS_BIN") {
        Some(bin) => bin.into(),
        None => std::env::current_exe()?
            .parent()
            .and_then(std::path::Path::parent)
            .map(|dir| dir.join("mobius"))
            .ok_or_else(|| mobius::Error::Internal("where is the mobius binary?".into()))?,
    };
    let path = config.database_path();
    let mut conn = db::open_writer(&path).await?;
    db::migrate(&mut conn).await?;
    let read = db::open_read_pool(&path)?;
    let (writer, _task) = WriterHandle::spawn(conn, Arc::new(Hub::default()));
    let push = Push::start(&config, read, writer.clone());
    for i in 0..DEVICES {
        let op = PushWrite::Subscribe(db::push::NewSubscription {
            endpoint: format!("{base}/push/{i}"),
            p256dh: DEVICE_KEY.into(),
            auth: "BTBZMqHH6r4Tts7J_aSIgg".into(),
            label: format!("device {i}"),
            app_id: None,
        });
        writer.call(|ack| WriteCommand::Push { op, ack }).await?;
    }
    let chat = ChatId::from("bench-chat");
    let reply = format!("{}\n\nDone: the build is green.", "x".repeat(4000));
    let (mut enqueue_us, mut delivered_ms) = (Vec::new(), Vec::new());
    for turn in 0..TURNS {
        let started = Instant::now();
        let copy = reply.clone();
        push.turn_ended(&chat, RunStatus::Completed, &copy, None);
        enqueue_us.push(started.elapsed().as_secs_f64() * 1e6);
        let want = (turn + 1) * DEVICES;
        while received.load(Ordering::Relaxed) < want {
            if started.elapsed() > Duration::from_secs(10) {
                return Err(mobius::Error::Internal("pushes did not arrive".into()));
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        delivered_ms.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let pick = |v: &mut Vec<f64>, q: f64| {
        v.sort_by(f64::total_cmp);
        v[((v.len() as f64 - 1.0) * q) as usize]
    };
    println!(
        "{}",
        serde_json::json!({
            "devices": DEVICES, "turns": TURNS,
            "enqueue_p50_us": pick(&mut enqueue_us, 0.5), "enqueue_p99_us": pick(&mut enqueue_us, 0.99),
            "delivered_p50_ms": pick(&mut delivered_ms, 0.5), "delivered_p99_ms": pick(&mut delivered_ms, 0.99),
        })
    );
    Ok(())
}
