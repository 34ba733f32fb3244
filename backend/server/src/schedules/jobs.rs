//! Running an app's job, as the original's runner did (`app-platform-contract.md` §4.3) and with
//! what it left undone: `bash <job> <app id>` in the app's folder, with the allow-listed
//! environment and an app token that dies with the run (`APP_TOKEN`, also in
//! `$DATA_DIR/service-token.txt`: its `DATA_DIR` is the run's view, `view.rs`), in its own
//! process group, confined by the agent's sandbox to its folders, killed with its group (and
//! whatever escaped it) when it runs past its time limit, and its output captured (`output.rs`,
//! with what it wrote under `$DATA_DIR/cron-logs/`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

use super::context::{Claim, Ctx, LOG_DIR};
use super::output;
use super::view::{Links, View};
use crate::agent::process;
use crate::agent::slots::Class;
use crate::db::schedules::{RunEnd, ScheduleRow};

/// The contract's fallbacks when the manifest names no job (or a missing one).
pub const FALLBACK_JOBS: [&str; 3] = ["fetch.sh", "job.sh", "build.sh"];
/// Longest a job may be given.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(6 * 3600);
/// After the job's main process exits, how long its output may take to end before the
/// processes it left behind are killed.
const LEFTOVER_WAIT: Duration = Duration::from_secs(1);
/// After the group is killed, how long the output reader may take to finish.
const DRAIN_WAIT: Duration = Duration::from_secs(5);
/// A job token outlives the job's time limit by this much at most (it dies with the run anyway).
const TOKEN_MARGIN_SECS: i64 = 60;
/// Environment passed through from the server when set (the contract's allow-list).
const PASSED_ENV: [&str; 4] = ["LANG", "LC_ALL", "CLAUDE_CONFIG_DIR", "CODEX_HOME"];

/// `DATA_DIR/apps/<id>/job-state`, the job's own folder (`APP_JOB_STATE_DIR`). App source
/// folders are named by slugs, which are never all digits, so this cannot meet one.
pub fn state_dir(data_dir: &Path, app_id: i64) -> PathBuf {
    data_dir.join("apps").join(app_id.to_string()).join("job-state")
}

/// The app's source folder: a plain folder directly in `DATA_DIR/apps` (no link).
pub fn source_dir(data_dir: &Path, slug: &str) -> Option<PathBuf> {
    if !crate::apps::manifest::valid_id(slug) {
        return None;
    }
    crate::apps::worktree::folder(data_dir, slug).ok().flatten().map(|_| data_dir.join("apps").join(slug))
}

/// The job file to run: `declared` when it is a plain file in `dir`, else the first of the
/// contract's fallbacks that is. A name with a path in it, or a link, never runs.
pub fn resolve_job(dir: &Path, declared: Option<&str>) -> Result<(String, PathBuf), String> {
    let plain = |name: &str| {
        valid_job_name(name) && std::fs::symlink_metadata(dir.join(name)).is_ok_and(|m| m.file_type().is_file())
    };
    if let Some(name) = declared
        && !valid_job_name(name)
    {
        return Err(format!("The job {name:?} is not a bare file name in the app's folder."));
    }
    declared
        .into_iter()
        .chain(FALLBACK_JOBS)
        .find(|name| plain(name))
        .map(|name| (name.to_owned(), dir.join(name)))
        .ok_or_else(|| match declared {
            Some(name) => format!("The job script {name} is not in the app's folder (nor fetch.sh, job.sh, build.sh)."),
            None => "The app has no job script (fetch.sh, job.sh or build.sh).".to_owned(),
        })
}

