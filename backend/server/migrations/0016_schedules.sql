-- Schedules (issue 19): app jobs and scheduled agent turns, fired by the in-process scheduler
-- (`schedules/`), with a history of runs. Append-only: never edit this file once landed.

CREATE TABLE schedules (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    -- app_job: an app's job script; agent_turn: a prompt sent into a chat (or a new chat).
    kind              TEXT    NOT NULL CHECK (kind IN ('app_job', 'agent_turn')),
    name              TEXT    NOT NULL,
    -- Recurring cadence: 5 cron fields. NULL for a one-off (run_at) or an on-demand job.
    cron              TEXT,
    -- A one-off's time (unix ms).
    run_at            INTEGER,
    -- IANA zone the cadence is read in; NULL: the owner's (owner.timezone, else the server's).
    timezone          TEXT,
    -- app_job: the app, its job file (a bare name in the app's folder; NULL: the contract's
    -- fallbacks), and the manifest's default cadence and user_configurable.
    app_id            INTEGER REFERENCES apps (id) ON DELETE CASCADE,
    job               TEXT,
    manifest_cron     TEXT,
    user_configurable INTEGER NOT NULL DEFAULT 0,
    -- agent_turn: the chat (NULL: a new chat each run) and the prompt.
    chat_id           TEXT    REFERENCES chats (id) ON DELETE CASCADE,
    prompt            TEXT,
    -- owner, agent, app (its own /schedule route) or manifest.
    created_by        TEXT    NOT NULL,
    -- After downtime: run_once (one catch-up run) or skip.
    missed            TEXT    NOT NULL DEFAULT 'run_once' CHECK (missed IN ('run_once', 'skip')),
    -- A job's time limit; NULL: the default (5 min).
    timeout_secs      INTEGER,
    paused_at         INTEGER,
    paused_reason     TEXT,
    -- Failed runs in a row (5 pause the schedule).
    failures          INTEGER NOT NULL DEFAULT 0,
    -- When it is due next (unix ms). NULL while paused, finished, on demand, or not planned
    -- yet (the scheduler plans rows with a cadence and no due time).
    next_due_at       INTEGER,
    -- A one-off that has fired.
    finished_at       INTEGER,
    last_run_at       INTEGER,
    last_status       TEXT,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
);
-- One job schedule per app (the contract's one crontab line per app).
CREATE UNIQUE INDEX schedules_app_job ON schedules (app_id) WHERE kind = 'app_job';
-- What the scheduler sleeps on: the earliest due time.
CREATE INDEX schedules_due ON schedules (next_due_at) WHERE next_due_at IS NOT NULL;
CREATE INDEX schedules_by_chat ON schedules (chat_id) WHERE chat_id IS NOT NULL;

CREATE TABLE schedule_runs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    schedule_id  INTEGER NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    -- schedule (on time), catch_up (after downtime), manual (run now), install.
    trigger      TEXT    NOT NULL,
    -- The due time it answers (NULL for a manual run).
    due_at       INTEGER,
    started_at   INTEGER NOT NULL,
    ended_at     INTEGER,
    status       TEXT    NOT NULL CHECK (status IN
        ('running', 'succeeded', 'failed', 'timed_out', 'skipped', 'interrupted', 'cancelled')),
    exit_code    INTEGER,
    -- Why it was skipped, failed or interrupted, in words.
    reason       TEXT,
    -- The last 64 KiB of the output; the full log is DATA_DIR/schedule-logs/<schedule>/<run>.log.
    output       TEXT,
    output_bytes INTEGER NOT NULL DEFAULT 0,
    has_log      INTEGER NOT NULL DEFAULT 0,
    -- agent_turn: the chat and run it became.
    chat_id      TEXT,
    run_id       TEXT
);
CREATE INDEX schedule_runs_recent ON schedule_runs (schedule_id, id DESC);
CREATE INDEX schedule_runs_running ON schedule_runs (schedule_id) WHERE status = 'running';

-- The owner's time zone (IANA); NULL: the server's (TZ).
ALTER TABLE owner ADD COLUMN timezone TEXT;
