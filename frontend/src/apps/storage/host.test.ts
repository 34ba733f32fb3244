import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { memoryAppDb, signalEvictions, type AppDb, type OpRecord, type SignalRecord } from "./appDb";
import type { FrameSink } from "./frames";
import { AppStorageHost } from "./host";
import { MAX_BLOB_BYTES } from "./outbox";
import { encodePath, fileUrl, listUrl } from "./wire";

interface Call {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

type Answer = { status: number; body?: string; headers?: Record<string, string> } | "network-error";

/** A scripted server: answers by "METHOD url", in order when a list is given (the last one repeats). */
function server(routes: Record<string, Answer | Answer[]>) {
  const calls: Call[] = [];
  const fetchImpl = (input: RequestInfo | URL, init: RequestInit = {}) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const method = init.method ?? "GET";
    calls.push({ method, url, headers: { ...(init.headers as Record<string, string>) }, body: init.body });
    const route = routes[`${method} ${url}`];
    const answer = Array.isArray(route) ? (route.length > 1 ? route.shift() : route[0]) : route;
    if (answer === undefined) return Promise.reject(new Error(`unexpected ${method} ${url}`));
    if (answer === "network-error") return Promise.reject(new TypeError("Failed to fetch"));
    return Promise.resolve(new Response(answer.body ?? null, { status: answer.status, headers: answer.headers ?? {} }));
  };
  return { calls, fetchImpl };
}

/** An app token of app 3, installation `nonce-3`. */
function appToken(tag = "a"): string {
  const payload = btoa(JSON.stringify({ scope: "app", app_id: 3, app_nonce: "nonce-3", tag })).replace(/=+$/, "");
  return `h.${payload}.s`;
}

function sinkLog(): FrameSink & { messages: Record<string, unknown>[] } {
  const messages: Record<string, unknown>[] = [];
  return { messages, post: (m) => messages.push(m) };
}

const json = (value: unknown, etag = '"v1"') => ({ status: 200, body: JSON.stringify(value), headers: { "Content-Type": "application/json", ETag: etag } });
const text = (value: string, etag = '"t1"') => ({ status: 200, body: value, headers: { "Content-Type": "text/plain; charset=utf-8", ETag: etag } });

function hostWith(routes: Record<string, Answer | Answer[]>, options: { online?: boolean; db?: AppDb; locks?: LockManager | null; ownerId?: string; tokens?: (string | null)[] } = {}) {
  const srv = server(routes);
  const db = options.db ?? memoryAppDb();
  const state = { online: options.online ?? true };
  const tokens = options.tokens ?? [appToken()];
  let forced = 0;
  const host = new AppStorageHost({
    appId: 3,
    getToken: (force) => {
      if (force) forced++;
      return Promise.resolve(tokens[Math.min(forced, tokens.length - 1)] ?? null);
    },
    fetch: srv.fetchImpl,
    db,
    online: () => state.online,
    onNetworkError: () => undefined,
    onResponse: () => undefined,
    ownerId: options.ownerId ?? "page-1",
    locks: options.locks ?? null,
    wake: false,
  });
  return { host, ...srv, db, state, sink: sinkLog() };
}

