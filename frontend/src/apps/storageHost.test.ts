import { describe, expect, it } from "vitest";
import { AppStorageHost, encodePath, fileUrl, listUrl, type FrameSink, type Mirror } from "./storageHost";

interface Call {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

type Answer = { status: number; body?: string; headers?: Record<string, string> } | "network-error";

/** A scripted server: answers by "METHOD url", in order when a list is given. */
function server(routes: Record<string, Answer | Answer[]>) {
  const calls: Call[] = [];
  const fetchImpl = (input: RequestInfo | URL, init: RequestInit = {}) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const method = init.method ?? "GET";
    calls.push({ method, url, headers: { ...(init.headers as Record<string, string>) }, body: init.body });
    const route = routes[`${method} ${url}`];
    const answer = Array.isArray(route) ? route.shift() : route;
    if (answer === undefined) return Promise.reject(new Error(`unexpected ${method} ${url}`));
    if (answer === "network-error") return Promise.reject(new TypeError("Failed to fetch"));
    return Promise.resolve(new Response(answer.body ?? null, { status: answer.status, headers: answer.headers ?? {} }));
  };
  return { calls, fetchImpl: fetchImpl };
}

function memoryMirror(): Mirror & { store: Map<string, Response> } {
  const store = new Map<string, Response>();
  return {
    store,
    get: (url) => Promise.resolve(store.get(url)?.clone()),
    put: (url, response) => {
      store.set(url, response);
      return Promise.resolve();
    },
    delete: (url) => {
      store.delete(url);
      return Promise.resolve();
    },
  };
}

function sinkLog(): FrameSink & { messages: Record<string, unknown>[] } {
  const messages: Record<string, unknown>[] = [];
  return { messages, post: (m) => messages.push(m) };
}

const json = (value: unknown, etag = '"v1"') => ({ status: 200, body: JSON.stringify(value), headers: { "Content-Type": "application/json", ETag: etag } });

function hostWith(routes: Record<string, Answer | Answer[]>, tokens: string[] = ["app-token"]) {
  const srv = server(routes);
  const mirror = memoryMirror();
  let forced = 0;
  const host = new AppStorageHost({
    appId: 3,
    getToken: (force) => {
      if (force) forced++;
      return Promise.resolve(tokens[Math.min(forced, tokens.length - 1)] ?? null);
    },
    fetch: srv.fetchImpl,
    mirror,
    persistOutbox: false,
  });
  return { host, ...srv, mirror, sink: sinkLog() };
}

describe("storage URLs", () => {
  it("encode each segment and keep the slashes", () => {
    expect(encodePath("notes/my day.json")).toBe("notes/my%20day.json");
    expect(fileUrl(3, "a/b.json")).toBe("/api/storage/apps/3/a/b.json");
    expect(listUrl(3, "")).toBe("/api/storage/apps-list/3/");
    expect(listUrl(3, "notes", { includeContent: true, cursor: "abc" })).toBe("/api/storage/apps-list/3/notes?include_content=1&cursor=abc");
  });
});

