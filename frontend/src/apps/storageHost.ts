//! The shell side of `window.mobius.storage`: a frame's `moebius:storage-rpc` calls become
//! requests to `/api/storage/apps/{id}/…` carrying the app's own token (same-origin, from the
//! shell). Online first; while the network is gone, `set`/`setText`/`remove` wait in a small
//! outbox kept on this device (last write per path wins) and reads come from a mirror of what
//! was last read or written, so an app opened before still shows its data offline. Reads see
//! queued writes (read-your-writes). A subscription answers with the current value, then pushes
//! every change made through this shell (`moebius:storage-change`).

import { noteResponse, onlineStore, recheckOnline } from "../shell/online";
import { APP_DATA_CACHE, APP_OUTBOX_PREFIX } from "./keys";

/** A failed storage call, as the frame receives it. */
export class StorageRpcError extends Error {
  override readonly name = "StorageRpcError";
  readonly code: string;
  readonly status: number;

  constructor(code: string, message: string, status = 0) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

export type ReadKind = "json" | "text" | "blob";

/** Where subscription pushes and dead letters go (one per mounted frame). */
export interface FrameSink {
  post: (message: Record<string, unknown>) => void;
}

export interface StorageHostOptions {
  appId: number;
  /** The app token (`force`: mint a new one, after a 401). Null when none can be had. */
  getToken: (force: boolean) => Promise<string | null>;
  fetch?: typeof fetch;
  /** The read mirror; defaults to CacheStorage (absent in tests and private modes). */
  mirror?: Mirror | null;
  /** Keep the outbox in localStorage (default true). */
  persistOutbox?: boolean;
}

/** A queued write. */
export interface OutboxEntry {
  path: string;
  op: "json" | "text" | "remove";
  value: unknown;
  at: number;
}

/** A stored copy of the last known answer for a storage URL. */
export interface Mirror {
  get: (url: string) => Promise<Response | undefined>;
  put: (url: string, response: Response) => Promise<void>;
  delete: (url: string) => Promise<void>;
}

const LIST_PAGES_MAX = 20;
const DRAIN_RETRY_MS = 15_000;

/** `a/b c.json` → `a/b%20c.json` (each segment encoded, slashes kept). */
export function encodePath(path: string): string {
  return path
    .split("/")
    .filter((s) => s !== "")
    .map(encodeURIComponent)
    .join("/");
}

export function fileUrl(appId: number, path: string): string {
  return `/api/storage/apps/${appId}/${encodePath(path)}`;
}

export function listUrl(appId: number, prefix: string, options: { includeContent?: boolean; cursor?: string | null } = {}): string {
  const query = new URLSearchParams();
  if (options.includeContent) query.set("include_content", "1");
  if (options.cursor) query.set("cursor", options.cursor);
  const qs = query.toString();
  return `/api/storage/apps-list/${appId}/${encodePath(prefix)}${qs ? `?${qs}` : ""}`;
}

function checkPath(path: unknown): string {
  if (typeof path !== "string" || path === "" || path.length > 1024 || path.startsWith("/") || path.split("/").includes("..")) {
    throw new StorageRpcError("invalid_path", "That storage path is not allowed.", 400);
  }
  return path;
}

const isJsonPath = (path: string) => path.toLowerCase().endsWith(".json");

/** The body and Content-Type of a write. */
export function encodeWrite(path: string, op: "json" | "text" | "blob", data: unknown): { body: BodyInit; contentType: string } {
  if (op === "json") return { body: JSON.stringify(data === undefined ? null : data), contentType: "application/json" };
  if (op === "text") {
    if (isJsonPath(path)) throw new StorageRpcError("kind_mismatch", "A .json path holds a JSON document: use set(), not setText().", 400);
    return { body: JSON.stringify({ content: String(data) }), contentType: "application/json" };
  }
  if (!(data instanceof Blob)) throw new StorageRpcError("invalid_body", "setBlob needs a Blob.", 400);
  return { body: data, contentType: data.type || "application/octet-stream" };
}

function essence(contentType: string | null): string {
  return (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

function kindOf(contentType: string | null): ReadKind {
  const type = essence(contentType);
  if (type === "application/json" || type.endsWith("+json")) return "json";
  if (type.startsWith("text/")) return "text";
  return "blob";
}

/** Reads a 200 answer as `kind`; a stored kind that cannot be read that way is an error. */
export async function decodeRead(response: Response, kind: ReadKind): Promise<unknown> {
  const stored = kindOf(response.headers.get("Content-Type"));
  if (kind === "blob") return response.blob();
  if (kind === "json") {
    if (stored !== "json") throw new StorageRpcError("kind_mismatch", "That file is not a JSON document: read it with getText() or getBlob().", 415);
    const text = await response.text();
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new StorageRpcError("invalid_json", "The stored document is not valid JSON.", 415);
    }
  }
  if (stored === "blob") throw new StorageRpcError("kind_mismatch", "That file is binary: read it with getBlob().", 415);
  return response.text();
}

async function errorOf(response: Response): Promise<StorageRpcError> {
  let code = `http_${response.status}`;
  let message = `Storage answered ${response.status}.`;
  try {
    const body = (await response.json()) as { code?: unknown; message?: unknown };
    if (typeof body.code === "string") code = body.code;
    if (typeof body.message === "string") message = body.message;
  } catch {
    // Not JSON.
  }
  if (response.status === 412) code = "conflict";
  return new StorageRpcError(code, message, response.status);
}

function networkError(): StorageRpcError {
  return new StorageRpcError("network", "Möbius can't be reached right now.", 0);
}

/** The default mirror: CacheStorage, when this browser has it. */
export function cacheMirror(): Mirror | null {
  if (typeof caches === "undefined") return null;
  const open = () => caches.open(APP_DATA_CACHE);
  return {
    get: async (url) => (await open()).match(url),
    put: async (url, response) => (await open()).put(url, response),
    delete: async (url) => {
      await (await open()).delete(url);
    },
  };
}

interface Subscription {
  path: string;
  kind: ReadKind;
  sink: FrameSink;
}

export class AppStorageHost {
  readonly appId: number;
  private readonly getToken: (force: boolean) => Promise<string | null>;
  private readonly fetchImpl: typeof fetch;
  private readonly mirror: Mirror | null;
  private readonly persistOutbox: boolean;
  private outbox: OutboxEntry[];
  private readonly subscriptions = new Map<string, Subscription>();
  private readonly sinks = new Set<FrameSink>();
  private draining = false;
  /** A drain was asked for while one ran (e.g. the network came back mid-attempt): run again. */
  private drainAgain = false;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(options: StorageHostOptions) {
    this.appId = options.appId;
    this.getToken = options.getToken;
    this.fetchImpl = options.fetch ?? ((input, init) => fetch(input, init));
    this.mirror = options.mirror === undefined ? cacheMirror() : options.mirror;
    this.persistOutbox = options.persistOutbox ?? true;
    this.outbox = this.loadOutbox();
  }

  /** Performs one RPC for `sink`'s frame. */
  async call(method: string, args: unknown[], sink: FrameSink): Promise<unknown> {
    this.sinks.add(sink);
    switch (method) {
      case "get":
        return this.read(checkPath(args[0]), "json");
      case "getText":
        return this.read(checkPath(args[0]), "text");
      case "getBlob":
        return this.read(checkPath(args[0]), "blob");
      case "getWithVersion":
        return this.readWithVersion(checkPath(args[0]));
      case "set":
        return this.write(checkPath(args[0]), "json", args[1]);
      case "setText":
        return this.write(checkPath(args[0]), "text", args[1]);
      case "setBlob":
        return this.write(checkPath(args[0]), "blob", args[1]);
      case "remove":
        return this.write(checkPath(args[0]), "remove", null);
      case "durableWrite":
        return this.durableWrite(checkPath(args[0]), args[1], typeof args[2] === "object" && args[2] !== null ? args[2] : {});
      case "list": {
        const options = (args[1] ?? {}) as { includeContent?: unknown };
        return this.list(typeof args[0] === "string" ? args[0] : "", options.includeContent === true);
      }
      case "pendingCount":
        return this.outbox.length;
      case "subscribe":
        return this.subscribe(checkPath(args[0]), args[1], args[2], sink);
      case "unsubscribe":
        if (typeof args[0] === "string") {
          const sub = this.subscriptions.get(args[0]);
          if (sub?.sink === sink) this.subscriptions.delete(args[0]);
        }
        return null;
      default:
        throw new StorageRpcError("unknown_method", `No storage method ${method}.`, 400);
    }
  }

  /** A frame went away: drop its subscriptions. */
  detach(sink: FrameSink): void {
    this.sinks.delete(sink);
    for (const [id, sub] of this.subscriptions) if (sub.sink === sink) this.subscriptions.delete(id);
  }

  pendingCount(): number {
    return this.outbox.length;
  }

  // ---------- HTTP ----------

  private async send(url: string, init: { method: "GET" | "PUT" | "DELETE"; body?: BodyInit; headers?: Record<string, string> }): Promise<Response> {
    let token = await this.getToken(false);
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = { ...init.headers };
      if (token) headers.Authorization = `Bearer ${token}`;
      let response: Response;
      try {
        response = await this.fetchImpl(url, { method: init.method, headers, body: init.body ?? null, cache: "no-store", credentials: "omit" });
      } catch {
        void recheckOnline();
        throw networkError();
      }
      noteResponse(response.status);
      if (response.status === 401 && attempt === 0) {
        const fresh = await this.getToken(true).catch(() => null);
        if (fresh && fresh !== token) {
          token = fresh;
          continue;
        }
      }
      return response;
    }
  }

  // ---------- reads ----------

  private queued(path: string): OutboxEntry | undefined {
    return this.outbox.find((e) => e.path === path);
  }

  private fromQueued(entry: OutboxEntry, kind: ReadKind): unknown {
    if (entry.op === "remove") return null;
    if (kind === "blob") {
      const text = entry.op === "json" ? JSON.stringify(entry.value) : String(entry.value);
      return new Blob([text], { type: entry.op === "json" ? "application/json" : "text/plain" });
    }
    if (kind === "json" && entry.op !== "json") throw new StorageRpcError("kind_mismatch", "That file is not a JSON document.", 415);
    if (kind === "text" && entry.op === "json") return JSON.stringify(entry.value);
    return entry.value;
  }

  private async read(path: string, kind: ReadKind): Promise<unknown> {
    return (await this.readFull(path, kind)).value;
  }

  private async readFull(path: string, kind: ReadKind): Promise<{ value: unknown; version: string | null }> {
    const entry = this.queued(path);
    if (entry) return { value: this.fromQueued(entry, kind), version: null };
    const url = fileUrl(this.appId, path);
    let response: Response;
    try {
      response = await this.send(url, { method: "GET" });
    } catch (error) {
      // No network: the last answer this device saw, if any.
      const cached = await this.mirror?.get(url).catch(() => undefined);
      if (cached) return { value: await decodeRead(cached, kind), version: cached.headers.get("ETag") };
      throw error;
    }
    if (response.status === 404) {
      void this.mirror?.delete(url).catch(() => undefined);
      return { value: null, version: null };
    }
    if (!response.ok) throw await errorOf(response);
    void this.drainSoon();
    const version = response.headers.get("ETag");
    if (this.mirror) await this.mirror.put(url, response.clone()).catch(() => undefined);
    return { value: await decodeRead(response, kind), version };
  }

  private async readWithVersion(path: string): Promise<{ value: unknown; version: string | null }> {
    const entry = this.queued(path);
    // A queued write has no server version yet: the caller sees the value it wrote.
    if (entry) return { value: this.fromQueued(entry, "json"), version: null };
    return this.readFull(path, "json");
  }

  // ---------- writes ----------

  private async write(path: string, op: "json" | "text" | "blob" | "remove", data: unknown): Promise<{ queued: boolean; version: string | null }> {
    const url = fileUrl(this.appId, path);
    let response: Response;
    let encoded: { body: BodyInit; contentType: string } | null = null;
    if (op !== "remove") encoded = encodeWrite(path, op, data);
    try {
      response =
        op === "remove"
          ? await this.send(url, { method: "DELETE" })
          : await this.send(url, { method: "PUT", body: encoded?.body ?? "", headers: { "Content-Type": encoded?.contentType ?? "application/json" } });
    } catch (error) {
      if (op === "blob") throw error;
      this.enqueue({ path, op, value: op === "remove" ? null : op === "text" ? String(data) : (data ?? null), at: Date.now() });
      await this.remember(url, op, data, null);
      this.notify(path, op, data);
      return { queued: true, version: null };
    }
    if (!(response.ok || (op === "remove" && response.status === 404))) throw await errorOf(response);
    // This write is newer than anything queued for the same path.
    this.dequeue(path);
    const version = response.headers.get("ETag");
    await this.remember(url, op, data, version);
    this.notify(path, op, data);
    void this.drainSoon();
    return { queued: false, version };
  }

  private async durableWrite(path: string, data: unknown, conditions: { ifMatch?: unknown; ifNoneMatch?: unknown }): Promise<{ version: string | null }> {
    const op = data instanceof Blob ? "blob" : typeof data === "string" && !isJsonPath(path) ? "text" : "json";
    const { body, contentType } = encodeWrite(path, op, data);
    const headers: Record<string, string> = { "Content-Type": contentType };
    if (typeof conditions.ifMatch === "string" && conditions.ifMatch !== "") headers["If-Match"] = conditions.ifMatch;
    if (conditions.ifNoneMatch === "*") headers["If-None-Match"] = "*";
    const url = fileUrl(this.appId, path);
    const response = await this.send(url, { method: "PUT", body, headers });
    if (!response.ok) throw await errorOf(response);
    this.dequeue(path);
    const version = response.headers.get("ETag");
    await this.remember(url, op, data, version);
    this.notify(path, op, data);
    return { version };
  }

  /** Keeps the mirror in step with a write. */
  private async remember(url: string, op: "json" | "text" | "blob" | "remove", data: unknown, version: string | null): Promise<void> {
    if (!this.mirror) return;
    try {
      if (op === "remove") return await this.mirror.delete(url);
      const headers: Record<string, string> = {
        "Content-Type": op === "json" ? "application/json" : op === "text" ? "text/plain; charset=utf-8" : (data as Blob).type || "application/octet-stream",
      };
      if (version) headers.ETag = version;
      const body = op === "json" ? JSON.stringify(data ?? null) : op === "text" ? String(data) : (data as Blob);
      await this.mirror.put(url, new Response(body, { headers }));
    } catch {
      // The mirror is best effort.
    }
  }

  // ---------- listing ----------

  private async list(prefix: string, includeContent: boolean): Promise<unknown[]> {
    const clean = prefix.replace(/^\/+|\/+$/g, "");
    if (clean !== "" && clean.split("/").includes("..")) throw new StorageRpcError("invalid_path", "That storage path is not allowed.", 400);
    const mirrorKey = `${listUrl(this.appId, clean, { includeContent })}#all`;
    const entries: unknown[] = [];
    let cursor: string | null = null;
    try {
      for (let page = 0; page < LIST_PAGES_MAX; page++) {
        const response = await this.send(listUrl(this.appId, clean, { includeContent, cursor }), { method: "GET" });
        if (!response.ok) throw await errorOf(response);
        const body = (await response.json()) as { entries?: unknown[]; next_cursor?: string | null };
        entries.push(...(body.entries ?? []));
        cursor = body.next_cursor ?? null;
        if (!cursor) break;
      }
    } catch (error) {
      if (!(error instanceof StorageRpcError) || error.code !== "network") throw error;
      const cached = await this.mirror?.get(mirrorKey).catch(() => undefined);
      if (cached) return (await cached.json()) as unknown[];
      throw error;
    }
    if (this.mirror) {
      await this.mirror.put(mirrorKey, new Response(JSON.stringify(entries), { headers: { "Content-Type": "application/json" } })).catch(() => undefined);
    }
    return entries;
  }

  // ---------- subscriptions ----------

  /** Registers the subscription, then answers with the current value (`{value}`). A failed
   *  read rejects, but the subscription stays: later changes still arrive. */
  private async subscribe(path: string, kindArg: unknown, idArg: unknown, sink: FrameSink): Promise<{ value: unknown }> {
    const kind: ReadKind = kindArg === "text" || kindArg === "blob" ? kindArg : "json";
    if (typeof idArg !== "string" || idArg === "" || idArg.length > 200) throw new StorageRpcError("invalid_request", "subscribe needs an id.", 400);
    this.subscriptions.set(idArg, { path, kind, sink });
    return { value: await this.read(path, kind) };
  }

  private notify(path: string, op: "json" | "text" | "blob" | "remove", data: unknown): void {
    for (const [subscriptionId, sub] of this.subscriptions) {
      if (sub.path !== path) continue;
      let value: unknown;
      if (op === "remove") value = null;
      else if (sub.kind === "json" && op === "json") value = data ?? null;
      else if (sub.kind === "text" && op === "text") value = String(data);
      else if (sub.kind === "text" && op === "json") value = JSON.stringify(data ?? null);
      else if (sub.kind === "blob" && op === "blob") value = data;
      else {
        // Another kind was written: read it back the way this subscriber reads.
        void this.read(path, sub.kind)
          .then((fresh) => sub.sink.post({ type: "moebius:storage-change", subscriptionId, path, value: fresh }))
          .catch(() => undefined);
        continue;
      }
      sub.sink.post({ type: "moebius:storage-change", subscriptionId, path, value });
    }
  }

  // ---------- the outbox ----------

  private loadOutbox(): OutboxEntry[] {
    if (!this.persistOutbox) return [];
    try {
      const parsed: unknown = JSON.parse(localStorage.getItem(`${APP_OUTBOX_PREFIX}${this.appId}`) ?? "[]");
      return Array.isArray(parsed) ? (parsed as OutboxEntry[]).filter((e) => typeof e.path === "string") : [];
    } catch {
      return [];
    }
  }

  private saveOutbox(): void {
    if (!this.persistOutbox) return;
    try {
      const key = `${APP_OUTBOX_PREFIX}${this.appId}`;
      if (this.outbox.length === 0) localStorage.removeItem(key);
      else localStorage.setItem(key, JSON.stringify(this.outbox));
    } catch {
      // Kept in memory for this page only.
    }
  }

  private enqueue(entry: OutboxEntry): void {
    this.outbox = [...this.outbox.filter((e) => e.path !== entry.path), entry];
    this.saveOutbox();
    this.scheduleRetry();
  }

  private dequeue(path: string): void {
    if (!this.outbox.some((e) => e.path === path)) return;
    this.outbox = this.outbox.filter((e) => e.path !== path);
    this.saveOutbox();
  }

  private scheduleRetry(): void {
    if (this.retryTimer !== null || this.outbox.length === 0) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.drain();
    }, DRAIN_RETRY_MS);
  }

  private drainSoon(): Promise<void> {
    return this.outbox.length > 0 ? this.drain() : Promise.resolve();
  }

  /** Sends queued writes in order; stops at the first one the network refuses. */
  async drain(): Promise<void> {
    if (this.draining) {
      this.drainAgain = true;
      return;
    }
    this.draining = true;
    try {
      do {
        this.drainAgain = false;
        if (!(await this.drainOnce())) return;
      } while (this.drainAgain);
    } finally {
      this.draining = false;
    }
  }

  /** One pass over the outbox; false when it stopped at a write the network refused. */
  private async drainOnce(): Promise<boolean> {
    while (this.outbox.length > 0) {
      const entry = this.outbox[0];
      if (!entry) break;
      const url = fileUrl(this.appId, entry.path);
      let response: Response;
      try {
        if (entry.op === "remove") response = await this.send(url, { method: "DELETE" });
        else {
          const { body, contentType } = encodeWrite(entry.path, entry.op, entry.value);
          response = await this.send(url, { method: "PUT", body, headers: { "Content-Type": contentType } });
        }
      } catch {
        this.scheduleRetry();
        return this.drainAgain;
      }
      if (response.status >= 500 || response.status === 401) {
        this.scheduleRetry();
        return false;
      }
      // Removed unless a newer write for the path was queued meanwhile.
      if (this.outbox[0] === entry) {
        this.outbox = this.outbox.slice(1);
        this.saveOutbox();
      }
      if (!(response.ok || (entry.op === "remove" && response.status === 404))) {
        const error = await errorOf(response);
        for (const sink of this.sinks) {
          sink.post({ type: "moebius:storage-dead-letter", path: entry.path, error: { code: error.code, message: error.message, status: error.status } });
        }
      }
    }
    return true;
  }
}

const hosts = new Map<number, AppStorageHost>();

/** The one storage host of `appId` in this page (shared by its canvases). */
export function storageHostFor(appId: number, getToken: (force: boolean) => Promise<string | null>): AppStorageHost {
  let host = hosts.get(appId);
  if (!host) {
    host = new AppStorageHost({ appId, getToken });
    hosts.set(appId, host);
  }
  return host;
}

/** Retries every queued write now (the network came back). */
export function drainAllHosts(): void {
  for (const host of hosts.values()) void host.drain();
}

// The outboxes flush the moment the shell is online again, whether or not an app is on screen.
onlineStore.subscribe(() => {
  if (onlineStore.get()) drainAllHosts();
});
