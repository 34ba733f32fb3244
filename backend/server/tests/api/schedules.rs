//! Schedules: app jobs (the original's routes, environment and token; bad jobs bounded, killed
//! and recorded), the manifest's schedule registered on apply, pausing after failures, and
//! scheduled agent turns and reminders coming back through the turn path.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, eventually, eventually_within, script, transcript};

/// Writes `apps/<slug>/<job>` (mode 0755 unless `executable` is false).
fn write_job(root: &Path, slug: &str, job: &str, body: &[u8]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = root.join("apps").join(slug);
    std::fs::create_dir_all(&dir).expect("app dir");
    let path = dir.join(job);
    std::fs::write(&path, body).expect("job");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

async fn json_of(r: reqwest::Response) -> Value {
    let status = r.status();
    let text = r.text().await.expect("body");
    assert!(status.is_success(), "{status}: {text}");
    serde_json::from_str(&text).expect("json")
}

/// Starts app `app_id`'s job (as the owner): `(schedule id, run id, status)`.
async fn run_job(app: &TestApp, token: &str, app_id: i64) -> (i64, i64, String) {
    let r = app.post(&format!("/api/apps/{app_id}/run-job"), json!({}), Some(token)).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    let body: Value = r.json().await.expect("json");
    assert!(body["started_at"].as_str().is_some_and(|s| s.ends_with('Z')), "{body}");
    (
        body["schedule_id"].as_i64().expect("schedule"),
        body["run_id"].as_i64().expect("run"),
        body["status"].as_str().expect("status").to_owned(),
    )
}

/// Waits until run `run` of schedule `schedule` has ended (60 s at most: a job's time limit
/// is part of some); answers it with its output.
async fn ended(app: &TestApp, token: &str, schedule: i64, run: i64) -> Value {
    eventually_within(Duration::from_secs(60), &format!("run {run} of schedule {schedule} ends"), || async {
        let r = json_of(app.get(&format!("/api/schedules/{schedule}/runs/{run}"), Some(token)).await).await;
        (r["status"] != "running").then_some(r)
    })
    .await
}

/// Waits until `pid` is gone (or a zombie); `what` names it when it is not.
async fn gone(pid: &str, what: &str) {
    eventually(what, || async {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
        (stat.is_empty() || stat.contains(") Z ")).then_some(())
    })
    .await
}

#[tokio::test]
async fn an_app_job_runs_with_the_contract_environment_and_writes_its_storage_with_the_job_token() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let (id, app_token) = app.register_app("notes").await;
    let (other, other_token) = app.register_app("other").await;
    let dir = app.data_dir().join("apps/notes");
    write_job(
        app.data_dir(),
        "notes",
        "fetch.sh",
        r#"#!/bin/bash
echo "cwd=$(pwd) arg=$1 state=$APP_JOB_STATE_DIR home=$HOME"
echo "agent-token=${MOBIUS_AGENT_TOKEN:-none} owner=${MOBIUS_OWNER_TOKEN:-none}"
test -d "$APP_JOB_STATE_DIR" && echo state-ok
curl -sS -f -X PUT -H "Authorization: Bearer $APP_TOKEN" -H 'Content-Type: application/json' \
  --data '{"snapshot":"taken"}' "$API_BASE_URL/api/storage/apps/$1/snapshots/latest.json" && echo stored
echo "to stderr" >&2
# The original's habits: the service-token file and logs under $DATA_DIR/cron-logs.
test "$(cat "$DATA_DIR/service-token.txt")" = "$APP_TOKEN" && echo token-file-ok
cp "$DATA_DIR/service-token.txt" "$APP_JOB_STATE_DIR/kept-token"
test -e "$DATA_DIR/secret.key" || echo no-secret-in-view
test -d "$DATA_DIR/apps/notes" && test "$DATA_DIR/apps/$1/job-state" -ef "$APP_JOB_STATE_DIR" && echo view-links-ok
echo "$DATA_DIR" > "$APP_JOB_STATE_DIR/view"
mkdir -p "$DATA_DIR/cron-logs/notes" && echo "from the cron log" > "$DATA_DIR/cron-logs/notes/fetch.log"
curl -sS -o /dev/null -w 'other-app=%{http_code}\n' -H "Authorization: Bearer $(cat "$DATA_DIR/service-token.txt")" \
  "$API_BASE_URL/api/storage/apps/OTHER/x.json"
"#
        .replace("OTHER", &other.to_string())
        .as_bytes(),
    );
    let (schedule, run, status) = run_job(&app, &token, id).await;
    assert_eq!(status, "running");
    let done = ended(&app, &token, schedule, run).await;
    let output = done["output"].as_str().unwrap_or_default();
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["exit_code"], 0);
    assert_eq!(done["trigger"], "manual");
    let state = app.data_dir().join(format!("apps/{id}/job-state"));
    assert!(output.contains(&format!("cwd={} arg={id} state={}", dir.display(), state.display())), "{output}");
    assert!(output.contains("agent-token=none owner=none") && output.contains("state-ok"), "{output}");
    assert!(output.contains("stored") && output.contains("to stderr"), "{output}");
    // Its DATA_DIR is the run's view: the token file holds the run's own token, which is 403
    // on another app's routes; the job's cron log is in the run's output; the view is gone.
    for said in ["token-file-ok", "no-secret-in-view", "view-links-ok", "other-app=403"] {
        assert!(output.contains(said), "{said}: {output}");
    }
    assert!(output.contains("--- $DATA_DIR/cron-logs/notes/fetch.log ---\nfrom the cron log\n"), "{output}");
    let view = std::fs::read_to_string(state.join("view")).expect("view");
    assert!(view.trim().starts_with(&app.data_dir().join("run/jobs").display().to_string()), "{view}");
    assert!(!Path::new(view.trim()).exists(), "the view goes with its run");
    // The token died with the run.
    let kept = std::fs::read_to_string(state.join("kept-token")).expect("kept token");
    let r = app.get(&format!("/api/storage/apps/{id}/snapshots/latest.json"), Some(kept.trim())).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "token_revoked").await;
    let stored = json_of(app.get(&format!("/api/storage/apps/{id}/snapshots/latest.json"), Some(&token)).await).await;
    assert_eq!(stored["snapshot"], "taken");
    // The full log is kept too.
    let log = app.get(&format!("/api/schedules/{schedule}/runs/{run}/log"), Some(&token)).await;
    assert_eq!(log.status(), StatusCode::OK);
    assert!(log.text().await.expect("log").contains("stored"));

    // The app itself may run its job and read its context; another app may not.
    let r = app.post(&format!("/api/apps/{id}/run-job"), json!({}), Some(&other_token)).await;
    assert_eq!(
        assert_error(r, StatusCode::FORBIDDEN, "forbidden").await["message"],
        "App token can only run its own job."
    );
    let context = json_of(app.get(&format!("/api/apps/{id}/job-context"), Some(&app_token)).await).await;
    assert_eq!(context["app_id"], id);
    assert_eq!(context["source_dir"], dir.display().to_string());
    assert!(context["capability_contract"].is_object() && context["primary"].is_null(), "{context}");
    let r = app.get(&format!("/api/apps/{other}/job-context"), Some(&app_token)).await;
    assert_error(r, StatusCode::FORBIDDEN, "forbidden").await;
    // No job script: 400; no app: 404.
    let r = app.post(&format!("/api/apps/{other}/run-job"), json!({}), Some(&token)).await;
    assert_error(r, StatusCode::BAD_REQUEST, "no_job").await;
    for id in ["999", "abc"] {
        let r = app.post(&format!("/api/apps/{id}/run-job"), json!({}), Some(&token)).await;
        assert_error(r, StatusCode::NOT_FOUND, "app_not_found").await;
    }
    // A job token for a runner: owner only, 2 hours, and it works on the app's storage.
    let minted = json_of(app.post("/api/auth/app-job-token", json!({ "app_id": id }), Some(&token)).await).await;
    assert_eq!(minted["expires_in"], 7200);
    let job_token = minted["token"].as_str().expect("token");
    let r = app.get(&format!("/api/storage/apps/{id}/snapshots/latest.json"), Some(job_token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let r = app.post("/api/auth/app-job-token", json!({ "app_id": id }), Some(&app_token)).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let r = app.post("/api/auth/app-job-token", json!({ "app_id": 999 }), Some(&token)).await;
    assert_error(r, StatusCode::NOT_FOUND, "app_not_found").await;
}

#[tokio::test]
async fn bad_jobs_are_bounded_killed_with_their_group_and_recorded_and_nothing_else_is_affected() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| c.job_timeout = Duration::from_secs(3)).await;
    let token = app.setup_owner().await;
    let (loud, _) = app.register_app("loud").await;
    let (stuck, _) = app.register_app("stuck").await;
    let (forks, _) = app.register_app("forks").await;
    let (garbage, _) = app.register_app("garbage").await;
    let (fine, _) = app.register_app("fine").await;
    write_job(app.data_dir(), "loud", "job.sh", b"head -c 3000000 /dev/zero | tr '\\0' 'x'; echo; echo END\n");
    write_job(app.data_dir(), "stuck", "job.sh", b"sleep 300 &\necho $! > \"$APP_JOB_STATE_DIR/pid\"\nwait\n");
    write_job(
        app.data_dir(),
        "forks",
        "job.sh",
        b"sleep 300 &\necho $! > \"$APP_JOB_STATE_DIR/child\"\n( setsid sleep 300 & echo $! > \"$APP_JOB_STATE_DIR/escapee\" )\necho bye\n",
    );
    write_job(app.data_dir(), "garbage", "job.sh", b"\x7fELF\x02\x01\x01\x00\x00\x00garbage\x00\x01\x02");
    write_job(app.data_dir(), "fine", "job.sh", b"echo fine\n");
    // One at a time per app: a second start while the first runs is recorded as skipped.
    let (stuck_schedule, stuck_run, status) = run_job(&app, &token, stuck).await;
    assert_eq!(status, "running");
    let (_, skipped_run, skipped) = run_job(&app, &token, stuck).await;
    assert_eq!(skipped, "skipped");
    let skipped = ended(&app, &token, stuck_schedule, skipped_run).await;
    assert_eq!(skipped["reason"], "Skipped: the previous run is still going.");
    let mut runs = Vec::new();
    for id in [loud, forks, garbage, fine] {
        let (s, r, status) = run_job(&app, &token, id).await;
        assert_eq!(status, "running");
        runs.push((id, s, r));
    }
    let mut results = std::collections::HashMap::new();
    for (id, s, r) in &runs {
        results.insert(*id, (*s, ended(&app, &token, *s, *r).await));
    }

    let (loud_schedule, loud_run) = &results[&loud];
    assert_eq!(loud_run["status"], "succeeded");
    assert!(loud_run["output_bytes"].as_i64().expect("bytes") > 3_000_000);
    let tail = loud_run["output"].as_str().expect("output");
    assert!(tail.len() <= 64 * 1024 && tail.ends_with("END\n"), "{} bytes", tail.len());
    let log = app.get(&format!("/api/schedules/{loud_schedule}/runs/{}/log", loud_run["id"]), Some(&token)).await;
    let log = log.bytes().await.expect("log");
    assert!(log.len() <= 2 * 1024 * 1024 && log.ends_with(b"END\n"), "{} bytes of log", log.len());

    let (_, forked) = &results[&forks];
    assert_eq!(forked["status"], "succeeded", "{forked}");
    assert!(forked["reason"].as_str().is_some_and(|r| r.contains("left processes running")), "{forked}");
    for name in ["child", "escapee"] {
        let pid = std::fs::read_to_string(app.data_dir().join(format!("apps/{forks}/job-state/{name}"))).expect("pid");
        gone(&pid, &format!("the job's {name} {pid} ends with it")).await;
    }

    let (_, garbage_run) = &results[&garbage];
    assert_eq!(garbage_run["status"], "failed");
    assert_eq!(garbage_run["exit_code"], 126, "{garbage_run}");
    assert!(garbage_run["output"].as_str().is_some_and(|o| o.contains("cannot execute")), "{garbage_run}");

    let (_, fine_run) = &results[&fine];
    assert_eq!(fine_run["status"], "succeeded");
    assert_eq!(fine_run["output"], "fine\n");

    // The job that never exits stops at its time limit, killed with its group.
    let timed_out = ended(&app, &token, stuck_schedule, stuck_run).await;
    assert_eq!(timed_out["status"], "timed_out", "{timed_out}");
    assert!(timed_out["reason"].as_str().is_some_and(|r| r.contains("ran longer than 3 s")), "{timed_out}");
    let pid = std::fs::read_to_string(app.data_dir().join(format!("apps/{stuck}/job-state/pid"))).expect("pid");
    gone(&pid, &format!("the stuck job's sleep {pid} ends at its time limit")).await;
    // A limit is an app job's, within bounds.
    let r = app.patch_json(&format!("/api/schedules/{stuck_schedule}"), json!({ "timeout_secs": 0 }), &token).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_timeout").await;
    let r = app.patch_json(&format!("/api/schedules/{stuck_schedule}"), json!({ "timeout_secs": 60 }), &token).await;
    assert_eq!(json_of(r).await["timeout_secs"], 60);
    assert_eq!(app.get("/api/health", None).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn five_failures_in_a_row_pause_the_schedule_and_tell_the_owner() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let (id, _) = app.register_app("flaky").await;
    write_job(app.data_dir(), "flaky", "job.sh", b"echo broken >&2; exit 3\n");
    let mut schedule = 0;
    for _ in 0..5 {
        let (s, run, _) = run_job(&app, &token, id).await;
        schedule = s;
        let done = ended(&app, &token, s, run).await;
        assert_eq!((done["status"].as_str(), done["exit_code"].as_i64()), (Some("failed"), Some(3)));
    }
    let row = json_of(app.get(&format!("/api/schedules/{schedule}"), Some(&token)).await).await;
    assert!(row["paused_at"].is_i64(), "{row}");
    assert!(row["paused_reason"].as_str().is_some_and(|r| r.contains("5 failed runs in a row")), "{row}");
    assert_eq!(row["failures"], 5);
    // The owner was told: four failures, then the pause.
    let titles: Vec<Value> = eventually("five schedule notifications", || async {
        let list = json_of(app.get("/api/notifications?limit=20", Some(&token)).await).await;
        let titles: Vec<Value> = list
            .as_array()
            .expect("list")
            .iter()
            .filter(|n| n["kind"] == "schedule")
            .map(|n| n["title"].clone())
            .collect();
        (titles.len() >= 5).then_some(titles)
    })
    .await;
    assert_eq!(titles.first(), Some(&json!("flaky paused")), "{titles:?}");
    assert_eq!(titles.iter().filter(|t| *t == "flaky failed").count(), 4, "{titles:?}");
    // Resuming clears the count.
    let resumed =
        json_of(app.patch_json(&format!("/api/schedules/{schedule}"), json!({ "paused": false }), &token).await).await;
    assert!(resumed["paused_at"].is_null() && resumed["failures"] == 0, "{resumed}");
}

