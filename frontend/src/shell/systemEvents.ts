//! The shell-wide event stream (`GET /api/events/system`): keeps the chat and app lists fresh
//! while the shell is open, reconnecting with backoff. An event about a chat refreshes that
//! chat's row (whether or not its page is loaded); app events invalidate the app list, and a
//! freshly built app is announced so its chat can open the preview.

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
import { refreshChatRow } from "./useChatList";
import { useOnline } from "./online";
import { notificationsKey, pushDevicesKey } from "../api/push";
import { schedulesKey } from "../api/schedules";
import { shellKey } from "../api/shell";
import { themeVersionsKey } from "../api/theme";
import { refreshCustomTheme } from "./customTheme";
import { noteShellUpdated } from "./shellBuild";

/** A system event, or an announcement posted to `/api/notify` (free-form, typed by `type`). */
type ShellEvent = SystemEvent | { type: string; app_id?: unknown; chat_id?: unknown };

/** Chats refreshed one by one per burst of events; a bigger burst reloads the first page. */
const MAX_ROWS_PER_BURST = 20;

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
    // The latest event about each chat of this burst.
    const rows = new Map<string, { type: string; title?: string }>();
    const flush = () => {
      if (refresh !== null) return;
      refresh = setTimeout(() => {
        refresh = null;
        if (stale.has("chats") || rows.size > MAX_ROWS_PER_BURST) void queryClient.invalidateQueries({ queryKey: chatsKey });
        else for (const [id, event] of rows) void refreshChatRow(queryClient, id, event);
        if (stale.has("apps")) void queryClient.invalidateQueries({ queryKey: appsKey });
        stale.clear();
        rows.clear();
      }, 150);
    };
    const invalidate = (what: "chats" | "apps") => {
      stale.add(what);
      flush();
    };
    const chatChanged = (id: string, event: { type: string; title?: string }) => {
      rows.set(id, event);
      flush();
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
            if (event.type === "schedules_changed") void queryClient.invalidateQueries({ queryKey: schedulesKey });
            // Another build of the shell is served: offer a reload (when idle).
            if (event.type === "shell_updated" && "build" in event) {
              const build = typeof event.build === "number" ? event.build : null;
              noteShellUpdated(build, "reason" in event && typeof event.reason === "string" ? event.reason : null);
            }
            if (event.type === "shell_updated" || event.type === "system_stream_open") void queryClient.invalidateQueries({ queryKey: shellKey });
            // The platform's theme: restyle now (the stream's opening covers what was missed).
            if (event.type === "theme_updated" || event.type === "system_stream_open") {
              void refreshCustomTheme();
              void queryClient.invalidateQueries({ queryKey: themeVersionsKey });
            }
            // (Re)opening may have missed events: refresh once then too.
            if (event.type === "system_stream_open" || event.type === "resync") {
              invalidate("chats");
              invalidate("apps");
            } else if (event.type.startsWith("chat_")) {
              if ("chat_id" in event && typeof event.chat_id === "string") {
                chatChanged(event.chat_id, { type: event.type, ...("title" in event && typeof event.title === "string" ? { title: event.title } : {}) });
              } else invalidate("chats");
            }
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
