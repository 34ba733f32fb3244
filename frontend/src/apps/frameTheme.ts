//! The theme a frame is painted with: the shell's current colours under the names apps written
//! for the original platform style with (`--bg`, `--surface`, `--surface2`, `--border`,
//! `--border-light`, `--text`, `--muted`, `--accent`, `--accent-hover`, `--accent-dim`,
//! `--accent-fg`, `--danger`, `--green`, `--font`, `--mono`) and the same values as `--mobius-*`,
//! sent as one `:root {…}` block (`themeCss`) with the background colour and the scheme.
//! Each comes from the shell's palette (`src/styles/palette.css`: the shell's own variables, and
//! `--frame-*` for the two it has no use for); `--accent-dim` is the accent, translucent. A value
//! the palette lacks, or one unsafe in a declaration, takes the original's default for the scheme.

import { themeStore } from "../shell/theme";

export type Scheme = "light" | "dark";

/** The original platform's 15 theme variables, both palettes. */
export const ORIGINAL_PALETTES: Record<Scheme, Record<string, string>> = {
  dark: {
    bg: "#0d0d0d",
    surface: "#171717",
    surface2: "#212121",
    border: "#2a2a2a",
    "border-light": "#1f1f1f",
    text: "#ececec",
    muted: "#a8a8a8",
    accent: "#8b6cf7",
    "accent-hover": "#7c5ce6",
    "accent-dim": "rgba(139,108,247,0.14)",
    "accent-fg": "#ffffff",
    danger: "#f87171",
    green: "#10b981",
    font: "'Inter', 'Inter Fallback', system-ui, -apple-system, sans-serif",
    mono: "'JetBrains Mono', 'JetBrains Mono Fallback', ui-monospace, 'SF Mono', monospace",
  },
  light: {
    bg: "#f0eeeb",
    surface: "#ffffff",
    surface2: "#e8e6e2",
    border: "#d4d1cc",
    "border-light": "#e2dfdb",
    text: "#1c1b1a",
    muted: "#6b6864",
    accent: "#8b6cf7",
    "accent-hover": "#7c5ce6",
    "accent-dim": "rgba(139,108,247,0.08)",
    "accent-fg": "#ffffff",
    danger: "#ef4444",
    green: "#059669",
    font: "'Inter', 'Inter Fallback', system-ui, -apple-system, sans-serif",
    mono: "'JetBrains Mono', 'JetBrains Mono Fallback', ui-monospace, 'SF Mono', monospace",
  },
};

/** Which shell variable carries each of the original's names (absent: derived, or the original's default). */
const FROM_SHELL: Record<string, string> = {
  bg: "--bg",
  surface: "--surface",
  surface2: "--surface-2",
  border: "--border",
  "border-light": "--frame-border-light",
  text: "--text",
  muted: "--muted",
  accent: "--accent",
  "accent-hover": "--accent-hover",
  "accent-fg": "--on-accent",
  danger: "--danger",
  green: "--ok",
  font: "--font",
  mono: "--frame-mono",
};

/** `#rrggbb` at `alpha` as `rgba(…)`, or null. */
function translucent(hex: string, alpha: number): string | null {
  const m = /^#([0-9a-f]{6})$/i.exec(hex.trim());
  if (!m?.[1]) return null;
  const n = parseInt(m[1], 16);
  return `rgba(${(n >> 16) & 255},${(n >> 8) & 255},${n & 255},${alpha})`;
}

/** A value safe inside a declaration (no block or declaration breaks). */
function safeValue(value: string): string | null {
  const v = value.trim();
  return v && v.length <= 300 && !/[;{}<>]/.test(v) && !/url\s*\(/i.test(v) ? v : null;
}

export interface FrameThemeMessage {
  themeCss: string;
  bg: string;
  scheme: Scheme;
  /** The same variables as an object (frame documents cached from an earlier build read this). */
  theme: { scheme: Scheme; vars: Record<string, string> };
}

/** The theme for `scheme`, reading the shell's current variables through `read`. */
export function buildFrameTheme(scheme: Scheme, read: (name: string) => string): FrameThemeMessage {
  const defaults = ORIGINAL_PALETTES[scheme];
  const values: Record<string, string> = {};
  for (const [name, fallback] of Object.entries(defaults)) {
    const shellName = FROM_SHELL[name];
    values[name] = (shellName ? safeValue(read(shellName)) : null) ?? fallback;
  }
  values["accent-dim"] = translucent(values.accent ?? "", scheme === "dark" ? 0.14 : 0.08) ?? defaults["accent-dim"] ?? "";
  const vars: Record<string, string> = {};
  for (const [name, value] of Object.entries(values)) {
    vars[`--${name}`] = value;
    vars[`--mobius-${name}`] = value;
  }
  const themeCss = `:root { color-scheme: ${scheme}; ${Object.entries(vars)
    .map(([k, v]) => `${k}: ${v};`)
    .join(" ")} }`;
  return { themeCss, bg: values.bg ?? defaults.bg ?? "", scheme, theme: { scheme, vars } };
}

/** The shell's effective scheme now. */
export function currentScheme(): Scheme {
  const choice = themeStore.get();
  const dark = choice === "dark" || (choice === "system" && typeof matchMedia === "function" && matchMedia("(prefers-color-scheme: dark)").matches);
  return dark ? "dark" : "light";
}

/** The theme message for the shell as it is painted now. */
export function frameTheme(): FrameThemeMessage {
  const style = getComputedStyle(document.documentElement);
  return buildFrameTheme(currentScheme(), (name) => style.getPropertyValue(name));
}

/** What a published page may be given (the server refuses anything else): a plain value. */
const PAGE_VALUE = /^[A-Za-z0-9 #%.,()'"\-_+/]{1,200}$/;

/** The theme a published page is painted with: for both schemes, the original's variables (no
 *  `--`) with the values the shell paints each scheme with now (`--light-*` / `--dark-*` of the
 *  palette, the owner's theme included), so the page looks as the app does here and follows its
 *  visitor's scheme. Values a page would refuse are left out (the page's default stands). */
export function pageTheme(): Record<Scheme, Record<string, string>> {
  const style = getComputedStyle(document.documentElement);
  const out: Record<Scheme, Record<string, string>> = { light: {}, dark: {} };
  for (const scheme of ["light", "dark"] as const) {
    const read = (name: string) => style.getPropertyValue(`--${scheme}-${name.slice(2)}`).trim() || style.getPropertyValue(name);
    for (const [name, value] of Object.entries(buildFrameTheme(scheme, read).theme.vars)) {
      const openQuote = (value.split("'").length - 1) % 2 === 1 || (value.split('"').length - 1) % 2 === 1;
      if (name.startsWith("--mobius-") || !PAGE_VALUE.test(value) || /url\(|expression\(|\/\*/i.test(value) || openQuote) continue;
      out[scheme][name.slice(2)] = value;
    }
  }
  return out;
}
