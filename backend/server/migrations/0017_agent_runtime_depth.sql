-- Agent runtime depth: the owner's default model and effort per provider, usage and the plan's
-- windows, automatic continuation, provider switch.

-- {"claude": {"model": "sonnet", "effort": "high"}, "codex": {...}}: what a chat without its
-- own pick runs with (a chat's pick lives in `chats.agent_settings`).
ALTER TABLE owner ADD COLUMN agent_defaults TEXT;
