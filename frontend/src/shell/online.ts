//! Connectivity, shared by the whole shell: the browser's online flag, confirmed by a cheap
//! `/api/health` probe, so the offline note, Send and the app outboxes agree everywhere.
//!
//! The browser's `online` event often fires before its network stack can carry a request, so
//! one probe at that instant proves little: while the shell believes it is offline it probes
//! again with a short backoff (sub-second first, capped at a few seconds). Any answer from the
//! server (a request that got an HTTP response) also counts as being back online.

import { createStore, useStore } from "./store";

const PROBE_TIMEOUT_MS = 3_000;
/** First re-probe after a failed one; doubles each time up to `PROBE_BACKOFF_MAX_MS`. */
export const PROBE_BACKOFF_FIRST_MS = 250;
export const PROBE_BACKOFF_MAX_MS = 4_000;

export const onlineStore = createStore<boolean>(navigator.onLine);
let timer: ReturnType<typeof setTimeout> | null = null;
let backoffMs = PROBE_BACKOFF_FIRST_MS;
let inFlight: Promise<void> | null = null;

function clearTimer(): void {
  if (timer !== null) clearTimeout(timer);
  timer = null;
}

/** The server answered: online, and the backoff starts over next time. */
export function markReachable(): void {
  clearTimer();
  backoffMs = PROBE_BACKOFF_FIRST_MS;
  onlineStore.set(true);
}

function markUnreachable(): void {
  onlineStore.set(false);
  clearTimer();
  // Without a network the next `online` event starts probing again; no timer burns meanwhile.
  if (!navigator.onLine) return;
  timer = setTimeout(() => void probe(), backoffMs);
  backoffMs = Math.min(backoffMs * 2, PROBE_BACKOFF_MAX_MS);
}

async function probeOnce(): Promise<void> {
  clearTimer();
  if (!navigator.onLine) {
    markUnreachable();
    return;
  }
  let ok: boolean;
  try {
    const response = await fetch("/api/health", { cache: "no-store", signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    ok = response.ok;
  } catch {
    ok = false;
  }
  if (ok) markReachable();
  else markUnreachable();
}

/** One probe at a time; callers that ask meanwhile share its answer. */
function probe(): Promise<void> {
  if (inFlight === null) {
    inFlight = probeOnce().finally(() => {
      inFlight = null;
    });
  }
  return inFlight;
}

window.addEventListener("offline", () => {
  clearTimer();
  onlineStore.set(false);
});
window.addEventListener("online", () => {
  backoffMs = PROBE_BACKOFF_FIRST_MS;
  void probe();
});
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible" && !onlineStore.get()) void probe();
});

/** Asks for a fresh check (after a request failed for want of a network). */
export function recheckOnline(): Promise<void> {
  return probe();
}

/** Reports a response from the server: any HTTP answer but a gateway error means it is reachable. */
export function noteResponse(status: number): void {
  if (status > 0 && status !== 502 && status !== 503 && status !== 504 && !onlineStore.get()) markReachable();
}

export function useOnline(): boolean {
  return useStore(onlineStore);
}
