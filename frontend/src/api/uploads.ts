//! Chat files: uploads (multipart over XHR, for progress), removal, and the short-lived media
//! token image and file URLs carry instead of the owner's token.

import type { Attachment } from "./protocol.gen";
import { ApiError, NO_RESPONSE, apiFetch, reportUnauthorized, requestHeaders } from "./client";
import { readToken } from "../auth/token";
import { noteResponse } from "../shell/online";

/** A stored chat file, as `POST`/`GET /api/chats/{id}/uploads` answer. */
export interface UploadedFile {
  name: string;
  path: string;
  size: number;
  mime_type: string;
  uploaded_at: number;
  url: string;
  width?: number;
  height?: number;
  preview: boolean;
}

/** Files one message carries at most (the server's `MAX_FILES_PER_MESSAGE`). */
export const MAX_FILES_PER_MESSAGE = 10;
/** The server's default per-file limit; a larger file is refused before it is sent. */
export const MAX_FILE_BYTES = 25 * 1024 * 1024;

const enc = encodeURIComponent;

/** The attachment a message records for an uploaded file. */
export function attachmentOf(file: UploadedFile): Attachment {
  const attachment: Attachment = { name: file.name, mime_type: file.mime_type, size: file.size, preview: file.preview };
  if (file.width !== undefined) attachment.width = file.width;
  if (file.height !== undefined) attachment.height = file.height;
  return attachment;
}

/** Uploads one file to the chat, reporting progress (0–1); rejects with an `ApiError`. */
export function uploadFile(chatId: string, file: Blob & { name?: string }, onProgress: (fraction: number) => void, signal?: AbortSignal): Promise<UploadedFile> {
  return new Promise((resolve, reject) => {
    const token = readToken();
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `/api/chats/${enc(chatId)}/uploads`);
    for (const [name, value] of Object.entries(requestHeaders())) xhr.setRequestHeader(name, value);
    if (token !== null) xhr.setRequestHeader("Authorization", `Bearer ${token}`);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable && event.total > 0) onProgress(Math.min(1, event.loaded / event.total));
    };
    xhr.onerror = () => reject(new ApiError(NO_RESPONSE, "network", "Couldn't reach Möbius."));
    xhr.onabort = () => reject(new DOMException("The upload was cancelled.", "AbortError"));
    xhr.onload = () => {
      noteResponse(xhr.status);
      let body: unknown = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        // Not JSON: a proxy's page.
      }
      if (xhr.status >= 200 && xhr.status < 300 && Array.isArray(body) && body[0]) {
        onProgress(1);
        resolve(body[0] as UploadedFile);
        return;
      }
      const error =
        typeof body === "object" && body !== null && "code" in body && "message" in body
          ? new ApiError(xhr.status, String((body as { code: unknown }).code), String((body as { message: unknown }).message))
          : new ApiError(xhr.status, `http_${xhr.status}`, `The upload failed (HTTP ${xhr.status}).`);
      if (xhr.status === 401) reportUnauthorized(error, token);
      reject(error);
    };
    signal?.addEventListener("abort", () => xhr.abort(), { once: true });
    const form = new FormData();
    form.append("files", file, file.name ?? "file");
    xhr.send(form);
  });
}

/** Removes an uploaded file (missing is fine). */
export function deleteUpload(chatId: string, name: string): Promise<void> {
  return apiFetch(`/api/chats/${enc(chatId)}/uploads/${enc(name)}`, { method: "DELETE" });
}

/** A media token for the chat's file URLs: `{token, expires_in}` (seconds). */
export function fetchMediaToken(chatId: string): Promise<{ token: string; expires_in: number }> {
  return apiFetch(`/api/chats/${enc(chatId)}/media-token`, { method: "POST" });
}

/** A file the agent made in the chat's workspace (`GET /api/chats/{id}/workspace`). */
export interface WorkspaceFile {
  /** Relative to the workspace, `/`-separated. */
  path: string;
  size: number;
  /** Last change, Unix milliseconds. */
  modified: number;
}

export interface WorkspaceList {
  files: WorkspaceFile[];
  /** More files were there than listed (the newest are). */
  truncated: boolean;
}

export const workspaceKey = (chatId: string) => ["workspace", chatId] as const;
export const fetchWorkspace = (chatId: string) => apiFetch<WorkspaceList>(`/api/chats/${enc(chatId)}/workspace`);

/** The download URL of a workspace file (add the media token with `withToken`). */
export function workspaceFileUrl(chatId: string, path: string): string {
  return `/api/chats/${enc(chatId)}/workspace/${path.split("/").map(enc).join("/")}`;
}
