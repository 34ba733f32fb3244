//! What happened in an open chat, for whoever hosts it (the embedded chat tells its app):
//! `message_sent` after a send was accepted, then every stream event's type as it arrives.

type Listener = (chatId: string, type: string) => void;

const listeners = new Set<Listener>();

/** Subscribes to chat happenings; returns the unsubscribe function. */
export function onChatEvent(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function notifyChatEvent(chatId: string, type: string): void {
  for (const listener of [...listeners]) listener(chatId, type);
}

type ContextSource = (chatId: string) => Promise<string | null>;

let contextSource: ContextSource | null = null;

/** Sets where agent-only context for each send comes from (the embedding app); `null` clears it. */
export function setSendContext(source: ContextSource | null): void {
  contextSource = source;
}

/** The agent-only context to attach to a send in `chatId`, if any. */
export async function sendContext(chatId: string): Promise<string | null> {
  if (!contextSource) return null;
  try {
    return await contextSource(chatId);
  } catch {
    return null;
  }
}
