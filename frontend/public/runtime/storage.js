// `window.mobius.storage` inside the frame. The frame is an opaque origin (no IndexedDB), so every
// call is forwarded to the shell's storage host (src/apps/storage/host.ts), which keeps the offline
// outbox and the read mirror. Writes are all one RPC, `durableWrite`, with a `kind`; calls on one
// path run one after another, in call order.

import { nextId, on, rpc, safeCall } from "./bridge.js";
import { StorageError, invalidArgument } from "./errors.js";
import { TO_FRAME } from "./messages.js";

/** Largest Blob `setBlob` (and a blob `durableWrite`) accepts: 25 MiB, checked before anything is stored. */
export const MAX_BLOB_BYTES = 25 * 1024 * 1024;
/** Dead letters kept for an `onDeadLetter` listener that registers later. */
const MAX_BUFFERED_DEAD_LETTERS = 50;

const chains = new Map();
const conflictListeners = new Set();
const subscriptions = new Map();
const deadLetterListeners = new Set();
let bufferedDeadLetters = [];

/** Runs `task` after every earlier call on `path` settled (the per-path order). */
function onPath(path, task) {
  const key = typeof path === "string" ? path : String(path);
  const previous = chains.get(key) ?? Promise.resolve();
  const run = previous.then(task, task);
  const tail = run.then(
    () => undefined,
    () => undefined,
  );
  chains.set(key, tail);
  void tail.then(() => {
    if (chains.get(key) === tail) chains.delete(key);
  });
  return run;
}

function abortError() {
  const error = new Error("The operation was aborted");
  error.name = "AbortError";
  return error;
}

function throwIfAborted(signal) {
  if (signal && signal.aborted) throw abortError();
}

/** `"W/\"abc\""` → `"\"abc\""`: a proxy may weaken the tag; the version is compared strongly. */
function canonicalVersion(version) {
  return typeof version === "string" && /^W\/"[\x21\x23-\x7e]*"$/.test(version) ? version.slice(2) : version;
}

function inferKind(value, kind) {
  if (kind === "json" || kind === "text" || kind === "blob") return kind;
  if (typeof Blob !== "undefined" && value instanceof Blob) return "blob";
  if (typeof value === "string") return "text";
  return "json";
}

/** Checks and normalises a write, or throws the error the caller rejects with. */
function writeRequest(path, value, options) {
  const opts = options && typeof options === "object" ? options : {};
  if (opts.kind !== undefined && !["json", "text", "blob"].includes(opts.kind)) {
    throw invalidArgument(`durableWrite: kind must be "json", "text" or "blob", not ${JSON.stringify(opts.kind)}`);
  }
  const kind = inferKind(value, opts.kind);
  const contentType = typeof opts.contentType === "string" && opts.contentType.trim() ? opts.contentType.trim() : null;
  const request = { kind };
  if (kind === "text") {
    if (typeof value !== "string") throw invalidArgument(`storage: a text write to ${path} needs a string`);
    request.contentType = contentType || "text/plain;charset=utf-8";
  } else if (kind === "blob") {
    if (typeof Blob === "undefined" || !(value instanceof Blob)) throw invalidArgument(`storage: a blob write to ${path} needs a Blob or File`);
    if (value.size > MAX_BLOB_BYTES) {
      throw new StorageError(`storage: ${path} is ${value.size} bytes; blobs are limited to 25 MiB`, { code: "too_large", status: 413 });
    }
    request.contentType = contentType || value.type || "application/octet-stream";
  } else {
    request.contentType = "application/json";
  }
  const ifMatch = canonicalVersion(opts.ifMatch);
  if (typeof ifMatch === "string" && ifMatch !== "") request.ifMatch = ifMatch;
  // The contract asks for `true`; "*" (the header's own spelling) means the same and is honoured too.
  if (opts.ifNoneMatch === true || opts.ifNoneMatch === "*") request.ifNoneMatch = true;
  return request;
}

function checkPath(path) {
  if (typeof path !== "string" || path === "") throw invalidArgument(`storage: the path must be a non-empty string, not ${JSON.stringify(path)}`);
  return path;
}

/** A promise rejected with what `fn` throws synchronously, else `fn`'s promise. */
function guarded(fn) {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error);
  }
}

/** @param {{signal?: AbortSignal} & Record<string, unknown>} [options] */
async function durableWrite(path, value, options = {}) {
  checkPath(path);
  const signal = options && typeof options === "object" ? options.signal : undefined;
  throwIfAborted(signal);
  const request = writeRequest(path, value, options);
  // `undefined` is not JSON: it is stored as null, like JSON.stringify does inside arrays.
  const body = request.kind === "json" && value === undefined ? null : value;
  const result = await onPath(path, () => rpc("durableWrite", [path, body, request]));
  throwIfAborted(signal);
  return result;
}

/** `set`/`setText`/`setBlob`: a durableWrite that answers `{synced: true}` or `{queued: true}`. */
async function write(path, value, options) {
  const result = await durableWrite(path, value, options);
  return result && result.durability === "queued" ? { queued: true } : { synced: true };
}

function read(method, path) {
  return guarded(() => onPath(checkPath(path), () => rpc(method, [path])));
}