const MANIFEST: &str = r#"{"id":"brief","name":"Morning Brief","version":"0.1.0","description":"A brief.","entry":"index.jsx",
  "schedule":{"default":"30 7 * * 1-5","job":"job.sh","user_configurable":false}}"#;

#[tokio::test]
async fn the_manifest_schedule_registers_on_apply_keeps_an_override_and_goes_with_the_app() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let dir = app.data_dir().join("apps/brief");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("mobius.json"), MANIFEST).expect("manifest");
    std::fs::write(dir.join("index.jsx"), "export default function App() { return <p>brief</p>; }\n").expect("index");
    write_job(app.data_dir(), "brief", "job.sh", b"echo brief\n");
    let applied = json_of(app.post("/api/apps/apply", json!({ "slug": "brief" }), Some(&token)).await).await;
    let id = applied["app"]["id"].as_i64().expect("id");
    let warnings = applied["warnings"].to_string();
    assert!(!warnings.contains("schedule"), "{warnings}");
    let listed = json_of(app.get("/api/apps/schedules", Some(&token)).await).await;
    assert_eq!(listed[0]["id"], id);
    assert_eq!(listed[0]["cron"], "30 7 * * 1-5");
    assert_eq!(listed[0]["job"], "job.sh");
    let schedule = listed[0]["schedule_id"].as_i64().expect("schedule id");
    // Planned by the scheduler soon after the apply.
    let row = eventually("the scheduler plans the schedule", || async {
        let row = json_of(app.get(&format!("/api/schedules/{schedule}"), Some(&token)).await).await;
        row["next_due_at"].is_i64().then_some(row)
    })
    .await;
    assert!(row["next_due_at"].as_i64().is_some_and(|d| d > 0) && row["cadence_editable"] == false, "{row}");
    let listed = json_of(app.get("/api/apps/schedules", Some(&token)).await).await;
    assert!(
        listed[0]["next_run"].as_str().is_some_and(|n| n.ends_with(":30:00Z") || n.ends_with(":00:00Z")),
        "{listed}"
    );
    // The owner cannot change what the app fixes; the app can, and an apply keeps it.
    let r = app.patch_json(&format!("/api/schedules/{schedule}"), json!({ "cron": "0 8 * * *" }), &token).await;
    assert_error(r, StatusCode::FORBIDDEN, "not_configurable").await;
    let app_token =
        json_of(app.post("/api/auth/app-token", json!({ "app_id": id }), Some(&token)).await).await["token"]
            .as_str()
            .expect("token")
            .to_owned();
    let set = app
        .post(
            &format!("/api/apps/{id}/schedule"),
            json!({ "cron": "0 6 * * *", "job": "job.sh", "timezone": "Europe/Paris" }),
            Some(&app_token),
        )
        .await;
    let set = json_of(set).await;
    assert_eq!(
        set,
        json!({ "cron": "0 6 * * *", "job": "job.sh", "timezone": "Europe/Paris", "zone_cron": "0 6 * * *" })
    );
    std::fs::write(dir.join("index.jsx"), "export default function App() { return <p>brief 2</p>; }\n").expect("index");
    json_of(app.post("/api/apps/apply", json!({ "slug": "brief" }), Some(&token)).await).await;
    let listed = json_of(app.get("/api/apps/schedules", Some(&app_token)).await).await;
    assert_eq!((listed[0]["cron"].as_str(), listed[0]["timezone"].as_str()), (Some("0 6 * * *"), Some("Europe/Paris")));
    // Bad input on the app's route: located, or refused.
    for (body, code) in [
        (json!({ "cron": "0 25 * * *" }), "invalid_cron"),
        (json!({ "cron": "0 7 * * MON" }), "invalid_cron"),
        (json!({ "cron": "0 7 * * *", "job": "../other/job.sh" }), "invalid_job"),
        (json!({ "cron": "0 7 * * *", "job": "missing.sh" }), "job_not_found"),
        (json!({ "cron": "0 7 * * *", "job": "job.sh", "timezone": "Mars/Olympus" }), "invalid_timezone"),
    ] {
        let r = app.post(&format!("/api/apps/{id}/schedule"), body.clone(), Some(&app_token)).await;
        let err = assert_error(r, StatusCode::BAD_REQUEST, code).await;
        if code == "invalid_cron" {
            assert!(err["message"].as_str().is_some_and(|m| m.starts_with("cron › field")), "{err}");
        }
    }
    let r = app.delete_with(&format!("/api/schedules/{schedule}"), &token).await;
    assert_error(r, StatusCode::CONFLICT, "app_job_schedule").await;
    // Uninstalled, the app's job is neither listed nor due.
    let r = app.delete_with(&format!("/api/apps/{id}"), &token).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(json_of(app.get("/api/apps/schedules", Some(&token)).await).await, json!([]));
    let all = json_of(app.get("/api/schedules", Some(&token)).await).await;
    assert_eq!(all["schedules"], json!([]));
}

