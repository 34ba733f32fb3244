import { describe, expect, it } from "vitest";
import { actionsSupported, parsePayload, shellUrlFor } from "./push";

const origin = "https://mobius.example";

describe("push payloads", () => {
  it("keeps what the worker needs and at most two buttons", () => {
    const p = parsePayload(
      JSON.stringify({
        id: "n1", title: "Garden", body: "Which color?", icon: null, target: "/shell/?chat=c1&question=q-1", kind: "question", tag: "chat:c1",
        actions: [{ action: "option-0", title: "Blue" }, { action: "option-1", title: "Red" }, { action: "x", title: "X" }],
        chat_id: "c1", question_id: "q-1", action_token: "tok",
      }),
    );
    expect(p?.actions.map((a) => a.action)).toEqual(["option-0", "option-1"]);
    expect(p?.action_token).toBe("tok");
    expect(parsePayload("not json")).toBeNull();
    expect(parsePayload(JSON.stringify({ body: "no title" }))).toBeNull();
  });

  it("opens only known deep links, as shell routes", () => {
    expect(shellUrlFor("/shell/?chat=c1", origin)).toBe("/chat/c1");
    expect(shellUrlFor("/shell/?chat=c1&question=q-2", origin)).toBe("/chat/c1?question=q-2");
    expect(shellUrlFor(`${origin}/shell?app=7&intent=open:today`, origin)).toBe("/?app=7&intent=open:today");
    expect(shellUrlFor("https://evil.example/shell/?chat=c1", origin)).toBe("/");
    expect(shellUrlFor("/shell/?chat=../x", origin)).toBe("/");
    expect(shellUrlFor("javascript:alert(1)", origin)).toBe("/");
    expect(shellUrlFor(null, origin)).toBe("/");
  });

  it("knows when buttons are shown", () => {
    expect(actionsSupported(2)).toBe(true);
    expect(actionsSupported(0)).toBe(false);
    expect(actionsSupported(undefined)).toBe(false);
  });
});
