//! Client routes (`/`, `/chat/<id>`, `/settings` and its sections `/settings/<section>`, `/apps` (with `?update=<id>` or
//! `?uninstall=<id>` opening that app's update preview or uninstall choice), `/store`, and the
//! `/install?source=` deep link that opens the install review) on the History API, plus the phone drawer as
//! a history entry of its own so the system Back gesture closes it. An open app is the `?app=<id>`
//! query on any route (beside the chat on wide screens, full screen on phones); opening one
//! pushes an entry, so Back closes it, and its in-app screens (`mobius.nav.open`) stack above.
//! `&intent=<name>` beside `?app=` is a deep-link intent for that app (see `AppIntent`); an
//! `?app=<slug>` is resolved to the app's id by the shell once it knows the installed apps.

import { intentName, type ManageAction } from "../apps/host";
import { createStore, useStore } from "./store";

export type Route =
  | { name: "home" }
  | { name: "chat"; id: string }
  /** Settings: the list of sections, or one section (`/settings/agents`). */
  | { name: "settings"; section?: SettingsSection | undefined }
  /**
   * The Apps view: installed apps (`/apps`) or the store (`/store`); `source` opens its install
   * review, `manage` an installed app's update preview or uninstall choice.
   */
  | { name: "apps"; tab: "installed" | "store"; source?: string | undefined; manage?: { action: ManageAction; appId: number } | undefined };

/** The sections of Settings, in the order its list shows them. */
export const SETTINGS_SECTIONS = ["agents", "defaults", "memory", "schedules", "connectors", "notifications", "appearance", "store", "published", "sandbox", "account", "about"] as const;
export type SettingsSection = (typeof SETTINGS_SECTIONS)[number];

const SETTINGS_TITLES: Record<SettingsSection, string> = {
  agents: "Agents",
  defaults: "New chats",
  memory: "Memory",
  schedules: "Schedules",
  connectors: "Connectors",
  notifications: "Notifications",
  appearance: "Appearance",
  store: "App store",
  published: "Published pages",
  sandbox: "Agent sandbox",
  account: "Account",
  about: "About",
};

/** A section's title (its row in the list and its page's top bar). */
export const settingsTitle = (section: SettingsSection): string => SETTINGS_TITLES[section];

const isSettingsSection = (value: string): value is SettingsSection => (SETTINGS_SECTIONS as readonly string[]).includes(value);

/** Longest source a deep link may carry. */
const MAX_SOURCE_CHARS = 2048;

export function parseRoute(pathname: string, search = ""): Route {
  const chat = /^\/chat\/([A-Za-z0-9_-]{1,80})\/?$/.exec(pathname);
  if (chat?.[1]) return { name: "chat", id: chat[1] };
  if (/^\/settings\/?$/.test(pathname)) return { name: "settings" };
  const section = /^\/settings\/([a-z]{1,20})\/?$/.exec(pathname)?.[1];
  if (section !== undefined) return isSettingsSection(section) ? { name: "settings", section } : { name: "settings" };
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
      return route.section ? `/settings/${route.section}` : "/settings";
    case "apps":
      if (route.source) return `/install?source=${encodeURIComponent(route.source)}`;
      if (route.manage) return `/apps?${route.manage.action}=${route.manage.appId}`;
      return route.tab === "store" ? "/store" : "/apps";
  }
}

/** A deep link into an app (`?app=<id>&intent=<name>`, or an app's `open-app` request):
 * delivered to that app's frame once per `nonce`, so Back onto the same entry does not repeat it. */
export interface AppIntent {
  value: string;
  nonce: number;
}

/** The intent named by `&intent=`, if valid. */
export function parseIntentParam(search: string): string | null {
  return intentName(new URLSearchParams(search).get("intent"));
}

