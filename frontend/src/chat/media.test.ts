import { describe, expect, it } from "vitest";
import { chatOfFileUrl, formatSize, isImageType, uploadUrl, withToken } from "./media";

describe("chat media", () => {
  it("recognises a chat's file URLs and nothing else", () => {
    expect(chatOfFileUrl("/api/chats/c1/media/plot-1.png")).toBe("c1");
    expect(chatOfFileUrl("/api/chats/c1/uploads/a.pdf")).toBe("c1");
    expect(chatOfFileUrl("/api/chats/c1/media/../secret")).toBeNull();
    expect(chatOfFileUrl("/api/chats/c1/tool-output/x")).toBeNull();
    expect(chatOfFileUrl("https://example.com/api/chats/c1/media/a.png")).toBeNull();
  });

  it("adds the media token (and the preview) to a file URL", () => {
    expect(withToken(uploadUrl("c 1", "a.png"), "t.k", true)).toBe("/api/chats/c%201/uploads/a.png?token=t.k&preview=true");
    expect(isImageType("image/webp")).toBe(true);
    expect(isImageType("image/svg+xml")).toBe(false);
    expect(formatSize(2.5 * 1024 * 1024)).toBe("2.5 MB");
    expect(formatSize(2048)).toBe("2 KB");
  });
});
