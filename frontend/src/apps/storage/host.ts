//! The shell side of `window.mobius.storage` (the frame is an opaque origin without IndexedDB, so
//! its storage runs here): each frame RPC (`moebius:storage-rpc`) becomes requests to
//! `/api/storage/apps/{id}/…` carrying the app's own token. One host per app and page, made of:
//! the outbox every write goes through (`outbox.ts`), the read mirror (`mirror.ts`), the app's
//! frames and their subscriptions (`frames.ts`), and the `mobius.signal` queue (`signals.ts`);
//! wire shapes and paths are in `wire.ts`, this page's identity and lock in `pages.ts`.

import { noteResponse, onlineStore, recheckOnline } from "../../shell/online";
import { appDb, type AppDb } from "./appDb";
import type { HostCore, HostRequest } from "./core";
import { AppFrames, type FrameSink } from "./frames";
import { ReadMirror } from "./mirror";
import { Outbox } from "./outbox";
import { defaultLocks, holdPageLock, PAGE_ID, tokenNonce } from "./pages";
import { SignalQueue } from "./signals";
import { checkKind, checkPath, StorageRpcError } from "./wire";

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

/** The storage of one app in this page, shared by its canvases. */
export class AppStorageHost {
  readonly appId: number;
  private readonly getToken: (force: boolean) => Promise<string | null>;
  private readonly fetchImpl: typeof fetch;
  private readonly db: AppDb;
  private readonly online: () => boolean;
  private readonly onNetworkError: () => void;
  private readonly onResponse: (status: number) => void;
  private readonly locks: LockManager | null;
  private scope: string | null = null;
  private starting: Promise<string> | null = null;
  private readonly wakeListeners: Array<() => void> = [];
  private destroyed = false;
  private readonly frames = new AppFrames();
  private readonly outbox: Outbox;
  private readonly mirror: ReadMirror;
  private readonly signals: SignalQueue;

  constructor(options: StorageHostOptions) {
    this.appId = options.appId;
    this.getToken = options.getToken;
    this.fetchImpl = options.fetch ?? ((input, init) => fetch(input, init));
    this.db = options.db ?? appDb();
    this.online = options.online ?? (() => onlineStore.get());
    this.onNetworkError = options.onNetworkError ?? (() => void recheckOnline());
    this.onResponse = options.onResponse ?? noteResponse;
    const ownerId = options.ownerId ?? PAGE_ID;
    this.locks = options.locks === undefined ? defaultLocks() : options.locks;
    if (ownerId === PAGE_ID) holdPageLock(this.locks);
    const core: HostCore = {
      appId: this.appId,
      db: this.db,
      ownerId,
      locks: this.locks,
      scope: () => this.scope,
      destroyed: () => this.destroyed,
      online: () => this.online(),
      start: () => this.start(),
      send: (url, init, timeoutMs) => this.send(url, init, timeoutMs),
      withLock: (name, fn) => this.withLock(name, fn),
    };
    this.outbox = new Outbox(core, {
      queued: (path, stored) => {
        this.mirror.written(path);
        this.frames.notify(path, stored);
      },
      confirmed: (path, stored, version) => this.mirror.remember(path, stored, version),
      refused: (path, notice, tell) => {
        if (notice) this.frames.announce(notice);
        this.mirror.repair(path, tell);
      },
    });
    this.mirror = new ReadMirror(core, this.outbox, (path, stored) => this.frames.notify(path, stored));
    this.signals = new SignalQueue(core);
    if (options.wake !== false && typeof window !== "undefined") this.listenForWake();
  }

  /** Performs one RPC for `sink`'s frame. Rejects with a StorageRpcError. */
  async call(method: string, args: unknown[], sink: FrameSink): Promise<unknown> {
    if (!this.frames.has(sink)) this.attach(sink);
    const a = Array.isArray(args) ? args : [];
    switch (method) {
      case "get":
        return this.mirror.read(checkPath(a[0]), "json");
      case "getText":
        return this.mirror.read(checkPath(a[0]), "text");
      case "getBlob":
        return this.mirror.read(checkPath(a[0]), "blob");
      case "getWithVersion":
        return this.mirror.readWithVersion(checkPath(a[0]), checkKind(a[1], "getWithVersion"));
      case "durableWrite":
        return this.outbox.durableWrite(checkPath(a[0]), a[1], a[2]);
      case "remove":
        return this.outbox.remove(checkPath(a[0]));
      case "list": {
        const options = typeof a[1] === "object" && a[1] !== null ? (a[1] as { includeContent?: unknown }) : {};
        return this.mirror.list(typeof a[0] === "string" ? a[0] : "", options.includeContent === true);
      }
      case "pendingCount":
        await this.start();
        return this.outbox.ops.length;
      case "subscribe":
        return this.frames.subscribe(a[0], checkPath(a[1]), checkKind(a[2], "subscribe"), sink, () => this.start());
      case "unsubscribe":
        return this.frames.unsubscribe(a[0], sink);
      case "drain":
        await this.start();
        await this.drain(true);
        return null;
      case "queueSignals":
        return this.signals.queue(a[0]);
      case "pendingSignalCount":
        return this.db.countSignals(await this.start());
      case "drainSignals":
        await this.start();
        await this.signals.drain(true);
        return null;
      default:
        throw new StorageRpcError("storage_method_denied", `There is no storage method ${JSON.stringify(method)}.`, 400);
    }
  }

  /** A frame is there to hear pushes (dead letters kept for it are delivered now). */
  attach(sink: FrameSink): void {
    this.frames.attach(sink);
  }

  /** A frame went away: drop its subscriptions. */
  detach(sink: FrameSink): void {
    this.frames.detach(sink);
  }

  pendingCount(): number {
    return this.outbox.ops.length;
  }

  /** Sends the outbox now (`wake`: the backoff starts over); see `Outbox.drain`. */
  drain(wake = false): Promise<void> {
    return this.outbox.drain(wake);
  }

  /** Stops timers and listeners (sign-out, another installation of the app). */
  destroy(): void {
    this.destroyed = true;
    for (const stop of this.wakeListeners) stop();
    this.outbox.stop();
    this.signals.stop();
    this.frames.clear();
  }

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
      this.mirror.begin(scope);
      this.scope = scope;
      await this.outbox.adopt().catch(() => undefined);
      this.outbox.importLegacyOutbox();
      if (this.outbox.ops.length > 0) void this.drain();
      void this.signals.drain(false);
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

  /** The network is back, or the page came to the front: adopt orphaned writes, send everything. */
  wake(): void {
    if (this.destroyed || this.scope === null) return;
    void this.outbox
      .adopt()
      .catch(() => undefined)
      .then(() => {
        void this.drain(true);
        void this.signals.drain(true);
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
    const leave = () => this.outbox.persistAll();
    window.addEventListener("pagehide", leave);
    this.wakeListeners.push(() => window.removeEventListener("pagehide", leave));
    document.addEventListener("visibilitychange", onVisible);
    this.wakeListeners.push(() => document.removeEventListener("visibilitychange", onVisible));
  }

  private async send(url: string, init: HostRequest, timeoutMs = 0): Promise<Response> {
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
