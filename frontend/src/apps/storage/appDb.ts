//! What the shell keeps on this device for app storage, in one IndexedDB database
//! (`mobius-app-storage`): the outbox of writes not yet confirmed (`ops`, FIFO by `seq`, Blobs
//! included), the read mirror of the last known server value of each path (`mirror`), and the
//! queue of `mobius.signal` events waiting for delivery (`signals`). Records carry the app id and
//! installation nonce; every query is per installation. Without IndexedDB (some private modes,
//! unit tests) the same interface is kept in memory for the life of the page.
//!
//! Transactions are created in call order (each method chains on one open connection), so a read
//! issued after a write always sees it.

export type ReadKind = "json" | "text" | "blob";

/** A queued write. `value` is what the app wrote (JSON value, string or Blob); `body` the bytes sent. */
export interface OpRecord {
  seq?: number;
  /** `<appId>:<instance>`. */
  scope: string;
  /** The page that queued it (or adopted it); only that page sends it while it lives. */
  owner: string;
  path: string;
  method: "PUT" | "DELETE";
  kind: ReadKind;
  contentType: string | null;
  value: unknown;
  body: string | Blob | null;
  ifMatch: string | null;
  ifNoneMatch: boolean;
  writeId: string;
  at: number;
}

/** The last known server state of one path (`present: false` = known absent). */
export interface MirrorRecord {
  /** `<scope>:<path>`. */
  key: string;
  scope: string;
  path: string;
  present: boolean;
  kind: ReadKind;
  contentType: string | null;
  value: unknown;
  version: string | null;
  at: number;
}

/** One queued `mobius.signal` event. */
export interface SignalRecord {
  /** `<scope>:<event id>`. */
  key: string;
  scope: string;
  event: Record<string, unknown>;
  bytes: number;
  queuedAt: number;
}

/** Bounds of the signal queue (oldest evicted first). */
export interface SignalBounds {
  perScopeCount: number;
  perScopeBytes: number;
  totalCount: number;
  totalBytes: number;
}

export interface AppDb {
  addOp(op: OpRecord): Promise<number>;
  deleteOp(seq: number): Promise<void>;
  setOwner(seqs: number[], owner: string): Promise<void>;
  listOps(scope: string): Promise<OpRecord[]>;
  getMirror(key: string): Promise<MirrorRecord | undefined>;
  putMirror(record: MirrorRecord): Promise<void>;
  listMirror(scope: string): Promise<MirrorRecord[]>;
  queueSignals(records: SignalRecord[], bounds: SignalBounds): Promise<void>;
  listSignals(scope: string, limit: number): Promise<SignalRecord[]>;
  countSignals(scope: string): Promise<number>;
  deleteSignals(keys: string[]): Promise<void>;
  /** Deletes every record of app `appId` whose scope is not `keep` (an earlier installation). */
  purgeOtherScopes(appId: number, keep: string): Promise<void>;
}

export const APP_DB_NAME = "mobius-app-storage";
const APP_DB_VERSION = 1;

const byOldest = (a: SignalRecord, b: SignalRecord) => a.queuedAt - b.queuedAt;

/** The records to evict so `all` fits `bounds` after `added` went in (oldest first). */
export function signalEvictions(all: SignalRecord[], scope: string, bounds: SignalBounds): string[] {
  const doomed = new Set<string>();
  const own = all.filter((r) => r.scope === scope).sort(byOldest);
  let count = own.length;
  let bytes = own.reduce((n, r) => n + r.bytes, 0);
  for (const r of own) {
    if (count <= bounds.perScopeCount && bytes <= bounds.perScopeBytes) break;
    doomed.add(r.key);
    count -= 1;
    bytes -= r.bytes;
  }
  const rest = all.filter((r) => !doomed.has(r.key)).sort(byOldest);
  count = rest.length;
  bytes = rest.reduce((n, r) => n + r.bytes, 0);
  for (const r of rest) {
    if (count <= bounds.totalCount && bytes <= bounds.totalBytes) break;
    doomed.add(r.key);
    count -= 1;
    bytes -= r.bytes;
  }
  return [...doomed];
}

const scopeApp = (scope: string) => scope.slice(0, scope.indexOf(":"));

