//! Typed calls for the app registry (`/api/apps…`) and app tokens, with their query keys.

import { apiFetch } from "./client";

/** A capability an app declares in its manifest, as the frame's runtime sees it. */
export interface CapabilityDeclaration {
  version: number;
  kind?: string;
  title?: string;
  description?: string;
  risk?: string;
  lifecycle?: string;
  reason?: string | null;
  limits?: Record<string, number>;
}

/** What the app's manifest asks of the platform (`frame-init.capabilityContract`). */
export interface CapabilityContract {
  schema: number;
  offline?: { capable: boolean; contract: { precache?: string[]; reads?: boolean; writes?: string; execution?: string } | null };
  runtime?: Record<string, CapabilityDeclaration>;
  [key: string]: unknown;
}

/** One row of `GET /api/apps`. */
export interface AppSummary {
  id: number;
  slug: string;
  name: string;
  description: string;
  version: string;
  theme_color: string | null;
  background_color: string | null;
  display: string | null;
  offline_capable: boolean;
  bundle_sha: string | null;
  /** Cache key of the current build (module and frame URLs carry it). */
  v: string;
  module_url: string;
  frame_url: string;
  icon_url: string;
  standalone_url: string;
  chat_id: string | null;
  /** Derived from the manifest; older servers leave it out. */
  capability_contract?: CapabilityContract | null;
  /** Same-origin URLs the service worker keeps for the app's offline use (`offline.precache`). */
  offline_precache?: string[];
  pinned_at: number | null;
  last_opened_at: number | null;
  has_unseen_update: boolean;
  created_at: number;
  updated_at: number;
}

/** `POST /api/auth/app-token`. */
export interface AppToken {
  token: string;
  /** Seconds. */
  expires_in: number;
}

export const appsKey = ["apps"] as const;
export const appKey = (id: number) => ["app", id] as const;

export function listApps(signal?: AbortSignal): Promise<AppSummary[]> {
  return apiFetch<AppSummary[]>("/api/apps", signal ? { signal } : {});
}

export function fetchApp(id: number, signal?: AbortSignal): Promise<AppSummary> {
  return apiFetch<AppSummary>(`/api/apps/${id}`, signal ? { signal } : {});
}

export function patchApp(id: number, patch: { name?: string; pinned?: boolean }): Promise<{ ok: boolean }> {
  return apiFetch(`/api/apps/${id}`, { method: "PATCH", body: patch });
}

export function deleteApp(id: number): Promise<void> {
  return apiFetch(`/api/apps/${id}`, { method: "DELETE" });
}

export function recoverApp(id: number): Promise<{ ok: boolean }> {
  return apiFetch(`/api/apps/${id}/recover`, { method: "POST" });
}

/** Records an open (and marks the current build seen). */
export function markAppOpened(id: number): Promise<{ ok: boolean }> {
  return apiFetch(`/api/apps/${id}/opened`, { method: "POST" });
}

export function mintAppToken(appId: number): Promise<AppToken> {
  return apiFetch<AppToken>("/api/auth/app-token", { method: "POST", body: { app_id: appId }, timeoutMs: 10_000 });
}

/** Drawer order: pinned apps first (oldest pin first), then the most recently used. */
export function sortApps(apps: AppSummary[]): AppSummary[] {
  const recency = (a: AppSummary) => Math.max(a.last_opened_at ?? 0, a.updated_at);
  return [...apps].sort((a, b) => {
    if (a.pinned_at !== null && b.pinned_at !== null) return a.pinned_at - b.pinned_at;
    if (a.pinned_at !== null) return -1;
    if (b.pinned_at !== null) return 1;
    return recency(b) - recency(a);
  });
}
