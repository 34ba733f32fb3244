// Resets browser state between tests so each one starts signed out.
import { cleanup } from "@testing-library/react";
import { afterEach } from "vitest";

// jsdom has no layout: a ResizeObserver that never fires is enough for the views.
class NoopResizeObserver {
  observe(): void {}
  unobserve(): void {}
  disconnect(): void {}
}
globalThis.ResizeObserver ??= NoopResizeObserver as unknown as typeof ResizeObserver;

afterEach(() => {
  cleanup();
  localStorage.clear();
});
