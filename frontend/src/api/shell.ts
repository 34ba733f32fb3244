//! The shell's builds (`/api/shell`): which one is served, the list to go back to, a platform
//! update's conflict waiting for the agent, and switching to a build or to stock (the same API
//! `/recovery` uses).

import { apiFetch } from "./client";

export interface ShellBuild {
  n: number;
  /** When it was built (unix ms). */
  at: number;
  commit: string | null;
  confirmed: boolean;
  /** Why it was rolled back, if it was. */
  failed: string | null;
  /** The chat whose agent built it (`null`: the owner, or the server after an update). */
  chat?: string | null;
}

export interface ShellResolving {
  markers: string[];
  kept: string[];
  chat: string | null;
  at: number;
}

export interface ShellStatus {
  editable: boolean;
  /** The build served (`null`: the stock shell). */
  serving: number | null;
  building: boolean;
  /** Newest first. */
  builds: ShellBuild[];
  resolving?: ShellResolving | null;
}

export const shellKey = ["shell"] as const;

export function fetchShell(): Promise<ShellStatus> {
  return apiFetch<ShellStatus>("/api/shell");
}

/** Serves build `build` (`null`: the stock shell). */
export function switchShell(build: number | null): Promise<ShellStatus> {
  return apiFetch<ShellStatus>("/api/shell/use", { method: "POST", body: { build } });
}
