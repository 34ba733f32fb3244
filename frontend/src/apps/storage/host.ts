//! The shell side of `window.mobius.storage` (the frame is an opaque origin without IndexedDB, so
//! its storage runs here): each frame RPC (`moebius:storage-rpc`) becomes requests to
//! `/api/storage/apps/{id}/…` carrying the app's own token.
//!
//! Writes always go through the outbox (kept in IndexedDB, Blobs included): queued in order (a
//! newer write to a path supersedes one not yet sent), sent at once when the network is there,
//! and otherwise kept until it is (network back, focus, page shown, or a backoff timer). Each
//! write's outcome decides what the app hears: synced (with the new version), queued, or a
//! `DurableWriteError` (conflict, dead letter, superseded). A refused write is broadcast to the
//! app's frames as a dead letter and the mirror is repaired from the server.
//!
//! Reads come from the mirror of the last known server value when there is one (answered at once,
//! then revalidated in the background: subscribers hear of a change), else from the server; a path
//! written since the mirror last learned the server's value (`unmirrored.ts`: a reload may have cut
//! that update short) is read from the server first. Reads
//! see queued writes. A page only sends the writes it queued; writes left by a closed page are
//! adopted by the next one (Web Locks tell which pages are alive). `mobius.signal` events wait in
//! a bounded queue here too and are delivered to `/api/client-signal`.

import { noteResponse, onlineStore, recheckOnline } from "../../shell/online";
import { appDb, type AppDb, type MirrorRecord, type OpRecord, type ReadKind, type SignalRecord } from "./appDb";
import { APP_OUTBOX_PREFIX } from "../keys";
import { TO_FRAME, type ToFrameMessage } from "../messages";
import { forgetOtherInstallations, UnmirroredPaths } from "./unmirrored";

export type { ReadKind };

/** Largest Blob a write may carry (the outbox holds it until it is sent). */
export const MAX_BLOB_BYTES = 25 * 1024 * 1024;
/** A read waits this long for the response headers, then counts as offline. */
export const READ_TIMEOUT_MS = 2_500;
const MAX_SUBSCRIPTIONS_PER_FRAME = 256;
const MAX_SUBSCRIPTION_ID_CHARS = 160;
const MAX_PATH_CHARS = 2048;
const LIST_PAGE = 500;
const LIST_PAGE_WITH_CONTENT = 16;
const MAX_LIST_PAGES = 1_000;
/** A write that could not be sent for a transient reason is retried after this long, doubling… */
const RETRY_FIRST_MS = 2_000;
/** …up to this. */
const RETRY_MAX_MS = 60_000;
/** A write still waiting this long (not sent, or no answer yet) is stored on the device. */
const PERSIST_GRACE_MS = 250;
/** Dead letters kept for a frame that is not mounted yet (the oldest go first). */
const MAX_UNDELIVERED_DEAD_LETTERS = 50;
/** Signals per delivery request (the server's limit). */
const SIGNAL_BATCH = 100;
const SIGNAL_RETRY_FIRST_MS = 5_000;
const SIGNAL_RETRY_MAX_MS = 5 * 60_000;
const SIGNAL_RETRY_AFTER_MAX_MS = 24 * 3600_000;
/** One signal event, serialised, as the server counts it. */
const MAX_SIGNAL_EVENT_BYTES = 4_096;
export const SIGNAL_BOUNDS = { perScopeCount: 500, perScopeBytes: 2 * 1024 * 1024, totalCount: 2_000, totalBytes: 8 * 1024 * 1024 };

/** The fields of an error as it crosses to the frame (`moebius:storage-rpc-result`). */
export interface WireError {
  name: string;
  message: string;
  code: string;
  status: number | undefined;
  path: string | undefined;
  writeId: string | undefined;
  retryable: boolean | undefined;
  refusedValue: unknown;
}

/** A failed storage call, as the frame receives it. */
export class StorageRpcError extends Error {
  readonly code: string;
  readonly status: number;
  readonly path: string | undefined;
  readonly writeId: string | undefined;
  readonly retryable: boolean | undefined;
  readonly refusedValue: unknown;

  constructor(
    code: string,
    message: string,
    status = 0,
    extra: { name?: string; path?: string; writeId?: string; retryable?: boolean; refusedValue?: unknown } = {},
  ) {
    super(message);
    this.name = extra.name ?? "StorageError";
    this.code = code;
    this.status = status;
    this.path = extra.path;
    this.writeId = extra.writeId;
    this.retryable = extra.retryable;
    this.refusedValue = extra.refusedValue;
  }

  toWire(): WireError {
    return {
      name: this.name,
      message: this.message,
      code: this.code,
      status: this.status,
      path: this.path,
      writeId: this.writeId,
      retryable: this.retryable,
      refusedValue: this.refusedValue,
    };
  }
}

/** Any failure as the wire shape (a bug in here never becomes an unhandled exception). */
export function wireError(error: unknown): WireError {
  if (error instanceof StorageRpcError) return error.toWire();
  return new StorageRpcError("storage_error", "The storage request failed.").toWire();
}

/** Where subscription pushes and dead letters go (one per mounted frame). */
export interface FrameSink {
  post: (message: ToFrameMessage) => void;
}

export interface StorageHostOptions {
  appId: number;
  /** The app token (`force`: mint a new one, after a 401). Null when none can be had. */
  getToken: (force: boolean) => Promise<string | null>;
  fetch?: typeof fetch;
  db?: AppDb;
  /** Whether the server can be reached (default: the shell's verdict, `onlineStore`). */
  online?: () => boolean;
  /** A request failed for want of a network (default: the shell probes again). */
  onNetworkError?: () => void;
  /** A request got an HTTP answer (default: the shell counts it as being online). */
  onResponse?: (status: number) => void;
  /** This page's id (an outbox op is sent only by the page that owns it). */
  ownerId?: string;
  locks?: LockManager | null;
  /** Listen to window focus/online/pageshow/visibility to retry (default true). */
  wake?: boolean;
}

type Outcome = { state: "confirmed"; version: string | null } | { state: "conflict" | "rejected"; status: number } | { state: "superseded" };

