-- GitHub (issue 36): the owner's connection (a fine-grained personal access token, sealed under
-- the data key like a connector's secret, and the account it belongs to), the repositories the
-- agent may use (`owner/name` or `owner/*`), and the agent's credential requests — granted or
-- refused — so the owner sees what the agent asked for. The token never leaves the server but
-- as the answer to a credential request for an allowed repository.
-- Append-only: never edit this file once landed.

CREATE TABLE github_account (
    id                  INTEGER PRIMARY KEY CHECK (id = 1),
    token               BLOB    NOT NULL,
    login               TEXT    NOT NULL,
    connected_at        INTEGER NOT NULL
);

CREATE TABLE github_repos (
    pattern             TEXT    NOT NULL PRIMARY KEY COLLATE NOCASE,
    added_at            INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE github_requests (
    id                  INTEGER PRIMARY KEY,
    chat_id             TEXT,
    host                TEXT    NOT NULL,
    repo                TEXT    NOT NULL,
    operation           TEXT    NOT NULL,
    outcome             TEXT    NOT NULL,
    created_at          INTEGER NOT NULL
);
