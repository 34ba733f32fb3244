//! Client routes (`/`, `/chat/<id>`, `/settings`, `/apps` (with `?update=<id>` or
//! `?uninstall=<id>` opening that app's update preview or uninstall choice), `/store`, and the
//! `/install?source=` deep link that opens the install review) on the History API, plus the phone drawer as
//! a history entry of its own so the system Back gesture closes it. An open app is the `?app=<id>`
//! query on any route (beside the chat on wide screens, full screen on phones); opening one
//! pushes an entry, so Back closes it, and its in-app screens (`mobius.nav.open`) stack above.

import type { ManageAction } from "../apps/host";
import { createStore, useStore } from "./store";

export type Route =
  | { name: "home" }
  | { name: "chat"; id: string }
  | { name: "settings" }
  /**
   * The Apps view: installed apps (`/apps`) or the store (`/store`); `source` opens its install
   * review, `manage` an installed app's update preview or uninstall choice.
   */
  | { name: "apps"; tab: "installed" | "store"; source?: string | undefined; manage?: { action: ManageAction; appId: number } | undefined };

/** Longest source a deep link may carry. */
const MAX_SOURCE_CHARS = 2048;

export function parseRoute(pathname: string, search = ""): Route {
  const chat = /^\/chat\/([A-Za-z0-9_-]{1,80})\/?$/.exec(pathname);
  if (chat?.[1]) return { name: "chat", id: chat[1] };
  if (/^\/settings\/?$/.test(pathname)) return { name: "settings" };
  if (/^\/apps\/?$/.test(pathname)) {
    const query = new URLSearchParams(search);
    for (const action of ["update", "uninstall"] as const) {
      const appId = positiveId(query.get(action));
      if (appId !== null) return { name: "apps", tab: "installed", manage: { action, appId } };
    }
    return { name: "apps", tab: "installed" };
  }
  if (/^\/store\/?$/.test(pathname)) return { name: "apps", tab: "store" };
  if (/^\/install\/?$/.test(pathname)) {
    const source = new URLSearchParams(search).get("source")?.trim();
    return source && source.length <= MAX_SOURCE_CHARS ? { name: "apps", tab: "installed", source } : { name: "apps", tab: "installed" };
  }
  return { name: "home" };
}

export function pathOf(route: Route): string {
  switch (route.name) {
    case "home":
      return "/";
    case "chat":
      return `/chat/${route.id}`;
    case "settings":
      return "/settings";
    case "apps":
      if (route.source) return `/install?source=${encodeURIComponent(route.source)}`;
      if (route.manage) return `/apps?${route.manage.action}=${route.manage.appId}`;
      return route.tab === "store" ? "/store" : "/apps";
  }
}

/** The app named by `?app=<id>`, if any. */
export function parseAppParam(search: string): number | null {
  return positiveId(new URLSearchParams(search).get("app"));
}

/** An app id in an address: digits only, above zero. */
function positiveId(raw: string | null): number | null {
  if (raw === null || !/^\d{1,15}$/.test(raw)) return null;
  const id = Number(raw);
  return id > 0 ? id : null;
}

function urlOf(route: Route, app: number | null): string {
  if (app === null) return pathOf(route);
  const path = pathOf(route);
  return `${path}${path.includes("?") ? "&" : "?"}app=${app}`;
}

interface NavState {
  route: Route;
  drawer: boolean;
  /** The open app, or null. */
  app: number | null;
}

/** What this module keeps in `history.state`. */
interface EntryState {
  drawer?: boolean;
  /** An entry pushed by `openApp`: closing the app goes back over it. */
  appEntry?: boolean;
  /** In-app screens stacked above the app's entry (`mobius.nav.open`), and the top one's id. */
  appNavDepth?: number;
  appNav?: string;
}

const entry = (): EntryState => (history.state as EntryState | null) ?? {};

const read = (): NavState => ({
  route: parseRoute(location.pathname, location.search),
  drawer: entry().drawer === true,
  app: parseAppParam(location.search),
});

const nav = createStore<NavState>(read());

window.addEventListener("popstate", () => nav.set(read()));

export function useNav(): NavState {
  return useStore(nav);
}

/** Reads the current state without subscribing. */
export function currentNav(): NavState {
  return nav.get();
}

/**
 * Goes to `route`. From an open drawer the drawer's entry is replaced, so Back skips it. The
 * open app closes unless `app` names the one to keep.
 */
export function navigate(route: Route, { replace = false, app = null }: { replace?: boolean; app?: number | null } = {}): void {
  const url = urlOf(route, app);
  const current = nav.get();
  if (replace || current.drawer) history.replaceState({}, "", url);
  else if (url !== location.pathname + location.search) history.pushState({}, "", url);
  nav.set({ route, drawer: false, app });
}

/** Opens app `id` over (phones) or beside (wide screens) the current route. */
export function openApp(id: number): void {
  const current = nav.get();
  if (current.app === id && !current.drawer) return;
  const url = urlOf(current.route, id);
  if (current.drawer) history.replaceState({ appEntry: true }, "", url);
  else if (current.app !== null) history.replaceState({ appEntry: entry().appEntry === true }, "", url);
  else history.pushState({ appEntry: true }, "", url);
  nav.set({ route: current.route, drawer: false, app: id });
}

/** Closes the open app: Back over its entries when this page pushed them, else in place. */
export function closeApp(): void {
  const current = nav.get();
  if (current.app === null) return;
  const state = entry();
  if (state.appEntry) {
    history.go(-(1 + (state.appNavDepth ?? 0)));
    return;
  }
  history.replaceState({}, "", pathOf(current.route));
  nav.set({ ...current, app: null });
}

/** Depth of in-app screens above the open app's entry. */
export function appNavDepth(): number {
  return entry().appNavDepth ?? 0;
}

/** Pushes an in-app screen (same URL) so the system Back can close it. */
export function pushAppNav(requestId: string): void {
  const state = entry();
  history.pushState({ ...state, appNav: requestId, appNavDepth: (state.appNavDepth ?? 0) + 1 }, "", location.href);
}

/** Opens the phone drawer as a history entry. */
export function openDrawer(): void {
  if (nav.get().drawer) return;
  history.pushState({ drawer: true }, "", location.pathname + location.search);
  nav.set({ ...nav.get(), drawer: true });
}

/** Closes the drawer the way Back would. */
export function closeDrawer(): void {
  if (!nav.get().drawer) return;
  history.back();
}