interface QueuedOp extends OpRecord {
  /** The IndexedDB key, once stored. */
  dbSeq: number | null;
  /** Storing it on the device (null: not started — a write answered at once never is). */
  persisted: Promise<void> | null;
  persistFailed: boolean;
  inFlight: boolean;
  outcome: Outcome | null;
  /** Its writer was told "queued": a later refusal can only be announced. */
  reported: boolean;
}

interface Subscription {
  path: string;
  kind: ReadKind;
  sink: FrameSink;
}

interface Stored {
  kind: ReadKind;
  value: unknown;
  contentType: string | null;
}

// ---------- paths and URLs ----------

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

export function listUrl(appId: number, prefix: string, options: { includeContent?: boolean; cursor?: string | null; limit?: number } = {}): string {
  const query = new URLSearchParams();
  if (options.limit) query.set("limit", String(options.limit));
  if (options.includeContent) query.set("include_content", "true");
  if (options.cursor) query.set("cursor", options.cursor);
  const qs = query.toString();
  return `/api/storage/apps-list/${appId}/${encodePath(prefix)}${qs ? `?${qs}` : ""}`;
}

function checkPath(path: unknown): string {
  if (typeof path !== "string" || path === "" || path.length > MAX_PATH_CHARS || path.startsWith("/") || path.split("/").some((s) => s === ".." || s === ".")) {
    throw new StorageRpcError("invalid_path", `The storage path ${JSON.stringify(path)} is not allowed: use a relative path like "notes/today.json".`, 400);
  }
  return path;
}

function checkKind(kind: unknown, what: string): ReadKind {
  if (kind === undefined || kind === null) return "json";
  if (kind === "json" || kind === "text" || kind === "blob") return kind;
  throw new StorageRpcError("invalid_argument", `${what}: kind must be "json", "text" or "blob".`, 400, { name: "TypeError" });
}

// ---------- reading responses ----------

