//! The platform's theme (`/api/theme`): the CSS over the stock palette, its versions, reset
//! to stock and going back to a version.

import { apiFetch } from "./client";

export interface ThemeAnswer {
  /** Custom properties over the stock palette (empty or comments only: the stock theme). */
  css: string;
  /** The version served (`null`: the stock theme was never replaced). */
  version: string | null;
  stock: boolean;
  /** The page backgrounds it sets, for the browser chrome. */
  light_bg: string | null;
  dark_bg: string | null;
  changed?: boolean;
}

export interface ThemeVersion {
  id: string;
  at: number;
  /** `agent`, `owner reset`, `restore <id>`. */
  source: string;
}

export const themeKey = ["theme"] as const;
export const themeVersionsKey = ["theme", "versions"] as const;

export function fetchTheme(): Promise<ThemeAnswer> {
  return apiFetch<ThemeAnswer>("/api/theme");
}

export function fetchThemeVersions(): Promise<{ versions: ThemeVersion[]; current: string | null }> {
  return apiFetch("/api/theme/versions");
}

export function resetTheme(): Promise<ThemeAnswer> {
  return apiFetch<ThemeAnswer>("/api/theme/reset", { method: "POST" });
}

export function restoreTheme(id: string): Promise<ThemeAnswer> {
  return apiFetch<ThemeAnswer>(`/api/theme/versions/${encodeURIComponent(id)}/restore`, { method: "POST" });
}
