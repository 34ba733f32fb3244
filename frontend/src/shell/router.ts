//! Client routes (`/`, `/chat/<id>`, `/settings`) on the History API, plus the phone drawer as
//! a history entry of its own so the system Back gesture closes it.

import { createStore, useStore } from "./store";

export type Route = { name: "home" } | { name: "chat"; id: string } | { name: "settings" };

export function parseRoute(pathname: string): Route {
  const chat = /^\/chat\/([A-Za-z0-9_-]{1,80})\/?$/.exec(pathname);
  if (chat?.[1]) return { name: "chat", id: chat[1] };
  if (/^\/settings\/?$/.test(pathname)) return { name: "settings" };
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
  }
}

interface NavState {
  route: Route;
  drawer: boolean;
}

const read = (): NavState => ({
  route: parseRoute(location.pathname),
  drawer: (history.state as { drawer?: boolean } | null)?.drawer === true,
});

const nav = createStore<NavState>(read());

window.addEventListener("popstate", () => nav.set(read()));

export function useNav(): NavState {
  return useStore(nav);
}

/** Goes to `route`. From an open drawer the drawer's entry is replaced, so Back skips it. */
export function navigate(route: Route, { replace = false }: { replace?: boolean } = {}): void {
  const path = pathOf(route);
  const current = nav.get();
  if (replace || current.drawer) history.replaceState({}, "", path);
  else if (path !== location.pathname) history.pushState({}, "", path);
  nav.set({ route, drawer: false });
}

/** Opens the phone drawer as a history entry. */
export function openDrawer(): void {
  if (nav.get().drawer) return;
  history.pushState({ drawer: true }, "", location.pathname);
  nav.set({ ...nav.get(), drawer: true });
}

/** Closes the drawer the way Back would. */
export function closeDrawer(): void {
  if (!nav.get().drawer) return;
  history.back();
}
