// The frame's line to the shell: postMessage out (to the shell's origin), one dispatcher for what
// comes back (only from `window.parent`), and the storage RPC (`moebius:storage-rpc` →
// `moebius:storage-rpc-result`). Every other runtime module talks to the shell through here.
//
// The shell also hands the frame a MessagePort (`moebius:storage-port`, asked for with
// `moebius:storage-port-request` when the runtime starts listening): once this frame says it
// took it (`moebius:storage-port-ready`, the port's first message), storage RPCs and their
// answers, and the storage notices (changes, conflicts, dead letters), travel on it. A port is a
// direct pipe between the two documents, where a window message between an opaque frame and its
// shell goes through the browser process: a round trip costs about half as much. Without a port
// (an older shell, or before it came) everything goes by window messages, as before.
//
// A published page (`/sites/<token>/`) has no shell: app-frame.js is its own read-only host and
// hands the runtime a function (`storageHost` in the runtime config, `setHost`) that answers the
// storage RPCs in the page itself; nothing else is sent anywhere.

import { FROM_FRAME, TO_FRAME } from "./messages.js";

/** A bridged call the shell did not answer within this long fails. */
export const RPC_TIMEOUT_MS = 60_000;

const state = { parentOrigin: "", seq: 0, listening: false, port: null, host: null };
const handlers = new Map();
const pending = new Map();

export function hasParent() {
  return typeof window !== "undefined" && window.parent !== window;
}

/** Where frame → shell messages go: the origin the frame document was served from. */
export function setParentOrigin(origin) {
  state.parentOrigin = typeof origin === "string" ? origin : "";
}

/**
 * The page's own storage host (a published page), or none: `host(message, deliver)` answers each
 * storage RPC by calling `deliver` with its `storage-rpc-result`.
 */
export function setHost(host) {
  state.host = typeof host === "function" ? host : null;
}

/** The shell's origin ("" when unknown: requests then go to the frame's own origin). */
export function parentOrigin() {
  return state.parentOrigin;
}

/** Posts `message` to the shell; false when there is no shell to post to. */
export function post(message, transfer) {
  if (!hasParent()) return false;
  try {
    window.parent.postMessage(message, state.parentOrigin || "*", transfer || []);
    return true;
  } catch {
    return false;
  }
}

/** A request id unique within this frame: `<kind>-<ms>-<counter><random>`. */
export function nextId(kind) {
  state.seq += 1;
  return `${kind}-${Date.now()}-${state.seq}${Math.random().toString(36).slice(2, 8)}`;
}

/** Calls `fn(...args)`; an exception is reported (as an uncaught error) without stopping the caller. */
export function safeCall(fn, ...args) {
  try {
    return fn(...args);
  } catch (error) {
    setTimeout(() => {
      throw error;
    });
    return undefined;
  }
}

/** Calls `fn(msg)` for every shell message of `type`; returns the unsubscribe function. */
export function on(type, fn) {
  let set = handlers.get(type);
  if (!set) {
    set = new Set();
    handlers.set(type, set);
  }
  set.add(fn);
  return () => set.delete(fn);
}

function deliver(msg) {
  if (!msg || typeof msg !== "object" || typeof msg.type !== "string") return;
  const set = handlers.get(msg.type);
  if (!set) return;
  for (const fn of [...set]) safeCall(fn, msg);
}

/** Takes the shell's storage port (a new one replaces the last: the shell reopened the line). */
function adoptPort(port) {
  if (state.port) state.port.close();
  state.port = port;
  port.onmessage = (event) => deliver(event.data);
  port.postMessage({ type: FROM_FRAME.storagePortReady });
}

function dispatch(event) {
  if (event.source !== window.parent) return;
  if (state.parentOrigin && event.origin !== state.parentOrigin) return;
  const msg = event.data;
  if (msg && msg.type === TO_FRAME.storagePort) {
    if (event.ports && event.ports[0]) adoptPort(event.ports[0]);
    return;
  }
  deliver(msg);
}

/** Starts listening to the shell (once per frame). */
export function listen() {
  if (state.listening || typeof window === "undefined") return;
  state.listening = true;
  window.addEventListener("message", dispatch);
  post({ type: FROM_FRAME.storagePortRequest });
  // The document is going away: nobody will answer what is still pending.
  window.addEventListener("pagehide", (event) => {
    if (event.persisted) return;
    for (const [id, entry] of [...pending]) {
      pending.delete(id);
      clearTimeout(entry.timer);
      entry.reject(bridgeError({ name: "AbortError", code: "page_hidden", message: "The page was closed before Möbius answered." }));
    }
  });
  on(TO_FRAME.storageRpcResult, (msg) => {
    const entry = pending.get(msg.requestId);
    if (!entry) return;
    pending.delete(msg.requestId);
    clearTimeout(entry.timer);
    if (msg.ok) entry.resolve(msg.result);
    else entry.reject(bridgeError(msg.error));
  });
}

const ERROR_FIELDS = ["code", "status", "path", "writeId", "retryable", "refusedValue"];
const errorClasses = new Map();

/** Errors named `name` crossing the bridge are rebuilt as instances of `cls`. */
export function registerErrorClass(name, cls) {
  errorClasses.set(name, cls);
}

/** Rebuilds an error the shell sent (`{name, message, code, status, path, writeId, retryable, refusedValue}`). */
export function bridgeError(raw) {
  const e = raw && typeof raw === "object" ? raw : {};
  const message = typeof e.message === "string" && e.message ? e.message : "The storage request failed.";
  const name = typeof e.name === "string" && e.name ? e.name : "Error";
  const Cls = errorClasses.get(name);
  const error = Cls ? new Cls(message) : new Error(message);
  if (!Cls) error.name = name;
  for (const field of ERROR_FIELDS) if (e[field] !== undefined) error[field] = e[field];
  if (error.retryable !== undefined) error.retryable = error.retryable === true;
  return error;
}

/** One storage RPC: resolves with the shell's result, rejects with its (rebuilt) error. */
export function rpc(method, args) {
  return new Promise((resolve, reject) => {
    const requestId = nextId("rpc");
    const timer = setTimeout(() => {
      pending.delete(requestId);
      reject(bridgeError({ name: "StorageError", code: "timeout", message: "shell storage request timed out" }));
    }, RPC_TIMEOUT_MS);
    pending.set(requestId, { resolve, reject, timer });
    const message = { type: FROM_FRAME.storageRpc, requestId, method, args };
    if (state.host) {
      state.host(message, deliver);
      return;
    }
    if (state.port) {
      try {
        state.port.postMessage(message);
        return;
      } catch {
        // Not cloneable on the port either: the window message below reports it the same way.
      }
    }
    if (!post(message)) {
      clearTimeout(timer);
      pending.delete(requestId);
      reject(bridgeError({ name: "StorageError", code: "no_host", message: "This app is not running inside Möbius." }));
    }
  });
}
