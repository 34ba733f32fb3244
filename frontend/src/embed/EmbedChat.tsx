//! The nested chat frame an app embeds (`mobius.chat`): it waits for the app's INIT, trades the
//! one-use grant for its own short session (held in memory only, sent with its instance header),
//! shows the ordinary chat view for that one chat, and tells the app when it is ready, when a
//! message went out, when a turn finished, when its session is about to end, and what failed.

import { useEffect, useRef, useState } from "react";
import { sendMessage } from "../api/chats";
import { onUnauthorized, setRequestHeader } from "../api/client";
import { writeToken } from "../auth/token";
import { notifyChatEvent, onChatEvent, sendContext, setSendContext } from "../chat/events";
import { newCid } from "../chat/queue";
import { CHAT_EMBED, type ChatEmbedType } from "../apps/messages";
import { ChatView } from "../components/chat/ChatView";
import { appStateBlock, asInit, sessionMatches, TurnGate, warnIn, type InitMessage } from "./protocol";

/** How long a send waits for the app's context. */
const CONTEXT_WAIT_MS = 250;

const INSTANCE_HEADER = "X-Mobius-Embed-Instance";

function toParent(message: { type: ChatEmbedType } & Record<string, unknown>): void {
  window.parent.postMessage(message, "*");
}

interface Live {
  chatId: string;
  instanceId: string;
  picker: boolean;
  guidance: string;
  quickActions: { label: string; prompt: string }[];
}

/** Asks the app for its context (`context-request`) and waits briefly for the answer. */
function askContext(instanceId: string): Promise<string | null> {
  const nonce = newCid();
  return new Promise((resolve) => {
    const done = (value: string | null) => {
      clearTimeout(timer);
      window.removeEventListener("message", onAnswer);
      resolve(value);
    };
    const onAnswer = (event: MessageEvent) => {
      const msg = event.data as { type?: unknown; instanceId?: unknown; nonce?: unknown; context?: unknown } | null;
      if (event.source !== window.parent || !msg || msg.type !== CHAT_EMBED.contextResponse) return;
      if (msg.instanceId !== instanceId || msg.nonce !== nonce) return;
      done(appStateBlock(msg.context));
    };
    const timer = setTimeout(() => done(null), CONTEXT_WAIT_MS);
    window.addEventListener("message", onAnswer);
    toParent({ type: CHAT_EMBED.contextRequest, instanceId, nonce });
  });
}

/** A quick action sends its prompt as the owner's next message (with the app's context). */
async function quick(chatId: string, prompt: string): Promise<void> {
  const context = await sendContext(chatId);
  try {
    await sendMessage(chatId, { content: prompt, cid: newCid(), ...(context ? { agent_context: context } : {}) });
    notifyChatEvent(chatId, "message_sent");
  } catch {
    // The chat view shows the connection state; the chip can be pressed again.
  }
}

