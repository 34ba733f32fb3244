//! Runs the composer's uploads: each added file is uploaded as soon as the device is online
//! (waiting ones start when it comes back), with its progress; removing one cancels its upload
//! or deletes it on the server. Uploaded files stay with the chat's draft across reloads.

import { useCallback, useEffect, useReducer, useRef } from "react";
import { ApiError } from "../api/client";
import { deleteUpload, uploadFile, type UploadedFile } from "../api/uploads";
import { recheckOnline } from "../shell/online";
import { admit, stagedFromUpload, stagedReducer, type Staged } from "./attachments";
import { loadDraftFiles, saveDraftFiles } from "./persist";

export interface Attachments {
  items: Staged[];
  /** Adds picked, pasted or dropped files; answers why some were refused (or null). */
  add: (files: readonly File[]) => string | null;
  remove: (id: string) => void;
  retry: (id: string) => void;
  /** Forgets them all without deleting them (they went with a message). */
  clear: () => void;
}

let nextId = 0;

export function useAttachments(owner: string, chatId: string, online: boolean): Attachments {
  const [items, dispatch] = useReducer(stagedReducer, undefined, () => loadDraftFiles(owner, chatId).map(stagedFromUpload));
  const files = useRef(new Map<string, File>());
  const aborts = useRef(new Map<string, AbortController>());
  const itemsRef = useRef(items);
  useEffect(() => {
    itemsRef.current = items;
  });

  useEffect(() => {
    saveDraftFiles(owner, chatId, items.flatMap((s): UploadedFile[] => (s.status === "done" && s.uploaded ? [s.uploaded] : [])));
  }, [owner, chatId, items]);

  // Back online: uploads the network cut off start again.
  useEffect(() => {
    if (online) dispatch({ type: "resume" });
  }, [online]);

  // Start what waits, once online.
  useEffect(() => {
    if (!online) return;
    for (const item of items) {
      const file = files.current.get(item.id);
      if (item.status !== "waiting" || !file) continue;
      const controller = new AbortController();
      aborts.current.set(item.id, controller);
      dispatch({ type: "uploading", id: item.id });
      uploadFile(chatId, file, (progress) => dispatch({ type: "progress", id: item.id, progress }), controller.signal)
        .then((stored) => {
          files.current.delete(item.id);
          dispatch({ type: "done", id: item.id, file: stored });
        })
        .catch((error: unknown) => {
          if (controller.signal.aborted) return;
          if (error instanceof ApiError && error.isNetwork) {
            // The connection dropped: the upload starts again once the device is back online.
            dispatch({ type: "failed", id: item.id, error: "Waiting for the connection…", resumable: true });
            void recheckOnline();
            return;
          }
          dispatch({ type: "failed", id: item.id, error: error instanceof Error ? error.message : "The upload failed." });
        })
        .finally(() => aborts.current.delete(item.id));
    }
  }, [items, online, chatId]);

  // Leaving the chat cancels uploads in progress (their files are not kept).
  useEffect(
    () => () => {
      for (const controller of aborts.current.values()) controller.abort();
      for (const item of itemsRef.current) if (item.previewUrl) URL.revokeObjectURL(item.previewUrl);
    },
    [],
  );

  const add = useCallback((picked: readonly File[]) => {
    const { accepted, refusal } = admit(itemsRef.current, picked);
    const added: Staged[] = accepted.flatMap((i) => {
      const file = picked[i];
      if (!file) return [];
      const id = `f:${Date.now()}:${nextId++}`;
      files.current.set(id, file);
      const previewUrl = file.type.startsWith("image/") && typeof URL.createObjectURL === "function" ? URL.createObjectURL(file) : null;
      return [{ id, name: file.name || "pasted image", size: file.size, type: file.type, status: "waiting", progress: 0, uploaded: null, error: null, previewUrl }];
    });
    if (added.length > 0) dispatch({ type: "add", items: added });
    return refusal;
  }, []);

  const remove = useCallback(
    (id: string) => {
      const item = itemsRef.current.find((s) => s.id === id);
      aborts.current.get(id)?.abort();
      files.current.delete(id);
      if (item?.previewUrl) URL.revokeObjectURL(item.previewUrl);
      if (item?.uploaded) void deleteUpload(chatId, item.uploaded.name).catch(() => undefined);
      dispatch({ type: "remove", id });
    },
    [chatId],
  );

  const retry = useCallback((id: string) => dispatch({ type: "retry", id }), []);
  const clear = useCallback(() => {
    for (const item of itemsRef.current) if (item.previewUrl) URL.revokeObjectURL(item.previewUrl);
    files.current.clear();
    dispatch({ type: "clear" });
  }, []);

  return { items, add, remove, retry, clear };
}
