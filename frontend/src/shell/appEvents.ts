//! "An app was built in this chat": announced by the system stream (`app_preview_ready`,
//! `app_updated`) and by the chat's own stream (`app_updated`); the shell decides whether to
//! open the preview.

export interface AppPreview {
  appId: number;
  chatId: string | null;
}

const listeners = new Set<(preview: AppPreview) => void>();

export function announceAppPreview(preview: AppPreview): void {
  for (const listener of [...listeners]) listener(preview);
}

export function onAppPreview(listener: (preview: AppPreview) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