/// A Claude imitation: asked to remind, it runs `mobius remind --in 1s water the plants` (the
/// real binary, with the turn's environment); a reminder turn is answered like any other.
fn reminding_claude(dir: &Path) -> PathBuf {
    let mobius = env!("CARGO_BIN_EXE_mobius");
    script(
        dir,
        "fake-claude-remind",
        &format!(
            r#"IFS= read -r init
IFS= read -r user
sid="s-$MOBIUS_CHAT_ID"
printf '{{"type":"system","subtype":"init","session_id":"%s"}}\n' "$sid"
case "$user" in
  *"remind me"*) said=$("{mobius}" remind --in 1s water the plants 2>&1 | tr -d '"\n') ;;
  *) said="reminded: done" ;;
esac
printf '{{"type":"assistant","message":{{"id":"m1","content":[{{"type":"text","text":"%s"}}]}},"session_id":"%s"}}\n' "$said" "$sid"
printf '{{"type":"result","subtype":"success","is_error":false,"session_id":"%s"}}\n' "$sid"
cat >/dev/null"#
        ),
    )
}

async fn agent_app(bin: impl FnOnce(&Path) -> PathBuf) -> (TestApp, String) {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let bin = bin(dir.path());
    let app = TestApp::spawn_in(dir, |c| {
        c.claude_bin = bin;
        c.agent_start_timeout = Duration::from_secs(10);
    })
    .await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    (app, token)
}

