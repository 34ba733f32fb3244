-- Apps from the phone: update checks, the chat that resolves an update conflict, one-use
-- install passes for the standalone host, and the store's catalog indexes.
-- Append-only: never edit this file once landed.

-- The newest release the last update check saw at the app's source (a commit id, or for a
-- plain folder its tree id), when it checked, and why it could not.
ALTER TABLE apps ADD COLUMN update_commit TEXT;
ALTER TABLE apps ADD COLUMN update_checked_at INTEGER;
ALTER TABLE apps ADD COLUMN update_error TEXT;
-- The chat that resolves a conflicting update, and the release it resolves.
ALTER TABLE apps ADD COLUMN resolver_chat_id TEXT;
ALTER TABLE apps ADD COLUMN resolver_commit TEXT;

-- Catalog index URLs (a JSON list) the store reads; NULL means the default catalog.
ALTER TABLE owner ADD COLUMN catalog_indexes TEXT;

-- One-use passes that sign an installed home-screen app in once (iOS keeps its storage apart
-- from the browser's). `id` is the SHA-256 (hex) of the pass; the pass itself is never stored.
CREATE TABLE install_passes (
    id          TEXT    PRIMARY KEY,
    app_id      INTEGER NOT NULL,
    epoch       INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    consumed_at INTEGER
);
