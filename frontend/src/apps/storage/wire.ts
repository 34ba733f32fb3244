//! What crosses between the storage host, the frame and the server: the error a frame receives
//! (`StorageRpcError` → `WireError`), storage paths and their URLs, and stored values read from
//! the server's answers and converted to the kind a read asks for.

import type { ReadKind } from "./appDb";

const MAX_PATH_CHARS = 2048;

/** The fields of an error as it crosses to the frame (`moebius:storage-rpc-result`). */
export interface WireError {
  name: string;
  message: string;
  code: string;
  status: number | undefined;
  path: string | undefined;
  writeId: string | undefined;
  retryable: boolean | undefined;
  refusedValue: unknown;
}

/** A failed storage call, as the frame receives it. */
export class StorageRpcError extends Error {
  readonly code: string;
  readonly status: number;
  readonly path: string | undefined;
  readonly writeId: string | undefined;
  readonly retryable: boolean | undefined;
  readonly refusedValue: unknown;

  constructor(
    code: string,
    message: string,
    status = 0,
    extra: { name?: string; path?: string; writeId?: string; retryable?: boolean; refusedValue?: unknown } = {},
  ) {
    super(message);
    this.name = extra.name ?? "StorageError";
    this.code = code;
    this.status = status;
    this.path = extra.path;
    this.writeId = extra.writeId;
    this.retryable = extra.retryable;
    this.refusedValue = extra.refusedValue;
  }

  toWire(): WireError {
    return {
      name: this.name,
      message: this.message,
      code: this.code,
      status: this.status,
      path: this.path,
      writeId: this.writeId,
      retryable: this.retryable,
      refusedValue: this.refusedValue,
    };
  }
}

/** Any failure as the wire shape (a bug in here never becomes an unhandled exception). */
export function wireError(error: unknown): WireError {
  if (error instanceof StorageRpcError) return error.toWire();
  return new StorageRpcError("storage_error", "The storage request failed.").toWire();
}

/** A value as the server stores it: its kind (from its Content-Type), the value, the type. */
export interface Stored {
  kind: ReadKind;
  value: unknown;
  contentType: string | null;
}

// ---------- paths and URLs ----------

/** `a/b c.json` → `a/b%20c.json` (each segment encoded, slashes kept). */
export function encodePath(path: string): string {
  return path
    .split("/")
    .filter((s) => s !== "")
    .map(encodeURIComponent)
    .join("/");
}

/** The URL of file `path` of app `appId`. */
export function fileUrl(appId: number, path: string): string {
  return `/api/storage/apps/${appId}/${encodePath(path)}`;
}

/** The URL of one page of the listing of `prefix` in app `appId`. */
export function listUrl(appId: number, prefix: string, options: { includeContent?: boolean; cursor?: string | null; limit?: number } = {}): string {
  const query = new URLSearchParams();
  if (options.limit) query.set("limit", String(options.limit));
  if (options.includeContent) query.set("include_content", "true");
  if (options.cursor) query.set("cursor", options.cursor);
  const qs = query.toString();
  return `/api/storage/apps-list/${appId}/${encodePath(prefix)}${qs ? `?${qs}` : ""}`;
}

/** `path` when it is a storage path a frame may use (relative, no `.` or `..`), else a refusal. */
export function checkPath(path: unknown): string {
  if (typeof path !== "string" || path === "" || path.length > MAX_PATH_CHARS || path.startsWith("/") || path.split("/").some((s) => s === ".." || s === ".")) {
    throw new StorageRpcError("invalid_path", `The storage path ${JSON.stringify(path)} is not allowed: use a relative path like "notes/today.json".`, 400);
  }
  return path;
}

/** The kind a read or write names (default `json`), else a refusal. */
export function checkKind(kind: unknown, what: string): ReadKind {
  if (kind === undefined || kind === null) return "json";
  if (kind === "json" || kind === "text" || kind === "blob") return kind;
  throw new StorageRpcError("invalid_argument", `${what}: kind must be "json", "text" or "blob".`, 400, { name: "TypeError" });
}

// ---------- reading responses ----------

function essence(contentType: string | null): string {
  return (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

/** What a stored Content-Type holds. */
export function kindOf(contentType: string | null): ReadKind {
  const type = essence(contentType);
  if (type === "application/json" || type.endsWith("+json")) return "json";
  if (type.startsWith("text/")) return "text";
  return "blob";
}

function kindMismatch(path: string, stored: ReadKind, wanted: ReadKind): StorageRpcError {
  const reader = { json: "get()", text: "getText()", blob: "getBlob()" }[stored];
  return new StorageRpcError("kind_mismatch", `${path} holds ${stored === "json" ? "a JSON document" : stored === "text" ? "text" : "binary data"}; read it with ${reader}${wanted === "blob" ? "" : " or getBlob()"}.`, 415);
}

/** Reads a 200 answer as stored (`kind` from its Content-Type). */
export async function storedFrom(response: Response, path: string): Promise<Stored> {
  const contentType = response.headers.get("Content-Type");
  const kind = kindOf(contentType);
  if (kind === "blob") return { kind, value: await response.blob(), contentType };
  const text = await response.text();
  if (kind === "text") return { kind, value: text, contentType };
  try {
    return { kind, value: JSON.parse(text) as unknown, contentType };
  } catch {
    throw new StorageRpcError("invalid_json", `${path} is not valid JSON.`, 415);
  }
}

/** The stored value as `wanted` (JSON reads as its text or a Blob; text as a Blob). */
export function convert(stored: Stored, wanted: ReadKind, path: string): unknown {
  if (stored.kind === wanted) return stored.value;
  if (wanted === "blob") {
    const text = stored.kind === "json" ? JSON.stringify(stored.value) : String(stored.value);
    return new Blob([text], { type: stored.contentType ?? (stored.kind === "json" ? "application/json" : "text/plain;charset=utf-8") });
  }
  if (wanted === "text" && stored.kind === "json") return JSON.stringify(stored.value);
  throw kindMismatch(path, stored.kind, wanted);
}

/** A refusal of the server as the frame receives it (its `{code, message}` when it sent one). */
export async function errorOf(response: Response, path: string): Promise<StorageRpcError> {
  let message = `Storage answered ${response.status}.`;
  let code = `http_${response.status}`;
  try {
    const body = (await response.json()) as { code?: unknown; message?: unknown };
    if (typeof body.code === "string") code = body.code;
    if (typeof body.message === "string") message = body.message;
  } catch {
    // Not JSON.
  }
  return new StorageRpcError(code, message, response.status, { path });
}

/** Whether two stored values are the same (Blobs never are). */
export const sameValue = (a: unknown, b: unknown) => {
  if (a instanceof Blob || b instanceof Blob) return false;
  try {
    return JSON.stringify(a) === JSON.stringify(b);
  } catch {
    return false;
  }
};
