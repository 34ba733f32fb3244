//! Benchmark helper: the cost of one live-snapshot write (the statement the writer runs, in
//! its own committed transaction, `synchronous=FULL`) for a chat with 1,000 and with 10,000
//! history messages. Prints one JSON line per size. Used by `scripts/bench`.

use std::time::Instant;

use mobius::db;
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() -> mobius::Result<()> {
    let dir = std::env::args().nth(1).map(std::path::PathBuf::from).unwrap_or_else(std::env::temp_dir);
    for history in [1_000usize, 10_000] {
        let path = dir.join(format!("snapshot-bench-{history}.sqlite3"));
        let _ = std::fs::remove_file(&path);
        let mut conn = db::open_writer(&path).await?;
        db::migrate(&mut conn).await?;
        sqlx::query("BEGIN").execute(&mut conn).await?;
        db::chats::insert_chat(&mut conn, "bench", "Bench", 1).await?;
        for i in 0..history {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            let body = json!({ "role": role, "content": "x".repeat(300), "ts": i + 1 }).to_string();
            let ts = i64::try_from(i + 1).unwrap_or(i64::MAX);
            let message = db::messages::NewMessage { role, cid: None, ts, body: &body };
            db::messages::push_message(&mut conn, "bench", message).await?;
        }
        db::runs::insert_run(&mut conn, "rt-bench", "bench", None, 1).await?;
        db::runs::replace_live(&mut conn, "bench", "rt-bench", "{}", 0, 1).await?;
        sqlx::query("COMMIT").execute(&mut conn).await?;
        let live = json!({ "role": "assistant", "content": "y".repeat(4000), "blocks": [{ "type": "text", "content": "y".repeat(4000) }] }).to_string();
        let mut samples = Vec::new();
        for i in 0..300 {
            let started = Instant::now();
            sqlx::query("BEGIN IMMEDIATE").execute(&mut conn).await?;
            db::runs::update_live(&mut conn, "bench", "rt-bench", &live, i, i).await?;
            sqlx::query("COMMIT").execute(&mut conn).await?;
            samples.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        samples.sort_by(f64::total_cmp);
        let pick = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
        println!(
            "{}",
            json!({ "history": history, "p50_ms": pick(0.5), "p99_ms": pick(0.99), "samples": samples.len() })
        );
        let _ = std::fs::remove_file(&path);
    }
    Ok(())
}
