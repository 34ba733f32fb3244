// window.mobius as an app written for the original platform sees it: the runtime
// (public/mobius-runtime.js and public/runtime/*, compiled into every app) talking to a stand-in
// shell that answers its storage RPCs.
import { act, renderHook, waitFor } from "@testing-library/react";
import * as React from "react";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";

type Rpc = (method: string, args: unknown[]) => { ok: true; result: unknown } | { ok: false; error: Record<string, unknown> } | null;

interface Runtime {
  initMobiusRuntime: (config: Record<string, unknown>) => Mobius;
}
type Call = (...args: unknown[]) => Promise<unknown>;
interface Storage {
  get: Call;
  set: Call;
  setText: Call;
  setBlob: Call;
  durableWrite: Call;
  subscribeText: (path: string, cb: (v: unknown) => void) => () => void;
  onDeadLetter: (cb: (payload: unknown) => void) => () => void;
}
interface Session {
  ready: Promise<unknown>;
  result: Promise<unknown>;
}
interface Capabilities {
  list: () => string[];
  available: (name: string, version?: number) => boolean;
  describe: (name: string) => unknown;
  open: (name: string, input?: unknown) => Session;
  invoke: (name: string, input?: unknown) => Promise<unknown>;
}
interface Mobius {
  appId: string;
  online: boolean;
  runtimeFeatures: unknown;
  storage: Storage;
  durableWrite: Call;
  onDeadLetter: Storage["onDeadLetter"];
  nav: { open: (...args: unknown[]) => { ready: Promise<boolean>; outcome: Promise<{ status: string }>; close: () => void } };
  capabilities: Capabilities;
  split: (opts: unknown) => { setState: (s: string, r?: number) => void; destroy: () => void };
  signal: (name: unknown, payload?: unknown) => undefined;
  onOnlineChange: (cb: unknown) => () => void;
  createUseDocument: (react: unknown) => (path: unknown, options?: unknown) => DocumentState;
  DurableWriteError: new (...args: unknown[]) => Error;
}
interface DocumentState {
  value: unknown;
  status: string;
  lastError: unknown;
  update: (fn: (v: unknown) => unknown) => Promise<unknown>;
  set: (v: unknown) => Promise<unknown>;
  refresh: () => Promise<unknown>;
}
interface DocumentModule {
  mergeDocuments: (base: unknown, mine: unknown, theirs: unknown) => unknown;
}

const RUNTIME = "../../public/mobius-runtime.js";
const DOCUMENT = "../../public/runtime/document.js";
const parent = { postMessage: vi.fn() };
let mobius: Mobius;
let merge: DocumentModule["mergeDocuments"];
/** How the stand-in shell answers each storage RPC (null: no answer at all). */
let answer: Rpc = () => ({ ok: true, result: null });
const rpcs: { method: string; args: unknown[] }[] = [];

const sent = (type: string) =>
  parent.postMessage.mock.calls.map((call) => call[0] as Record<string, unknown>).filter((message) => message.type === type);

const fromShell = (data: unknown) => {
  window.dispatchEvent(new MessageEvent("message", { data, source: parent as unknown as Window }));
};

/** An app token of app 7, installation `n7`. */
const token = `h.${btoa(JSON.stringify({ scope: "app", app_id: 7, app_nonce: "n7" })).replace(/=+$/, "")}.s`;

beforeAll(async () => {
  vi.spyOn(window, "parent", "get").mockReturnValue(parent as unknown as Window);
  const runtime = (await import(/* @vite-ignore */ RUNTIME)) as Runtime;
  merge = ((await import(/* @vite-ignore */ DOCUMENT)) as DocumentModule).mergeDocuments;
  mobius = runtime.initMobiusRuntime({
    appId: 7,
    appInstanceId: "n7",
    parentOrigin: "",
    online: true,
    getToken: () => Promise.resolve(token),
    capabilityContract: { schema: 5, runtime: { "media.speech": { version: 1, kind: "session", limits: { max_text_chars: 50000 } } } },
  });
});

