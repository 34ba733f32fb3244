-- Issue 32: a run waiting for a free agent says so (`waiting_since`); and the chat whose agent
-- created a schedule, so an agent's token sees and removes only
-- its own chat's schedules (a `new_chat` schedule has no chat_id of its own), and the number of
-- schedules one chat's agent keeps is bounded. Append-only: never edit this file once landed.

ALTER TABLE schedules ADD COLUMN origin_chat_id TEXT REFERENCES chats (id) ON DELETE SET NULL;
-- Schedules the agent made before this migration came from the chat they run in.
UPDATE schedules SET origin_chat_id = chat_id WHERE created_by = 'agent' AND chat_id IS NOT NULL;
CREATE INDEX schedules_by_origin ON schedules (origin_chat_id) WHERE origin_chat_id IS NOT NULL;

-- A running run that has not started yet: as many agents run as the server allows (unix ms).
ALTER TABLE schedule_runs ADD COLUMN waiting_since INTEGER;
