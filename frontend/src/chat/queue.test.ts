import { describe, expect, it } from "vitest";
import { resolveStopResend, snapshotQueue } from "./queue";

describe("stop re-send rule", () => {
  const snapshot = snapshotQueue([
    { cid: "a", content: "first" },
    { cid: "b", content: "second" },
    { cid: "c", content: "third" },
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
    expect(resolveStopResend(snapshotQueue([{ cid: "w", content: "  " }]), ["w"])).toBeNull();
  });
});
