-- Connectors (issue 36): remote MCP servers the owner added, brokered by the server so the
-- agent never holds their credential. `secret` is sealed under the data key (bound to the
-- connector's id, see `connectors::sealed_context`); `tools` is the JSON list the server read
-- at connect; `chats = 'chosen'` limits a connector to the chats in `chat_connectors`.
-- Append-only: never edit this file once landed.

CREATE TABLE connectors (
    id                  INTEGER PRIMARY KEY,
    name                TEXT    NOT NULL UNIQUE,
    url                 TEXT    NOT NULL,
    auth                TEXT    NOT NULL DEFAULT 'none',
    header_name         TEXT,
    secret              BLOB,
    chats               TEXT    NOT NULL DEFAULT 'all',
    read_only_auto      INTEGER NOT NULL DEFAULT 0,
    status              TEXT    NOT NULL DEFAULT 'pending',
    last_error          TEXT,
    tools               TEXT    NOT NULL DEFAULT '[]',
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL
);

CREATE TABLE chat_connectors (
    chat_id             TEXT    NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    connector_id        INTEGER NOT NULL REFERENCES connectors (id) ON DELETE CASCADE,
    PRIMARY KEY (chat_id, connector_id)
) WITHOUT ROWID;

CREATE INDEX chat_connectors_connector ON chat_connectors (connector_id);
