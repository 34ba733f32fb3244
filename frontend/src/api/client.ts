//! The one door to the server: `apiFetch` adds the bearer token, parses `{code, message}`
//! errors into `ApiError`, and turns a 401 on a credentialed call into a sign-out.

import { clearToken, readToken } from "../auth/token";
import { noteResponse } from "../shell/online";

/** Status used for failures where no HTTP response arrived. */
export const NO_RESPONSE = 0;

/** Every failure `apiFetch` reports: an HTTP error, a bad body, a timeout or no network. */
export class ApiError extends Error {
  override readonly name = "ApiError";
  /** HTTP status, or `NO_RESPONSE` when the server could not be reached. */
  readonly status: number;
  /** Stable snake_case code from the server, or a client-side one (`network`, `timeout`, `http_502`, …). */
  readonly code: string;
  /** Seconds from a `Retry-After` header, when the server sent one. */
  readonly retryAfterSeconds: number | null;

  constructor(status: number, code: string, message: string, retryAfterSeconds: number | null = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfterSeconds = retryAfterSeconds;
  }

  /** True when no response arrived (offline, server down, timeout). */
  get isNetwork(): boolean {
    return this.status === NO_RESPONSE;
  }
}

/** True for an `ApiError` carrying a 401. */
export function isUnauthorized(error: unknown): boolean {
  return error instanceof ApiError && error.status === 401;
}

/** Options for one request. */
export interface ApiFetchOptions {
  method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Sent as JSON. */
  body?: unknown;
  /** `true` (default): send the stored token; `false`: send none; a string: send that token. */
  auth?: boolean | string;
  /** Gives up with a `timeout` ApiError after this many milliseconds. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** `json` (default) parses the body; `text` returns it as a string. */
  responseType?: "json" | "text";
}

type UnauthorizedListener = (error: ApiError) => void;

const unauthorizedListeners = new Set<UnauthorizedListener>();

/**
 * A 401 that came while nobody listened (a start-up prefetch answered before the shell
 * mounted): the first listener hears it, unless a sign-in has brought a token since.
 */
let unheard: ApiError | null = null;

/** Called when a credentialed call gets a 401, just before the token is cleared. */
export function onUnauthorized(listener: UnauthorizedListener): () => void {
  unauthorizedListeners.add(listener);
  const missed = unheard;
  unheard = null;
  if (missed !== null && readToken() === null) listener(missed);
  return () => unauthorizedListeners.delete(listener);
}

const DEFAULT_TIMEOUT_MS = 15_000;

/** Headers every request of this page carries besides the token (the embedded chat's instance). */
const extraHeaders: Record<string, string> = {};

/** Adds `name: value` to every later request (and stream) of this page; `null` removes it. */
export function setRequestHeader(name: string, value: string | null): void {
  if (value === null) delete extraHeaders[name];
  else extraHeaders[name] = value;
}

/** The extra headers, for the stream client. */
export function requestHeaders(): Record<string, string> {
  return { ...extraHeaders };
}

/** Calls a JSON API under `/api/` and returns the parsed body (undefined for 204). */
export async function apiFetch<T>(path: string, options: ApiFetchOptions = {}): Promise<T> {
  if (!path.startsWith("/api/")) throw new Error(`apiFetch expects an /api/ path, got ${path}`);
  const { method = "GET", body, auth = true, timeoutMs = DEFAULT_TIMEOUT_MS, signal, responseType = "json" } = options;

  const token = auth === true ? readToken() : auth === false ? null : auth;
  const headers: Record<string, string> = { ...extraHeaders, Accept: "application/json" };
  if (token !== null) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";

  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const forwardAbort = () => controller.abort();
  signal?.addEventListener("abort", forwardAbort, { once: true });

  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? null : JSON.stringify(body),
      signal: controller.signal,
      credentials: "same-origin",
    });
  } catch (cause) {
    if (timedOut) throw new ApiError(NO_RESPONSE, "timeout", "Möbius took too long to answer.");
    if (signal?.aborted) throw cause;
    throw new ApiError(NO_RESPONSE, "network", "Couldn't reach Möbius.");
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", forwardAbort);
  }
  noteResponse(response.status);

  if (!response.ok) {
    const error = await errorFrom(response);
    // Only the token this request carried can be declared dead: a late 401 for an older
    // token must not sign out a session that started since.
    if (error.status === 401 && auth === true) reportUnauthorized(error, token);
    throw error;
  }
  if (response.status === 204) return undefined as T;
  if (responseType === "text") return (await response.text()) as T;
  try {
    return (await response.json()) as T;
  } catch {
    throw new ApiError(response.status, "bad_response", "Möbius sent a reply this app couldn't read.");
  }
}

/** Signs out when `token` (the one a request carried) is still the current one. Shared with the
 *  stream clients, which call `fetch` directly. */
export function reportUnauthorized(error: ApiError, token: string | null): void {
  if (token === null || token !== readToken()) return;
  if (unauthorizedListeners.size === 0) unheard = error;
  for (const listener of [...unauthorizedListeners]) listener(error);
  clearToken();
}

async function errorFrom(response: Response): Promise<ApiError> {
  const retryAfter = parseRetryAfter(response.headers.get("Retry-After"));
  let parsed: unknown = null;
  try {
    parsed = await response.json();
  } catch {
    // Not JSON (a proxy page, an empty body): fall through to the generic error.
  }
  if (isErrorBody(parsed)) return new ApiError(response.status, parsed.code, parsed.message, retryAfter);
  return new ApiError(
    response.status,
    `http_${response.status}`,
    `Möbius answered with an unexpected error (HTTP ${response.status}).`,
    retryAfter,
  );
}

function isErrorBody(value: unknown): value is { code: string; message: string } {
  if (typeof value !== "object" || value === null) return false;
  const record = value as Record<string, unknown>;
  return typeof record.code === "string" && typeof record.message === "string";
}

/** Reads `Retry-After` as whole seconds from now: delta-seconds or an HTTP date. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return null;
  return Math.max(0, Math.ceil((date - now) / 1000));
}
