//! Registers the service worker from a module (the CSP forbids inline scripts) and applies
//! updates only at an idle moment: a waiting worker is told to take over when no chat on
//! screen is streaming and the composer is not in use, then the page reloads once.

import { busyStore } from "../shell/activity";

const UPDATE_CHECK_MS = 60 * 60 * 1000;

function composerInUse(): boolean {
  const active = document.activeElement;
  return active instanceof HTMLTextAreaElement && active.value !== "";
}

export function registerServiceWorker(): void {
  if (!("serviceWorker" in navigator) || import.meta.env.DEV) return;
  const container = navigator.serviceWorker;
  // First install claims the page itself; only a replacement should reload it.
  const hadController = container.controller !== null;
  let reloading = false;
  container.addEventListener("controllerchange", () => {
    if (!hadController || reloading) return;
    reloading = true;
    location.reload();
  });

  void container
    .register("/sw.js", { scope: "/", updateViaCache: "none" })
    .then((registration) => {
      const offer = () => {
        const waiting = registration.waiting;
        if (!waiting || !container.controller) return;
        if (busyStore.get() || composerInUse()) return;
        waiting.postMessage({ type: "SKIP_WAITING" });
      };
      registration.addEventListener("updatefound", () => {
        registration.installing?.addEventListener("statechange", offer);
      });
      busyStore.subscribe(offer);
      document.addEventListener("visibilitychange", () => {
        if (document.visibilityState === "hidden") offer();
        else void registration.update().catch(() => undefined);
      });
      setInterval(() => void registration.update().catch(() => undefined), UPDATE_CHECK_MS);
      offer();
    })
    .catch(() => undefined);
}