/// A bare file name: no path, no `..`, not hidden, printable.
pub fn valid_job_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// Runs `schedule`'s job as run `run_id`, records the end, and frees the app's slot.
pub async fn run(ctx: Arc<Ctx>, schedule: ScheduleRow, run_id: i64, mut claim: Claim) {
    let cancelled = claim.cancelled.take();
    claim.keep(run_id);
    let end = match execute(&ctx, &schedule, run_id, cancelled).await {
        Ok(end) => end,
        Err(why) => {
            RunEnd { status: "failed".into(), reason: Some(why), ended_at: ctx.clock.now_ms(), ..RunEnd::default() }
        }
    };
    let failed = match end.status.as_str() {
        "succeeded" => Some(false),
        "failed" | "timed_out" => Some(true),
        _ => None,
    };
    ctx.finish(run_id, end, failed, false).await;
    if let Some(app) = schedule.app_id {
        super::context::lock(&ctx.jobs).remove(&app);
    }
}

async fn execute(
    ctx: &Ctx,
    schedule: &ScheduleRow,
    run_id: i64,
    cancelled: Option<oneshot::Receiver<String>>,
) -> Result<RunEnd, String> {
    let data_dir = ctx.data_dir().clone();
    let app_id = schedule.app_id.ok_or("This schedule has no app.")?;
    let app = crate::db::apps::get(&ctx.agents.read, app_id)
        .await
        .map_err(|e| format!("The app could not be read: {e}"))?
        .filter(|a| a.deleted_at.is_none() && a.bundle_sha.is_some())
        .ok_or("The app is not installed.")?;
    let dir = source_dir(&data_dir, &app.slug).ok_or("The app's folder is missing.")?;
    let (job_name, job_path) = resolve_job(&dir, schedule.job.as_deref())?;
    let state = state_dir(&data_dir, app_id);
    // `apps/` is the agent's to write: the folder is made without following a link it planted
    // (and the sandbox grants it the same way).
    let rel = state.strip_prefix(&data_dir).map_err(|_| "The job's state folder is outside the data folder.")?;
    crate::safe_fs::Dir::create_under(&data_dir, &rel.join("tmp"))
        .map_err(|e| format!("The job's state folder could not be made: {e}"))?;
    let cancelled = async move {
        if let Some(rx) = cancelled
            && let Ok(why) = rx.await
        {
            return why;
        }
        std::future::pending::<String>().await
    };
    tokio::pin!(cancelled);
    // A job is background work: it waits its turn among the agents that may run at once (the
    // run says so), and its time limit starts when it does.
    let _slot = match ctx.agents.slots.take(Class::Background) {
        Ok(slot) => slot,
        Err(ticket) => {
            ctx.waiting(run_id, true).await;
            tokio::select! {
                slot = ticket.wait() => {
                    ctx.waiting(run_id, false).await;
                    slot
                }
                why = &mut cancelled => {
                    return Ok(RunEnd { status: "cancelled".into(), reason: Some(why), ended_at: ctx.clock.now_ms(), ..RunEnd::default() });
                }
            }
        }
    };
    let limit = schedule
        .timeout_secs
        .and_then(|s| u64::try_from(s).ok())
        .map_or(ctx.job_timeout, Duration::from_secs)
        .min(MAX_TIMEOUT);
    // The run's token dies with the run (`Ctx::job_live`); its `exp` only backs that up.
    let ttl = i64::try_from(limit.as_secs()).unwrap_or(i64::MAX).saturating_add(TOKEN_MARGIN_SECS);
    let token = crate::auth::job_token(&ctx.agents.keys, &ctx.agents.owner, &app, run_id, ttl)
        .map_err(|e| format!("No token could be made for the job: {e}"))?;
    let view = {
        let (data_dir, token, slug, dir, state) =
            (data_dir.clone(), token.clone(), app.slug.clone(), dir.clone(), state.clone());
        tokio::task::spawn_blocking(move || {
            let links = Links { app_id, slug: &slug, source: &dir, state: &state };
            View::create(&data_dir, run_id, &token, &links)
        })
        .await
        .map_err(|e| format!("The job's folder could not be made: {e}"))?
        .map_err(|e| format!("The job's folder could not be made: {e}"))?
    };
    let mut env = environment(ctx, schedule, view.path(), &state, token).await?;
    let path_var = env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone()).unwrap_or_default();
    // The CLIs' logins, for a job that runs `claude -p` or `codex exec` itself.
    let (cli_env, logins, packages) = ctx.agents.providers.job_clis();
    env.retain(|(k, _)| !cli_env.iter().any(|(c, _)| c == k));
    env.extend(cli_env);
    let clis = crate::agent::sandbox::JobClis { logins, packages };
    let sandbox = &ctx.agents.sandbox;
    let job_view = crate::agent::sandbox::JobView { root: view.path().to_path_buf(), writable: view.writable() };
    let rules = sandbox
        .ruleset(&sandbox.job_grants(&dir, &state, &job_view, &path_var, &clis))
        .map_err(|e| e.client_message().unwrap_or_else(|| e.to_string()))?;
    let bash = find_on_path("bash", &path_var).ok_or("bash is not installed on this server.")?;
    ctx.job_live(app_id, run_id, true);
    let spawned = process::spawn_job(
        &bash,
        &[job_path.display().to_string(), app_id.to_string()],
        &dir,
        &env,
        Some(ctx.agents.providers.trees()),
        rules,
        ctx.agents.providers.memory().prepare(),
    )
    .map_err(|e| {
        ctx.job_live(app_id, run_id, false);
        format!("The job {job_name} could not be started: {e}")
    })?;
    let logs = data_dir.join(LOG_DIR).join(schedule.id.to_string());
    {
        let logs = logs.clone();
        let _ = tokio::task::spawn_blocking(move || output::prune(&logs)).await;
    }
    let mut reader = tokio::spawn(output::capture(spawned.output, logs, run_id));
    let mut process = spawned.process;
    enum Ended {
        Exited(Option<std::process::ExitStatus>),
        TimedOut,
        Cancelled(String),
    }
    let ended = tokio::select! {
        status = process.wait() => Ended::Exited(status),
        () = tokio::time::sleep(limit) => Ended::TimedOut,
        why = &mut cancelled => Ended::Cancelled(why),
    };
    // The main process is done (or must be): what it left running holds the output open.
    let mut drained = None;
    let mut leftovers = false;
    if matches!(ended, Ended::Exited(_)) {
        match tokio::time::timeout(LEFTOVER_WAIT, &mut reader).await {
            Ok(result) => drained = Some(result),
            Err(_) => leftovers = true,
        }
    }
    process.terminate().await;
    // Nothing of the job runs any more: its token dies now.
    ctx.job_live(app_id, run_id, false);
    let drained = match drained {
        Some(result) => Some(result),
        None => tokio::time::timeout(DRAIN_WAIT, &mut reader).await.ok(),
    };
    let captured = match drained {
        Some(Ok(mut log)) => {
            // What it wrote under `$DATA_DIR/cron-logs/`, as the original's jobs do.
            let cron = tokio::task::spawn_blocking(move || {
                let cron = view.cron_logs();
                drop(view);
                cron
            })
            .await
            .unwrap_or_default();
            if !cron.is_empty() {
                log.write(&cron).await;
            }
            log.finish().await
        }
        _ => {
            reader.abort();
            output::Captured::default()
        }
    };
    let mut end = RunEnd {
        output: Some(captured.tail),
        output_bytes: i64::try_from(captured.total).unwrap_or(i64::MAX),
        has_log: captured.has_log,
        ended_at: ctx.clock.now_ms(),
        ..RunEnd::default()
    };
    let left = " It left processes running; they were killed with its group.";
    match ended {
        Ended::Exited(status) => {
            let code = status.and_then(|s| s.code());
            end.exit_code = code.map(i64::from);
            end.status = if code == Some(0) { "succeeded".into() } else { "failed".into() };
            let mut reason = match (code, status) {
                (Some(0), _) => String::new(),
                (Some(code), _) => format!("{job_name} exited with status {code}."),
                (None, Some(status)) => format!("{job_name} was ended by a signal ({status})."),
                (None, None) => format!("{job_name} ended without a status."),
            };
            if leftovers {
                reason.push_str(left);
            }
            end.reason = (!reason.trim().is_empty()).then(|| reason.trim().to_owned());
        }
        Ended::TimedOut => {
            end.status = "timed_out".into();
            end.reason =
                Some(format!("{job_name} ran longer than {}; it was killed with its process group.", human(limit)));
        }
        Ended::Cancelled(why) => {
            end.status = "cancelled".into();
            end.reason = Some(why);
        }
    }
    Ok(end)
}