beforeEach(() => {
  vi.spyOn(window, "parent", "get").mockReturnValue(parent as unknown as Window);
  parent.postMessage.mockReset();
  parent.postMessage.mockImplementation((message: Record<string, unknown>) => {
    if (message.type !== "moebius:storage-rpc") return;
    rpcs.push({ method: message.method as string, args: message.args as unknown[] });
    const reply = answer(message.method as string, message.args as unknown[]);
    if (reply) queueMicrotask(() => fromShell({ type: "moebius:storage-rpc-result", requestId: message.requestId, ...reply }));
  });
  rpcs.length = 0;
  answer = () => ({ ok: true, result: null });
});

afterEach(() => {
  vi.useRealTimers();
});

describe("top-level members", () => {
  it("have the contract's shapes", () => {
    expect(mobius.appId).toBe("7");
    expect(mobius.runtimeFeatures).toEqual({ idleDocument: true });
    expect(Object.isFrozen(mobius.runtimeFeatures)).toBe(true);
    expect(mobius.durableWrite).toBe(mobius.storage.durableWrite);
    expect(mobius.onDeadLetter).toBe(mobius.storage.onDeadLetter);
    expect(typeof mobius.DurableWriteError).toBe("function");
    expect((globalThis as unknown as { mobius: unknown }).mobius).toBe(mobius);
  });

  it("onOnlineChange answers at once, then only when the verdict flips", () => {
    const seen: boolean[] = [];
    const stop = mobius.onOnlineChange((v: boolean) => seen.push(v));
    expect(seen).toEqual([true]);
    fromShell({ type: "moebius:online-status", online: true });
    fromShell({ type: "moebius:online-status", online: false });
    fromShell({ type: "moebius:online-status", online: false });
    expect(mobius.online).toBe(false);
    stop();
    fromShell({ type: "moebius:online-status", online: true });
    expect(seen).toEqual([true, false]);
    expect(typeof mobius.onOnlineChange("not a function")).toBe("function");
  });
});

