//! The service worker: precaches the shell (content-revisioned), answers navigations from the
//! network within ~3 s or else from the precached index.html, keeps recently read chats for
//! offline reading, and never caches any other API response. A new version waits until the
//! page says the shell is idle (`SKIP_WAITING`); the very first install takes over at once.

import { clientsClaim } from "workbox-core";
import { cleanupOutdatedCaches, matchPrecache, precacheAndRoute } from "workbox-precaching";
import { NavigationRoute, registerRoute } from "workbox-routing";
import { NetworkFirst } from "workbox-strategies";
import { isShellData, SHELL_DATA_CACHE } from "./pwa/cachePolicy";

declare const self: ServiceWorkerGlobalScope & { __WB_MANIFEST: (string | { url: string; revision: string | null })[] };

const NAVIGATION_TIMEOUT_MS = 3_000;

precacheAndRoute(self.__WB_MANIFEST);
cleanupOutdatedCaches();

// First install: no page has a controller yet, so take over straight away.
const firstInstall = !self.registration.active;
self.addEventListener("install", () => {
  if (firstInstall) void self.skipWaiting();
});
if (firstInstall) clientsClaim();

self.addEventListener("message", (event: ExtendableMessageEvent) => {
  const data = event.data as { type?: string } | null;
  if (data?.type === "SKIP_WAITING") void self.skipWaiting();
});

self.addEventListener("activate", (event) => {
  // Drop runtime caches from older versions of this worker (names we no longer use).
  event.waitUntil(
    caches.keys().then((names) =>
      Promise.all(names.filter((n) => n.startsWith("mobius-") && n !== SHELL_DATA_CACHE).map((n) => caches.delete(n))),
    ),
  );
});

async function navigationHandler({ request }: { request: Request }): Promise<Response> {
  try {
    const response = await Promise.race([
      fetch(request, { cache: "reload" }),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("navigation timeout")), NAVIGATION_TIMEOUT_MS)),
    ]);
    if (response.ok || response.status < 500) return response;
    throw new Error(`navigation answered ${response.status}`);
  } catch {
    const cached = await matchPrecache("/index.html");
    return cached ?? Response.error();
  }
}

registerRoute(new NavigationRoute(navigationHandler, { denylist: [/^\/api\//] }));

// Every other /api/ request goes to the network untouched (no route matches it).

registerRoute(
  ({ url, request, sameOrigin }) => sameOrigin && isShellData(url, request.method),
  new NetworkFirst({ cacheName: SHELL_DATA_CACHE, networkTimeoutSeconds: 4 }),
);
