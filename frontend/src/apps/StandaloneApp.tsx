//! The standalone host of one app (`/apps/<slug>/`, installable with its own manifest): the same
//! canvas and opaque frame as in the shell, full screen, with no shell chrome (so immersive mode
//! hides nothing here; the canvas still answers it and shows its exit button). What the app asks
//! of the shell (a chat, Settings, another app) opens the shell itself.

import { useQuery } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { appKey, fetchApp, markAppOpened, mintInstallPass, type AppSummary } from "../api/apps";
import { ApiError } from "../api/client";
import { saveDraft } from "../chat/persist";
import { useOnline } from "../shell/online";
import AppCanvas from "./AppCanvas";
import { crashDraft, type HostRequest } from "./host";
import type { StandaloneIdentity } from "./standalone";
import { Icon } from "../components/ui/Icon";
import { isInstalled, isIos, promptInstall, useInstallPrompt } from "../pwa/install";

/** How often the open app asks whether a new version landed. */
const UPDATE_POLL_MS = 60_000;

/**
 * Offers to put the app on the home screen: Android's own prompt when the browser offers one;
 * on iOS, the steps — and a one-use install pass in the address and the manifest's start URL,
 * so the installed app (whose storage iOS keeps apart) signs in once by itself.
 */
function InstallOffer({ app }: { app: AppSummary }) {
  const prompt = useInstallPrompt();
  const [dismissed, setDismissed] = useState(() => sessionStorage.getItem(`mobius.install-offer.${app.id}`) === "dismissed");
  const [ios, setIos] = useState<"offer" | "steps" | "failed" | null>(() => (isIos() && !isInstalled() ? "offer" : null));
  const dismiss = () => {
    sessionStorage.setItem(`mobius.install-offer.${app.id}`, "dismissed");
    setDismissed(true);
  };
  const prepareIos = async () => {
    try {
      const pass = await mintInstallPass(app.id);
      const link = document.querySelector<HTMLLinkElement>('link[rel="manifest"]');
      if (link) link.href = `/apps/${pass.slug}/manifest.json?install_pass=${encodeURIComponent(pass.install_pass)}`;
      history.replaceState(history.state, "", `${location.pathname}?install_pass=${encodeURIComponent(pass.install_pass)}`);
      setIos("steps");
    } catch {
      setIos("failed");
    }
  };
  if (dismissed || isInstalled() || (!prompt && !ios)) return null;
  return (
    <div className="install-offer" role="region" aria-label={`Install ${app.name}`}>
      {prompt ? (
        <>
          <span className="install-offer-text">Put {app.name} on your home screen</span>
          <button
            type="button"
            className="btn btn-primary btn-small"
            onClick={() => void promptInstall(prompt)}
          >
            Install
          </button>
        </>
      ) : ios === "steps" ? (
        <span className="install-offer-text">
          Tap <strong>Share</strong>, then <strong>Add to Home Screen</strong>. Open it from there within a minute and it signs in by itself.
        </span>
      ) : ios === "failed" ? (
        <span className="install-offer-text">Couldn't prepare the sign-in for the home screen; you can still add it and sign in there.</span>
      ) : (
        <>
          <span className="install-offer-text">Add {app.name} to your home screen</span>
          <button type="button" className="btn btn-primary btn-small" onClick={() => void prepareIos()}>
            How
          </button>
        </>
      )}
      <button type="button" className="icon-button icon-button-small" aria-label="Dismiss" onClick={dismiss}>
        <Icon name="close" size={16} />
      </button>
    </div>
  );
}

export interface StandaloneAppProps {
  identity: StandaloneIdentity;
  owner: string;
}

export default function StandaloneApp({ identity, owner }: StandaloneAppProps) {
  const online = useOnline();
  const query = useQuery({
    queryKey: appKey(identity.id),
    // Offline, the service worker answers with the copy it kept (shell data).
    queryFn: ({ signal }) => fetchApp(identity.id, signal),
    retry: false,
    staleTime: 30_000,
    // A new version may land while the app is open: it is announced, not swapped in.
    refetchInterval: UPDATE_POLL_MS,
    refetchOnWindowFocus: true,
  });
  const latest = query.data;
  const [pinned, setPinned] = useState<AppSummary | null>(null);
  if (latest && pinned === null) setPinned(latest);
  const app = pinned && latest && pinned.id === latest.id ? pinned : latest;
  const updated = latest !== undefined && app !== undefined && latest.v !== app.v;

  const marked = useRef<string | null>(null);
  useEffect(() => {
    if (!app || !online || marked.current === app.v) return;
    marked.current = app.v;
    void markAppOpened(app.id).catch(() => undefined);
  }, [app, online]);

  const onHostRequest = (request: HostRequest) => {
    switch (request.kind) {
      case "new-chat":
        // The shell's "/" opens a chat; a new one is a click away there.
        location.assign("/");
        return;
      case "open-chat":
        if (request.draft) saveDraft(owner, request.chatId, request.draft);
        location.assign(`/chat/${encodeURIComponent(request.chatId)}`);
        return;
      case "open-app":
        location.assign(`/?app=${encodeURIComponent(String(request.appId))}${request.intent ? `&intent=${request.intent}` : ""}`);
        return;
      case "install-app":
        location.assign(`/install?source=${encodeURIComponent(request.source)}`);
        return;
      case "manage-app":
        location.assign(`/apps?${request.action}=${request.appId}`);
        return;
      case "open-settings":
        location.assign("/settings");
        return;
      case "report":
        if (app?.chat_id) {
          saveDraft(owner, app.chat_id, crashDraft(app.name, request.message));
          location.assign(`/chat/${encodeURIComponent(app.chat_id)}`);
        } else location.assign("/");
        return;
    }
  };

  const gone = query.error instanceof ApiError && query.error.status === 404;
  return (
    <div className="standalone">
      <title>{app?.name ?? identity.name}</title>
      {updated && latest && (
        <button type="button" className="updated-pill" onClick={() => setPinned(latest)}>
          <Icon name="refresh" size={16} />
          Updated · tap to reload
        </button>
      )}
      {app && <InstallOffer app={app} />}
      {app ? (
        <AppCanvas key={`${app.id}:${app.v}`} app={app} onHostRequest={onHostRequest} />
      ) : (
        <div className="app-overlay" role={query.isError ? "alert" : "status"} aria-label={query.isError ? undefined : `Opening ${identity.name}`}>
          {query.isError ? (
            <>
              <p className="app-overlay-title">{gone ? `${identity.name} isn't installed any more.` : `Couldn't open ${identity.name}.`}</p>
              <p className="app-overlay-lead">
                {gone ? "It may have been deleted." : online ? "Möbius didn't answer." : "You're offline, and this app isn't saved on this device yet."}
              </p>
              <div className="app-overlay-actions">
                {!gone && (
                  <button type="button" className="btn btn-primary" onClick={() => void query.refetch()}>
                    Try again
                  </button>
                )}
                <a className="btn btn-secondary" href="/">
                  Open Möbius
                </a>
              </div>
            </>
          ) : (
            <>
              <p className="app-overlay-title">{identity.name}</p>
              <span className="skeleton app-overlay-bar" />
            </>
          )}
        </div>
      )}
    </div>
  );
}