describe("storage over the bridge", () => {
  it("set is a durableWrite of kind json that answers {synced} or {queued}", async () => {
    answer = () => ({ ok: true, result: { durability: "synced", path: "a.json", writeId: "w1", version: '"v2"' } });
    expect(await mobius.storage.set("a.json", { n: 1 })).toEqual({ synced: true });
    expect(rpcs[0]).toEqual({ method: "durableWrite", args: ["a.json", { n: 1 }, { kind: "json", contentType: "application/json" }] });
    answer = () => ({ ok: true, result: { durability: "queued", path: "a.json", writeId: "w2" } });
    expect(await mobius.storage.set("a.json", { n: 2 })).toEqual({ queued: true });
  });

  it("setText and setBlob carry their content type; wrong arguments reject before anything is sent", async () => {
    answer = () => ({ ok: true, result: { durability: "synced", path: "p", writeId: "w" } });
    await mobius.storage.setText("n.md", "# hi", { contentType: "text/markdown" });
    await mobius.storage.setBlob("i.png", new Blob(["x"], { type: "image/png" }));
    expect(rpcs.map((r) => (r.args[2] as { contentType: string }).contentType)).toEqual(["text/markdown", "image/png"]);
    rpcs.length = 0;
    await expect(mobius.storage.setText("n.txt", 42)).rejects.toMatchObject({ name: "TypeError", code: "invalid_argument" });
    await expect(mobius.storage.setBlob("b.bin", "not a blob")).rejects.toMatchObject({ code: "invalid_argument" });
    await expect(mobius.storage.setBlob("b.bin", new Blob([new Uint8Array(25 * 1024 * 1024 + 1)]))).rejects.toMatchObject({ code: "too_large" });
    await expect(mobius.storage.get(42)).rejects.toMatchObject({ code: "invalid_argument" });
    await expect(mobius.storage.durableWrite("a", 1, { kind: "xml" })).rejects.toMatchObject({ code: "invalid_argument" });
    expect(rpcs).toEqual([]);
  });

  it("durableWrite: a string is text, ifNoneMatch accepts true (and '*'), weak versions are made strong, an aborted signal stops it", async () => {
    answer = () => ({ ok: true, result: { durability: "synced", path: "x", writeId: "w", version: '"v"' } });
    expect(await mobius.durableWrite("n.txt", "words", { ifNoneMatch: true })).toEqual({ durability: "synced", path: "x", writeId: "w", version: '"v"' });
    await mobius.durableWrite("d.json", { a: 1 }, { ifNoneMatch: "*", ifMatch: 'W/"abc"' });
    expect(rpcs.map((r) => r.args[2])).toEqual([
      { kind: "text", contentType: "text/plain;charset=utf-8", ifNoneMatch: true },
      { kind: "json", contentType: "application/json", ifMatch: '"abc"', ifNoneMatch: true },
    ]);
    const controller = new AbortController();
    controller.abort();
    await expect(mobius.durableWrite("d.json", 1, { signal: controller.signal })).rejects.toMatchObject({ name: "AbortError" });
    expect(rpcs).toHaveLength(2);
  });

  it("a refusal comes back as a DurableWriteError with every field", async () => {
    answer = () => ({
      ok: false,
      error: { name: "DurableWriteError", message: "a.json: refused", code: "conflict", status: 412, path: "a.json", writeId: "w9", retryable: true, refusedValue: { n: 1 } },
    });
    const error = (await mobius.storage.set("a.json", { n: 1 }).catch((e: unknown) => e)) as Record<string, unknown>;
    expect(error).toBeInstanceOf(mobius.DurableWriteError);
    expect(error).toMatchObject({ name: "DurableWriteError", code: "conflict", status: 412, path: "a.json", writeId: "w9", retryable: true, refusedValue: { n: 1 } });
  });

  it("calls on one path run in call order, each after the previous one settled", async () => {
    const pending: (() => void)[] = [];
    answer = (method, args) => {
      if (method === "durableWrite") {
        pending.push(() => fromShellResult(args));
        return null;
      }
      return { ok: true, result: { from: "server" } };
    };
    const lastRequest = () => sent("moebius:storage-rpc").pop() as { requestId: string };
    const fromShellResult = (args: unknown[]) => fromShell({ type: "moebius:storage-rpc-result", requestId: requestFor(args), ok: true, result: { durability: "synced" } });
    const ids = new Map<string, string>();
    const requestFor = (args: unknown[]) => ids.get(JSON.stringify(args)) ?? "";
    const write = mobius.storage.set("o.json", 1);
    await Promise.resolve();
    await Promise.resolve();
    ids.set(JSON.stringify(["o.json", 1, { kind: "json", contentType: "application/json" }]), lastRequest().requestId);
    const read = mobius.storage.get("o.json");
    await new Promise((r) => setTimeout(r, 0));
    expect(rpcs.map((r) => r.method)).toEqual(["durableWrite"]);
    pending.shift()?.();
    expect(await write).toEqual({ synced: true });
    expect(await read).toEqual({ from: "server" });
    expect(rpcs.map((r) => r.method)).toEqual(["durableWrite", "get"]);
  });

  it("subscribe sends [id, path, kind], delivers the current value, then every change", async () => {
    answer = (method) => (method === "getText" ? { ok: true, result: "first" } : { ok: true, result: true });
    const seen: unknown[] = [];
    const stop = mobius.storage.subscribeText("n.txt", (v) => seen.push(v));
    await waitFor(() => expect(seen).toEqual(["first"]));
    const sub = rpcs.find((r) => r.method === "subscribe");
    expect(sub?.args[1]).toBe("n.txt");
    expect(sub?.args[2]).toBe("text");
    fromShell({ type: "moebius:storage-change", subscriptionId: sub?.args[0], value: "second" });
    expect(seen).toEqual(["first", "second"]);
    stop();
    expect(rpcs.filter((r) => r.method === "unsubscribe").map((r) => r.args)).toEqual([[sub?.args[0]]]);
  });

  it("dead letters reach listeners, also those registered after the letter arrived", () => {
    const payload = { path: "q.json", status: 413, refusedValue: { big: 1 }, writeId: "w", ts: 5 };
    fromShell({ type: "moebius:storage-dead-letter", payload });
    const seen: unknown[] = [];
    const stop = mobius.onDeadLetter((p) => seen.push(p));
    expect(seen).toEqual([payload]);
    fromShell({ type: "moebius:storage-dead-letter", payload: { ...payload, writeId: "w2" } });
    expect(seen).toHaveLength(2);
    stop();
  });
});

