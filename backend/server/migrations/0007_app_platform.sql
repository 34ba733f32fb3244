-- The original platform's app services: app secrets, app-attributed chats and embedded-chat
-- grants/sessions. Append-only: never edit this file once landed.

-- Secrets an app may check and replace but never read back; sealed (ChaCha20-Poly1305) with a
-- key derived from the server secret, bound to (app, name).
CREATE TABLE app_secrets (
    app_id     INTEGER NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    name       TEXT    NOT NULL,
    sealed     BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (app_id, name)
) WITHOUT ROWID;

-- Chats an app created (`/api/app-chats`): hidden from the owner's drawer unless owner_visible.
ALTER TABLE chats ADD COLUMN app_id INTEGER;
ALTER TABLE chats ADD COLUMN owner_visible INTEGER NOT NULL DEFAULT 1;
ALTER TABLE chats ADD COLUMN scope TEXT;
ALTER TABLE chats ADD COLUMN scope_label TEXT;
CREATE INDEX chats_by_app ON chats (app_id, activity_at) WHERE app_id IS NOT NULL;

-- One-use grants an app mints for its nested chat frame, and the session each one became.
-- `id` is the SHA-256 (hex) of the grant; the grant itself is never stored.
CREATE TABLE chat_embed_grants (
    id                 TEXT    PRIMARY KEY,
    app_id             INTEGER NOT NULL,
    app_nonce          TEXT    NOT NULL,
    chat_id            TEXT    NOT NULL,
    instance_id        TEXT    NOT NULL,
    epoch              INTEGER NOT NULL,
    created_at         INTEGER NOT NULL,
    expires_at         INTEGER NOT NULL,
    consumed_at        INTEGER,
    revoked_at         INTEGER,
    session_expires_at INTEGER
);
CREATE INDEX chat_embed_grants_by_instance ON chat_embed_grants (app_id, instance_id);
