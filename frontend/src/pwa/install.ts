//! Putting Möbius (or a standalone app) on the home screen: the browser's install prompt
//! (Android and desktop Chromium fire `beforeinstallprompt`, often before React mounts, so it is
//! caught here at start-up and kept), whether this is iOS (no prompt: the steps are shown
//! instead), whether the page already runs installed, and the shell's offer: made once (the
//! session it first shows in), then never again.

import { createStore, useStore } from "../shell/store";

/** Chromium's install prompt event (not in TypeScript's DOM types). */
export interface BeforeInstallPromptEvent extends Event {
  prompt: () => Promise<void>;
  userChoice: Promise<{ outcome: "accepted" | "dismissed" }>;
}

/** The prompt the browser offered and nobody used yet, or null. */
export const installPromptStore = createStore<BeforeInstallPromptEvent | null>(null);
/** The page was installed while open (`appinstalled`). */
export const installedStore = createStore<boolean>(false);

window.addEventListener("beforeinstallprompt", (event) => {
  // Keep the browser's own mini-bar away: the offer says it in context, once.
  event.preventDefault();
  installPromptStore.set(event as BeforeInstallPromptEvent);
});
window.addEventListener("appinstalled", () => {
  installPromptStore.set(null);
  installedStore.set(true);
});

export function useInstallPrompt(): BeforeInstallPromptEvent | null {
  return useStore(installPromptStore);
}

export function useInstalledNow(): boolean {
  return useStore(installedStore);
}

/** Shows the browser's prompt; the prompt can be used once, so it is forgotten either way. */
export async function promptInstall(event: BeforeInstallPromptEvent): Promise<"accepted" | "dismissed"> {
  installPromptStore.set(null);
  await event.prompt();
  return (await event.userChoice).outcome;
}

export const isIos = (): boolean =>
  /iPhone|iPad|iPod/.test(navigator.userAgent) || (navigator.platform === "MacIntel" && navigator.maxTouchPoints > 1);

/** The page runs from the home screen (or as an installed desktop app). */
export const isInstalled = (): boolean =>
  window.matchMedia?.("(display-mode: standalone)").matches === true || (navigator as Navigator & { standalone?: boolean }).standalone === true;

const SHELL_OFFER_KEY = "mobius.install-offer.shell";
/** Set in the session (tab, or home-screen launch) where the offer was first shown. */
const SHELL_OFFER_SESSION_KEY = "mobius.install-offer.session";

/**
 * The shell's offer was made: dismissed, acted on, or shown in an earlier session (it is offered
 * once; a reload in the session that showed it keeps it until it is answered).
 */
export function shellOfferDone(): boolean {
  try {
    const state = localStorage.getItem(SHELL_OFFER_KEY);
    if (state === null) return false;
    return state !== "shown" || sessionStorage.getItem(SHELL_OFFER_SESSION_KEY) === null;
  } catch {
    return false;
  }
}

/** The offer is on screen for the first time: later sessions will not show it again. */
export function markShellOfferShown(): void {
  try {
    if (localStorage.getItem(SHELL_OFFER_KEY) !== null) return;
    localStorage.setItem(SHELL_OFFER_KEY, "shown");
    sessionStorage.setItem(SHELL_OFFER_SESSION_KEY, "1");
  } catch {
    // Private mode without storage: the offer may come back next visit.
  }
}

export function markShellOfferDone(how: "dismissed" | "installed"): void {
  try {
    localStorage.setItem(SHELL_OFFER_KEY, how);
  } catch {
    // Private mode without storage: the offer may come back next visit.
  }
}
