//! A frame's virtual localStorage, kept by the shell per app: the frame mirrors its writes here
//! (`moebius:storage-set/remove/clear`) and gets the snapshot back in its next `frame-init`.

import { applyLocalChange, type FrameMessage } from "./broker";
import { APP_LOCAL_PREFIX } from "./keys";
import type { FROM_FRAME } from "./messages";

type LocalChange = Extract<FrameMessage, { type: typeof FROM_FRAME.storageSet | typeof FROM_FRAME.storageRemove | typeof FROM_FRAME.storageClear }>;

export function loadFrameLocal(appId: number): Record<string, string> {
  try {
    const parsed: unknown = JSON.parse(localStorage.getItem(`${APP_LOCAL_PREFIX}${appId}`) ?? "{}");
    if (typeof parsed !== "object" || parsed === null) return {};
    return Object.fromEntries(Object.entries(parsed).filter((entry): entry is [string, string] => typeof entry[1] === "string"));
  } catch {
    return {};
  }
}

/** Applies one change from the frame; a change that would overflow the per-app cap is dropped. */
export function recordFrameLocal(appId: number, change: LocalChange): void {
  const next = applyLocalChange(loadFrameLocal(appId), change);
  if (next === null) return;
  try {
    const key = `${APP_LOCAL_PREFIX}${appId}`;
    if (Object.keys(next).length === 0) localStorage.removeItem(key);
    else localStorage.setItem(key, JSON.stringify(next));
  } catch {
    // Storage full: this change lives only in the frame until it closes.
  }
}