#[tokio::test]
async fn a_reminder_the_agent_sets_comes_back_as_a_turn_in_its_chat() {
    let (app, token) = agent_app(reminding_claude).await;
    app.chat(&token, "c1").await;
    app.send(&token, "c1", "please remind me in a second", "m1").await;
    // The reminder's turn: a user row from the scheduler, answered in the same chat.
    let messages = eventually("the reminder's turn ends", || async {
        let messages = transcript(&app, &token, "c1").await;
        (messages.len() >= 4 && !app.detail(&token, "c1").await["running"].as_bool().unwrap_or(true))
            .then_some(messages)
    })
    .await;
    assert_eq!(messages.len(), 4, "{messages:#?}");
    assert!(messages[1].content.contains("reminder #"), "the CLI said: {}", messages[1].content);
    let reminder = &messages[2];
    assert!(reminder.cid.as_deref().is_some_and(|c| c.starts_with("schedule-")), "{reminder:?}");
    assert_eq!(reminder.content, "Reminder (you set it earlier in this chat): water the plants");
    assert_eq!(messages[3].content, "reminded: done");
    let all = json_of(app.get("/api/schedules", Some(&token)).await).await;
    let row = &all["schedules"][0];
    assert_eq!(
        (row["kind"].as_str(), row["created_by"].as_str(), row["chat_id"].as_str()),
        (Some("agent_turn"), Some("agent"), Some("c1"))
    );
    assert!(row["finished_at"].is_i64() && row["next_due_at"].is_null(), "{row}");
    // The scheduler closes its run when it hears the turn's end, just after the chat settles.
    let runs = eventually("the reminder's schedule run closes", || async {
        let runs = json_of(app.get(&format!("/api/schedules/{}/runs", row["id"]), Some(&token)).await).await;
        (runs["runs"][0]["status"] != "running").then_some(runs)
    })
    .await;
    let run = &runs["runs"][0];
    assert_eq!((run["status"].as_str(), run["chat_id"].as_str()), (Some("succeeded"), Some("c1")), "{run}");
    assert!(run["run_id"].is_string());
    let detail =
        json_of(app.get(&format!("/api/schedules/{}/runs/{}", row["id"], run["id"]), Some(&token)).await).await;
    assert_eq!(detail["output"], "reminded: done");
}

