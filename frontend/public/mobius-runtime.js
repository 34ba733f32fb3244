// `window.mobius`: the API a mini-app sees inside its sandboxed frame. The server bundles this
// module (and the modules under runtime/) into every app — the bare specifier `mobius-runtime`
// points here — and app-runtime-inject.js calls `initMobiusRuntime(globalThis.__mobiusRuntimeConfig)`
// before the app's own code runs. The embedded agent chat (`mobius.chat`) lives in mobius-chat.js.
// The reference for app authors is frontend/RUNTIME.md.
//
// The frame is an opaque origin: storage, navigation, capabilities and host requests all go to the
// parent shell over postMessage (runtime/bridge.js); the shell acts with this app's own token.
// The owner's token never enters the frame. No dependencies: this is compiled into every app.

import { createChat } from "./mobius-chat.js";
import { hasParent, listen, on, parentOrigin, post, rpc, safeCall, setHost, setParentOrigin } from "./runtime/bridge.js";
import { capabilities, configureCapabilities } from "./runtime/capabilities.js";
import { createUseDocument } from "./runtime/document.js";
import { CapabilityError, DurableWriteError, StorageError } from "./runtime/errors.js";
import { configureImmersive, immersive } from "./runtime/immersive.js";
import { FROM_FRAME, TO_FRAME } from "./runtime/messages.js";
import { nav, resetNav } from "./runtime/nav.js";
import { configureSignals, signal } from "./runtime/signal.js";
import { split } from "./runtime/split.js";
import { resetStorage, storage } from "./runtime/storage.js";

export { CapabilityError, DurableWriteError, StorageError };

const onlineListeners = new Set();
const state = { identity: null, online: typeof navigator === "undefined" ? true : navigator.onLine !== false, getToken: null, appId: null, instanceId: null };

function setOnline(value) {
  if (typeof value !== "boolean" || value === state.online) return;
  state.online = value;
  for (const cb of [...onlineListeners]) safeCall(cb, value);
}

