// `window.mobius.nav.open(label, onBack | {onBack, onForward}, onForward)`: an in-app screen as a
// real history entry of the shell, so the system Back gesture (and the browser's Back button)
// closes it and calls `onBack`. The shell answers each push with `nav-push-ack` (it installed the
// entry) or `nav-push-rejected`; an entry with `onForward` can come back with the browser's Forward.

import { hasParent, nextId, on, post, safeCall } from "./bridge.js";
import { FROM_FRAME, TO_FRAME } from "./messages.js";

/** The shell must answer a push within this long. */
export const NAV_ACK_TIMEOUT_MS = 5_000;
/** A push that timed out is remembered this long, so a late ack can be undone with a pop. */
const LATE_ACK_MEMORY_MS = 30_000;

/** Every entry the shell may still answer about, by request id. */
const entries = new Map();
/** Owned entries in the order they were opened (active ones, then dormant ones above them). */
let stack = [];

function forget(entry) {
  entry.disposed = true;
  stack = stack.filter((e) => e !== entry);
  if (entry.status !== "timeout" && entry.status !== "cancelled") entries.delete(entry.requestId);
}

function settle(entry, status) {
  if (entry.status !== "pending") return;
  entry.status = status;
  clearTimeout(entry.timer);
  entry.resolve({ status });
  if (status === "timeout" || status === "cancelled") {
    // Kept a while: an ack arriving now is answered with a pop.
    setTimeout(() => entries.delete(entry.requestId), LATE_ACK_MEMORY_MS);
  } else if (status !== "owned") entries.delete(entry.requestId);
}

function handlersOf(second, third) {
  if (typeof second === "function") return { onBack: second, onForward: typeof third === "function" ? third : null };
  if (second && typeof second === "object") {
    return {
      onBack: typeof second.onBack === "function" ? second.onBack : null,
      onForward: typeof second.onForward === "function" ? second.onForward : typeof third === "function" ? third : null,
    };
  }
  return { onBack: null, onForward: typeof third === "function" ? third : null };
}

function close(entry) {
  if (entry.closed) return;
  entry.closed = true;
  if (entry.status === "pending") {
    settle(entry, "cancelled");
    return;
  }
  if (entry.status !== "owned" || !entry.active) return;
  entry.active = false;
  // Closed from inside its own onForward: the shell hears a rejection instead of a pop.
  if (entry.restoring) return;
  post({ type: FROM_FRAME.navPop, requestId: entry.requestId });
  // A reversible entry waits (dormant) for the browser's Forward; any other is done.
  if (!entry.reversible) forget(entry);
}

/** Opens an in-app screen: `{ready: Promise<boolean>, outcome: Promise<{status}>, close()}`. */
export function open(label, onBackOrHandlers, onForwardArg) {
  const { onBack, onForward } = handlersOf(onBackOrHandlers, onForwardArg);
  // A new screen discards the Forward branch: dormant entries cannot come back any more.
  for (const dormant of stack.filter((e) => !e.active)) forget(dormant);
  const entry = {
    requestId: `nav-${Date.now()}-${nextId("n").split("-").pop()}`,
    label: typeof label === "string" && label ? label.slice(0, 200) : "app-detail",
    onBack,
    onForward,
    reversible: typeof onForward === "function",
    status: "pending",
    active: false,
    closed: false,
    disposed: false,
    compensated: false,
    restoring: false,
    timer: null,
    resolve: null,
  };
  const outcome = new Promise((resolve) => {
    entry.resolve = resolve;
  });
  const ready = outcome.then((o) => o.status === "owned");
  const handle = { ready, outcome, close: () => close(entry) };
  if (!hasParent()) {
    settle(entry, "unavailable");
    return handle;
  }
  entries.set(entry.requestId, entry);
  entry.timer = setTimeout(() => settle(entry, "timeout"), NAV_ACK_TIMEOUT_MS);
  let sent;
  try {
    sent = post({ type: FROM_FRAME.navPush, label: entry.label, requestId: entry.requestId, reversible: entry.reversible });
  } catch {
    sent = false;
  }
  if (!sent) settle(entry, "error");
  return handle;
}

function topActive() {
  for (let i = stack.length - 1; i >= 0; i--) if (stack[i].active) return stack[i];
  return null;
}

on(TO_FRAME.navPushAck, (msg) => {
  const entry = entries.get(msg.requestId);
  if (!entry) return;
  if (entry.status === "pending") {
    entry.active = true;
    stack.push(entry);
    settle(entry, "owned");
    return;
  }
  // Owned by the shell after this frame gave up on it: give the history entry back.
  if ((entry.status === "timeout" || entry.status === "cancelled") && !entry.compensated) {
    entry.compensated = true;
    post({ type: FROM_FRAME.navPop, requestId: entry.requestId });
  }
});

on(TO_FRAME.navPushRejected, (msg) => {
  const entry = entries.get(msg.requestId);
  if (entry && entry.status === "pending") settle(entry, "rejected");
});

on(TO_FRAME.navBack, (msg) => {
  const entry = topActive();
  if (!entry) return;
  if (typeof msg.requestId === "string" && msg.requestId && msg.requestId !== entry.requestId) return;
  // The shell already left the entry: close it without a pop, then tell the app.
  entry.active = false;
  entry.closed = true;
  if (!entry.reversible) forget(entry);
  if (entry.onBack) safeCall(entry.onBack);
});

on(TO_FRAME.navForward, (msg) => {
  const requestId = msg.requestId;
  const entry = typeof requestId === "string" ? entries.get(requestId) : undefined;
  const reject = () => post({ type: FROM_FRAME.navForwardRejected, requestId });
  if (!entry || !entry.reversible || entry.disposed || entry.status !== "owned") return reject();
  if (entry.active) return post({ type: FROM_FRAME.navForwardAck, requestId });
  entry.active = true;
  entry.closed = false;
  entry.restoring = true;
  try {
    entry.onForward();
  } catch (error) {
    entry.active = false;
    entry.closed = true;
    setTimeout(() => {
      throw error;
    });
    return reject();
  } finally {
    entry.restoring = false;
  }
  // The app closed it again while coming back: nothing to come back to.
  if (!entry.active) return reject();
  post({ type: FROM_FRAME.navForwardAck, requestId });
});

/** Forgets every entry (a runtime for another app identity starts). */
export function resetNav() {
  for (const entry of entries.values()) clearTimeout(entry.timer);
  entries.clear();
  stack = [];
}

export const nav = { open };
