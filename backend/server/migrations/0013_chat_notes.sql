-- Chat notes and the owner's memory switch (issue 20).
-- A chat's note: a digest of one to three lines and a running summary, written by a short
-- tool-less background turn after the chat has been idle (`recall/`), or by the owner from
-- the chat's info sheet. `source_count` is how many transcript messages the note covers, so
-- the next note turn summarises only what came after. Notes go with their chat's purge.
-- Append-only: never edit this file once landed.

CREATE TABLE chat_notes (
    chat_id      TEXT    PRIMARY KEY REFERENCES chats (id) ON DELETE CASCADE,
    digest       TEXT    NOT NULL,
    summary      TEXT    NOT NULL,
    source_count INTEGER NOT NULL,
    by_owner     INTEGER NOT NULL DEFAULT 0,
    updated_at   INTEGER NOT NULL
) WITHOUT ROWID;

-- New chats' prompts carry recent digests and the owner's memory file unless this is 0.
ALTER TABLE owner ADD COLUMN memory_enabled INTEGER NOT NULL DEFAULT 1;
