-- The drawer list in pages (issue 14): one partial index per section of the drawer, in its
-- order, holding only the chats it shows. A page is then a range scan from the cursor, the
-- same cost at 200 chats and at 100,000. The WHERE terms are written exactly as the queries
-- in `db/chat_list.rs` write them, so the planner can use these indexes.
-- Append-only: never edit this file once landed.

CREATE INDEX chats_drawer_pinned ON chats (pinned_at, activity_at DESC, id)
    WHERE deleted_at IS NULL AND pinned_at IS NOT NULL AND (app_id IS NULL OR owner_visible = 1);

CREATE INDEX chats_drawer_recent ON chats (activity_at DESC, id)
    WHERE deleted_at IS NULL AND pinned_at IS NULL AND (app_id IS NULL OR owner_visible = 1);
