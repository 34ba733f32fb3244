//! The service worker: precaches the shell (content-revisioned),
//! answers navigations from the network within ~3 s or else from the precached index.html,
//! keeps recently read chats and the app list for offline reading, and keeps the module of
//! every app opened (per build) so it starts again with the network cut. (The sandboxed frame's
//! navigation never reaches a service worker; its document, per build, is kept by the browser's
//! HTTP cache.)
//! Standalone app hosts (`/apps/<slug>/`) fall back to the shell dressed with the app's last
//! seen identity. The static assets an opened app lists in `offline.precache` are fetched ahead
//! (`moebius:precache-app`) and, like `/vendor/` files, served from the cache with a background
//! refresh. No other API response is cached. Notifications: `pwa/pushWorker.ts`. A new version waits until the page says the
//! shell is idle (`SKIP_WAITING`); the very first install takes over at once.

import { clientsClaim } from "workbox-core";
import { cleanupOutdatedCaches, matchPrecache, precacheAndRoute } from "workbox-precaching";
import { NavigationRoute, registerRoute } from "workbox-routing";
import { NetworkFirst } from "workbox-strategies";
import {
  APP_ASSETS_CACHE,
  APP_CODE_CACHE,
  appAssetsPrefix,
  appCodeCacheKey,
  appCodeRoute,
  graftStandalone,
  isCacheableAppCode,
  isCacheableAsset,
  isOtherVersion,
  isShellData,
  isStaticAsset,
  precacheUrls,
  RUNTIME_CACHES,
  SHELL_DATA_CACHE,
  shouldFallBack,
  STANDALONE_CACHE,
  standaloneSlug,
} from "./pwa/cachePolicy";
import { installPushHandlers } from "./pwa/pushWorker";

declare const self: ServiceWorkerGlobalScope & { __WB_MANIFEST: (string | { url: string; revision: string | null })[] };

const NAVIGATION_TIMEOUT_MS = 3_000;

// No `directoryIndex`: `/` is a navigation like any other (network first), never the
// precached index.html of whichever shell build installed this worker (the server may serve
// another one now: the agent rebuilds the shell, the owner goes back to a build or to stock).
precacheAndRoute(self.__WB_MANIFEST, { directoryIndex: "" });
cleanupOutdatedCaches();
installPushHandlers(self);

/** Requests the worker never answers: the browser sends them straight to the network, without
 *  waking this worker (Service Worker static routing, where the browser has it). App storage is
 *  on every app write's path, and the worker never caches it. */
const NETWORK_ONLY_PATHS = ["/api/storage/*", "/api/client-signal"];

interface StaticRoutingInstallEvent extends ExtendableEvent {
  addRoutes?: (rules: { condition: { urlPattern: unknown }; source: "network" }[]) => Promise<void>;
}

// First install: no page has a controller yet, so take over straight away.
const firstInstall = !self.registration.active;
self.addEventListener("install", (event: StaticRoutingInstallEvent) => {
  const Pattern = (self as unknown as { URLPattern?: new (init: { pathname: string }) => unknown }).URLPattern;
  if (typeof event.addRoutes === "function" && Pattern) {
    const rules = NETWORK_ONLY_PATHS.map((pathname) => ({ condition: { urlPattern: new Pattern({ pathname }) }, source: "network" as const }));
    event.waitUntil(event.addRoutes(rules).catch(() => undefined));
  }
  if (firstInstall) void self.skipWaiting();
});
if (firstInstall) clientsClaim();

self.addEventListener("message", (event: ExtendableMessageEvent) => {
  const data = event.data as { type?: string; appId?: unknown; urls?: unknown } | null;
  if (data?.type === "SKIP_WAITING") void self.skipWaiting();
  if (data?.type === "moebius:precache-app" && typeof data.appId === "number" && Number.isSafeInteger(data.appId)) {
    event.waitUntil(precacheApp(data.appId, precacheUrls(data.urls, self.location.origin)).catch(() => undefined));
  }
});

// ---------- app assets: what an app's manifest lists in offline.precache ----------

/** Fetches and keeps each of `urls` not kept yet; drops the app's assets it no longer lists. */
async function precacheApp(appId: number, urls: string[]): Promise<void> {
  const cache = await caches.open(APP_ASSETS_CACHE);
  await Promise.all(
    urls.map(async (url) => {
      if (await cache.match(url)) return;
      const response = await fetch(url, { cache: "no-cache", credentials: "omit" }).catch(() => null);
      if (response && isCacheableAsset(response.status, response.headers.get("Content-Type"))) await cache.put(url, response);
    }),
  );
  const prefix = self.location.origin + appAssetsPrefix(appId);
  const keep = new Set(urls.map((u) => self.location.origin + u));
  const stale = (await cache.keys()).filter((r) => r.url.startsWith(prefix) && !keep.has(r.url));
  await Promise.all(stale.map((r) => cache.delete(r)));
}

async function assetHandler({ request, url, event }: { request: Request; url: URL; event: ExtendableEvent }): Promise<Response> {
  const cache = await caches.open(APP_ASSETS_CACHE);
  const cached = await cache.match(request, { ignoreVary: true });
  // Stored: a refresh of a kept asset, or a /vendor/ file (a few pinned files any app may link).
  const keep = cached !== undefined || url.pathname.startsWith("/vendor/");
  const refresh = fetch(request, { cache: "no-cache" }).then(async (fresh) => {
    if (keep && isCacheableAsset(fresh.status, fresh.headers.get("Content-Type"))) await cache.put(request, fresh.clone());
    return fresh;
  });
  if (cached) {
    event.waitUntil(refresh.catch(() => undefined));
    return cached;
  }
  return refresh.catch(() => Response.error());
}

