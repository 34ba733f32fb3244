//! Published pages (`/api/apps/{id}/publish`, `/api/published-sites`): a read-only copy of an
//! app at `/sites/<token>/`, for anyone with the link.

import { ApiError, apiFetch } from "./client";

export interface PublishedSite {
  id: number;
  app_id: number;
  app_slug: string;
  app_name: string;
  /** `/sites/<token>/`, relative to the server. */
  url: string;
  /** Reads the app's data as it is now (read only), instead of the copy made when published. */
  live: boolean;
  bytes: number;
  files: number;
  created_at: number;
  updated_at: number;
}

export const publishedSitesKey = ["published-sites"] as const;
export const appSiteKey = (appId: number) => ["published-sites", "app", appId] as const;

export function fetchPublishedSites(): Promise<{ sites: PublishedSite[]; max: number }> {
  return apiFetch("/api/published-sites");
}

/** The app's page, or null when it is not published. */
export async function fetchAppSite(appId: number): Promise<PublishedSite | null> {
  try {
    return await apiFetch<PublishedSite>(`/api/apps/${appId}/publish`);
  } catch (error) {
    if (error instanceof ApiError && error.code === "site_not_found") return null;
    throw error;
  }
}

/** Publishes the app (or refreshes its page's copy, mode and theme; the link stays). `theme`:
 *  each scheme's variables under the original's names, as the page is to be painted. */
export function publishApp(appId: number, live: boolean, theme?: Record<"light" | "dark", Record<string, string>>): Promise<PublishedSite> {
  return apiFetch<PublishedSite>(`/api/apps/${appId}/publish`, { method: "POST", body: { live, theme } });
}

export function unpublishSite(id: number): Promise<void> {
  return apiFetch<void>(`/api/published-sites/${id}`, { method: "DELETE" });
}

/** The page's full address on this server. */
export function siteAddress(site: Pick<PublishedSite, "url">): string {
  return new URL(site.url, window.location.origin).href;
}
