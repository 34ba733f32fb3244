-- An import no longer writes its search documents in its own transaction (issue 39): it records
-- the range of messages it stored here, and the writer builds their documents from the stored
-- messages after the commit, a few hundred per transaction (`db::search::index_backlog`). Search
-- says it is still indexing while a range waits; a note turn reads a waiting range's words from
-- the messages themselves (`db::notes::transcript_since`). Replaces the pending documents of 0020.
-- Append-only: never edit this file once landed.

CREATE TABLE chat_search_backlog (
    id       INTEGER PRIMARY KEY,
    chat_id  TEXT    NOT NULL UNIQUE REFERENCES chats (id) ON DELETE CASCADE,
    -- The first message still without a document, and one past the last.
    next_idx INTEGER NOT NULL,
    end_idx  INTEGER NOT NULL
);

-- Documents an earlier build stored pending (an import that committed just before it stopped)
-- enter the index now; nothing stores pending documents any more.
UPDATE chat_search_docs SET pending = 0 WHERE pending = 1;
DROP INDEX chat_search_docs_pending;
