//! The one lightbox of the page: any image in a chat opens it with the images it belongs to
//! (a message's attachments, a reply's pictures); the host component shows it.

import { useSyncExternalStore } from "react";

/** One image the lightbox can show. */
export interface LightboxImage {
  /** The full image (with its media token). */
  src: string;
  /** What a screen reader and the caption say. */
  alt: string;
  /** The name a download is saved as. */
  name: string;
}

export interface LightboxState {
  images: LightboxImage[];
  index: number;
}

let current: LightboxState | null = null;
const listeners = new Set<() => void>();

function emit(): void {
  for (const listener of [...listeners]) listener();
}

/** Opens the lightbox on `images[index]`. */
export function openLightbox(images: LightboxImage[], index: number): void {
  if (images.length === 0) return;
  current = { images, index: Math.max(0, Math.min(index, images.length - 1)) };
  emit();
}

/** Closes it. */
export function closeLightbox(): void {
  current = null;
  emit();
}

/** Shows the next (`+1`) or previous (`-1`) image, stopping at the ends. */
export function stepLightbox(delta: number): void {
  if (!current) return;
  const index = Math.max(0, Math.min(current.index + delta, current.images.length - 1));
  if (index === current.index) return;
  current = { ...current, index };
  emit();
}

export function useLightbox(): LightboxState | null {
  return useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    () => current,
    () => null,
  );
}
