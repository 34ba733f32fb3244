// A published page (`/sites/<token>/`): app-frame.js runs with a `site` config and no parent, and
// is its own storage host — reads from the page's data route, every write refused as read-only.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

type Deliver = (message: Record<string, unknown>) => void;
type Host = (message: Record<string, unknown>, deliver: Deliver) => void;

const BASE = "http://site.test/sites/tok/";
const fetched: string[] = [];
let host: Host;

/** One storage call through the page's host: the `storage-rpc-result` it delivers. */
function call(method: string, args: unknown[]): Promise<Record<string, unknown>> {
  return new Promise((resolve) => host({ type: "moebius:storage-rpc", requestId: `r-${method}`, method, args }, resolve));
}

beforeAll(async () => {
  vi.stubGlobal(
    "fetch",
    vi.fn((url: string, init: RequestInit) => {
      fetched.push(url);
      expect(init.credentials).toBe("omit");
      const path = url.slice(BASE.length);
      if (path === "data/board.json") return Promise.resolve(new Response('{"items":["Milk"]}', { headers: { "Content-Type": "application/json", ETag: '"v1"' } }));
      if (path === "data/note.txt") return Promise.resolve(new Response("hello", { headers: { "Content-Type": "text/plain; charset=utf-8" } }));
      if (path.startsWith("list/")) return Promise.resolve(new Response(JSON.stringify({ entries: [{ name: "board.json", path: "board.json", type: "file" }], next_cursor: null }), { headers: { "Content-Type": "application/json" } }));
      return Promise.resolve(new Response(JSON.stringify({ code: "not_found", message: "There is no file at this path." }), { status: 404 }));
    }),
  );
  const { default: source } = await import("../../public/app-frame.js?raw");
  const config = document.createElement("script");
  config.id = "mobius-frame-config";
  config.type = "application/json";
  config.textContent = JSON.stringify({ appId: 5, name: "Board", origin: "http://site.test", site: { base: BASE, live: false } });
  document.body.appendChild(config);
  // eslint-disable-next-line @typescript-eslint/no-implied-eval
  (new Function(source) as () => void)();
  const runtime = (globalThis as { __mobiusRuntimeConfig?: { storageHost?: Host; getToken: () => Promise<unknown> } }).__mobiusRuntimeConfig;
  expect(typeof runtime?.storageHost).toBe("function");
  expect(await runtime?.getToken()).toBeNull();
  host = runtime?.storageHost as Host;
});

afterAll(() => {
  vi.unstubAllGlobals();
});

describe("a published page's own storage host", () => {
  it("loads the module from the page's prefix, with no parent to ask", () => {
    expect(fetched).toContain(`${BASE}module.js`);
  });

  it("reads from the page's data route, as the shell's host would answer", async () => {
    expect(await call("get", ["board.json"])).toMatchObject({ type: "moebius:storage-rpc-result", requestId: "r-get", ok: true, result: { items: ["Milk"] } });
    expect(await call("getText", ["note.txt"])).toMatchObject({ ok: true, result: "hello" });
    expect(await call("getWithVersion", ["board.json", "text"])).toMatchObject({ ok: true, result: { value: '{"items":["Milk"]}', version: '"v1"' } });
    expect(await call("get", ["missing.json"])).toMatchObject({ ok: true, result: null });
    expect(await call("list", ["", { includeContent: false }])).toMatchObject({ ok: true, result: [{ name: "board.json" }] });
    expect(await call("get", ["note.txt"])).toMatchObject({ ok: false, error: { code: "kind_mismatch" } });
    expect(await call("get", ["../secret"])).toMatchObject({ ok: false, error: { code: "invalid_path", status: 400 } });
  });

  it("refuses every write as read-only, with a message an app can show", async () => {
    const write = await call("durableWrite", ["board.json", { items: [] }, { kind: "json" }]);
    expect(write).toMatchObject({ ok: false, error: { name: "DurableWriteError", code: "read_only", status: 403, path: "board.json", retryable: false } });
    expect(String((write.error as { message: string }).message)).toMatch(/read-only copy/);
    expect(await call("remove", ["board.json"])).toMatchObject({ ok: false, error: { code: "read_only" } });
    expect(await call("queueSignals", [[]])).toMatchObject({ ok: false, error: { code: "read_only" } });
    expect(await call("pendingCount", [])).toMatchObject({ ok: true, result: 0 });
    expect(await call("subscribe", ["s1", "board.json", "json"])).toMatchObject({ ok: true, result: null });
    const before = fetched.length;
    await call("durableWrite", ["x.json", 1, {}]);
    expect(fetched.length).toBe(before);
  });
});
