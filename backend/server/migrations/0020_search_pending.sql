-- Imports index their messages after they are stored (issue 39): a document written with
-- `pending = 1` is stored but not yet in the FTS5 index; the writer moves pending documents into
-- the index in small transactions right after the import's commit (`db::search::index_pending`),
-- and search says it is still indexing meanwhile. Everything else (titles, a turn's messages)
-- is indexed in its own transaction, as before (`pending = 0`).
-- Append-only: never edit this file once landed.

ALTER TABLE chat_search_docs ADD COLUMN pending INTEGER NOT NULL DEFAULT 0;

CREATE INDEX chat_search_docs_pending ON chat_search_docs (id) WHERE pending = 1;

-- The triggers of 0010, taught that a pending document is not (yet) in the index.
DROP TRIGGER chat_search_docs_ai;
DROP TRIGGER chat_search_docs_ad;
DROP TRIGGER chat_search_docs_au;

CREATE TRIGGER chat_search_docs_ai AFTER INSERT ON chat_search_docs WHEN new.pending = 0 BEGIN
    INSERT INTO chat_search (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER chat_search_docs_ad AFTER DELETE ON chat_search_docs WHEN old.pending = 0 BEGIN
    INSERT INTO chat_search (chat_search, rowid, text) VALUES ('delete', old.id, old.text);
END;
-- An update takes out what the index held (if anything) and puts in what it should hold (if
-- anything): a text change of an indexed document, and a pending document being indexed.
CREATE TRIGGER chat_search_docs_au AFTER UPDATE ON chat_search_docs BEGIN
    INSERT INTO chat_search (chat_search, rowid, text) SELECT 'delete', old.id, old.text WHERE old.pending = 0;
    INSERT INTO chat_search (rowid, text) SELECT new.id, new.text WHERE new.pending = 0;
END;
