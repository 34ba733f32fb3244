//! Device storage used by the app runtime, in one place so sign-out can wipe it without loading
//! the (lazy) runtime code.

/** App tokens per app: `{[appId]: {token, expiresAt}}`. */
export const APP_TOKENS_KEY = "mobius.app-tokens";
/** An app's virtual localStorage (what its frame wrote), one key per app id. */
export const APP_LOCAL_PREFIX = "mobius.app-local.";
/** An app's queued storage writes as an earlier shell kept them (now in IndexedDB, see storage/appDb.ts). */
export const APP_OUTBOX_PREFIX = "mobius.app-outbox.";
/**
 * Paths an installation wrote whose device mirror may not hold the server's value yet, one key per
 * installation (`<appId>:<nonce>`): written synchronously, so a reload right after a write knows.
 */
export const APP_UNMIRRORED_PREFIX = "mobius.app-unmirrored.";

/** Removes every app-runtime key from localStorage. */
export function wipeAppKeys(): void {
  try {
    const doomed: string[] = [];
    for (let i = 0; i < localStorage.length; i++) {
      const key = localStorage.key(i);
      if (key && (key === APP_TOKENS_KEY || key.startsWith(APP_LOCAL_PREFIX) || key.startsWith(APP_OUTBOX_PREFIX) || key.startsWith(APP_UNMIRRORED_PREFIX))) doomed.push(key);
    }
    for (const key of doomed) localStorage.removeItem(key);
  } catch {
    // No storage: nothing kept.
  }
}
