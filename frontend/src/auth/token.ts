//! The owner's bearer token: persisted in localStorage and observable, so React re-renders
//! whenever it is stored, cleared here, or cleared by another tab.

const STORAGE_KEY = "mobius.token";

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
  } catch {
    // Nothing stored to remove.
  }
  emit();
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
