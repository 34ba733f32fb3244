import { describe, expect, it } from "vitest";
import {
  appCodeCacheKey,
  appCodeRoute,
  graftStandalone,
  isCacheableAppCode,
  isCacheableAsset,
  isOtherVersion,
  isShellData,
  isStaticAsset,
  MAX_PRECACHE_URLS,
  precacheUrls,
  shouldFallBack,
  standaloneSlug,
} from "./cachePolicy";

const u = (path: string) => new URL(path, "https://m.example");

describe("service worker cache policy", () => {
  it("keeps the chat list and chat pages for offline reading", () => {
    expect(isShellData(u("/api/chats"))).toBe(true);
    expect(isShellData(u("/api/chats?limit=50"))).toBe(true);
    expect(isShellData(u("/api/chats?limit=50&cursor=r.1.abc"))).toBe(false);
    expect(isShellData(u("/api/chats/abc/summary"))).toBe(false);
    expect(isShellData(u("/api/chats/abc?limit=20"))).toBe(true);
    expect(isShellData(u("/api/chats/abc?limit=20&before=40"))).toBe(true);
  });

  it("keeps the app list and an app's row", () => {
    expect(isShellData(u("/api/apps"))).toBe(true);
    expect(isShellData(u("/api/apps/"))).toBe(true);
    expect(isShellData(u("/api/apps/12"))).toBe(true);
    expect(isShellData(u("/api/apps/12/history"))).toBe(false);
    expect(isShellData(u("/api/apps/12"), "PATCH")).toBe(false);
  });

  it("never caches streams, runs, tool output, writes, storage or other API routes", () => {
    expect(isShellData(u("/api/chats/abc/stream"))).toBe(false);
    expect(isShellData(u("/api/chats/abc/runs"))).toBe(false);
    expect(isShellData(u("/api/chats/abc/tool-output/t1"))).toBe(false);
    expect(isShellData(u("/api/chats"), "POST")).toBe(false);
    expect(isShellData(u("/api/auth/session"))).toBe(false);
    expect(isShellData(u("/api/events/system"))).toBe(false);
    expect(isShellData(u("/api/storage/apps/1/a.json"))).toBe(false);
    expect(isShellData(u("/api/auth/app-token"))).toBe(false);
  });
});

describe("app code caching", () => {
  it("recognises frame, module and icon routes only", () => {
    expect(appCodeRoute(u("/api/apps/3/frame?v=ab"))).toEqual({ appId: "3", kind: "frame" });
    expect(appCodeRoute(u("/api/apps/3/module"))).toEqual({ appId: "3", kind: "module" });
    expect(appCodeRoute(u("/api/apps/3/icon"))).toEqual({ appId: "3", kind: "icon" });
    expect(appCodeRoute(u("/api/apps/3/history"))).toBeNull();
    expect(appCodeRoute(u("/api/apps/x/module"))).toBeNull();
  });

  it("keys by path and v only: the token never splits or leaks into the key", () => {
    const key = appCodeCacheKey(u("/api/apps/3/module?v=abc123&token=SECRET&_=9"));
    expect(key).toBe("https://m.example/api/apps/3/module?v=abc123");
    expect(appCodeCacheKey(u("/api/apps/3/module?token=OTHER&v=abc123"))).toBe(key);
    expect(appCodeCacheKey(u("/api/apps/3/frame?v=abc123"))).toBe("https://m.example/api/apps/3/frame?v=abc123");
    expect(appCodeCacheKey(u("/api/apps/3/icon?v=abc123&size=192"))).toBe("https://m.example/api/apps/3/icon?v=abc123&size=192");
  });

  it("has no key without a version (nothing unversioned is cached)", () => {
    expect(appCodeCacheKey(u("/api/apps/3/module"))).toBeNull();
    expect(appCodeCacheKey(u("/api/apps/3/module?v="))).toBeNull();
    expect(appCodeCacheKey(u("/api/apps/3/module?v=a%20b"))).toBeNull();
    expect(appCodeCacheKey(u("/api/chats?v=1"))).toBeNull();
  });

  it("evicts other versions of the same app's same code, nothing else", () => {
    const key = "https://m.example/api/apps/3/module?v=new";
    expect(isOtherVersion("https://m.example/api/apps/3/module?v=old", key)).toBe(true);
    expect(isOtherVersion(key, key)).toBe(false);
    expect(isOtherVersion("https://m.example/api/apps/3/frame?v=old", key)).toBe(false);
    expect(isOtherVersion("https://m.example/api/apps/4/module?v=old", key)).toBe(false);
  });

  it("stores only 200s and falls back only on network errors and 5xx", () => {
    expect(isCacheableAppCode(200)).toBe(true);
    for (const status of [204, 304, 401, 403, 404, 500, 503]) expect(isCacheableAppCode(status)).toBe(false);
    expect(shouldFallBack("network-error")).toBe(true);
    expect(shouldFallBack(503)).toBe(true);
    expect(shouldFallBack(404)).toBe(false);
    expect(shouldFallBack(401)).toBe(false);
  });
});

