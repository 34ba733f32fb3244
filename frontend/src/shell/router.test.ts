import { afterEach, describe, expect, it, vi } from "vitest";
import { closeApp, closeSettings, currentNav, navigate, openApp, parseAppParam, parseAppSlug, parseIntentParam, parseRoute, pushAppNav, settingsBack, takeSlugLink } from "./router";

afterEach(() => {
  history.replaceState({}, "", "/");
  window.dispatchEvent(new PopStateEvent("popstate"));
});

describe("app routes", () => {
  it("reads ?app=<id> and nothing else as an app", () => {
    expect(parseAppParam("?app=12")).toBe(12);
    expect(parseAppParam("?app=0")).toBeNull();
    expect(parseAppParam("?app=x")).toBeNull();
    expect(parseAppParam("?app=1e3")).toBeNull();
    expect(parseAppParam("")).toBeNull();
  });

  it("opening pushes an entry on the current route, and closing goes back over it", async () => {
    navigate({ name: "chat", id: "c1" });
    const depth = history.length;
    openApp(4);
    expect(location.pathname + location.search).toBe("/chat/c1?app=4");
    expect(history.length).toBe(depth + 1);
    expect(currentNav().app).toBe(4);
    closeApp();
    // history.back() lands asynchronously: poll for it.
    await vi.waitFor(() => expect(location.search).toBe(""));
    expect(currentNav().app).toBeNull();
  });

  it("closing also goes back over in-app screens", async () => {
    navigate({ name: "chat", id: "c2" });
    openApp(4);
    pushAppNav("nav-1");
    pushAppNav("nav-2");
    closeApp();
    await vi.waitFor(() => expect(location.pathname + location.search).toBe("/chat/c2"));
    expect(currentNav().app).toBeNull();
  });

  it("a deep-linked app closes in place", () => {
    history.replaceState({}, "", "/chat/c3?app=9");
    window.dispatchEvent(new PopStateEvent("popstate"));
    expect(currentNav().app).toBe(9);
    closeApp();
    expect(location.pathname + location.search).toBe("/chat/c3");
    expect(currentNav().app).toBeNull();
  });

  it("navigating closes the app unless told to keep it", () => {
    navigate({ name: "chat", id: "c4" }, { app: 2 });
    expect(location.search).toBe("?app=2");
    navigate({ name: "settings" });
    expect(currentNav()).toMatchObject({ route: { name: "settings" }, app: null });
  });

  it("the Apps view, the store and the install deep link have routes", () => {
    expect(parseRoute("/apps")).toEqual({ name: "apps", tab: "installed" });
    expect(parseRoute("/store/")).toEqual({ name: "apps", tab: "store" });
    const link = "https://github.com/someone/notes.git";
    const route = parseRoute("/install", `?source=${encodeURIComponent(link)}`);
    expect(route).toEqual({ name: "apps", tab: "installed", source: link });
    expect(parseRoute("/install", "")).toEqual({ name: "apps", tab: "installed" });
    expect(parseRoute("/install", `?source=${"x".repeat(3000)}`)).toEqual({ name: "apps", tab: "installed" });
    navigate(route, { app: 3 });
    expect(location.pathname + location.search).toBe(`/install?source=${encodeURIComponent(link)}&app=3`);
    expect(currentNav().route).toEqual(route);
  });

  it("an app that manages apps opens another app's update preview or uninstall choice by address", () => {
    expect(parseRoute("/apps", "?update=7")).toEqual({ name: "apps", tab: "installed", manage: { action: "update", appId: 7 } });
    expect(parseRoute("/apps/", "?uninstall=12")).toEqual({ name: "apps", tab: "installed", manage: { action: "uninstall", appId: 12 } });
    for (const bad of ["?update=0", "?update=-3", "?uninstall=x", "?uninstall=1e3", "?remove=4", `?update=${"9".repeat(16)}`]) {
      expect(parseRoute("/apps", bad)).toEqual({ name: "apps", tab: "installed" });
    }
    const route = parseRoute("/apps", "?uninstall=5");
    navigate(route, { app: 2 });
    expect(location.pathname + location.search).toBe("/apps?uninstall=5&app=2");
    expect(currentNav().route).toEqual(route);
    expect(currentNav().app).toBe(2);
  });

  it("reads a deep-link intent beside the app, in the original's alphabet only", () => {
    expect(parseIntentParam("?app=3&intent=note:42")).toBe("note:42");
    expect(parseIntentParam("?app=3&intent=a.b_c-d")).toBe("a.b_c-d");
    for (const bad of ["?intent=", "?intent=a b", "?intent=%3Cscript%3E", `?intent=${"x".repeat(129)}`]) expect(parseIntentParam(bad)).toBeNull();
    expect(parseAppSlug("?app=notes")).toBe("notes");
    expect(parseAppSlug("?app=12")).toBeNull();
    expect(parseAppSlug("?app=../x")).toBeNull();
  });

  it("an intent is delivered once: Back onto the same entry keeps its nonce, a new open makes a new one", () => {
    history.replaceState({}, "", "/chat/c5?app=6&intent=today");
    window.dispatchEvent(new PopStateEvent("popstate"));
    const first = currentNav().intent;
    expect(first).toMatchObject({ value: "today" });
    pushAppNav("nav-1");
    window.dispatchEvent(new PopStateEvent("popstate"));
    expect(currentNav().intent).toBe(first);
    // The same app asked again with an intent (an app's open-app): a new nonce, no new entry.
    const depth = history.length;
    openApp(6, "today");
    expect(history.length).toBe(depth);
    expect(currentNav().intent?.value).toBe("today");
    expect(currentNav().intent?.nonce).not.toBe(first?.nonce);
    expect(location.search).toBe("?app=6&intent=today");
    // Moving to another chat with the app kept beside it keeps the delivered intent.
    const kept = currentNav().intent;
    navigate({ name: "chat", id: "c6" }, { app: 6 });
    expect(currentNav().intent).toBe(kept);
    closeApp();
    expect(currentNav().intent).toBeNull();
  });

  it("an app named by its slug waits for the shell to resolve it, then is re-addressed in place by its id", () => {
    history.replaceState({}, "", "/?app=notes&intent=new");
    window.dispatchEvent(new PopStateEvent("popstate"));
    expect(currentNav().app).toBeNull();
    // "/" moves on to a chat before the apps are known: the link is still pending.
    navigate({ name: "chat", id: "c7" }, { replace: true });
    const link = takeSlugLink();
    expect(link).toEqual({ slug: "notes", intent: "new" });
    expect(takeSlugLink()).toBeNull();
    const depth = history.length;
    openApp(8, link?.intent ?? null, { replace: true });
    expect(history.length).toBe(depth);
    expect(location.pathname + location.search).toBe("/chat/c7?app=8&intent=new");
    expect(currentNav()).toMatchObject({ app: 8, intent: { value: "new" } });
  });
});

