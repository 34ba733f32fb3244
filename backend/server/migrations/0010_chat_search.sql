-- Full-text search over chat titles, the owner's messages and the agent's text (issue 20).
-- One document per searchable thing: a chat's title (idx -1) or one transcript message
-- (idx = chat_messages.idx). The writer keeps the documents in the transaction that changes
-- what they index (`db/search.rs`); the triggers below keep the FTS5 index in step with them.
-- Tool inputs and outputs, thinking, questions, errors and hidden messages are not indexed.
-- Append-only: never edit this file once landed.

CREATE TABLE chat_search_docs (
    id      INTEGER PRIMARY KEY,
    chat_id TEXT    NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    idx     INTEGER NOT NULL,
    ts      INTEGER NOT NULL,
    text    TEXT    NOT NULL,
    UNIQUE (chat_id, idx)
);

-- External content: the text lives once, in chat_search_docs; snippet() reads it from there.
CREATE VIRTUAL TABLE chat_search USING fts5 (
    text,
    content = 'chat_search_docs',
    content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER chat_search_docs_ai AFTER INSERT ON chat_search_docs BEGIN
    INSERT INTO chat_search (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER chat_search_docs_ad AFTER DELETE ON chat_search_docs BEGIN
    INSERT INTO chat_search (chat_search, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER chat_search_docs_au AFTER UPDATE ON chat_search_docs BEGIN
    INSERT INTO chat_search (chat_search, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO chat_search (rowid, text) VALUES (new.id, new.text);
END;

-- Back-fill, oldest first (document ids follow time, and results are served newest id first).
-- The same rules as `db::search::document_text`: a user message's words unless hidden, an
-- assistant message's text blocks joined by a newline; U+0002/U+0003 (the snippet marks)
-- dropped; at most 20,000 characters; blank documents skipped; default titles skipped.
INSERT INTO chat_search_docs (chat_id, idx, ts, text)
SELECT chat_id, idx, ts, text FROM (
    SELECT id AS chat_id, -1 AS idx, created_at AS ts, title AS text
    FROM chats
    WHERE NOT (title = 'New chat' AND title_locked = 0)
    UNION ALL
    SELECT chat_id, idx, ts,
           substr(replace(replace(text, char(2), ''), char(3), ''), 1, 20000) AS text
    FROM (
        SELECT m.chat_id, m.idx, m.ts,
               CASE m.role
                   WHEN 'user' THEN
                       CASE WHEN coalesce(json_extract(m.body, '$.hidden'), 0) THEN NULL
                            ELSE json_extract(m.body, '$.content') END
                   WHEN 'assistant' THEN
                       (SELECT group_concat(json_extract(b.value, '$.content'), char(10))
                        FROM json_each(m.body, '$.blocks') AS b
                        WHERE CASE WHEN b.type = 'object'
                                   THEN json_extract(b.value, '$.type') = 'text'
                                        AND json_type(b.value, '$.content') = 'text'
                                        AND json_extract(b.value, '$.content') <> ''
                              END)
               END AS text
        FROM chat_messages AS m
        WHERE json_valid(m.body)
    )
    WHERE typeof(text) = 'text'
)
WHERE trim(text, ' ' || char(9, 10, 11, 12, 13)) <> ''
ORDER BY ts, chat_id, idx;
