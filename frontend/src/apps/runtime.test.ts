// window.mobius.immersive and the frame's --mobius-safe-* variables, as an app sees them: the
// runtime (public/mobius-runtime.js, compiled into every app) talks to a stand-in parent window.
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";

interface Immersive {
  readonly hidden: boolean;
  set: (value: boolean) => void;
  toggle: () => void;
  subscribe: (callback: (hidden: boolean) => void) => () => void;
  holdToToggle: (element: Element, options?: { ms?: number }) => () => void;
}
interface RuntimeModule {
  initMobiusRuntime: (config: Record<string, unknown>) => { immersive: Immersive };
}

const RUNTIME = "../../public/mobius-runtime.js";
const parent = { postMessage: vi.fn() };
let immersive: Immersive;

/** What the runtime sent its parent, by type. */
const sent = (type: string) =>
  parent.postMessage.mock.calls.map((call) => call[0] as Record<string, unknown>).filter((message) => message.type === type);

/** A message from the shell (the parent window). */
const fromShell = (data: unknown, source: unknown = parent) => {
  window.dispatchEvent(new MessageEvent("message", { data, source: source as Window }));
};

beforeAll(async () => {
  const runtime = (await import(/* @vite-ignore */ RUNTIME)) as RuntimeModule;
  immersive = runtime.initMobiusRuntime({ appId: 5, parentOrigin: "" }).immersive;
});

beforeEach(() => {
  vi.spyOn(window, "parent", "get").mockReturnValue(parent as unknown as Window);
  parent.postMessage.mockClear();
});

afterEach(() => {
  // Back to "shown" for the next test.
  fromShell({ type: "moebius:immersive-state", value: false });
});

describe("window.mobius.immersive", () => {
  it("asks the shell, and follows the shell's answer rather than its own wish", () => {
    immersive.set(true);
    expect(sent("moebius:immersive")).toEqual([{ type: "moebius:immersive", value: true, mode: "bar", appId: "5" }]);
    expect(immersive.hidden).toBe(false);
    fromShell({ type: "moebius:immersive-state", value: true });
    expect(immersive.hidden).toBe(true);
    // The shell may refuse or end it on its own (Escape, Back, the exit button).
    fromShell({ type: "moebius:immersive-state", value: false });
    expect(immersive.hidden).toBe(false);
  });

  it("ignores state from any window but the parent, and malformed state", () => {
    fromShell({ type: "moebius:immersive-state", value: true }, window);
    fromShell({ type: "moebius:immersive-state", value: "true" });
    expect(immersive.hidden).toBe(false);
  });

  it("toggles from what it asked last, so two quick toggles cancel out", () => {
    immersive.toggle();
    immersive.toggle();
    expect(sent("moebius:immersive").map((m) => m.value)).toEqual([true, false]);
  });

  it("calls subscribers once right away, then on every change, until they unsubscribe", () => {
    const seen: boolean[] = [];
    const stop = immersive.subscribe((hidden) => seen.push(hidden));
    expect(seen).toEqual([false]);
    fromShell({ type: "moebius:immersive-state", value: true });
    fromShell({ type: "moebius:immersive-state", value: true });
    fromShell({ type: "moebius:immersive-state", value: false });
    stop();
    fromShell({ type: "moebius:immersive-state", value: true });
    expect(seen).toEqual([false, true, false]);
  });

  it("asks to leave on Escape, unless the app handled the key", () => {
    fromShell({ type: "moebius:immersive-state", value: true });
    const handled = new KeyboardEvent("keydown", { key: "Escape", cancelable: true });
    handled.preventDefault();
    window.dispatchEvent(handled);
    expect(sent("moebius:immersive")).toEqual([]);
    window.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", cancelable: true }));
    expect(sent("moebius:immersive")).toEqual([{ type: "moebius:immersive", value: false, mode: "bar", appId: "5" }]);
  });

  it("holdToToggle: a long press toggles and eats its click; a tap or a scroll does not", () => {
    vi.useFakeTimers();
    try {
      const element = document.createElement("div");
      document.body.appendChild(element);
      const clicks = vi.fn();
      element.addEventListener("click", clicks);
      const stop = immersive.holdToToggle(element, { ms: 300 });
      const press = (type: string, x = 10, y = 10) =>
        element.dispatchEvent(new PointerEvent(type, { bubbles: true, cancelable: true, isPrimary: true, pointerType: "touch", clientX: x, clientY: y }));

      // A tap: short, then its click goes through.
      press("pointerdown");
      vi.advanceTimersByTime(100);
      press("pointerup");
      element.click();
      vi.advanceTimersByTime(1_000);
      expect(sent("moebius:immersive")).toEqual([]);
      expect(clicks).toHaveBeenCalledTimes(1);

      // A scroll: the finger moves, nothing toggles.
      press("pointerdown");
      press("pointermove", 10, 60);
      vi.advanceTimersByTime(1_000);
      expect(sent("moebius:immersive")).toEqual([]);

      // A long press: toggles once, and the click it ends with does not reach the app.
      press("pointerdown");
      vi.advanceTimersByTime(300);
      expect(sent("moebius:immersive")).toEqual([{ type: "moebius:immersive", value: true, mode: "bar", appId: "5" }]);
      press("pointerup");
      element.click();
      expect(clicks).toHaveBeenCalledTimes(1);

      // After cleanup a long press does nothing.
      stop();
      press("pointerdown");
      vi.advanceTimersByTime(1_000);
      expect(sent("moebius:immersive")).toHaveLength(1);
      element.remove();
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("the frame's safe-area variables", () => {
  it("start at 0px and follow frame-insets, validated and clamped", async () => {
    const root = document.documentElement.style;
    // The bootstrap is a classic script: run it as the frame document would.
    const { default: source } = await import("../../public/app-frame.js?raw");
    const config = document.createElement("script");
    config.id = "mobius-frame-config";
    config.type = "application/json";
    config.textContent = JSON.stringify({ appId: 5, origin: "http://frame.test" });
    document.body.appendChild(config);
    vi.useFakeTimers();
    try {
      // The test's window (with its stand-in parent) is the frame's: run the source right here.
      // eslint-disable-next-line @typescript-eslint/no-implied-eval
      (new Function(source) as () => void)();
      expect(["top", "right", "bottom", "left"].map((edge) => root.getPropertyValue(`--mobius-safe-${edge}`))).toEqual(["0px", "0px", "0px", "0px"]);
      const insets = (value: unknown) =>
        window.dispatchEvent(new MessageEvent("message", { data: { type: "moebius:frame-insets", insets: value }, source: parent as unknown as Window, origin: "http://frame.test" }));
      insets({ top: 47.333, right: -5, bottom: 1e6, left: "12" });
      expect(["top", "right", "bottom", "left"].map((edge) => root.getPropertyValue(`--mobius-safe-${edge}`))).toEqual(["47.33px", "0px", "200px", "0px"]);
      insets(null);
      expect(root.getPropertyValue("--mobius-safe-top")).toBe("47.33px");
      // Only the parent may set them.
      window.dispatchEvent(new MessageEvent("message", { data: { type: "moebius:frame-insets", insets: { top: 1 } }, source: window, origin: "http://frame.test" }));
      expect(root.getPropertyValue("--mobius-safe-top")).toBe("47.33px");
    } finally {
      vi.clearAllTimers();
      vi.useRealTimers();
      config.remove();
    }
  });
});