describe("settings routes", () => {
  it("reads /settings/<section> and ignores an unknown section", () => {
    expect(parseRoute("/settings")).toEqual({ name: "settings" });
    expect(parseRoute("/settings/agents")).toEqual({ name: "settings", section: "agents" });
    expect(parseRoute("/settings/memory/")).toEqual({ name: "settings", section: "memory" });
    expect(parseRoute("/settings/nope")).toEqual({ name: "settings" });
  });

  it("Back in a section returns to the list, and Done goes back to the chat Settings was opened from", async () => {
    navigate({ name: "chat", id: "s1" });
    navigate({ name: "settings" });
    navigate({ name: "settings", section: "agents" });
    expect(location.pathname).toBe("/settings/agents");
    settingsBack();
    await vi.waitFor(() => expect(location.pathname).toBe("/settings"));
    expect(currentNav().route).toEqual({ name: "settings" });
    navigate({ name: "settings", section: "appearance" });
    closeSettings();
    await vi.waitFor(() => expect(location.pathname).toBe("/chat/s1"));
    expect(currentNav().route).toEqual({ name: "chat", id: "s1" });
  });

  it("a section opened straight from the chat (a fix button) is one step from it", async () => {
    navigate({ name: "chat", id: "s2" });
    navigate({ name: "settings", section: "agents" });
    settingsBack();
    expect(location.pathname).toBe("/settings");
    closeSettings();
    await vi.waitFor(() => expect(location.pathname).toBe("/chat/s2"));
  });

  it("Done on a Settings page loaded by its address goes to the last chat, in place", () => {
    history.replaceState({}, "", "/settings/about");
    window.dispatchEvent(new PopStateEvent("popstate"));
    const depth = history.length;
    closeSettings();
    expect(currentNav().route).toEqual({ name: "home" });
    expect(history.length).toBe(depth);
  });
});
