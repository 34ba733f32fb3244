//! This device and notifications: turning Web Push on (the permission prompt needs a tap),
//! reporting which chat is open and visible (so a finished turn the owner watched is not
//! pushed), and the app badge (decisions waiting plus unread notifications).

import { useQuery } from "@tanstack/react-query";
import { useEffect } from "react";
import { dropSubscription, fetchUnread, fetchVapidKey, reportPresence, saveSubscription, unreadKey } from "../api/push";

/** A visible page repeats its presence this often (the server forgets it after 75 s). */
const PRESENCE_REFRESH_MS = 30_000;
const DEVICE_KEY = "moebius:device-id";

export type PushState = "unsupported" | "denied" | "off" | "on";

function supported(): boolean {
  return typeof window !== "undefined" && "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
}

async function registration(): Promise<ServiceWorkerRegistration | null> {
  if (!supported()) return null;
  return (await navigator.serviceWorker.getRegistration("/")) ?? null;
}

/** Whether this device receives pushes now. */
export async function pushState(): Promise<PushState> {
  if (!supported()) return "unsupported";
  if (Notification.permission === "denied") return "denied";
  const reg = await registration();
  const sub = await reg?.pushManager.getSubscription();
  return sub ? "on" : "off";
}

function base64UrlToBytes(text: string): Uint8Array<ArrayBuffer> {
  const b64 = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
  const raw = atob(b64);
  const out = new Uint8Array(new ArrayBuffer(raw.length));
  for (let i = 0; i < raw.length; i += 1) out[i] = raw.charCodeAt(i);
  return out;
}

/** A short name for this device in Settings ("Android · Chrome"). */
export function deviceLabel(ua: string): string {
  const os = /iPhone|iPad/.test(ua) ? "iOS" : /Android/.test(ua) ? "Android" : /Mac OS X/.test(ua) ? "Mac" : /Windows/.test(ua) ? "Windows" : /Linux/.test(ua) ? "Linux" : "Device";
  const browser = /Edg\//.test(ua) ? "Edge" : /Firefox\//.test(ua) ? "Firefox" : /Chrome\//.test(ua) ? "Chrome" : /Safari\//.test(ua) ? "Safari" : "Browser";
  return `${os} · ${browser}`;
}

/** Turns pushes on for this device. Call from a tap: the permission prompt needs one. */
export async function enablePush(): Promise<PushState> {
  const reg = await registration();
  if (!reg) return "unsupported";
  const permission = await Notification.requestPermission();
  if (permission !== "granted") return permission === "denied" ? "denied" : "off";
  const { publicKey } = await fetchVapidKey();
  const existing = await reg.pushManager.getSubscription();
  const sub = existing ?? (await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: base64UrlToBytes(publicKey) }));
  await saveSubscription(sub.toJSON(), deviceLabel(navigator.userAgent));
  return "on";
}

/** Turns pushes off for this device (server first, then the browser). */
export async function disablePush(): Promise<PushState> {
  const sub = await (await registration())?.pushManager.getSubscription();
  if (sub) {
    await dropSubscription(sub.endpoint);
    await sub.unsubscribe();
  }
  return "off";
}

function deviceId(): string {
  let id = localStorage.getItem(DEVICE_KEY);
  if (!id) {
    id = crypto.randomUUID();
    localStorage.setItem(DEVICE_KEY, id);
  }
  return id;
}

/** Reports `chatId` as open while the page is visible, and nothing while it is hidden. */
export function usePresence(chatId: string | null): void {
  useEffect(() => {
    const report = () => {
      const visible = document.visibilityState === "visible";
      void reportPresence(deviceId(), visible ? chatId : null).catch(() => undefined);
    };
    report();
    const timer = setInterval(() => {
      if (document.visibilityState === "visible") report();
    }, PRESENCE_REFRESH_MS);
    document.addEventListener("visibilitychange", report);
    window.addEventListener("pagehide", report);
    return () => {
      clearInterval(timer);
      document.removeEventListener("visibilitychange", report);
      window.removeEventListener("pagehide", report);
    };
  }, [chatId]);
}

/** Unread notifications and decisions waiting; keeps the app badge in step. */
export function useUnread(): { count: number; decisions: number } {
  const unread = useQuery({ queryKey: unreadKey, queryFn: fetchUnread, retry: false });
  const count = unread.data?.count ?? 0;
  const decisions = unread.data?.decisions ?? 0;
  useEffect(() => {
    const nav = navigator as Navigator & { setAppBadge?: (n: number) => Promise<void>; clearAppBadge?: () => Promise<void> };
    const total = count + decisions;
    if (total > 0) void nav.setAppBadge?.(total).catch(() => undefined);
    else void nav.clearAppBadge?.().catch(() => undefined);
  }, [count, decisions]);
  return { count, decisions };
}
