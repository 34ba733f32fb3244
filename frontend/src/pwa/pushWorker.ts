//! The service worker's notifications: `push` shows them, `notificationclick` answers a
//! question from its button (with the push's single-use action token, never the owner's) or
//! focuses an open window at the deep link, else opens one there.

import { DECISIONS_CACHE } from "./cachePolicy";
import { actionsSupported, decisionKey, MAX_KEPT_DECISIONS, parsePayload, shellUrlFor, type PushPayload } from "./push";

const ICON = "/icons/icon-192.png";

interface NotificationData {
  url: string;
  payload: PushPayload;
}

export function installPushHandlers(self: ServiceWorkerGlobalScope): void {
  self.addEventListener("push", (event: PushEvent) => {
    const payload = event.data ? parsePayload(event.data.text()) : null;
    if (!payload) return;
    const url = shellUrlFor(payload.target, self.location.origin);
    const maxActions = (Notification as unknown as { maxActions?: number }).maxActions;
    const options: NotificationOptions & { actions?: { action: string; title: string }[]; renotify?: boolean } = {
      body: payload.body ?? "",
      icon: payload.icon ?? ICON,
      data: { url, payload } satisfies NotificationData,
    };
    if (payload.tag) {
      options.tag = payload.tag;
      options.renotify = true;
    }
    if (actionsSupported(maxActions) && payload.actions.length > 0) {
      options.actions = payload.actions.map(({ action, title }) => ({ action, title }));
    }
    event.waitUntil(Promise.all([self.registration.showNotification(payload.title, options), keepDecision(payload)]));
  });

  self.addEventListener("notificationclick", (event: NotificationEvent) => {
    const data = event.notification.data as NotificationData | undefined;
    event.notification.close();
    if (!data) return;
    const { payload } = data;
    const chosen = payload.actions.find((a) => a.action === event.action);
    if (chosen && payload.action_token && payload.question_id) {
      event.waitUntil(answer(self, payload, chosen.action, data.url));
      return;
    }
    const url = chosen?.target ? shellUrlFor(chosen.target, self.location.origin) : data.url;
    event.waitUntil(openAt(self, url));
  });
}

/** Answers from the button; when that cannot work (expired, answered elsewhere, offline) the
 *  question opens instead, so the owner can still decide. */
async function answer(self: ServiceWorkerGlobalScope, payload: PushPayload, action: string, url: string): Promise<void> {
  try {
    const response = await fetch("/api/push/action", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      credentials: "omit",
      body: JSON.stringify({ token: payload.action_token, question_id: payload.question_id, action }),
    });
    if (response.ok) return;
  } catch {
    // offline: fall through to opening the question
  }
  await openAt(self, url);
}

/** Focuses a window of the app (a visible one first) at `url`, or opens one. */
async function openAt(self: ServiceWorkerGlobalScope, url: string): Promise<void> {
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  const client = windows.find((c) => c.visibilityState === "visible") ?? windows[0];
  if (client) {
    const navigated = await client.navigate(url).catch(() => null);
    await (navigated ?? client).focus().catch(() => undefined);
    return;
  }
  await self.clients.openWindow(url);
}

/** Keeps a question that buttons can answer, so its decision screen opens without the network
 *  (where the platform shows no buttons, iOS, the tap leads there). */
async function keepDecision(payload: PushPayload): Promise<void> {
  if (!payload.question_id || !payload.action_token) return;
  const cache = await caches.open(DECISIONS_CACHE);
  await cache.put(decisionKey(payload.question_id), new Response(JSON.stringify(payload), { headers: { "Content-Type": "application/json" } }));
  const keys = await cache.keys();
  await Promise.all(keys.slice(0, Math.max(0, keys.length - MAX_KEPT_DECISIONS)).map((k) => cache.delete(k)));
}
