import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { writeToken } from "../../auth/token";
import { mockFetch } from "../../test/fetchMock";
import { ChatInfo } from "./ChatInfo";

afterEach(() => vi.unstubAllGlobals());

const detail = { id: "g", title: "Garden", provider: "claude", approval_policy: "full", model: null, messages: [], seq: 3 };

describe("the chat's own options in its info sheet", () => {
  it("shows the chat's model and approval policy and saves each change with PATCH /api/chats/{id}", async () => {
    const patches: unknown[] = [];
    mockFetch({
      "GET /api/chats/g?limit=20": { status: 200, body: detail },
      "GET /api/chats/g/note": { status: 200, body: { note: null, max_digest_chars: 600, max_summary_chars: 8000 } },
      "GET /api/auth/providers/status": { status: 200, body: { default_provider: "claude", providers: { claude: { connected: true } } } },
      "GET /api/models": { status: 200, body: { providers: { claude: [{ id: null, label: "Default" }, { id: "opus", label: "Opus" }, { id: "haiku", label: "Haiku" }], codex: [] } } },
      "PATCH /api/chats/g": (init) => {
        patches.push(JSON.parse(init.body as string));
        return { status: 200, body: { ok: true } };
      },
    });
    writeToken("tok");
    const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
    render(
      <QueryClientProvider client={client}>
        <ChatInfo chatId="g" title="Garden" onClose={vi.fn()} />
      </QueryClientProvider>,
    );
    const options = screen.getByRole("region", { name: "This chat" });
    const model = within(options).getByLabelText<HTMLSelectElement>("Model");
    const policy = within(options).getByLabelText<HTMLSelectElement>("Approvals");
    await waitFor(() => expect(model.disabled).toBe(false));
    await within(options).findByRole("option", { name: "Opus" });
    expect(model.value).toBe("");
    expect(policy.value).toBe("full");
    fireEvent.change(model, { target: { value: "opus" } });
    await waitFor(() => expect(patches).toEqual([{ model: "opus" }]));
    expect(model.value).toBe("opus");
    fireEvent.change(policy, { target: { value: "ask" } });
    await waitFor(() => expect(patches).toEqual([{ model: "opus" }, { approval_policy: "ask" }]));
    expect(policy.value).toBe("ask");
    fireEvent.change(model, { target: { value: "" } });
    await waitFor(() => expect(patches.at(-1)).toEqual({ model: null }));
  });

  it("puts a refused change back and says why", async () => {
    mockFetch({
      "GET /api/chats/g?limit=20": { status: 200, body: { ...detail, approval_policy: "workspace" } },
      "GET /api/chats/g/note": { status: 200, body: { note: null, max_digest_chars: 600, max_summary_chars: 8000 } },
      "GET /api/*": { status: 404, body: { code: "not_found", message: "No." } },
      "PATCH /api/chats/g": { status: 409, body: { code: "chat_busy", message: "Wait for the turn to end." } },
    });
    writeToken("tok");
    const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
    render(
      <QueryClientProvider client={client}>
        <ChatInfo chatId="g" title="Garden" onClose={vi.fn()} />
      </QueryClientProvider>,
    );
    const policy = screen.getByLabelText<HTMLSelectElement>("Approvals");
    await waitFor(() => expect(policy.value).toBe("workspace"));
    fireEvent.change(policy, { target: { value: "full" } });
    await screen.findByText(/Couldn't save that: Wait for the turn to end./);
    expect(policy.value).toBe("workspace");
  });
});

describe("the files the agent made, in the chat's info sheet", () => {
  it("lists the workspace's files newest first, each a download carrying the media token", async () => {
    mockFetch({
      "GET /api/chats/g?limit=20": { status: 200, body: detail },
      "GET /api/chats/g/note": { status: 200, body: { note: null, max_digest_chars: 600, max_summary_chars: 8000 } },
      "GET /api/chats/g/workspace": {
        status: 200,
        body: { files: [{ path: "out/chart 1.png", size: 2048, modified: 1_700_000_000_000 }, { path: "hello.txt", size: 3, modified: 1_600_000_000_000 }], truncated: false },
      },
      "POST /api/chats/g/media-token": { status: 200, body: { token: "mt", expires_in: 900 } },
      "GET /api/*": { status: 404, body: { code: "not_found", message: "No." } },
    });
    writeToken("tok");
    const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
    render(
      <QueryClientProvider client={client}>
        <ChatInfo chatId="g" title="Garden" onClose={vi.fn()} />
      </QueryClientProvider>,
    );
    const chart = await screen.findByRole("link", { name: /Download out\/chart 1\.png, 2/ });
    await waitFor(() => expect(chart.getAttribute("href")).toBe("/api/chats/g/workspace/out/chart%201.png?token=mt"));
    expect(chart.getAttribute("download")).toBe("chart 1.png");
    const links = screen.getAllByRole("link", { name: /^Download / }).map((a) => a.textContent);
    expect(links).toEqual(["out/chart 1.png", "hello.txt"]);
  });
});
