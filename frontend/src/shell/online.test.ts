import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type * as OnlineModuleNs from "./online";

type OnlineModule = typeof OnlineModuleNs;

let onLine = true;
let healthAnswers: Array<"fail" | number> = [];
let probes = 0;

async function freshModule(startOnline: boolean): Promise<OnlineModule> {
  onLine = startOnline;
  vi.resetModules();
  return import("./online");
}

/** Lets pending promise callbacks (the probe's fetch) run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

beforeEach(() => {
  vi.useFakeTimers();
  probes = 0;
  healthAnswers = [];
  vi.spyOn(navigator, "onLine", "get").mockImplementation(() => onLine);
  vi.stubGlobal(
    "fetch",
    vi.fn((url: string) => {
      expect(url).toBe("/api/health");
      probes++;
      const answer = healthAnswers.shift() ?? "fail";
      if (answer === "fail") return Promise.reject(new TypeError("Failed to fetch"));
      return Promise.resolve(new Response("{}", { status: answer }));
    }),
  );
});

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

describe("online", () => {
  it("re-probes within a second when the first probe after `online` fails", async () => {
    const online = await freshModule(false);
    expect(online.onlineStore.get()).toBe(false);
    onLine = true;
    healthAnswers = ["fail", 200];
    window.dispatchEvent(new Event("online"));
    await settle();
    expect(probes).toBe(1);
    expect(online.onlineStore.get()).toBe(false);
    await vi.advanceTimersByTimeAsync(online.PROBE_BACKOFF_FIRST_MS);
    expect(probes).toBe(2);
    expect(online.onlineStore.get()).toBe(true);
  });

  it("backs off to a cap of a few seconds while the server stays away, and stops probing when offline", async () => {
    const online = await freshModule(false);
    onLine = true;
    window.dispatchEvent(new Event("online"));
    await settle();
    const gaps: number[] = [];
    let last = probes;
    let elapsed = 0;
    while (gaps.length < 8) {
      await vi.advanceTimersByTimeAsync(50);
      elapsed += 50;
      if (probes !== last) {
        gaps.push(elapsed);
        elapsed = 0;
        last = probes;
      }
    }
    expect(gaps[0]).toBeLessThan(1_000);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(online.PROBE_BACKOFF_MAX_MS);
    expect(gaps[gaps.length - 1]).toBe(online.PROBE_BACKOFF_MAX_MS);

    onLine = false;
    window.dispatchEvent(new Event("offline"));
    const before = probes;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(probes).toBe(before);
    expect(online.onlineStore.get()).toBe(false);
  });

  it("counts any answer from the server as online, but not a gateway error", async () => {
    const online = await freshModule(false);
    onLine = true;
    online.noteResponse(502);
    expect(online.onlineStore.get()).toBe(false);
    online.noteResponse(404);
    expect(online.onlineStore.get()).toBe(true);
  });

  it("shares one probe among callers that ask at the same time", async () => {
    const online = await freshModule(true);
    healthAnswers = [200];
    await Promise.all([online.recheckOnline(), online.recheckOnline(), online.recheckOnline()]);
    expect(probes).toBe(1);
    expect(online.onlineStore.get()).toBe(true);
  });
});
