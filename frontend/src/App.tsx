//! The boot state machine: reads the token, runs the boot checks, and shows exactly one of
//! splash, setup, sign-in, shell or "couldn't reach". Any 401 lands back on sign-in. On an app's
//! standalone host the signed-in screen is that app, full screen, instead of the shell.

import { useQuery, useQueryClient } from "@tanstack/react-query";
import { lazy, Suspense, useEffect, useState, useSyncExternalStore } from "react";
import { fetchSession, fetchSetupStatus, SESSION_STALE_MS, sessionKey, setupStatusKey, type SetupStatus } from "./api/auth";
import { onUnauthorized } from "./api/client";
import { readStandaloneIdentity } from "./apps/standalone";
import { clearToken, readToken, rememberedSession, rememberSession, subscribeToken } from "./auth/token";
import { decideBoot, probeOf } from "./boot/decide";
import { LoginForm, type LoginNotice } from "./components/boot/LoginForm";
import { SetupWizard } from "./components/boot/SetupWizard";
import { Shell } from "./components/shell/Shell";
import { Splash } from "./components/boot/Splash";
import { Unreachable } from "./components/boot/Unreachable";
import { wipeLocalData } from "./pwa/wipe";
import { reportShellReady } from "./shell/shellBuild";

const StandaloneApp = lazy(() => import("./apps/StandaloneApp"));
/** The sign-in note of this tab, kept so a reload right after the session ended still says why. */
const NOTICE_KEY = "mobius.login-notice";
const NOTICES: readonly LoginNotice[] = ["session-ended", "signed-out", "signed-out-everywhere"];

function keepNotice(notice: LoginNotice | null): void {
  try {
    if (notice === null) sessionStorage.removeItem(NOTICE_KEY);
    else sessionStorage.setItem(NOTICE_KEY, notice);
  } catch {
    // No session storage: the note lasts until the page goes.
  }
}

function keptNotice(): LoginNotice | null {
  try {
    const kept = sessionStorage.getItem(NOTICE_KEY);
    return NOTICES.find((n) => n === kept) ?? null;
  } catch {
    return null;
  }
}
/** Set when this page is an app's standalone host (`/apps/<slug>/`). */
const standalone = readStandaloneIdentity();

export function App() {
  const queryClient = useQueryClient();
  const token = useSyncExternalStore(subscribeToken, readToken, () => null);
  const hasToken = token !== null;
  const [notice, setNoticeState] = useState<LoginNotice | null>(() => {
    if (!hasToken) return keptNotice();
    keepNotice(null);
    return null;
  });
  const setNotice = (next: LoginNotice | null) => {
    keepNotice(next);
    setNoticeState(next);
  };

  // This build mounted: the server keeps it (a new build that never says so is rolled back).
  useEffect(() => {
    void reportShellReady();
  }, []);

  useEffect(
    () =>
      onUnauthorized(() => {
        queryClient.removeQueries();
        void wipeLocalData();
        keepNotice("session-ended");
        setNoticeState("session-ended");
      }),
    [queryClient],
  );

  // A new sign-in makes any earlier note stale (adjusted during render, not in an effect).
  const [hadToken, setHadToken] = useState(hasToken);
  if (hadToken !== hasToken) {
    setHadToken(hasToken);
    if (hasToken) setNotice(null);
  }

  const session = useQuery({
    queryKey: sessionKey,
    queryFn: ({ signal }) => fetchSession({ signal }),
    enabled: hasToken,
    staleTime: SESSION_STALE_MS,
  });
  const setupStatus = useQuery({
    queryKey: setupStatusKey,
    queryFn: ({ signal }) => fetchSetupStatus(signal),
    enabled: !hasToken,
    staleTime: Infinity,
  });

  useEffect(() => {
    if (token !== null && session.data) rememberSession(token, session.data);
  }, [token, session.data]);

  const decision = decideBoot({
    hasToken,
    session: probeOf(session, hasToken),
    setupStatus: probeOf(setupStatus, !hasToken),
    offlineSession: rememberedSession(token),
  });

  function signOut(everywhere: boolean) {
    queryClient.removeQueries();
    void wipeLocalData();
    // The session was valid a moment ago, so the server is known to be set up.
    queryClient.setQueryData<SetupStatus>(setupStatusKey, { configured: true, auth_mode: "local" });
    setNotice(everywhere ? "signed-out-everywhere" : "signed-out");
    clearToken();
  }

  switch (decision.screen) {
    case "splash":
      return <Splash />;
    case "setup":
      return (
        <SetupWizard
          onAlreadyConfigured={() => {
            void queryClient.invalidateQueries({ queryKey: setupStatusKey });
          }}
        />
      );
    case "login":
      return <LoginForm notice={notice} />;
    case "shell":
      if (standalone) {
        return (
          <Suspense fallback={<Splash />}>
            <StandaloneApp identity={standalone} owner={decision.session.username} />
          </Suspense>
        );
      }
      return <Shell session={decision.session} onSignOut={signOut} />;
    case "unreachable":
      return (
        <Unreachable
          error={decision.error}
          retrying={decision.retrying}
          onRetry={() => {
            void (decision.probe === "session" ? session.refetch() : setupStatus.refetch());
          }}
        />
      );
  }
}
