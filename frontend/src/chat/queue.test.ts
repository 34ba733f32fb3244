import type { PendingMessage } from "../api/types";
import { describe, expect, it } from "vitest";
import { composerButtons, enterAction, joinSteer, resolveStopResend, snapshotQueue, takeQueued, type ComposerInputs } from "./queue";

describe("stop re-send rule", () => {
  const snapshot = snapshotQueue([
    { role: "user", ts: 1, cid: "a", content: "first" },
    { role: "user", ts: 1, cid: "b", content: "second" },
    { role: "user", ts: 1, cid: "c", content: "third" },
  ]);

  it("re-sends only what the server cleared, as one message joined by newlines, in server order", () => {
    expect(resolveStopResend(snapshot, ["c", "a"])).toBe("third\nfirst");
  });

  it("never re-sends a cid the tray did not hold, nor one twice", () => {
    expect(resolveStopResend(snapshot, ["x", "b", "b"])).toBe("second");
  });

  it("re-sends nothing when nothing was cleared", () => {
    expect(resolveStopResend(snapshot, [])).toBeNull();
    expect(resolveStopResend(snapshot, undefined)).toBeNull();
    expect(resolveStopResend(snapshotQueue([{ role: "user", ts: 1, cid: "w", content: "  " }]), ["w"])).toBeNull();
  });
});

describe("steering queued messages", () => {
  it("joins the rows in tray order with a blank line, skipping blank ones", () => {
    expect(joinSteer([{ role: "user", ts: 1, cid: "a", content: "first" }, { role: "user", ts: 1, cid: "b", content: " " }, { role: "user", ts: 1, cid: "c", content: "second\nline" }])).toBe("first\n\nsecond\nline");
    expect(joinSteer([])).toBeNull();
    expect(joinSteer([{ role: "user", ts: 1, cid: "w", content: "\n" }])).toBeNull();
  });
});

describe("taking queued rows back to steer them", () => {
  const rows: PendingMessage[] = [
    { role: "user", ts: 1, cid: "a", content: "first" },
    { role: "user", ts: 1, cid: "b", content: "already running" },
    { role: "user", ts: 1, cid: "c", content: "unreachable" },
    { role: "user", ts: 1, cid: "d", content: "last" },
  ];

  it("steers only what the server gave back, in tray order, and reports the queue as it stands", async () => {
    const calls: string[] = [];
    const seen: string[][] = [];
    let queue = rows.map((r) => r.cid);
    const result = await takeQueued(
      rows,
      (cid) => {
        calls.push(cid);
        if (cid === "c") return Promise.reject(new Error("network"));
        const removed = cid !== "b";
        queue = queue.filter((q) => q !== cid || !removed);
        return Promise.resolve({ removed, pending_messages: queue.map((q) => ({ role: "user", ts: 1, cid: q, content: q })) });
      },
      (pending) => seen.push(pending.map((p) => p.cid)),
    );
    expect(calls).toEqual(["a", "b", "c", "d"]);
    expect(result.text).toBe("first\n\nlast");
    expect(result.unreachable).toBe(1);
    expect(result.pending?.map((p) => p.cid)).toEqual(["b", "c"]);
    expect(seen).toHaveLength(3);
  });

  it("a row the server no longer had sends nothing", async () => {
    const result = await takeQueued([{ role: "user", ts: 1, cid: "x", content: "gone" }], () => Promise.resolve({ removed: false, pending_messages: [] }));
    expect(result).toEqual({ text: null, unreachable: 0, pending: [] });
  });
});

describe("composer buttons", () => {
  const idle: ComposerInputs = { running: false, questionOpen: false, hasText: false, queued: 0, offline: false, stopping: false, steering: false };
  const running: ComposerInputs = { ...idle, running: true };

  it("idle: only Send, enabled by text and the network", () => {
    expect(composerButtons(idle)).toEqual({ stop: null, primary: { kind: "send", disabled: true } });
    expect(composerButtons({ ...idle, hasText: true })).toEqual({ stop: null, primary: { kind: "send", disabled: false } });
    expect(composerButtons({ ...idle, hasText: true, offline: true }).primary?.disabled).toBe(true);
  });

  it("a turn runs: Stop stays, typed text queues, an empty box with a queue offers Steer", () => {
    expect(composerButtons(running)).toEqual({ stop: { disabled: false }, primary: null });
    expect(composerButtons({ ...running, hasText: true })).toEqual({ stop: { disabled: false }, primary: { kind: "queue", disabled: false } });
    expect(composerButtons({ ...running, queued: 2 })).toEqual({ stop: { disabled: false }, primary: { kind: "steer", disabled: false } });
    // Typed text wins over the queue: Enter/Send queue it, Ctrl+Enter steers it.
    expect(composerButtons({ ...running, queued: 2, hasText: true }).primary?.kind).toBe("queue");
  });

  it("Steer waits while a steer or a stop is on its way or offline; Stop is never hidden by it", () => {
    for (const busy of [{ steering: true }, { stopping: true }, { offline: true }]) {
      const buttons = composerButtons({ ...running, queued: 1, ...busy });
      expect(buttons.primary).toEqual({ kind: "steer", disabled: true });
      expect(buttons.stop).not.toBeNull();
    }
  });

  it("an open question keeps Stop, never offers Steer and disables sending", () => {
    const open = { ...running, questionOpen: true, queued: 1 };
    expect(composerButtons(open)).toEqual({ stop: { disabled: false }, primary: null });
    expect(composerButtons({ ...open, hasText: true }).primary).toEqual({ kind: "queue", disabled: true });
    expect(composerButtons({ ...idle, questionOpen: true, hasText: true })).toEqual({ stop: { disabled: false }, primary: { kind: "send", disabled: true } });
  });
});

describe("the Enter key", () => {
  const desk = { touch: false, running: false, questionOpen: false };
  it("sends on desktop, makes a newline with Shift or on touch, and Ctrl/Cmd+Enter always sends", () => {
    expect(enterAction({ shift: false, mod: false }, desk)).toBe("submit");
    expect(enterAction({ shift: true, mod: false }, desk)).toBe("newline");
    expect(enterAction({ shift: false, mod: false }, { ...desk, touch: true })).toBe("newline");
    expect(enterAction({ shift: false, mod: true }, { ...desk, touch: true })).toBe("submit");
  });

  it("during a turn plain Enter still queues and Ctrl/Cmd+Enter steers (not while a question is open)", () => {
    const turn = { ...desk, running: true };
    expect(enterAction({ shift: false, mod: false }, turn)).toBe("submit");
    expect(enterAction({ shift: false, mod: true }, turn)).toBe("steer");
    expect(enterAction({ shift: false, mod: true }, { ...turn, touch: true })).toBe("steer");
    expect(enterAction({ shift: false, mod: true }, { ...turn, questionOpen: true })).toBe("submit");
  });
});