describe("nav.open", () => {
  it("is owned once the shell acknowledges; Back calls onBack without a pop; close() pops", async () => {
    const onBack = vi.fn();
    const first = mobius.nav.open("Details", onBack);
    const push = sent("moebius:nav-push")[0] as { requestId: string; label: string; reversible: boolean };
    expect(push).toMatchObject({ label: "Details", reversible: false });
    expect(push.requestId).toMatch(/^nav-\d+-/);
    fromShell({ type: "moebius:nav-push-ack", requestId: push.requestId });
    expect(await first.ready).toBe(true);
    expect(await first.outcome).toEqual({ status: "owned" });
    fromShell({ type: "moebius:nav-back", requestId: push.requestId });
    expect(onBack).toHaveBeenCalledTimes(1);
    first.close();
    expect(sent("moebius:nav-pop")).toEqual([]);

    const second = mobius.nav.open("Sheet", { onBack: vi.fn() });
    const id = (sent("moebius:nav-push")[1] as { requestId: string }).requestId;
    fromShell({ type: "moebius:nav-push-ack", requestId: id });
    await second.ready;
    second.close();
    second.close();
    expect(sent("moebius:nav-pop")).toEqual([{ type: "moebius:nav-pop", requestId: id }]);
  });

  it("a rejected push is 'rejected'; no answer in 5 s is 'timeout', and a late ack is undone with a pop", async () => {
    vi.useFakeTimers();
    const rejected = mobius.nav.open("x");
    fromShell({ type: "moebius:nav-push-rejected", requestId: (sent("moebius:nav-push")[0] as { requestId: string }).requestId });
    expect(await rejected.outcome).toEqual({ status: "rejected" });
    expect(await rejected.ready).toBe(false);
    const slow = mobius.nav.open("y");
    const id = (sent("moebius:nav-push")[1] as { requestId: string }).requestId;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await slow.outcome).toEqual({ status: "timeout" });
    fromShell({ type: "moebius:nav-push-ack", requestId: id });
    expect(sent("moebius:nav-pop")).toEqual([{ type: "moebius:nav-pop", requestId: id }]);
  });

  it("a reversible entry comes back on Forward (onForward, ack); any other is refused", async () => {
    const onForward = vi.fn();
    const handle = mobius.nav.open("Editor", vi.fn(), onForward);
    const id = (sent("moebius:nav-push")[0] as { requestId: string; reversible: boolean }).requestId;
    expect((sent("moebius:nav-push")[0] as { reversible: boolean }).reversible).toBe(true);
    fromShell({ type: "moebius:nav-push-ack", requestId: id });
    await handle.ready;
    fromShell({ type: "moebius:nav-back", requestId: id });
    fromShell({ type: "moebius:nav-forward", requestId: id });
    expect(onForward).toHaveBeenCalledTimes(1);
    expect(sent("moebius:nav-forward-ack")).toEqual([{ type: "moebius:nav-forward-ack", requestId: id }]);
    fromShell({ type: "moebius:nav-forward", requestId: "nav-unknown" });
    expect(sent("moebius:nav-forward-rejected")).toEqual([{ type: "moebius:nav-forward-rejected", requestId: "nav-unknown" }]);
  });
});

