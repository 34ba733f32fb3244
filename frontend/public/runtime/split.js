// `window.mobius.split(opts)`: lays out "app content + chat" in one mount. The mount gets
// `data-split-state` (`pill`: content full, chat collapsed; `split`; `full`: chat full),
// `data-orientation` (`side` when at least 600 px wide, else `portrait`) and the content size as
// `--cs-content-h` (portrait) or `--cs-content-w` (side); a 44 px separator between them can be
// dragged, flicked, or moved with Home/End/ArrowUp/ArrowDown.

import { invalidArgument } from "./errors.js";

const SIDE_MIN_WIDTH_PX = 600;
const HANDLE_PX = 44;
const KEY_STEP = 0.04;
const DRAG_DEAD_ZONE_PX = 24;
const FLICK_PX_PER_MS = 0.4;
const STATES = ["pill", "split", "full"];

function readPersisted(key) {
  if (!key) return null;
  try {
    const parsed = JSON.parse(sessionStorage.getItem(key) || "null");
    return parsed && typeof parsed === "object" ? parsed : null;
  } catch {
    return null;
  }
}

export function split(options) {
  const opts = options && typeof options === "object" ? options : {};
  const mount = opts.mount;
  if (!mount || typeof mount.appendChild !== "function" || !mount.style) throw invalidArgument("split(opts): opts.mount must be a DOM element");
  const num = (value, fallback) => (typeof value === "number" && Number.isFinite(value) ? value : fallback);
  const minContent = Math.max(0, num(opts.minContentPx, 120));
  const minChat = Math.max(0, num(opts.minChatPx, 96));
  const persistKey = typeof opts.persistKey === "string" && opts.persistKey ? opts.persistKey : null;
  const saved = readPersisted(persistKey);
  let ratio = Math.min(Math.max(num(saved?.ratio, num(opts.defaultRatio, 0.65)), 0), 1);
  let state = STATES.includes(saved?.state) ? saved.state : "split";
  let destroyed = false;

  const handle = document.createElement("div");
  handle.setAttribute("role", "separator");
  handle.setAttribute("data-split-role", "handle");
  handle.setAttribute("aria-label", "Resize");
  handle.tabIndex = 0;
  handle.style.cssText = `flex:0 0 ${HANDLE_PX}px;min-height:${HANDLE_PX}px;min-width:${HANDLE_PX}px;touch-action:none;cursor:row-resize;`;
  mount.appendChild(handle);

  const side = () => (mount.offsetWidth || 0) >= SIDE_MIN_WIDTH_PX;
  const extent = () => Math.max(0, (side() ? mount.offsetWidth : mount.offsetHeight) || 0);

  function layout() {
    if (destroyed) return;
    const isSide = side();
    if (isSide && state === "pill") state = "split";
    const size = extent();
    let content;
    if (state === "pill") content = size;
    else if (state === "full") content = 0;
    else content = Math.min(Math.max(ratio * size, Math.min(minContent, size)), Math.max(size - minChat, 0));
    mount.setAttribute("data-split-state", state);
    mount.setAttribute("data-orientation", isSide ? "side" : "portrait");
    mount.style.removeProperty(isSide ? "--cs-content-h" : "--cs-content-w");
    mount.style.setProperty(isSide ? "--cs-content-w" : "--cs-content-h", `${Math.round(content)}px`);
    handle.style.cursor = isSide ? "col-resize" : "row-resize";
    handle.setAttribute("aria-orientation", isSide ? "vertical" : "horizontal");
    handle.setAttribute("aria-valuenow", String(Math.round((state === "full" ? 0 : state === "pill" ? 1 : ratio) * 100)));
    const contentEl = mount.querySelector('[data-split-role="content"]');
    if (contentEl) contentEl.style.pointerEvents = state === "full" ? "none" : "";
    if (persistKey) {
      try {
        sessionStorage.setItem(persistKey, JSON.stringify({ ratio, state }));
      } catch {
        // Not kept; the layout still applies.
      }
    }
  }

  function setState(next, nextRatio) {
    if (!STATES.includes(next)) throw invalidArgument(`split.setState: state must be one of ${STATES.join(", ")}`);
    state = next;
    if (typeof nextRatio === "number" && Number.isFinite(nextRatio)) ratio = Math.min(Math.max(nextRatio, 0), 1);
    layout();
  }

  const onKey = (event) => {
    const steps = { ArrowUp: -KEY_STEP, ArrowDown: KEY_STEP, ArrowLeft: -KEY_STEP, ArrowRight: KEY_STEP };
    if (event.key === "Home") setState("full");
    else if (event.key === "End") setState(side() ? "split" : "pill", side() ? 1 : ratio);
    else if (event.key in steps) setState("split", (state === "full" ? 0 : state === "pill" ? 1 : ratio) + steps[event.key]);
    else return;
    event.preventDefault();
  };

  let drag = null;
  const position = (event) => {
    const box = mount.getBoundingClientRect();
    return side() ? event.clientX - box.left : event.clientY - box.top;
  };
  const onDown = (event) => {
    if (!event.isPrimary) return;
    drag = { start: position(event), moved: false, last: position(event), lastAt: event.timeStamp, velocity: 0 };
    handle.setPointerCapture?.(event.pointerId);
  };
  const onMove = (event) => {
    if (!drag) return;
    const at = position(event);
    if (!drag.moved && Math.abs(at - drag.start) < DRAG_DEAD_ZONE_PX) return;
    drag.moved = true;
    const dt = event.timeStamp - drag.lastAt;
    if (dt > 0) drag.velocity = (at - drag.last) / dt;
    drag.last = at;
    drag.lastAt = event.timeStamp;
    const size = extent();
    if (size > 0) {
      state = "split";
      ratio = Math.min(Math.max(at / size, 0), 1);
      layout();
    }
  };
  const onUp = () => {
    if (!drag) return;
    const { moved, velocity } = drag;
    drag = null;
    if (!moved) return;
    const size = extent();
    if (velocity <= -FLICK_PX_PER_MS) setState("full");
    else if (velocity >= FLICK_PX_PER_MS) setState(side() ? "split" : "pill", side() ? 1 : ratio);
    else if (ratio * size < minContent / 2) setState("full");
    else if (!side() && size - ratio * size < minChat / 2) setState("pill");
    else layout();
  };
  handle.addEventListener("keydown", onKey);
  handle.addEventListener("pointerdown", onDown);
  handle.addEventListener("pointermove", onMove);
  handle.addEventListener("pointerup", onUp);
  handle.addEventListener("pointercancel", onUp);
  const observer = typeof ResizeObserver === "function" ? new ResizeObserver(() => layout()) : null;
  observer?.observe(mount);
  layout();

  return {
    setState,
    destroy() {
      if (destroyed) return;
      destroyed = true;
      observer?.disconnect();
      handle.remove();
      for (const name of ["data-split-state", "data-orientation"]) mount.removeAttribute(name);
      mount.style.removeProperty("--cs-content-h");
      mount.style.removeProperty("--cs-content-w");
    },
  };
}
