//! The drawer's chat list as loaded so far, page by page, kept in the server's order (pinned
//! first, oldest pin first; then newest activity; ties by id). Pure functions: the shell keeps
//! the value in the query cache and feeds it pages, single summaries and removals.
//!
//! The list shows every known chat up to the last row the server has sent (the frontier); a
//! chat that now sorts after it (unpinned, or announced by an event but not reached yet) waits
//! for the page that holds it, so nothing shows twice or out of place.

import type { ChatListPage } from "../api/chats";
import type { ChatSummary } from "../api/types";

export interface ChatList {
  /** Known chats up to the frontier, in order. */
  chats: ChatSummary[];
  /** The cursor of the next page; null once the whole list is here. */
  next: string | null;
  /** The last row of the deepest page loaded (the frontier); null when the list is complete. */
  frontier: ChatSummary | null;
}

export const emptyChatList: ChatList = { chats: [], next: null, frontier: null };

/** The server's order. */
export function compareChats(a: ChatSummary, b: ChatSummary): number {
  const ap = a.pinned_at !== null;
  const bp = b.pinned_at !== null;
  if (ap !== bp) return ap ? -1 : 1;
  if (ap && a.pinned_at !== b.pinned_at) return (a.pinned_at ?? 0) - (b.pinned_at ?? 0);
  if (a.activity_at !== b.activity_at) return b.activity_at - a.activity_at;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function build(byId: Map<string, ChatSummary>, next: string | null, frontier: ChatSummary | null): ChatList {
  const limit = next === null ? null : frontier;
  const chats = [...byId.values()].filter((c) => limit === null || compareChats(c, limit) <= 0).sort(compareChats);
  return { chats, next, frontier: next === null ? null : frontier };
}

/** The deeper of two frontiers (null means complete, the deepest). */
function deeper(a: { next: string | null; frontier: ChatSummary | null }, b: { next: string | null; frontier: ChatSummary | null }) {
  if (a.next === null) return a;
  if (b.next === null) return b;
  if (a.frontier === null) return b;
  if (b.frontier === null) return a;
  return compareChats(a.frontier, b.frontier) >= 0 ? a : b;
}

/** Adds the page that followed `list.next`. */
export function withNextPage(list: ChatList, page: ChatListPage): ChatList {
  const byId = new Map(list.chats.map((c) => [c.id, c]));
  for (const chat of page.chats) byId.set(chat.id, chat);
  const frontier = page.chats[page.chats.length - 1] ?? list.frontier;
  return build(byId, page.next_cursor, frontier);
}

/**
 * Takes a fresh first page. Rows of the old list that sorted within the page's range and are
 * not on it are gone (deleted, hidden) or moved (an event brings those back); rows past it stay
 * loaded, and the frontier stays the deeper one.
 */
export function withFirstPage(list: ChatList | undefined, page: ChatListPage): ChatList {
  const last = page.chats[page.chats.length - 1];
  const byId = new Map<string, ChatSummary>();
  if (list && page.next_cursor !== null && last) {
    for (const chat of list.chats) if (compareChats(chat, last) > 0) byId.set(chat.id, chat);
  }
  for (const chat of page.chats) byId.set(chat.id, chat);
  const fresh = { next: page.next_cursor, frontier: last ?? null };
  const keep = list && byId.size > page.chats.length ? deeper(list, fresh) : fresh;
  return build(byId, keep.next, keep.frontier);
}

/** Adds or replaces one chat (shown only if it sorts within what is loaded). */
export function withChat(list: ChatList, chat: ChatSummary): ChatList {
  const byId = new Map(list.chats.map((c) => [c.id, c]));
  byId.set(chat.id, chat);
  return build(byId, list.next, list.frontier);
}

/** Changes one loaded chat in place (an optimistic edit); unknown ids change nothing. */
export function withChatPatched(list: ChatList, id: string, patch: (chat: ChatSummary) => ChatSummary): ChatList {
  const current = list.chats.find((c) => c.id === id);
  return current ? withChat(list, patch(current)) : list;
}

/** Removes one chat. */
export function withoutChat(list: ChatList, id: string): ChatList {
  return list.chats.some((c) => c.id === id) ? { ...list, chats: list.chats.filter((c) => c.id !== id) } : list;
}
