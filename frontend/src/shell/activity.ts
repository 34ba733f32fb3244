//! Whether the shell is busy (a chat on screen is streaming): a new service worker waits
//! for an idle moment before it takes over.

import { createStore } from "./store";

const streaming = new Set<string>();
export const busyStore = createStore<boolean>(false);

export function setStreaming(chatId: string, on: boolean): void {
  if (on) streaming.add(chatId);
  else streaming.delete(chatId);
  busyStore.set(streaming.size > 0);
}