/** Lets queued promise callbacks (and the host's background work) run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

async function failure(promise: Promise<unknown>): Promise<Record<string, unknown>> {
  try {
    await promise;
  } catch (error) {
    return error as Record<string, unknown>;
  }
  throw new Error("expected a rejection");
}

afterEach(() => localStorage.clear());

describe("storage URLs", () => {
  it("encode each segment and keep the slashes", () => {
    expect(encodePath("notes/my day.json")).toBe("notes/my%20day.json");
    expect(fileUrl(3, "a/b.json")).toBe("/api/storage/apps/3/a/b.json");
    expect(listUrl(3, "")).toBe("/api/storage/apps-list/3/");
    expect(listUrl(3, "notes", { includeContent: true, cursor: "abc", limit: 16 })).toBe("/api/storage/apps-list/3/notes?limit=16&include_content=true&cursor=abc");
  });
});

describe("reads", () => {
  it("read through the server the first time (with the app token), then answer from the mirror and revalidate", async () => {
    const { host, calls, sink } = hostWith({
      "GET /api/storage/apps/3/a.json": [json({ n: 1 }), json({ n: 2 }, '"v2"')],
    });
    expect(await host.call("get", ["a.json"], sink)).toEqual({ n: 1 });
    expect(calls[0]?.headers.Authorization).toBe(`Bearer ${appToken()}`);
    expect(calls[0]?.headers["X-Mobius-Version"]).toBe("1");
    await host.call("subscribe", ["s1", "a.json", "json"], sink);
    // The mirror answers at once; the background check finds n: 2 and tells the subscriber.
    expect(await host.call("get", ["a.json"], sink)).toEqual({ n: 1 });
    await vi.waitFor(() => expect(sink.messages).toContainEqual({ type: "moebius:storage-change", subscriptionId: "s1", value: { n: 2 } }));
    expect(await host.call("get", ["a.json"], sink)).toEqual({ n: 2 });
  });

  it("a missing file is null; a server refusal with nothing mirrored is an error, not null", async () => {
    const { host, sink } = hostWith({
      "GET /api/storage/apps/3/none.json": { status: 404 },
      "GET /api/storage/apps/3/broken.json": { status: 500, body: JSON.stringify({ code: "internal", message: "boom" }) },
    });
    expect(await host.call("get", ["none.json"], sink)).toBeNull();
    const error = await failure(host.call("get", ["broken.json"], sink));
    expect(error).toMatchObject({ code: "internal", status: 500 });
  });

  it("offline with nothing mirrored is null; text read as JSON is a kind mismatch", async () => {
    const { host, sink, state } = hostWith({ "GET /api/storage/apps/3/n.txt": text("hello") });
    expect(await host.call("getText", ["n.txt"], sink)).toBe("hello");
    expect(await failure(host.call("get", ["n.txt"], sink))).toMatchObject({ code: "kind_mismatch", status: 415 });
    state.online = false;
    expect(await host.call("get", ["never.json"], sink)).toBeNull();
    expect(await host.call("getText", ["n.txt"], sink)).toBe("hello");
  });

  it("getWithVersion reads every kind with its version, and says when the answer is offline", async () => {
    const { host, sink, state } = hostWith({
      "GET /api/storage/apps/3/d.json": json({ a: 1 }, '"j1"'),
      "GET /api/storage/apps/3/n.txt": text("words", '"t9"'),
      "GET /api/storage/apps/3/b.bin": { status: 200, body: "xyz", headers: { "Content-Type": "application/octet-stream", ETag: '"b1"' } },
    });
    expect(await host.call("getWithVersion", ["d.json", "json"], sink)).toEqual({ value: { a: 1 }, version: '"j1"' });
    expect(await host.call("getWithVersion", ["n.txt", "text"], sink)).toEqual({ value: "words", version: '"t9"' });
    const blob = (await host.call("getWithVersion", ["b.bin", "blob"], sink)) as { value: Blob; version: string };
    expect(blob.version).toBe('"b1"');
    expect(await blob.value.text()).toBe("xyz");
    state.online = false;
    expect(await host.call("getWithVersion", ["d.json"], sink)).toEqual({ value: { a: 1 }, version: '"j1"', offline: true });
  });
});

describe("writes", () => {
  it("durableWrite sends a conditional PUT and answers synced with the new version", async () => {
    const { host, calls, sink } = hostWith({ "PUT /api/storage/apps/3/d.json": { status: 204, headers: { ETag: '"v2"' } } });
    const result = (await host.call("durableWrite", ["d.json", { n: 2 }, { kind: "json", ifMatch: '"v1"' }], sink)) as Record<string, unknown>;
    expect(result).toMatchObject({ durability: "synced", path: "d.json", version: '"v2"' });
    expect(typeof result.writeId).toBe("string");
    expect(calls[0]).toMatchObject({ method: "PUT", body: '{"n":2}', headers: { "Content-Type": "application/json", "If-Match": '"v1"' } });
    expect(host.pendingCount()).toBe(0);
  });

  it("text and blobs go with their content type; a string is text unless the kind says JSON", async () => {
    const { host, calls, sink } = hostWith({
      "PUT /api/storage/apps/3/n.md": { status: 204 },
      "PUT /api/storage/apps/3/p.bin": { status: 204 },
      "PUT /api/storage/apps/3/s.json": { status: 204 },
    });
    await host.call("durableWrite", ["n.md", "# hi", { contentType: "text/markdown" }], sink);
    await host.call("durableWrite", ["p.bin", new Blob(["x"], { type: "image/png" }), { kind: "blob" }], sink);
    await host.call("durableWrite", ["s.json", "a string", { kind: "json" }], sink);
    expect(calls.map((c) => [c.url.split("/").pop(), c.headers["Content-Type"]])).toEqual([
      ["n.md", "text/markdown"],
      ["p.bin", "image/png"],
      ["s.json", "application/json"],
    ]);
    expect(calls[0]?.body).toBe("# hi");
    expect(calls[2]?.body).toBe('"a string"');
  });

  it("a 412 is a conflict (retryable); the mirror learns the server's value without a push that would race the retry", async () => {
    const { host, sink, state } = hostWith({
      "PUT /api/storage/apps/3/d.json": { status: 412, body: JSON.stringify({ code: "precondition_failed", message: "moved" }) },
      "GET /api/storage/apps/3/d.json": json({ theirs: true }, '"v9"'),
    });
    await host.call("subscribe", ["s", "d.json", "json"], sink);
    const error = await failure(host.call("durableWrite", ["d.json", { mine: true }, { ifMatch: '"v1"' }], sink));
    expect(error).toMatchObject({ name: "DurableWriteError", code: "conflict", status: 412, path: "d.json", retryable: true, refusedValue: { mine: true } });
    state.online = false;
    await vi.waitFor(async () => expect(await host.call("getWithVersion", ["d.json"], sink)).toEqual({ value: { theirs: true }, version: '"v9"', offline: true }));
    expect(sink.messages.filter((m) => m.type === "moebius:storage-change").map((m) => m.value)).toEqual([{ mine: true }]);
    expect(sink.messages.filter((m) => m.type === "moebius:storage-dead-letter")).toEqual([]);
  });

  it("a queued conditional write that meets a newer version later is announced to the frames (not as a dead letter)", async () => {
    const { host, sink, state } = hostWith(
      { "PUT /api/storage/apps/3/d.json": { status: 412 }, "GET /api/storage/apps/3/d.json": json({ theirs: true }, '"v9"') },
      { online: false },
    );
    const queued = (await host.call("durableWrite", ["d.json", { mine: true }, { ifMatch: '"v1"' }], sink)) as { writeId: string };
    state.online = true;
    await host.drain(true);
    const conflict = sink.messages.find((m) => m.type === "moebius:storage-conflict");
    expect(conflict?.payload).toMatchObject({ path: "d.json", status: 412, writeId: queued.writeId });
    expect(sink.messages.filter((m) => m.type === "moebius:storage-dead-letter")).toEqual([]);
  });

  it("another refusal is a dead letter: the write rejects and every frame hears of it, even one mounted later", async () => {
    const { host, sink } = hostWith({
      "PUT /api/storage/apps/3/q.json": { status: 413, body: JSON.stringify({ code: "quota_exceeded", message: "full" }) },
      "GET /api/storage/apps/3/q.json": { status: 404 },
    });
    const error = await failure(host.call("durableWrite", ["q.json", { big: 1 }], sink));
    expect(error).toMatchObject({ name: "DurableWriteError", code: "dead_letter", status: 413, retryable: false, refusedValue: { big: 1 } });
    const letter = sink.messages.find((m) => m.type === "moebius:storage-dead-letter");
    expect(letter?.payload).toMatchObject({ path: "q.json", status: 413, refusedValue: { big: 1 }, writeId: error.writeId });
    expect(typeof (letter?.payload as { ts: unknown }).ts).toBe("number");

    // No frame mounted when the queued write is refused: the next frame hears of it.
    const queued = hostWith({ "PUT /api/storage/apps/3/x.json": { status: 400 }, "GET /api/storage/apps/3/x.json": { status: 404 } }, { online: false });
    const first = sinkLog();
    expect(await queued.host.call("durableWrite", ["x.json", 1], first)).toMatchObject({ durability: "queued" });
    queued.host.detach(first);
    queued.state.online = true;
    await queued.host.drain(true);
    const later = sinkLog();
    queued.host.attach(later);
    expect(later.messages.map((m) => m.type)).toEqual(["moebius:storage-dead-letter"]);
  });

  it("offline, writes wait in the outbox: reads see them, a newer write to a path replaces the older, and all go once online", async () => {
    const { host, calls, sink, state } = hostWith({
      "PUT /api/storage/apps/3/a.json": { status: 204, headers: { ETag: '"a2"' } },
      "PUT /api/storage/apps/3/b.bin": { status: 204 },
      "DELETE /api/storage/apps/3/c.json": { status: 404 },
    });
    state.online = false;
    expect(await host.call("durableWrite", ["a.json", { v: 1 }], sink)).toMatchObject({ durability: "queued", path: "a.json" });
    expect(await host.call("durableWrite", ["a.json", { v: 2 }], sink)).toMatchObject({ durability: "queued" });
    expect(await host.call("durableWrite", ["b.bin", new Blob([new Uint8Array([1, 2])]), { kind: "blob" }], sink)).toMatchObject({ durability: "queued" });
    expect(await host.call("remove", ["c.json"], sink)).toEqual({ queued: true });
    expect(await host.call("get", ["a.json"], sink)).toEqual({ v: 2 });
    expect(await host.call("get", ["c.json"], sink)).toBeNull();
    expect(await host.call("pendingCount", [], sink)).toBe(3);
    expect(calls).toEqual([]);
    state.online = true;
    await host.drain(true);
    expect(calls.map((c) => `${c.method} ${c.url.split("/").pop()}`)).toEqual(["PUT a.json", "PUT b.bin", "DELETE c.json"]);
    expect(calls[0]?.body).toBe('{"v":2}');
    expect(host.pendingCount()).toBe(0);
    // The mirror holds what the server confirmed.
    state.online = false;
    expect(await host.call("get", ["a.json"], sink)).toEqual({ v: 2 });
  });

  it("a write the server confirms at once never touches the device's database; one answered 'queued' is stored first", async () => {
    const db = memoryAppDb();
    const added = vi.spyOn(db, "addOp");
    const { host, sink, state } = hostWith({ "PUT /api/storage/apps/3/a.json": { status: 204 } }, { db });
    await host.call("durableWrite", ["a.json", 1], sink);
    expect(added).not.toHaveBeenCalled();
    state.online = false;
    await host.call("durableWrite", ["a.json", 2], sink);
    expect(added).toHaveBeenCalledTimes(1);
    expect((await db.listOps("3:nonce-3")).map((o) => o.value)).toEqual([2]);
  });

  it("a confirmed write is what the next page reads from the device, even before it revalidates", async () => {
    const db = memoryAppDb();
    const first = hostWith({ "GET /api/storage/apps/3/c.json": { status: 404 }, "PUT /api/storage/apps/3/c.json": { status: 204, headers: { ETag: '"c1"' } } }, { db });
    expect(await first.host.call("get", ["c.json"], first.sink)).toBeNull();
    await first.host.call("durableWrite", ["c.json", { n: 1 }], first.sink);
    // A reload: a new page (host) on the same device, the server slow to answer.
    const next = hostWith({ "GET /api/storage/apps/3/c.json": "network-error" }, { db, ownerId: "page-2" });
    expect(await next.host.call("get", ["c.json"], next.sink)).toEqual({ n: 1 });
  });

  it("a reload before the confirmed value reached the device's mirror reads the server, not the older mirror", async () => {
    const db = memoryAppDb();
    const first = hostWith({ "GET /api/storage/apps/3/d.json": { status: 404 }, "PUT /api/storage/apps/3/d.json": { status: 204, headers: { ETag: '"d1"' } } }, { db });
    expect(await first.host.call("get", ["d.json"], first.sink)).toBeNull();
    await settle();
    // The page goes away before the mirror's update commits: the mirror still says "absent".
    const cut = vi.spyOn(db, "putMirror").mockImplementation(() => new Promise(() => undefined));
    await first.host.call("durableWrite", ["d.json", { n: 1 }], first.sink);
    expect((await db.getMirror("3:nonce-3:d.json"))?.present).toBe(false);
    cut.mockRestore();
    const next = hostWith({ "GET /api/storage/apps/3/d.json": [json({ n: 1 }, '"d1"'), "network-error"] }, { db, ownerId: "page-2" });
    expect(await next.host.call("get", ["d.json"], next.sink)).toEqual({ n: 1 });
    await vi.waitFor(async () => expect((await db.getMirror("3:nonce-3:d.json"))?.value).toEqual({ n: 1 }));
    // Once the mirror caught up, it answers again (the server is not asked first).
    await vi.waitFor(() => expect(localStorage.getItem("mobius.app-unmirrored.3:nonce-3")).toBeNull());
    expect(await next.host.call("get", ["d.json"], next.sink)).toEqual({ n: 1 });
  });

  it("a path the mirror may be behind on still reads the device's value when the server cannot answer", async () => {
    const db = memoryAppDb();
    const first = hostWith({ "GET /api/storage/apps/3/e.json": json({ n: 1 }) }, { db });
    expect(await first.host.call("get", ["e.json"], first.sink)).toEqual({ n: 1 });
    await settle();
    localStorage.setItem("mobius.app-unmirrored.3:nonce-3", JSON.stringify(["e.json"]));
    const next = hostWith({ "GET /api/storage/apps/3/e.json": "network-error" }, { db, ownerId: "page-2" });
    expect(await next.host.call("get", ["e.json"], next.sink)).toEqual({ n: 1 });
    expect(next.calls.map((c) => c.method)).toEqual(["GET"]);
  });

  it("a network failure while online queues the write; a 5xx keeps it queued in order", async () => {
    const { host, calls, sink } = hostWith({ "PUT /api/storage/apps/3/a.json": ["network-error", { status: 503 }, { status: 204 }] });
    expect(await host.call("durableWrite", ["a.json", 1], sink)).toMatchObject({ durability: "queued" });
    await host.drain(true);
    expect(host.pendingCount()).toBe(1);
    await host.drain(true);
    expect(host.pendingCount()).toBe(0);
    expect(calls).toHaveLength(3);
  });

  it("a drain asked for while one is failing (the network came back mid-attempt) runs again at once", async () => {
    let failNext: (() => void) | null = null;
    const methods: string[] = [];
    const { host, sink, state } = hostWith({}, { online: false });
    (host as unknown as { fetchImpl: typeof fetch }).fetchImpl = (_input, init = {}) => {
      methods.push(init.method ?? "GET");
      if (methods.length === 1) return new Promise<Response>((_resolve, reject) => (failNext = () => reject(new TypeError("Failed to fetch"))));
      return Promise.resolve(new Response(null, { status: 204, headers: { ETag: '"b1"' } }));
    };
    expect(await host.call("durableWrite", ["b.json", { v: 1 }], sink)).toMatchObject({ durability: "queued" });
    state.online = true;
    const first = host.drain();
    while (failNext === null) await Promise.resolve();
    // The network returns while that attempt is still failing: the shell asks for another drain.
    const second = host.drain(true);
    (failNext as () => void)();
    await Promise.all([first, second]);
    expect(host.pendingCount()).toBe(0);
    expect(methods).toEqual(["PUT", "PUT"]);
  });

  it("blobs over 25 MiB, wrong kinds and bad paths are refused before anything is stored", async () => {
    const { host, sink, calls } = hostWith({});
    expect(await failure(host.call("durableWrite", ["big.bin", new Blob([new Uint8Array(MAX_BLOB_BYTES + 1)]), { kind: "blob" }], sink))).toMatchObject({ code: "too_large", status: 413 });
    expect(await failure(host.call("durableWrite", ["a.txt", 42, { kind: "text" }], sink))).toMatchObject({ code: "invalid_argument", name: "TypeError" });
    expect(await failure(host.call("durableWrite", ["a.txt", "x", { kind: "xml" }], sink))).toMatchObject({ code: "invalid_argument" });
    expect(await failure(host.call("durableWrite", ["../escape.json", 1], sink))).toMatchObject({ code: "invalid_path", status: 400 });
    expect(await failure(host.call("get", [42], sink))).toMatchObject({ code: "invalid_path" });
    expect(await failure(host.call("set", ["a.json", 1], sink))).toMatchObject({ code: "storage_method_denied" });
    // The original order of subscribe's arguments is [id, path, kind]: anything else is refused.
    expect(await failure(host.call("subscribe", ["a.json", "json", "id"], sink))).toMatchObject({ code: "invalid_argument" });
    expect(calls).toEqual([]);
    expect(host.pendingCount()).toBe(0);
  });

  it("without an app token there is no storage identity", async () => {
    const { host, sink } = hostWith({}, { tokens: [null] });
    expect(await failure(host.call("get", ["a.json"], sink))).toMatchObject({ code: "storage_identity_unavailable" });
  });
});

describe("subscriptions and listing", () => {
  it("subscribe takes [id, path, kind]; a write pushes the value in the subscriber's kind; unsubscribe answers whether it existed", async () => {
    const { host, sink } = hostWith({ "PUT /api/storage/apps/3/n.json": { status: 204 } });
    expect(await host.call("subscribe", ["j", "n.json", "json"], sink)).toBe(true);
    expect(await host.call("subscribe", ["t", "n.json", "text"], sink)).toBe(true);
    await host.call("durableWrite", ["n.json", { a: 1 }], sink);
    expect(sink.messages).toEqual([
      { type: "moebius:storage-change", subscriptionId: "j", value: { a: 1 } },
      { type: "moebius:storage-change", subscriptionId: "t", value: '{"a":1}' },
    ]);
    expect(await host.call("unsubscribe", ["j"], sink)).toBe(true);
    expect(await host.call("unsubscribe", ["j"], sink)).toBe(false);
  });

  it("list follows every page, overlays queued writes, and offline lists what the mirror knows", async () => {
    const { host, sink, state } = hostWith({
      "GET /api/storage/apps-list/3/notes?limit=500": { status: 200, body: JSON.stringify({ entries: [{ name: "a.json", path: "notes/a.json", type: "file" }], next_cursor: "c1" }) },
      "GET /api/storage/apps-list/3/notes?limit=500&cursor=c1": { status: 200, body: JSON.stringify({ entries: [{ name: "b.json", path: "notes/b.json", type: "file" }], next_cursor: null }) },
      "GET /api/storage/apps/3/notes/a.json": json({ a: 1 }),
    });
    expect((await host.call("list", ["notes/", {}], sink)) as { name: string }[]).toMatchObject([{ name: "a.json" }, { name: "b.json" }]);
    await host.call("get", ["notes/a.json"], sink);
    state.online = false;
    await host.call("durableWrite", ["notes/c.json", { c: 1 }], sink);
    await host.call("remove", ["notes/a.json"], sink);
    expect(await host.call("list", ["notes", { includeContent: true }], sink)).toEqual([{ name: "c.json", path: "notes/c.json", type: "file", mime_type: "application/json", content: { c: 1 } }]);
  });
});

describe("pages sharing a device", () => {
  const op = (owner: string, value: number): OpRecord => ({
    scope: "3:nonce-3",
    owner,
    path: "a.json",
    method: "PUT",
    kind: "json",
    contentType: "application/json",
    value,
    body: JSON.stringify(value),
    ifMatch: null,
    ifNoneMatch: false,
    writeId: `w${value}`,
    at: 1,
  });
  const locksHolding = (names: string[]): LockManager =>
    ({
      request: (_name: string, fn: () => Promise<unknown>) => fn(),
      query: () => Promise.resolve({ held: names.map((name) => ({ name, mode: "exclusive", clientId: "x" })), pending: [] }),
    }) as unknown as LockManager;

  it("writes left by a closed page are adopted and sent; a live page's are left to it; an older installation's are purged", async () => {
    const db = memoryAppDb();
    await db.addOp(op("gone-page", 1));
    await db.addOp(op("live-page", 2));
    await db.addOp({ ...op("gone-page", 3), scope: "3:old-nonce" });
    const { host, calls, sink } = hostWith({ "PUT /api/storage/apps/3/a.json": { status: 204 } }, { db, locks: locksHolding(["mobius-page-live-page"]) });
    await host.call("pendingCount", [], sink);
    await vi.waitFor(() => expect(calls).toHaveLength(1));
    expect(calls[0]?.body).toBe("1");
    await settle();
    expect((await db.listOps("3:nonce-3")).map((o) => o.owner)).toEqual(["live-page"]);
    expect(await db.listOps("3:old-nonce")).toEqual([]);
  });

  it("queued writes of an earlier shell (localStorage) join the outbox", async () => {
    localStorage.setItem("mobius.app-outbox.3", JSON.stringify([{ path: "old.json", op: "json", value: { kept: true }, at: 1 }]));
    const { host, calls, sink } = hostWith({ "PUT /api/storage/apps/3/old.json": { status: 204 } });
    await host.call("pendingCount", [], sink);
    await vi.waitFor(() => expect(calls.map((c) => c.body)).toEqual(['{"kept":true}']));
    expect(localStorage.getItem("mobius.app-outbox.3")).toBeNull();
  });
});

describe("signals", () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] }));
  afterEach(() => vi.useRealTimers());

  const event = (id: string, name = "opened") => ({ id, occurred_at: "2026-01-01T00:00:00.000Z", name, payload: {}, app_instance_id: "nonce-3" });

  it("queue durably, go to /api/client-signal with the app token, and wait out a 429's Retry-After", async () => {
    const { host, calls, sink, db } = hostWith({
      "POST /api/client-signal": [{ status: 429, headers: { "Retry-After": "30" } }, { status: 202 }],
    });
    await host.call("queueSignals", [[event("e1"), event("e2"), { junk: true }]], sink);
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toHaveLength(1);
    expect(JSON.parse(String(calls[0]?.body))).toEqual({ signals: [event("e1"), event("e2")] });
    expect(await host.call("pendingSignalCount", [], sink)).toBe(2);
    await vi.advanceTimersByTimeAsync(29_000);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(calls).toHaveLength(2);
    expect(await db.countSignals("3:nonce-3")).toBe(0);
  });

  it("a refused batch is split until only the refused event is dropped", async () => {
    const bodies: string[] = [];
    const { host, sink, db } = hostWith({});
    // Refuse any batch that contains "bad".
    (host as unknown as { fetchImpl: typeof fetch }).fetchImpl = (_input, init) => {
      const body = typeof init?.body === "string" ? init.body : "";
      bodies.push(body);
      return Promise.resolve(new Response(null, { status: body.includes('"bad"') ? 422 : 202 }));
    };
    await host.call("queueSignals", [[event("e1"), event("e2", "bad"), event("e3"), event("e4")]], sink);
    await host.call("drainSignals", [], sink);
    expect(await db.countSignals("3:nonce-3")).toBe(0);
    expect(bodies.filter((b) => !b.includes('"bad"')).length).toBeGreaterThan(0);
  });

  it("the queue is bounded per app and overall, oldest first", () => {
    const record = (scope: string, n: number, bytes = 10): SignalRecord => ({ key: `${scope}:${n}`, scope, event: {}, bytes, queuedAt: n });
    const records = [...Array.from({ length: 6 }, (_, i) => record("1:a", i)), ...Array.from({ length: 3 }, (_, i) => record("2:b", 10 + i))];
    expect(signalEvictions(records, "1:a", { perScopeCount: 4, perScopeBytes: 1_000, totalCount: 100, totalBytes: 1_000 })).toEqual(["1:a:0", "1:a:1"]);
    expect(signalEvictions(records, "1:a", { perScopeCount: 100, perScopeBytes: 1_000, totalCount: 5, totalBytes: 1_000 })).toEqual(["1:a:0", "1:a:1", "1:a:2", "1:a:3"]);
    expect(signalEvictions(records, "1:a", { perScopeCount: 100, perScopeBytes: 25, totalCount: 100, totalBytes: 1_000 })).toEqual(["1:a:0", "1:a:1", "1:a:2", "1:a:3"]);
  });
});
