-- Chat files (issue 17): what the owner attached to a chat (`upload`) and the images the agent
-- published into it (`media`). The bytes live under `DATA_DIR/uploads/<chat>/` (`files/`,
-- `media/`, `previews/`); a row exists only for a file that is complete on disk. `size` counts
-- against the uploads quota (the sum of every row). Rows go with their chat's purge; the
-- housekeeping removes the folder.
-- Append-only: never edit this file once landed.

CREATE TABLE chat_files (
    chat_id    TEXT    NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    kind       TEXT    NOT NULL CHECK (kind IN ('upload', 'media')),
    name       TEXT    NOT NULL,
    mime_type  TEXT    NOT NULL,
    size       INTEGER NOT NULL,
    width      INTEGER,
    height     INTEGER,
    preview    INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (chat_id, kind, name)
) WITHOUT ROWID;
