//! The owner's bearer token: persisted in localStorage and observable, so React re-renders
//! whenever it is stored, cleared here, or cleared by another tab.

const STORAGE_KEY = "mobius.token";
const SESSION_KEY = "mobius.session";

type Listener = () => void;

const listeners = new Set<Listener>();
// Mirrors the stored value so a browser that refuses storage (some private modes) still works
// for the lifetime of the page.
let memory: string | null = null;

/** The current token, or null when signed out. */
export function readToken(): string | null {
  try {
    return localStorage.getItem(STORAGE_KEY);
  } catch {
    return memory;
  }
}

/** Stores a freshly issued token and notifies subscribers. */
export function writeToken(token: string): void {
  memory = token;
  try {
    localStorage.setItem(STORAGE_KEY, token);
  } catch {
    // Storage refused: the in-memory copy keeps this tab signed in.
  }
  emit();
}

/** Forgets the token and notifies subscribers. */
export function clearToken(): void {
  memory = null;
  try {
    localStorage.removeItem(STORAGE_KEY);
    localStorage.removeItem(SESSION_KEY);
  } catch {
    // Nothing stored to remove.
  }
  emit();
}

/** Remembers the session verified for `token`, so the shell can start offline. */
export function rememberSession(token: string, session: { username: string; scope: string; expires_at: number }): void {
  try {
    localStorage.setItem(SESSION_KEY, JSON.stringify({ token: token.slice(-24), session }));
  } catch {
    // Not remembered: an offline start shows "couldn't reach" instead.
  }
}

/** The session remembered for `token`, if any. */
export function rememberedSession(token: string | null): { username: string; scope: string; expires_at: number } | null {
  if (token === null) return null;
  try {
    const saved = JSON.parse(localStorage.getItem(SESSION_KEY) ?? "null") as { token?: string; session?: { username: string; scope: string; expires_at: number } } | null;
    return saved?.token === token.slice(-24) && saved.session ? saved.session : null;
  } catch {
    return null;
  }
}

/** Subscribes to token changes (this tab and others); returns the unsubscribe function. */
export function subscribeToken(listener: Listener): () => void {
  const onStorage = (event: StorageEvent) => {
    if (event.key === STORAGE_KEY || event.key === null) listener();
  };
  listeners.add(listener);
  window.addEventListener("storage", onStorage);
  return () => {
    listeners.delete(listener);
    window.removeEventListener("storage", onStorage);
  };
}

function emit(): void {
  for (const listener of [...listeners]) listener();
}
