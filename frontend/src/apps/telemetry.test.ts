import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApiError, NO_RESPONSE } from "../api/client";
import { readFrameMessage } from "./broker";
import { createTelemetry, MAX_QUEUED_SIGNALS } from "./telemetry";

/** The signals of the `n`th request `send` got. */
const sent = (send: ReturnType<typeof vi.fn>, n: number) => (send.mock.calls[n]?.[1] as { signals: { name: string }[] }).signals;

describe("app telemetry", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

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

  it("sends signals in batches after a short delay", async () => {
    const send = vi.fn().mockResolvedValue(undefined);
    const t = createTelemetry(send);
    for (let i = 0; i < 60; i += 1) t.signal(3, "tap", { i });
    expect(send).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(2_000);
    await vi.advanceTimersByTimeAsync(0);
    expect(send).toHaveBeenCalledTimes(2);
    expect(sent(send, 0)[0]).toEqual({ name: "tap", payload: { i: 0 }, app_id: 3 });
    expect(sent(send, 0)).toHaveLength(50);
    expect(sent(send, 1)).toHaveLength(10);
    expect(t.pending()).toBe(0);
  });

  it("keeps a bounded queue while offline and drops what the server refuses", async () => {
    const send = vi.fn().mockRejectedValue(new ApiError(NO_RESPONSE, "network", "offline"));
    const t = createTelemetry(send);
    for (let i = 0; i < MAX_QUEUED_SIGNALS + 25; i += 1) t.signal(1, `s${i}`, null);
    expect(t.pending()).toBe(MAX_QUEUED_SIGNALS);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(send).toHaveBeenCalledTimes(1);
    expect(t.pending()).toBe(MAX_QUEUED_SIGNALS);
    // The oldest went first.
    expect(sent(send, 0)[0]?.name).toBe("s25");
    // A refusal will not change: that batch is dropped and the rest still go.
    send.mockRejectedValueOnce(new ApiError(400, "invalid_signal", "bad")).mockResolvedValue(undefined);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(t.pending()).toBe(0);
    expect(send).toHaveBeenCalledTimes(1 + MAX_QUEUED_SIGNALS / 50);
  });

  it("forwards a signal's payload only when it is small JSON", () => {
    const frame = {} as Window;
    const read = (data: unknown) => readFrameMessage({ source: frame, origin: "null", data }, frame, "https://m.example");
    expect(read({ type: "moebius:signal", name: "opened", payload: { tab: 2 } })).toEqual({
      type: "moebius:signal",
      name: "opened",
      payload: { tab: 2 },
    });
    expect(read({ type: "moebius:signal", name: "dump", payload: "x".repeat(5_000) })).toMatchObject({ payload: null });
    expect(read({ type: "moebius:signal", name: "n", payload: 10n })).toMatchObject({ payload: null });
    expect(read({ type: "moebius:signal", name: "" })).toBeNull();
  });
});
