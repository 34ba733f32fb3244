import { describe, expect, it } from "vitest";
import { applyLocalChange, MAX_FRAME_LOCAL_CHARS, readFrameMessage } from "./broker";

const frame = {} as Window;
const other = {} as Window;
const SHELL = "https://m.example";
const from = (data: unknown, source: unknown = frame, origin = "null") => readFrameMessage({ source, origin, data }, frame, SHELL);

describe("frame message validation", () => {
  it("accepts a well-formed message from the mounted frame's window", () => {
    expect(from({ type: "moebius:frame-mounted" })).toEqual({ type: "moebius:frame-mounted" });
    expect(from({ type: "moebius:module-request", requestId: "m1", appId: 7, retry: true })).toEqual({
      type: "moebius:module-request",
      requestId: "m1",
      retry: true,
    });
  });

  it("ignores the same message from any other window, whatever appId it claims", () => {
    expect(from({ type: "moebius:storage-rpc", requestId: "r", method: "get", args: ["a.json"], appId: 1 }, other)).toBeNull();
    expect(from({ type: "moebius:frame-mounted" }, null)).toBeNull();
    expect(from({ type: "moebius:frame-mounted" }, window)).toBeNull();
    // No mounted frame yet: nothing is accepted.
    expect(readFrameMessage({ source: frame, origin: "null", data: { type: "moebius:frame-mounted" } }, null, SHELL)).toBeNull();
  });

  it("accepts only an opaque origin or the shell's own", () => {
    expect(from({ type: "moebius:frame-hello" }, frame, SHELL)).not.toBeNull();
    expect(from({ type: "moebius:frame-hello" }, frame, "https://evil.example")).toBeNull();
  });

  it("drops unknown types and malformed payloads", () => {
    expect(from("moebius:frame-mounted")).toBeNull();
    expect(from(null)).toBeNull();
    expect(from({ type: "moebius:owner-token" })).toBeNull();
    // A storage call with an id is always answered: bad arguments become an error reply.
    expect(from({ type: "moebius:storage-rpc", requestId: "r", method: "get", args: "a.json" })).toEqual({ type: "moebius:storage-rpc", requestId: "r", method: "get", args: [] });
    expect(from({ type: "moebius:storage-rpc", requestId: "r", method: "x".repeat(100), args: [] })).toMatchObject({ method: "" });
    expect(from({ type: "moebius:storage-rpc", requestId: "", method: "get", args: [] })).toBeNull();
    expect(from({ type: "moebius:nav-push", requestId: { evil: true }, label: "x" })).toBeNull();
    expect(from({ type: "moebius:nav-pop", requestId: 5 })).toBeNull();
    expect(from({ type: "moebius:capability-open", requestId: "c".repeat(121), capability: "media.speech" })).toBeNull();
    expect(from({ type: "moebius:signal", name: "old" })).toBeNull();
    expect(from({ type: "moebius:module-request" })).toBeNull();
    expect(from({ type: "moebius:open-chat", chatId: "../settings" })).toBeNull();
    expect(from({ type: "moebius:open-app", appId: "7" })).toEqual({ type: "moebius:open-app", appId: 7, intent: null });
    expect(from({ type: "moebius:open-app", appId: "notes", intent: "today" })).toEqual({ type: "moebius:open-app", appId: "notes", intent: "today" });
    expect(from({ type: "moebius:open-app", appId: 3, intent: "a b" })).toEqual({ type: "moebius:open-app", appId: 3, intent: null });
    expect(from({ type: "moebius:open-app", appId: -1 })).toBeNull();
    expect(from({ type: "moebius:open-app", appId: "0" })).toBeNull();
    expect(from({ type: "moebius:open-app", appId: "../x" })).toBeNull();
    expect(from({ type: "moebius:app-intent-applied", nonce: "n1" })).toEqual({ type: "moebius:app-intent-applied", nonce: "n1" });
    expect(from({ type: "moebius:app-intent-applied", nonce: "" })).toBeNull();
    expect(from({ type: "moebius:install-app", source: "  " })).toBeNull();
    expect(from({ type: "moebius:install-app", source: " https://example.com/a.git " })).toEqual({ type: "moebius:install-app", source: "https://example.com/a.git" });
    expect(from({ type: "moebius:install-app", source: "x".repeat(2049) })).toBeNull();
    expect(from({ type: "moebius:manage-app", action: "update", appId: 4 })).toEqual({ type: "moebius:manage-app", action: "update", appId: 4 });
    expect(from({ type: "moebius:manage-app", action: "uninstall", appId: 9 })).toEqual({ type: "moebius:manage-app", action: "uninstall", appId: 9 });
    expect(from({ type: "moebius:manage-app", action: "delete-data", appId: 4 })).toBeNull();
    expect(from({ type: "moebius:manage-app", action: "update", appId: "4" })).toBeNull();
    expect(from({ type: "moebius:manage-app", action: "uninstall", appId: 0 })).toBeNull();
    expect(from({ type: "moebius:storage-set", key: "k", value: 5 })).toBeNull();
  });

  it("accepts immersive requests only with a boolean value", () => {
    expect(from({ type: "moebius:immersive", value: true })).toEqual({ type: "moebius:immersive", value: true });
    expect(from({ type: "moebius:immersive", value: false, extra: "x" })).toEqual({ type: "moebius:immersive", value: false });
    for (const value of [undefined, null, "true", 1, 0, {}, [true]]) {
      expect(from({ type: "moebius:immersive", value })).toBeNull();
    }
    expect(from({ type: "moebius:immersive" })).toBeNull();
    expect(from({ type: "moebius:immersive", value: true }, other)).toBeNull();
    expect(from({ type: "moebius:immersive", value: true }, frame, "https://evil.example")).toBeNull();
  });

  it("bounds free text", () => {
    const long = "x".repeat(50_000);
    const message = from({ type: "moebius:new-chat", title: "t", draft: long });
    expect(message?.type === "moebius:new-chat" && message.draft.length).toBe(20_000);
    const error = from({ type: "moebius:frame-error", error: { code: 5, message: long } });
    expect(error).toEqual({ type: "moebius:frame-error", error: { code: "load_failed", message: "x".repeat(4_000) } });
  });
});

describe("virtual localStorage", () => {
  it("applies set, remove and clear", () => {
    let store: Record<string, string> | null = {};
    store = applyLocalChange(store, { type: "moebius:storage-set", key: "a", value: "1" });
    store = applyLocalChange(store ?? {}, { type: "moebius:storage-set", key: "b", value: "2" });
    expect(store).toEqual({ a: "1", b: "2" });
    expect(applyLocalChange(store ?? {}, { type: "moebius:storage-remove", key: "a" })).toEqual({ b: "2" });
    expect(applyLocalChange(store ?? {}, { type: "moebius:storage-clear" })).toEqual({});
  });

  it("refuses a change that would overflow the per-app cap", () => {
    const big = "x".repeat(MAX_FRAME_LOCAL_CHARS);
    expect(applyLocalChange({}, { type: "moebius:storage-set", key: "k", value: big })).toBeNull();
  });
});