describe("capabilities", () => {
  it("describe and list what the manifest declared; open refuses at once what it cannot do", () => {
    expect(mobius.capabilities.list()).toEqual(["media.speech"]);
    expect(mobius.capabilities.available("media.speech")).toBe(true);
    expect(mobius.capabilities.available("media.speech", 2)).toBe(false);
    expect(mobius.capabilities.describe("media.speech")).toMatchObject({ version: 1, kind: "session" });
    expect(mobius.capabilities.describe("nope")).toBeNull();
    expect(() => mobius.capabilities.open("device.camera")).toThrow(expect.objectContaining({ name: "CapabilityError", code: "undeclared" }));
    expect(() => mobius.capabilities.open("media.speech", "text")).toThrow(expect.objectContaining({ code: "invalid_request" }));
  });

  it("a declared capability the shell does not provide fails with 'unavailable', and silence does too", async () => {
    vi.useFakeTimers();
    const session = mobius.capabilities.open("media.speech", { text: "hi" });
    const open = sent("moebius:capability-open")[0] as { requestId: string; capability: string; version: number };
    expect(open).toMatchObject({ capability: "media.speech", version: 1, input: { text: "hi" } });
    fromShell({ type: "moebius:capability-error", requestId: open.requestId, capability: "media.speech", code: "unavailable", name: "NotSupportedError", message: "not here" });
    await expect(session.result).rejects.toMatchObject({ code: "unavailable", capability: "media.speech" });
    await expect(session.ready).rejects.toMatchObject({ code: "unavailable" });
    const silent = mobius.capabilities.invoke("media.speech", {});
    const outcome = silent.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(15_000);
    expect(await outcome).toMatchObject({ code: "unavailable" });
  });
});

describe("split", () => {
  it("lays out content and chat on the mount and follows setState", () => {
    const mount = document.createElement("div");
    const content = document.createElement("div");
    content.setAttribute("data-split-role", "content");
    mount.appendChild(content);
    Object.defineProperty(mount, "offsetHeight", { value: 800 });
    Object.defineProperty(mount, "offsetWidth", { value: 390 });
    const layout = mobius.split({ mount, defaultRatio: 0.5 });
    expect(mount.getAttribute("data-split-state")).toBe("split");
    expect(mount.getAttribute("data-orientation")).toBe("portrait");
    expect(mount.style.getPropertyValue("--cs-content-h")).toBe("400px");
    expect(mount.querySelector('[data-split-role="handle"]')?.getAttribute("role")).toBe("separator");
    layout.setState("full");
    expect(content.style.pointerEvents).toBe("none");
    layout.setState("pill");
    expect(mount.style.getPropertyValue("--cs-content-h")).toBe("800px");
    layout.destroy();
    expect(mount.querySelector('[data-split-role="handle"]')).toBeNull();
    expect(() => mobius.split({})).toThrow(TypeError);
  });
});

describe("signal", () => {
  it("validates and trims events, then hands them to the shell's durable queue", async () => {
    vi.useFakeTimers();
    expect(mobius.signal("  opened  ", { tab: 2, label: "x".repeat(600), nested: { no: 1 }, ok: true, nan: Number.NaN })).toBeUndefined();
    expect(mobius.signal("", {})).toBeUndefined();
    expect(mobius.signal(42)).toBeUndefined();
    expect(rpcs).toEqual([]);
    await vi.advanceTimersByTimeAsync(5_000);
    const queued = rpcs.find((r) => r.method === "queueSignals");
    const events = queued?.args[0] as Record<string, unknown>[];
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ name: "opened", payload: { tab: 2, label: "x".repeat(500), ok: true }, app_instance_id: "n7" });
    expect(typeof events[0]?.id).toBe("string");
    expect(Number.isNaN(Date.parse(String(events[0]?.occurred_at)))).toBe(false);
  });
});

