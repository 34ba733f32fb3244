//! Connectivity, shared by the whole shell: the browser's online flag, confirmed by a cheap
//! `/api/health` probe when it flips back, so the offline note and Send agree everywhere.

import { createStore, useStore } from "./store";

const PROBE_TIMEOUT_MS = 3_000;
const PROBE_EVERY_MS = 20_000;

export const onlineStore = createStore<boolean>(navigator.onLine);
let timer: ReturnType<typeof setTimeout> | null = null;

async function probe(): Promise<void> {
  if (timer !== null) clearTimeout(timer);
  timer = null;
  if (!navigator.onLine) {
    onlineStore.set(false);
    return;
  }
  try {
    const response = await fetch("/api/health", { cache: "no-store", signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    onlineStore.set(response.ok);
  } catch {
    onlineStore.set(false);
  }
  if (!onlineStore.get()) timer = setTimeout(() => void probe(), PROBE_EVERY_MS);
}

window.addEventListener("offline", () => onlineStore.set(false));
window.addEventListener("online", () => void probe());

/** Asks for a fresh check (after a request failed for want of a network). */
export function recheckOnline(): void {
  void probe();
}

export function useOnline(): boolean {
  return useStore(onlineStore);
}
