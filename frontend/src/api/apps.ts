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
  /** Where it was installed from (a git URL or a folder on the server); null for apps built here. */
  source_url?: string | null;
  /** For apps installed from a source: what the last update check found. */
  update?: UpdateInfo | null;
  created_at: number;
  updated_at: number;
}

/** An installed app's update state. */
export interface UpdateInfo {
  available: boolean;
  checked_at: number | null;
  error: string | null;
  /** A chat resolving a conflicting update. */
  resolver_chat_id: string | null;
}

/** One thing an app asks for, in plain words (`POST /api/apps/review`, update previews). */
export interface Permission {
  key: string;
  title: string;
  detail: string;
  level: "info" | "notice" | "warning";
  /** False when this Möbius does not provide it. */
  effective: boolean;
}

/** How one thing an app asks for differs in an update. */
export interface PermissionChange extends Permission {
  change: "added" | "removed" | "changed";
  before: Permission | null;
}

/** `POST /api/apps/review {source}`: what installing would bring. */
export interface Review {
  source: string;
  commit: string;
  id: string;
  name: string;
  version: string;
  description: string;
  author: string | null;
  homepage: string | null;
  /** A data: PNG. */
  icon: string | null;
  theme_color: string | null;
  permissions: Permission[];
  warnings: string[];
  existing: { id: number; name: string; version: string; uninstalled: boolean; source_url: string | null } | null;
}

/** `GET /api/apps/{id}/update/preview`. */
export interface UpdatePreview {
  commit: string;
  up_to_date: boolean;
  current_version: string;
  version: string | null;
  name: string | null;
  commits: { commit: string; summary: string; author: string; at: number }[];
  more_commits: boolean;
  files: { path: string; status: "added" | "deleted" | "modified" | "renamed"; additions: number; deletions: number }[];
  more_files: boolean;
  local_edits: boolean;
  conflict_paths: string[];
  permissions: Permission[];
  permission_changes: PermissionChange[];
  manifest_error: string | null;
  resolver_chat_id: string | null;
}

/** `POST /api/apps/{id}/update`. */
export interface UpdateResult {
  mode: "updated" | "up_to_date" | "conflict";
  conflict_paths: string[];
  resolver_chat_id: string | null;
  resolver_started: boolean;
  draft: string | null;
  warnings: string[];
  app: AppSummary;
}

/** One version in an app's history. */
export interface HistoryEntry {
  commit: string;
  at: number;
  kind: "install" | "update" | "restore" | "apply";
  message: string;
  version: string | null;
  files: string[];
  files_changed: number;
  live: boolean;
}

/** One app a store catalog offers. */
export interface CatalogEntry {
  id: string;
  name: string;
  description: string;
  version: string | null;
  author: string | null;
  source: string;
  categories: string[];
  keywords: string[];
  theme_color: string | null;
  index: string;
  installed: { id: number; version: string; update_available: boolean } | null;
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

/** Drawer order: pinned apps first (oldest pin first), then the most recently built or updated. */
export function sortApps(apps: AppSummary[]): AppSummary[] {
  // Opening an app never moves it (a list that jumps under the thumb loses the next tap): pinned
  // first, then the newest build or update, as `GET /api/apps` orders them.
  return [...apps].sort((a, b) => {
    if (a.pinned_at !== null && b.pinned_at !== null) return a.pinned_at - b.pinned_at || a.id - b.id;
    if (a.pinned_at !== null) return -1;
    if (b.pinned_at !== null) return 1;
    return b.updated_at - a.updated_at || a.id - b.id;
  });
}

export const catalogKey = (q: string) => ["catalog", q] as const;
export const catalogIndexesKey = ["catalog-indexes"] as const;
export const historyKey = (id: number) => ["app-history", id] as const;
export const previewKey = (id: number) => ["app-update-preview", id] as const;

/** Fetches the source and describes it; nothing is installed. */
export function reviewSource(source: string): Promise<Review> {
  return apiFetch<Review>("/api/apps/review", { method: "POST", body: { source }, timeoutMs: 150_000 });
}

/** Installs the reviewed release (`commit`) of `source`. */
export function installApp(source: string, commit: string | null): Promise<{ mode: string; app: AppSummary; warnings: string[] }> {
  return apiFetch("/api/apps/install", { method: "POST", body: { source, commit }, timeoutMs: 180_000 });
}

/** Asks every installed app's source for a new release (the server answers from a check made in the last minute). */
export function checkUpdates(force = false): Promise<{ ran: boolean; checked: number; available: number }> {
  return apiFetch("/api/apps/updates/check", { method: "POST", body: { force }, timeoutMs: 120_000 });
}

export function fetchUpdatePreview(id: number, signal?: AbortSignal): Promise<UpdatePreview> {
  return apiFetch<UpdatePreview>(`/api/apps/${id}/update/preview`, { timeoutMs: 150_000, ...(signal ? { signal } : {}) });
}

export function applyUpdate(id: number, commit: string | null): Promise<UpdateResult> {
  return apiFetch<UpdateResult>(`/api/apps/${id}/update`, { method: "POST", body: { commit }, timeoutMs: 180_000 });
}

export function fetchHistory(id: number, signal?: AbortSignal): Promise<{ versions: HistoryEntry[] }> {
  return apiFetch(`/api/apps/${id}/history`, signal ? { signal } : {});
}

export function restoreVersion(id: number, commit: string): Promise<{ mode: string; app: AppSummary }> {
  return apiFetch(`/api/apps/${id}/restore`, { method: "POST", body: { commit }, timeoutMs: 180_000 });
}

/** Uninstalls; `keepData` false deletes its data now. */
export function uninstallApp(id: number, keepData: boolean): Promise<void> {
  return apiFetch(`/api/apps/${id}?data=${keepData ? "keep" : "delete"}`, { method: "DELETE" });
}

/** Deletes what the app stored (it starts afresh). */
export function deleteAppData(id: number): Promise<void> {
  return apiFetch(`/api/apps/${id}/data`, { method: "DELETE" });
}

export function fetchCatalog(q: string, refresh = false, signal?: AbortSignal): Promise<{ apps: CatalogEntry[]; errors: { index: string; message: string }[] }> {
  const params = new URLSearchParams();
  if (q) params.set("q", q);
  if (refresh) params.set("refresh", "true");
  const query = params.toString();
  return apiFetch(`/api/catalog${query ? `?${query}` : ""}`, { timeoutMs: 60_000, ...(signal ? { signal } : {}) });
}

export function fetchCatalogIndexes(): Promise<{ indexes: string[]; default: string }> {
  return apiFetch("/api/catalog/indexes");
}

export function saveCatalogIndexes(indexes: string[] | null): Promise<{ indexes: string[]; default: string }> {
  return apiFetch("/api/catalog/indexes", { method: "PUT", body: { indexes } });
}

/** A one-use pass that signs the installed home-screen app in (iOS keeps its storage apart). */
export function mintInstallPass(appId: number): Promise<{ install_pass: string; expires_at: number; slug: string }> {
  return apiFetch("/api/auth/install-pass", { method: "POST", body: { app_id: appId } });
}

export function redeemInstallPass(installPass: string, slug: string): Promise<{ access_token: string }> {
  return apiFetch("/api/auth/install-pass/redeem", { method: "POST", body: { install_pass: installPass, slug }, auth: false });
}
