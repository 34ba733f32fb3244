//! The shell-wide event stream (`GET /api/events/system`): keeps the chat and app lists fresh
//! while the shell is open, reconnecting with backoff. Events only invalidate (the lists
//! refetch), except that a freshly built app is announced so its chat can open the preview.

import { useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";
import { appsKey } from "../api/apps";
import { chatsKey } from "../api/chats";
import { ApiError, reportUnauthorized } from "../api/client";
import type { SystemEvent } from "../api/types";
import { readToken } from "../auth/token";
import { backoffDelay } from "../chat/reconnect";
import { runStream } from "../chat/sse";
import { announceAppPreview } from "./appEvents";
import { useOnline } from "./online";
import { notificationsKey, pushDevicesKey } from "../api/push";

/** A system event, or an announcement posted to `/api/notify` (free-form, typed by `type`). */
type ShellEvent = SystemEvent | { type: string; app_id?: unknown; chat_id?: unknown };

export function useSystemEvents(): void {
  const queryClient = useQueryClient();
  const online = useOnline();
  useEffect(() => {
    if (!online) return;
    let cancelled = false;
    let attempt: AbortController | null = null;
    let timer: ReturnType<typeof setTimeout> | null = null;
    let refresh: ReturnType<typeof setTimeout> | null = null;
    const stale = new Set<"chats" | "apps">();
    const invalidate = (what: "chats" | "apps") => {
      stale.add(what);
      if (refresh !== null) return;
      refresh = setTimeout(() => {
        refresh = null;
        if (stale.has("chats")) void queryClient.invalidateQueries({ queryKey: chatsKey });
        if (stale.has("apps")) void queryClient.invalidateQueries({ queryKey: appsKey });
        stale.clear();
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
            let event: ShellEvent;
            try {
              event = JSON.parse(message.data) as ShellEvent;
            } catch {
              return;
            }
            if (touchesNotifications(event.type)) void queryClient.invalidateQueries({ queryKey: notificationsKey });
            if (event.type === "push_devices_changed") void queryClient.invalidateQueries({ queryKey: pushDevicesKey });
            // (Re)opening may have missed events: refresh once then too.
            if (event.type === "system_stream_open") {
              invalidate("chats");
              invalidate("apps");
            } else if (event.type.startsWith("chat_")) invalidate("chats");
            else if (event.type.startsWith("app_")) {
              invalidate("apps");
              const built = event.type === "app_preview_ready" || event.type === "app_updated" || event.type === "app_created";
              if (built && "app_id" in event && typeof event.app_id === "number" && "chat_id" in event && typeof event.chat_id === "string") {
                announceAppPreview({ appId: event.app_id, chatId: event.chat_id });
              }
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

/** Events after which the bell and the badge recount (a question waiting changes a chat). */
function touchesNotifications(type: string | undefined): boolean {
  return type === "system_stream_open" || type === "notifications_changed" || type === "notification_created" || !!type?.startsWith("chat_");
}
