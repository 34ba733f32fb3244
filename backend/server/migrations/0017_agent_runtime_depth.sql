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