#[tokio::test]
async fn a_scheduled_prompt_runs_now_in_a_new_chat_and_bad_schedules_are_refused() {
    let (app, token) = agent_app(|d| crate::chats::fake_claude(d, "0", 1)).await;
    let made = app
        .post(
            "/api/schedules",
            json!({ "name": "Morning brief", "prompt": "Summarise my day", "cron": "30 7 * * 1-5", "new_chat": true }),
            Some(&token),
        )
        .await;
    assert_eq!(made.status(), StatusCode::CREATED);
    let made: Value = made.json().await.expect("json");
    let id = made["id"].as_i64().expect("id");
    assert_eq!(
        (made["kind"].as_str(), made["cron"].as_str(), made["chat_id"].is_null()),
        (Some("agent_turn"), Some("30 7 * * 1-5"), true)
    );
    // The list (built by SQLite as JSON) and the single schedule (serialised here) agree, once
    // the scheduler has planned it.
    let one = eventually("the scheduler plans the schedule", || async {
        let one = json_of(app.get(&format!("/api/schedules/{id}"), Some(&token)).await).await;
        one["next_due_at"].is_i64().then_some(one)
    })
    .await;
    let listed = json_of(app.get("/api/schedules", Some(&token)).await).await;
    assert_eq!(listed["schedules"][0], one);
    let started = json_of(app.post(&format!("/api/schedules/{id}/run"), json!({}), Some(&token)).await).await;
    assert_eq!(started["status"], "running");
    let run = ended(&app, &token, id, started["run_id"].as_i64().expect("run")).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let chat = run["chat_id"].as_str().expect("a new chat");
    let chat_detail = app.detail(&token, chat).await;
    assert_eq!(chat_detail["title"], "Morning brief");
    let messages = transcript(&app, &token, chat).await;
    assert_eq!(messages[0].content, "Summarise my day");
    assert_eq!(messages[1].content, format!("reply for {chat}"));
    for (body, code) in [
        (json!({ "prompt": "x", "cron": "0 7 * *", "new_chat": true }), "invalid_cron"),
        (json!({ "prompt": "x", "cron": "61 * * * *", "new_chat": true }), "invalid_cron"),
        (json!({ "prompt": "x", "cron": "0 0 30 2 *", "new_chat": true }), "invalid_cron"),
        (
            json!({ "prompt": "x", "cron": "0 7 * * *", "timezone": "Nowhere/Zone", "new_chat": true }),
            "invalid_timezone",
        ),
        (json!({ "prompt": "x", "cron": "0 7 * * *", "at": "07:30", "new_chat": true }), "invalid_schedule"),
        (json!({ "prompt": "x", "at": "2001-01-01T00:00:00Z", "new_chat": true }), "invalid_time"),
        (json!({ "prompt": "x", "in": "soon", "new_chat": true }), "invalid_time"),
        (json!({ "prompt": " ", "cron": "0 7 * * *", "new_chat": true }), "invalid_prompt"),
        (json!({ "prompt": "x", "cron": "0 7 * * *" }), "invalid_chat"),
    ] {
        let r = app.post("/api/schedules", body.clone(), Some(&token)).await;
        let err = assert_error(r, StatusCode::BAD_REQUEST, code).await;
        assert!(err["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}: {err}");
    }
    let r = app
        .post("/api/schedules", json!({ "prompt": "x", "cron": "0 7 * * *", "chat_id": "nope" }), Some(&token))
        .await;
    assert_error(r, StatusCode::NOT_FOUND, "chat_not_found").await;
    let located = app
        .post("/api/schedules", json!({ "prompt": "x", "cron": "0 25 * * *", "new_chat": true }), Some(&token))
        .await;
    let located = assert_error(located, StatusCode::BAD_REQUEST, "invalid_cron").await;
    assert!(located["message"].as_str().is_some_and(|m| m.contains("field 2 (hour) \"25\"")), "{located}");
    // The owner's zone is a setting; a bad one is refused.
    let r = app.put_json("/api/schedules/timezone", json!({ "timezone": "Pacific/Auckland" }), &token).await;
    assert_eq!(json_of(r).await["zone"], "Pacific/Auckland");
    let r = app.put_json("/api/schedules/timezone", json!({ "timezone": "Atlantis/Capital" }), &token).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_timezone").await;
    let r = app.delete_with(&format!("/api/schedules/{id}"), &token).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let r = app.get(&format!("/api/schedules/{id}"), Some(&token)).await;
    assert_error(r, StatusCode::NOT_FOUND, "schedule_not_found").await;
}

#[tokio::test]
async fn with_landlock_a_job_reaches_its_own_folders_and_nothing_else_of_the_data_dir() {
    if mobius_sys::landlock::abi_version().is_err() {
        eprintln!("this kernel has no Landlock; jobs run unconfined there (Settings says so)");
        return;
    }
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| c.agent_sandbox = true).await;
    let token = app.setup_owner().await;
    let (id, _) = app.register_app("probe").await;
    app.register_app("neighbour").await;
    write_job(app.data_dir(), "neighbour", "job.sh", b"echo neighbour\n");
    write_job(
        app.data_dir(),
        "probe",
        "job.sh",
        r#"probe() { if cat "$1" >/dev/null 2>&1; then echo "READ:$2"; else echo "DENIED:$2"; fi; }
D="REAL"
probe "$D/secret.key" secret
probe "$DATA_DIR/secret.key" secret-in-view
probe "$DATA_DIR/../../secret.key" secret-above-view
probe "$D/db/mobius.sqlite3" db
probe "$D/apps/neighbour/job.sh" neighbour
probe ./job.sh own
probe "$DATA_DIR/apps/probe/job.sh" own-in-view
probe "$DATA_DIR/service-token.txt" token-file
if echo x > "$APP_JOB_STATE_DIR/w"; then echo WROTE-STATE; fi
if (echo x > ./w) 2>/dev/null; then echo WROTE-SOURCE; else echo SOURCE-READ-ONLY; fi
if (echo x > "$DATA_DIR/w") 2>/dev/null; then echo WROTE-VIEW; else echo VIEW-READ-ONLY; fi
if echo x > "$DATA_DIR/cron-logs/w.log"; then echo WROTE-CRON-LOG; fi
"#
        .replace("REAL", &app.data_dir().display().to_string())
        .as_bytes(),
    );
    let (schedule, run, _) = run_job(&app, &token, id).await;
    let done = ended(&app, &token, schedule, run).await;
    let output = done["output"].as_str().unwrap_or_default();
    assert!(
        output.starts_with(
            "DENIED:secret\nDENIED:secret-in-view\nDENIED:secret-above-view\nDENIED:db\nDENIED:neighbour\n\
             READ:own\nREAD:own-in-view\nREAD:token-file\nWROTE-STATE\nSOURCE-READ-ONLY\nVIEW-READ-ONLY\n\
             WROTE-CRON-LOG\n\n--- $DATA_DIR/cron-logs/w.log ---\nx\n"
        ),
        "{done}"
    );
}

