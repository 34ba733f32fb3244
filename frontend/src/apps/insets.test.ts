import { describe, expect, it } from "vitest";
import { deviceSafeArea, frameInsets, MAX_INSET_PX, NO_INSETS } from "./insets";

const PHONE = { width: 390, height: 844 };
/** A notched phone in portrait: status bar on top, home indicator below. */
const NOTCH = { top: 47, right: 0, bottom: 34, left: 0 };

const box = (left: number, top: number, width: number, height: number) => ({ left, top, width, height, right: left + width, bottom: top + height });

describe("frame insets", () => {
  it("gives a full-screen (immersive) frame every unsafe band", () => {
    expect(frameInsets(box(0, 0, 390, 844), PHONE, NOTCH)).toEqual(NOTCH);
  });

  it("gives none of the top band to a frame below the app bar, nor the bottom one above the padding", () => {
    // The bar is 56 px + the top inset; the pane's body pads the bottom inset.
    expect(frameInsets(box(0, 103, 390, 844 - 103 - 34), PHONE, NOTCH)).toEqual(NO_INSETS);
  });

  it("gives only the part a frame overlaps, per edge (landscape notch, pane on the right)", () => {
    const landscape = { width: 1280, height: 800 };
    const safe = { top: 0, right: 44, bottom: 21, left: 44 };
    // Beside the chat: touches the right edge and the bottom, not the left.
    expect(frameInsets(box(640, 56, 640, 744), landscape, safe)).toEqual({ top: 0, right: 44, bottom: 21, left: 0 });
    // Reaching 10 px into the bottom band.
    expect(frameInsets(box(640, 56, 640, 744 - 11), landscape, safe).bottom).toBe(10);
  });

  it("is zero on a screen without unsafe areas, and for a frame with no size", () => {
    expect(frameInsets(box(0, 0, 390, 844), PHONE, NO_INSETS)).toEqual(NO_INSETS);
    expect(frameInsets(box(0, 0, 0, 0), PHONE, NOTCH)).toEqual(NO_INSETS);
  });

  it("never exceeds the sane maximum", () => {
    const huge = { top: 500, right: 500, bottom: 500, left: 500 };
    expect(frameInsets(box(0, 0, 390, 844), PHONE, huge)).toEqual({ top: MAX_INSET_PX, right: MAX_INSET_PX, bottom: MAX_INSET_PX, left: MAX_INSET_PX });
  });

  it("reads the device's insets from a probe it removes again (zero where the browser has none)", () => {
    expect(deviceSafeArea()).toEqual(NO_INSETS);
    expect(document.querySelector(".safe-area-probe")).toBeNull();
  });
});
