import { describe, expect, it } from "vitest";
import type { ChatSummary } from "../api/types";
import { compareChats, emptyChatList, withChat, withChatPatched, withFirstPage, withNextPage, withoutChat } from "./chatList";

const chat = (id: string, activity: number, pinned: number | null = null, extra: Partial<ChatSummary> = {}): ChatSummary => ({
  id,
  title: id,
  provider: null,
  created_at: 1,
  updated_at: 1,
  activity_at: activity,
  pinned_at: pinned,
  has_messages: true,
  running: false,
  pending_question_id: null,
  queued: 0,
  ...extra,
});

const ids = (chats: ChatSummary[]) => chats.map((c) => c.id);

describe("the drawer's chat list", () => {
  it("sorts like the server: pinned (oldest pin first), then newest activity, then id", () => {
    const list = [chat("b", 5), chat("p2", 1, 20), chat("a", 5), chat("c", 9), chat("p1", 1, 10)];
    expect(ids([...list].sort(compareChats))).toEqual(["p1", "p2", "c", "a", "b"]);
  });

  it("adds pages in order and knows when the last one came", () => {
    let list = withFirstPage(undefined, { chats: [chat("a", 9), chat("b", 8)], next_cursor: "r.8.b" });
    expect(ids(list.chats)).toEqual(["a", "b"]);
    expect(list.next).toBe("r.8.b");
    list = withNextPage(list, { chats: [chat("c", 7), chat("d", 6)], next_cursor: null });
    expect(ids(list.chats)).toEqual(["a", "b", "c", "d"]);
    expect(list.next).toBeNull();
    expect(list.frontier).toBeNull();
  });

  it("shows a chat announced by an event only once its place in the order is loaded", () => {
    const list = withFirstPage(undefined, { chats: [chat("a", 9), chat("b", 8)], next_cursor: "r.8.b" });
    // A chat far down the list changed: it waits for its page.
    expect(ids(withChat(list, chat("old", 1)).chats)).toEqual(["a", "b"]);
    // A chat that moved to the top (new activity, or pinned) shows at once, and only once.
    const moved = withChat(withChat(list, chat("old", 10)), chat("old", 11));
    expect(ids(moved.chats)).toEqual(["old", "a", "b"]);
    expect(ids(withChat(list, chat("z", 0, 5)).chats)).toEqual(["z", "a", "b"]);
    // When its page comes it is not repeated.
    const paged = withNextPage(moved, { chats: [chat("c", 7)], next_cursor: null });
    expect(ids(paged.chats)).toEqual(["old", "a", "b", "c"]);
  });

  it("a fresh first page drops rows gone from its range and keeps the deeper pages", () => {
    let list = withFirstPage(undefined, { chats: [chat("a", 9), chat("b", 8)], next_cursor: "r.8.b" });
    list = withNextPage(list, { chats: [chat("c", 7), chat("d", 6)], next_cursor: "r.6.d" });
    // "b" was deleted elsewhere, "n" is new.
    list = withFirstPage(list, { chats: [chat("n", 12), chat("a", 9), chat("c", 7)], next_cursor: "r.7.c" });
    expect(ids(list.chats)).toEqual(["n", "a", "c", "d"]);
    expect(list.next).toBe("r.6.d");
    // A complete first page is the whole list.
    list = withFirstPage(list, { chats: [chat("a", 9)], next_cursor: null });
    expect(ids(list.chats)).toEqual(["a"]);
    expect(list.next).toBeNull();
  });

  it("patches and removes rows, and leaves unknown ones alone", () => {
    const list = withFirstPage(emptyChatList, { chats: [chat("a", 9), chat("b", 8)], next_cursor: null });
    expect(withChatPatched(list, "b", (c) => ({ ...c, title: "B" })).chats[1]?.title).toBe("B");
    expect(withChatPatched(list, "x", (c) => ({ ...c, title: "X" }))).toBe(list);
    expect(ids(withChatPatched(list, "b", (c) => ({ ...c, pinned_at: 3 })).chats)).toEqual(["b", "a"]);
    expect(ids(withoutChat(list, "a").chats)).toEqual(["b"]);
    expect(withoutChat(list, "x")).toBe(list);
  });
});
