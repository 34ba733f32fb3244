//! Whether the screen is wide enough for the persistent sidebar and an app beside the chat
//! (the same 1024 px breakpoint as the stylesheet).

import { createStore, useStore } from "./store";

const query = typeof window.matchMedia === "function" ? window.matchMedia("(min-width: 1024px)") : null;

export const wideStore = createStore<boolean>(query?.matches ?? false);
query?.addEventListener("change", (event) => wideStore.set(event.matches));

export function useWide(): boolean {
  return useStore(wideStore);
}
