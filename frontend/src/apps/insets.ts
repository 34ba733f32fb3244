//! Safe-area insets for an app frame: how far each edge of the frame reaches into the device's
//! unsafe areas (notch, status bar, home indicator, rounded corners). The shell measures the
//! device's `env(safe-area-inset-*)` with a hidden probe element and sends the frame only the part
//! its own box overlaps (`moebius:frame-insets`), which app-frame.js turns into
//! `--mobius-safe-top/right/bottom/left`. Full screen on a phone or immersive: all four edges;
//! beside the chat on a desktop: usually nothing.

export interface Insets {
  top: number;
  right: number;
  bottom: number;
  left: number;
}

/** The frame clamps to this too; anything larger is not a real device inset. */
export const MAX_INSET_PX = 200;

export const NO_INSETS: Insets = { top: 0, right: 0, bottom: 0, left: 0 };

function px(value: string): number {
  const n = Number.parseFloat(value);
  return Number.isFinite(n) && n > 0 ? n : 0;
}

/** The device's `env(safe-area-inset-*)` in CSS px, read from a hidden probe element. */
export function deviceSafeArea(): Insets {
  const probe = document.createElement("div");
  probe.className = "safe-area-probe";
  probe.setAttribute("aria-hidden", "true");
  document.body.appendChild(probe);
  try {
    const style = getComputedStyle(probe);
    return { top: px(style.paddingTop), right: px(style.paddingRight), bottom: px(style.paddingBottom), left: px(style.paddingLeft) };
  } finally {
    probe.remove();
  }
}

type Box = Pick<DOMRectReadOnly, "top" | "right" | "bottom" | "left" | "width" | "height">;

const part = (overlap: number, inset: number) => Math.round(Math.min(Math.max(overlap, 0), inset, MAX_INSET_PX) * 100) / 100;

/**
 * How much of each unsafe band (`safe`, along the edges of a `viewport`-sized screen) the frame's
 * box `rect` covers. A frame that is not laid out (no size) needs none.
 */
export function frameInsets(rect: Box, viewport: { width: number; height: number }, safe: Insets): Insets {
  if (rect.width <= 0 || rect.height <= 0) return NO_INSETS;
  return {
    top: part(safe.top - rect.top, safe.top),
    right: part(rect.right - (viewport.width - safe.right), safe.right),
    bottom: part(rect.bottom - (viewport.height - safe.bottom), safe.bottom),
    left: part(safe.left - rect.left, safe.left),
  };
}

/** The insets `frame` needs right now. */
export function measureFrameInsets(frame: Element): Insets {
  return frameInsets(frame.getBoundingClientRect(), { width: window.innerWidth, height: window.innerHeight }, deviceSafeArea());
}
