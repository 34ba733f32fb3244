//! What the shell tells the server about its apps' crashes (`/api/client-error`, the same crash
//! at most once a minute). Fire-and-forget: a report never disturbs the owner. (`mobius.signal`
//! events go through the app's storage host instead: a durable queue, delivered with the app's
//! own token, see storage/host.ts.)

import { apiFetch } from "../api/client";

const ERROR_DEDUPE_MS = 60_000;
const MAX_REMEMBERED_ERRORS = 100;

type Send = (path: string, body: unknown) => Promise<unknown>;

const post: Send = (path, body) => apiFetch(path, { method: "POST", body, timeoutMs: 10_000 });

/** Reporter state; one per shell (`telemetry`), separate ones in tests. */
export function createTelemetry(send: Send = post, now: () => number = Date.now) {
  const recentErrors = new Map<string, number>();
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
  };
}

export const telemetry = createTelemetry();
