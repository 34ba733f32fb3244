import { describe, expect, it } from "vitest";
import {
  anchorAt,
  isAtBottom,
  isAway,
  modeAfterGrowth,
  modeAfterReaderScroll,
  modeAfterSend,
  scrollTopFor,
  shouldLoadOlder,
  spacerFor,
} from "./scroll";

const at = (scrollTop: number, scrollHeight = 2000, clientHeight = 800) => ({ scrollTop, scrollHeight, clientHeight });

describe("scroll rules", () => {
  it("is at the bottom only within the tolerance of the physical bottom", () => {
    expect(isAtBottom(at(1200))).toBe(true);
    expect(isAtBottom(at(1170))).toBe(true);
    expect(isAtBottom(at(1100))).toBe(false);
  });

  it("a send pins its message, wherever the reader was", () => {
    expect(modeAfterSend("cid:a")).toEqual({ kind: "pin", key: "cid:a" });
  });

  it("offers the way back to the newest content once the reader is well above it, the reserved room aside", () => {
    expect(isAway(at(1200), 0)).toBe(false);
    expect(isAway(at(1000), 0)).toBe(false);
    expect(isAway(at(900), 0)).toBe(true);
    // Scrolled up inside the room a pin reserves: still at the newest content.
    expect(isAway(at(700), 400)).toBe(false);
    expect(isAway(at(500), 400)).toBe(true);
  });

  it("the spacer lets the pinned row reach the top and shrinks as the reply grows", () => {
    expect(spacerFor(800, 1000, 1100)).toBe(700);
    expect(spacerFor(800, 1000, 1500)).toBe(300);
    expect(spacerFor(800, 1000, 2000)).toBe(0);
    expect(spacerFor(800, 1000, 1100, 60)).toBe(640);
  });

  it("a pin hands over to follow exactly when its room is used up", () => {
    const pin = { kind: "pin", key: "k" } as const;
    expect(modeAfterGrowth(pin, 10)).toBe(pin);
    expect(modeAfterGrowth(pin, 0)).toEqual({ kind: "follow" });
    expect(modeAfterGrowth({ kind: "hold" }, 0)).toEqual({ kind: "hold" });
  });

  it("scrolling up holds; reaching the bottom with no reserved room follows", () => {
    expect(modeAfterReaderScroll({ kind: "follow" }, at(600), 0)).toEqual({ kind: "hold" });
    expect(modeAfterReaderScroll({ kind: "hold" }, at(1200), 0)).toEqual({ kind: "follow" });
    expect(modeAfterReaderScroll({ kind: "hold" }, at(1200), 200)).toEqual({ kind: "hold" });
    const pin = { kind: "pin", key: "k" } as const;
    expect(modeAfterReaderScroll(pin, at(1200), 300)).toBe(pin);
    expect(modeAfterReaderScroll(pin, at(500), 300)).toEqual({ kind: "hold" });
  });

  it("saves the row under the top edge with its offset, and restores it", () => {
    const rows = [
      { key: "a", top: 0, bottom: 300 },
      { key: "b", top: 300, bottom: 900 },
      { key: "c", top: 900, bottom: 1000 },
    ];
    expect(anchorAt(rows, 450)).toEqual({ key: "b", offset: 150 });
    expect(anchorAt(rows, 2000)).toEqual({ key: "c", offset: 1100 });
    expect(anchorAt([], 10)).toBeNull();
    // The same row moved down by 500 px after older pages loaded above it.
    expect(scrollTopFor({ key: "b", offset: 150 }, 800, { scrollHeight: 3000, clientHeight: 800 })).toBe(950);
    expect(scrollTopFor({ key: "b", offset: 150 }, 2900, { scrollHeight: 3000, clientHeight: 800 })).toBe(2200);
  });

  it("loads older pages near the top, once at a time", () => {
    expect(shouldLoadOlder(at(100), true, false)).toBe(true);
    expect(shouldLoadOlder(at(100), true, true)).toBe(false);
    expect(shouldLoadOlder(at(100), false, false)).toBe(false);
    expect(shouldLoadOlder(at(1000), true, false)).toBe(false);
  });
});
