import { describe, expect, it } from "vitest";
import { whenText } from "./when";

const at = (y: number, m: number, d: number, h = 0, min = 0) => new Date(y, m - 1, d, h, min).getTime();

describe("whenText", () => {
  const now = at(2026, 3, 12, 15, 30);
  it("says how long ago within the hour", () => {
    expect(whenText(now - 20_000, now, "en-GB")).toBe("now");
    expect(whenText(now - 5 * 60_000, now, "en-GB")).toBe("5 min ago");
    expect(whenText(new Date(now - 59 * 60_000).toISOString(), now, "en-GB")).toBe("59 min ago");
  });
  it("gives hours, then the time of day, today", () => {
    expect(whenText(now - 2 * 3_600_000, now, "en-GB")).toBe("2 h ago");
    expect(whenText(at(2026, 3, 12, 8, 5), now, "en-GB")).toBe("08:05");
  });
  it("names yesterday and the days of the last week", () => {
    expect(whenText(at(2026, 3, 11, 14, 5), now, "en-GB")).toBe("Yesterday 14:05");
    expect(whenText(at(2026, 3, 9, 9, 0), now, "en-GB")).toBe("Mon 09:00");
  });
  it("gives the date further back, with the year when it is another", () => {
    expect(whenText(at(2026, 1, 2, 9, 0), now, "en-GB")).toBe("2 Jan");
    expect(whenText(at(2025, 12, 24, 9, 0), now, "en-GB")).toBe("24 Dec 2025");
  });
  it("is empty for a time it cannot read", () => {
    expect(whenText("not a date", now)).toBe("");
  });
});
