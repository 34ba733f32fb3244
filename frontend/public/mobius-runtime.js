// `window.mobius`: the API a mini-app sees inside its sandboxed frame. The server bundles this
// module into every app (the bare specifier `mobius-runtime` points here) and
// app-runtime-inject.js calls `initMobiusRuntime(globalThis.__mobiusRuntimeConfig)` before the
// app's own code runs. The embedded agent chat (`mobius.chat`) lives in mobius-chat.js.
//
// The frame is an opaque origin: storage goes to the parent shell over postMessage
// (`moebius:storage-rpc` → `moebius:storage-rpc-result`), and the shell performs it with this
// app's own token (it also keeps an offline outbox and a read mirror). The owner's token never
// enters the frame. Keep this file dependency-free: it is compiled into every app.

import { createChat } from "./mobius-chat.js";

const RPC_TIMEOUT_MS = 60_000;
const MAX_BLOB_BYTES = 25 * 1024 * 1024;
const MAX_NAV_ENTRIES = 20;
/** How long a press must last before `immersive.holdToToggle` toggles. */
const HOLD_DEFAULT_MS = 600;
/** A press that moves further than this (a scroll, a drag) is not a long-press. */
const HOLD_SLOP_PX = 10;

/** A `durableWrite` that could not be applied: `code` is `conflict` when the version moved. */
export class DurableWriteError extends Error {
  constructor(message, code, status) {
    super(message);
    this.name = "DurableWriteError";
    this.code = code;
    this.status = status;
  }
}

/** A storage call that failed: `code` is the server's (or `kind_mismatch`, `timeout`, …). */
export class StorageError extends Error {
  constructor(message, code, status) {
    super(message);
    this.name = "StorageError";
    this.code = code;
    this.status = status;
  }
}

let config = {};
let parentOrigin = "";
let seq = 0;
const pending = new Map();
const subscriptions = new Map();
const onlineListeners = new Set();
const deadLetterListeners = new Set();
const navEntries = new Map();
const immersiveListeners = new Set();
let listening = false;
/** Immersive as the shell last said (it is the source of truth). */
let immersiveHidden = false;
/** What this frame last asked for and has no answer to yet (so `toggle()` twice flips twice). */
let immersiveRequested = null;

function hasParent() {
  return typeof window !== "undefined" && window.parent !== window;
}

function post(message, transfer) {
  if (!hasParent()) return false;
  try {
    window.parent.postMessage(message, parentOrigin || "*", transfer || []);
    return true;
  } catch {
    return false;
  }
}