export function EmbedChat() {
  const [live, setLive] = useState<Live | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const current = useRef<Live | null>(null);
  const expiryTimer = useRef<ReturnType<typeof setTimeout> | null>(null);

  useEffect(() => {
    const gate = new TurnGate();
    let exchanging: string | null = null;

    const warnExpiring = () => {
      const now = current.current;
      if (now) toParent({ type: CHAT_EMBED.authExpiring, instanceId: now.instanceId, chatId: now.chatId });
    };

    const exchange = async (init: InitMessage) => {
      if (exchanging === init.authorizationId) return;
      exchanging = init.authorizationId;
      const refresh = current.current !== null;
      try {
        const response = await fetch("/api/app-chat-embeds/session", {
          method: "POST",
          headers: { Authorization: `Bearer ${init.bootstrapCapability}`, "Content-Type": "application/json" },
          body: JSON.stringify({ instance_id: init.instanceId }),
        });
        const session: unknown = await response.json().catch(() => null);
        if (!response.ok || !sessionMatches(session, init)) {
          const code = (session as { code?: string } | null)?.code ?? `http_${response.status}`;
          throw new Error(code);
        }
        writeToken(session.token);
        setRequestHeader(INSTANCE_HEADER, init.instanceId);
        const next = {
          chatId: init.chatId,
          instanceId: init.instanceId,
          picker: init.picker,
          guidance: init.guidance ?? "",
          quickActions: init.guidance ? [] : (init.quickActions ?? []),
        };
        current.current = next;
        setLive((prev) => (prev && prev.chatId === next.chatId && prev.instanceId === next.instanceId ? { ...prev, ...next, guidance: next.guidance || prev.guidance } : next));
        setProblem(null);
        if (expiryTimer.current) clearTimeout(expiryTimer.current);
        expiryTimer.current = setTimeout(warnExpiring, warnIn(session.expires_at, Date.now()));
        toParent({ type: CHAT_EMBED.ready, instanceId: init.instanceId, chatId: init.chatId, authorizationId: init.authorizationId });
      } catch (error) {
        if (!refresh) setProblem("This chat could not connect. It will try again.");
        toParent({
          type: CHAT_EMBED.error,
          instanceId: init.instanceId,
          chatId: init.chatId,
          error: error instanceof Error ? error.message : "authorization failed",
          phase: "authorization",
          authorizationId: init.authorizationId,
          refresh,
        });
      } finally {
        exchanging = null;
      }
    };

    const onMessage = (event: MessageEvent) => {
      if (event.source !== window.parent) return;
      const init = asInit(event.data);
      if (init) {
        if (current.current && current.current.instanceId !== init.instanceId) return;
        void exchange(init);
        return;
      }
      const msg = event.data as { type?: unknown; instanceId?: unknown; guidance?: unknown } | null;
      if (msg && msg.type === CHAT_EMBED.guidance && msg.instanceId === current.current?.instanceId && typeof msg.guidance === "string") {
        const guidance = msg.guidance.slice(0, 300);
        setLive((prev) => (prev ? { ...prev, guidance } : prev));
      }
    };

    const stopEvents = onChatEvent((chatId, type) => {
      const now = current.current;
      if (!now || chatId !== now.chatId) return;
      if (type === "message_sent") {
        gate.sent();
        toParent({ type: CHAT_EMBED.messageSent, instanceId: now.instanceId, chatId });
      } else if (type === "done" && gate.done()) {
        toParent({ type: CHAT_EMBED.turnDone, instanceId: now.instanceId, chatId });
      }
    });
    // A request that finds the session gone asks the app for a new grant.
    const stopUnauthorized = onUnauthorized(() => warnExpiring());
    setSendContext(async () => (current.current ? askContext(current.current.instanceId) : null));

    window.addEventListener("message", onMessage);
    toParent({ type: CHAT_EMBED.bootstrapReady });
    return () => {
      window.removeEventListener("message", onMessage);
      stopEvents();
      stopUnauthorized();
      setSendContext(null);
      if (expiryTimer.current) clearTimeout(expiryTimer.current);
    };
  }, []);

  if (!live) {
    return (
      <div className="embed-chat embed-chat--waiting" role="status">
        {problem ?? "Connecting the chat…"}
      </div>
    );
  }
  return (
    <div className={live.picker ? "embed-chat" : "embed-chat embed-chat--no-picker"} data-chat-id={live.chatId}>
      {live.guidance ? <p className="embed-chat__guidance">{live.guidance}</p> : null}
      {live.quickActions.length > 0 ? (
        <div className="embed-chat__actions">
          {live.quickActions.map((action) => (
            <button key={action.label} type="button" className="embed-chat__action" onClick={() => void quick(live.chatId, action.prompt)}>
              {action.label}
            </button>
          ))}
        </div>
      ) : null}
      <ChatView
        key={live.chatId}
        chatId={live.chatId}
        owner={`embed:${live.instanceId}`}
        summary={undefined}
        firstRun={false}
        onTitle={() => undefined}
        onOpenSettings={() => undefined}
      />
    </div>
  );
}
