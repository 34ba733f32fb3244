-- Web Push and the notification centre. Append-only: never edit this file once landed.

-- Browsers (devices) that receive pushes; one row per push endpoint.
CREATE TABLE push_subscriptions (
    id         INTEGER PRIMARY KEY,
    endpoint   TEXT    NOT NULL UNIQUE,
    p256dh     TEXT    NOT NULL,
    auth       TEXT    NOT NULL,
    -- What the owner sees in Settings ("Pixel 8 · Chrome").
    label      TEXT    NOT NULL DEFAULT '',
    -- The app whose token subscribed, when an app did.
    app_id     INTEGER,
    created_at INTEGER NOT NULL,
    -- The last push the push service accepted (unix ms).
    last_ok_at INTEGER
);

-- The notification centre: everything the owner was told, newest first.
CREATE TABLE notifications (
    id          TEXT    PRIMARY KEY,
    -- What produced it: turn_done, turn_failed, question, agent, app, schedule, test.
    kind        TEXT    NOT NULL,
    source_type TEXT    NOT NULL,
    source_id   TEXT,
    title       TEXT    NOT NULL,
    body        TEXT,
    icon        TEXT,
    target      TEXT,
    -- JSON array of {action, title, target?}.
    actions     TEXT,
    sent_at     INTEGER NOT NULL,
    clicked_at  INTEGER,
    read_at     INTEGER
);
CREATE INDEX notifications_recent ON notifications (sent_at DESC, id DESC);
CREATE INDEX notifications_unread ON notifications (sent_at) WHERE read_at IS NULL;

-- Per-kind switches (a missing row means on).
CREATE TABLE notification_prefs (
    kind    TEXT    PRIMARY KEY,
    enabled INTEGER NOT NULL
) WITHOUT ROWID;