// Static assets: cache first when kept, else the network (only /vendor/ files are added here).
registerRoute(
  ({ url, request, sameOrigin }) => sameOrigin && request.method === "GET" && isStaticAsset(url) && !request.headers.has("Range"),
  assetHandler,
);

self.addEventListener("activate", (event) => {
  // Drop runtime caches from older versions of this worker (names we no longer use).
  event.waitUntil(
    caches.keys().then((names) =>
      Promise.all(names.filter((n) => n.startsWith("mobius-") && !RUNTIME_CACHES.includes(n)).map((n) => caches.delete(n))),
    ),
  );
});

function boundedNavigation(request: Request): Promise<Response> {
  return Promise.race([
    fetch(request, { cache: "reload" }),
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error("navigation timeout")), NAVIGATION_TIMEOUT_MS)),
  ]);
}

async function navigationHandler({ request }: { request: Request }): Promise<Response> {
  try {
    const response = await boundedNavigation(request);
    if (response.ok || response.status < 500) return response;
    throw new Error(`navigation answered ${response.status}`);
  } catch {
    const cached = await matchPrecache("/index.html");
    return cached ?? Response.error();
  }
}

/** `/apps/<slug>/`: network first; offline, the current shell carrying the app's identity. */
async function standaloneHandler({ request, url }: { request: Request; url: URL }): Promise<Response> {
  const cache = await caches.open(STANDALONE_CACHE);
  try {
    const response = await boundedNavigation(request);
    if (response.status === 200 && (response.headers.get("Content-Type") ?? "").startsWith("text/html")) {
      await cache.put(url.pathname, response.clone());
      return response;
    }
    if (response.status < 500) return response;
    throw new Error(`standalone host answered ${response.status}`);
  } catch {
    const [index, cached] = await Promise.all([matchPrecache("/index.html"), cache.match(url.pathname)]);
    if (!index) return cached ?? Response.error();
    if (!cached) return index;
    const grafted = graftStandalone(await index.clone().text(), await cached.text());
    return grafted === null ? index : new Response(grafted, { status: 200, headers: withoutLength(index.headers) });
  }
}

registerRoute(({ request, url, sameOrigin }) => sameOrigin && request.mode === "navigate" && standaloneSlug(url) !== null, standaloneHandler);
// `/recovery` is the server's own page (it must work whatever the shell is), and a published page
// (`/sites/<token>/`) is the server's to answer — a 404 once it is unpublished, never the shell:
// always the network.
registerRoute(new NavigationRoute(navigationHandler, { denylist: [/^\/api\//, /^\/apps\/[^/]+\/$/, /^\/recovery(\/|$)/, /^\/sites(\/|$)/] }));

// ---------- app code: frame documents and modules, per build ----------

function withoutLength(headers: Headers): Headers {
  const copy = new Headers(headers);
  copy.delete("Content-Length");
  return copy;
}

async function store(cache: Cache, key: string, response: Response): Promise<void> {
  await cache.put(key, response);
  const keys = await cache.keys();
  await Promise.all(keys.filter((r) => isOtherVersion(r.url, key)).map((r) => cache.delete(r)));
}

/** Another cached build of the same app's code, for when the network has nothing better. */
async function anyVersion(cache: Cache, key: string): Promise<Response | undefined> {
  const keys = await cache.keys();
  const other = keys.find((r) => isOtherVersion(r.url, key));
  return other ? cache.match(other) : undefined;
}

async function appCodeHandler({ request, url, event }: { request: Request; url: URL; event: ExtendableEvent }): Promise<Response> {
  const route = appCodeRoute(url);
  const key = appCodeCacheKey(url);
  if (!route || !key) return fetch(request);
  const cache = await caches.open(APP_CODE_CACHE);
  const cached = await cache.match(key);
  if (cached) {
    // The module of a build never changes; the frame document may (a server update), so it
    // is refreshed in the background for next time.
    if (route.kind === "frame") {
      event.waitUntil(
        fetch(request, { cache: "no-cache" })
          .then((fresh) => (isCacheableAppCode(fresh.status) ? store(cache, key, fresh) : undefined))
          .catch(() => undefined),
      );
    }
    return cached;
  }
  let response: Response;
  try {
    response = await fetch(request, { cache: "no-cache" });
  } catch {
    const fallback = await anyVersion(cache, key);
    return fallback ? fallback : Response.error();
  }
  if (isCacheableAppCode(response.status)) {
    await store(cache, key, response.clone());
    return response;
  }
  if (shouldFallBack(response.status)) {
    const fallback = await anyVersion(cache, key);
    if (fallback) return fallback;
  }
  return response;
}

registerRoute(({ url, request, sameOrigin }) => sameOrigin && request.method === "GET" && appCodeRoute(url) !== null, appCodeHandler);

// Every other /api/ request goes to the network untouched (no route matches it).

registerRoute(
  ({ url, request, sameOrigin }) => sameOrigin && isShellData(url, request.method),
  new NetworkFirst({ cacheName: SHELL_DATA_CACHE, networkTimeoutSeconds: 4 }),
);
