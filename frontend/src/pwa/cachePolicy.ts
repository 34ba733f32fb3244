//! Which requests the service worker may keep for offline use. Only the chat list and a
//! chat's detail pages (GET) — never streams, runs, tool output or anything else under /api/.

export const SHELL_DATA_CACHE = "mobius-shell-data";

export function isShellData(url: URL, method: string = "GET"): boolean {
  if (method !== "GET") return false;
  return url.pathname === "/api/chats" || /^\/api\/chats\/[^/]+$/.test(url.pathname);
}