describe("standalone hosts", () => {
  it("recognise /apps/<slug>/ navigations", () => {
    expect(standaloneSlug(u("/apps/hello/"))).toBe("hello");
    expect(standaloneSlug(u("/apps/hello"))).toBeNull();
    expect(standaloneSlug(u("/apps/hello/manifest.json"))).toBeNull();
    expect(standaloneSlug(u("/chat/x"))).toBeNull();
  });

  it("graft the cached identity and manifest onto the current shell", () => {
    const index = '<head><link rel="manifest" href="/manifest.webmanifest" /><script src="/assets/new.js"></script></head><body></body>';
    const cached =
      '<head><link rel="manifest" href="/apps/hello/manifest.json"><script src="/assets/old.js"></script>' +
      '<script type="application/json" id="__mobius-standalone-app__">{"id":1,"slug":"hello"}</script></head>';
    const grafted = graftStandalone(index, cached) ?? "";
    expect(grafted).toContain('href="/apps/hello/manifest.json"');
    expect(grafted).not.toContain("/manifest.webmanifest");
    expect(grafted).toContain('id="__mobius-standalone-app__">{"id":1,"slug":"hello"}');
    expect(grafted).toContain("/assets/new.js");
    expect(grafted).not.toContain("/assets/old.js");
    expect(graftStandalone(index, "<head></head>")).toBeNull();
  });

  it("graft the cached app's whole identity block (name, colours, icons) over the shell's", () => {
    const index =
      '<head><!-- mobius:identity (shell) --><meta name="theme-color" content="#f6f6f3"><link rel="manifest" href="/manifest.webmanifest">' +
      '<link rel="apple-touch-icon" href="/icons/apple-touch-icon.png"><title>Möbius</title><!-- /mobius:identity -->' +
      '<script src="/assets/new.js"></script></head><body></body>';
    const cached =
      '<head><!-- mobius:identity of hello --><meta name="theme-color" content="#336699"><link rel="manifest" href="/apps/hello/manifest.json">' +
      '<link rel="apple-touch-icon" href="/apps/hello/icon.png?v=1&amp;size=192"><title>Hello</title>' +
      '<script type="application/json" id="__mobius-standalone-app__">{"id":1,"slug":"hello"}</script><!-- /mobius:identity -->' +
      '<script src="/assets/old.js"></script></head>';
    const grafted = graftStandalone(index, cached) ?? "";
    for (const own of ['content="#336699"', "/apps/hello/manifest.json", "/apps/hello/icon.png", "<title>Hello</title>", '{"id":1,"slug":"hello"}', "/assets/new.js"]) {
      expect(grafted).toContain(own);
    }
    for (const shell of ["#f6f6f3", "/manifest.webmanifest", "apple-touch-icon.png", "<title>Möbius</title>", "/assets/old.js"]) {
      expect(grafted).not.toContain(shell);
    }
  });
});

describe("app assets (offline.precache)", () => {
  it("keeps same-origin static assets only, deduplicated and bounded", () => {
    const origin = "https://m.example";
    expect(
      precacheUrls(
        [
          "/app-assets/by-id/3/logo.png",
          "/app-assets/by-id/3/logo.png",
          "https://m.example/app-assets/notes/fonts/a.woff2",
          "/vendor/katex/katex.min.css",
          "/api/apps/3/module?v=abc",
          "https://elsewhere.example/app-assets/x/y.png",
          "javascript:alert(1)",
          "/settings",
          42,
        ],
        origin,
      ),
    ).toEqual(["/app-assets/by-id/3/logo.png", "/app-assets/notes/fonts/a.woff2", "/vendor/katex/katex.min.css"]);
    expect(precacheUrls("nope", origin)).toEqual([]);
    expect(precacheUrls(Array.from({ length: 100 }, (_, i) => `/app-assets/by-id/1/${i}.png`), origin)).toHaveLength(MAX_PRECACHE_URLS);
  });

  it("stores only real answers, never the shell's HTML fallback", () => {
    expect(isCacheableAsset(200, "image/png")).toBe(true);
    expect(isCacheableAsset(200, "text/html; charset=utf-8")).toBe(false);
    expect(isCacheableAsset(404, "image/png")).toBe(false);
    expect(isStaticAsset(new URL("https://m.example/vendor/katex/fonts/a.woff2"))).toBe(true);
    expect(isStaticAsset(new URL("https://m.example/vendor/"))).toBe(false);
  });
});
