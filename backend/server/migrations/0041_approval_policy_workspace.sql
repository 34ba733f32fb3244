-- The `workspace` approval policy (edits in the chat's workspace go ahead, the rest asks) was
-- refused by the column's CHECK, written when only `full` and `ask` existed: saving it failed.
-- SQLite cannot change a CHECK in place, so the column is replaced by one that admits it (same
-- name, same default, values kept); the old one goes with its constraint.
ALTER TABLE chats ADD COLUMN approval_policy_v2 TEXT NOT NULL DEFAULT 'full'
    CHECK (approval_policy_v2 IN ('full', 'workspace', 'ask'));
UPDATE chats SET approval_policy_v2 = approval_policy;
ALTER TABLE chats DROP COLUMN approval_policy;
ALTER TABLE chats RENAME COLUMN approval_policy_v2 TO approval_policy;
