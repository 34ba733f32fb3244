import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { AgentContext } from "../../api/protocol.gen";
import { writeToken } from "../../auth/token";
import { mockFetch } from "../../test/fetchMock";
import { AgentContextSection } from "./AgentContext";

afterEach(() => vi.unstubAllGlobals());

const context: AgentContext = {
  chat_id: "g",
  provider: "claude",
  model: "opus",
  effort: "high",
  system_prompt: { text: "# You are the agent\n## Memory\n\nLikes tea.", chars: 90_000, cut: true },
  pinned: true,
  app_context: '<app_context>\nThis chat was opened by the app "Todo".\n</app_context>',
  memory: { text: "## Memory\n\nLikes tea. key: [redacted]", chars: 36, cut: false },
  handoff: { text: "We were fixing the garden app.", chars: 30, cut: false },
  handoff_pending: true,
  connectors: [{ id: 1, name: "linear", auto_approved: ["mcp__linear__list"] }],
  sandbox: { mode: "landlock", abi: 6, signals: { mode: "scoped" } },
  read_write: ["apps", "workspace/g"],
  read: ["uploads/g"],
};

function show() {
  writeToken("tok");
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <QueryClientProvider client={client}>
      <AgentContextSection chatId="g" />
    </QueryClientProvider>,
  );
}

describe("what the agent was given, in the chat's info sheet", () => {
  it("loads only when opened and shows the model, connectors, sandbox, summary, app context, memory and the pinned prompt", async () => {
    const { calls } = mockFetch({ "GET /api/chats/g/context": { status: 200, body: context } });
    show();
    const toggle = screen.getByRole("button", { name: "What the agent was given" });
    expect(toggle.getAttribute("aria-expanded")).toBe("false");
    expect(calls).toEqual([]);
    fireEvent.click(toggle);
    const region = await screen.findByRole("region", { name: "What the agent was given" });
    await within(region).findByText("Claude · opus · high effort");
    expect(within(region).getByText("linear")).toBeTruthy();
    expect(within(region).getByText(/1 read-only tools run without asking/)).toBeTruthy();
    expect(within(region).getByText(/On: Landlock \(ABI 6\)\./)).toBeTruthy();
    expect(within(region).getByText(/apps, workspace\/g · reads: uploads\/g/)).toBeTruthy();
    expect(within(region).getByText("Summary it will start from")).toBeTruthy();
    expect(within(region).getByLabelText("Handoff summary").textContent).toBe("We were fixing the garden app.");
    expect(within(region).getByLabelText("App context").textContent).toContain('opened by the app "Todo"');
    expect(within(region).getByLabelText("Memory").textContent).toContain("key: [redacted]");
    expect(within(region).getByLabelText("System prompt").textContent).toContain("# You are the agent");
    expect(within(region).getByText(/Pinned when the chat's first turn started/)).toBeTruthy();
    expect(within(region).getByText(/the whole text is 90,000 characters/)).toBeTruthy();
    expect(calls.map((c) => c.key)).toEqual(["GET /api/chats/g/context"]);
  });

  it("says when memory was off and the prompt is not pinned, and shows a refusal", async () => {
    mockFetch({
      "GET /api/chats/g/context": { status: 200, body: { ...context, memory: null, pinned: false, handoff: null, app_context: null, connectors: [], sandbox: { mode: "off", reason: "turned off" } } },
    });
    show();
    fireEvent.click(screen.getByRole("button", { name: "What the agent was given" }));
    await screen.findByText(/Memory was off/);
    expect(screen.getByText(/Not pinned yet/)).toBeTruthy();
    expect(screen.getByText(/None: this chat's turns get no connector/)).toBeTruthy();
    expect(screen.getByText(/Off: turned off\./)).toBeTruthy();
    expect(screen.queryByLabelText("App context")).toBeNull();
  });

  it("shows the server's refusal", async () => {
    mockFetch({ "GET /api/chats/g/context": { status: 404, body: { code: "chat_not_found", message: "No such chat." } } });
    show();
    fireEvent.click(screen.getByRole("button", { name: "What the agent was given" }));
    expect((await screen.findByRole("alert")).textContent).toBe("Couldn't load it: No such chat.");
  });
});
