//! `mobius update [--check] [--yes]`: the same update as Settings', for people on SSH
//! (`docker compose exec app mobius update`). It asks the feed, shows what is new, downloads
//! and verifies the release, asks the launcher to restart into it and waits for the outcome.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use super::state::ReleaseState;
use super::{apply, build_version, feed, launcher};
use crate::config::Config;
use crate::locks::Unpoisoned;

/// How long `mobius update` waits for the launcher's verdict beyond the ready timeout.
const OUTCOME_SLACK: Duration = Duration::from_secs(60);

const USAGE: &str = "usage: mobius update [--check] [--yes]";

/// Runs `mobius update` with `args`.
pub fn update_command(args: &[String]) -> ExitCode {
    let (mut check_only, mut yes) = (false, false);
    for arg in args {
        match arg.as_str() {
            "--check" => check_only = true,
            "--yes" | "-y" => yes = true,
            _ => {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mobius: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mobius: {e}");
            return ExitCode::FAILURE;
        }
    };
    let data_dir = config.data_dir.clone();
    let updates = config.updates;
    let Some(url) = updates.feed.clone() else {
        eprintln!("mobius: update checks are off (MOBIUS_UPDATE_FEED=off)");
        return ExitCode::from(2);
    };
    let state = ReleaseState::load(&data_dir);
    let baked = build_version();
    let running =
        state.current.as_deref().and_then(|v| semver::Version::parse(v).ok()).filter(|v| *v > baked).unwrap_or(baked);
    runtime.block_on(async move {
        let feed = match feed::fetch(&url).await {
            Ok(feed) => feed,
            Err(e) => {
                eprintln!("mobius: {e}");
                return ExitCode::FAILURE;
            }
        };
        if feed.semver() <= running {
            println!("Möbius {running} is up to date.");
            return ExitCode::SUCCESS;
        }
        println!("Möbius {} is available (this is {running}).", feed.version);
        if !feed.notes.trim().is_empty() {
            println!("\n{}\n", feed.notes.trim());
        }
        if check_only {
            return ExitCode::SUCCESS;
        }
        let Some(pid) = launcher::running_launcher(&data_dir) else {
            eprintln!(
                "mobius: no `mobius launch` runs for {}; updates need it (the image's default command). \
                 Pull the new image instead: docker compose pull && docker compose up -d",
                data_dir.display()
            );
            return ExitCode::FAILURE;
        };
        if !yes {
            if !std::io::stdin().is_terminal() {
                eprintln!("mobius: pass --yes to apply without a prompt");
                return ExitCode::from(2);
            }
            print!("Apply it now? The server restarts (running turns continue afterwards). [y/N] ");
            let _ = std::io::stdout().flush();
            let mut answer = String::new();
            let _ = std::io::stdin().lock().read_line(&mut answer);
            if !matches!(answer.trim(), "y" | "Y" | "yes") {
                println!("Nothing changed.");
                return ExitCode::SUCCESS;
            }
        }
        let last_phase = std::sync::Mutex::new("");
        let on_progress = |phase: &'static str, done: u64, total: u64| {
            let mut last = last_phase.locked();
            if *last != phase {
                *last = phase;
                match phase {
                    "downloading" => println!("Downloading ({} MiB)…", total >> 20),
                    "verifying" if done == 0 => println!("Verifying the signature…"),
                    "verifying" => println!("Verified."),
                    "restarting" => println!("Restarting into {}…", feed.version),
                    _ => {}
                }
            }
        };
        let pending = match apply::apply(&data_dir, &updates, &running, pid, Some(&feed.version), &on_progress).await {
            Ok(pending) => pending,
            Err(e) => {
                eprintln!("mobius: {} ({})", e.message, e.code);
                return ExitCode::FAILURE;
            }
        };
        let deadline = Instant::now() + updates.ready_timeout + OUTCOME_SLACK;
        loop {
            let state = ReleaseState::load(&data_dir);
            if let Some(last) = state.last.filter(|l| l.version == pending.version && l.at >= pending.requested_at) {
                return match last.outcome.as_str() {
                    "applied" => {
                        println!("Updated to {} ({:.1} s).", last.version, last.took_ms.unwrap_or(0) as f64 / 1000.0);
                        ExitCode::SUCCESS
                    }
                    _ => {
                        eprintln!(
                            "mobius: {} was rolled back: {}",
                            last.version,
                            last.reason.as_deref().unwrap_or("no reason given")
                        );
                        ExitCode::FAILURE
                    }
                };
            }
            if Instant::now() > deadline {
                eprintln!("mobius: no outcome yet; see the server's log");
                return ExitCode::FAILURE;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
}
