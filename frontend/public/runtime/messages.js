// @ts-check
// The names of every message between an app frame and the shell, written once for both sides:
// the runtime (this folder, mobius-runtime.js, mobius-chat.js) imports them, and so does the shell
// (src/apps/, src/embed/), where `tsc` types each message by them (`typeof FROM_FRAME.navPush`).
// A misspelt name is a type error on either side (`tsconfig.runtime.json` checks the runtime).
// app-frame.js is a classic script inlined into frame documents and cannot import: it spells its
// names out, and src/apps/messages.test.ts checks each one against this module.
//
// The names are the wire format of the original platform: never rename one.

/** Frame → shell (to `window.parent`, or on the storage port). */
export const FROM_FRAME = Object.freeze(
  /** @type {const} */ ({
    /** app-frame.js is listening: the shell answers with `frame-init`. */
    frameHello: "moebius:frame-hello",
    /** `{requestId, appId, retry}`: the app's module bytes, please. */
    moduleRequest: "moebius:module-request",
    /** `{appId}`: the app token is about to expire. */
    tokenExpired: "moebius:token-expired",
    /** `{appId}`: the app's first commit happened. */
    frameMounted: "moebius:frame-mounted",
    /** `{appId, error: {code, message}}`: the frame could not start the app. */
    frameError: "moebius:frame-error",
    /** `{appId, error: {message}, report?, chatId?}`: an error after the mount ("Report to agent"). */
    appError: "moebius:app-error",
    /** `{appId, nonce}`: the app applied deep-link intent `nonce`. */
    appIntentApplied: "moebius:app-intent-applied",
    /** `{key, value}` / `{key}` / `{}`: the frame's virtual localStorage changed. */
    storageSet: "moebius:storage-set",
    storageRemove: "moebius:storage-remove",
    storageClear: "moebius:storage-clear",
    /** The runtime asks for the storage port (answered with `storage-port`). */
    storagePortRequest: "moebius:storage-port-request",
    /** The port's first message: the frame took it. */
    storagePortReady: "moebius:storage-port-ready",
    /** `{requestId, method, args}`: one storage call (answered with `storage-rpc-result`). */
    storageRpc: "moebius:storage-rpc",
    /** Host requests: `{title, draft}`, `{chatId, draft}`, `{appId, intent?}`, `{source}`, `{action, appId}`, `{section}`. */
    newChat: "moebius:new-chat",
    openChat: "moebius:open-chat",
    openApp: "moebius:open-app",
    installApp: "moebius:install-app",
    manageApp: "moebius:manage-app",
    openSettings: "moebius:open-settings",
    /** `{requestId, label, reversible}`: the app opened a screen (answered `nav-push-ack`/`-rejected`). */
    navPush: "moebius:nav-push",
    /** `{requestId}`: the app closed its top screen itself. */
    navPop: "moebius:nav-pop",
    /** `{requestId}`: the answer to `nav-forward`. */
    navForwardAck: "moebius:nav-forward-ack",
    navForwardRejected: "moebius:nav-forward-rejected",
    /** `{requestId, capability, version, input}` / `{requestId, capability, action, value?}`. */
    capabilityOpen: "moebius:capability-open",
    capabilityControl: "moebius:capability-control",
    /** `{value, mode, appId}`: the app asks to hide (or show) the shell's chrome. */
    immersive: "moebius:immersive",
  }),
);

/** Shell → frame. */
export const TO_FRAME = Object.freeze(
  /** @type {const} */ ({
    /** `{token, expiresAt, storage, online, themeCss, bg, scheme, theme, capabilityContract}`. */
    frameInit: "moebius:frame-init",
    /** `{requestId, appId}`, then `{requestId, appId, ok, bytes | error}`. */
    moduleAck: "moebius:module-ack",
    moduleResult: "moebius:module-result",
    /** `{themeCss, bg, scheme, theme}`: the shell's colours changed. */
    frameTheme: "moebius:frame-theme",
    /** `{insets: {top, right, bottom, left}}`: px of the unsafe areas the frame's box overlaps. */
    frameInsets: "moebius:frame-insets",
    /** `{intent, nonce}`: a deep link for the app's own listener. */
    appIntent: "moebius:app-intent",
    /** `{visible}`: the page's visibility. */
    frameVisibility: "moebius:frame-visibility",
    /** `{online}`: whether the server can be reached. */
    onlineStatus: "moebius:online-status",
    /** The storage port itself (a transferred MessagePort). */
    storagePort: "moebius:storage-port",
    /** `{requestId, ok, result | error}`. */
    storageRpcResult: "moebius:storage-rpc-result",
    /** `{subscriptionId, value}` / `{payload}` / `{payload}`: storage notices. */
    storageChange: "moebius:storage-change",
    storageConflict: "moebius:storage-conflict",
    storageDeadLetter: "moebius:storage-dead-letter",
    /** `{value}`: whether the shell's chrome is hidden now. */
    immersiveState: "moebius:immersive-state",
    /** `{requestId}`: the answers to `nav-push`, the system Back and Forward. */
    navPushAck: "moebius:nav-push-ack",
    navPushRejected: "moebius:nav-push-rejected",
    navBack: "moebius:nav-back",
    navForward: "moebius:nav-forward",
    /** `{requestId, capability, …}`: a capability session's progress. */
    capabilityReady: "moebius:capability-ready",
    capabilityEvent: "moebius:capability-event",
    capabilityResult: "moebius:capability-result",
    capabilityError: "moebius:capability-error",
  }),
);

/** What every chat-embed message's name starts with. */
export const CHAT_EMBED_PREFIX = "moebius:chat-embed:";

/** Between `mobius.chat` (mobius-chat.js, in the app's frame) and the nested chat page (src/embed/). */
export const CHAT_EMBED = Object.freeze(
  /** @type {const} */ ({
    /** Chat page → app: the page is listening (the app mints a grant and sends `init`). */
    bootstrapReady: "moebius:chat-embed:bootstrap-ready",
    /** App → chat page: `{instanceId, chatId, authorizationId, bootstrapCapability, picker, …}`. */
    init: "moebius:chat-embed:init",
    /** Chat page → app: the session is open, or it failed. */
    ready: "moebius:chat-embed:ready",
    error: "moebius:chat-embed:error",
    /** Chat page → app: the session ends soon (the app authorizes again). */
    authExpiring: "moebius:chat-embed:auth-expiring",
    /** Chat page → app: the owner sent a message; the agent's turn ended. */
    messageSent: "moebius:chat-embed:message-sent",
    turnDone: "moebius:chat-embed:turn-done",
    /** Chat page → app `{nonce}`, and the app's answer `{nonce, context}`. */
    contextRequest: "moebius:chat-embed:context-request",
    contextResponse: "moebius:chat-embed:context-response",
    /** App → chat page: `{guidance}` for the agent. */
    guidance: "moebius:chat-embed:guidance",
  }),
);