/// The contract's environment: `PATH` (the agent's curated one), `LANG`, `LC_ALL`, `TZ`, `HOME`,
/// `DATA_DIR` (the run's view), `API_BASE_URL`, `CLAUDE_CONFIG_DIR`, `CODEX_HOME` (the connected CLIs' logins,
/// added by the caller with `Providers::job_clis`), `APP_TOKEN` (the run's token),
/// `APP_JOB_STATE_DIR`, `TMPDIR` (its `tmp/`); `TZ` is the schedule's zone and `HOME` the job's state folder (the
/// sandbox opens no other home). Its processes are found by their tree's label, not by
/// anything in this environment.
async fn environment(
    ctx: &Ctx,
    schedule: &ScheduleRow,
    view: &Path,
    state: &Path,
    token: String,
) -> Result<Vec<(String, String)>, String> {
    let agents = &ctx.agents;
    let (_, zone) = ctx.zone_for(schedule).await;
    let data_dir = view.display().to_string();
    let state = state.display().to_string();
    let mut env = vec![
        ("PATH".to_owned(), agents.providers.agent_path()),
        ("TZ".to_owned(), zone),
        ("HOME".to_owned(), state.clone()),
        ("DATA_DIR".to_owned(), data_dir),
        ("API_BASE_URL".to_owned(), ctx.api_url.clone()),
        ("APP_TOKEN".to_owned(), token),
        ("APP_JOB_STATE_DIR".to_owned(), state.clone()),
        // Scratch in the job's own folder: the CLIs a job runs write there (`/tmp` is shared).
        ("TMPDIR".to_owned(), format!("{state}/tmp")),
    ];
    for key in PASSED_ENV {
        if let Ok(value) = std::env::var(key) {
            env.push((key.to_owned(), value));
        }
    }
    Ok(env)
}

