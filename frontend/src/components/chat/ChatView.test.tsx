import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ChatPage } from "../../api/types";
import { writeToken } from "../../auth/token";
import { ChatView } from "./ChatView";

afterEach(() => vi.unstubAllGlobals());

const running: ChatPage = {
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
    { role: "user", ts: 1, cid: "q1", content: "first" },
    { role: "user", ts: 1, cid: "q2", content: "second" },
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
          return Promise.resolve(json({ status: "queued", position: 1, message: { role: "user", ts: 1, cid: "x", content: "" }, pending_messages: [] }, 202));
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
    // With messages queued, Stop asks first what becomes of them; nothing is stopped yet.
    const choice = await screen.findByRole("group", { name: "Stop the turn" });
    expect(log).not.toContain("POST /api/chat/stop");
    fireEvent.click(within(choice).getByRole("button", { name: "Stop and send the 2 queued messages" }));
    await waitFor(() => expect(sent).toHaveLength(1));
    expect(trayShownAtStop).toBe(false);
    expect(sent[0]).toMatchObject({ content: "second\nfirst" });
  });
});

describe("ChatView stop and discard", () => {
  it("stops without sending the queued messages when the owner chooses to discard them", async () => {
    const calls: string[] = [];
    renderRunning((key) => {
      if (key === "POST /api/chat/stop") {
        calls.push(key);
        return Promise.resolve(json({ stopped: true, cleared_pending_cids: ["q1", "q2"] }));
      }
      if (key === "POST /api/chats/c1/messages") {
        calls.push(key);
        return Promise.resolve(json({ status: "started" }, 202));
      }
      return null;
    });
    await screen.findByRole("region", { name: "Queued messages" });
    fireEvent.click(screen.getByRole("button", { name: "Stop" }));
    fireEvent.click(within(await screen.findByRole("group", { name: "Stop the turn" })).getByRole("button", { name: "Stop and discard" }));
    await waitFor(() => expect(calls).toEqual(["POST /api/chat/stop"]));
    await waitFor(() => expect(screen.queryByRole("group", { name: "Stop the turn" })).toBeNull());
    expect(calls).not.toContain("POST /api/chats/c1/messages");
  });
});