function nextId(kind) {
  seq += 1;
  return `${kind}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

function rpc(method, args) {
  return new Promise((resolve, reject) => {
    const requestId = nextId("rpc");
    const timer = setTimeout(() => {
      pending.delete(requestId);
      reject(new StorageError("Möbius did not answer the storage request in time.", "timeout", 0));
    }, RPC_TIMEOUT_MS);
    pending.set(requestId, { resolve, reject, timer });
    if (!post({ type: "moebius:storage-rpc", requestId, method, args })) {
      clearTimeout(timer);
      pending.delete(requestId);
      reject(new StorageError("This app is not running inside Möbius.", "no_host", 0));
    }
  });
}

function onMessage(event) {
  if (event.source !== window.parent) return;
  if (parentOrigin && event.origin !== parentOrigin) return;
  const msg = event.data;
  if (!msg || typeof msg !== "object" || typeof msg.type !== "string") return;
  switch (msg.type) {
    case "moebius:storage-rpc-result": {
      const entry = pending.get(msg.requestId);
      if (!entry) return;
      pending.delete(msg.requestId);
      clearTimeout(entry.timer);
      if (msg.ok) entry.resolve(msg.result);
      else {
        const e = msg.error && typeof msg.error === "object" ? msg.error : {};
        entry.reject(new StorageError(e.message || "The storage request failed.", e.code || "storage_error", e.status || 0));
      }
      return;
    }
    case "moebius:storage-change": {
      const sub = subscriptions.get(msg.subscriptionId);
      if (!sub) return;
      sub.changed = true;
      safeCall(sub.callback, msg.value);
      return;
    }
    case "moebius:storage-dead-letter":
      for (const cb of deadLetterListeners) safeCall(cb, { path: msg.path, error: msg.error });
      return;
    case "moebius:online-status":
    case "moebius:frame-init": {
      if (typeof msg.online !== "boolean" || msg.online === mobius.online) return;
      mobius.online = msg.online;
      for (const cb of onlineListeners) safeCall(cb, mobius.online);
      return;
    }
    case "moebius:immersive-state":
      if (typeof msg.value !== "boolean") return;
      immersiveRequested = null;
      setImmersiveState(msg.value);
      return;
    case "moebius:nav-back": {
      const entry = navEntries.get(msg.requestId);
      if (!entry) return;
      navEntries.delete(msg.requestId);
      entry.closed = true;
      if (entry.onBack) safeCall(entry.onBack);
      return;
    }
    default:
  }
}

function safeCall(fn, ...args) {
  try {
    fn(...args);
  } catch (error) {
    setTimeout(() => {
      throw error;
    });
  }
}

function checkPath(path) {
  if (typeof path !== "string" || path === "" || path.startsWith("/") || path.split("/").includes("..")) {
    throw new StorageError(`Invalid storage path ${JSON.stringify(path)}: use a relative path like "notes/today.json".`, "invalid_path", 0);
  }
  return path;
}

/** `subscribe(path, callback, {onError})`: the current value first, then every change. */
function subscribeAs(kind) {
  return (path, callback, options = {}) => {
    checkPath(path);
    if (typeof callback !== "function") throw new TypeError("subscribe(path, callback) needs a callback");
    const subscriptionId = nextId("sub");
    const sub = { path, callback, changed: false };
    subscriptions.set(subscriptionId, sub);
    rpc("subscribe", [path, kind, subscriptionId]).then(
      (answer) => {
        // A change pushed meanwhile is newer than this first read.
        if (subscriptions.get(subscriptionId) === sub && !sub.changed) safeCall(callback, answer ? answer.value : null);
      },
      (error) => {
        if (subscriptions.get(subscriptionId) === sub && options && typeof options.onError === "function") safeCall(options.onError, error);
      },
    );
    return () => {
      if (!subscriptions.delete(subscriptionId)) return;
      rpc("unsubscribe", [subscriptionId]).catch(() => {});
    };
  };
}

const storage = {
  /** The JSON document at `path`, or null when there is none. */
  get: (path) => rpc("get", [checkPath(path)]),
  /** Stores a JSON document (queued while offline). */
  set: (path, value) => rpc("set", [checkPath(path), value === undefined ? null : value]),
  getText: (path) => rpc("getText", [checkPath(path)]),
  setText: (path, text) => rpc("setText", [checkPath(path), String(text)]),
  getBlob: (path) => rpc("getBlob", [checkPath(path)]),
  async setBlob(path, blob) {
    checkPath(path);
    if (!(blob instanceof Blob)) throw new TypeError("setBlob(path, blob) needs a Blob");
    if (blob.size > MAX_BLOB_BYTES) throw new StorageError("Blobs are limited to 25 MiB.", "too_large", 413);
    return rpc("setBlob", [path, blob]);
  },
  remove: (path) => rpc("remove", [checkPath(path)]),
  /** Entries under `prefix`: [{name, path, type, size, modified_at, mime_type, content?}]. */
  list: (prefix = "", options = {}) => rpc("list", [String(prefix || ""), { includeContent: !!(options && options.includeContent) }]),
  /** `{value, version}`: the version is the ETag to pass to durableWrite's `ifMatch`. */
  getWithVersion: (path) => rpc("getWithVersion", [checkPath(path)]),
  /** A write the server confirms now (never queued); a moved version → DurableWriteError `conflict`. */
  async durableWrite(path, data, options = {}) {
    checkPath(path);
    const conditions = {};
    if (options && typeof options.ifMatch === "string") conditions.ifMatch = options.ifMatch;
    if (options && (options.ifNoneMatch === "*" || options.ifNoneMatch === true)) conditions.ifNoneMatch = "*";
    try {
      return await rpc("durableWrite", [path, data === undefined ? null : data, conditions]);
    } catch (error) {
      if (error && error.status === 412) throw new DurableWriteError("The document changed since it was read.", "conflict", 412);
      throw new DurableWriteError(error && error.message ? error.message : "The write failed.", (error && error.code) || "failed", (error && error.status) || 0);
    }
  },
  /** Writes waiting in the offline outbox. */
  pendingCount: () => rpc("pendingCount", []),
  /** Calls back with the current value, then after every change made through Möbius. */
  subscribe: subscribeAs("json"),
  subscribeText: subscribeAs("text"),
  subscribeBlob: subscribeAs("blob"),
  /** Called when a queued write was refused for good: `cb({path, error})`. */
  onDeadLetter(callback) {
    deadLetterListeners.add(callback);
    return () => deadLetterListeners.delete(callback);
  },
};

// ---------- immersive mode ----------
// The app asks (`moebius:immersive {value}`); the shell hides its chrome around the frame (or
// not) and answers `moebius:immersive-state {value}`, which is what `hidden` reports.

function setImmersiveState(value) {
  if (value === immersiveHidden) return;
  immersiveHidden = value;
  for (const cb of [...immersiveListeners]) safeCall(cb, value);
}

function requestImmersive(value) {
  const next = Boolean(value);
  immersiveRequested = next;
  // Outside Möbius there is no chrome to hide: the state is simply this frame's own.
  if (!post({ type: "moebius:immersive", value: next })) {
    immersiveRequested = null;
    setImmersiveState(next);
  }
}

/** Escape leaves immersive mode, unless the app handled the key itself. */
function onImmersiveKey(event) {
  if (event.key !== "Escape" || event.defaultPrevented || !immersiveHidden) return;
  requestImmersive(false);
}

/** A long-press on `element` toggles immersive mode; taps, clicks and scrolls pass untouched. */
function holdToToggle(element, options = {}) {
  if (!element || typeof element.addEventListener !== "function") throw new TypeError("immersive.holdToToggle(element) needs an element");
  const ms = options && Number.isFinite(options.ms) && options.ms > 0 ? options.ms : HOLD_DEFAULT_MS;
  let timer = null;
  let start = null;
  /** True from a long-press until the click (or contextmenu) it would cause has been eaten. */
  let fired = false;
  const cancel = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    start = null;
  };
  const onDown = (event) => {
    // A long-press that caused no click (touch shows a context menu instead) must not eat the next one.
    fired = false;
    if (!event.isPrimary || (event.pointerType === "mouse" && event.button !== 0)) return;
    cancel();
    start = { x: event.clientX, y: event.clientY };
    timer = setTimeout(() => {
      timer = null;
      start = null;
      fired = true;
      immersive.toggle();
    }, ms);
  };
  const onMove = (event) => {
    if (start && Math.hypot(event.clientX - start.x, event.clientY - start.y) > HOLD_SLOP_PX) cancel();
  };
  const onClick = (event) => {
    if (!fired) return;
    fired = false;
    event.preventDefault();
    event.stopPropagation();
  };
  const onContextMenu = (event) => {
    if (timer !== null || fired) event.preventDefault();
  };
  const listeners = [
    ["pointerdown", onDown],
    ["pointermove", onMove],
    ["pointerup", cancel],
    ["pointercancel", cancel],
    ["pointerleave", cancel],
    ["click", onClick, true],
    ["contextmenu", onContextMenu],
  ];
  // Nothing here calls preventDefault on a press: scrolling and taps behave as without it.
  for (const [type, fn, capture] of listeners) element.addEventListener(type, fn, !!capture);
  return () => {
    cancel();
    for (const [type, fn, capture] of listeners) element.removeEventListener(type, fn, !!capture);
  };
}

const immersive = {
  /** True while the shell's chrome around this app is hidden. */
  get hidden() {
    return immersiveHidden;
  },
  /** Asks the shell to hide (true) or show (false) its chrome; `hidden` follows its answer. */
  set(value) {
    requestImmersive(value);
  },
  toggle() {
    requestImmersive(!(immersiveRequested ?? immersiveHidden));
  },
  /** Calls back with the current state now, then after every change; returns unsubscribe. */
  subscribe(callback) {
    if (typeof callback !== "function") throw new TypeError("immersive.subscribe(callback) needs a callback");
    // A wrapper per call, so subscribing the same callback twice gives two subscriptions.
    const entry = (value) => callback(value);
    immersiveListeners.add(entry);
    safeCall(callback, immersiveHidden);
    return () => {
      immersiveListeners.delete(entry);
    };
  },
  holdToToggle,
};

function hostRequest(type, fields) {
  post(Object.assign({ type }, fields));
}

const capabilityNames = ["storage", "nav", "chat"];

const mobius = {
  appId: null,
  online: true,
  onOnlineChange(callback) {
    onlineListeners.add(callback);
    return () => onlineListeners.delete(callback);
  },
  storage,
  DurableWriteError,
  StorageError,
  /** Fire-and-forget analytics. */
  signal(name, payload) {
    if (typeof name !== "string" || !name) return;
    post({ type: "moebius:signal", name, payload: payload === undefined ? null : payload });
  },
  /** Opens an in-app screen as a history entry: the system Back calls `onBack`. */
  nav: {
    open(label, options = {}) {
      const requestId = nextId("nav");
      const entry = { onBack: options && options.onBack, closed: false };
      if (navEntries.size >= MAX_NAV_ENTRIES) {
        return { requestId, ready: Promise.resolve(false), close() {} };
      }
      navEntries.set(requestId, entry);
      post({ type: "moebius:nav-push", requestId, label: String(label || "") });
      return {
        requestId,
        ready: Promise.resolve(true),
        close() {
          if (entry.closed) return;
          entry.closed = true;
          navEntries.delete(requestId);
          post({ type: "moebius:nav-pop", requestId });
        },
      };
    },
  },
  immersive,
  /** `chat(opts)` embeds the agent chat; `chat.start(opts)` starts an app chat (mobius-chat.js). */
  chat: Object.assign(
    createChat(() => ({ appId: mobius.appId, origin: parentOrigin, getToken: mobius.getToken, storage })),
    {
      /** Shows chat `chatId` in the shell, its composer holding `draft`. */
      open(chatId, { draft } = {}) {
        hostRequest("moebius:open-chat", { chatId: String(chatId), draft: draft ? String(draft) : "" });
      },
    },
  ),
  apps: {
    open(appId) {
      hostRequest("moebius:open-app", { appId: Number(appId) });
    },
  },
  settings: {
    open(section) {
      hostRequest("moebius:open-settings", { section: section ? String(section) : null });
    },
  },
  capabilities: {
    available: (name) => capabilityNames.includes(name),
    list: () => capabilityNames.slice(),
    describe: (name) => (capabilityNames.includes(name) ? { name, version: 1 } : null),
  },
  /** `useDocument(path, initial)` → [value, save, {loading, error}] over `storage`, live. */
  createUseDocument(React) {
    return function useDocument(path, initial = null) {
      const [state, setState] = React.useState({ value: initial, loading: true, error: null });
      React.useEffect(() => {
        let live = true;
        setState((s) => ({ ...s, loading: true }));
        const stop = storage.subscribe(
          path,
          (value) => {
            if (live) setState({ value: value === null || value === undefined ? initial : value, loading: false, error: null });
          },
          {
            onError: (error) => {
              if (live) setState((s) => ({ ...s, loading: false, error }));
            },
          },
        );
        return () => {
          live = false;
          stop();
        };
        // `initial` is only a fallback value, deliberately not a dependency.
      }, [path]);
      const save = React.useCallback(
        (next) => {
          setState((s) => ({ ...s, value: next }));
          return storage.set(path, next).catch((error) => {
            setState((s) => ({ ...s, error }));
            throw error;
          });
        },
        [path],
      );
      return [state.value, save, { loading: state.loading, error: state.error }];
    };
  },
};

/** Starts the runtime with the frame's configuration and publishes `window.mobius`. */
export function initMobiusRuntime(nextConfig) {
  config = nextConfig && typeof nextConfig === "object" ? nextConfig : {};
  parentOrigin = typeof config.parentOrigin === "string" ? config.parentOrigin : "";
  mobius.appId = config.appId ?? null;
  mobius.online = typeof config.online === "boolean" ? config.online : typeof navigator === "undefined" ? true : navigator.onLine;
  mobius.getToken = typeof config.getToken === "function" ? config.getToken : () => Promise.resolve(null);
  if (!listening && typeof window !== "undefined") {
    window.addEventListener("message", onMessage);
    window.addEventListener("keydown", onImmersiveKey);
    listening = true;
  }
  globalThis.mobius = mobius;
  return mobius;
}

export default mobius;
