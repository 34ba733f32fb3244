import { afterEach, describe, expect, it, vi } from "vitest";
import { runStream, SseParser } from "./sse";

afterEach(() => vi.unstubAllGlobals());

describe("SseParser", () => {
  it("parses numbered and unnumbered events across arbitrary chunk boundaries", () => {
    const text = 'id: 4\ndata: {"seq":4}\n\n: keepalive\n\ndata: {"type":"catch_up_done"}\r\n\r\nid: 5\ndata: a\ndata: b\n\n';
    for (let split = 1; split < text.length; split++) {
      const parser = new SseParser();
      const out = [...parser.push(text.slice(0, split)), ...parser.push(text.slice(split))];
      expect(out).toEqual([
        { id: "4", event: null, data: '{"seq":4}' },
        { id: null, event: null, data: '{"type":"catch_up_done"}' },
        { id: "5", event: null, data: "a\nb" },
      ]);
    }
  });

  it("counts keepalive comments as reads", () => {
    const parser = new SseParser();
    expect(parser.push(": keepalive\n", 1234)).toEqual([]);
    expect(parser.lastReadAt).toBe(1234);
  });
});

describe("runStream", () => {
  it("sends the bearer token and Last-Event-ID, and reports EOF", async () => {
    const seen: RequestInit[] = [];
    vi.stubGlobal(
      "fetch",
      vi.fn((_url: string, init: RequestInit) => {
        seen.push(init);
        return Promise.resolve(new Response('id: 8\ndata: {"seq":8,"type":"text"}\n\n', { status: 200 }));
      }),
    );
    const messages: string[] = [];
    const end = await runStream({
      url: "/api/chats/c/stream",
      token: "tok",
      lastEventId: "7",
      signal: new AbortController().signal,
      onMessage: (m) => messages.push(m.data),
    });
    expect(end).toEqual({ kind: "eof" });
    expect(messages).toEqual(['{"seq":8,"type":"text"}']);
    expect(seen[0]?.headers).toMatchObject({ Authorization: "Bearer tok", "Last-Event-ID": "7" });
  });

  it("reports HTTP statuses and network failures without throwing", async () => {
    vi.stubGlobal("fetch", vi.fn(() => Promise.resolve(new Response("{}", { status: 401 }))));
    const base = { url: "/x", token: null, lastEventId: null, signal: new AbortController().signal, onMessage: () => undefined };
    expect(await runStream(base)).toEqual({ kind: "http", status: 401 });
    vi.stubGlobal("fetch", vi.fn(() => Promise.reject(new TypeError("offline"))));
    expect(await runStream(base)).toEqual({ kind: "network" });
  });
});