function subscribeAs(kind, getter) {
  return (path, callback) => {
    checkPath(path);
    if (typeof callback !== "function") throw invalidArgument("storage.subscribe(path, callback) needs a callback function");
    const subscriptionId = nextId("sub");
    const sub = { callback, delivered: false };
    subscriptions.set(subscriptionId, sub);
    rpc("subscribe", [subscriptionId, path, kind]).catch(() => undefined);
    getter(path).then(
      (value) => {
        // A change pushed meanwhile is newer than this first read.
        if (subscriptions.get(subscriptionId) === sub && !sub.delivered) {
          sub.delivered = true;
          safeCall(callback, value);
        }
      },
      () => undefined,
    );
    return () => {
      if (!subscriptions.delete(subscriptionId)) return;
      rpc("unsubscribe", [subscriptionId]).catch(() => undefined);
    };
  };
}

function deliverDeadLetter(payload) {
  if (deadLetterListeners.size === 0) {
    bufferedDeadLetters = [...bufferedDeadLetters, payload].slice(-MAX_BUFFERED_DEAD_LETTERS);
    return;
  }
  for (const cb of [...deadLetterListeners]) safeCall(cb, payload);
}

on(TO_FRAME.storageChange, (msg) => {
  const sub = subscriptions.get(msg.subscriptionId);
  if (!sub) return;
  sub.delivered = true;
  safeCall(sub.callback, msg.value === undefined ? null : msg.value);
});

// A write answered `queued` met a newer version when it was finally sent (internal: useDocument
// merges such a write again; the contract's onDeadLetter is not told about conflicts).
on(TO_FRAME.storageConflict, (msg) => {
  const p = msg.payload && typeof msg.payload === "object" ? msg.payload : null;
  if (!p || typeof p.path !== "string" || typeof p.writeId !== "string") return;
  for (const cb of [...conflictListeners]) safeCall(cb, { path: p.path, writeId: p.writeId });
});

on(TO_FRAME.storageDeadLetter, (msg) => {
  const p = msg.payload && typeof msg.payload === "object" ? msg.payload : null;
  if (!p || typeof p.path !== "string") return;
  deliverDeadLetter({ path: p.path, status: p.status, refusedValue: p.refusedValue ?? null, writeId: p.writeId ?? null, ts: p.ts ?? Date.now() });
});

const get = (path) => read("get", path);
const getText = (path) => read("getText", path);
const getBlob = (path) => read("getBlob", path);

export const storage = {
  /** The JSON document at `path`, or null. */
  get,
  getText,
  getBlob,
  /** Stores a JSON document; `{synced: true}`, or `{queued: true}` while offline. */
  set: (path, value) => guarded(() => write(checkPath(path), value, { kind: "json" })),
  setText(path, text, options = {}) {
    return guarded(() => {
      checkPath(path);
      if (typeof text !== "string") throw invalidArgument("storage.setText(path, text) needs a string");
      return write(path, text, { kind: "text", contentType: options && options.contentType });
    });
  },
  setBlob(path, blob, options = {}) {
    return guarded(() => {
      checkPath(path);
      if (typeof Blob === "undefined" || !(blob instanceof Blob)) throw invalidArgument("storage.setBlob(path, blob) needs a Blob or File");
      return write(path, blob, { kind: "blob", contentType: options && options.contentType });
    });
  },
  /** Deletes `path` (a missing file counts as deleted); `{synced: true}` or `{queued: true}`. */
  remove: (path) => guarded(() => onPath(checkPath(path), () => rpc("remove", [path]))),
  /** The immediate children of `prefix`: `[{name, path, type, size, modified_at, mime_type, content?}]`. */
  list(prefix = "", options = {}) {
    const clean = typeof prefix === "string" ? prefix : "";
    return rpc("list", [clean, { includeContent: !!(options && options.includeContent) }]);
  },
  subscribe: subscribeAs("json", get),
  subscribeText: subscribeAs("text", getText),
  subscribeBlob: subscribeAs("blob", getBlob),
  /** Writes waiting in the offline outbox. */
  pendingCount: () => rpc("pendingCount", []),
  /** `{value, version}` (`offline: true` when it came from this device); the version is an ETag for `ifMatch`. */
  getWithVersion(path, kind = "json") {
    return guarded(() => {
      checkPath(path);
      if (!["json", "text", "blob"].includes(kind)) throw invalidArgument(`getWithVersion: kind must be "json", "text" or "blob", not ${JSON.stringify(kind)}`);
      return onPath(path, () => rpc("getWithVersion", [path, kind]));
    });
  },
  /** A write with its outcome: `{durability: "synced" | "queued", path, writeId, version}`; a refusal throws DurableWriteError. */
  durableWrite: (path, value, options) => guarded(() => durableWrite(path, value, options)),
  /** `cb({path, status, refusedValue, writeId, ts})` for every queued write the server refused for good. */
  onDeadLetter(callback) {
    if (typeof callback !== "function") return () => undefined;
    deadLetterListeners.add(callback);
    const replay = bufferedDeadLetters;
    bufferedDeadLetters = [];
    for (const payload of replay) safeCall(callback, payload);
    return () => {
      deadLetterListeners.delete(callback);
    };
  },
  _onQueuedConflict(callback) {
    if (typeof callback !== "function") return () => undefined;
    conflictListeners.add(callback);
    return () => {
      conflictListeners.delete(callback);
    };
  },
  _queueSignals: (records) => rpc("queueSignals", [records]),
  _pendingSignalCount: () => rpc("pendingSignalCount", []),
  _drainSignals: () => rpc("drainSignals", []),
  _drain: () => rpc("drain", []),
};

/** Forgets this frame's subscriptions and listeners (a runtime for another app identity starts). */
export function resetStorage() {
  for (const id of subscriptions.keys()) rpc("unsubscribe", [id]).catch(() => undefined);
  subscriptions.clear();
  deadLetterListeners.clear();
  conflictListeners.clear();
  bufferedDeadLetters = [];
}
