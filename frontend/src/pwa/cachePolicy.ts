//! What the service worker may keep, and under which key — pure, so every rule is unit-tested.
//!
//! - Shell data (NetworkFirst): the chat list, a chat's detail pages, the app list and one app's
//!   row (GET). Never streams, runs, tool output, storage or anything else under /api/.
//! - App code (cache-first once cached): `/api/apps/{id}/frame`, `…/module` and `…/icon`,
//!   keyed by path + `v` only (a `token` or any other query never splits or leaks into the key);
//!   only 200s are stored; storing one version evicts the other versions of the same app's
//!   frame (or module).
//! - Standalone hosts (`/apps/<slug>/`): the last page served, so the app's identity survives
//!   offline; it is grafted onto the current precached shell rather than served as it was.
//! - App assets (`offline.precache` of an app's manifest, and `/vendor/` library assets): what an
//!   opened app listed is fetched ahead and kept per app (only same-origin static assets, only
//!   200s that are not the shell's HTML); served cache-first and refreshed in the background.

export const SHELL_DATA_CACHE = "mobius-shell-data";
export const APP_CODE_CACHE = "mobius-app-code";
export const STANDALONE_CACHE = "mobius-standalone";
/** Where an earlier shell kept its app storage mirror (now in IndexedDB): deleted on activation. */
export const APP_DATA_CACHE = "mobius-app-data";
/** Static assets apps asked to have offline (`offline.precache`), and `/vendor/` files. */
export const APP_ASSETS_CACHE = "mobius-app-assets";
/** Runtime caches the current worker keeps on activation; other `mobius-*` caches are stale. */
/** Questions pushed with answer buttons, kept for the decision screen (works offline). */
export const DECISIONS_CACHE = "mobius-decisions";
export const RUNTIME_CACHES = [SHELL_DATA_CACHE, APP_CODE_CACHE, STANDALONE_CACHE, APP_ASSETS_CACHE, DECISIONS_CACHE];
/** At most this many assets are precached for one app. */
export const MAX_PRECACHE_URLS = 64;

/** Whether a same-origin path is a static asset the worker keeps (an app's or a pinned library's). */
export function isStaticAsset(url: URL): boolean {
  return /^\/(app-assets|app-embeds)\/[^/]+\/.+/.test(url.pathname) || /^\/vendor\/[a-z0-9-]+\/.+/.test(url.pathname);
}

/**
 * The URLs of `raw` (an app's `offline_precache`) the worker may fetch ahead: same-origin static
 * assets only (app code is kept when the app opens, with its token), deduplicated, bounded.
 */
export function precacheUrls(raw: unknown, origin: string): string[] {
  if (!Array.isArray(raw)) return [];
  const out = new Set<string>();
  for (const item of raw) {
    if (typeof item !== "string" || item.length > 2048) continue;
    let url: URL;
    try {
      url = new URL(item, origin);
    } catch {
      continue;
    }
    if (url.origin !== origin || url.username || url.password || !isStaticAsset(url)) continue;
    out.add(url.pathname + url.search);
    if (out.size >= MAX_PRECACHE_URLS) break;
  }
  return [...out];
}

/** The app-assets URL prefix of app `appId` (its cached assets outside the newest list are dropped). */
export function appAssetsPrefix(appId: number): string {
  return `/app-assets/by-id/${appId}/`;
}

/** A stored asset must be a real answer: a 200 that is not the shell's HTML fallback. */
export function isCacheableAsset(status: number, contentType: string | null): boolean {
  return status === 200 && !(contentType ?? "").toLowerCase().startsWith("text/html");
}

export function isShellData(url: URL, method: string = "GET"): boolean {
  if (method !== "GET") return false;
  const path = url.pathname;
  // The chat list's first page only: deeper pages (a cursor each) would pile up.
  if (path === "/api/chats") return !url.searchParams.has("cursor");
  return /^\/api\/chats\/[^/]+$/.test(path) || /^\/api\/apps\/?$/.test(path) || /^\/api\/apps\/\d+$/.test(path);
}

export interface AppCodeRoute {
  appId: string;
  kind: "frame" | "module" | "icon";
}

/** The app and kind of an app-code URL, or null for anything else. */
export function appCodeRoute(url: URL): AppCodeRoute | null {
  const match = /^\/api\/apps\/(\d+)\/(frame|module|icon)$/.exec(url.pathname);
  if (!match?.[1] || !match[2]) return null;
  return { appId: match[1], kind: match[2] as AppCodeRoute["kind"] };
}

/** The cache key of an app-code request: origin + path + `?v=` (+ an icon's `size`); null without a version. */
export function appCodeCacheKey(url: URL): string | null {
  const route = appCodeRoute(url);
  if (!route) return null;
  const v = url.searchParams.get("v");
  if (!v || !/^[A-Za-z0-9._-]{1,128}$/.test(v)) return null;
  const size = route.kind === "icon" ? url.searchParams.get("size") : null;
  return `${url.origin}${url.pathname}?v=${v}${size && /^\d{1,4}$/.test(size) ? `&size=${size}` : ""}`;
}

/** True when `cachedKey` is another version of the same app's same kind of code as `key`. */
export function isOtherVersion(cachedKey: string, key: string): boolean {
  const a = new URL(cachedKey);
  const b = new URL(key);
  return a.origin === b.origin && a.pathname === b.pathname && a.searchParams.get("v") !== b.searchParams.get("v");
}

/** Only a complete, successful answer is worth keeping (never a 4xx, a 5xx or a 304). */
export function isCacheableAppCode(status: number): boolean {
  return status === 200;
}

/** Whether the worker should fall back to a cached copy after this network answer. */
export function shouldFallBack(status: number | "network-error"): boolean {
  return status === "network-error" || status >= 500;
}

/** The slug of a standalone host navigation (`/apps/<slug>/`), or null. */
export function standaloneSlug(url: URL): string | null {
  const match = /^\/apps\/([a-z0-9][a-z0-9_-]{0,127})\/$/.exec(url.pathname);
  return match?.[1] ?? null;
}

const STANDALONE_SLOT = /<script type="application\/json" id="__mobius-standalone-app__">[\s\S]*?<\/script>/;
const MANIFEST_LINK = /<link rel="?manifest"?[^>]*>/;

/** The block of `index.html` naming and painting a home-screen entry (see `backend/server/src/apps/serve.rs`). */
const IDENTITY_BLOCK = /<!-- mobius:identity[\s\S]*?<!-- \/mobius:identity -->/;

/**
 * The current shell (`index.html`) dressed as the standalone host a cached page described: its
 * identity block (the app's name, colours, icons, manifest and identity slot) replaces the
 * shell's; scripts and styles stay the current build's. (A page cached before the block existed
 * moves its slot and manifest link.) Null when the cached page has no identity slot.
 */
export function graftStandalone(indexHtml: string, cachedHtml: string): string | null {
  const slot = STANDALONE_SLOT.exec(cachedHtml)?.[0];
  if (!slot) return null;
  const block = IDENTITY_BLOCK.exec(cachedHtml)?.[0];
  if (block?.includes(slot) && IDENTITY_BLOCK.test(indexHtml)) return indexHtml.replace(IDENTITY_BLOCK, () => block);
  let html = indexHtml;
  const manifest = MANIFEST_LINK.exec(cachedHtml)?.[0];
  if (manifest) html = MANIFEST_LINK.test(html) ? html.replace(MANIFEST_LINK, () => manifest) : html.replace("</head>", () => `${manifest}</head>`);
  return html.replace("</head>", () => `${slot}</head>`);
}
