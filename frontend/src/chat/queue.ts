//! The rules for messages sent while a turn runs. Stop: clear the tray before asking the server
//! to stop, then re-send exactly what the server says it cleared — as one new message, nothing
//! more. Steer: queued rows the server gave back go into the running turn as one message; what
//! the composer's keys and buttons do follows from the turn, the text and the tray.

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

/** Queued rows steered together become one message, separated by a blank line. */
export function joinSteer(rows: readonly PendingMessage[]): string | null {
  const parts = rows.map((row) => row.content).filter((text) => text.trim() !== "");
  return parts.length > 0 ? parts.join("\n\n") : null;
}

/** What taking queued rows back from the server came to. */
export interface TakenQueue {
  /** The text to steer (the rows the server gave back, joined), or null for none. */
  text: string | null;
  /** Rows whose DELETE did not answer: they stay queued. */
  unreachable: number;
  /** The queue as the last answer reported it, or null when none answered. */
  pending: PendingMessage[] | null;
}

/**
 * Asks the server for each row back, one at a time (so the last answer is the queue as it now
 * stands). A row answered `removed: false` already left the queue — it ran, or was steered —
 * and is left alone; only rows actually given back are steered.
 */
export async function takeQueued(
  rows: readonly PendingMessage[],
  remove: (cid: string) => Promise<{ removed: boolean; pending_messages: PendingMessage[] }>,
  onPending?: (pending: PendingMessage[]) => void,
): Promise<TakenQueue> {
  const taken: PendingMessage[] = [];
  let unreachable = 0;
  let pending: PendingMessage[] | null = null;
  for (const row of rows) {
    const result = await remove(row.cid).catch(() => null);
    if (!result) {
      unreachable += 1;
      continue;
    }
    pending = result.pending_messages;
    onPending?.(pending);
    if (result.removed) taken.push(row);
  }
  return { text: joinSteer(taken), unreachable, pending };
}

/** What the composer knows when it draws its buttons. */
export interface ComposerInputs {
  running: boolean;
  questionOpen: boolean;
  hasText: boolean;
  /** Queued rows the server holds (the ones Steer can take). */
  queued: number;
  offline: boolean;
  stopping: boolean;
  /** A steer of the queued rows is on its way. */
  steering: boolean;
}

/** The composer's buttons: Stop beside the primary one, each null when it is not shown. */
export interface ComposerButtons {
  stop: { disabled: boolean } | null;
  primary: { kind: "send" | "queue" | "steer"; disabled: boolean } | null;
}

/**
 * Idle: Send. A turn runs: Stop, plus Queue for typed text, or Steer (the queued rows, now)
 * when the box is empty and the tray is not. An open question keeps Stop and disables sending.
 */
export function composerButtons(c: ComposerInputs): ComposerButtons {
  const busy = c.running || c.questionOpen;
  const stop = busy ? { disabled: c.stopping || c.offline } : null;
  if (!busy) return { stop, primary: { kind: "send", disabled: !c.hasText || c.offline } };
  if (c.hasText) return { stop, primary: { kind: c.running ? "queue" : "send", disabled: c.offline || c.questionOpen } };
  if (c.running && c.queued > 0 && !c.questionOpen) {
    return { stop, primary: { kind: "steer", disabled: c.offline || c.stopping || c.steering } };
  }
  return { stop, primary: null };
}

/** What Enter does in the composer: a newline, the usual submit, or a steer into the turn. */
export function enterAction(
  key: { shift: boolean; mod: boolean },
  context: { touch: boolean; running: boolean; questionOpen: boolean },
): "newline" | "submit" | "steer" {
  // Ctrl/Cmd+Enter is the explicit send everywhere; during a turn it steers instead of queueing.
  if (key.mod) return context.running && !context.questionOpen ? "steer" : "submit";
  if (key.shift || context.touch) return "newline";
  return "submit";
}

/** A fresh client message id. */
export function newCid(): string {
  return crypto.randomUUID();
}
