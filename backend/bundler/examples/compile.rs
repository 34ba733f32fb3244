//! Compiles one app folder and prints how long it took and how big the bundle is.
//!
//! ```text
//! cargo run --release -p mobius-bundler --example compile -- APP_DIR [--runs N] [--out FILE]
//!     [--node-modules DIR]... [--alias SPEC=FILE]... [--inject FILE] [--banner TEXT]
//! ```
//! Library folders default to `$MOBIUS_APP_NODE_MODULES`, else `<repo>/frontend/node_modules`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use mobius_bundler::{BundleOptions, Bundler};

struct Args {
    opts: BundleOptions,
    runs: usize,
    out: Option<PathBuf>,
}

fn parse() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let mut opts = BundleOptions { entry: "index.jsx".into(), ..Default::default() };
    let mut runs = 1;
    let mut out = None;
    let mut app_dir = None;
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--runs" => runs = value()?.parse().map_err(|_| "--runs needs a number".to_owned())?,
            "--out" => out = Some(PathBuf::from(value()?)),
            "--node-modules" => opts.node_modules.push(PathBuf::from(value()?)),
            "--inject" => opts.inject = Some(PathBuf::from(value()?)),
            "--banner" => opts.banner = Some(value()?),
            "--entry" => opts.entry = value()?,
            "--alias" => {
                let pair = value()?;
                let (spec, file) = pair.split_once('=').ok_or("--alias needs SPEC=FILE")?;
                opts.aliases.push((spec.to_owned(), PathBuf::from(file)));
            }
            _ if app_dir.is_none() && !arg.starts_with("--") => app_dir = Some(PathBuf::from(arg)),
            _ => return Err(format!("unexpected argument {arg}")),
        }
    }
    opts.app_dir = app_dir.ok_or("usage: compile APP_DIR [--runs N] [--out FILE] [--node-modules DIR]...")?;
    if opts.node_modules.is_empty() {
        let default = std::env::var_os("MOBIUS_APP_NODE_MODULES")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../frontend/node_modules"));
        opts.node_modules.push(default);
    }
    Ok(Args { opts, runs: runs.max(1), out })
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let bundler = match Bundler::new(1) {
        Ok(bundler) => bundler,
        Err(err) => {
            eprintln!("cannot start the bundler: {err}");
            return ExitCode::FAILURE;
        }
    };
    let mut times = Vec::with_capacity(args.runs);
    for run in 1..=args.runs {
        let started = Instant::now();
        let result = bundler.bundle(&args.opts).await;
        let elapsed = started.elapsed();
        match result {
            Ok(bundle) => {
                println!(
                    "run {run}: {:.1} ms, {} bytes, {} modules, sha256 {}",
                    ms(elapsed),
                    bundle.code.len(),
                    bundle.modules,
                    &bundle.sha256[..16]
                );
                if let (Some(out), 1) = (&args.out, run)
                    && let Err(err) = std::fs::write(out, &bundle.code)
                {
                    eprintln!("cannot write {}: {err}", out.display());
                    return ExitCode::FAILURE;
                }
            }
            Err(diagnostics) => {
                eprintln!("{diagnostics}");
                return ExitCode::FAILURE;
            }
        }
        times.push(elapsed);
    }
    times.sort();
    println!(
        "median {:.1} ms, min {:.1} ms over {} runs; peak RSS {}",
        ms(times[times.len() / 2]),
        ms(times[0]),
        times.len(),
        peak_rss().unwrap_or_else(|| "unknown".into())
    );
    ExitCode::SUCCESS
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The process's peak resident set size, as Linux reports it.
fn peak_rss() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    Some(line.trim_start_matches("VmHWM:").trim().to_owned())
}