function essence(contentType: string | null): string {
  return (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

/** What a stored Content-Type holds. */
export function kindOf(contentType: string | null): ReadKind {
  const type = essence(contentType);
  if (type === "application/json" || type.endsWith("+json")) return "json";
  if (type.startsWith("text/")) return "text";
  return "blob";
}

function kindMismatch(path: string, stored: ReadKind, wanted: ReadKind): StorageRpcError {
  const reader = { json: "get()", text: "getText()", blob: "getBlob()" }[stored];
  return new StorageRpcError("kind_mismatch", `${path} holds ${stored === "json" ? "a JSON document" : stored === "text" ? "text" : "binary data"}; read it with ${reader}${wanted === "blob" ? "" : " or getBlob()"}.`, 415);
}

/** Reads a 200 answer as stored (`kind` from its Content-Type). */
async function storedFrom(response: Response, path: string): Promise<Stored> {
  const contentType = response.headers.get("Content-Type");
  const kind = kindOf(contentType);
  if (kind === "blob") return { kind, value: await response.blob(), contentType };
  const text = await response.text();
  if (kind === "text") return { kind, value: text, contentType };
  try {
    return { kind, value: JSON.parse(text) as unknown, contentType };
  } catch {
    throw new StorageRpcError("invalid_json", `${path} is not valid JSON.`, 415);
  }
}

/** The stored value as `wanted` (JSON reads as its text or a Blob; text as a Blob). */
export function convert(stored: Stored, wanted: ReadKind, path: string): unknown {
  if (stored.kind === wanted) return stored.value;
  if (wanted === "blob") {
    const text = stored.kind === "json" ? JSON.stringify(stored.value) : String(stored.value);
    return new Blob([text], { type: stored.contentType ?? (stored.kind === "json" ? "application/json" : "text/plain;charset=utf-8") });
  }
  if (wanted === "text" && stored.kind === "json") return JSON.stringify(stored.value);
  throw kindMismatch(path, stored.kind, wanted);
}

async function errorOf(response: Response, path: string): Promise<StorageRpcError> {
  let message = `Storage answered ${response.status}.`;
  let code = `http_${response.status}`;
  try {
    const body = (await response.json()) as { code?: unknown; message?: unknown };
    if (typeof body.code === "string") code = body.code;
    if (typeof body.message === "string") message = body.message;
  } catch {
    // Not JSON.
  }
  return new StorageRpcError(code, message, response.status, { path });
}

const sameValue = (a: unknown, b: unknown) => {
  if (a instanceof Blob || b instanceof Blob) return false;
  try {
    return JSON.stringify(a) === JSON.stringify(b);
  } catch {
    return false;
  }
};

// ---------- pages and locks ----------

function randomId(): string {
  if (typeof crypto !== "undefined" && typeof crypto.randomUUID === "function") return crypto.randomUUID();
  return `${Date.now().toString(36)}${Math.random().toString(36).slice(2)}`;
}

/** This page's id; a Web Lock named after it is held while the page lives. */
export const PAGE_ID = randomId();
const pageLockName = (id: string) => `mobius-page-${id}`;
let pageLockTaken = false;

function defaultLocks(): LockManager | null {
  return typeof navigator !== "undefined" && navigator.locks && typeof navigator.locks.request === "function" ? navigator.locks : null;
}

function holdPageLock(locks: LockManager | null): void {
  if (!locks || pageLockTaken) return;
  pageLockTaken = true;
  void locks.request(pageLockName(PAGE_ID), () => new Promise<void>(() => undefined)).catch(() => undefined);
}

// ---------- the host ----------

let writeCounter = 0;

export class AppStorageHost {
  readonly appId: number;
  private readonly getToken: (force: boolean) => Promise<string | null>;
  private readonly fetchImpl: typeof fetch;
  private readonly db: AppDb;
  private readonly online: () => boolean;
  private readonly onNetworkError: () => void;
  private readonly onResponse: (status: number) => void;
  private readonly ownerId: string;
  private readonly locks: LockManager | null;
  private scope: string | null = null;
  private unmirrored: UnmirroredPaths | null = null;
  /** Mirror updates not yet committed, and whether one failed (then the marks stay). */
  private mirrorWrites = 0;
  private mirrorFailed = false;
  private starting: Promise<string> | null = null;
  private adoptedOnce = false;
  private queue: QueuedOp[] = [];
  private pass: Promise<void> | null = null;
  private lastPassBlocked = false;
  /** A wake-up came while a pass ran (the network may be back mid-attempt): run once more. */
  private passAgain = false;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private retryDelay = RETRY_FIRST_MS;
  private persistTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly subscriptions = new Map<string, Subscription>();
  private readonly sinks = new Set<FrameSink>();
  private undelivered: ToFrameMessage[] = [];
  private readonly revalidating = new Set<string>();
  private signalPass: Promise<void> | null = null;
  private signalTimer: ReturnType<typeof setTimeout> | null = null;
  private signalDelay = SIGNAL_RETRY_FIRST_MS;
  private signalNextAt = 0;
  private readonly wakeListeners: Array<() => void> = [];
  private destroyed = false;

  constructor(options: StorageHostOptions) {
    this.appId = options.appId;
    this.getToken = options.getToken;
    this.fetchImpl = options.fetch ?? ((input, init) => fetch(input, init));
    this.db = options.db ?? appDb();
    this.online = options.online ?? (() => onlineStore.get());
    this.onNetworkError = options.onNetworkError ?? (() => void recheckOnline());
    this.onResponse = options.onResponse ?? noteResponse;
    this.ownerId = options.ownerId ?? PAGE_ID;
    this.locks = options.locks === undefined ? defaultLocks() : options.locks;
    if (this.ownerId === PAGE_ID) holdPageLock(this.locks);
    if (options.wake !== false && typeof window !== "undefined") this.listenForWake();
  }

  /** Performs one RPC for `sink`'s frame. Rejects with a StorageRpcError. */
  async call(method: string, args: unknown[], sink: FrameSink): Promise<unknown> {
    if (!this.sinks.has(sink)) this.attach(sink);
    const a = Array.isArray(args) ? args : [];
    switch (method) {
      case "get":
        return this.read(checkPath(a[0]), "json");
      case "getText":
        return this.read(checkPath(a[0]), "text");
      case "getBlob":
        return this.read(checkPath(a[0]), "blob");
      case "getWithVersion":
        return this.readWithVersion(checkPath(a[0]), checkKind(a[1], "getWithVersion"));
      case "durableWrite":
        return this.durableWrite(checkPath(a[0]), a[1], a[2]);
      case "remove":
        return this.remove(checkPath(a[0]));
      case "list": {
        const options = typeof a[1] === "object" && a[1] !== null ? (a[1] as { includeContent?: unknown }) : {};
        return this.list(typeof a[0] === "string" ? a[0] : "", options.includeContent === true);
      }
      case "pendingCount":
        await this.start();
        return this.queue.length;
      case "subscribe":
        return this.subscribe(a[0], checkPath(a[1]), checkKind(a[2], "subscribe"), sink);
      case "unsubscribe": {
        const sub = typeof a[0] === "string" ? this.subscriptions.get(a[0]) : undefined;
        if (!sub || sub.sink !== sink) return false;
        this.subscriptions.delete(a[0] as string);
        return true;
      }
      case "drain":
        await this.start();
        await this.drain(true);
        return null;
      case "queueSignals":
        return this.queueSignals(a[0]);
      case "pendingSignalCount":
        return this.db.countSignals(await this.start());
      case "drainSignals":
        await this.start();
        await this.drainSignals(true);
        return null;
      default:
        throw new StorageRpcError("storage_method_denied", `There is no storage method ${JSON.stringify(method)}.`, 400);
    }
  }

  /** A frame is there to hear pushes (dead letters kept for it are delivered now). */
  attach(sink: FrameSink): void {
    this.sinks.add(sink);
    const waiting = this.undelivered;
    this.undelivered = [];
    for (const message of waiting) sink.post(message);
  }

  /** A frame went away: drop its subscriptions. */
  detach(sink: FrameSink): void {
    this.sinks.delete(sink);
    for (const [id, sub] of this.subscriptions) if (sub.sink === sink) this.subscriptions.delete(id);
  }

  pendingCount(): number {
    return this.queue.length;
  }

  /** Stops timers and listeners (sign-out, another installation of the app). */
  destroy(): void {
    this.destroyed = true;
    for (const stop of this.wakeListeners) stop();
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    if (this.signalTimer !== null) clearTimeout(this.signalTimer);
    if (this.persistTimer !== null) clearTimeout(this.persistTimer);
    this.subscriptions.clear();
    this.sinks.clear();
  }

  // ---------- identity and start ----------

  /** The installation this host writes for (`<appId>:<app_nonce>`), once a token names it. */
  private start(): Promise<string> {
    if (this.scope !== null) return Promise.resolve(this.scope);
    this.starting ??= (async () => {
      const token = await this.getToken(false).catch(() => null);
      const nonce = token ? tokenNonce(token) : null;
      if (!token) throw new StorageRpcError("storage_identity_unavailable", "This app has no token yet, so its storage cannot be reached.", 401);
      const scope = `${this.appId}:${nonce ?? "legacy"}`;
      // Records of an earlier installation of this app can never be delivered or read again.
      await this.db.purgeOtherScopes(this.appId, scope).catch(() => undefined);
      forgetOtherInstallations(this.appId, scope);
      this.unmirrored = new UnmirroredPaths(scope);
      this.scope = scope;
      await this.adopt().catch(() => undefined);
      this.importLegacyOutbox();
      if (this.queue.length > 0) void this.drain();
      void this.drainSignals(false);
      return scope;
    })();
    const starting = this.starting;
    starting.catch(() => {
      if (this.starting === starting) this.starting = null;
    });
    return starting;
  }

  private withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    if (!this.locks) return fn();
    return this.locks.request(name, fn) as Promise<T>;
  }

  /** Takes over queued writes whose page is gone (closed, reloaded). */
  private async adopt(): Promise<void> {
    const scope = this.scope;
    if (scope === null) return;
    await this.withLock(`mobius-outbox-adopt-${this.appId}`, async () => {
      let alive: Set<string> | null = null;
      if (this.locks && typeof this.locks.query === "function") {
        const snapshot = await this.locks.query();
        alive = new Set([...(snapshot.held ?? []), ...(snapshot.pending ?? [])].map((l) => l.name ?? ""));
      } else if (this.adoptedOnce) return;
      this.adoptedOnce = true;
      const known = new Set(this.queue.map((op) => op.dbSeq));
      const orphans = (await this.db.listOps(scope)).filter(
        (op) => op.seq !== undefined && !known.has(op.seq) && op.owner !== this.ownerId && (alive === null || !alive.has(pageLockName(op.owner))),
      );
      if (orphans.length === 0) return;
      await this.db.setOwner(
        orphans.map((op) => op.seq as number),
        this.ownerId,
      );
      const adopted: QueuedOp[] = orphans.map((op) => ({
        ...op,
        owner: this.ownerId,
        dbSeq: op.seq ?? null,
        persisted: Promise.resolve(),
        persistFailed: false,
        inFlight: false,
        outcome: null,
        reported: true,
      }));
      // Older than anything queued here: they go first (in their own order).
      this.queue = [...adopted, ...this.queue];
    });
  }

  /** Writes an earlier version of the shell queued in localStorage join the outbox (once). */
  private importLegacyOutbox(): void {
    const key = `${APP_OUTBOX_PREFIX}${this.appId}`;
    let entries: unknown;
    try {
      entries = JSON.parse(localStorage.getItem(key) ?? "null");
      localStorage.removeItem(key);
    } catch {
      return;
    }
    if (!Array.isArray(entries)) return;
    for (const entry of entries as { path?: unknown; op?: unknown; value?: unknown }[]) {
      try {
        const path = checkPath(entry.path);
        if (entry.op === "remove") this.enqueue(this.deleteOp(path));
        else this.enqueue(this.prepare(path, entry.op === "text" ? String(entry.value) : entry.value, { kind: entry.op === "text" ? "text" : "json" }));
      } catch {
        // Unusable entry: dropped.
      }
    }
  }

  /** The network is back, or the page came to the front: adopt orphaned writes, send everything. */
  wake(): void {
    if (this.destroyed || this.scope === null) return;
    void this.adopt()
      .catch(() => undefined)
      .then(() => {
        void this.drain(true);
        void this.drainSignals(true);
      });
  }

  private listenForWake(): void {
    const wake = () => this.wake();
    const onVisible = () => {
      if (document.visibilityState === "visible") wake();
    };
    for (const type of ["online", "focus", "pageshow"]) {
      window.addEventListener(type, wake);
      this.wakeListeners.push(() => window.removeEventListener(type, wake));
    }
    // Leaving: what is still waiting goes to the device now, not after its grace period.
    const leave = () => this.persistAll();
    window.addEventListener("pagehide", leave);
    this.wakeListeners.push(() => window.removeEventListener("pagehide", leave));
    document.addEventListener("visibilitychange", onVisible);
    this.wakeListeners.push(() => document.removeEventListener("visibilitychange", onVisible));
  }

  // ---------- HTTP ----------

  private async send(url: string, init: { method: "GET" | "PUT" | "DELETE" | "POST"; body?: BodyInit | null; headers?: Record<string, string> }, timeoutMs = 0): Promise<Response> {
    let token = await this.getToken(false).catch(() => null);
    if (!token) throw new StorageRpcError("token_unavailable", "app token unavailable", 401);
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = { ...init.headers, Authorization: `Bearer ${token}` };
      const controller = timeoutMs > 0 ? new AbortController() : null;
      const timer = controller ? setTimeout(() => controller.abort(), timeoutMs) : null;
      let response: Response;
      try {
        response = await this.fetchImpl(url, {
          method: init.method,
          headers,
          body: init.body ?? null,
          cache: "no-store",
          credentials: "omit",
          signal: controller?.signal ?? null,
        });
      } catch {
        this.onNetworkError();
        throw new StorageRpcError(controller?.signal.aborted ? "timeout" : "network", "Möbius can't be reached right now.", 0);
      } finally {
        if (timer !== null) clearTimeout(timer);
      }
      this.onResponse(response.status);
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

  private mirrorKey(path: string): string {
    return `${this.scope}:${path}`;
  }

  /** The newest queued write of `path` (what a read must show: read-your-writes). */
  private queuedFor(path: string): QueuedOp | undefined {
    for (let i = this.queue.length - 1; i >= 0; i--) {
      const op = this.queue[i];
      if (op?.path === path) return op;
    }
    return undefined;
  }

  private fromOp(op: QueuedOp, kind: ReadKind): unknown {
    if (op.method === "DELETE") return null;
    return convert({ kind: op.kind, value: op.value, contentType: op.contentType }, kind, op.path);
  }

  private async mirror(path: string): Promise<MirrorRecord | undefined> {
    return this.db.getMirror(this.mirrorKey(path)).catch(() => undefined);
  }

  /**
   * What the server holds for `path` now, for later reads (also after a reload: the write starts
   * at once, and transactions run in call order, so a read issued after it sees it).
   */
  private remember(path: string, stored: Stored | null, version: string | null): void {
    const record: MirrorRecord = {
      key: this.mirrorKey(path),
      scope: this.scope ?? "",
      path,
      present: stored !== null,
      kind: stored?.kind ?? "json",
      contentType: stored?.contentType ?? null,
      value: stored?.value ?? null,
      version,
      at: Date.now(),
    };
    this.mirrorWrites += 1;
    void this.db
      .putMirror(record)
      .then(
        () => {
          if (!this.queuedFor(path)) this.unmirrored?.remove(path);
        },
        () => {
          this.mirrorFailed = true;
        },
      )
      .finally(() => {
        this.mirrorWrites -= 1;
        if (this.mirrorWrites === 0 && this.queue.length === 0 && !this.mirrorFailed) this.unmirrored?.settled();
      });
  }

  /** GET from the server: the stored value (null when absent) and its version. */
  private async fetchStored(path: string): Promise<{ stored: Stored | null; version: string | null }> {
    const response = await this.send(fileUrl(this.appId, path), { method: "GET", headers: { "X-Mobius-Version": "1" } }, READ_TIMEOUT_MS);
    if (response.status === 404) return { stored: null, version: null };
    if (!response.ok) throw await errorOf(response, path);
    return { stored: await storedFrom(response, path), version: response.headers.get("ETag") };
  }

  private async read(path: string, kind: ReadKind): Promise<unknown> {
    await this.start();
    const op = this.queuedFor(path);
    if (op) return this.fromOp(op, kind);
    const mirrored = await this.mirror(path);
    const online = this.online();
    // Written since the mirror last heard from the server: the server's answer comes first.
    const behind = online && (this.unmirrored?.has(path) ?? false);
    // A known absence of a blob is checked again (the agent or a job may have written it since).
    const usable = !behind && mirrored && !(mirrored.present === false && kind === "blob" && online) && (!mirrored.present || mirrored.kind === kind || !online);
    if (mirrored && usable) {
      if (online && kind !== "blob") this.revalidate(path);
      return mirrored.present ? convert(mirrored, kind, path) : null;
    }
    if (online) {
      try {
        const { stored, version } = await this.fetchStored(path);
        this.remember(path, stored, version);
        const again = this.queuedFor(path);
        if (again) return this.fromOp(again, kind);
        return stored ? convert(stored, kind, path) : null;
      } catch (error) {
        // The server refused (not a missing network): say so rather than pretend there is nothing.
        if (error instanceof StorageRpcError && error.status > 0 && error.code !== "token_unavailable") throw error;
      }
    }
    // The server could not say: what the device last knew beats nothing.
    if (behind && mirrored?.present && mirrored.kind === kind) return convert(mirrored, kind, path);
    return null;
  }

  /** Refreshes the mirror of `path` in the background; subscribers hear of a change. */
  private revalidate(path: string): void {
    if (this.revalidating.has(path)) return;
    this.revalidating.add(path);
    void (async () => {
      try {
        if (this.queuedFor(path)) return;
        const { stored, version } = await this.fetchStored(path);
        if (this.queuedFor(path)) return;
        const before = await this.mirror(path);
        this.remember(path, stored, version);
        const changed = !before || before.present !== (stored !== null) || (stored !== null && !sameValue(before.value, stored.value));
        if (changed) this.notify(path, stored);
      } catch {
        // Offline or refused: the mirror stays as it was.
      } finally {
        this.revalidating.delete(path);
      }
    })();
  }

  private async readWithVersion(path: string, kind: ReadKind): Promise<{ value: unknown; version: string | null; offline?: true }> {
    await this.start();
    if (!this.online()) {
      const mirrored = await this.mirror(path);
      const op = this.queuedFor(path);
      const value = op ? this.fromOp(op, kind) : mirrored?.present ? convert(mirrored, kind, path) : null;
      return { value, version: mirrored?.version ?? null, offline: true };
    }
    const { stored, version } = await this.fetchStored(path);
    this.remember(path, stored, version);
    const op = this.queuedFor(path);
    return { value: op ? this.fromOp(op, kind) : stored ? convert(stored, kind, path) : null, version };
  }

  // ---------- writes ----------

  /** Checks a write from the frame and turns it into an outbox op. */
  private prepare(path: string, value: unknown, rawOptions: unknown): QueuedOp {
    const opts = typeof rawOptions === "object" && rawOptions !== null ? (rawOptions as Record<string, unknown>) : {};
    const kind = opts.kind === undefined ? (value instanceof Blob ? "blob" : typeof value === "string" ? "text" : "json") : checkKind(opts.kind, "durableWrite");
    const declared = typeof opts.contentType === "string" && opts.contentType.trim() && opts.contentType.length <= 200 ? opts.contentType.trim() : null;
    let body: string | Blob;
    let contentType: string;
    if (kind === "blob") {
      if (!(value instanceof Blob)) throw new StorageRpcError("invalid_argument", "A blob write needs a Blob or File.", 400, { name: "TypeError", path });
      if (value.size > MAX_BLOB_BYTES) throw new StorageRpcError("too_large", `${path}: blobs are limited to 25 MiB.`, 413, { path });
      body = value;
      contentType = declared ?? (value.type || "application/octet-stream");
    } else if (kind === "text") {
      if (typeof value !== "string") throw new StorageRpcError("invalid_argument", "A text write needs a string.", 400, { name: "TypeError", path });
      body = value;
      contentType = declared ?? "text/plain;charset=utf-8";
    } else {
      let json: string | undefined;
      try {
        json = JSON.stringify(value === undefined ? null : value);
      } catch {
        json = undefined;
      }
      if (json === undefined) throw new StorageRpcError("invalid_argument", "A JSON write needs a value JSON can hold (no cycles, no BigInt).", 400, { name: "TypeError", path });
      body = json;
      contentType = "application/json";
    }
    return this.newOp(path, {
      method: "PUT",
      kind,
      contentType,
      value: kind === "json" ? (value === undefined ? null : value) : value,
      body,
      ifMatch: typeof opts.ifMatch === "string" && opts.ifMatch.trim() ? opts.ifMatch.trim() : null,
      ifNoneMatch: opts.ifNoneMatch === true || opts.ifNoneMatch === "*",
    });
  }

  /** A fresh outbox op of this installation and page, with a new write id. */
  private newOp(path: string, write: Pick<OpRecord, "method" | "kind" | "contentType" | "value" | "body" | "ifMatch" | "ifNoneMatch">): QueuedOp {
    writeCounter += 1;
    return {
      scope: this.scope ?? "",
      owner: this.ownerId,
      path,
      ...write,
      writeId: `${writeCounter}-${randomId()}`,
      at: Date.now(),
      dbSeq: null,
      persisted: null,
      persistFailed: false,
      inFlight: false,
      outcome: null,
      reported: false,
    };
  }

  /** Queues `op` (superseding what waits for the same path), stores it, and tells subscribers. */
  private enqueue(op: QueuedOp): void {
    const superseded = this.queue.filter((q) => q.path === op.path && !q.inFlight);
    for (const old of superseded) {
      old.outcome = { state: "superseded" };
      this.forget(old);
    }
    this.queue = [...this.queue.filter((q) => !superseded.includes(q)), op];
    this.unmirrored?.add(op.path);
    this.schedulePersist();
    this.notify(op.path, op.method === "DELETE" ? null : { kind: op.kind, value: op.value, contentType: op.contentType });
  }

  /** Stores `op` on the device (once); a reload or another page can then send it. */
  private persist(op: QueuedOp): Promise<void> {
    if (op.persisted) return op.persisted;
    const record: OpRecord = {
      scope: op.scope,
      owner: op.owner,
      path: op.path,
      method: op.method,
      kind: op.kind,
      contentType: op.contentType,
      value: op.value,
      body: op.body,
      ifMatch: op.ifMatch,
      ifNoneMatch: op.ifNoneMatch,
      writeId: op.writeId,
      at: op.at,
    };
    op.persisted = this.db.addOp(record).then(
      (seq) => {
        op.dbSeq = seq;
        // Settled while it was being stored: it must not come back after a reload.
        if (op.outcome !== null) void this.db.deleteOp(seq).catch(() => undefined);
      },
      () => {
        op.persistFailed = true;
      },
    );
    return op.persisted;
  }

  /** Stores every queued write not stored yet (the network is away, or slow to answer). */
  private persistAll(): void {
    for (const op of this.queue) void this.persist(op);
  }

  /** A write the server confirms within the grace period never touches the device's database. */
  private schedulePersist(): void {
    if (this.persistTimer !== null) return;
    this.persistTimer = setTimeout(() => {
      this.persistTimer = null;
      this.persistAll();
    }, PERSIST_GRACE_MS);
  }

  /** Takes `op` out of the queue and the database. */
  private forget(op: QueuedOp): void {
    this.queue = this.queue.filter((q) => q !== op);
    if (op.dbSeq !== null) void this.db.deleteOp(op.dbSeq).catch(() => undefined);
  }

  /** Queues `op`, sends what can be sent, and answers with the op's outcome (or that it waits). */
  private async settle(op: QueuedOp): Promise<Outcome | null> {
    this.enqueue(op);
    await this.drain();
    if (op.outcome !== null) return op.outcome;
    await this.persist(op);
    if (op.outcome !== null) return op.outcome;
    if (op.persistFailed) {
      // Not on this device and not sent: it must not stay as if it were safe.
      this.queue = this.queue.filter((q) => q !== op);
      throw new StorageRpcError("outbox_unavailable", "Möbius could not keep this write on the device to send later.", 507, { path: op.path, writeId: op.writeId });
    }
    op.reported = true;
    return null;
  }

  private refusal(op: QueuedOp, outcome: Outcome): StorageRpcError | null {
    if (outcome.state === "conflict" || outcome.state === "rejected") {
      const conflict = outcome.state === "conflict";
      return new StorageRpcError(conflict ? "conflict" : "dead_letter", `${op.path}: the write was ${conflict ? "refused because the document changed since it was read" : `refused (${outcome.status})`}.`, outcome.status, {
        name: "DurableWriteError",
        path: op.path,
        writeId: op.writeId,
        retryable: conflict,
        refusedValue: op.method === "DELETE" ? null : op.value,
      });
    }
    if (outcome.state === "superseded") {
      return new StorageRpcError("superseded", `${op.path}: a newer write replaced this one before it was sent.`, 0, {
        name: "DurableWriteError",
        path: op.path,
        writeId: op.writeId,
        retryable: false,
        refusedValue: op.method === "DELETE" ? null : op.value,
      });
    }
    return null;
  }

  private async durableWrite(path: string, value: unknown, options: unknown): Promise<Record<string, unknown>> {
    await this.start();
    const op = this.prepare(path, value, options);
    const outcome = await this.settle(op);
    if (outcome === null) return { durability: "queued", path, writeId: op.writeId };
    const refused = this.refusal(op, outcome);
    if (refused) throw refused;
    const version = outcome.state === "confirmed" ? outcome.version : null;
    return version ? { durability: "synced", path, writeId: op.writeId, version } : { durability: "synced", path, writeId: op.writeId };
  }

  private deleteOp(path: string): QueuedOp {
    return this.newOp(path, { method: "DELETE", kind: "json", contentType: null, value: null, body: null, ifMatch: null, ifNoneMatch: false });
  }

  private async remove(path: string): Promise<{ synced: true } | { queued: true }> {
    await this.start();
    const op = this.deleteOp(path);
    const outcome = await this.settle(op);
    if (outcome === null) return { queued: true };
    const refused = this.refusal(op, outcome);
    if (refused && outcome.state !== "superseded") throw refused;
    return { synced: true };
  }

  /**
   * Sends the queue in order until it is empty or the network/server says "not now". A caller
   * that queued an op gets back a promise that settles once that op was tried.
   */
  drain(wake = false): Promise<void> {
    if (wake) this.retryDelay = RETRY_FIRST_MS;
    const running = this.pass;
    if (running) {
      if (wake) this.passAgain = true;
      return running.then(() => {
        const again = this.passAgain || !this.lastPassBlocked;
        this.passAgain = false;
        return again && this.queue.length > 0 && this.online() ? this.drain() : undefined;
      });
    }
    const pass: Promise<void> = Promise.resolve()
      .then(() => this.runPass())
      .finally(() => {
        if (this.pass === pass) this.pass = null;
      });
    this.pass = pass;
    return pass;
  }

  private async runPass(): Promise<void> {
    this.lastPassBlocked = false;
    if (this.destroyed || this.scope === null) return;
    if (!this.online()) {
      this.lastPassBlocked = true;
      this.persistAll();
      return;
    }
    for (;;) {
      const op = this.queue[0];
      if (!op) break;
      op.inFlight = true;
      let response: Response;
      try {
        const headers: Record<string, string> = {};
        if (op.method === "PUT" && op.contentType) headers["Content-Type"] = op.contentType;
        if (op.ifMatch) headers["If-Match"] = op.ifMatch;
        if (op.ifNoneMatch) headers["If-None-Match"] = "*";
        response = await this.send(fileUrl(this.appId, op.path), { method: op.method, body: op.body, headers });
      } catch {
        op.inFlight = false;
        this.blocked();
        return;
      }
      op.inFlight = false;
      const status = response.status;
      if (response.ok || (op.method === "DELETE" && status === 404)) {
        const version = response.headers.get("ETag");
        op.outcome = { state: "confirmed", version };
        this.forget(op);
        // The server now holds this value (a newer queued write still shows through reads).
        this.remember(op.path, op.method === "DELETE" ? null : { kind: op.kind, value: op.value, contentType: op.contentType }, op.method === "DELETE" ? null : version);
        this.retryDelay = RETRY_FIRST_MS;
        continue;
      }
      if (status === 401 || status === 408 || status === 429 || status >= 500) {
        this.blocked();
        return;
      }
      const conflict = status === 412 && (op.ifMatch !== null || op.ifNoneMatch);
      op.outcome = conflict ? { state: "conflict", status } : { state: "rejected", status };
      this.forget(op);
      if (conflict) {
        // A waiting caller retries with what is there now; a writer told "queued" hears of it
        // (useDocument merges again). The mirror learns the server's value quietly: pushing it
        // to subscribers now would race the retry.
        if (op.reported) this.announce({ type: TO_FRAME.storageConflict, payload: { path: op.path, status, writeId: op.writeId, ts: Date.now() } });
        this.repair(op.path, false);
      } else {
        this.announce({
          type: TO_FRAME.storageDeadLetter,
          payload: { path: op.path, status, refusedValue: op.method === "DELETE" ? null : op.value, writeId: op.writeId, ts: Date.now() },
        });
        // What the app showed never reached the server: show what is there.
        this.repair(op.path, true);
      }
    }
  }

  private blocked(): void {
    this.lastPassBlocked = true;
    this.persistAll();
    if (this.retryTimer !== null || this.destroyed) return;
    const delay = this.retryDelay;
    this.retryDelay = Math.min(this.retryDelay * 2, RETRY_MAX_MS);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.drain();
    }, delay);
  }

  /** Tells every frame of the app; kept for the next one when none is there. */
  private announce(message: ToFrameMessage): void {
    if (this.sinks.size === 0) {
      this.undelivered = [...this.undelivered, message].slice(-MAX_UNDELIVERED_DEAD_LETTERS);
      return;
    }
    for (const sink of this.sinks) sink.post(message);
  }

  /** Reads `path` again after a refused write (and, when `tell`, shows subscribers the server's value). */
  private repair(path: string, tell: boolean): void {
    if (this.queuedFor(path)) return;
    void this.fetchStored(path)
      .then(({ stored, version }) => {
        if (this.queuedFor(path)) return;
        this.remember(path, stored, version);
        if (tell) this.notify(path, stored);
      })
      .catch(() => undefined);
  }

  // ---------- listing ----------

  private async list(prefix: string, includeContent: boolean): Promise<unknown[]> {
    const scope = await this.start();
    const clean = prefix.replace(/^\/+|\/+$/g, "");
    if (clean !== "") checkPath(clean);
    const base = clean ? `${clean}/` : "";
    const byName = new Map<string, Record<string, unknown>>();
    const server = this.online() ? await this.listServer(clean, includeContent) : null;
    const child = (path: string): string | null => (base ? (path.startsWith(base) ? path.slice(base.length) : null) : path);
    const addDerived = (path: string, kind: ReadKind, contentType: string | null, value: unknown) => {
      const rest = child(path);
      if (!rest) return;
      const slash = rest.indexOf("/");
      if (slash === -1) {
        const existing = byName.get(rest);
        if (existing) {
          if (includeContent && kind === "json") existing.content = value;
          return;
        }
        const entry: Record<string, unknown> = { name: rest, path: base + rest, type: "file", mime_type: contentType ?? (kind === "json" ? "application/json" : null) };
        if (includeContent && kind === "json") entry.content = value;
        byName.set(rest, entry);
      } else {
        const dir = rest.slice(0, slash);
        if (!byName.has(dir)) byName.set(dir, { name: dir, path: base + dir, type: "directory" });
      }
    };
    if (server) for (const entry of server) byName.set(String(entry.name), entry);
    else {
      for (const record of await this.db.listMirror(scope).catch(() => [] as MirrorRecord[])) {
        if (record.present) addDerived(record.path, record.kind, record.contentType, record.value);
      }
    }
    for (const op of this.queue) {
      if (op.method === "DELETE") {
        const rest = child(op.path);
        if (rest && !rest.includes("/")) byName.delete(rest);
      } else addDerived(op.path, op.kind, op.contentType, op.value);
    }
    return [...byName.values()].sort((a, b) => {
      const x = String(a.name);
      const y = String(b.name);
      return x < y ? -1 : x > y ? 1 : 0;
    });
  }

  /** Every page of the server's listing, or null when it cannot be had. */
  private async listServer(prefix: string, includeContent: boolean): Promise<Record<string, unknown>[] | null> {
    try {
      const entries: Record<string, unknown>[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const url = listUrl(this.appId, prefix, { includeContent, cursor, limit: includeContent ? LIST_PAGE_WITH_CONTENT : LIST_PAGE });
        const response = await this.send(url, { method: "GET" }, READ_TIMEOUT_MS);
        if (response.status === 404) return [];
        if (!response.ok) return null;
        const body = (await response.json()) as { entries?: Record<string, unknown>[]; next_cursor?: string | null };
        entries.push(...(body.entries ?? []));
        cursor = body.next_cursor ?? null;
        if (!cursor) break;
      }
      return entries;
    } catch {
      return null;
    }
  }

  // ---------- subscriptions ----------

  private async subscribe(idArg: unknown, path: string, kind: ReadKind, sink: FrameSink): Promise<true> {
    if (typeof idArg !== "string" || idArg === "" || idArg.length > MAX_SUBSCRIPTION_ID_CHARS) {
      throw new StorageRpcError("invalid_argument", "subscribe needs an id of 1 to 160 characters.", 400, { name: "TypeError" });
    }
    if (!this.subscriptions.has(idArg)) {
      let count = 0;
      for (const sub of this.subscriptions.values()) if (sub.sink === sink) count += 1;
      if (count >= MAX_SUBSCRIPTIONS_PER_FRAME) throw new StorageRpcError("too_many_subscriptions", `A frame can hold at most ${MAX_SUBSCRIPTIONS_PER_FRAME} subscriptions.`, 429);
    }
    await this.start();
    this.subscriptions.set(idArg, { path, kind, sink });
    return true;
  }

  /** Pushes the new state of `path` (null: deleted) to every subscription on it. */
  private notify(path: string, stored: Stored | null): void {
    for (const [subscriptionId, sub] of this.subscriptions) {
      if (sub.path !== path) continue;
      let value: unknown;
      try {
        value = stored === null ? null : convert(stored, sub.kind, path);
      } catch {
        continue;
      }
      sub.sink.post({ type: TO_FRAME.storageChange, subscriptionId, value });
    }
  }

  // ---------- signals ----------

  private async queueSignals(raw: unknown): Promise<boolean> {
    const scope = await this.start();
    if (!Array.isArray(raw)) throw new StorageRpcError("invalid_argument", "queueSignals needs a list of events.", 400, { name: "TypeError" });
    const now = Date.now();
    const records: SignalRecord[] = [];
    for (const [i, event] of raw.slice(0, SIGNAL_BATCH).entries()) {
      if (typeof event !== "object" || event === null) continue;
      const e = event as Record<string, unknown>;
      if (typeof e.id !== "string" || !/^[A-Za-z0-9._:-]{1,100}$/.test(e.id) || typeof e.name !== "string" || !e.name) continue;
      let serialized: string;
      try {
        serialized = JSON.stringify(e);
      } catch {
        continue;
      }
      const bytes = new Blob([serialized]).size;
      if (bytes > MAX_SIGNAL_EVENT_BYTES) continue;
      records.push({ key: `${scope}:${e.id}`, scope, event: e, bytes, queuedAt: now + i });
    }
    if (records.length > 0) {
      await this.db.queueSignals(records, SIGNAL_BOUNDS);
      void this.drainSignals(false);
    }
    return true;
  }

  /** Delivers queued signals in batches; transient failures back off (Retry-After respected). */
  private drainSignals(force: boolean): Promise<void> {
    if (!force && Date.now() < this.signalNextAt) return Promise.resolve();
    if (force && this.signalTimer !== null) {
      clearTimeout(this.signalTimer);
      this.signalTimer = null;
    }
    // A pass already running may have listed the queue before these events joined it.
    if (this.signalPass) return this.signalPass.then(() => this.drainSignals(false));
    const pass: Promise<void> = Promise.resolve()
      .then(async () => {
        const scope = this.scope;
        if (scope === null || !this.online() || this.destroyed) return;
        await this.withLock(`mobius-signals-${this.appId}`, async () => {
          for (;;) {
            const records = await this.db.listSignals(scope, SIGNAL_BATCH);
            if (records.length === 0 || !(await this.deliverSignals(records))) return;
          }
        });
      })
      .catch(() => undefined)
      .finally(() => {
        if (this.signalPass === pass) this.signalPass = null;
      });
    this.signalPass = pass;
    return pass;
  }

  private async deliverSignals(records: SignalRecord[]): Promise<boolean> {
    let response: Response;
    try {
      response = await this.send("/api/client-signal", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ signals: records.map((r) => r.event) }),
      });
    } catch {
      this.signalRetry(null);
      return false;
    }
    if (response.ok || response.status === 403) {
      await this.db.deleteSignals(records.map((r) => r.key));
      if (response.ok) {
        this.signalDelay = SIGNAL_RETRY_FIRST_MS;
        this.signalNextAt = 0;
      }
      return true;
    }
    if ([401, 404, 405, 408, 429].includes(response.status) || response.status >= 500) {
      this.signalRetry(response);
      return false;
    }
    // Refused: find the records the server will not take, keep the rest.
    if (records.length === 1) {
      await this.db.deleteSignals(records.map((r) => r.key));
      return true;
    }
    const middle = Math.floor(records.length / 2);
    if (!(await this.deliverSignals(records.slice(0, middle)))) return false;
    return this.deliverSignals(records.slice(middle));
  }

  private signalRetry(response: Response | null): void {
    if (this.signalTimer !== null || this.destroyed) return;
    let delay = this.signalDelay;
    const retryAfter = response?.headers.get("Retry-After");
    if (retryAfter) {
      const seconds = Number(retryAfter);
      const until = Date.parse(retryAfter) - Date.now();
      if (Number.isFinite(seconds)) delay = Math.max(delay, seconds * 1000);
      else if (Number.isFinite(until)) delay = Math.max(delay, until);
    }
    delay = Math.min(delay, SIGNAL_RETRY_AFTER_MAX_MS);
    this.signalDelay = Math.min(this.signalDelay * 2, SIGNAL_RETRY_MAX_MS);
    this.signalNextAt = Date.now() + delay;
    this.signalTimer = setTimeout(() => {
      this.signalTimer = null;
      void this.drainSignals(true);
    }, delay);
  }
}

