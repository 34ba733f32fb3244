//! Chat media in the PWA: which URLs are a chat's files, the token they are loaded with (one
//! per chat, cached until shortly before it expires), sizes as the owner reads them.

import { useEffect, useSyncExternalStore } from "react";
import { fetchMediaToken } from "../api/uploads";

/** `/api/chats/<id>/media|uploads/<name>`: a chat file the server serves with a media token. */
const CHAT_FILE = /^\/api\/chats\/([A-Za-z0-9_-]{1,64})\/(media|uploads)\/([A-Za-z0-9._-]{1,200})$/;

/** The chat a file URL belongs to, or null when it is not a chat file URL. */
export function chatOfFileUrl(url: string): string | null {
  const match = CHAT_FILE.exec(url);
  return match && !match[3]?.includes("..") ? (match[1] ?? null) : null;
}

/** The URL of an upload of a chat. */
export function uploadUrl(chatId: string, name: string): string {
  return `/api/chats/${encodeURIComponent(chatId)}/uploads/${encodeURIComponent(name)}`;
}

/** A file URL with its media token (and `preview=true` for the small rendition). */
export function withToken(url: string, token: string, preview = false): string {
  return `${url}?token=${encodeURIComponent(token)}${preview ? "&preview=true" : ""}`;
}

/** Raster images the browser shows (the ones the server previews). */
export function isImageType(mime: string): boolean {
  return mime === "image/jpeg" || mime === "image/png" || mime === "image/gif" || mime === "image/webp";
}

/** "2.4 MB", "312 KB", "18 bytes". */
export function formatSize(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${bytes} bytes`;
}

/** Refresh a token this long before it expires. */
const REFRESH_MARGIN_MS = 60_000;
/** Chats whose token is kept. */
const MAX_TOKENS = 32;

const tokens = new Map<string, { token: string; until: number }>();
const inFlight = new Map<string, Promise<string | null>>();
const listeners = new Set<() => void>();

/** The chat's media token, from the cache or the server (null when it cannot be had now). */
export function mediaToken(chatId: string, now: number = Date.now()): Promise<string | null> {
  const cached = tokens.get(chatId);
  if (cached && cached.until > now) return Promise.resolve(cached.token);
  const pending = inFlight.get(chatId);
  if (pending) return pending;
  const request = fetchMediaToken(chatId)
    .then(({ token, expires_in }) => {
      if (tokens.size >= MAX_TOKENS) tokens.delete(tokens.keys().next().value ?? "");
      tokens.set(chatId, { token, until: Date.now() + expires_in * 1000 - REFRESH_MARGIN_MS });
      for (const listener of [...listeners]) listener();
      return token;
    })
    .catch(() => null)
    .finally(() => inFlight.delete(chatId));
  inFlight.set(chatId, request);
  return request;
}

/** Forgets a chat's token (an image failed to load with it). */
export function dropMediaToken(chatId: string): void {
  tokens.delete(chatId);
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => void listeners.delete(listener);
}

/** The chat's media token for rendering; null until it arrives (and while offline). It is
 *  renewed shortly before it expires while something shows the chat's images. */
export function useMediaToken(chatId: string, wanted = true): string | null {
  const token = useSyncExternalStore(subscribe, () => (wanted ? (tokens.get(chatId)?.token ?? null) : null), () => null);
  useEffect(() => {
    if (!wanted) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    const renew = () => {
      void mediaToken(chatId).then(() => {
        const until = tokens.get(chatId)?.until;
        if (!stopped && until !== undefined) timer = setTimeout(renew, Math.max(1000, until - Date.now()));
      });
    };
    renew();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [chatId, wanted]);
  return token;
}