/** The in-memory stand-in (no IndexedDB): same behaviour, gone with the page. */
export function memoryAppDb(): AppDb {
  let seq = 0;
  const ops = new Map<number, OpRecord>();
  const mirror = new Map<string, MirrorRecord>();
  const signals = new Map<string, SignalRecord>();
  return {
    addOp: (op) => {
      seq += 1;
      ops.set(seq, { ...op, seq });
      return Promise.resolve(seq);
    },
    deleteOp: (s) => {
      ops.delete(s);
      return Promise.resolve();
    },
    setOwner: (seqs, owner) => {
      for (const s of seqs) {
        const op = ops.get(s);
        if (op) op.owner = owner;
      }
      return Promise.resolve();
    },
    listOps: (scope) => Promise.resolve([...ops.values()].filter((o) => o.scope === scope).sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0))),
    getMirror: (key) => Promise.resolve(mirror.get(key)),
    putMirror: (record) => {
      mirror.set(record.key, record);
      return Promise.resolve();
    },
    listMirror: (scope) => Promise.resolve([...mirror.values()].filter((r) => r.scope === scope)),
    queueSignals: (records, bounds) => {
      for (const r of records) signals.set(r.key, r);
      for (const key of signalEvictions([...signals.values()], records[0]?.scope ?? "", bounds)) signals.delete(key);
      return Promise.resolve();
    },
    listSignals: (scope, limit) =>
      Promise.resolve(
        [...signals.values()]
          .filter((r) => r.scope === scope)
          .sort(byOldest)
          .slice(0, limit),
      ),
    countSignals: (scope) => Promise.resolve([...signals.values()].filter((r) => r.scope === scope).length),
    deleteSignals: (keys) => {
      for (const key of keys) signals.delete(key);
      return Promise.resolve();
    },
    purgeOtherScopes: (appId, keep) => {
      const other = (scope: string) => scopeApp(scope) === String(appId) && scope !== keep;
      for (const [k, v] of ops) if (other(v.scope)) ops.delete(k);
      for (const [k, v] of mirror) if (other(v.scope)) mirror.delete(k);
      for (const [k, v] of signals) if (other(v.scope)) signals.delete(k);
      return Promise.resolve();
    },
  };
}

function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error ?? new Error("IndexedDB request failed"));
  });
}

function done(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error ?? new Error("IndexedDB transaction failed"));
    tx.onabort = () => reject(tx.error ?? new Error("IndexedDB transaction aborted"));
  });
}

function open(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(APP_DB_NAME, APP_DB_VERSION);
    req.onupgradeneeded = () => {
      const db = req.result;
      const ops = db.createObjectStore("ops", { keyPath: "seq", autoIncrement: true });
      ops.createIndex("scope", "scope");
      db.createObjectStore("mirror", { keyPath: "key" }).createIndex("scope", "scope");
      db.createObjectStore("signals", { keyPath: "key" }).createIndex("scope", "scope");
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error ?? new Error("IndexedDB open failed"));
    req.onblocked = () => reject(new Error("IndexedDB open blocked"));
  });
}

