-- Agent runtime: per-chat settings, stored system prompts, full tool outputs, owner defaults.

ALTER TABLE owner ADD COLUMN default_provider TEXT;

-- 'full' lets the agent use every tool; 'ask' turns each permission request into a card.
ALTER TABLE chats ADD COLUMN approval_policy TEXT NOT NULL DEFAULT 'full'
    CHECK (approval_policy IN ('full', 'ask'));
ALTER TABLE chats ADD COLUMN system_prompt_id TEXT;
-- Tools the owner allowed "for this chat" from an approval card (JSON array of names).
ALTER TABLE chats ADD COLUMN allowed_tools TEXT;

-- System prompts, content-addressed: id = sha256(content). Later turns reuse the exact bytes.
CREATE TABLE system_prompts (
    id         TEXT    PRIMARY KEY,
    content    TEXT    NOT NULL,
    created_at INTEGER NOT NULL
);

-- Full text of tool outputs too large to send inline.
CREATE TABLE tool_outputs (
    chat_id     TEXT    NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    tool_use_id TEXT    NOT NULL,
    content     TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (chat_id, tool_use_id)
) WITHOUT ROWID;
