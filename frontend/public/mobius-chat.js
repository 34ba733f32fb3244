// `window.mobius.chat`: the agent chat an app embeds, and `chat.start`. Compiled into every
// app together with mobius-runtime.js (which imports this module); dependency-free.
//
// mobius.chat(opts) resolves the app chat (opts.chatId, else the id persisted at opts.persist,
// else a new one from POST /api/app-chats), then mounts the real chat UI in a nested, sandboxed
// iframe (/shell/embed/chat) inside opts.mount and speaks the chat-embed protocol with it
// (`moebius:chat-embed:*`): on bootstrap-ready it mints a one-use grant
// (POST /api/app-chats/{id}/embed-capability) and posts INIT; the child trades the grant for its
// own short session and answers READY. A missing READY, an authorization error or an expiring
// session gets a new grant after 250 ms, 1 s, 3 s, then every 5 s (an old grant is never
// replayed). Events: ready and error (sticky), message-sent, turn-done. With `controls` (or a
// scope) a chat picker and a "+" button sit above the frame: switching PATCHes the chosen chat,
// ends the old embed sessions and mounts a fresh instance.
//
// chat.start(opts) creates an owner-visible app chat and sends its first message; it never
// navigates (post moebius:open-chat {chatId} to show it).

import { CHAT_EMBED, CHAT_EMBED_PREFIX } from "./runtime/messages.js";

const EMBED_PATH = "/shell/embed/chat";
const EMBED_SANDBOX = "allow-scripts allow-forms allow-popups allow-top-navigation-by-user-activation";
const DEFAULT_BOOTSTRAP_TIMEOUT_MS = 15_000;
const READY_TIMEOUT_MS = 5_000;
const RETRY_DELAYS_MS = [250, 1_000, 3_000];
const RETRY_EVERY_MS = 5_000;
const CONTEXT_TIMEOUT_MS = 250;
const REVEAL_MAX_MS = 180;
const MAX_GUIDANCE_CHARS = 300;
const MAX_QUICK_ACTIONS = 4;
const EVENTS = ["ready", "message-sent", "turn-done", "error"];
const STICKY = ["ready", "error"];

let instanceSeq = 0;

function randomUuid() {
  if (globalThis.crypto && typeof crypto.randomUUID === "function") return crypto.randomUUID();
  return `${Date.now().toString(16)}-${Math.random().toString(16).slice(2)}-${Math.random().toString(16).slice(2)}`;
}

function httpError(message, status, code) {
  const error = /** @type {Error & {status?: number, code?: string}} */ (new Error(message));
  error.status = status;
  if (code) error.code = code;
  return error;
}

/**
 * Builds `chat` (with `chat.start`) over `context()`, which answers the frame's current
 * `{appId, origin, getToken, storage}`.
 */
