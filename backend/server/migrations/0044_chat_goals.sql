-- The goal pinned at the top of a chat (issue 37): set by a `/goal <words>` message, its plan
-- followed from the agent's plan updates, removed when every step is done or the owner
-- dismisses it. `body` is the pin as the chat detail serves it (a `GoalPin` as JSON). One a
-- chat; it goes with the chat when the chat is purged. Append-only: never edit once landed.

CREATE TABLE chat_goals (
    chat_id     TEXT    PRIMARY KEY REFERENCES chats (id) ON DELETE CASCADE,
    body        TEXT    NOT NULL,
    updated_at  INTEGER NOT NULL
);