/** The installation nonce (`app_nonce`) an app token names, or null. */
export function tokenNonce(token: string): string | null {
  try {
    const part = token.split(".")[1] ?? "";
    const base64 = part.replace(/-/g, "+").replace(/_/g, "/");
    const claims = JSON.parse(atob(base64.padEnd(base64.length + ((4 - (base64.length % 4)) % 4), "="))) as { app_nonce?: unknown };
    return typeof claims.app_nonce === "string" && claims.app_nonce ? claims.app_nonce : null;
  } catch {
    return null;
  }
}

const hosts = new Map<number, AppStorageHost>();

/** The one storage host of `appId` in this page (shared by its canvases). */
export function storageHostFor(appId: number, options: Omit<StorageHostOptions, "appId">): AppStorageHost {
  let host = hosts.get(appId);
  if (!host) {
    host = new AppStorageHost({ appId, ...options });
    hosts.set(appId, host);
  }
  return host;
}

/** Retries every queued write and signal now (the network came back). */
export function drainAllHosts(): void {
  for (const host of hosts.values()) host.wake();
}

/** Stops and forgets every host (sign-out). */
export function forgetStorageHosts(): void {
  for (const host of hosts.values()) host.destroy();
  hosts.clear();
}

// The outboxes flush the moment the shell is online again, whether or not an app is on screen.
onlineStore.subscribe(() => {
  if (onlineStore.get()) drainAllHosts();
});