/// The job's `PATH` is the agent's curated one: the tools on it run inside the sandbox, where a
/// version manager's shim on the server's `PATH` (`~/.pyenv/shims/python3`) would die with
/// "Permission denied" on its own files.
#[tokio::test]
async fn with_landlock_a_jobs_tools_run_from_its_curated_path() {
    if mobius_sys::landlock::abi_version().is_err() {
        eprintln!("this kernel has no Landlock; jobs run unconfined there (Settings says so)");
        return;
    }
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| c.agent_sandbox = true).await;
    let token = app.setup_owner().await;
    let (id, _) = app.register_app("tools").await;
    write_job(
        app.data_dir(),
        "tools",
        "job.sh",
        b"echo \"PATH=$PATH\"\npython3 -c 'print(6 * 7)'\necho '{\"a\":[1,2]}' | jq -c '.a | length'\n",
    );
    let (schedule, run, _) = run_job(&app, &token, id).await;
    let done = ended(&app, &token, schedule, run).await;
    let output = done["output"].as_str().expect("output");
    let path = output.lines().next().and_then(|l| l.strip_prefix("PATH=")).expect("the PATH line");
    for dir in ["/usr/local/bin", "/usr/bin", "/bin"] {
        assert!(path.split(':').any(|d| d == dir), "{dir} is on the job's PATH: {path}");
    }
    assert!(!path.split(':').any(|d| d.contains("shims") || d.contains(".pyenv")), "no shims: {path}");
    assert!(output.contains("\n42\n"), "python3 ran in the sandbox: {done}");
    assert!(output.ends_with("\n2\n"), "jq ran in the sandbox: {done}");
    assert_eq!(done["status"], "succeeded", "{done}");
}

