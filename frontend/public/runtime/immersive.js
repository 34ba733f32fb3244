// `window.mobius.immersive`: the app asks (`moebius:immersive {value, mode: "bar", appId}`); the
// shell hides its chrome around the frame (or not) and answers `moebius:immersive-state {value}`,
// which is what `hidden` reports (the shell is the source of truth).

import { on, post, safeCall } from "./bridge.js";
import { FROM_FRAME, TO_FRAME } from "./messages.js";

/** How long a press must last before `immersive.holdToToggle` toggles. */
const HOLD_DEFAULT_MS = 450;
/** A press that moves further than this (a scroll, a drag) is not a long-press. */
const HOLD_SLOP_PX = 10;

const immersiveListeners = new Set();
/** Immersive as the shell last said. */
let immersiveHidden = false;
/** What this frame last asked for and has no answer to yet (so `toggle()` twice flips twice). */
let immersiveRequested = null;
let appId = null;
let listening = false;

function setImmersiveState(value) {
  if (value === immersiveHidden) return;
  immersiveHidden = value;
  for (const cb of [...immersiveListeners]) safeCall(cb, value);
}

function requestImmersive(value) {
  const next = Boolean(value);
  immersiveRequested = next;
  // Outside Möbius there is no chrome to hide: the state is simply this frame's own.
  if (!post({ type: FROM_FRAME.immersive, value: next, mode: "bar", appId })) {
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

export const immersive = {
  /** True while the shell's chrome around this app is hidden. */
  get hidden() {
    return immersiveHidden;
  },
  /** Asks the shell to hide (true) or show (false) its chrome; `hidden` follows its answer. Returns `hidden`. */
  set(value) {
    requestImmersive(value);
    return immersiveHidden;
  },
  toggle() {
    requestImmersive(!(immersiveRequested ?? immersiveHidden));
    return immersiveHidden;
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

/** Starts following the shell's answers; `id` is the app id the requests carry. */
export function configureImmersive(id) {
  appId = id;
  if (listening || typeof window === "undefined") return;
  listening = true;
  window.addEventListener("keydown", onImmersiveKey);
  on(TO_FRAME.immersiveState, (msg) => {
    if (typeof msg.value !== "boolean") return;
    immersiveRequested = null;
    setImmersiveState(msg.value);
  });
}
