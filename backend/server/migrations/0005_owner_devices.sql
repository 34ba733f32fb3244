-- Devices the owner signed in from: each holds a long-lived credential (an HttpOnly cookie)
-- stored here only as its SHA-256. A known device signs in with the right password even while
-- the per-address and global login limits are tripped by an attack. "Sign out everywhere"
-- deletes every row.
CREATE TABLE owner_devices (
    id INTEGER PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    last_used_at INTEGER NOT NULL
);
