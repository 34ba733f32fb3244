import { describe, expect, it } from "vitest";
import { limitWarning, nearLimit } from "../../api/settings";
import type { PlanWindow } from "../../api/types";
import { usageLine } from "./MessageRow";

const NOW = Date.UTC(2026, 11, 4, 12, 0);
const win = (id: string, used: number, resetsIn: number, status?: string): PlanWindow => ({
  id,
  label: id === "five_hour" ? "5-hour" : "Weekly",
  used_percent: used,
  resets_at: NOW + resetsIn,
  ...(status ? { status } : {}),
});

describe("the plan limit warning", () => {
  it("names the fullest window at 80 % or more, and nothing below", () => {
    expect(nearLimit([win("five_hour", 79, 3600_000), win("seven_day", 42, 86400_000)], NOW)).toBeNull();
    const near = nearLimit([win("five_hour", 91, 3600_000), win("seven_day", 85, 86400_000)], NOW);
    expect(near?.id).toBe("five_hour");
    expect(limitWarning(near!, NOW)).toMatch(/^91% of your 5-hour limit used · resets /);
  });

  it("says a refused window is reached, and forgets windows already reset", () => {
    const refused = nearLimit([win("five_hour", 100, 60_000, "rejected")], NOW);
    expect(limitWarning(refused!, NOW)).toMatch(/^5-hour limit reached/);
    expect(nearLimit([win("five_hour", 100, -1000)], NOW)).toBeNull();
  });
});

describe("a reply's usage line", () => {
  it("adds cached input to the input and shows the cost", () => {
    expect(usageLine({ input_tokens: 11, cache_read_tokens: 12_000, output_tokens: 456, cost_usd: 0.0512 })).toBe("12k in · 456 out · $0.0512");
    expect(usageLine({ output_tokens: 3 })).toBe("3 out");
    expect(usageLine({})).toBe("");
  });
});

describe("a paused turn's card", () => {
  it("says when it continues, or that the owner has to", async () => {
    const { pauseNote } = await import("./Blocks");
    const at = new Date();
    at.setHours(23, 59, 0, 0);
    expect(pauseNote({ kind: "usage_limit", resumes_at: at.getTime() })).toMatch(/^Continues at .*59/);
    expect(pauseNote({ kind: "usage_limit" })).toMatch(/send a message once the limit resets/);
    expect(pauseNote({ kind: "restart", resumes_at: at.getTime() })).toBe("Continuing by itself after the restart.");
  });
});
