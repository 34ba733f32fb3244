import { describe, expect, it } from "vitest";
import type { ChatSummary } from "../api/types";
import { visibleChats } from "./Drawer";

const chat = (id: string, extra: Partial<ChatSummary> = {}): ChatSummary => ({
  id,
  title: id,
  provider: "claude",
  created_at: 1,
  updated_at: 1,
  activity_at: 1,
  pinned_at: null,
  has_messages: true,
  running: false,
  pending_question_id: null,
  queued: 0,
  ...extra,
});

describe("drawer rows", () => {
  it("lists pinned chats apart, and hides empty chats unless one is open", () => {
    const list = [chat("p", { pinned_at: 5 }), chat("a"), chat("empty", { has_messages: false }), chat("open", { has_messages: false })];
    const { pinned, recent } = visibleChats(list, "open");
    expect(pinned.map((c) => c.id)).toEqual(["p"]);
    expect(recent.map((c) => c.id)).toEqual(["a", "open"]);
  });
});
