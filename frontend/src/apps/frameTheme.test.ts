import { afterEach, describe, expect, it } from "vitest";
import { pageTheme } from "./frameTheme";

describe("pageTheme (what a published page is painted with)", () => {
  afterEach(() => document.documentElement.removeAttribute("style"));

  it("gives both schemes' values under the original's names, from the palette's per-scheme variables", () => {
    const root = document.documentElement.style;
    root.setProperty("--light-accent", "#15803d");
    root.setProperty("--dark-accent", "#22c55e");
    root.setProperty("--light-bg", "#f7f5ef");
    const theme = pageTheme();
    expect(theme.light.accent).toBe("#15803d");
    expect(theme.dark.accent).toBe("#22c55e");
    expect(theme.light["accent-dim"]).toBe("rgba(21,128,61,0.08)");
    expect(theme.dark["accent-dim"]).toBe("rgba(34,197,94,0.14)");
    expect(theme.light.bg).toBe("#f7f5ef");
    // Nothing under --mobius-* (the page derives those) and nothing but the original's 15 names.
    expect(Object.keys(theme.light).every((k) => !k.startsWith("--") && !k.startsWith("mobius-"))).toBe(true);
    expect(Object.keys(theme.light)).toHaveLength(15);
  });

  it("leaves out a value the page would refuse (the page's default stands)", () => {
    document.documentElement.style.setProperty("--font", "'Noto Sans 日本語', sans-serif");
    const theme = pageTheme();
    expect(theme.light.font).toBeUndefined();
    expect(theme.light.accent).toBeDefined();
  });
});
