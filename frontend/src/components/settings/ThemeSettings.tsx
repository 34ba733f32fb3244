//! Settings › Appearance, the platform's theme: a preview of both schemes as they are painted
//! now, back to the stock theme, and the last versions to go back to (the agent makes new
//! ones; see the skill `theming`).

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { formatDistanceToNow } from "date-fns";
import { useSyncExternalStore } from "react";
import { fetchThemeVersions, resetTheme, restoreTheme, themeVersionsKey, type ThemeAnswer } from "../../api/theme";
import { ApiError } from "../../api/client";
import { applyCustomTheme, customThemeStore } from "../../shell/customTheme";

const SWATCHES = [
  ["bg", "Background"],
  ["surface", "Surface"],
  ["text", "Text"],
  ["accent", "Accent"],
] as const;

function errorText(error: unknown): string {
  return error instanceof ApiError ? error.message : "Something went wrong.";
}

/** The painted value of a palette variable, e.g. `--dark-accent`. */
function painted(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

function Preview({ scheme }: { scheme: "light" | "dark" }) {
  // Re-read whenever the theme on the page changes.
  useSyncExternalStore(customThemeStore.subscribe, customThemeStore.get);
  const colour = (name: string) => painted(`--${scheme}-${name}`);
  return (
    <figure className="theme-preview" data-scheme={scheme} style={{ background: colour("bg"), color: colour("text"), borderColor: colour("border") }}>
      <figcaption>{scheme === "light" ? "Light" : "Dark"}</figcaption>
      <span className="theme-preview-card" style={{ background: colour("surface"), borderColor: colour("border") }}>
        Aa
        <span className="theme-preview-button" style={{ background: colour("accent"), color: colour("on-accent") }}>
          Send
        </span>
      </span>
      <span className="theme-swatches" aria-hidden="true">
        {SWATCHES.map(([name]) => (
          <span key={name} className="theme-swatch" style={{ background: colour(name) }} />
        ))}
      </span>
    </figure>
  );
}

export function ThemeSettings() {
  const queryClient = useQueryClient();
  const versions = useQuery({ queryKey: themeVersionsKey, queryFn: fetchThemeVersions });
  const done = (theme: ThemeAnswer) => {
    applyCustomTheme(theme);
    void queryClient.invalidateQueries({ queryKey: themeVersionsKey });
  };
  const reset = useMutation({ mutationFn: resetTheme, onSuccess: done });
  const restore = useMutation({ mutationFn: restoreTheme, onSuccess: done });
  const list = versions.data?.versions ?? [];
  const current = versions.data?.current ?? null;
  return (
    <div className="setting-stack theme-settings">
      <p className="settings-lead">The platform's colours. Ask the agent to change them; every open device restyles at once.</p>
      <div className="theme-previews">
        <Preview scheme="light" />
        <Preview scheme="dark" />
      </div>
      <div className="inline-actions">
        <button type="button" className="btn btn-secondary btn-small" onClick={() => reset.mutate()} disabled={reset.isPending}>
          {reset.isPending ? "Resetting…" : "Reset to stock"}
        </button>
      </div>
      {(reset.isError || restore.isError) && (
        <p className="settings-error" role="alert">
          {errorText(reset.error ?? restore.error)}
        </p>
      )}
      {list.length > 0 && (
        <>
          <h3 className="settings-subtitle">Versions</h3>
          <ul className="device-list theme-versions" aria-label="Theme versions">
            {list.map((v) => (
              <li key={v.id} className="device-row" data-version={v.id} data-current={v.id === current || undefined}>
                <span className="device-text">
                  <span className="device-name">
                    {v.source === "agent" ? "By the agent" : v.source === "owner reset" ? "Stock" : `Restored (${v.source.replace(/^restore /, "")})`}
                    {v.id === current && <span className="device-badge">Current</span>}
                  </span>
                  <span className="device-detail">{formatDistanceToNow(v.at, { addSuffix: true })}</span>
                </span>
                {v.id !== current && (
                  <button type="button" className="btn btn-secondary btn-small" onClick={() => restore.mutate(v.id)} disabled={restore.isPending} aria-label={`Use the theme from ${new Date(v.at).toLocaleString()}`}>
                    Use
                  </button>
                )}
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}
