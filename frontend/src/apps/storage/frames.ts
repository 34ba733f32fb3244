//! The app's frames as the storage host reaches them: each mounted frame is a sink for pushes,
//! its subscriptions hear of every change to their path, and notices for the whole app (dead
//! letters, conflicts) go to every frame — kept for the next one while none is mounted.

import type { ReadKind } from "./appDb";
import { TO_FRAME, type ToFrameMessage } from "../messages";
import { convert, StorageRpcError, type Stored } from "./wire";

const MAX_SUBSCRIPTIONS_PER_FRAME = 256;
const MAX_SUBSCRIPTION_ID_CHARS = 160;
/** Dead letters kept for a frame that is not mounted yet (the oldest go first). */
const MAX_UNDELIVERED_DEAD_LETTERS = 50;

/** Where subscription pushes and dead letters go (one per mounted frame). */
export interface FrameSink {
  post: (message: ToFrameMessage) => void;
}

interface Subscription {
  path: string;
  kind: ReadKind;
  sink: FrameSink;
}

/** The frames of one app and their subscriptions. */
export class AppFrames {
  private readonly subscriptions = new Map<string, Subscription>();
  private readonly sinks = new Set<FrameSink>();
  private undelivered: ToFrameMessage[] = [];

  has(sink: FrameSink): boolean {
    return this.sinks.has(sink);
  }

  /** A frame is there to hear pushes (dead letters kept for it are delivered now). */
  attach(sink: FrameSink): void {
    this.sinks.add(sink);
    const waiting = this.undelivered;
    this.undelivered = [];
    for (const message of waiting) sink.post(message);
  }

  /** A frame went away: drop its subscriptions. */
  detach(sink: FrameSink): void {
    this.sinks.delete(sink);
    for (const [id, sub] of this.subscriptions) if (sub.sink === sink) this.subscriptions.delete(id);
  }

  /** Forgets every frame and subscription (the host stops). */
  clear(): void {
    this.subscriptions.clear();
    this.sinks.clear();
  }

  /** Tells every frame of the app; kept for the next one when none is there. */
  announce(message: ToFrameMessage): void {
    if (this.sinks.size === 0) {
      this.undelivered = [...this.undelivered, message].slice(-MAX_UNDELIVERED_DEAD_LETTERS);
      return;
    }
    for (const sink of this.sinks) sink.post(message);
  }

  /** Subscribes `sink` to `path` as `idArg`, once `ready` (the host knows its installation). */
  async subscribe(idArg: unknown, path: string, kind: ReadKind, sink: FrameSink, ready: () => Promise<unknown>): Promise<true> {
    if (typeof idArg !== "string" || idArg === "" || idArg.length > MAX_SUBSCRIPTION_ID_CHARS) {
      throw new StorageRpcError("invalid_argument", "subscribe needs an id of 1 to 160 characters.", 400, { name: "TypeError" });
    }
    if (!this.subscriptions.has(idArg)) {
      let count = 0;
      for (const sub of this.subscriptions.values()) if (sub.sink === sink) count += 1;
      if (count >= MAX_SUBSCRIPTIONS_PER_FRAME) throw new StorageRpcError("too_many_subscriptions", `A frame can hold at most ${MAX_SUBSCRIPTIONS_PER_FRAME} subscriptions.`, 429);
    }
    await ready();
    this.subscriptions.set(idArg, { path, kind, sink });
    return true;
  }

  /** Ends subscription `id` of `sink`; false when `sink` holds no such subscription. */
  unsubscribe(id: unknown, sink: FrameSink): boolean {
    const sub = typeof id === "string" ? this.subscriptions.get(id) : undefined;
    if (!sub || sub.sink !== sink) return false;
    this.subscriptions.delete(id as string);
    return true;
  }

  /** Pushes the new state of `path` (null: deleted) to every subscription on it. */
  notify(path: string, stored: Stored | null): void {
    for (const [subscriptionId, sub] of this.subscriptions) {
      if (sub.path !== path) continue;
      let value: unknown;
      try {
        value = stored === null ? null : convert(stored, sub.kind, path);
      } catch {
        continue;
      }
      sub.sink.post({ type: TO_FRAME.storageChange, subscriptionId, value });
    }
  }
}
