//! The app's outbox: every write goes through it. Writes are queued in order (a newer write to a
//! path supersedes one not yet sent), sent at once when the network is there, kept on the device
//! (IndexedDB, Blobs included) when they wait longer than a moment, and retried (network back,
//! focus, page shown, or a backoff timer). Each write's outcome decides what its caller hears:
//! synced (with the new version), queued, or a `DurableWriteError` (conflict, dead letter,
//! superseded). A page sends only the writes it queued; writes left by a closed page are adopted
//! by the next one (Web Locks tell which pages are alive).

import { APP_OUTBOX_PREFIX } from "../keys";
import { TO_FRAME, type ToFrameMessage } from "../messages";
import type { OpRecord, ReadKind } from "./appDb";
import type { HostCore } from "./core";
import { pageLockName, randomId } from "./pages";
import { checkKind, checkPath, convert, fileUrl, StorageRpcError, type Stored } from "./wire";

/** Largest Blob a write may carry (the outbox holds it until it is sent). */
export const MAX_BLOB_BYTES = 25 * 1024 * 1024;
/** A write that could not be sent for a transient reason is retried after this long, doubling… */
const RETRY_FIRST_MS = 2_000;
/** …up to this. */
const RETRY_MAX_MS = 60_000;
/** A write still waiting this long (not sent, or no answer yet) is stored on the device. */
const PERSIST_GRACE_MS = 250;

type Outcome = { state: "confirmed"; version: string | null } | { state: "conflict" | "rejected"; status: number } | { state: "superseded" };

/** A write in the outbox. */
export interface QueuedOp extends OpRecord {
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

/** What the rest of the host learns from the outbox. */
export interface OutboxEvents {
  /** A write was queued: `path` reads as `stored` now (null: deleted). */
  queued(path: string, stored: Stored | null): void;
  /** The server took a write: it holds `stored` (null: deleted) at `version`. */
  confirmed(path: string, stored: Stored | null, version: string | null): void;
  /** The server refused a write for good: tell the app's frames `notice` (if any) and read `path` again (`tell`: subscribers see what is there). */
  refused(path: string, notice: ToFrameMessage | null, tell: boolean): void;
}

/** What a queued write reads as, in the kind a read asks for. */
export function valueOf(op: QueuedOp, kind: ReadKind): unknown {
  if (op.method === "DELETE") return null;
  return convert({ kind: op.kind, value: op.value, contentType: op.contentType }, kind, op.path);
}

let writeCounter = 0;

/** The writes of one app in this page, in the order they were made. */
export class Outbox {
  private adoptedOnce = false;
  private queue: QueuedOp[] = [];
  private pass: Promise<void> | null = null;
  private lastPassBlocked = false;
  /** A wake-up came while a pass ran (the network may be back mid-attempt): run once more. */
  private passAgain = false;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private retryDelay = RETRY_FIRST_MS;
  private persistTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly core: HostCore,
    private readonly events: OutboxEvents,
  ) {}

  /** The writes waiting, oldest first. */
  get ops(): readonly QueuedOp[] {
    return this.queue;
  }

  /** The newest queued write of `path` (what a read must show: read-your-writes). */
  queuedFor(path: string): QueuedOp | undefined {
    for (let i = this.queue.length - 1; i >= 0; i--) {
      const op = this.queue[i];
      if (op?.path === path) return op;
    }
    return undefined;
  }

  /** Stops the timers (the host stops). */
  stop(): void {
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    if (this.persistTimer !== null) clearTimeout(this.persistTimer);
  }

  /** Takes over queued writes whose page is gone (closed, reloaded). */
  async adopt(): Promise<void> {
    const scope = this.core.scope();
    if (scope === null) return;
    await this.core.withLock(`mobius-outbox-adopt-${this.core.appId}`, async () => {
      let alive: Set<string> | null = null;
      if (this.core.locks && typeof this.core.locks.query === "function") {
        const snapshot = await this.core.locks.query();
        alive = new Set([...(snapshot.held ?? []), ...(snapshot.pending ?? [])].map((l) => l.name ?? ""));
      } else if (this.adoptedOnce) return;
      this.adoptedOnce = true;
      const known = new Set(this.queue.map((op) => op.dbSeq));
      const orphans = (await this.core.db.listOps(scope)).filter(
        (op) => op.seq !== undefined && !known.has(op.seq) && op.owner !== this.core.ownerId && (alive === null || !alive.has(pageLockName(op.owner))),
      );
      if (orphans.length === 0) return;
      await this.core.db.setOwner(
        orphans.map((op) => op.seq as number),
        this.core.ownerId,
      );
      const adopted: QueuedOp[] = orphans.map((op) => ({
        ...op,
        owner: this.core.ownerId,
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
  importLegacyOutbox(): void {
    const key = `${APP_OUTBOX_PREFIX}${this.core.appId}`;
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
      scope: this.core.scope() ?? "",
      owner: this.core.ownerId,
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
    this.schedulePersist();
    this.events.queued(op.path, op.method === "DELETE" ? null : { kind: op.kind, value: op.value, contentType: op.contentType });
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
    op.persisted = this.core.db.addOp(record).then(
      (seq) => {
        op.dbSeq = seq;
        // Settled while it was being stored: it must not come back after a reload.
        if (op.outcome !== null) void this.core.db.deleteOp(seq).catch(() => undefined);
      },
      () => {
        op.persistFailed = true;
      },
    );
    return op.persisted;
  }

  /** Stores every queued write not stored yet (the network is away, or slow to answer). */
  persistAll(): void {
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
    if (op.dbSeq !== null) void this.core.db.deleteOp(op.dbSeq).catch(() => undefined);
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

  /** `storage.durableWrite`: synced (with the version), queued, or a `DurableWriteError`. */
  async durableWrite(path: string, value: unknown, options: unknown): Promise<Record<string, unknown>> {
    await this.core.start();
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

  /** `storage.remove`: synced or queued; a refused delete throws (a superseded one counts as done). */
  async remove(path: string): Promise<{ synced: true } | { queued: true }> {
    await this.core.start();
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
        return again && this.queue.length > 0 && this.core.online() ? this.drain() : undefined;
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
    if (this.core.destroyed() || this.core.scope() === null) return;
    if (!this.core.online()) {
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
        response = await this.core.send(fileUrl(this.core.appId, op.path), { method: op.method, body: op.body, headers });
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
        this.events.confirmed(op.path, op.method === "DELETE" ? null : { kind: op.kind, value: op.value, contentType: op.contentType }, op.method === "DELETE" ? null : version);
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
        const notice = op.reported ? { type: TO_FRAME.storageConflict, payload: { path: op.path, status, writeId: op.writeId, ts: Date.now() } } : null;
        this.events.refused(op.path, notice, false);
      } else {
        const notice = {
          type: TO_FRAME.storageDeadLetter,
          payload: { path: op.path, status, refusedValue: op.method === "DELETE" ? null : op.value, writeId: op.writeId, ts: Date.now() },
        };
        // What the app showed never reached the server: show what is there.
        this.events.refused(op.path, notice, true);
      }
    }
  }

  private blocked(): void {
    this.lastPassBlocked = true;
    this.persistAll();
    if (this.retryTimer !== null || this.core.destroyed()) return;
    const delay = this.retryDelay;
    this.retryDelay = Math.min(this.retryDelay * 2, RETRY_MAX_MS);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.drain();
    }, delay);
  }
}
