//! Notifications: this device's push subscription, the switches, the devices, the centre.

import { apiFetch } from "./client";
import type { NotificationItem, NotificationKind } from "./protocol.gen";

export type { NotificationItem };

export const notificationsKey = ["notifications"] as const;
export const unreadKey = ["notifications", "unread"] as const;
export const pushPrefsKey = ["push", "prefs"] as const;
export const pushDevicesKey = ["push", "devices"] as const;

export interface PushDevice {
  id: number;
  label: string;
  service: string | null;
  endpoint: string;
  created_at: number;
  last_ok_at: number | null;
}

/** The switches Settings shows (every kind but `test`), in order. */
export const KIND_LABELS: Record<Exclude<NotificationKind, "test">, string> = {
  turn_done: "A turn finished",
  turn_failed: "A turn failed",
  question: "The agent asks or needs approval",
  agent: "The agent's own notes",
  app: "Apps",
  schedule: "Scheduled runs",
};

export const fetchNotifications = () => apiFetch<NotificationItem[]>("/api/notifications?limit=50");
export const fetchUnread = () => apiFetch<{ count: number; decisions: number }>("/api/notifications/unread-count");
export const readAll = () => apiFetch<{ updated: number }>("/api/notifications/read-all", { method: "POST" });
export const clearAll = () => apiFetch<{ deleted: number }>("/api/notifications", { method: "DELETE" });
export const deleteNotification = (id: string) => apiFetch(`/api/notifications/${encodeURIComponent(id)}`, { method: "DELETE" });
export const fetchPrefs = () => apiFetch<{ kinds: Record<string, boolean> }>("/api/push/prefs");
export const savePrefs = (kinds: Record<string, boolean>) => apiFetch<{ kinds: Record<string, boolean> }>("/api/push/prefs", { method: "PUT", body: { kinds } });
export const fetchDevices = () => apiFetch<PushDevice[]>("/api/push/devices");
export const removeDevice = (id: number) => apiFetch(`/api/push/devices/${id}`, { method: "DELETE" });
export const sendTest = () => apiFetch("/api/push/test", { method: "POST" });
export const fetchVapidKey = () => apiFetch<{ publicKey: string }>("/api/push/vapid-key");

export function saveSubscription(subscription: PushSubscriptionJSON, label: string): Promise<unknown> {
  return apiFetch("/api/push/subscribe", { method: "POST", body: { ...subscription, label } });
}

export function dropSubscription(endpoint: string): Promise<unknown> {
  return apiFetch("/api/push/subscribe", { method: "DELETE", body: { endpoint } });
}

export function reportPresence(device: string, chatId: string | null): Promise<unknown> {
  return apiFetch("/api/push/presence", { method: "PUT", body: { device, chat_id: chatId } });
}
