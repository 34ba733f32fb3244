//! Benchmark helper: what the agent sandbox adds to a turn's start. Spawns `/bin/true` the way
//! a turn spawns its CLI (`agent::process::spawn`: own group, whitelisted environment,
//! `no_new_privs`), without and with the Landlock ruleset (built per spawn, as a turn builds
//! it) and its tree (the label and the marker), and waits for it to exit. Also times the end of
//! a tree (`terminate`: the group killed, `/proc` swept for its label), which a turn pays after
//! its reply. Prints one JSON line per mode. Used by `scripts/bench`.

use std::path::Path;
use std::time::{Duration, Instant};

use mobius::agent::ProviderKind;
use mobius::agent::process;
use mobius::agent::sandbox::{Sandbox, SandboxState};
use serde_json::json;

const ROUNDS: usize = 300;

#[tokio::main(flavor = "current_thread")]
async fn main() -> mobius::Result<()> {
    let dir = tempfile::tempdir()?;
    let data = std::fs::canonicalize(dir.path())?;
    let sandbox = Sandbox::detect(true, None, &data, Vec::new());
    let abi = match sandbox.state() {
        SandboxState::Landlock { abi, .. } => *abi,
        SandboxState::Off { reason } => {
            println!("{}", json!({ "mode": "unavailable", "reason": reason }));
            return Ok(());
        }
    };
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    let home = data.join("agent-home");
    let scratch = data.join("agent-scratch/bench");
    std::fs::create_dir_all(&scratch)?;
    let env = vec![("PATH".to_owned(), path.clone()), ("HOME".to_owned(), home.display().to_string())];
    assert!(process::become_subreaper(), "the kernel refused PR_SET_CHILD_SUBREAPER");
    let trees = mobius::agent::trees::Trees::new(data.join("run/agents"), true);
    for confined in [false, true, false, true] {
        let mut samples = Vec::with_capacity(ROUNDS);
        let mut ends = Vec::with_capacity(ROUNDS);
        for _ in 0..ROUNDS {
            let started = Instant::now();
            let confine = if confined {
                let grants = sandbox.grants(ProviderKind::Claude, Path::new("/bin/true"), &home, &scratch, &path);
                sandbox.ruleset(&grants)?
            } else {
                None
            };
            let spawned = process::spawn(
                Path::new("/bin/true"),
                &[],
                &data,
                &env,
                confined.then_some(&trees),
                confine,
                mobius::agent::ceiling::Applied::None,
            )?;
            let mut proc = spawned.process;
            proc.wait_timeout(Duration::from_secs(5)).await;
            samples.push(started.elapsed().as_secs_f64() * 1000.0);
            let ending = Instant::now();
            proc.terminate().await;
            ends.push(ending.elapsed().as_secs_f64() * 1000.0);
        }
        let pick = |samples: &mut Vec<f64>, q: f64| {
            samples.sort_by(f64::total_cmp);
            samples[((samples.len() as f64 - 1.0) * q) as usize]
        };
        println!(
            "{}",
            json!({ "mode": if confined { "landlock" } else { "none" }, "abi": abi,
                    "p50_ms": pick(&mut samples, 0.5), "p99_ms": pick(&mut samples, 0.99),
                    "end_p50_ms": pick(&mut ends, 0.5), "end_p99_ms": pick(&mut ends, 0.99) })
        );
    }
    Ok(())
}
