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
