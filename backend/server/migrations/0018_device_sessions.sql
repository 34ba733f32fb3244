-- Signed-in devices: each device row holds the session its owner token names (`sid`), where
-- it signed in from, and when. Revoking the row ends that session at once (the server keeps
-- the live session ids in memory). Rows without a session are devices known from an earlier
-- sign-in (their credential still skips the login limits).
ALTER TABLE owner_devices ADD COLUMN session_id TEXT;
ALTER TABLE owner_devices ADD COLUMN address TEXT NOT NULL DEFAULT '';
ALTER TABLE owner_devices ADD COLUMN signed_in_at INTEGER NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX owner_devices_session ON owner_devices (session_id) WHERE session_id IS NOT NULL;

-- Tokens issued before sessions existed name none: one row stands for all of them, so they
-- keep working after the update and can be signed out like a device.
INSERT INTO owner_devices (token_hash, label, created_at, last_used_at, session_id, signed_in_at)
SELECT 'legacy-sessions', 'Signed in before this version', created_at, updated_at, 'legacy', created_at
FROM owner;
