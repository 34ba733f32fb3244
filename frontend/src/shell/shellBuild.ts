//! Which build of the shell this page runs (`<meta name="mobius-shell-build">`, put in by the
//! server; none in the stock build), the ready beacon a new build sends once React mounted (a
//! build that never sends it is rolled back by the server), and the offer to reload when the
//! server starts serving another build (`shell_updated`).

import { apiFetch } from "../api/client";
import { createStore } from "./store";

/** The build this page runs (`null`: the stock shell). */
export function runningBuild(doc: Document = document): number | null {
  const content = doc.querySelector('meta[name="mobius-shell-build"]')?.getAttribute("content") ?? "";
  const n = Number.parseInt(content, 10);
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

/** Tells the server this build mounted (once a page load; nothing for the stock build). */
export async function reportShellReady(build: number | null = runningBuild()): Promise<void> {
  if (build === null) return;
  try {
    await apiFetch("/api/shell/ready", { method: "POST", body: { build }, auth: true });
  } catch {
    // Offline or refused: the server rolls back a build nobody reports, which is the point.
  }
}

/** A build other than this page's is served: the offer, and why when it was a rollback. */
export interface ShellUpdate {
  build: number | null;
  reason: string | null;
}

export const shellUpdateStore = createStore<ShellUpdate | null>(null);

/** What a `shell_updated` event means for this page. */
export function noteShellUpdated(build: number | null, reason: string | null, running: number | null = runningBuild()): void {
  shellUpdateStore.set(build === running ? null : { build, reason });
}
