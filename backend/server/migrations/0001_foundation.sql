-- The owner, chats, their transcript, live message, queue, runs and the per-chat event journal.
-- Timestamps are INTEGER unix milliseconds. Append-only: never edit this file once landed.

CREATE TABLE owner (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    username        TEXT    NOT NULL,
    password_hash   TEXT    NOT NULL,
    token_epoch     INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);

CREATE TABLE chats (
    id                  TEXT    PRIMARY KEY,
    title               TEXT    NOT NULL DEFAULT 'New chat',
    title_locked        INTEGER NOT NULL DEFAULT 0,
    provider            TEXT,
    session_id          TEXT,
    agent_settings      TEXT,
    pending_question_id TEXT,
    -- head of the event journal: the seq of the newest event of this chat
    last_seq            INTEGER NOT NULL DEFAULT 0,
    message_count       INTEGER NOT NULL DEFAULT 0,
    pinned_at           INTEGER,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    activity_at         INTEGER NOT NULL,
    deleted_at          INTEGER
);
CREATE INDEX chats_by_activity ON chats (deleted_at, pinned_at, activity_at);

-- The settled transcript: one row per message, `body` is the message JSON as served.
CREATE TABLE chat_messages (
    chat_id TEXT    NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    idx     INTEGER NOT NULL,
    role    TEXT    NOT NULL,
    cid     TEXT,
    ts      INTEGER NOT NULL,
    body    TEXT    NOT NULL,
    PRIMARY KEY (chat_id, idx)
) WITHOUT ROWID;
CREATE UNIQUE INDEX chat_messages_by_cid ON chat_messages (chat_id, cid) WHERE cid IS NOT NULL;

-- The in-flight assistant message of a running turn, written as coalesced snapshots.
-- `upto_seq` is the journal seq the snapshot already reflects.
CREATE TABLE chat_live (
    chat_id    TEXT    PRIMARY KEY REFERENCES chats (id) ON DELETE CASCADE,
    run_id     TEXT    NOT NULL,
    body       TEXT    NOT NULL,
    upto_seq   INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- Messages sent while a turn runs, in `position` order.
CREATE TABLE chat_pending (
    chat_id    TEXT    NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    cid        TEXT    NOT NULL,
    position   INTEGER NOT NULL,
    body       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (chat_id, cid)
) WITHOUT ROWID;

-- One row per physical agent turn.
CREATE TABLE chat_runs (
    id                  TEXT    PRIMARY KEY,
    chat_id             TEXT    NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    status              TEXT    NOT NULL
        CHECK (status IN ('running', 'completed', 'failed', 'stopped', 'interrupted')),
    provider            TEXT,
    provider_session_id TEXT,
    cost_usd            REAL,
    input_tokens        INTEGER,
    output_tokens       INTEGER,
    cache_read_tokens   INTEGER,
    cache_write_tokens  INTEGER,
    usage               TEXT,
    error               TEXT,
    started_at          INTEGER NOT NULL,
    ended_at            INTEGER
);
CREATE INDEX chat_runs_by_chat ON chat_runs (chat_id, started_at);
-- At most one running turn per chat, enforced by the database itself.
CREATE UNIQUE INDEX chat_runs_one_running ON chat_runs (chat_id) WHERE status = 'running';

-- The durable per-chat event journal behind SSE replay (`Last-Event-ID`).
CREATE TABLE chat_events (
    chat_id    TEXT    NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    data       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (chat_id, seq)
) WITHOUT ROWID;