function base64UrlJson(part) {
  try {
    const base64 = part.replace(/-/g, "+").replace(/_/g, "/");
    const text = decodeURIComponent(
      Array.from(atob(base64.padEnd(base64.length + ((4 - (base64.length % 4)) % 4), "=")), (c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`).join(""),
    );
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** True when `token` is an app token of this runtime's app and installation. */
export function tokenMatchesRuntime(token, appId, instanceId) {
  if (typeof token !== "string" || !token) return false;
  const claims = base64UrlJson(token.split(".")[1] || "");
  if (!claims || claims.scope !== "app" || String(claims.app_id) !== String(appId)) return false;
  const nonce = typeof claims.app_nonce === "string" && claims.app_nonce ? claims.app_nonce : null;
  return nonce === (instanceId || null);
}

async function getToken(options) {
  if (typeof state.getToken !== "function") return null;
  let token;
  try {
    token = await state.getToken(options);
  } catch {
    return null;
  }
  return tokenMatchesRuntime(token, state.appId, state.instanceId) ? token : null;
}

function hostRequest(type, fields) {
  post({ type, ...fields });
}

const mobius = {
  appId: null,
  /** Whether Möbius (the server) can be reached, as the shell last found. */
  get online() {
    return state.online;
  },
  /** `cb(online)` now, then on every change; returns the unsubscribe function. */
  onOnlineChange(callback) {
    if (typeof callback !== "function") return () => undefined;
    const entry = (value) => callback(value);
    onlineListeners.add(entry);
    safeCall(callback, state.online);
    return () => {
      onlineListeners.delete(entry);
    };
  },
  storage,
  DurableWriteError,
  StorageError,
  CapabilityError,
  durableWrite: storage.durableWrite,
  onDeadLetter: storage.onDeadLetter,
  runtimeFeatures: Object.freeze({ idleDocument: true }),
  /** `useDocument(path, options)` bound to the app's React. */
  createUseDocument(React) {
    return createUseDocument(storage, React);
  },
  signal,
  capabilities,
  /** `chat(opts)` embeds the agent chat; `chat.start(opts)` starts an app chat (mobius-chat.js). */
  chat: Object.assign(
    createChat(() => ({ appId: mobius.appId, origin: parentOrigin(), getToken, storage })),
    {
      /**
       * Shows chat `chatId` in the shell, its composer holding `draft`.
       * @param {string} chatId
       * @param {{draft?: string}} [options]
       */
      open(chatId, { draft } = {}) {
        hostRequest(FROM_FRAME.openChat, { chatId: String(chatId), draft: draft ? String(draft) : "" });
      },
    },
  ),
  nav,
  split,
  immersive,
  /** The app token (for `/api/proxy` and other app routes), refreshed through the shell when near expiry. */
  getToken,
  apps: {
    /**
     * Opens app `appId` (its id or slug), handing it the deep-link `intent` if given.
     * @param {number | string} appId
     * @param {{intent?: string}} [options]
     */
    open(appId, { intent } = {}) {
      const ref = typeof appId === "number" || /^\d+$/.test(String(appId)) ? Number(appId) : String(appId);
      hostRequest(FROM_FRAME.openApp, { appId: ref, ...(intent ? { intent: String(intent) } : {}) });
    },
    /**
     * Asks the shell to install the app at `source` (a git URL). Only for apps whose manifest
     * asks for `permissions.manage_apps`; the owner sees the install review and decides.
     */
    install(source) {
      hostRequest(FROM_FRAME.installApp, { source: String(source) });
    },
    /** Asks the shell to update app `appId`: the owner sees the update preview and decides (`manage_apps` only). */
    update(appId) {
      hostRequest(FROM_FRAME.manageApp, { action: "update", appId: Number(appId) });
    },
    /** Asks the shell to uninstall app `appId`: the owner chooses to keep or delete its data, or cancels (`manage_apps` only). */
    uninstall(appId) {
      hostRequest(FROM_FRAME.manageApp, { action: "uninstall", appId: Number(appId) });
    },
  },
  settings: {
    open(section) {
      hostRequest(FROM_FRAME.openSettings, { section: section ? String(section) : null });
    },
  },
};

function listenOnline() {
  on(TO_FRAME.onlineStatus, (msg) => setOnline(msg.online));
  on(TO_FRAME.frameInit, (msg) => setOnline(msg.online));
  if (typeof window !== "undefined") {
    window.addEventListener("online", () => setOnline(true));
    window.addEventListener("offline", () => setOnline(false));
  }
}

/**
 * Starts the runtime with the frame's configuration (`{appId, appInstanceId, getToken,
 * capabilityContract, parentOrigin, online, storageHost?}`) and publishes `window.mobius`. Calling it again for
 * the same app installation only swaps the token function and the capability declarations.
 */
export function initMobiusRuntime(nextConfig) {
  const config = nextConfig && typeof nextConfig === "object" ? nextConfig : {};
  const appId = config.appId === undefined || config.appId === null ? null : String(config.appId);
  const instanceId = typeof config.appInstanceId === "string" && config.appInstanceId ? config.appInstanceId : null;
  const identity = `${appId}:${instanceId ?? "legacy"}`;
  state.getToken = typeof config.getToken === "function" ? config.getToken : null;
  // A published page answers its own (read-only) storage calls: there is no shell behind it.
  setHost(config.storageHost);
  configureCapabilities(config.capabilityContract);
  if (state.identity === identity) return mobius;
  if (state.identity !== null) {
    resetStorage();
    resetNav();
  } else {
    listenOnline();
  }
  state.identity = identity;
  state.appId = appId;
  state.instanceId = instanceId;
  setParentOrigin(config.parentOrigin);
  listen();
  mobius.appId = appId;
  if (typeof config.online === "boolean") state.online = config.online;
  configureSignals(instanceId);
  configureImmersive(appId);
  globalThis.mobius = mobius;
  if (hasParent()) {
    rpc("drain", []).catch(() => undefined);
    rpc("drainSignals", []).catch(() => undefined);
  }
  return mobius;
}

export default mobius;