fn find_on_path(name: &str, path: &str) -> Option<PathBuf> {
    path.split(':')
        .filter(|d| d.starts_with('/'))
        .map(|d| Path::new(d).join(name))
        .chain([PathBuf::from("/bin").join(name), PathBuf::from("/usr/bin").join(name)])
        .find(|p| p.is_file())
}

/// "5 min" / "90 s".
fn human(d: Duration) -> String {
    if d.as_secs() >= 120 { format!("{} min", d.as_secs() / 60) } else { format!("{} s", d.as_secs()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_resolve_to_plain_files_in_the_folder() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("job.sh"), "echo hi").expect("job");
        std::fs::write(dir.path().join("build.sh"), "echo build").expect("build");
        assert_eq!(resolve_job(dir.path(), None).expect("fallback").0, "job.sh");
        assert_eq!(resolve_job(dir.path(), Some("build.sh")).expect("declared").0, "build.sh");
        assert_eq!(resolve_job(dir.path(), Some("missing.sh")).expect("falls back").0, "job.sh");
        assert!(resolve_job(dir.path(), Some("../other/job.sh")).expect_err("path").contains("bare file name"));
        std::os::unix::fs::symlink("/bin/sh", dir.path().join("fetch.sh")).expect("link");
        assert_eq!(resolve_job(dir.path(), None).expect("links never run").0, "job.sh");
        let empty = tempfile::tempdir().expect("tmp");
        assert!(resolve_job(empty.path(), None).expect_err("none").contains("no job script"));
    }
}
