// A scripted `fetch` for tests: each route answers with a queued or fixed response.
import { vi } from "vitest";

export type Reply = { status: number; body?: unknown; headers?: Record<string, string> } | "network-error";

/** Replaces global fetch; `routes` maps "METHOD /path" to a reply or a function producing one. */
export function mockFetch(routes: Record<string, Reply | ((init: RequestInit) => Reply)>) {
  const calls: { key: string; init: RequestInit }[] = [];
  const fetchMock = vi.fn((input: RequestInfo | URL, init: RequestInit = {}) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const key = `${init.method ?? "GET"} ${url}`;
    calls.push({ key, init });
    // A key ending in "*" matches any URL with that prefix.
    const route = routes[key] ?? Object.entries(routes).find(([k]) => k.endsWith("*") && key.startsWith(k.slice(0, -1)))?.[1];
    if (route === undefined) return Promise.reject(new Error(`unexpected request ${key}`));
    const reply = typeof route === "function" ? route(init) : route;
    if (reply === "network-error") return Promise.reject(new TypeError("Failed to fetch"));
    const body = reply.body === undefined ? null : typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body);
    return Promise.resolve(new Response(body, { status: reply.status, headers: reply.headers ?? {} }));
  });
  vi.stubGlobal("fetch", fetchMock);
  return { calls, fetchMock };
}

/** The Authorization header a recorded call carried. */
export function authHeader(init: RequestInit): string | undefined {
  return (init.headers as Record<string, string> | undefined)?.Authorization;
}
