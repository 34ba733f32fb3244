//! Which paths of an app installation the device's mirror may be behind on: a write was queued or
//! sent, and the server's answer has not reached the mirror yet. Kept in localStorage because it is
//! written synchronously (the mirror is IndexedDB, whose transactions a reload can cut short), so
//! the next page knows to ask the server first instead of trusting an older mirror value.

import { APP_UNMIRRORED_PREFIX } from "../keys";

/** Paths remembered per installation; past this, every path counts as behind until all settle. */
export const MAX_UNMIRRORED_PATHS = 256;
const EVERY_PATH = "*";

export class UnmirroredPaths {
  private readonly key: string;

  /** `scope` is the installation (`<appId>:<nonce>`). */
  constructor(scope: string) {
    this.key = `${APP_UNMIRRORED_PREFIX}${scope}`;
  }

  /** Whether the mirror may hold something older than the server for `path`. */
  has(path: string): boolean {
    const paths = this.load();
    return paths.includes(EVERY_PATH) || paths.includes(path);
  }

  add(path: string): void {
    const paths = this.load();
    if (paths.includes(EVERY_PATH) || paths.includes(path)) return;
    this.save(paths.length >= MAX_UNMIRRORED_PATHS ? [EVERY_PATH] : [...paths, path]);
  }

  /** The mirror now holds the server's value of `path`. */
  remove(path: string): void {
    const paths = this.load();
    if (paths.includes(path)) this.save(paths.filter((p) => p !== path));
  }

  /** Every write of this page has settled and reached the mirror: an overflow mark can go. */
  settled(): void {
    if (this.load().includes(EVERY_PATH)) this.save([]);
  }

  private load(): string[] {
    try {
      const raw = localStorage.getItem(this.key);
      if (raw === null) return [];
      const parsed: unknown = JSON.parse(raw);
      return Array.isArray(parsed) ? parsed.filter((p): p is string => typeof p === "string") : [EVERY_PATH];
    } catch {
      return [];
    }
  }

  private save(paths: string[]): void {
    try {
      if (paths.length === 0) localStorage.removeItem(this.key);
      else localStorage.setItem(this.key, JSON.stringify(paths));
    } catch {
      // No localStorage (or full): reads trust the mirror, as they would without this.
    }
  }
}

/** Drops the marks of `appId`'s other installations (their mirrors are purged too). */
export function forgetOtherInstallations(appId: number, keep: string): void {
  try {
    const prefix = `${APP_UNMIRRORED_PREFIX}${appId}:`;
    const doomed: string[] = [];
    for (let i = 0; i < localStorage.length; i++) {
      const key = localStorage.key(i);
      if (key?.startsWith(prefix) && key !== `${APP_UNMIRRORED_PREFIX}${keep}`) doomed.push(key);
    }
    for (const key of doomed) localStorage.removeItem(key);
  } catch {
    // No localStorage: nothing kept.
  }
}
