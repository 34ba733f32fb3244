import { afterEach, describe, expect, it, vi } from "vitest";
import { closeApp, currentNav, navigate, openApp, parseAppParam, pushAppNav } from "./router";


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
});
