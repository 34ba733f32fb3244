import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ChatDetail } from "../api/types";
import { writeToken } from "../auth/token";
import { ChatView } from "./ChatView";

afterEach(() => vi.unstubAllGlobals());

const running: ChatDetail = {
  id: "c1",
  title: "Chat",
  provider: "claude",
  messages: [
    { role: "user", content: "go", ts: 1, cid: "u1" },
    { role: "assistant", content: "", ts: 2, run_id: "r1", live: true, blocks: [{ type: "text", item_id: "t", content: "Working on it" }] },
  ],
  offset: 0,
  total: 2,
  has_more: false,
  running: true,
  run_id: "r1",
  pending_question_id: null,
  pending_messages: [
    { cid: "q1", content: "first" },
    { cid: "q2", content: "second" },
  ],
  seq: 7,
};

/** A stream that sends `events` and then stays open, like the server's. */
function openStream(events: object[]): Response {
  const text = events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("");
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(text));
    },
  });
  return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

describe("ChatView stop", () => {
  it("clears the queue before asking to stop, then re-sends only the cleared rows as one message", async () => {
    writeToken("tok");
    const log: string[] = [];
    let trayShownAtStop: boolean | null = null;
    const sent: unknown[] = [];
    const streamHeaders: (string | undefined)[] = [];
    vi.stubGlobal(
      "fetch",
      vi.fn((input: string, init: RequestInit = {}) => {
        const key = `${init.method ?? "GET"} ${input}`;
        log.push(key);
        if (key === "GET /api/chats/c1?limit=20") return Promise.resolve(json(running));
        if (key === "GET /api/chats/c1/stream") {
          streamHeaders.push((init.headers as Record<string, string>)["Last-Event-ID"]);
          return Promise.resolve(openStream([{ type: "catch_up_done", seq: 7 }]));
        }
        if (key === "POST /api/chat/stop") {
          trayShownAtStop = screen.queryByRole("region", { name: "Queued messages" }) !== null;
          return Promise.resolve(json({ stopped: true, cleared_pending_cids: ["q2", "q1"] }));
        }
        if (key === "POST /api/chats/c1/messages") {
          sent.push(JSON.parse(init.body as string));
          return Promise.resolve(json({ status: "queued", position: 1, message: { cid: "x", content: "" }, pending_messages: [] }, 202));
        }
        if (key === "GET /api/auth/providers/status") return Promise.resolve(json({ default_provider: "claude", providers: { claude: { connected: true } } }));
        return Promise.reject(new Error(`unexpected ${key}`));
      }),
    );
    const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
    render(
      <QueryClientProvider client={client}>
        <ChatView chatId="c1" owner="ada" summary={undefined} firstRun={false} onTitle={() => undefined} onOpenSettings={() => undefined} />
      </QueryClientProvider>,
    );
    await screen.findByText("Working on it");
    await screen.findByRole("region", { name: "Queued messages" });
    await waitFor(() => expect(streamHeaders).toEqual(["7"]));

    fireEvent.click(screen.getByRole("button", { name: "Stop" }));
    await waitFor(() => expect(sent).toHaveLength(1));
    expect(trayShownAtStop).toBe(false);
    expect(sent[0]).toMatchObject({ content: "second\nfirst" });
  });
});
