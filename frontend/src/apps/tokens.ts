//! App tokens: minted with the owner's token (`POST /api/auth/app-token`), cached in memory and
//! on this device per app, refreshed 5 minutes before they expire, and shared by every canvas
//! and storage host of the same app. Only these tokens ever reach a frame.

import { mintAppToken } from "../api/apps";
import { ApiError } from "../api/client";
import { APP_TOKENS_KEY } from "./keys";

/** A token is refreshed this long before it expires. */
export const REFRESH_BEFORE_MS = 5 * 60_000;

export interface HeldToken {
  token: string;
  /** Unix milliseconds. */
  expiresAt: number;
}

/** Milliseconds until `expiresAt`'s token should be refreshed (0 = now). */
export function refreshDelay(expiresAt: number, now: number): number {
  return Math.max(0, expiresAt - REFRESH_BEFORE_MS - now);
}

/** True when there is no token or it is inside its refresh window. */
export function needsRefresh(held: HeldToken | null, now: number): boolean {
  return held === null || refreshDelay(held.expiresAt, now) === 0;
}

const memory = new Map<number, HeldToken>();
const inflight = new Map<number, Promise<HeldToken>>();
const listeners = new Map<number, Set<(held: HeldToken) => void>>();

type Persisted = Record<string, HeldToken>;

function readPersisted(): Persisted {
  try {
    const parsed: unknown = JSON.parse(localStorage.getItem(APP_TOKENS_KEY) ?? "{}");
    return typeof parsed === "object" && parsed !== null ? (parsed as Persisted) : {};
  } catch {
    return {};
  }
}

function persist(appId: number, held: HeldToken, now: number): void {
  try {
    const all = readPersisted();
    all[String(appId)] = held;
    // Expired tokens are of no use, not even offline.
    for (const [key, value] of Object.entries(all)) if (value.expiresAt <= now) delete all[key];
    localStorage.setItem(APP_TOKENS_KEY, JSON.stringify(all));
  } catch {
    // Not kept on the device: an offline start without it loads from the cache alone.
  }
}

/** The token held for `appId` (memory, else this device), whatever its age. */
export function heldToken(appId: number): HeldToken | null {
  const inMemory = memory.get(appId);
  if (inMemory) return inMemory;
  const saved = readPersisted()[String(appId)];
  if (saved && typeof saved.token === "string" && typeof saved.expiresAt === "number") {
    memory.set(appId, saved);
    return saved;
  }
  return null;
}

/** Calls `listener` whenever a new token for `appId` is minted. */
export function onAppToken(appId: number, listener: (held: HeldToken) => void): () => void {
  let set = listeners.get(appId);
  if (!set) {
    set = new Set();
    listeners.set(appId, set);
  }
  set.add(listener);
  return () => set.delete(listener);
}

/**
 * A usable token for `appId`: the held one while it is outside its refresh window (unless
 * `force`), else a fresh one. Without a network the held token (even a stale one) or null is
 * returned, so an app opened before still starts from the cache; other failures throw.
 */
export async function ensureAppToken(appId: number, { force = false, now = Date.now } = {}): Promise<HeldToken | null> {
  const held = heldToken(appId);
  if (!force && held !== null && !needsRefresh(held, now())) return held;
  let request = inflight.get(appId);
  if (!request) {
    request = mintAppToken(appId).then((minted) => {
      const fresh = { token: minted.token, expiresAt: now() + minted.expires_in * 1000 };
      memory.set(appId, fresh);
      persist(appId, fresh, now());
      for (const listener of [...(listeners.get(appId) ?? [])]) listener(fresh);
      return fresh;
    });
    inflight.set(appId, request);
    void request.catch(() => undefined).finally(() => inflight.delete(appId));
  }
  try {
    return await request;
  } catch (error) {
    if (error instanceof ApiError && error.isNetwork) return held;
    throw error;
  }
}

/** Forgets every token (sign-out). */
export function forgetAppTokens(): void {
  memory.clear();
  inflight.clear();
}
