import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ShellStatus } from "../../api/shell";
import { writeToken } from "../../auth/token";
import { mockFetch } from "../../test/fetchMock";
import { ShellSettings } from "./ShellSettings";

afterEach(() => vi.unstubAllGlobals());

const status: ShellStatus = {
  editable: true,
  serving: 2,
  building: false,
  builds: [
    { n: 2, at: Date.now() - 60_000, commit: null, confirmed: true, failed: null, chat: "chat-a" },
    { n: 1, at: Date.now() - 3_600_000, commit: null, confirmed: false, failed: "did not start", chat: null },
  ],
  resolving: null,
};

function show(answer: ShellStatus) {
  writeToken("tok");
  const { calls } = mockFetch({
    "GET /api/shell": { status: 200, body: answer },
    "POST /api/shell/use": (init) => ({ status: 200, body: { ...answer, serving: (JSON.parse(init.body as string) as { build: number | null }).build } }),
    "GET /api/*": { status: 404, body: { code: "not_found", message: "No." } },
  });
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <QueryClientProvider client={client}>
      <ShellSettings />
    </QueryClientProvider>,
  );
  return calls;
}

describe("Settings › Appearance › Screens", () => {
  it("lists the builds with the current one marked, where each came from, and switches", async () => {
    const calls = show(status);
    const list = await screen.findByRole("list", { name: "Shell versions" });
    const rows = within(list).getAllByRole("listitem");
    expect(rows.map((r) => r.getAttribute("data-build"))).toEqual(["2", "1"]);
    expect(rows[0]?.textContent).toMatch(/Build 2Current/);
    expect(rows[0]?.textContent).toMatch(/from a chat/);
    expect(rows[1]?.textContent).toMatch(/rolled back/);
    expect(within(rows[0] as HTMLElement).queryByRole("button", { name: /Switch to/ })).toBeNull();
    fireEvent.click(screen.getByRole("button", { name: "Switch to build 1" }));
    await vi.waitFor(() => expect(calls.some((c) => c.key === "POST /api/shell/use" && c.init.body === '{"build":1}')).toBe(true));
    fireEvent.click(screen.getByRole("button", { name: "Use the stock screens" }));
    await screen.findByRole("button", { name: "Stock screens on" });
  });

  it("says when a platform update waits for the agent to merge it", async () => {
    show({ ...status, resolving: { markers: ["src/main.tsx"], kept: [], chat: "chat-r", at: Date.now() } });
    const note = await screen.findByRole("status");
    expect(note.textContent).toMatch(/src\/main\.tsx/);
    expect(within(note).getByRole("button", { name: "Open the chat" })).toBeTruthy();
  });

  it("shows nothing on a server whose shell is not editable", async () => {
    const calls = show({ ...status, editable: false });
    await vi.waitFor(() => expect(calls.length).toBeGreaterThan(0));
    expect(screen.queryByText("Screens")).toBeNull();
  });
});
