-- Connectors (issue 36): how the server is spoken to, found at connect — `streamable` (MCP's
-- streamable HTTP) or `sse` (the legacy HTTP+SSE transport of 2024-11-05, for servers that
-- only speak that; the broker bridges it, the CLI always sees streamable HTTP).
-- Append-only: never edit this file once landed.

ALTER TABLE connectors ADD COLUMN transport TEXT NOT NULL DEFAULT 'streamable'
    CHECK (transport IN ('streamable', 'sse'));
