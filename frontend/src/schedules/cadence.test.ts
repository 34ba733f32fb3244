import { describe, expect, it } from "vitest";
import { buildCron, describeCron, formatWhen } from "./cadence";

describe("cadences in words", () => {
  it("names the common cadences and quotes the rest", () => {
    expect(describeCron("30 7 * * 1-5")).toBe("Weekdays at 07:30");
    expect(describeCron("0 9 * * 1")).toBe("Mondays at 09:00");
    expect(describeCron("5 18 * * *")).toBe("Every day at 18:05");
    expect(describeCron("*/15 * * * *")).toBe("Every 15 minutes");
    expect(describeCron("5 * * * *")).toBe("Every hour at :05");
    expect(describeCron("0 0 1 * *")).toBe("cron “0 0 1 * *”");
    expect(describeCron("0 7 * *")).toBe("cron “0 7 * *”");
  });

  it("builds crons from the form and refuses bad times", () => {
    expect(buildCron({ every: "weekdays", time: "07:30", weekday: 1 })).toBe("30 7 * * 1-5");
    expect(buildCron({ every: "day", time: "7:05", weekday: 1 })).toBe("5 7 * * *");
    expect(buildCron({ every: "week", time: "09:00", weekday: 0 })).toBe("0 9 * * 0");
    expect(buildCron({ every: "day", time: "24:00", weekday: 1 })).toBeNull();
    expect(buildCron({ every: "day", time: "", weekday: 1 })).toBeNull();
  });

  it("shows times in the schedule's zone and names it when it is not the device's", () => {
    const at = Date.UTC(2024, 5, 10, 11, 30);
    expect(formatWhen(at, "America/New_York", "America/New_York")).toMatch(/0?7:30/);
    expect(formatWhen(at, "Europe/Paris", "America/New_York")).toMatch(/(13:30|01:30 PM).*\(Europe\/Paris\)/);
  });
});
