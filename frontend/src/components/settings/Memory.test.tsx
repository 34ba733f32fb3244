import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import type { ReactNode } from "react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { writeToken } from "../../auth/token";
import { mockFetch } from "../../test/fetchMock";
import { ChatInfo } from "../chat/ChatInfo";
import { MemorySection } from "./MemorySettings";

afterEach(() => vi.unstubAllGlobals());

/** The JSON body a recorded request sent. */
const sentBody = (init: RequestInit | undefined) => JSON.parse(init?.body as string) as Record<string, unknown>;

function withQueries(node: ReactNode) {
  writeToken("tok");
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  return render(<QueryClientProvider client={client}>{node}</QueryClientProvider>);
}

const note = { digest: "Planned four beds.", summary: "A vegetable garden.", source_count: 4, by_owner: false, updated_at: 1_700_000_000_000 };

describe("the chat's info sheet", () => {
  it("shows the agent's note and saves the owner's edit", async () => {
    const server = mockFetch({
      "GET /api/chats/g/note": { status: 200, body: { note, max_digest_chars: 600, max_summary_chars: 8000 } },
      "PUT /api/chats/g/note": (init) => ({
        status: 200,
        body: { note: { ...note, ...sentBody(init), by_owner: true }, max_digest_chars: 600, max_summary_chars: 8000 },
      }),
    });
    withQueries(<ChatInfo chatId="g" title="Garden" onClose={vi.fn()} />);
    const digest = await screen.findByLabelText<HTMLTextAreaElement>("Digest");
    await waitFor(() => expect(digest.value).toBe("Planned four beds."));
    expect(screen.getByText(/Written by the agent · covers 4 messages/)).toBeTruthy();
    const save = screen.getByRole<HTMLButtonElement>("button", { name: "Save" });
    expect(save.disabled).toBe(true);
    fireEvent.change(digest, { target: { value: "Four raised beds, tomatoes first." } });
    fireEvent.click(save);
    await waitFor(() => expect(screen.getByText(/Edited by you/)).toBeTruthy());
    const sent = server.calls.find((c) => c.key === "PUT /api/chats/g/note");
    expect(sentBody(sent?.init)).toEqual({ digest: "Four raised beds, tomatoes first.", summary: "A vegetable garden." });
  });
});

describe("Settings › Memory", () => {
  it("turns memory off, saves the memory file and refuses one over the limit", async () => {
    const state = { enabled: true, owner_md: "- likes tea\n", truncated: false, max_bytes: 20 };
    const server = mockFetch({
      "GET /api/memory": { status: 200, body: state },
      "PATCH /api/memory": (init) => ({ status: 200, body: { ...state, ...sentBody(init) } }),
      "PUT /api/memory/owner": (init) => ({ status: 200, body: { ...state, owner_md: sentBody(init).content } }),
      "GET /api/skills": {
        status: 200,
        body: {
          skills: [
            { name: "build-an-app", description: "Build apps", origin: "built_in", path: "/s/build-an-app.md", last_used: null, error: null },
            { name: "broken", description: "", origin: "agent", path: "/d/skills/broken.md", last_used: null, error: "has no description" },
          ],
          left_out: 0,
          agent_dir: "/d/skills",
        },
      },
    });
    withQueries(<MemorySection />);
    const file = await screen.findByLabelText<HTMLTextAreaElement>("Memory file");
    await waitFor(() => expect(file.value).toBe("- likes tea\n"));
    expect(await screen.findByText(/Can't be used: this file has no description/)).toBeTruthy();
    expect(screen.getByText("Written by the agent")).toBeTruthy();

    fireEvent.change(screen.getByLabelText("New chats remember"), { target: { value: "off" } });
    await waitFor(() => expect(server.calls.some((c) => c.key === "PATCH /api/memory")).toBe(true));
    await waitFor(() => expect(screen.getByLabelText<HTMLSelectElement>("New chats remember").value).toBe("off"));

    const save = screen.getByRole<HTMLButtonElement>("button", { name: "Save" });
    fireEvent.change(file, { target: { value: "x".repeat(21) } });
    expect(save.disabled).toBe(true);
    expect(screen.getByText("21 / 20 bytes")).toBeTruthy();
    fireEvent.change(file, { target: { value: "- likes coffee" } });
    fireEvent.click(save);
    await waitFor(() => expect(server.calls.some((c) => c.key === "PUT /api/memory/owner")).toBe(true));
    await waitFor(() => expect(save.disabled).toBe(true));
    expect(file.value).toBe("- likes coffee");
  });
});