/** Renders the running chat with `fetch` answering the stream, the detail and `handle` for the rest. */
function renderRunning(handle: (key: string, init: RequestInit) => Promise<Response> | null) {
  writeToken("tok");
  vi.stubGlobal(
    "fetch",
    vi.fn((input: string, init: RequestInit = {}) => {
      const key = `${init.method ?? "GET"} ${input}`;
      const answer = handle(key, init);
      if (answer) return answer;
      if (key === "GET /api/chats/c1?limit=20") return Promise.resolve(json(running));
      if (key === "GET /api/chats/c1/stream") return Promise.resolve(openStream([{ type: "catch_up_done", seq: 7 }]));
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
}

describe("ChatView steering", () => {
  const queueAfter = (cid: string) => running.pending_messages.filter((p) => p.cid !== cid);

  it("“Send now” takes the row back, then steers its text with a fresh cid and shows it after the live reply", async () => {
    const calls: string[] = [];
    const posted: { content: string; cid: string; steer?: boolean }[] = [];
    renderRunning((key, init) => {
      if (key.startsWith("DELETE ")) {
        calls.push(key);
        return Promise.resolve(json({ removed: true, pending_messages: queueAfter("q1") }));
      }
      if (key === "POST /api/chats/c1/messages") {
        calls.push(key);
        const body = JSON.parse(init.body as string) as { content: string; cid: string; steer?: boolean };
        posted.push(body);
        return Promise.resolve(json({ status: "steered", message: { role: "user", content: body.content, ts: 9, cid: body.cid } }, 202));
      }
      return null;
    });
    const tray = await screen.findByRole("region", { name: "Queued messages" });
    const first = within(tray).getByText("first").closest("li") as HTMLElement;
    fireEvent.click(within(first).getByRole("button", { name: "Send now" }));
    await waitFor(() => expect(posted).toHaveLength(1));
    expect(calls).toEqual(["DELETE /api/chats/c1/pending/q1", "POST /api/chats/c1/messages"]);
    expect(posted[0]).toMatchObject({ content: "first", steer: true });
    expect(posted[0]?.cid).not.toBe("q1");
    const rows = [...document.querySelectorAll<HTMLElement>(".chat-content .row")];
    expect(rows.at(-2)?.dataset.live).toBe("true");
    expect(rows.at(-1)?.textContent).toContain("first");
    expect(within(await screen.findByRole("region", { name: "Queued messages" })).queryByText("first")).toBeNull();
  });

  it("Steer sends the whole queue as one message; when that fails the text lands in the box", async () => {
    const posted: { content: string; steer?: boolean }[] = [];
    let queue = running.pending_messages;
    renderRunning((key, init) => {
      if (key.startsWith("DELETE ")) {
        const cid = key.split("/").pop() ?? "";
        queue = queue.filter((p) => p.cid !== cid);
        return Promise.resolve(json({ removed: true, pending_messages: queue }));
      }
      if (key === "POST /api/chats/c1/messages") {
        posted.push(JSON.parse(init.body as string) as { content: string; steer?: boolean });
        return Promise.resolve(json({ code: "internal", message: "boom" }, 500));
      }
      return null;
    });
    await screen.findByRole("region", { name: "Queued messages" });
    fireEvent.click(screen.getByRole("button", { name: "Steer" }));
    await waitFor(() => expect(posted).toHaveLength(1));
    expect(posted[0]).toEqual(expect.objectContaining({ content: "first\n\nsecond", steer: true }));
    const box = screen.getByRole<HTMLTextAreaElement>("textbox", { name: "Message" });
    await waitFor(() => expect(box.value).toBe("first\n\nsecond"));
    expect(screen.queryByText("first\n\nsecond", { selector: ".bubble" })).toBeNull();
    screen.getByRole("alert");
    // Stop stays reachable throughout.
    screen.getByRole("button", { name: "Stop" });
  });

  it("a row the server no longer holds (removed:false) is not sent again", async () => {
    const posted: unknown[] = [];
    renderRunning((key) => {
      if (key.startsWith("DELETE ")) return Promise.resolve(json({ removed: false, pending_messages: queueAfter("q2") }));
      if (key === "POST /api/chats/c1/messages") {
        posted.push(key);
        return Promise.resolve(json({ status: "steered" }, 202));
      }
      return null;
    });
    const tray = await screen.findByRole("region", { name: "Queued messages" });
    const second = within(tray).getByText("second").closest("li") as HTMLElement;
    fireEvent.click(within(second).getByRole("button", { name: "Send now" }));
    await waitFor(() => expect(within(tray).queryByText("second")).toBeNull());
    expect(posted).toEqual([]);
    expect(screen.getByRole<HTMLTextAreaElement>("textbox", { name: "Message" }).value).toBe("");
  });
});

describe("ChatView regenerate and versions", () => {
  const text = (t: string) => [{ type: "text" as const, item_id: t, content: t }];
  const settled = (messages: ChatPage["messages"]): ChatPage => ({
    ...running,
    id: "c2",
    messages,
    total: messages.length,
    running: false,
    run_id: null,
    pending_messages: [],
  });

  function renderSettled(page: ChatPage, posted: unknown[] = []) {
    writeToken("tok");
    vi.stubGlobal(
      "fetch",
      vi.fn((input: string, init: RequestInit = {}) => {
        const key = `${init.method ?? "GET"} ${input}`;
        if (key === "GET /api/chats/c2?limit=20") return Promise.resolve(json(page));
        if (key === "GET /api/chats/c2/stream") return Promise.resolve(openStream([{ type: "catch_up_done", seq: 7 }]));
        if (key === "POST /api/chats/c2/regenerate") {
          posted.push(JSON.parse(init.body as string));
          return Promise.resolve(json({ status: "started", run_id: "r9", version: 3 }, 202));
        }
        if (key === "GET /api/auth/providers/status") return Promise.resolve(json({ default_provider: "claude", providers: { claude: { connected: true } } }));
        return Promise.reject(new Error(`unexpected ${key}`));
      }),
    );
    const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
    render(
      <QueryClientProvider client={client}>
        <ChatView chatId="c2" owner="ada" summary={undefined} firstRun={false} onTitle={() => undefined} onOpenSettings={() => undefined} />
      </QueryClientProvider>,
    );
  }

  it("shows the newest version with ‹ 2/2 ›, steps back to the first, and regenerates without a second owner row", async () => {
    const posted: unknown[] = [];
    renderSettled(
      settled([
        { role: "user", content: "a joke", ts: 1, cid: "u1" },
        { role: "assistant", content: "first", ts: 2, run_id: "r1", blocks: text("first") },
        { role: "assistant", content: "second", ts: 3, run_id: "r2", blocks: text("second"), version: 2 },
      ]),
      posted,
    );
    await screen.findByText("second");
    expect(screen.queryByText("first")).toBeNull();
    const versions = screen.getByRole("group", { name: "Versions of this reply" });
    expect(versions.textContent).toContain("2/2");
    fireEvent.click(within(versions).getByRole("button", { name: "Previous version" }));
    await screen.findByText("first");
    expect(screen.queryByText("second")).toBeNull();
    expect(screen.getByRole("group", { name: "Versions of this reply" }).textContent).toContain("1/2");
    fireEvent.click(screen.getByRole("button", { name: "Regenerate reply" }));
    await waitFor(() => expect(posted).toEqual([{ message_idx: 0, versions: 2 }]));
    // The new version shows as it is written; the owner's message is still there once.
    expect(screen.getAllByText("a joke")).toHaveLength(1);
    expect(screen.queryByText("first")).toBeNull();
  });

  it("offers Regenerate under a real reply only: not under an error card or a handoff marker", async () => {
    renderSettled(
      settled([
        { role: "user", content: "go", ts: 1, cid: "u1" },
        { role: "assistant", content: "", ts: 2, run_id: "r1", blocks: [{ type: "error", message: "It broke." }] },
      ]),
    );
    await screen.findByText("It broke.");
    expect(screen.queryByRole("button", { name: "Regenerate reply" })).toBeNull();
  });
});
