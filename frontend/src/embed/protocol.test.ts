import { describe, expect, it } from "vitest";
import { appStateBlock, asInit, sessionMatches, TurnGate, warnIn } from "./protocol";

const INIT = {
  type: "moebius:chat-embed:init",
  instanceId: "7:1:1700000000000",
  chatId: "c-1",
  authorizationId: "a-1",
  bootstrapCapability: "x".repeat(43),
  picker: false,
  guidance: "g".repeat(400),
};

describe("chat-embed protocol", () => {
  it("accepts a well-formed INIT and refuses anything else", () => {
    const init = asInit(INIT);
    expect(init?.picker).toBe(false);
    expect(init?.guidance).toHaveLength(300);
    expect(asInit({ ...INIT, bootstrapCapability: "short" })).toBeNull();
    expect(asInit({ ...INIT, type: "moebius:other" })).toBeNull();
    expect(asInit({ ...INIT, chatId: "" })).toBeNull();
    expect(asInit("nope")).toBeNull();
  });

  it("checks the session is the one asked for", () => {
    const init = asInit(INIT)!;
    const session = { token: "t", chat_id: "c-1", instance_id: INIT.instanceId, role: "participant" };
    expect(sessionMatches(session, init)).toBe(true);
    expect(sessionMatches({ ...session, chat_id: "c-2" }, init)).toBe(false);
    expect(sessionMatches({ ...session, role: "owner" }, init)).toBe(false);
  });

  it("warns two minutes before expiry, at least a second ahead, ten minutes when unknown", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(warnIn("2026-01-01T00:15:00Z", now)).toBe(13 * 60 * 1000);
    expect(warnIn("2026-01-01T00:01:00Z", now)).toBe(1000);
    expect(warnIn(undefined, now)).toBe(10 * 60 * 1000);
  });

  it("reports one finished turn per send", () => {
    const gate = new TurnGate();
    expect(gate.done()).toBe(false);
    gate.sent();
    gate.sent();
    expect(gate.done()).toBe(true);
    expect(gate.done()).toBe(false);
  });
});

describe("app state for the agent", () => {
  it("turns the app's context into an escaped <app_state> block", () => {
    expect(appStateBlock({ lesson: "Fractions <b>", page: 3, empty: "", nothing: null, "bad key!": "x" })).toBe(
      "<app_state>\n<lesson>Fractions &lt;b></lesson>\n<page>3</page>\n<bad_key_>x</bad_key_>\n</app_state>",
    );
    expect(appStateBlock({})).toBeNull();
    expect(appStateBlock(null)).toBeNull();
    expect(appStateBlock(["a"])).toBeNull();
  });
});
