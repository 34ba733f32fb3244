//! Appearance: light, dark or the system's, remembered on this device and applied to <html>
//! (`data-theme`) and to the browser chrome colour.

import { createStore, useStore } from "./store";

export type ThemeChoice = "system" | "light" | "dark";

const KEY = "mobius.theme";
const STOCK_CHROME = { light: "#f6f6f3", dark: "#111114" } as const;
/** The browser chrome's colours: the stock palette's backgrounds, or the theme's. */
const CHROME: { light: string; dark: string } = { ...STOCK_CHROME };

function stored(): ThemeChoice {
  try {
    const value = localStorage.getItem(KEY);
    return value === "light" || value === "dark" ? value : "system";
  } catch {
    return "system";
  }
}

export const themeStore = createStore<ThemeChoice>(stored());

const dark = typeof window.matchMedia === "function" ? window.matchMedia("(prefers-color-scheme: dark)") : { matches: false };

function apply(): void {
  const choice = themeStore.get();
  const root = document.documentElement;
  if (choice === "system") delete root.dataset.theme;
  else root.dataset.theme = choice;
  const effective = choice === "system" ? (dark.matches ? "dark" : "light") : choice;
  // The shell's own colours carry a media query; a standalone app page's colour (one meta,
  // no media) is the app's and stays.
  for (const meta of document.querySelectorAll<HTMLMetaElement>('meta[name="theme-color"][media]')) {
    if (choice === "system") meta.content = (meta.getAttribute("media") ?? "").includes("dark") ? CHROME.dark : CHROME.light;
    else meta.content = CHROME[effective];
  }
}

/** The platform theme's page backgrounds (`null`: the stock one), for the browser chrome. */
export function setChromeColours(light: string | null, dark: string | null): void {
  CHROME.light = light ?? STOCK_CHROME.light;
  CHROME.dark = dark ?? STOCK_CHROME.dark;
  apply();
}

export function setTheme(choice: ThemeChoice): void {
  try {
    if (choice === "system") localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, choice);
  } catch {
    // Not persisted; still applied for this page.
  }
  themeStore.set(choice);
  apply();
}

/** Applies the stored choice before the first paint of the app. */
export function initTheme(): void {
  apply();
}

export function useTheme(): ThemeChoice {
  return useStore(themeStore);
}
