-- Mini-apps: the registry of installed apps and the view state of the shell.
-- AUTOINCREMENT so an id is never reused after a purge (app tokens carry the id).

CREATE TABLE apps (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    slug             TEXT    NOT NULL UNIQUE,
    name             TEXT    NOT NULL,
    description      TEXT    NOT NULL DEFAULT '',
    version          TEXT    NOT NULL DEFAULT '',
    -- the validated mobius.json as accepted by the last successful apply
    manifest         TEXT    NOT NULL DEFAULT '{}',
    -- random per install; stamped into app tokens so a token never outlives its install
    token_nonce      TEXT    NOT NULL,
    bundle_sha       TEXT,
    source_commit    TEXT,
    upstream_commit  TEXT,
    -- where the app was installed from (a git URL or path), for updates
    source_url       TEXT,
    chat_id          TEXT,
    theme_color      TEXT,
    background_color TEXT,
    display          TEXT,
    offline_capable  INTEGER NOT NULL DEFAULT 0,
    -- storage sharing between apps: none | read | write
    cross_app_access TEXT    NOT NULL DEFAULT 'none',
    share_with_apps  TEXT    NOT NULL DEFAULT 'none',
    -- the manifest's full permissions object (JSON)
    permissions      TEXT    NOT NULL DEFAULT '{}',
    pinned_at        INTEGER,
    last_opened_at   INTEGER,
    -- the bundle the owner has already seen (drives the unseen-update badge)
    seen_sha         TEXT,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    deleted_at       INTEGER
);
CREATE INDEX apps_live ON apps (deleted_at, pinned_at, updated_at);