export function createChat(context) {
  /**
   * A JSON call to the server with the app token (one retry with a fresh token on a 401).
   * @param {string} path
   * @param {{method?: string, body?: unknown}} [init]
   */
  async function api(path, { method = "GET", body } = {}) {
    const { origin, getToken } = context();
    const send = async (force) => {
      const token = typeof getToken === "function" ? await getToken(force ? { forceRefresh: true } : undefined) : null;
      if (!token) throw httpError("app token unavailable", 0, "no_token");
      const headers = { Authorization: `Bearer ${token}` };
      if (body !== undefined) headers["Content-Type"] = "application/json";
      const response = await fetch(`${origin || ""}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { response, token };
    };
    let { response, token } = await send(false);
    if (response.status === 401) {
      const retry = await send(true);
      if (retry.token !== token) response = retry.response;
    }
    const json = response.status === 204 ? null : await response.json().catch(() => null);
    if (!response.ok) {
      const message = (json && json.message) || `HTTP ${response.status}`;
      throw httpError(message, response.status, json && json.code);
    }
    return json;
  }

  function metadata(opts, forCreate) {
    const body = {};
    if (forCreate) {
      body.title = typeof opts.title === "string" && opts.title.trim() ? opts.title : "App chat";
      if (typeof opts.provider === "string" && opts.provider.trim()) body.provider = opts.provider.trim();
      if (typeof opts.projectId === "string" && opts.projectId) body.project_id = opts.projectId;
      body.owner_visible = !!opts.ownerVisible;
    }
    if (opts.systemPrompt !== undefined) body.system_prompt = opts.systemPrompt === null ? "" : String(opts.systemPrompt);
    if (opts.model !== undefined) body.model = opts.model === null ? "" : String(opts.model);
    if (typeof opts.scope === "string" && opts.scope.trim()) body.scope = opts.scope.trim();
    if (typeof opts.scopeLabel === "string" && opts.scopeLabel.trim()) body.scope_label = opts.scopeLabel.trim();
    return body;
  }

  const hasResumeMetadata = (opts) =>
    ["systemPrompt", "model", "scope", "scopeLabel", "projectId"].some((k) => opts[k] !== undefined && opts[k] !== "");

  async function createAppChat(opts) {
    const created = await api("/api/app-chats", { method: "POST", body: metadata(opts, true) });
    return created.id;
  }

  /** PATCHes an existing chat with the options' metadata; a 409 (already started) is fine. */
  async function resume(id, opts) {
    try {
      await api(`/api/app-chats/${encodeURIComponent(id)}`, { method: "PATCH", body: metadata(opts, false) });
    } catch (error) {
      if (error.status !== 409) throw error;
    }
  }

  function persistedId(value) {
    if (typeof value === "string" && value) return value;
    if (value && typeof value === "object") {
      if (typeof value.id === "string" && value.id) return value.id;
      if (typeof value.chatId === "string" && value.chatId) return value.chatId;
    }
    return null;
  }

  async function resolveChat(opts) {
    if (typeof opts.chatId === "string" && opts.chatId) {
      await resume(opts.chatId, opts);
      return opts.chatId;
    }
    const { storage } = context();
    const path = typeof opts.persist === "string" && opts.persist ? opts.persist : null;
    if (path && storage) {
      const saved = persistedId(await storage.get(path).catch(() => null));
      if (saved) {
        if (!hasResumeMetadata(opts)) return saved;
        try {
          await resume(saved, opts);
          return saved;
        } catch (error) {
          if (error.status !== 404 && error.status !== 410) throw error;
        }
      }
    }
    const id = await createAppChat(opts);
    if (path && storage) await storage.set(path, { id }).catch(() => undefined);
    return id;
  }

  function quickActions(list) {
    if (!Array.isArray(list)) return undefined;
    const valid = list
      .filter((a) => a && typeof a.label === "string" && a.label.trim() && typeof a.prompt === "string" && a.prompt.trim())
      .slice(0, MAX_QUICK_ACTIONS)
      .map((a) => ({ label: a.label.trim(), prompt: a.prompt.trim() }));
    return valid.length ? valid : undefined;
  }

  const cleanGuidance = (text) => (typeof text === "string" ? text.trim().slice(0, MAX_GUIDANCE_CHARS) : "");

  async function chat(opts) {
    if (!opts || typeof opts !== "object" || !opts.mount || typeof opts.mount.appendChild !== "function") {
      throw new TypeError("opts.mount must be a DOM element");
    }
    const listeners = new Map(EVENTS.map((name) => [name, new Set()]));
    const sticky = new Map();
    const emit = (name, detail) => {
      if (STICKY.includes(name)) sticky.set(name, detail);
      for (const cb of [...listeners.get(name)]) {
        try {
          cb(detail);
        } catch (error) {
          setTimeout(() => {
            throw error;
          });
        }
      }
    };
    const handle = {
      get chatId() {
        return state.chatId;
      },
      get instanceId() {
        return state.instanceId;
      },
      get iframe() {
        return state.iframe;
      },
      on(name, cb) {
        if (listeners.has(name) && typeof cb === "function") {
          listeners.get(name).add(cb);
          if (sticky.has(name)) cb(sticky.get(name));
        }
        return handle;
      },
      setGuidance(text) {
        state.guidance = cleanGuidance(text);
        if (state.ready && state.iframe && state.iframe.contentWindow) {
          state.iframe.contentWindow.postMessage(
            { type: CHAT_EMBED.guidance, instanceId: state.instanceId, chatId: state.chatId, guidance: state.guidance },
            "*",
          );
        }
        return handle;
      },
      destroy() {
        if (state.destroyed) return;
        state.destroyed = true;
        clearTimers();
        window.removeEventListener("message", onMessage);
        for (const set of listeners.values()) set.clear();
        if (state.root) state.root.remove();
        revokeInstance();
      },
    };
    for (const [option, name] of [
      ["onReady", "ready"],
      ["onTurnDone", "turn-done"],
      ["onMessageSent", "message-sent"],
      ["onError", "error"],
    ]) {
      if (typeof opts[option] === "function") handle.on(name, opts[option]);
    }
    const scope = typeof opts.scope === "string" ? opts.scope.trim() : "";
    const withControls = opts.controls === true || (opts.controls === undefined && scope !== "");
    const state = {
      chatId: null,
      instanceId: null,
      iframe: null,
      ready: false,
      destroyed: false,
      heard: false,
      authorizationId: null,
      attempts: 0,
      timers: new Set(),
      guidance: cleanGuidance(opts.guidance),
    };
    const later = (ms, fn) => {
      const timer = setTimeout(() => {
        state.timers.delete(timer);
        if (!state.destroyed) fn();
      }, ms);
      state.timers.add(timer);
      return timer;
    };
    const clearTimers = () => {
      for (const timer of state.timers) clearTimeout(timer);
      state.timers.clear();
    };
    const fail = (error) => emit("error", { chatId: state.chatId, error: String(error && error.message ? error.message : error) });

    /** Mints a new grant and posts INIT; a failure or a missing READY schedules the next try. */
    async function authorize() {
      if (state.destroyed || !state.iframe || !state.iframe.contentWindow) return;
      const authorizationId = randomUuid();
      state.authorizationId = authorizationId;
      const attempt = ++state.attempts;
      let grant;
      try {
        grant = await api(`/api/app-chats/${encodeURIComponent(state.chatId)}/embed-capability`, {
          method: "POST",
          body: { instance_id: state.instanceId },
        });
      } catch (error) {
        fail(error);
        retry(attempt);
        return;
      }
      if (state.destroyed || state.authorizationId !== authorizationId) return;
      const init = {
        type: CHAT_EMBED.init,
        instanceId: state.instanceId,
        chatId: state.chatId,
        authorizationId,
        bootstrapCapability: grant.capability,
        picker: opts.picker !== false,
      };
      const actions = quickActions(opts.quickActions);
      if (state.guidance) init.guidance = state.guidance;
      else if (actions) init.quickActions = actions;
      state.iframe.contentWindow.postMessage(init, "*");
      later(READY_TIMEOUT_MS, () => {
        if (state.authorizationId === authorizationId && state.pending === authorizationId) {
          fail(new Error("the embedded chat did not answer"));
          retry(attempt);
        }
      });
      state.pending = authorizationId;
    }

    function retry(attempt) {
      if (attempt !== state.attempts) return;
      const delay = RETRY_DELAYS_MS[attempt - 1] ?? RETRY_EVERY_MS;
      later(delay, () => {
        if (attempt === state.attempts) void authorize();
      });
    }

    function reveal() {
      const iframe = state.iframe;
      const show = () => {
        if (state.destroyed) return;
        iframe.style.opacity = "1";
        iframe.style.pointerEvents = "auto";
        later(REVEAL_MAX_MS, () => emit("ready", { chatId: state.chatId }));
      };
      if (typeof requestAnimationFrame === "function") requestAnimationFrame(() => requestAnimationFrame(show));
      else show();
    }

    function onMessage(event) {
      if (!state.iframe || event.source !== state.iframe.contentWindow) return;
      if (event.origin !== "null" && event.origin !== location.origin && event.origin !== context().origin) return;
      const msg = event.data;
      if (!msg || typeof msg !== "object" || typeof msg.type !== "string" || !msg.type.startsWith(CHAT_EMBED_PREFIX)) return;
      state.heard = true;
      if (msg.type === CHAT_EMBED.bootstrapReady) {
        void authorize();
        return;
      }
      if (msg.instanceId !== state.instanceId) return;
      switch (msg.type) {
        case CHAT_EMBED.ready:
          if (msg.authorizationId !== state.authorizationId) return;
          state.pending = null;
          state.attempts = 0;
          if (typeof msg.chatId === "string" && msg.chatId && msg.chatId !== state.chatId) {
            state.chatId = msg.chatId;
            const { storage } = context();
            if (opts.persist && storage) storage.set(opts.persist, { id: msg.chatId }).catch(() => undefined);
          }
          if (!state.ready) {
            state.ready = true;
            if (state.guidance) handle.setGuidance(state.guidance);
            reveal();
          }
          return;
        case CHAT_EMBED.error:
          emit("error", { chatId: state.chatId, error: typeof msg.error === "string" ? msg.error : "error" });
          if (msg.phase === "authorization" && msg.authorizationId === state.authorizationId) {
            state.pending = null;
            retry(state.attempts);
          }
          return;
        case CHAT_EMBED.authExpiring:
          void authorize();
          return;
        case CHAT_EMBED.messageSent:
          emit("message-sent", { chatId: state.chatId });
          return;
        case CHAT_EMBED.turnDone:
          emit("turn-done", { chatId: state.chatId });
          return;
        case CHAT_EMBED.contextRequest:
          void answerContext(msg.nonce);
          return;
        default:
      }
    }

    async function answerContext(nonce) {
      let context = null;
      if (typeof opts.getContext === "function") {
        try {
          context = await Promise.race([
            Promise.resolve(opts.getContext()),
            new Promise((resolve) => setTimeout(() => resolve(null), CONTEXT_TIMEOUT_MS)),
          ]);
        } catch {
          context = null;
        }
      }
      if (state.iframe && state.iframe.contentWindow) {
        state.iframe.contentWindow.postMessage(
          { type: CHAT_EMBED.contextResponse, instanceId: state.instanceId, nonce, context: context && typeof context === "object" ? context : null },
          "*",
        );
      }
    }

    function revokeInstance() {
      if (state.chatId && state.instanceId) {
        api(`/api/app-chats/${encodeURIComponent(state.chatId)}/embed-sessions/${encodeURIComponent(state.instanceId)}`, {
          method: "DELETE",
        }).catch(() => undefined);
      }
    }

    /** Fills the chat picker from this app's chats of the scope (newest activity first). */
    async function refreshPicker() {
      if (!state.picker) return;
      const query = scope ? `?scope=${encodeURIComponent(scope)}` : "";
      const chats = await api(`/api/app-chats${query}`).catch(() => []);
      const list = Array.isArray(chats) ? chats : [];
      if (state.chatId && !list.some((c) => c.id === state.chatId)) list.unshift({ id: state.chatId });
      state.picker.textContent = "";
      for (const c of list) {
        const option = document.createElement("option");
        option.value = c.id;
        option.textContent = c.scope_label || c.title || `Chat ${String(c.id).slice(0, 8)}`;
        option.selected = c.id === state.chatId;
        state.picker.appendChild(option);
      }
    }

    /** Moves the embed to chat `id`: PATCH it, end the old sessions, mount a new instance. */
    async function switchTo(id) {
      if (state.destroyed || id === state.chatId) return;
      await resume(id, opts);
      revokeInstance();
      clearTimers();
      state.chatId = id;
      const { storage } = context();
      if (opts.persist && storage) await storage.set(opts.persist, { id }).catch(() => undefined);
      mountFrame();
      await refreshPicker();
    }

    function buildControls() {
      const bar = document.createElement("div");
      bar.setAttribute("data-mobius-chat-controls", "");
      bar.style.cssText = "display:flex;gap:8px;align-items:center;padding:4px 0;";
      const picker = document.createElement("select");
      picker.setAttribute("aria-label", "Chat");
      picker.style.cssText = "flex:1;min-height:36px;font:inherit;";
      picker.addEventListener("change", () => {
        switchTo(picker.value).catch(fail);
      });
      const add = document.createElement("button");
      add.type = "button";
      add.textContent = "+";
      add.setAttribute("aria-label", "New chat");
      add.style.cssText = "min-width:36px;min-height:36px;font:inherit;";
      add.addEventListener("click", () => {
        createAppChat(opts)
          .then((id) => switchTo(id))
          .catch(fail);
      });
      bar.append(picker, add);
      state.picker = picker;
      return bar;
    }

    function mountFrame() {
      if (state.iframe) state.iframe.remove();
      instanceSeq += 1;
      state.instanceId = `${context().appId}:${instanceSeq}:${Date.now()}`;
      Object.assign(state, { ready: false, heard: false, authorizationId: null, pending: null, attempts: 0 });
      const iframe = document.createElement("iframe");
      iframe.src = `${context().origin || ""}${EMBED_PATH}`;
      iframe.setAttribute("sandbox", EMBED_SANDBOX);
      iframe.setAttribute("title", typeof opts.title === "string" && opts.title ? opts.title : "Chat");
      const reduced = typeof matchMedia === "function" && matchMedia("(prefers-reduced-motion: reduce)").matches;
      iframe.style.cssText = `width:100%;height:100%;border:0;display:block;opacity:0;pointer-events:none;${
        reduced ? "" : "transition:opacity 120ms ease;"
      }`;
      state.iframe = iframe;
      state.frameHost.appendChild(iframe);
      const bootstrap = Number(opts.bootstrapTimeoutMs) > 0 ? Number(opts.bootstrapTimeoutMs) : DEFAULT_BOOTSTRAP_TIMEOUT_MS;
      later(bootstrap, () => {
        if (!state.heard) fail(new Error("the chat did not start"));
      });
    }

    state.chatId = await resolveChat(opts);
    if (withControls) {
      const root = document.createElement("div");
      root.style.cssText = "display:flex;flex-direction:column;width:100%;height:100%;";
      const frameHost = document.createElement("div");
      frameHost.style.cssText = "flex:1;min-height:0;";
      root.append(buildControls(), frameHost);
      state.root = root;
      state.frameHost = frameHost;
      opts.mount.appendChild(root);
      refreshPicker().catch(() => undefined);
    } else {
      state.frameHost = opts.mount;
    }
    window.addEventListener("message", onMessage);
    mountFrame();
    if (!withControls) state.root = state.iframe;
    return handle;
  }

  /** Creates an owner-visible app chat and sends its first message (never navigates). */
  chat.start = async function start(opts = {}) {
    const content = String((opts && (opts.content ?? opts.draft)) ?? "").trim();
    if (!content) throw new Error("opts.draft must not be empty");
    const id = await createAppChat({ ...opts, ownerVisible: opts.ownerVisible ?? true });
    const positive = (n) => (Number.isFinite(n) && n > 0 ? n : 1);
    const timezone = (() => {
      try {
        return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
      } catch {
        return "UTC";
      }
    })();
    const body = {
      content,
      cid: randomUuid(),
      timezone,
      viewport: {
        width: positive(window.innerWidth),
        height: positive((window.visualViewport && window.visualViewport.height) || window.innerHeight),
        pixelRatio: positive(window.devicePixelRatio),
      },
    };
    try {
      const response = await api(`/api/chats/${encodeURIComponent(id)}/messages`, { method: "POST", body });
      return { chatId: id, response: response ?? null };
    } catch (error) {
      error.chatId = id;
      throw error;
    }
  };

  return chat;
}
