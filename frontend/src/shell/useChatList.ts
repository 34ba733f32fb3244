//! The drawer's chat list in the query cache: the first page on load (and again whenever the
//! list is invalidated), later pages as the drawer scrolls, and single rows refreshed from the
//! system stream's events.

import { useQuery, useQueryClient, type QueryClient } from "@tanstack/react-query";
import { useCallback, useRef, useState } from "react";
import { chatsKey, fetchChatSummary, listChatsPage } from "../api/chats";
import { ApiError } from "../api/client";
import { withChat, withChatPatched, withFirstPage, withNextPage, withoutChat, type ChatList } from "./chatList";

/** After a page failed to load, the drawer waits this long before asking again. */
const RETRY_PAGE_MS = 2_000;

export interface ChatListState {
  list: ChatList | undefined;
  loading: boolean;
  /** Another page is on its way. */
  loadingMore: boolean;
  /** Asks for the next page (no-op while one is on its way, or when all are here). */
  loadMore: () => void;
}

/** The list query's options (shared with the start-up prefetch in `main.tsx`). */
export function chatListQuery(queryClient: QueryClient) {
  return {
    queryKey: chatsKey,
    queryFn: async ({ signal }: { signal: AbortSignal }) => withFirstPage(queryClient.getQueryData<ChatList>(chatsKey), await listChatsPage(null, signal)),
    staleTime: 10_000,
  };
}

export function useChatList(): ChatListState {
  const queryClient = useQueryClient();
  const query = useQuery(chatListQuery(queryClient));
  const [loadingMore, setLoadingMore] = useState(false);
  const inFlight = useRef<string | null>(null);
  const failedAt = useRef(0);
  const loadMore = useCallback(() => {
    const cursor = queryClient.getQueryData<ChatList>(chatsKey)?.next ?? null;
    if (cursor === null || inFlight.current !== null || Date.now() - failedAt.current < RETRY_PAGE_MS) return;
    inFlight.current = cursor;
    setLoadingMore(true);
    listChatsPage(cursor)
      .then((page) => {
        // A list reset meanwhile (a new first page with a shallower end) drops this page.
        queryClient.setQueryData<ChatList>(chatsKey, (current) => (current && current.next === cursor ? withNextPage(current, page) : current));
      })
      .catch(() => {
        failedAt.current = Date.now();
      })
      .finally(() => {
        inFlight.current = null;
        setLoadingMore(false);
      });
  }, [queryClient]);
  return { list: query.data, loading: query.isPending, loadingMore, loadMore };
}

/** Brings one chat's row up to date after an event about it (loaded or not). */
export async function refreshChatRow(queryClient: QueryClient, id: string, event: { type: string; title?: string }): Promise<void> {
  const update = (change: (list: ChatList) => ChatList) =>
    queryClient.setQueryData<ChatList>(chatsKey, (list) => (list ? change(list) : list));
  if (event.type === "chat_deleted") {
    update((list) => withoutChat(list, id));
    return;
  }
  if (event.type === "chat_renamed" && typeof event.title === "string") {
    const title = event.title;
    update((list) => withChatPatched(list, id, (chat) => ({ ...chat, title })));
  }
  try {
    const summary = await fetchChatSummary(id);
    update((list) => withChat(list, summary));
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) update((list) => withoutChat(list, id));
  }
}