describe("storage RPC → HTTP", () => {
  it("get reads JSON with the app token, and a missing file is null", async () => {
    const { host, calls, sink } = hostWith({
      "GET /api/storage/apps/3/counter.json": json({ n: 2 }),
      "GET /api/storage/apps/3/none.json": { status: 404, body: '{"code":"not_found","message":"x"}' },
    });
    expect(await host.call("get", ["counter.json"], sink)).toEqual({ n: 2 });
    expect(await host.call("get", ["none.json"], sink)).toBeNull();
    expect(calls[0]?.headers.Authorization).toBe("Bearer app-token");
  });

  it("set PUTs JSON; setText sends {content} to a non-JSON path; remove DELETEs", async () => {
    const { host, calls, sink } = hostWith({
      "PUT /api/storage/apps/3/counter.json": { status: 204, headers: { ETag: '"v2"' } },
      "PUT /api/storage/apps/3/notes.txt": { status: 204, headers: { ETag: '"t1"' } },
      "DELETE /api/storage/apps/3/old.json": { status: 404 },
    });
    expect(await host.call("set", ["counter.json", { n: 3 }], sink)).toEqual({ queued: false, version: '"v2"' });
    expect(calls[0]).toMatchObject({ method: "PUT", headers: { "Content-Type": "application/json" }, body: '{"n":3}' });
    await host.call("setText", ["notes.txt", "hello"], sink);
    expect(calls[1]).toMatchObject({ headers: { "Content-Type": "application/json" }, body: '{"content":"hello"}' });
    // Removing what is already gone is fine.
    expect(await host.call("remove", ["old.json"], sink)).toEqual({ queued: false, version: null });
    await expect(host.call("setText", ["doc.json", "x"], sink)).rejects.toMatchObject({ code: "kind_mismatch" });
  });

  it("getWithVersion returns the ETag; durableWrite sends If-Match / If-None-Match and maps 412 to conflict", async () => {
    const { host, calls, sink } = hostWith({
      "GET /api/storage/apps/3/doc.json": json({ a: 1 }, '"e1"'),
      "PUT /api/storage/apps/3/doc.json": [
        { status: 204, headers: { ETag: '"e2"' } },
        { status: 412, body: '{"code":"precondition_failed","message":"The file changed."}' },
      ],
      "PUT /api/storage/apps/3/new.json": { status: 204, headers: { ETag: '"n1"' } },
    });
    expect(await host.call("getWithVersion", ["doc.json"], sink)).toEqual({ value: { a: 1 }, version: '"e1"' });
    expect(await host.call("durableWrite", ["doc.json", { a: 2 }, { ifMatch: '"e1"' }], sink)).toEqual({ version: '"e2"' });
    expect(calls[1]?.headers["If-Match"]).toBe('"e1"');
    await expect(host.call("durableWrite", ["doc.json", { a: 3 }, { ifMatch: '"e1"' }], sink)).rejects.toMatchObject({ code: "conflict", status: 412 });
    await host.call("durableWrite", ["new.json", {}, { ifNoneMatch: "*" }], sink);
    expect(calls[3]?.headers["If-None-Match"]).toBe("*");
    expect(calls[3]?.headers["If-Match"]).toBeUndefined();
  });

  it("typed reads refuse a stored kind they cannot read", async () => {
    const { host, sink } = hostWith({
      "GET /api/storage/apps/3/notes.txt": [
        { status: 200, body: "hi", headers: { "Content-Type": "text/plain; charset=utf-8" } },
        { status: 200, body: "hi", headers: { "Content-Type": "text/plain; charset=utf-8" } },
      ],
    });
    await expect(host.call("get", ["notes.txt"], sink)).rejects.toMatchObject({ code: "kind_mismatch" });
    expect(await host.call("getText", ["notes.txt"], sink)).toBe("hi");
  });

  it("list follows cursors and asks for inline content", async () => {
    const entry = (name: string) => ({ name, path: `notes/${name}`, type: "file", size: 2, modified_at: 1, mime_type: "application/json" });
    const { host, calls, sink } = hostWith({
      "GET /api/storage/apps-list/3/notes?include_content=1": { status: 200, body: JSON.stringify({ entries: [entry("a.json")], next_cursor: "c1" }) },
      "GET /api/storage/apps-list/3/notes?include_content=1&cursor=c1": { status: 200, body: JSON.stringify({ entries: [entry("b.json")], next_cursor: null }) },
    });
    const list = (await host.call("list", ["notes/", { includeContent: true }], sink)) as { name: string }[];
    expect(list.map((e) => e.name)).toEqual(["a.json", "b.json"]);
    expect(calls).toHaveLength(2);
  });

  it("a 401 mints a fresh token and retries once", async () => {
    const { host, calls, sink } = hostWith({ "GET /api/storage/apps/3/a.json": [{ status: 401 }, json(1)] }, ["old", "new"]);
    expect(await host.call("get", ["a.json"], sink)).toBe(1);
    expect(calls.map((c) => c.headers.Authorization)).toEqual(["Bearer old", "Bearer new"]);
  });

  it("rejects paths that climb out of the app", async () => {
    const { host, sink } = hostWith({});
    await expect(host.call("get", ["../4/secret.json"], sink)).rejects.toMatchObject({ code: "invalid_path" });
    await expect(host.call("get", ["/etc/passwd"], sink)).rejects.toMatchObject({ code: "invalid_path" });
    await expect(host.call("nope", [], sink)).rejects.toMatchObject({ code: "unknown_method" });
  });
});