/** `?app=<slug>` (an app named by its folder, not its id), if that is what the address says. */
export function parseAppSlug(search: string): string | null {
  const raw = new URLSearchParams(search).get("app");
  return raw !== null && /^[A-Za-z0-9_-]{1,80}$/.test(raw) && !/^\d+$/.test(raw) ? raw : null;
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

function urlOf(route: Route, app: number | null, intent: AppIntent | null = null): string {
  if (app === null) return pathOf(route);
  const path = pathOf(route);
  return `${path}${path.includes("?") ? "&" : "?"}app=${app}${intent ? `&intent=${intent.value}` : ""}`;
}

let intentSeq = 0;
const newIntent = (value: string | null): AppIntent | null => (value === null ? null : { value, nonce: (intentSeq += 1) });

interface NavState {
  route: Route;
  drawer: boolean;
  /** The open app, or null. */
  app: number | null;
  /** The deep-link intent the open app was opened with, or null. */
  intent: AppIntent | null;
}

/** What this module keeps in `history.state`. */
interface EntryState {
  drawer?: boolean;
  /** An entry pushed by `openApp`: closing the app goes back over it. */
  appEntry?: boolean;
  /** In-app screens stacked above the app's entry (`mobius.nav.open`), and the top one's id. */
  appNavDepth?: number;
  appNav?: string;
  /**
   * Settings entries this page stacked in a row, this one included (a drawer entry carries the
   * count of the entry under it): Done goes back over them, to where Settings was opened from.
   */
  settings?: number;
}

const entry = (): EntryState => (history.state as EntryState | null) ?? {};

/** The state the address and history entry say; an intent unchanged since `previous` keeps its nonce. */
const read = (previous: NavState | null): NavState => {
  const app = parseAppParam(location.search);
  const value = app === null ? null : parseIntentParam(location.search);
  const same = previous !== null && previous.app === app && previous.intent?.value === value;
  return {
    route: parseRoute(location.pathname, location.search),
    drawer: entry().drawer === true,
    app,
    intent: same ? previous.intent : newIntent(value),
  };
};

const nav = createStore<NavState>(read(null));

/** An `?app=<slug>` deep link seen on load or on Back/Forward, until the shell resolves it (the
 * address itself may change first: "/" moves on to the latest chat). */
let slugLink: { slug: string; intent: string | null } | null = null;
const noteSlugLink = () => {
  const slug = parseAppSlug(location.search);
  if (slug !== null) slugLink = { slug, intent: parseIntentParam(location.search) };
};
noteSlugLink();

window.addEventListener("popstate", () => {
  noteSlugLink();
  nav.set(read(nav.get()));
});

/** Takes the pending `?app=<slug>` deep link, if any (once). */
export function takeSlugLink(): { slug: string; intent: string | null } | null {
  const link = slugLink;
  slugLink = null;
  return link;
}

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
  const current = nav.get();
  // The app kept open keeps its intent (already delivered: same nonce).
  const intent = app !== null && app === current.app ? current.intent : null;
  const url = urlOf(route, app, intent);
  // Settings entries already under the new one (a replaced entry is not under it).
  const below = current.route.name === "settings" ? (entry().settings ?? 0) : 0;
  const state = (settings: number): EntryState => (route.name === "settings" && settings > 0 ? { settings } : {});
  if (current.drawer) history.replaceState(state(below + 1), "", url);
  else if (replace) history.replaceState(state(below), "", url);
  else if (url !== location.pathname + location.search) history.pushState(state(below + 1), "", url);
  nav.set({ route, drawer: false, app, intent });
}

/** Done in Settings: back over its entries to where it was opened, else to the last chat. */
export function closeSettings(): void {
  const depth = entry().settings ?? 0;
  if (depth > 0) history.go(-depth);
  else navigate({ name: "home" }, { replace: true });
}

/** Back in a section of Settings: to the list of sections. */
export function settingsBack(): void {
  if ((entry().settings ?? 0) > 1) history.back();
  else navigate({ name: "settings" }, { replace: true });
}

/**
 * Opens app `id` over (phones) or beside (wide screens) the current route, with a deep-link
 * `intent` for it if given (the app already open gets the intent, without a new entry).
 */
export function openApp(id: number, intentValue: string | null = null, { replace = false }: { replace?: boolean } = {}): void {
  const current = nav.get();
  if (current.app === id && !current.drawer && intentValue === null) return;
  const intent = newIntent(intentValue);
  const url = urlOf(current.route, id, intent);
  // `replace`: the same entry under a new address (an `?app=<slug>` resolved to its id).
  if (replace) history.replaceState(entry(), "", url);
  else if (current.drawer) history.replaceState({ appEntry: true }, "", url);
  else if (current.app !== null) history.replaceState({ ...(current.app === id ? entry() : {}), appEntry: entry().appEntry === true }, "", url);
  else history.pushState({ appEntry: true }, "", url);
  nav.set({ route: current.route, drawer: false, app: id, intent });
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
  nav.set({ ...current, app: null, intent: null });
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
  const settings = entry().settings;
  history.pushState(settings === undefined ? { drawer: true } : { drawer: true, settings }, "", location.pathname + location.search);
  nav.set({ ...nav.get(), drawer: true });
}

/** Closes the drawer the way Back would. */
export function closeDrawer(): void {
  if (!nav.get().drawer) return;
  history.back();
}
