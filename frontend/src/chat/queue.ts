//! The Stop rule for queued messages: clear the tray before asking the server to stop, then
//! re-send exactly what the server says it cleared — as one new message, nothing more.

import type { PendingMessage } from "../api/types";

/** What the tray held when Stop was pressed: cid → text. */
export type QueueSnapshot = ReadonlyMap<string, string>;

export function snapshotQueue(rows: readonly PendingMessage[]): QueueSnapshot {
  return new Map(rows.map((row) => [row.cid, row.content]));
}

/**
 * The text to re-send after `POST /api/chat/stop` answered with `cleared`, or null for none.
 * Only cids the server cleared AND the tray held count, in the server's order, joined by "\n".
 */
export function resolveStopResend(snapshot: QueueSnapshot, cleared: readonly string[] | undefined): string | null {
  const parts: string[] = [];
  const seen = new Set<string>();
  for (const cid of cleared ?? []) {
    if (seen.has(cid)) continue;
    seen.add(cid);
    const text = snapshot.get(cid);
    if (text !== undefined && text.trim() !== "") parts.push(text);
  }
  return parts.length > 0 ? parts.join("\n") : null;
}

/** A fresh client message id. */
export function newCid(): string {
  return crypto.randomUUID();
}
