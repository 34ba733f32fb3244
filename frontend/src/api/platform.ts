//! Platform updates and restarts (`/api/platform/*`): what runs, what the release feed offers,
//! applying it, and restarting the server.

import { apiFetch } from "./client";

/** A release the feed offers. */
export interface AvailableRelease {
  version: string;
  published_at: string;
  notes: string;
  /** What this server would download (its binary and the PWA), in bytes. */
  download_bytes: number;
}

/** An apply in progress (or the last one, failed). */
export interface UpdateProgress {
  phase: "checking" | "verifying" | "downloading" | "restarting" | "failed";
  version: string;
  done_bytes: number;
  total_bytes: number;
  error?: string;
}

/** How the last try of a release ended (kept by the launcher across restarts). */
export interface UpdateOutcome {
  version: string;
  from: string;
  outcome: "applied" | "rolled_back" | "failed";
  reason?: string;
  /** Unix milliseconds. */
  at: number;
  took_ms?: number;
}

/** `GET /api/platform/status`. */
export interface PlatformStatus {
  version: string;
  build_sha: string;
  serving: "image" | "release";
  /** Started by `mobius launch`: restarts and updates are possible. */
  supervised: boolean;
  feed: string | null;
  auto_check: boolean;
  checked_at: number | null;
  check_error: string | null;
  available: AvailableRelease | null;
  running_turns: number;
  progress: UpdateProgress | null;
  last: UpdateOutcome | null;
}

export const platformKey = ["platform", "status"] as const;

export const fetchPlatformStatus = (signal?: AbortSignal) =>
  apiFetch<PlatformStatus>("/api/platform/status", { ...(signal && { signal }), timeoutMs: 8_000 });

export const checkForUpdates = () => apiFetch<PlatformStatus>("/api/platform/check", { method: "POST", body: {}, timeoutMs: 30_000 });

export const setAutoCheck = (autoCheck: boolean) =>
  apiFetch<PlatformStatus>("/api/platform/settings", { method: "PUT", body: { auto_check: autoCheck } });

export const applyUpdate = (version: string) => apiFetch<{ accepted: boolean }>("/api/platform/update", { method: "POST", body: { version } });

export const restartServer = () => apiFetch<{ accepted: boolean }>("/api/platform/restart", { method: "POST", body: {} });

/** `GET /api/health`: the boot id changes with every start. */
export const fetchHealth = () => apiFetch<{ boot_id: string }>("/api/health", { auth: false, timeoutMs: 3_000 });
