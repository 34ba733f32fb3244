//! Sign-out hygiene: forget drafts, reading positions, the offline copies of chats and apps,
//! app tokens, app data mirrors and queued app writes.

import { deleteAppDb } from "../apps/storage/appDb";
import { wipeAppKeys } from "../apps/keys";
import { forgetAppTokens } from "../apps/tokens";
import { wipeOwnerData } from "../chat/persist";
import { APP_CODE_CACHE, APP_DATA_CACHE, SHELL_DATA_CACHE, STANDALONE_CACHE } from "./cachePolicy";

/** Cache names filled with owner data (by the service worker or the page). */
export const OWNER_CACHES = [SHELL_DATA_CACHE, APP_CODE_CACHE, STANDALONE_CACHE, APP_DATA_CACHE];

export async function wipeLocalData(): Promise<void> {
  wipeOwnerData();
  wipeAppKeys();
  forgetAppTokens();
  // App storage hosts (outbox, subscriptions) exist only once an app was opened on this page.
  await import("../apps/storage/host").then((m) => m.forgetStorageHosts()).catch(() => undefined);
  await deleteAppDb();
  try {
    await Promise.all(OWNER_CACHES.map((name) => caches.delete(name)));
  } catch {
    // No CacheStorage here: nothing cached.
  }
}
