//! The app token a canvas hands its frame: minted (or taken from this device) on mount,
//! refreshed 5 minutes before it expires — also while the canvas sits hidden — and on demand
//! when the frame says its token expired.

import { useCallback, useEffect, useState } from "react";
import { useOnline } from "../shell/online";
import { ensureAppToken, heldToken, needsRefresh, onAppToken, refreshDelay, type HeldToken } from "./tokens";

export interface AppTokenState {
  /** `pending` until the first answer; `failed` when no token could be had for a reason other than the network. */
  status: "pending" | "ready" | "failed";
  held: HeldToken | null;
  error: unknown;
}

/** While offline, a token inside its refresh window is retried after this long. */
const RETRY_MS = 60_000;

export function useAppToken(appId: number): AppTokenState & { refresh: (force: boolean) => Promise<HeldToken | null> } {
  const online = useOnline();
  const [state, setState] = useState<AppTokenState>(() => {
    const held = heldToken(appId);
    return { status: held && !needsRefresh(held, Date.now()) ? "ready" : "pending", held, error: null };
  });

  const refresh = useCallback(
    async (force: boolean) => {
      try {
        const held = await ensureAppToken(appId, { force });
        setState({ status: "ready", held, error: null });
        return held;
      } catch (error) {
        setState((s) => ({ status: s.held ? "ready" : "failed", held: s.held, error }));
        return null;
      }
    },
    [appId],
  );

  useEffect(() => {
    void refresh(false);
    return onAppToken(appId, (held) => setState({ status: "ready", held, error: null }));
  }, [appId, refresh]);

  // Refresh ahead of expiry; coming back online or to the foreground checks again.
  const expiresAt = state.held?.expiresAt ?? null;
  useEffect(() => {
    if (expiresAt === null) return;
    const delay = refreshDelay(expiresAt, Date.now());
    const timer = setTimeout(() => void refresh(false), delay > 0 ? delay : online ? 0 : RETRY_MS);
    const onVisible = () => {
      if (document.visibilityState === "visible" && refreshDelay(expiresAt, Date.now()) === 0) void refresh(false);
    };
    document.addEventListener("visibilitychange", onVisible);
    return () => {
      clearTimeout(timer);
      document.removeEventListener("visibilitychange", onVisible);
    };
  }, [expiresAt, online, refresh]);

  return { ...state, refresh };
}
