//! Benchmark helper: what the platform adds to an app job's start. Runs a job script that does
//! nothing (`bash job.sh <id>`) the way `schedules/jobs.rs` does — the run's token minted, its
//! view of the data directory made (`schedules/view.rs`: the token file, its links, its
//! `cron-logs/`), the job's Landlock ruleset built, the process started in its own labelled
//! tree and waited for (the start, `p50_ms`) — then ended, the view read back and removed (the
//! end, `end_p50_ms`); and, as the baseline, the same script spawned bare (own group, no token,
//! no view, no sandbox, no tree). Prints one JSON line per mode, with the view alone. Used by
//! `scripts/bench --only jobs`.

use std::path::Path;
use std::time::{Duration, Instant};

use mobius::agent::process;
use mobius::agent::sandbox::{JobClis, JobView, Sandbox};
use mobius::auth::{Claims, Keys, Scope};
use mobius::schedules::view::{Links, View};
use serde_json::json;

const ROUNDS: usize = 200;

fn pick(samples: &mut [f64], q: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[((samples.len() as f64 - 1.0) * q) as usize]
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> mobius::Result<()> {
    let dir = tempfile::tempdir()?;
    let data = std::fs::canonicalize(dir.path())?;
    let sandbox = Sandbox::detect(true, None, &data, Vec::new());
    let source = data.join("apps/ticker");
    let state = data.join("apps/1/job-state");
    std::fs::create_dir_all(&source)?;
    std::fs::create_dir_all(state.join("tmp"))?;
    std::fs::write(source.join("job.sh"), "exit 0\n")?;
    let path = "/usr/bin:/bin".to_owned();
    let bash = Path::new("/bin/bash");
    let args = vec![source.join("job.sh").display().to_string(), "1".to_owned()];
    let keys = Keys::from_secret(b"bench-secret-bench-secret-bench-secret");
    assert!(process::become_subreaper(), "the kernel refused PR_SET_CHILD_SUBREAPER");
    let trees = mobius::agent::trees::Trees::new(data.join("run/agents"), true);
    let links = Links { app_id: 1, slug: "ticker", source: &source, state: &state };
    for full in [false, true, false, true] {
        let mut samples = Vec::with_capacity(ROUNDS);
        let mut views = Vec::with_capacity(ROUNDS);
        let mut ends = Vec::with_capacity(ROUNDS);
        for run in 0..ROUNDS {
            let started = Instant::now();
            let (env, rules, view) = if full {
                let mut claims = Claims::new("owner", Scope::App, 0, 360);
                claims.app_id = Some(1);
                claims.app_nonce = Some("nonce".into());
                claims.job_run = Some(run as i64);
                let token = keys.issue(&claims)?;
                let made = Instant::now();
                let view = View::create(&data, run as i64, &token, &links)?;
                views.push(made.elapsed().as_secs_f64() * 1000.0);
                let job_view = JobView { root: view.path().to_path_buf(), writable: view.writable() };
                let grants = sandbox.job_grants(&source, &state, &job_view, &path, &JobClis::default());
                let env = vec![
                    ("PATH".to_owned(), path.clone()),
                    ("DATA_DIR".to_owned(), view.path().display().to_string()),
                    ("APP_TOKEN".to_owned(), token),
                ];
                (env, sandbox.ruleset(&grants)?, Some(view))
            } else {
                (vec![("PATH".to_owned(), path.clone())], None, None)
            };
            let spawned = process::spawn_job(
                bash,
                &args,
                &source,
                &env,
                full.then_some(&trees),
                rules,
                mobius::agent::ceiling::Applied::None,
            )?;
            let mut proc = spawned.process;
            proc.wait_timeout(Duration::from_secs(5)).await;
            samples.push(started.elapsed().as_secs_f64() * 1000.0);
            let ending = Instant::now();
            proc.terminate().await;
            if let Some(view) = view {
                let _ = view.cron_logs();
                drop(view);
            }
            ends.push(ending.elapsed().as_secs_f64() * 1000.0);
        }
        let mut line = json!({ "mode": if full { "job" } else { "bare" },
            "p50_ms": pick(&mut samples, 0.5), "p99_ms": pick(&mut samples, 0.99),
            "end_p50_ms": pick(&mut ends, 0.5), "end_p99_ms": pick(&mut ends, 0.99) });
        if full {
            line["view_p50_ms"] = json!(pick(&mut views, 0.5));
            line["view_p99_ms"] = json!(pick(&mut views, 0.99));
            line["sandbox"] = json!(!matches!(sandbox.state(), mobius::agent::sandbox::SandboxState::Off { .. }));
        }
        println!("{line}");
    }
    Ok(())
}
