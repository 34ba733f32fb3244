//! The standalone host of one app (`/apps/<slug>/`, installable with its own manifest): the same
//! canvas and opaque frame as in the shell, full screen, with no shell chrome (so immersive mode
//! hides nothing here; the canvas still answers it and shows its exit button). What the app asks
//! of the shell (a chat, Settings, another app) opens the shell itself.

import { useQuery } from "@tanstack/react-query";
import { useEffect, useRef } from "react";
import { appKey, fetchApp, markAppOpened } from "../api/apps";
import { ApiError } from "../api/client";
import { saveDraft } from "../chat/persist";
import { useOnline } from "../shell/online";
import AppCanvas from "./AppCanvas";
import { crashDraft, type HostRequest } from "./host";
import type { StandaloneIdentity } from "./standalone";

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
  });
  const app = query.data;

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
        location.assign(`/?app=${request.appId}`);
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
