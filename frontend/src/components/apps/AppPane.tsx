//! The place an open app lives: beside the chat on wide screens (with Close), over everything
//! on phones (with Back). Its bar names the app and links to its standalone host; the canvas
//! itself (the frame and its broker) loads on demand. In immersive mode (the app asked, see
//! AppCanvas) the bar is hidden and the canvas shows its own way out.

import { lazy, Suspense, useEffect, useRef, useState } from "react";
import type { AppSummary } from "../../api/apps";
import type { HostRequest } from "../../apps/host";
import type { AppIntent } from "../../shell/router";
import { wideStore } from "../../shell/layout";
import { useOnline } from "../../shell/online";
import { Icon } from "../ui/Icon";

const AppCanvas = lazy(() => import("../../apps/AppCanvas"));

export interface AppPaneProps {
  app: AppSummary | undefined;
  /** True while the app list is still loading. */
  loading: boolean;
  onClose: () => void;
  onHostRequest: (request: HostRequest) => void;
  /** The deep-link intent the app was opened with. */
  intent?: AppIntent | null;
}

export function AppPane({ app, loading, onClose, onHostRequest, intent = null }: AppPaneProps) {
  const name = app?.name ?? "App";
  const online = useOnline();
  const [immersive, setImmersive] = useState(false);
  // Full screen on a phone, the pane takes focus (the rest of the shell is inert meanwhile).
  const backRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (!wideStore.get()) backRef.current?.focus();
  }, []);
  return (
    <section className="app-pane" aria-label={name} data-immersive={immersive || undefined}>
      <header className="app-pane-bar" hidden={immersive}>
        <button ref={backRef} type="button" className="icon-button app-pane-back" aria-label="Back" onClick={onClose}>
          <Icon name="back" size={22} />
        </button>
        {app && <img className="app-icon" src={app.icon_url} alt="" width={24} height={24} />}
        <h2 className="app-pane-title">{app ? app.name : loading ? "Opening…" : "App not found"}</h2>
        {!online && (
          <span className="app-pane-offline" role="status">
            <Icon name="offline" size={14} />
            Offline
          </span>
        )}
        {app && (
          <a className="icon-button" href={app.standalone_url} target="_blank" rel="noopener" aria-label={`Open ${app.name} in its own window`}>
            <Icon name="external" size={18} />
          </a>
        )}
        <button type="button" className="icon-button app-pane-close" aria-label={`Close ${name}`} onClick={onClose}>
          <Icon name="close" size={20} />
        </button>
      </header>
      <div className="app-pane-body">
        {app ? (
          <Suspense
            fallback={
              <div className="app-overlay" role="status" aria-label={`Opening ${app.name}`}>
                <span className="skeleton app-overlay-bar" />
              </div>
            }
          >
            <AppCanvas key={`${app.id}:${app.v}`} app={app} onHostRequest={onHostRequest} onImmersiveChange={setImmersive} intent={intent} />
          </Suspense>
        ) : loading ? (
          <div className="app-overlay" role="status" aria-label="Opening the app">
            <span className="skeleton app-overlay-bar" />
          </div>
        ) : (
          <div className="app-overlay" role="alert">
            <p className="app-overlay-title">This app isn't available.</p>
            <p className="app-overlay-lead">It may have been deleted. Deleted apps can be restored for a week.</p>
          </div>
        )}
      </div>
    </section>
  );
}
