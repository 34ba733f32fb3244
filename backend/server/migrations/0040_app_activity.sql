-- The activity log (issue 34): what apps and their jobs report through
-- `POST /api/admin/activity/emit` (the original's `cron_outcome` and the like). `app_id` NULL:
-- an owner-level entry. `data` is the emitted JSON object (bounded by the route); each app keeps
-- its newest entries only (the writer trims on append). Append-only: never edit once landed.

CREATE TABLE app_activity (
    id          INTEGER PRIMARY KEY,
    app_id      INTEGER REFERENCES apps (id) ON DELETE CASCADE,
    ev          TEXT    NOT NULL,
    data        TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
);

CREATE INDEX app_activity_by_app ON app_activity (app_id, id);