/** The IndexedDB-backed store (one connection, reopened after a version change or deletion). */
export function indexedAppDb(): AppDb {
  let connection: Promise<IDBDatabase> | null = null;
  const db = () => {
    if (!connection) {
      const opening = open().then((d) => {
        // Sign-out deletes the database: let it, and reopen on the next call.
        d.onversionchange = () => {
          d.close();
          if (connection === opening) connection = null;
        };
        d.onclose = () => {
          if (connection === opening) connection = null;
        };
        return d;
      });
      opening.catch(() => {
        if (connection === opening) connection = null;
      });
      connection = opening;
    }
    return connection;
  };
  const tx = async (stores: string | string[], mode: IDBTransactionMode) => (await db()).transaction(stores, mode);
  const all = async <T>(store: string, scope: string): Promise<T[]> => {
    const t = await tx(store, "readonly");
    return request(t.objectStore(store).index("scope").getAll(IDBKeyRange.only(scope))) as Promise<T[]>;
  };
  return {
    async addOp(op) {
      const t = await tx("ops", "readwrite");
      const record: OpRecord = { ...op };
      delete record.seq;
      const key = await request(t.objectStore("ops").add(record));
      await done(t);
      return Number(key);
    },
    async deleteOp(seq) {
      const t = await tx("ops", "readwrite");
      t.objectStore("ops").delete(seq);
      await done(t);
    },
    async setOwner(seqs, owner) {
      const t = await tx("ops", "readwrite");
      const store = t.objectStore("ops");
      for (const seq of seqs) {
        const op = (await request(store.get(seq))) as OpRecord | undefined;
        if (op) store.put({ ...op, owner });
      }
      await done(t);
    },
    async listOps(scope) {
      const ops = await all<OpRecord>("ops", scope);
      return ops.sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0));
    },
    async getMirror(key) {
      const t = await tx("mirror", "readonly");
      return (await request(t.objectStore("mirror").get(key))) as MirrorRecord | undefined;
    },
    async putMirror(record) {
      const t = await tx("mirror", "readwrite");
      t.objectStore("mirror").put(record);
      await done(t);
    },
    listMirror: (scope) => all<MirrorRecord>("mirror", scope),
    async queueSignals(records, bounds) {
      if (records.length === 0) return;
      const t = await tx("signals", "readwrite");
      const store = t.objectStore("signals");
      for (const r of records) store.put(r);
      const everything = (await request(store.getAll())) as SignalRecord[];
      for (const key of signalEvictions(everything, records[0]?.scope ?? "", bounds)) store.delete(key);
      await done(t);
    },
    async listSignals(scope, limit) {
      const records = await all<SignalRecord>("signals", scope);
      return records.sort(byOldest).slice(0, limit);
    },
    async countSignals(scope) {
      const t = await tx("signals", "readonly");
      return request(t.objectStore("signals").index("scope").count(IDBKeyRange.only(scope)));
    },
    async deleteSignals(keys) {
      const t = await tx("signals", "readwrite");
      for (const key of keys) t.objectStore("signals").delete(key);
      await done(t);
    },
    async purgeOtherScopes(appId, keep) {
      const names = ["ops", "mirror", "signals"];
      const t = await tx(names, "readwrite");
      const prefix = `${appId}:`;
      for (const name of names) {
        const store = t.objectStore(name);
        const range = IDBKeyRange.bound(prefix, `${prefix}\uffff`);
        const cursorReq = store.index("scope").openCursor(range);
        cursorReq.onsuccess = () => {
          const cursor = cursorReq.result;
          if (!cursor) return;
          if ((cursor.value as { scope: string }).scope !== keep) cursor.delete();
          cursor.continue();
        };
      }
      await done(t);
    },
  };
}

let shared: AppDb | null = null;

/** `primary` once it proved it works, else `fallback` (for the rest of the page). */
function firstWorking(primary: AppDb, fallback: () => AppDb): AppDb {
  const chosen = primary.countSignals("probe:").then(
    () => primary,
    () => fallback(),
  );
  return {
    addOp: (op) => chosen.then((d) => d.addOp(op)),
    deleteOp: (seq) => chosen.then((d) => d.deleteOp(seq)),
    setOwner: (seqs, owner) => chosen.then((d) => d.setOwner(seqs, owner)),
    listOps: (scope) => chosen.then((d) => d.listOps(scope)),
    getMirror: (key) => chosen.then((d) => d.getMirror(key)),
    putMirror: (record) => chosen.then((d) => d.putMirror(record)),
    listMirror: (scope) => chosen.then((d) => d.listMirror(scope)),
    queueSignals: (records, bounds) => chosen.then((d) => d.queueSignals(records, bounds)),
    listSignals: (scope, limit) => chosen.then((d) => d.listSignals(scope, limit)),
    countSignals: (scope) => chosen.then((d) => d.countSignals(scope)),
    deleteSignals: (keys) => chosen.then((d) => d.deleteSignals(keys)),
    purgeOtherScopes: (appId, keep) => chosen.then((d) => d.purgeOtherScopes(appId, keep)),
  };
}

/** The device's app-storage database (IndexedDB when this browser lets the shell use it). */
export function appDb(): AppDb {
  shared ??= typeof indexedDB === "undefined" ? memoryAppDb() : firstWorking(indexedAppDb(), memoryAppDb);
  return shared;
}

/** Deletes everything kept for apps on this device (sign-out). */
export async function deleteAppDb(): Promise<void> {
  if (typeof indexedDB === "undefined") {
    shared = null;
    return;
  }
  await new Promise<void>((resolve) => {
    const req = indexedDB.deleteDatabase(APP_DB_NAME);
    req.onsuccess = () => resolve();
    req.onerror = () => resolve();
    req.onblocked = () => resolve();
  });
}