describe("offline behaviour", () => {
  it("queues set while offline, reads its own write, and drains in order when back", async () => {
    const { host, calls, sink } = hostWith({
      "PUT /api/storage/apps/3/a.json": ["network-error", { status: 204, headers: { ETag: '"a2"' } }],
    });
    expect(await host.call("set", ["a.json", { v: 1 }], sink)).toEqual({ queued: true, version: null });
    expect(await host.call("pendingCount", [], sink)).toBe(1);
    // Read-your-writes: no request while the write waits.
    expect(await host.call("get", ["a.json"], sink)).toEqual({ v: 1 });
    expect(calls).toHaveLength(1);
    await host.drain();
    expect(host.pendingCount()).toBe(0);
    expect(calls[1]).toMatchObject({ method: "PUT", body: '{"v":1}' });
  });

  it("a drain asked for while one is failing (the network came back mid-attempt) runs again at once", async () => {
    let failNext: (() => void) | null = null;
    const calls: string[] = [];
    const host = new AppStorageHost({
      appId: 3,
      getToken: () => Promise.resolve("app-token"),
      mirror: null,
      persistOutbox: false,
      fetch: (_input, init = {}) => {
        calls.push(init.method ?? "GET");
        if (calls.length === 1) return Promise.reject(new TypeError("Failed to fetch"));
        if (calls.length === 2) return new Promise<Response>((_resolve, reject) => (failNext = () => reject(new TypeError("Failed to fetch"))));
        return Promise.resolve(new Response(null, { status: 204, headers: { ETag: '"b1"' } }));
      },
    });
    const sink = sinkLog();
    expect(await host.call("set", ["b.json", { v: 1 }], sink)).toEqual({ queued: true, version: null });
    const first = host.drain();
    while (failNext === null) await Promise.resolve();
    // The network returns while that attempt is still failing: the shell asks for another drain.
    const second = host.drain();
    (failNext as () => void)();
    await Promise.all([first, second]);
    expect(host.pendingCount()).toBe(0);
    expect(calls).toEqual(["PUT", "PUT", "PUT"]);
  });

  it("reads fall back to the mirror of the last answer", async () => {
    const { host, sink } = hostWith({ "GET /api/storage/apps/3/c.json": [json({ n: 5 }), "network-error"] });
    expect(await host.call("get", ["c.json"], sink)).toEqual({ n: 5 });
    expect(await host.call("get", ["c.json"], sink)).toEqual({ n: 5 });
  });

  it("a queued write the server refuses for good becomes a dead letter", async () => {
    const { host, sink } = hostWith({
      "PUT /api/storage/apps/3/big.json": ["network-error", { status: 413, body: '{"code":"file_too_large","message":"Too big."}' }],
    });
    await host.call("set", ["big.json", { x: 1 }], sink);
    await host.drain();
    expect(host.pendingCount()).toBe(0);
    expect(sink.messages).toContainEqual({
      type: "moebius:storage-dead-letter",
      path: "big.json",
      error: { code: "file_too_large", message: "Too big.", status: 413 },
    });
  });
});

describe("subscriptions", () => {
  it("answer with the current value, then push changes made through the host", async () => {
    const { host, sink } = hostWith({
      "GET /api/storage/apps/3/s.json": json({ n: 1 }),
      "PUT /api/storage/apps/3/s.json": { status: 204, headers: { ETag: '"s2"' } },
    });
    expect(await host.call("subscribe", ["s.json", "json", "sub-1"], sink)).toEqual({ value: { n: 1 } });
    await host.call("set", ["s.json", { n: 2 }], sink);
    const changes = sink.messages.filter((m) => m.type === "moebius:storage-change");
    expect(changes).toEqual([{ type: "moebius:storage-change", subscriptionId: "sub-1", path: "s.json", value: { n: 2 } }]);
    host.detach(sink);
    await host.call("set", ["s.json", { n: 3 }], sinkLog()).catch(() => undefined);
    expect(sink.messages.filter((m) => m.type === "moebius:storage-change")).toHaveLength(1);
  });
});
