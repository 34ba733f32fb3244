//! The pages the shell loads on demand, named once: `Shell` renders them lazily, and `main.tsx`
//! starts loading the one the address opens on while the session is still being checked.

import type { Route } from "./router";

export const loadSettings = () => import("../components/settings/Settings");
export const loadAppsView = () => import("../components/apps/AppsView");

/** Starts loading the page `route` shows, when it is loaded on demand. */
export function preloadRoute(route: Route): void {
  if (route.name === "settings") void loadSettings();
  else if (route.name === "apps") void loadAppsView();
}