#[tokio::test]
async fn a_server_killed_while_a_job_runs_closes_the_run_and_kills_the_job_at_the_next_boot() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_process(dir, &[("MOBIUS_AGENT_SANDBOX", "off".into())]).await;
    let token = app.setup_owner().await;
    let (id, _) = app.register_app("sleepy").await;
    write_job(app.data_dir(), "sleepy", "job.sh", b"sleep 300 &\necho $! > \"$APP_JOB_STATE_DIR/pid\"\nwait\n");
    let (schedule, run, _) = run_job(&app, &token, id).await;
    let pid_file = app.data_dir().join(format!("apps/{id}/job-state/pid"));
    let pid = eventually("the job starts", || async {
        std::fs::read_to_string(&pid_file).ok().filter(|pid| !pid.trim().is_empty())
    })
    .await;
    // A reminder due while the server is down fires once when it is back (late: a catch-up).
    app.chat(&token, "c").await;
    let made =
        app.post("/api/schedules", json!({ "prompt": "while down", "in": "1s", "chat_id": "c" }), Some(&token)).await;
    assert_eq!(made.status(), StatusCode::CREATED);
    let reminder = made.json::<Value>().await.expect("json")["id"].as_i64().expect("id");
    let dir = app.kill9();
    // allow-sleep: the reminder must come due while the server is down; the time passing is the test.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let app = TestApp::spawn_process(dir, &[("MOBIUS_AGENT_SANDBOX", "off".into())]).await;
    let token = crate::helpers::token_of(
        app.post(
            "/api/auth/token",
            json!({ "username": crate::helpers::USERNAME, "password": crate::helpers::PASSWORD }),
            None,
        )
        .await,
    )
    .await;
    let closed = ended(&app, &token, schedule, run).await;
    assert_eq!(closed["status"], "interrupted");
    assert_eq!(closed["reason"], "The server restarted while it ran.");
    gone(&pid, &format!("the job's process {pid} ends with the server")).await;
    let runs = eventually("the missed reminder fires and ends", || async {
        let runs = json_of(app.get(&format!("/api/schedules/{reminder}/runs"), Some(&token)).await).await;
        let runs = runs["runs"].as_array().cloned().unwrap_or_default();
        runs.iter().any(|r| r["status"] != "running").then_some(runs)
    })
    .await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    // No agent is connected here: the run fails, and says why.
    assert_eq!(runs[0]["status"], "failed");
    assert!(runs[0]["reason"].as_str().is_some_and(|r| r.contains("connected")), "{runs:?}");
}

/// A Claude imitation that marks when its turn started (`$HOME/started-<chat>`) and holds it
/// while `$HOME/hold-<chat>` exists.
fn holding_claude(dir: &Path) -> PathBuf {
    script(
        dir,
        "fake-claude-hold",
        r#"IFS= read -r init
IFS= read -r user
touch "$HOME/started-$MOBIUS_CHAT_ID"
printf '{"type":"system","subtype":"init","session_id":"s-%s"}\n' "$MOBIUS_CHAT_ID"
while [ -f "$HOME/hold-$MOBIUS_CHAT_ID" ]; do sleep 0.05; done
printf '{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"done"}]},"session_id":"s-%s"}\n' "$MOBIUS_CHAT_ID"
printf '{"type":"result","subtype":"success","is_error":false,"session_id":"s-%s"}\n' "$MOBIUS_CHAT_ID"
cat >/dev/null"#,
    )
}

