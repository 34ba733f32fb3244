//! The composer's attachments: files picked, pasted or dropped, each uploaded as soon as the
//! device is online (with its progress), removable before sending; a message waits until they
//! are all uploaded. Pure rules here; `useAttachments` runs the uploads.

import type { Attachment } from "../api/protocol.gen";
import { MAX_FILES_PER_MESSAGE, MAX_FILE_BYTES, attachmentOf, type UploadedFile } from "../api/uploads";

export type StagedStatus = "waiting" | "uploading" | "done" | "error";

/** One attachment in the composer. */
export interface Staged {
  id: string;
  name: string;
  size: number;
  /** The browser's idea of the type (for the chip only; the server sniffs the bytes). */
  type: string;
  status: StagedStatus;
  /** 0–1 while uploading. */
  progress: number;
  /** What the server stored (its name may differ from the picked file's). */
  uploaded: UploadedFile | null;
  error: string | null;
  /** The upload was cut off by the network: it starts again when the device is back online. */
  resumable?: boolean;
  /** A local object URL for an image's thumbnail before (and after) it is uploaded. */
  previewUrl: string | null;
}

export type StagedAction =
  | { type: "add"; items: Staged[] }
  | { type: "uploading"; id: string }
  | { type: "progress"; id: string; progress: number }
  | { type: "done"; id: string; file: UploadedFile }
  | { type: "failed"; id: string; error: string; resumable?: boolean }
  | { type: "resume" }
  | { type: "retry"; id: string }
  | { type: "remove"; id: string }
  | { type: "clear" };

export function stagedReducer(list: Staged[], action: StagedAction): Staged[] {
  const update = (id: string, change: (s: Staged) => Staged) => list.map((s) => (s.id === id ? change(s) : s));
  switch (action.type) {
    case "add":
      return [...list, ...action.items];
    case "uploading":
      return update(action.id, (s) => ({ ...s, status: "uploading", progress: 0, error: null }));
    case "progress":
      return update(action.id, (s) => (s.status === "uploading" ? { ...s, progress: action.progress } : s));
    case "done":
      return update(action.id, (s) => ({ ...s, status: "done", progress: 1, uploaded: action.file, name: action.file.name }));
    case "failed":
      return update(action.id, (s) => ({ ...s, status: "error", error: action.error, resumable: action.resumable ?? false }));
    case "resume":
      return list.some((s) => s.status === "error" && s.resumable)
        ? list.map((s) => (s.status === "error" && s.resumable ? { ...s, status: "waiting", error: null, resumable: false, progress: 0 } : s))
        : list;
    case "retry":
      return update(action.id, (s) => (s.status === "error" ? { ...s, status: "waiting", error: null, progress: 0 } : s));
    case "remove":
      return list.filter((s) => s.id !== action.id);
    case "clear":
      return [];
  }
}

/** Which of `files` may join `list`, and why the others may not. */
export function admit(list: readonly Staged[], files: readonly { name: string; size: number }[]): { accepted: number[]; refusal: string | null } {
  const accepted: number[] = [];
  let refusal: string | null = null;
  let room = MAX_FILES_PER_MESSAGE - list.length;
  files.forEach((file, i) => {
    if (file.size > MAX_FILE_BYTES) {
      refusal = `${file.name} is larger than ${MAX_FILE_BYTES / (1024 * 1024)} MB.`;
    } else if (file.size === 0) {
      refusal = `${file.name} is empty.`;
    } else if (room <= 0) {
      refusal = `A message takes at most ${MAX_FILES_PER_MESSAGE} files.`;
    } else {
      accepted.push(i);
      room -= 1;
    }
  });
  return { accepted, refusal };
}

/** Uploads still to finish (waiting for the network, or on their way). */
export function uploading(list: readonly Staged[]): boolean {
  return list.some((s) => s.status === "waiting" || s.status === "uploading");
}

/** Uploads still to finish, counting those cut off by the network (they resume online). */
export function pendingUploads(list: readonly Staged[]): boolean {
  return list.some((s) => s.status === "waiting" || s.status === "uploading" || (s.status === "error" && s.resumable));
}

/** A file the server refused: the message cannot go until it is removed (or retried). */
export function failed(list: readonly Staged[]): boolean {
  return list.some((s) => s.status === "error" && !s.resumable);
}

/** What the message records for its uploaded files. */
export function attachmentsOf(list: readonly Staged[]): Attachment[] {
  return list.flatMap((s) => (s.status === "done" && s.uploaded ? [attachmentOf(s.uploaded)] : []));
}

/** A staged entry for an upload already on the server (a draft kept across reloads). */
export function stagedFromUpload(file: UploadedFile): Staged {
  return { id: `u:${file.name}`, name: file.name, size: file.size, type: file.mime_type, status: "done", progress: 1, uploaded: file, error: null, previewUrl: null };
}
