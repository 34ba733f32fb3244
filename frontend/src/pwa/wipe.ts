//! Sign-out hygiene: forget drafts, reading positions and the offline copies of chats.

import { wipeOwnerData } from "../chat/persist";

/** Cache names the service worker fills with owner data. */
export const OWNER_CACHES = ["mobius-shell-data"];

export async function wipeLocalData(): Promise<void> {
  wipeOwnerData();
  try {
    await Promise.all(OWNER_CACHES.map((name) => caches.delete(name)));
  } catch {
    // No CacheStorage here: nothing cached.
  }
}
