//! What the shell tells the server about its apps: crashes (`/api/client-error`, the same
//! crash at most once a minute) and `mobius.signal` calls (`/api/client-signal`, batched, kept
//! in a bounded queue while offline). Fire-and-forget: a report never disturbs the owner.

import { apiFetch, ApiError, NO_RESPONSE } from "../api/client";

const ERROR_DEDUPE_MS = 60_000;
const MAX_REMEMBERED_ERRORS = 100;
/** Signals kept while they cannot be sent; the oldest go first. */
export const MAX_QUEUED_SIGNALS = 200;
/** Signals per request (the server takes at most 100). */
const SIGNAL_BATCH = 50;
const FLUSH_DELAY_MS = 2_000;
const RETRY_DELAY_MS = 30_000;

type Send = (path: string, body: unknown) => Promise<unknown>;

const post: Send = (path, body) => apiFetch(path, { method: "POST", body, timeoutMs: 10_000 });

export interface Signal {
  name: string;
  payload: unknown;
  app_id: number;
}

/** Reporter state; one per shell (`telemetry`), separate ones in tests. */
export function createTelemetry(send: Send = post, now: () => number = Date.now) {
  const recentErrors = new Map<string, number>();
  let queue: Signal[] = [];
  let timer: ReturnType<typeof setTimeout> | null = null;
  let sending = false;

  const schedule = (delay: number) => {
    if (timer === null) timer = setTimeout(() => void flush(), delay);
  };

  async function flush(): Promise<void> {
    timer = null;
    if (sending) return;
    sending = true;
    try {
      while (queue.length > 0) {
        const batch = queue.slice(0, SIGNAL_BATCH);
        try {
          await send("/api/client-signal", { signals: batch });
        } catch (error) {
          // Offline or the server is away: keep them for later. A refusal (4xx) will not change.
          const refused = error instanceof ApiError && error.status !== NO_RESPONSE && error.status < 500;
          if (!refused) {
            schedule(RETRY_DELAY_MS);
            return;
          }
        }
        queue = queue.slice(batch.length);
      }
    } finally {
      sending = false;
    }
  }

  return {
    /** Reports a crash of app `appId`; false when the same one was reported this minute. */
    reportError(appId: number, message: string, source = "frame"): boolean {
      const key = `${appId}\u0000${source}\u0000${message}`;
      const at = now();
      const last = recentErrors.get(key);
      if (last !== undefined && at - last < ERROR_DEDUPE_MS) return false;
      if (recentErrors.size >= MAX_REMEMBERED_ERRORS) recentErrors.clear();
      recentErrors.set(key, at);
      send("/api/client-error", { message, source, app_id: appId }).catch(() => undefined);
      return true;
    },
    /** Queues one `mobius.signal` of app `appId` for the next batch. */
    signal(appId: number, name: string, payload: unknown): void {
      queue.push({ name, payload, app_id: appId });
      if (queue.length > MAX_QUEUED_SIGNALS) queue = queue.slice(queue.length - MAX_QUEUED_SIGNALS);
      schedule(FLUSH_DELAY_MS);
    },
    flush,
    pending: () => queue.length,
  };
}

export const telemetry = createTelemetry();
