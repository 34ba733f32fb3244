import { describe, expect, it, vi } from "vitest";
import { createTelemetry } from "./telemetry";

describe("app telemetry", () => {
  it("reports a crash once a minute per app and message", () => {
    const send = vi.fn().mockResolvedValue(undefined);
    let clock = 0;
    const t = createTelemetry(send, () => clock);
    expect(t.reportError(1, "boom")).toBe(true);
    expect(t.reportError(1, "boom")).toBe(false);
    expect(t.reportError(2, "boom")).toBe(true);
    clock = 61_000;
    expect(t.reportError(1, "boom")).toBe(true);
    expect(send).toHaveBeenCalledTimes(3);
    expect(send).toHaveBeenCalledWith("/api/client-error", { message: "boom", source: "frame", app_id: 1 });
  });
});
