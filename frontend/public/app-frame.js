// Bootstrap of a mini-app frame. The server's frame document (GET /api/apps/{id}/frame) loads
// this classic script; its CSP sandboxes the document into an opaque origin, so the app can
// reach neither the shell's storage nor the owner's token. Everything the app needs arrives from
// the parent shell over postMessage:
//
//   parent → frame  moebius:frame-init {token, expiresAt, storage, online, themeCss, bg, scheme,
//                   capabilityContract}  (repeatable: a later one only refreshes token and theme)
//                   moebius:module-ack / moebius:module-result {requestId, ok, bytes | error}
//                   moebius:frame-theme {themeCss, bg, scheme} (a `:root {…}` block carrying the
//                   theme both as --mobius-* and as the original platform's --bg, --surface, …),
//                   moebius:frame-insets {insets: {top, right, bottom, left}} (px the frame's
//                   edges overlap the device's unsafe areas → --mobius-safe-top/right/bottom/left)
//                   moebius:app-intent {intent, nonce} (a deep link: the app's own listener
//                   applies it; this script acknowledges it, see acknowledgeIntent),
//                   moebius:frame-visibility {visible} (for the app's own listener)
//   frame → parent  moebius:frame-hello, moebius:module-request {requestId, appId, retry},
//                   moebius:token-expired {appId}, moebius:frame-mounted {appId},
//                   moebius:frame-error {appId, error}, moebius:app-error,
//                   moebius:app-intent-applied {appId, nonce},
//                   moebius:storage-set|remove|clear (the virtual localStorage)
//
// window.mobius (mobius-runtime.js, compiled into the app) speaks the rest: storage-rpc, nav-*,
// capability-*, online-status, the host requests, and moebius:immersive ⇄ immersive-state.
//
// A published page (`/sites/<token>/`, config `site: {base, live}`) is this same document served
// alone, with no shell and no token: this script is then its own read-only host. It fetches the
// module from `<base>module.js` and answers the runtime's storage calls from the page's data route
// (`<base>data/<path>`, `<base>list/<prefix>`); writes are refused with `read_only`.
//
// The server inlines this file into every frame document (so a cached frame opens with the
// network cut), hence: plain script, no imports, and never the closing-script-tag sequence.
(function mobiusFrame() {
  "use strict";

  var INIT_TIMEOUT_MS = 10000;
  var ACK_TIMEOUT_MS = 5000;
  var BYTES_TIMEOUT_MS = 60000;
  var TOKEN_WAIT_MS = 10000;
  /** A token this close to expiry is refreshed before use. */
  var TOKEN_EARLY_MS = 60000;
  var RUNTIME_ABI = 1;
  var VIRTUAL_STORAGE = Symbol.for("mobius.virtualStorage");
  /** Largest safe-area inset the frame accepts, in CSS px. */
  var MAX_INSET_PX = 200;
  /** Largest theme stylesheet the frame applies, in UTF-16 units. */
  var MAX_THEME_CSS = 64 * 1024;
  var INSET_EDGES = ["top", "right", "bottom", "left"];
  /** The intent is acknowledged after two animation frames, or this long when frames are paused. */
  var INTENT_ACK_FALLBACK_MS = 120;
  var MAX_INTENT_NONCE = 200;

  var rootEl = document.getElementById("root");
  var panelEl = document.getElementById("mobius-frame-error");
  var config = readConfig();
  // Where the shell lives: the frame is opaque ("null"), but its URL still names the server.
  var parentOrigin = config.origin || originOfUrl(location.href);
  /** A published page: `{base, live}` (`base` the absolute URL of `/sites/<token>/`), else null. */
  var site = config.site && typeof config.site === "object" && typeof config.site.base === "string" ? config.site : null;
  // A published page talks to no parent, whoever frames it.
  var hasParent = !site && window.parent !== window;

  var token = null;
  var tokenExpiresAt = 0;
  var online = true;
  var started = false;
  var mounted = false;
  var tokenWaiters = [];
  var moduleRequests = new Map();
  /** Renders the app again (with the current token); set once it is mounted. */
  var renderApp = null;

  function readConfig() {
    var el = document.getElementById("mobius-frame-config");
    try {
      var parsed = JSON.parse((el && el.textContent) || "{}");
      return parsed && typeof parsed === "object" ? parsed : {};
    } catch {
      return {};
    }
  }

  function originOfUrl(href) {
    try {
      return new URL(href).origin;
    } catch {
      return "";
    }
  }

  function randomId() {
    if (globalThis.crypto && typeof crypto.randomUUID === "function") return crypto.randomUUID();
    return String(Date.now()) + Math.random().toString(16).slice(2);
  }

  function post(message, transfer) {
    if (!hasParent || !parentOrigin) return;
    try {
      window.parent.postMessage(message, parentOrigin, transfer || []);
    } catch {
      // The parent went away (the canvas closed): nothing to tell.
    }
  }

  // ---------- Web Storage shims ----------
  // An opaque origin has no localStorage/sessionStorage: both become in-memory stores, and
  // localStorage writes are mirrored to the parent, which keeps them per app and hands the
  // snapshot back in the next frame-init.

  function createStorage(mirror) {
    var data = new Map();
    var api = {
      get length() {
        return data.size;
      },
      key: function (index) {
        var keys = Array.from(data.keys());
        return index >= 0 && index < keys.length ? keys[index] : null;
      },
      getItem: function (key) {
        key = String(key);
        return data.has(key) ? data.get(key) : null;
      },
      setItem: function (key, value) {
        key = String(key);
        value = String(value);
        data.set(key, value);
        if (mirror) post({ type: "moebius:storage-set", key: key, value: value });
      },
      removeItem: function (key) {
        key = String(key);
        if (!data.delete(key)) return;
        if (mirror) post({ type: "moebius:storage-remove", key: key });
      },
      clear: function () {
        if (data.size === 0) return;
        data.clear();
        if (mirror) post({ type: "moebius:storage-clear" });
      },
    };
    var seed = function (snapshot) {
      if (!snapshot || typeof snapshot !== "object") return;
      Object.keys(snapshot).forEach(function (key) {
        if (typeof snapshot[key] === "string" && !data.has(key)) data.set(key, snapshot[key]);
      });
    };
    // A Proxy so `localStorage.foo = "x"` and Object.keys(localStorage) behave like the real one.
    var proxy = new Proxy(api, {
      get: function (target, prop) {
        if (prop === VIRTUAL_STORAGE) return true;
        if (prop === Symbol.toStringTag) return "Storage";
        if (typeof prop === "symbol" || prop in target) return target[prop];
        return data.has(prop) ? data.get(prop) : undefined;
      },
      set: function (target, prop, value) {
        if (typeof prop === "symbol" || prop in target) return false;
        api.setItem(prop, value);
        return true;
      },
      deleteProperty: function (target, prop) {
        if (typeof prop !== "symbol" && !(prop in target)) api.removeItem(prop);
        return true;
      },
      has: function (target, prop) {
        return prop in target || (typeof prop === "string" && data.has(prop));
      },
      ownKeys: function () {
        return Array.from(data.keys());
      },
      getOwnPropertyDescriptor: function (target, prop) {
        if (typeof prop === "string" && data.has(prop)) {
          return { value: data.get(prop), writable: true, enumerable: true, configurable: true };
        }
        return undefined;
      },
    });
    return { storage: proxy, seed: seed };
  }

  var local = createStorage(true);
  var session = createStorage(false);

  function install(name, storage) {
    try {
      Object.defineProperty(window, name, { configurable: true, enumerable: true, get: function () { return storage; } });
    } catch {
      // A browser that refuses: the app sees the platform's (throwing) storage.
    }
  }
  install("localStorage", local.storage);
  install("sessionStorage", session.storage);

  // ---------- the error panel ----------

  function redact(text) {
    return String(text || "").replace(/([?&]token=)[^&\s"']+/gi, "$1…");
  }

  function describe(error) {
    if (!error) return "Unknown error";
    if (typeof error === "string") return redact(error);
    var message = error.message || String(error);
    return redact(message);
  }

  function button(label, onClick, primary) {
    var b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.style.cssText =
      "min-height:44px;padding:0 18px;margin:0 8px 8px 0;border-radius:10px;font:inherit;font-weight:600;cursor:pointer;" +
      (primary ? "border:0;background:#4f46e5;color:#fff;" : "border:1px solid #c6c6bf;background:transparent;color:inherit;");
    b.addEventListener("click", onClick);
    return b;
  }

  function showPanel(title, detail, options) {
    if (!panelEl) return;
    options = options || {};
    panelEl.textContent = "";
    panelEl.style.display = "block";
    panelEl.style.maxWidth = "36rem";
    panelEl.style.margin = "0 auto";
    var h = document.createElement("h1");
    h.textContent = title;
    h.style.cssText = "font-size:1.25rem;margin:0 0 8px";
    var p = document.createElement("p");
    p.textContent = detail;
    p.style.cssText = "margin:0 0 16px;opacity:0.8;white-space:pre-wrap;word-break:break-word";
    panelEl.appendChild(h);
    panelEl.appendChild(p);
    panelEl.appendChild(button("Reload", function () { location.reload(); }, true));
    if (options.report && hasParent) {
      panelEl.appendChild(
        button("Report to agent", function () {
          post({ type: "moebius:app-error", appId: config.appId, report: true, chatId: config.chatId || null, error: { message: detail } });
        }, false),
      );
    }
    if (rootEl && !mounted) rootEl.style.display = "none";
  }

  /** A load failure: tell the parent and show the panel. */
  function fail(code, error) {
    var message = describe(error);
    post({ type: "moebius:frame-error", appId: config.appId, error: { code: code, message: message } });
    showPanel("This app couldn't start", message, { report: code !== "no_parent" && code !== "no_init" });
  }

  // Errors before the first render are load failures; later ones are only logged and reported.
  window.addEventListener("error", function (event) {
    var file = event.filename || "";
    if (/^(chrome|moz|safari)-extension:/.test(file)) return;
    if (!started) return;
    if (!mounted) fail("script_error", event.error || event.message);
    else post({ type: "moebius:app-error", appId: config.appId, error: { message: describe(event.error || event.message) } });
  });
  window.addEventListener("unhandledrejection", function (event) {
    if (mounted) post({ type: "moebius:app-error", appId: config.appId, error: { message: describe(event.reason) } });
  });

  // ---------- theme ----------
  // The shell sends a `:root {…}` block of custom properties (the original platform's names —
  // --bg, --surface, --accent, … — and the same values as --mobius-*), its background colour and
  // its scheme. The document's own stylesheet has both default palettes until then.

  var themeEl = null;

  function schemeOf(scheme, bg) {
    if (scheme === "light" || scheme === "dark") return scheme;
    var m = typeof bg === "string" && /^#([0-9a-f]{6})$/i.exec(bg);
    if (!m) return null;
    var n = parseInt(m[1], 16);
    var luma = 0.2126 * ((n >> 16) & 255) + 0.7152 * ((n >> 8) & 255) + 0.0722 * (n & 255);
    return luma < 128 ? "dark" : "light";
  }

  function applyTheme(msg) {
    if (!msg || typeof msg !== "object") return;
    var root = document.documentElement;
    var legacy = msg.theme && typeof msg.theme === "object" ? msg.theme : null;
    var scheme = schemeOf(msg.scheme || (legacy && legacy.scheme), msg.bg);
    if (scheme) {
      root.setAttribute("data-theme", scheme);
      root.style.colorScheme = scheme;
    }
    if (typeof msg.themeCss === "string" && msg.themeCss.length <= MAX_THEME_CSS) {
      if (!themeEl) {
        themeEl = document.createElement("style");
        themeEl.id = "mobius-theme";
        document.head.appendChild(themeEl);
      }
      // Only custom properties on :root: nothing that could load or run anything.
      themeEl.textContent = msg.themeCss.replace(/@import[^;]*;?/gi, "").replace(/url\s*\(/gi, "");
    } else if (legacy && legacy.vars && typeof legacy.vars === "object") {
      Object.keys(legacy.vars).forEach(function (name) {
        if (/^--[a-z0-9-]+$/.test(name) && typeof legacy.vars[name] === "string") root.style.setProperty(name, legacy.vars[name]);
      });
    }
  }

  // ---------- safe-area insets ----------
  // env(safe-area-inset-*) describes the screen, not this frame's box (and browsers differ on
  // whether a frame sees it at all): the shell measures how far each edge of the frame reaches
  // into the device's unsafe areas and sends that; apps pad with --mobius-safe-*.

  function insetPx(value) {
    var n = typeof value === "number" && isFinite(value) ? Math.min(Math.max(value, 0), MAX_INSET_PX) : 0;
    return Math.round(n * 100) / 100 + "px";
  }

  function applyInsets(insets) {
    if (!insets || typeof insets !== "object") return;
    var rootStyle = document.documentElement.style;
    INSET_EDGES.forEach(function (edge) {
      rootStyle.setProperty("--mobius-safe-" + edge, insetPx(insets[edge]));
    });
  }

  applyInsets({ top: 0, right: 0, bottom: 0, left: 0 });

  // ---------- the app token ----------

  function setToken(next, expiresAt) {
    var previous = token;
    token = typeof next === "string" && next ? next : null;
    if (renderApp && token !== previous) renderApp();
    tokenExpiresAt = typeof expiresAt === "number" ? expiresAt : 0;
    var waiters = tokenWaiters;
    tokenWaiters = [];
    waiters.forEach(function (resolve) { resolve(token); });
  }

  function tokenFresh() {
    return token !== null && (tokenExpiresAt === 0 || tokenExpiresAt - Date.now() > TOKEN_EARLY_MS);
  }

  /** The installation nonce (`app_nonce`) of an app token, or null. */
  function tokenNonce(value) {
    try {
      var part = String(value).split(".")[1] || "";
      var json = atob(part.replace(/-/g, "+").replace(/_/g, "/").padEnd(part.length + ((4 - (part.length % 4)) % 4), "="));
      var claims = JSON.parse(json);
      return claims && typeof claims.app_nonce === "string" && claims.app_nonce ? claims.app_nonce : null;
    } catch {
      return null;
    }
  }

  /** The app token, refreshed through the parent when it is about to expire or when asked
   *  (`{forceRefresh: true}`, after a 401); waits at most 10 s, then answers the old one. */
  function getToken(options) {
    // A published page has no token, and nobody to ask for one.
    if (site) return Promise.resolve(null);
    var force = !!(options && options.forceRefresh);
    if (!force && tokenFresh()) return Promise.resolve(token);
    return requestFreshToken();
  }

  function requestFreshToken() {
    return new Promise(function (resolve) {
      var done = false;
      var finish = function (value) {
        if (done) return;
        done = true;
        resolve(value);
      };
      setTimeout(function () { finish(token); }, TOKEN_WAIT_MS);
      if (tokenWaiters.push(finish) === 1) post({ type: "moebius:token-expired", appId: config.appId });
    });
  }

  // ---------- module loading ----------

  function moduleError(code, message, retryable) {
    var error = new Error(message);
    error.code = code;
    error.retryable = retryable;
    return error;
  }

  /** One module request: ack within 5 s, bytes within 60 s. */
  function requestModule(retry) {
    return new Promise(function (resolve, reject) {
      var requestId = "module-" + randomId();
      var ackTimer = setTimeout(function () {
        settle(moduleError("no_ack", "Möbius did not answer the request for this app's code.", true));
      }, ACK_TIMEOUT_MS);
      var bytesTimer = setTimeout(function () {
        settle(moduleError("timeout", "This app's code took too long to arrive.", true));
      }, BYTES_TIMEOUT_MS);
      function settle(error, bytes) {
        clearTimeout(ackTimer);
        clearTimeout(bytesTimer);
        moduleRequests.delete(requestId);
        if (error) reject(error);
        else resolve(bytes);
      }
      moduleRequests.set(requestId, {
        ack: function () { clearTimeout(ackTimer); },
        result: function (msg) {
          if (msg.ok && msg.bytes instanceof ArrayBuffer) return settle(null, msg.bytes);
          var e = msg.error && typeof msg.error === "object" ? msg.error : {};
          var code = typeof e.code === "string" ? e.code : "load_failed";
          var retryable = code === "network" || code === "timeout" || (typeof e.status === "number" && e.status >= 500);
          settle(moduleError(code, typeof e.message === "string" ? e.message : "This app's code could not be loaded.", retryable));
        },
      });
      post({ type: "moebius:module-request", requestId: requestId, appId: config.appId, retry: retry });
    });
  }

  function loadBytes() {
    var attempt = function (n) {
      return requestModule(n > 0).catch(function (error) {
        if (n > 0) throw error;
        if (error.code === "token_expired") return requestFreshToken().then(function () { return attempt(n + 1); });
        if (error.retryable) return attempt(n + 1);
        throw error;
      });
    };
    return attempt(0);
  }

  function checkBanner(bytes) {
    var head = new TextDecoder().decode(new Uint8Array(bytes, 0, Math.min(bytes.byteLength, 200)));
    var match = /mobius-compiled-runtime-abi:(\d+)/.exec(head);
    if (match && Number(match[1]) !== RUNTIME_ABI) {
      throw moduleError("abi_mismatch", "This app was built for a different Möbius runtime (ABI " + match[1] + "). Apply it again.", false);
    }
  }

  function start(init) {
    globalThis.__mobiusRuntimeConfig = Object.freeze({
      appId: String(config.appId),
      appInstanceId: tokenNonce(token),
      chatId: config.chatId || null,
      name: config.name || "",
      parentOrigin: site ? "" : parentOrigin,
      online: online,
      getToken: getToken,
      capabilityContract: init.capabilityContract && typeof init.capabilityContract === "object" ? init.capabilityContract : null,
      storageHost: site ? siteHost : undefined,
    });
    (site ? loadSiteModule() : loadBytes())
      .then(function (bytes) {
        checkBanner(bytes);
        var url = URL.createObjectURL(new Blob([bytes], { type: "text/javascript" }));
        return import(url).finally(function () { URL.revokeObjectURL(url); });
      })
      .then(mount)
      .catch(function (error) {
        fail(error && error.code ? error.code : "load_failed", error);
      });
  }

  function mount(module) {
    var runtime = globalThis.__mobiusCompiledRuntime;
    if (!runtime || runtime.abi !== RUNTIME_ABI || typeof runtime.createRoot !== "function") {
      throw moduleError("abi_mismatch", "This app's bundle does not carry the Möbius runtime this frame expects. Apply it again.", false);
    }
    var App = module && module.default;
    if (typeof App !== "function" && (typeof App !== "object" || App === null)) {
      throw moduleError("no_default_export", "index.jsx must `export default` a React component.", false);
    }
    var h = runtime.createElement;
    // The first commit of this wrapper is the first commit of the app under it.
    function Mounted(props) {
      runtime.useEffect(function () {
        if (mounted) return;
        mounted = true;
        if (rootEl) rootEl.style.display = "";
        post({ type: "moebius:frame-mounted", appId: config.appId });
      }, []);
      return h(App, { appId: String(config.appId), token: props.token });
    }
    var root = runtime.createRoot(rootEl, {
      onUncaughtError: function (error) {
        // The tree is gone either way: show the panel (with the report button).
        mounted = false;
        fail("render_error", error);
      },
    });
    renderApp = function () {
      root.render(h(Mounted, { token: token }));
    };
    renderApp();
  }

  // ---------- a published page: its own read-only host ----------

  var READ_ONLY_MESSAGE = "This is a published, read-only copy of this app: changes can't be saved here.";
  var MAX_STORAGE_PATH = 2048;
  var SITE_LIST_PAGE = 500;
  var SITE_LIST_PAGE_WITH_CONTENT = 16;
  var SITE_MAX_LIST_PAGES = 200;

  function siteFetch(rel) {
    return fetch(site.base + rel, { credentials: "omit", cache: "no-store", redirect: "error", referrerPolicy: "no-referrer" }).catch(function () {
      throw siteError("network", "The server of this page cannot be reached.", 0, { retryable: true });
    });
  }

  function siteError(code, message, status, extra) {
    var error = { name: "StorageError", code: code, message: message, status: status };
    Object.keys(extra || {}).forEach(function (key) {
      error[key] = extra[key];
    });
    return error;
  }

  function loadSiteModule() {
    return siteFetch("module.js").then(
      function (response) {
        if (response.status === 404) throw moduleError("not_published", "This page is no longer published.", false);
        if (!response.ok) throw moduleError("load_failed", "This app's code could not be loaded (" + response.status + ").", response.status >= 500);
        return response.arrayBuffer();
      },
      function () {
        throw moduleError("network", "This app's code could not be loaded: the server cannot be reached.", true);
      },
    );
  }

  function encodeStoragePath(path) {
    return String(path)
      .split("/")
      .filter(function (s) { return s !== ""; })
      .map(encodeURIComponent)
      .join("/");
  }

  function checkStoragePath(path) {
    if (typeof path !== "string" || path === "" || path.length > MAX_STORAGE_PATH || path.charAt(0) === "/" || path.split("/").some(function (s) { return s === "." || s === ".."; })) {
      throw siteError("invalid_path", "The storage path " + JSON.stringify(path) + " is not allowed: use a relative path like \"notes/today.json\".", 400);
    }
    return path;
  }

  function checkReadKind(kind) {
    if (kind === undefined || kind === null) return "json";
    if (kind === "json" || kind === "text" || kind === "blob") return kind;
    throw siteError("invalid_argument", "getWithVersion: kind must be \"json\", \"text\" or \"blob\".", 400, { name: "TypeError" });
  }

  /** What a stored Content-Type holds (as the shell's storage host reads it). */
  function kindOfType(contentType) {
    var type = String(contentType || "").split(";")[0].trim().toLowerCase();
    if (type === "application/json" || /\+json$/.test(type)) return "json";
    if (type.indexOf("text/") === 0) return "text";
    return "blob";
  }

  async function siteErrorOf(response, path) {
    var code = "http_" + response.status;
    var message = "Storage answered " + response.status + ".";
    try {
      var body = await response.json();
      if (body && typeof body.code === "string") code = body.code;
      if (body && typeof body.message === "string") message = body.message;
    } catch {
      // Not JSON.
    }
    return siteError(code, message, response.status, { path: path });
  }

  /** `{stored: {kind, value, contentType} | null, version}` of `path`. */
  async function siteRead(path) {
    var response = await siteFetch("data/" + encodeStoragePath(path));
    if (response.status === 404) return { stored: null, version: null };
    if (!response.ok) throw await siteErrorOf(response, path);
    var contentType = response.headers.get("Content-Type");
    var kind = kindOfType(contentType);
    var value;
    if (kind === "blob") value = await response.blob();
    else {
      value = await response.text();
      if (kind === "json") {
        try {
          value = JSON.parse(value);
        } catch {
          throw siteError("invalid_json", path + " is not valid JSON.", 415, { path: path });
        }
      }
    }
    return { stored: { kind: kind, value: value, contentType: contentType }, version: response.headers.get("ETag") };
  }

  /** The stored value as `wanted` (JSON reads as its text or a Blob; text as a Blob). */
  function convertStored(stored, wanted, path) {
    if (stored.kind === wanted) return stored.value;
    if (wanted === "blob") {
      var text = stored.kind === "json" ? JSON.stringify(stored.value) : String(stored.value);
      return new Blob([text], { type: stored.contentType || (stored.kind === "json" ? "application/json" : "text/plain;charset=utf-8") });
    }
    if (wanted === "text" && stored.kind === "json") return JSON.stringify(stored.value);
    var reader = { json: "get()", text: "getText()", blob: "getBlob()" }[stored.kind];
    throw siteError("kind_mismatch", path + " holds " + (stored.kind === "json" ? "a JSON document" : stored.kind === "text" ? "text" : "binary data") + "; read it with " + reader + ".", 415, { path: path });
  }

  async function siteList(prefix, includeContent) {
    var clean = String(prefix || "").replace(/^\/+|\/+$/g, "");
    if (clean !== "") checkStoragePath(clean);
    var entries = [];
    var cursor = null;
    for (var page = 0; page < SITE_MAX_LIST_PAGES; page++) {
      var query = "?limit=" + (includeContent ? SITE_LIST_PAGE_WITH_CONTENT : SITE_LIST_PAGE) + (includeContent ? "&include_content=true" : "") + (cursor ? "&cursor=" + encodeURIComponent(cursor) : "");
      var response = await siteFetch("list/" + encodeStoragePath(clean) + query);
      if (response.status === 404) return [];
      if (!response.ok) throw await siteErrorOf(response, clean);
      var body = await response.json();
      entries.push.apply(entries, Array.isArray(body.entries) ? body.entries : []);
      cursor = typeof body.next_cursor === "string" && body.next_cursor ? body.next_cursor : null;
      if (!cursor) break;
    }
    return entries;
  }

  function readOnly(path, refusedValue, durable) {
    return siteError("read_only", READ_ONLY_MESSAGE, 403, durable ? { name: "DurableWriteError", path: path, retryable: false, refusedValue: refusedValue } : { path: path });
  }

  /** One storage call of the app, answered from the page's data route; writes refused. */
  async function siteCall(method, args) {
    switch (method) {
      case "get":
      case "getText":
      case "getBlob": {
        var path = checkStoragePath(args[0]);
        var wanted = method === "get" ? "json" : method === "getText" ? "text" : "blob";
        var read = await siteRead(path);
        return read.stored ? convertStored(read.stored, wanted, path) : null;
      }
      case "getWithVersion": {
        var versioned = checkStoragePath(args[0]);
        var kind = checkReadKind(args[1]);
        var found = await siteRead(versioned);
        return { value: found.stored ? convertStored(found.stored, kind, versioned) : null, version: found.version };
      }
      case "list": {
        var options = args[1] && typeof args[1] === "object" ? args[1] : {};
        return siteList(typeof args[0] === "string" ? args[0] : "", options.includeContent === true);
      }
      // The page does not change while it is open: a subscription's first read is its answer.
      case "subscribe":
      case "unsubscribe":
      case "drain":
      case "drainSignals":
        return null;
      case "pendingCount":
      case "pendingSignalCount":
        return 0;
      case "durableWrite":
        throw readOnly(typeof args[0] === "string" ? args[0] : null, args[1] === undefined ? null : args[1], true);
      case "remove":
        throw readOnly(typeof args[0] === "string" ? args[0] : null, null, true);
      case "queueSignals":
        throw readOnly(null, null, false);
      default:
        throw siteError("storage_method_denied", "There is no storage method " + JSON.stringify(method) + ".", 400);
    }
  }

  /** The runtime's storage host on a published page (see bridge.js `setHost`). */
  function siteHost(message, deliver) {
    if (!message || typeof message !== "object" || message.type !== "moebius:storage-rpc") return;
    siteCall(message.method, Array.isArray(message.args) ? message.args : []).then(
      function (result) {
        deliver({ type: "moebius:storage-rpc-result", requestId: message.requestId, ok: true, result: result });
      },
      function (error) {
        var wire = error && typeof error === "object" && typeof error.code === "string" ? error : siteError("storage_error", "The storage request failed.", 0);
        deliver({ type: "moebius:storage-rpc-result", requestId: message.requestId, ok: false, error: wire });
      },
    );
  }

  // ---------- deep-link intents ----------

  // The app's own message listener receives `moebius:app-intent` too and applies it; once it has
  // had two frames to draw the result, the shell may uncover the app.
  function acknowledgeIntent(nonce) {
    if (typeof nonce !== "string" || nonce === "" || nonce.length > MAX_INTENT_NONCE) return;
    var done = false;
    function ack() {
      if (done) return;
      done = true;
      post({ type: "moebius:app-intent-applied", appId: config.appId, nonce: nonce });
    }
    requestAnimationFrame(function () {
      requestAnimationFrame(ack);
    });
    setTimeout(ack, INTENT_ACK_FALLBACK_MS);
  }

  // ---------- messages from the parent ----------

  function onInit(msg) {
    if (Object.prototype.hasOwnProperty.call(msg, "token")) setToken(msg.token, msg.expiresAt);
    if (typeof msg.online === "boolean") online = msg.online;
    applyTheme(msg);
    if (started) return;
    started = true;
    clearTimeout(initTimer);
    local.seed(msg.storage);
    start(msg);
  }

  window.addEventListener("message", function (event) {
    if (event.source !== window.parent || event.origin !== parentOrigin) return;
    var msg = event.data;
    if (!msg || typeof msg !== "object" || typeof msg.type !== "string") return;
    switch (msg.type) {
      case "moebius:frame-init":
        onInit(msg);
        break;
      case "moebius:module-ack": {
        var pendingAck = moduleRequests.get(msg.requestId);
        if (pendingAck) pendingAck.ack();
        break;
      }
      case "moebius:module-result": {
        var pendingResult = moduleRequests.get(msg.requestId);
        if (pendingResult) pendingResult.result(msg);
        break;
      }
      case "moebius:online-status":
        online = msg.online === true;
        break;
      case "moebius:frame-theme":
        applyTheme(msg);
        break;
      case "moebius:frame-insets":
        applyInsets(msg.insets);
        break;
      case "moebius:app-intent":
        acknowledgeIntent(msg.nonce);
        break;
      default:
        break;
    }
  });

  // ---------- start ----------

  var initTimer = null;
  if (site) {
    // A published page: nothing to wait for, no token; the theme the owner published it with
    // (both schemes, following the visitor's), else the default one.
    if (config.appId === undefined) fail("bad_frame", "The page has no app configuration.");
    else {
      if (config.theme) applyTheme(config.theme);
      started = true;
      start({});
    }
  } else if (!hasParent) {
    showPanel("Open this app from Möbius", "This page is the inside of a Möbius app and only runs within Möbius.", {});
  } else if (config.appId === undefined) {
    fail("bad_frame", "The frame document has no app configuration.");
  } else {
    initTimer = setTimeout(function () {
      if (started) return;
      post({ type: "moebius:frame-error", appId: config.appId, error: { code: "no_init", message: "No start message from Möbius." } });
      showPanel(
        "This app didn't get started",
        "Möbius did not send this app its start message within 10 seconds. Reload to try again.",
        {},
      );
    }, INIT_TIMEOUT_MS);
    post({ type: "moebius:frame-hello", appId: config.appId });
  }
})();
