-- Agent runtime depth: the owner's default model and effort per provider, usage and the plan's
-- windows, automatic continuation, provider switch.

-- {"claude": {"model": "sonnet", "effort": "high"}, "codex": {...}}: what a chat without its
-- own pick runs with (a chat's pick lives in `chats.agent_settings`).
ALTER TABLE owner ADD COLUMN agent_defaults TEXT;

-- The plan's allowance windows each provider's CLI last reported (Claude's rate-limit events,
-- Codex's rate-limit updates): `windows` is a JSON list of protocol `PlanWindow`s.
CREATE TABLE provider_limits (
    provider   TEXT    PRIMARY KEY,
    windows    TEXT    NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- Automatic continuation: a chat parked on a usage limit (or cut by a restart) continues by
-- itself at `resume_at` (unix ms) with a hidden message; `resume_reason` says why
-- ('usage_limit' | 'restart'). `auto_resume` is the per-chat switch for usage limits.
ALTER TABLE chats ADD COLUMN auto_resume INTEGER NOT NULL DEFAULT 1;
ALTER TABLE chats ADD COLUMN resume_at INTEGER;
ALTER TABLE chats ADD COLUMN resume_reason TEXT;
CREATE INDEX chats_resume_due ON chats (resume_at) WHERE resume_at IS NOT NULL;

-- Provider switch and compaction: the handoff summary that seeds the chat's next session
-- (sent with the first turn that has no session yet), and the switch it came from (a retried
-- switch with the same id is answered from here).
ALTER TABLE chats ADD COLUMN handoff TEXT;
ALTER TABLE chats ADD COLUMN handoff_id TEXT;
