import { beforeEach, describe, expect, it } from "vitest";
import { applyCustomTheme, customThemeStore, initCustomTheme } from "./customTheme";

describe("the platform theme on the page", () => {
  beforeEach(() => {
    document.head.innerHTML = '<link rel="stylesheet" href="/assets/a.css"><meta name="theme-color" content="#f6f6f3" media="(prefers-color-scheme: light)">';
    localStorage.clear();
  });

  it("goes last in <head>, once, and tells the frames", () => {
    const before = customThemeStore.get();
    applyCustomTheme({ css: ":root { --light-accent: #15803d }", version: "v1", light_bg: "#fafafa", dark_bg: null });
    const style = document.getElementById("mobius-theme");
    expect(style?.textContent).toBe(":root { --light-accent: #15803d }");
    expect(document.head.lastElementChild).toBe(style);
    expect(customThemeStore.get()).toBe(before + 1);
    expect(document.querySelector<HTMLMetaElement>('meta[name="theme-color"]')?.content).toBe("#fafafa");
    // The same text again changes nothing.
    applyCustomTheme({ css: ":root { --light-accent: #15803d }", version: "v1", light_bg: "#fafafa", dark_bg: null });
    expect(customThemeStore.get()).toBe(before + 1);
    expect(document.querySelectorAll("#mobius-theme")).toHaveLength(1);
  });

  it("paints the remembered theme before the server answers", () => {
    localStorage.setItem("mobius.customTheme", JSON.stringify({ css: ":root { --light-bg: #000000 }", version: "v2", light_bg: null, dark_bg: null }));
    initCustomTheme();
    expect(document.getElementById("mobius-theme")?.textContent).toBe(":root { --light-bg: #000000 }");
    expect(document.documentElement.dataset.themeVersion).toBe("v2");
  });
});
