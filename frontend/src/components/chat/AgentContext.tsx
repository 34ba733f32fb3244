//! "What the agent was given": the chat's info sheet shows, read-only, what a turn of this chat
//! is given — the pinned system prompt, the memory and app context in it, the handoff summary,
//! the model and effort, the connectors and the sandbox — as `GET /api/chats/{id}/context`
//! answers it (masked of anything that looks like a key). Fetched only when opened.

import { useQuery } from "@tanstack/react-query";
import { useEffect, useId, useRef, useState } from "react";
import { chatContextKey, fetchChatContext } from "../../api/chats";
import { ApiError } from "../../api/client";
import type { ContextText } from "../../api/protocol.gen";

const errorText = (error: unknown) => (error instanceof ApiError ? error.message : "Something went wrong.");

/** A text block, with a line saying when it was cut. */
function Shown({ text, label }: { text: ContextText; label: string }) {
  return (
    <>
      <pre className="tool-pre agent-context-text" aria-label={label}>
        {text.text}
      </pre>
      {text.cut && (
        <p className="field-hint">
          Cut here: the whole text is {text.chars.toLocaleString()} characters.
        </p>
      )}
    </>
  );
}

export function AgentContextSection({ chatId }: { chatId: string }) {
  const [open, setOpen] = useState(false);
  const bodyId = useId();
  const context = useQuery({
    queryKey: chatContextKey(chatId),
    queryFn: ({ signal }) => fetchChatContext(chatId, signal),
    enabled: open,
    staleTime: 0,
    retry: false,
  });
  const c = context.data;
  const body = useRef<HTMLDivElement>(null);
  // Opened at the foot of a long sheet: bring what was asked for into view.
  useEffect(() => {
    if (open && c) body.current?.scrollIntoView?.({ block: "start", behavior: "smooth" });
  }, [open, c]);
  return (
    <div className="setting-stack" data-agent-context>
      <h3 className="review-section">
        <button type="button" className="btn btn-secondary btn-small" aria-expanded={open} aria-controls={bodyId} onClick={() => setOpen((o) => !o)}>
          What the agent was given
        </button>
      </h3>
      {open && (
        <div id={bodyId} ref={body} className="setting-stack" role="region" aria-label="What the agent was given">
          {context.isPending && <p role="status">Loading…</p>}
          {context.isError && (
            <p className="settings-error" role="alert">
              Couldn't load it: {errorText(context.error)}
            </p>
          )}
          {c && (
            <>
              <p className="settings-lead">Read-only. Anything that looks like a key or a token is shown as [redacted].</p>
              <h4 className="field-label">Model</h4>
              <p className="settings-lead" data-context-model>
                {c.provider === "codex" ? "Codex" : c.provider === "claude" ? "Claude" : "No provider yet"} · {c.model ?? "the CLI's default model"} ·{" "}
                {c.effort ? `${c.effort} effort` : "default effort"}
              </p>
              <h4 className="field-label">Connectors</h4>
              {c.connectors.length === 0 ? (
                <p className="field-hint">None: this chat's turns get no connector.</p>
              ) : (
                <ul className="skill-list">
                  {c.connectors.map((k) => (
                    <li key={k.id} className="skill">
                      <span className="skill-name">{k.name}</span>
                      <span className="skill-detail">
                        {k.auto_approved.length === 0 ? "every call asks first" : `${k.auto_approved.length} read-only tools run without asking`}
                      </span>
                    </li>
                  ))}
                </ul>
              )}
              <h4 className="field-label">Sandbox</h4>
              <p className="settings-lead" data-context-sandbox={c.sandbox.mode}>
                {c.sandbox.mode === "landlock"
                  ? `On: Landlock (ABI ${c.sandbox.abi})${c.sandbox.signals.mode === "open" ? `; signals not contained: ${c.sandbox.signals.reason}` : ""}.`
                  : `Off: ${c.sandbox.reason}. The agent can read every file the server can.`}
              </p>
              <p className="field-hint">
                Reads and writes: {c.read_write.join(", ")}
                {c.read.length > 0 ? ` · reads: ${c.read.join(", ")}` : ""} (in the data folder), plus its home and scratch folders.
              </p>
              {c.handoff && (
                <>
                  <h4 className="field-label">Summary it {c.handoff_pending ? "will start" : "started"} from</h4>
                  <Shown text={c.handoff} label="Handoff summary" />
                </>
              )}
              {c.app_context && (
                <>
                  <h4 className="field-label">App context</h4>
                  <pre className="tool-pre agent-context-text" aria-label="App context">
                    {c.app_context}
                  </pre>
                </>
              )}
              <h4 className="field-label">Memory and notes</h4>
              {c.memory ? <Shown text={c.memory} label="Memory" /> : <p className="field-hint">Memory was off: no memory or notes were given.</p>}
              <h4 className="field-label">System prompt</h4>
              <p className="field-hint">
                {c.pinned ? "Pinned when the chat's first turn started; every turn gets it unchanged." : "Not pinned yet: the first turn starts with this."}
              </p>
              <Shown text={c.system_prompt} label="System prompt" />
            </>
          )}
        </div>
      )}
    </div>
  );
}
