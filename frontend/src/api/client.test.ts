import { afterEach, describe, expect, it, vi } from "vitest";
import { readToken, writeToken } from "../auth/token";
import { mockFetch, authHeader } from "../test/fetchMock";
import { ApiError, apiFetch, onUnauthorized, parseRetryAfter } from "./client";

afterEach(() => vi.unstubAllGlobals());

describe("apiFetch", () => {
  it("sends the stored token as a bearer header and returns the parsed body", async () => {
    writeToken("tok-1");
    const { calls } = mockFetch({ "GET /api/auth/session": { status: 200, body: { username: "ada" } } });
    await expect(apiFetch("/api/auth/session")).resolves.toEqual({ username: "ada" });
    expect(authHeader(calls[0]!.init)).toBe("Bearer tok-1");
  });

  it("sends no token when auth is false", async () => {
    writeToken("tok-1");
    const { calls } = mockFetch({ "GET /api/auth/setup/status": { status: 200, body: { configured: true } } });
    await apiFetch("/api/auth/setup/status", { auth: false });
    expect(authHeader(calls[0]!.init)).toBeUndefined();
  });

  it("encodes a body as JSON", async () => {
    const { calls } = mockFetch({ "POST /api/auth/token": { status: 200, body: { access_token: "t" } } });
    await apiFetch("/api/auth/token", { method: "POST", body: { username: "ada", password: "pw" }, auth: false });
    expect(calls[0]!.init.body).toBe('{"username":"ada","password":"pw"}');
    expect((calls[0]!.init.headers as Record<string, string>)["Content-Type"]).toBe("application/json");
  });

  it("parses a {code, message} error into a typed ApiError", async () => {
    mockFetch({ "POST /api/auth/setup": { status: 400, body: { code: "weak_password", message: "Too short." } } });
    const error = await apiFetch("/api/auth/setup", { method: "POST", body: {}, auth: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 400, code: "weak_password", message: "Too short.", retryAfterSeconds: null });
  });

  it("keeps Retry-After on a 429", async () => {
    mockFetch({
      "POST /api/auth/token": {
        status: 429,
        body: { code: "too_many_attempts", message: "Slow down." },
        headers: { "Retry-After": "42" },
      },
    });
    const error = await apiFetch("/api/auth/token", { method: "POST", body: {}, auth: false }).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 429, code: "too_many_attempts", retryAfterSeconds: 42 });
  });

  it("gives a non-JSON error body a generic code naming the status", async () => {
    mockFetch({ "GET /api/health": { status: 502, body: "<html>Bad gateway</html>" } });
    const error = await apiFetch("/api/health").catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 502, code: "http_502" });
  });

  it("reports a failed connection as a network ApiError", async () => {
    mockFetch({ "GET /api/health": "network-error" });
    const error = await apiFetch("/api/health").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).isNetwork).toBe(true);
    expect((error as ApiError).code).toBe("network");
  });

  it("times out with a timeout ApiError", async () => {
    vi.stubGlobal(
      "fetch",
      vi.fn(
        (_input: unknown, init: RequestInit) =>
          new Promise((_resolve, reject) => init.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")))),
      ),
    );
    const error = await apiFetch("/api/health", { timeoutMs: 10 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "timeout", status: 0 });
  });

  it("clears the token and tells listeners when a credentialed call gets a 401", async () => {
    writeToken("tok-1");
    mockFetch({ "GET /api/auth/session": { status: 401, body: { code: "token_revoked", message: "Revoked." } } });
    const heard: string[] = [];
    const stop = onUnauthorized((error) => heard.push(error.code));
    const error = await apiFetch("/api/auth/session").catch((e: unknown) => e);
    stop();
    expect(error).toMatchObject({ status: 401, code: "token_revoked" });
    expect(readToken()).toBeNull();
    expect(heard).toEqual(["token_revoked"]);
  });

  it("a 401 that came before anyone listened reaches the first listener, unless a sign-in came since", async () => {
    writeToken("tok-1");
    mockFetch({ "GET /api/auth/session": { status: 401, body: { code: "token_revoked", message: "Revoked." } } });
    await apiFetch("/api/auth/session").catch(() => undefined);
    expect(readToken()).toBeNull();
    const heard: string[] = [];
    const stop = onUnauthorized((error) => heard.push(error.code));
    stop();
    expect(heard).toEqual(["token_revoked"]);
    const again = vi.fn();
    onUnauthorized(again)();
    expect(again).not.toHaveBeenCalled();

    writeToken("tok-2");
    await apiFetch("/api/auth/session").catch(() => undefined);
    writeToken("tok-3");
    const stale = vi.fn();
    onUnauthorized(stale)();
    expect(stale).not.toHaveBeenCalled();
  });

  it("leaves the token alone when an uncredentialed call gets a 401 (wrong password)", async () => {
    writeToken("tok-1");
    mockFetch({ "POST /api/auth/token": { status: 401, body: { code: "invalid_credentials", message: "No." } } });
    const listener = vi.fn();
    const stop = onUnauthorized(listener);
    await apiFetch("/api/auth/token", { method: "POST", body: {}, auth: false }).catch(() => undefined);
    stop();
    expect(readToken()).toBe("tok-1");
    expect(listener).not.toHaveBeenCalled();
  });

  it("ignores a late 401 for a token that has since been replaced", async () => {
    writeToken("old");
    let answer: (r: Response) => void = () => undefined;
    vi.stubGlobal("fetch", vi.fn(() => new Promise<Response>((resolve) => (answer = resolve))));
    const pending = apiFetch("/api/auth/session").catch((e: unknown) => e);
    writeToken("new");
    answer(new Response(JSON.stringify({ code: "token_revoked", message: "x" }), { status: 401 }));
    await pending;
    expect(readToken()).toBe("new");
  });

  it("refuses paths outside /api/", async () => {
    await expect(apiFetch("/auth/session")).rejects.toThrow(/\/api\//);
  });
});

describe("parseRetryAfter", () => {
  it("reads delta seconds and HTTP dates", () => {
    expect(parseRetryAfter("7")).toBe(7);
    expect(parseRetryAfter(null)).toBeNull();
    expect(parseRetryAfter("soon")).toBeNull();
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(parseRetryAfter("Thu, 01 Jan 2026 00:00:30 GMT", now)).toBe(30);
    expect(parseRetryAfter("Wed, 31 Dec 2025 23:59:00 GMT", now)).toBe(0);
  });
});