describe("useDocument", () => {
  /** A stand-in document store behind the bridge, with ETag versions. */
  function documentServer(initial: unknown) {
    const doc = { value: initial, version: 1 };
    const writes: Record<string, unknown>[] = [];
    answer = (method, args) => {
      if (method === "getWithVersion") return { ok: true, result: { value: doc.value, version: doc.value === null ? undefined : `"${doc.version}"` } };
      if (method === "subscribe" || method === "unsubscribe") return { ok: true, result: true };
      if (method === "get") return { ok: true, result: doc.value };
      if (method === "durableWrite") {
        const opts = args[2] as { ifMatch?: string; ifNoneMatch?: boolean };
        writes.push(opts);
        if ((opts.ifMatch && opts.ifMatch !== `"${doc.version}"`) || (opts.ifNoneMatch && doc.value !== null)) {
          return { ok: false, error: { name: "DurableWriteError", code: "conflict", status: 412, retryable: true, path: args[0] } };
        }
        doc.value = args[1];
        doc.version += 1;
        return { ok: true, result: { durability: "synced", path: args[0], writeId: "w", version: `"${doc.version}"` } };
      }
      return { ok: true, result: null };
    };
    return { doc, writes };
  }

  it("loads, then updates with a conditional write", async () => {
    const server = documentServer({ items: [] });
    const useDocument = mobius.createUseDocument(React);
    const { result } = renderHook(() => useDocument("todo.json", { initial: { items: [] } }));
    expect(result.current.status).toBe("loading");
    await waitFor(() => expect(result.current.status).toBe("ready"));
    await act(async () => {
      await result.current.update((v) => ({ items: [...(v as { items: string[] }).items, "milk"] }));
    });
    expect(result.current.value).toEqual({ items: ["milk"] });
    expect(result.current.status).toBe("ready");
    expect(server.doc.value).toEqual({ items: ["milk"] });
    expect(server.writes.at(-1)).toMatchObject({ kind: "json", ifMatch: '"1"' });
  });

  it("on a conflict re-reads and merges (someone else's change survives), calling the update function once", async () => {
    const server = documentServer([{ id: "a", t: "A" }]);
    const useDocument = mobius.createUseDocument(React);
    const { result } = renderHook(() => useDocument("list.json", { initial: [] }));
    await waitFor(() => expect(result.current.status).toBe("ready"));
    // Another device adds b behind this frame's back.
    server.doc.value = [{ id: "a", t: "A" }, { id: "b", t: "B" }];
    server.doc.version = 5;
    const fn = vi.fn((v: unknown) => [...(v as object[]), { id: "c", t: "C" }]);
    const reads = () => rpcs.filter((r) => r.method === "getWithVersion").length;
    const readsBefore = reads();
    await act(async () => {
      await result.current.update(fn);
    });
    expect(fn).toHaveBeenCalledTimes(1);
    // The first write went against the version the hook had (no read); the 412 made it read once.
    expect(server.writes.map((w) => w.ifMatch)).toEqual(['"1"', '"5"']);
    expect(reads() - readsBefore).toBe(1);
    expect(server.doc.value).toEqual([
      { id: "a", t: "A" },
      { id: "b", t: "B" },
      { id: "c", t: "C" },
    ]);
  });

  it("sequential updates each apply once", async () => {
    const server = documentServer(null);
    const useDocument = mobius.createUseDocument(React);
    const { result } = renderHook(() => useDocument("count.json", { initial: { n: 0 } }));
    await waitFor(() => expect(result.current.status).toBe("ready"));
    for (let i = 0; i < 5; i++) {
      await act(async () => {
        await result.current.update((d) => ({ ...(d as object), n: ((d as { n: number }).n ?? 0) + 1 }));
      });
    }
    expect(server.doc.value).toEqual({ n: 5 });
    expect(result.current.value).toEqual({ n: 5 });
  });

  it("the echo of its own write never becomes the base a conflict retry merges against", async () => {
    const server = documentServer({ a: 1, b: 1 });
    const base = answer;
    let first = true;
    answer = (method, args) => {
      if (method === "durableWrite") {
        // The shell pushes the new value to subscribers as soon as the write is queued…
        const sub = rpcs.find((r) => r.method === "subscribe");
        fromShell({ type: "moebius:storage-change", subscriptionId: sub?.args[0], value: args[1] });
        if (first) {
          // …and this time another writer got there first.
          first = false;
          server.doc.value = { a: 1, b: 2 };
          server.doc.version += 1;
        }
      }
      return base(method, args);
    };
    const useDocument = mobius.createUseDocument(React);
    const { result } = renderHook(() => useDocument("obj.json", { initial: {} }));
    await waitFor(() => expect(result.current.status).toBe("ready"));
    await act(async () => {
      await result.current.update((v) => ({ ...(v as object), a: 5 }));
    });
    expect(server.doc.value).toEqual({ a: 5, b: 2 });
  });

  it("a write queued offline that later meets a newer version is merged and written again", async () => {
    const server = documentServer([{ id: "x" }]);
    const base = answer;
    let queue = true;
    answer = (method, args) => {
      if (method === "durableWrite" && queue) {
        queue = false;
        return { ok: true, result: { durability: "queued", path: args[0], writeId: "wq" } };
      }
      return base(method, args);
    };
    const useDocument = mobius.createUseDocument(React);
    const { result } = renderHook(() => useDocument("q.json", { initial: [] }));
    await waitFor(() => expect(result.current.status).toBe("ready"));
    await act(async () => {
      await result.current.update((v) => [...(v as object[]), { id: "mine" }]);
    });
    expect(result.current.status).toBe("saving");
    // Meanwhile someone else wrote; the queued write hit 412 when it was sent.
    server.doc.value = [{ id: "x" }, { id: "theirs" }];
    server.doc.version += 1;
    fromShell({ type: "moebius:storage-conflict", payload: { path: "q.json", writeId: "wq", status: 412 } });
    await waitFor(() => expect(server.doc.value).toEqual([{ id: "x" }, { id: "theirs" }, { id: "mine" }]));
    await waitFor(() => expect(result.current.status).toBe("ready"));
  });

  it("is idle without a path (no reads, update rejects), and reports errors with their phase", async () => {
    documentServer(null);
    const useDocument = mobius.createUseDocument(React);
    const idle = renderHook(() => useDocument("", {}));
    expect(idle.result.current.status).toBe("idle");
    await expect(idle.result.current.update(() => 1)).rejects.toThrow(/idle/);
    answer = (method) =>
      method === "getWithVersion" || method === "get" ? { ok: false, error: { name: "StorageError", code: "internal", status: 500, message: "boom" } } : { ok: true, result: true };
    const onError = vi.fn();
    const failing = renderHook(() => useDocument("x.json", { onError }));
    await waitFor(() => expect(failing.result.current.status).toBe("error"));
    expect(onError).toHaveBeenCalledWith(expect.objectContaining({ code: "internal" }), { path: "x.json", phase: "refresh" });
    // A failing read inside update is an update error too (the original left it "saving").
    await act(async () => {
      await failing.result.current.update(() => ({ a: 1 })).catch(() => undefined);
    });
    expect(failing.result.current.status).toBe("error");
    expect(onError).toHaveBeenLastCalledWith(expect.objectContaining({ code: "internal" }), { path: "x.json", phase: "update" });
  });

  it("the default merge is three-way: each side's own changes survive, deletes included", () => {
    const base = [
      { id: "1", t: "one" },
      { id: "2", t: "two" },
    ];
    const mine = [{ id: "1", t: "ONE" }, { id: "3", t: "three" }];
    const theirs = [
      { id: "1", t: "one" },
      { id: "2", t: "two" },
      { id: "4", t: "four" },
    ];
    expect(merge(base, mine, theirs)).toEqual([
      { id: "1", t: "ONE" },
      { id: "4", t: "four" },
      { id: "3", t: "three" },
    ]);
    expect(merge({ a: 1, b: 1 }, { a: 2, b: 1 }, { a: 1, b: 3, c: 1 })).toEqual({ a: 2, b: 3, c: 1 });
    // Both changed the same scalar: this frame's value wins.
    expect(merge({ n: 1 }, { n: 2 }, { n: 3 })).toEqual({ n: 2 });
    // Without a base (first write), arrays are a union.
    expect(merge(null, [{ id: "x" }], [{ id: "y" }])).toEqual([{ id: "y" }, { id: "x" }]);
  });
});
