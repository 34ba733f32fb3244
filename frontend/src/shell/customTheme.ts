//! The platform's theme on this page: the server's CSS (custom properties over the stock
//! palette, `/api/theme`) in a `<style id="mobius-theme">` after the shell's stylesheet,
//! remembered on this device so the next start paints with it before any request, and
//! refetched when the server says it changed (`theme_updated`). App frames follow through
//! `customThemeStore` (AppCanvas re-sends their theme).

import { fetchTheme, type ThemeAnswer } from "../api/theme";
import { setChromeColours } from "./theme";
import { createStore } from "./store";

const KEY = "mobius.customTheme";
const STYLE_ID = "mobius-theme";

/** Bumped each time the page's theme CSS changes. */
export const customThemeStore = createStore<number>(0);

let applied: string | null = null;

type Saved = Pick<ThemeAnswer, "css" | "version" | "light_bg" | "dark_bg">;

/** Puts `theme` on the page (a no-op when it is already there). */
export function applyCustomTheme(theme: Saved): void {
  setChromeColours(theme.light_bg, theme.dark_bg);
  if (applied === theme.css) return;
  applied = theme.css;
  let style = document.getElementById(STYLE_ID);
  if (!(style instanceof HTMLStyleElement)) {
    style = document.createElement("style");
    style.id = STYLE_ID;
  }
  style.textContent = theme.css;
  // Last in <head>: after the shell's stylesheet, so its :root wins.
  document.head.appendChild(style);
  if (theme.version === null) delete document.documentElement.dataset.themeVersion;
  else document.documentElement.dataset.themeVersion = theme.version;
  customThemeStore.set(customThemeStore.get() + 1);
}

/** The theme this device last saw, before the first paint. */
export function initCustomTheme(): void {
  try {
    const raw = localStorage.getItem(KEY);
    if (raw) applyCustomTheme(JSON.parse(raw) as Saved);
  } catch {
    // Nothing remembered: stock until the server answers.
  }
}

let inflight: Promise<void> | null = null;

/** Asks the server for the theme (revalidated by its ETag) and applies it. */
export function refreshCustomTheme(): Promise<void> {
  inflight ??= (async () => {
    try {
      const theme = await fetchTheme();
      applyCustomTheme(theme);
      try {
        localStorage.setItem(KEY, JSON.stringify({ css: theme.css, version: theme.version, light_bg: theme.light_bg, dark_bg: theme.dark_bg }));
      } catch {
        // Not remembered; still applied.
      }
    } catch {
      // Offline or signed out: keep what is painted.
    } finally {
      inflight = null;
    }
  })();
  return inflight;
}
