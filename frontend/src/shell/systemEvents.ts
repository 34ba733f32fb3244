//! The shell-wide event stream (`GET /api/events/system`): keeps the chat list fresh while
//! the app is open, reconnecting with backoff. Events only invalidate; the list refetches.

import { useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";
import { chatsKey } from "../api/chats";
import { ApiError, reportUnauthorized } from "../api/client";
import { readToken } from "../auth/token";
import { backoffDelay } from "../chat/reconnect";
import { runStream } from "../chat/sse";
import { useOnline } from "./online";

export function useSystemEvents(): void {
  const queryClient = useQueryClient();
  const online = useOnline();
  useEffect(() => {
    if (!online) return;
    let cancelled = false;
    let attempt: AbortController | null = null;
    let timer: ReturnType<typeof setTimeout> | null = null;
    let refresh: ReturnType<typeof setTimeout> | null = null;
    const invalidate = () => {
      if (refresh !== null) return;
      refresh = setTimeout(() => {
        refresh = null;
        void queryClient.invalidateQueries({ queryKey: chatsKey });
      }, 150);
    };
    void (async () => {
      let failures = 0;
      while (!cancelled) {
        attempt = new AbortController();
        const token = readToken();
        const end = await runStream({
          url: "/api/events/system",
          token,
          lastEventId: null,
          signal: attempt.signal,
          onOpen: () => {
            failures = 0;
          },
          onMessage: (message) => {
            try {
              const event = JSON.parse(message.data) as { type?: string };
              // (Re)opening may have missed events: refresh once then too.
              if (event.type?.startsWith("chat_") || event.type === "system_stream_open") invalidate();
            } catch {
              // Not JSON: ignore.
            }
          },
        });
        if (cancelled) return;
        if (end.kind === "http" && end.status === 401) {
          reportUnauthorized(new ApiError(401, "unauthorized", "Session ended."), token);
          return;
        }
        failures += 1;
        await new Promise<void>((resolve) => {
          timer = setTimeout(resolve, backoffDelay(failures));
        });
      }
    })();
    return () => {
      cancelled = true;
      attempt?.abort();
      if (timer !== null) clearTimeout(timer);
      if (refresh !== null) clearTimeout(refresh);
    };
  }, [online, queryClient]);
}