/// Waits until `check` holds ([`eventually`]).
async fn until<F: std::future::Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    eventually(what, || {
        let holds = check();
        async move { holds.await.then_some(()) }
    })
    .await;
}

#[tokio::test]
async fn a_flood_of_scheduled_work_waits_its_share_and_the_owners_turns_go_first() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let bin = holding_claude(dir.path());
    // Two agents at once: one of them for scheduled turns and app jobs.
    let app = TestApp::spawn_in(dir, |c| {
        c.claude_bin = bin;
        c.agent_start_timeout = Duration::from_secs(10);
        c.agent_max_running = 2;
    })
    .await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    let home = app.data_dir().join("agent-home");
    std::fs::create_dir_all(&home).expect("home");
    for chat in ["a", "b", "s1", "s2"] {
        app.chat(&token, chat).await;
        std::fs::write(home.join(format!("hold-{chat}")), "").expect("hold");
    }
    let started = |chat: &str| home.join(format!("started-{chat}")).exists();

    app.send(&token, "a", "the owner's first", "a1").await;
    until("a's turn started", || async { started("a") }).await;
    let mut schedules = Vec::new();
    for chat in ["s1", "s2"] {
        let made = app
            .post(
                "/api/schedules",
                json!({ "prompt": "scheduled", "cron": "0 3 * * *", "chat_id": chat }),
                Some(&token),
            )
            .await;
        schedules.push(json_of(made).await["id"].as_i64().expect("id"));
    }
    let mut runs = Vec::new();
    for id in &schedules {
        let r = json_of(app.post(&format!("/api/schedules/{id}/run"), json!({}), Some(&token)).await).await;
        runs.push(r["run_id"].as_i64().expect("run"));
    }
    until("s1's turn started", || async { started("s1") }).await;
    // s2 waits: the one background slot is s1's. Its chat, its run and the list say so.
    until("s2 waiting", || async { app.detail(&token, "s2").await["waiting"] == json!({ "busy": 1, "limit": 1 }) })
        .await;
    let mut stream = app.stream(&token, "s2", Some(0)).await;
    let events = stream.until("waiting", 10).await;
    assert_eq!(events.last().expect("waiting").data["busy"], 1);
    let list = json_of(app.get("/api/schedules", Some(&token)).await).await;
    let row =
        |id: i64| list["schedules"].as_array().expect("list").iter().find(|s| s["id"] == id).cloned().expect("row");
    assert_eq!(
        (row(schedules[0])["waiting"].as_bool(), row(schedules[1])["waiting"].as_bool()),
        (Some(false), Some(true))
    );
    let run = json_of(app.get(&format!("/api/schedules/{}/runs/{}", schedules[1], runs[1]), Some(&token)).await).await;
    assert!(run["waiting_since"].is_i64() && run["status"] == "running", "{run}");
    assert!(!started("s2"), "no process starts while it waits");
    // An app job is background work too: it waits behind s2.
    let (app_id, _) = app.register_app("ticker").await;
    write_job(app.data_dir(), "ticker", "job.sh", b"echo ticked\n");
    let (job_schedule, job_run, _) = run_job(&app, &token, app_id).await;
    until("the job waiting", || async {
        json_of(app.get(&format!("/api/schedules/{job_schedule}/runs/{job_run}"), Some(&token)).await).await["waiting_since"]
            .is_i64()
    })
    .await;

    // The owner's second turn finds both slots taken and waits too, but goes first.
    app.send(&token, "b", "the owner's second", "b1").await;
    until("b waiting", || async { app.detail(&token, "b").await["waiting"] == json!({ "busy": 2, "limit": 2 }) }).await;
    let slots = json_of(app.get("/api/settings", Some(&token)).await).await["agent_slots"].clone();
    assert_eq!(slots, json!({ "max": 2, "background_max": 1, "running": 2, "background_running": 1, "waiting": 3 }));
    std::fs::remove_file(home.join("hold-a")).expect("release a");
    until("b's turn started", || async { started("b") }).await;
    assert!(app.detail(&token, "b").await["waiting"].is_null());
    assert!(!started("s2"), "the owner went first although s2 waited longer");

    // A waiting turn is stopped like any other, before anything started.
    let stop: Value =
        app.post("/api/chat/stop", json!({ "chat_id": "s2" }), Some(&token)).await.json().await.expect("stop");
    assert_eq!(stop["stopped"], true, "{stop}");
    until("s2's run closed", || async {
        json_of(app.get(&format!("/api/schedules/{}/runs/{}", schedules[1], runs[1]), Some(&token)).await).await["status"]
            == "cancelled"
    })
    .await;
    assert!(!started("s2"));
    // s1 ends: the job, next in line, runs.
    std::fs::remove_file(home.join("hold-s1")).expect("release s1");
    let done = ended(&app, &token, job_schedule, job_run).await;
    assert_eq!((done["status"].as_str(), done["output"].as_str()), (Some("succeeded"), Some("ticked\n")), "{done}");
    assert!(done["waiting_since"].is_null());
    std::fs::remove_file(home.join("hold-b")).expect("release b");
    until("all idle", || async {
        json_of(app.get("/api/settings", Some(&token)).await).await["agent_slots"]["running"] == 0
    })
    .await;
}
