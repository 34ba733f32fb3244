import { describe, expect, it } from "vitest";
import { isShellData } from "./cachePolicy";

const u = (path: string) => new URL(path, "https://m.example");

describe("service worker cache policy", () => {
  it("keeps the chat list and chat pages for offline reading", () => {
    expect(isShellData(u("/api/chats"))).toBe(true);
    expect(isShellData(u("/api/chats/abc?limit=20"))).toBe(true);
    expect(isShellData(u("/api/chats/abc?limit=20&before=40"))).toBe(true);
  });

  it("never caches streams, runs, tool output, writes or other API routes", () => {
    expect(isShellData(u("/api/chats/abc/stream"))).toBe(false);
    expect(isShellData(u("/api/chats/abc/runs"))).toBe(false);
    expect(isShellData(u("/api/chats/abc/tool-output/t1"))).toBe(false);
    expect(isShellData(u("/api/chats"), "POST")).toBe(false);
    expect(isShellData(u("/api/auth/session"))).toBe(false);
    expect(isShellData(u("/api/events/system"))).toBe(false);
  });
});
