//! This page among the others that share the app's outbox: its id, and the Web Lock it holds
//! while it lives (a page whose lock is gone left writes another page may adopt).

/** A random id (a UUID where the browser makes them). */
export function randomId(): string {
  if (typeof crypto !== "undefined" && typeof crypto.randomUUID === "function") return crypto.randomUUID();
  return `${Date.now().toString(36)}${Math.random().toString(36).slice(2)}`;
}

/** This page's id; a Web Lock named after it is held while the page lives. */
export const PAGE_ID = randomId();
/** The Web Lock page `id` holds while it lives. */
export const pageLockName = (id: string) => `mobius-page-${id}`;
let pageLockTaken = false;

/** The browser's Web Locks, or null without them. */
export function defaultLocks(): LockManager | null {
  return typeof navigator !== "undefined" && navigator.locks && typeof navigator.locks.request === "function" ? navigator.locks : null;
}

/** Takes this page's lock (once per page) and holds it until the page goes. */
export function holdPageLock(locks: LockManager | null): void {
  if (!locks || pageLockTaken) return;
  pageLockTaken = true;
  void locks.request(pageLockName(PAGE_ID), () => new Promise<void>(() => undefined)).catch(() => undefined);
}

/** The installation nonce (`app_nonce`) an app token names, or null. */
export function tokenNonce(token: string): string | null {
  try {
    const part = token.split(".")[1] ?? "";
    const base64 = part.replace(/-/g, "+").replace(/_/g, "/");
    const claims = JSON.parse(atob(base64.padEnd(base64.length + ((4 - (base64.length % 4)) % 4), "="))) as { app_nonce?: unknown };
    return typeof claims.app_nonce === "string" && claims.app_nonce ? claims.app_nonce : null;
  } catch {
    return null;
  }
}
