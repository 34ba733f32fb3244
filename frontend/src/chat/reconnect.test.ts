import { describe, expect, it } from "vitest";
import { backoffDelay, connNote, connReducer, initialConn, shouldReconnectOnWake, type ConnEvent, type ConnState } from "./reconnect";

const run = (...events: ConnEvent[]) => events.reduce<ConnState>(connReducer, initialConn);

describe("reconnect state machine", () => {
  it("backs off 1 s, 2 s, 4 s … and caps at 30 s", () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 20].map(backoffDelay)).toEqual([0, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
  });

  it("counts failures until the stream is live again", () => {
    let s = run({ type: "connect", now: 0 }, { type: "lost", now: 10 }, { type: "connect", now: 1010 }, { type: "lost", now: 1020 });
    expect(s).toMatchObject({ phase: "waiting", failures: 2, downSince: 0 });
    s = connReducer(s, { type: "live" });
    expect(s).toEqual({ phase: "live", failures: 0, downSince: null, wasLive: true });
  });

  it("shows nothing for the first 1.5 s, then Reconnecting… (Connecting… before the first success)", () => {
    const first = run({ type: "connect", now: 0 });
    expect(connNote(first, 1000)).toBeNull();
    expect(connNote(first, 1600)).toEqual({ text: "Connecting…", offerRetry: false });
    const dropped = run({ type: "connect", now: 0 }, { type: "live" }, { type: "lost", now: 5000 });
    expect(connNote(dropped, 6000)).toBeNull();
    expect(connNote(dropped, 6600)).toEqual({ text: "Reconnecting…", offerRetry: false });
    expect(connNote(connReducer(dropped, { type: "live" }), 9000)).toBeNull();
  });

  it("offers Retry after three failures in a row; Retry resets the count", () => {
    const s = run({ type: "connect", now: 0 }, { type: "lost", now: 1 }, { type: "lost", now: 2 }, { type: "lost", now: 3 });
    expect(connNote(s, 5000)?.offerRetry).toBe(true);
    expect(connReducer(s, { type: "retry_now" }).failures).toBe(0);
  });

  it("offline holds still (the offline banner speaks instead) and online resumes", () => {
    let s = run({ type: "connect", now: 0 }, { type: "live" }, { type: "offline", now: 10 });
    expect(s.phase).toBe("offline");
    expect(connNote(s, 99_999)).toBeNull();
    expect(connReducer(s, { type: "connect", now: 20 })).toBe(s);
    expect(connReducer(s, { type: "lost", now: 20 })).toBe(s);
    s = connReducer(s, { type: "online" });
    expect(s.phase).toBe("waiting");
  });

  it("on wake, keeps a live stream that read recently and replaces a silent one", () => {
    const live = run({ type: "connect", now: 0 }, { type: "live" });
    expect(shouldReconnectOnWake(live, 100_000, 110_000)).toBe(false);
    expect(shouldReconnectOnWake(live, 100_000, 200_000)).toBe(true);
    expect(shouldReconnectOnWake(run({ type: "connect", now: 0 }, { type: "lost", now: 1 }), 0, 5)).toBe(true);
    expect(shouldReconnectOnWake(initialConn, 0, 5)).toBe(false);
  });
});
