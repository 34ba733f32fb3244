-- Published pages (issue 35 item 5): one read-only copy of an app at `/sites/<token>/`.
-- The token itself is never stored in the clear: `token_hash` (SHA-256, hex) is what a request
-- is looked up by, and `token_sealed` (sealed under the data key) is the owner's copy of the link.
-- `generation` names the folder `DATA_DIR/published/<generation>/` holding the copied module
-- and, for a snapshot, the copied data; a republish writes a new generation and keeps the token.
CREATE TABLE published_sites (
    id           INTEGER PRIMARY KEY,
    app_id       INTEGER NOT NULL UNIQUE REFERENCES apps (id) ON DELETE CASCADE,
    token_hash   TEXT    NOT NULL UNIQUE,
    token_sealed BLOB    NOT NULL,
    live         INTEGER NOT NULL DEFAULT 0,
    generation   INTEGER NOT NULL UNIQUE,
    bundle_sha   TEXT    NOT NULL,
    bytes        INTEGER NOT NULL,
    files        INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
