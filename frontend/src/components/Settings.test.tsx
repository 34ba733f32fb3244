import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { writeToken } from "../auth/token";
import { mockFetch } from "../test/fetchMock";
import Settings, { limitsText } from "./Settings";

afterEach(() => vi.unstubAllGlobals());

function show(sandbox: unknown) {
  writeToken("tok");
  mockFetch({
    "GET /api/settings": { status: 200, body: { default_provider: null, sandbox } },
    "GET /api/*": { status: 404, body: { code: "not_found", message: "No." } },
  });
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <QueryClientProvider client={client}>
      <Settings owner="owner" activeChatId={null} onSignOut={vi.fn()} />
    </QueryClientProvider>,
  );
}

describe("the agent sandbox in Settings", () => {
  it("names the Landlock ABI in force", async () => {
    show({ mode: "landlock", abi: 7 });
    const line = await screen.findByText(/On: Landlock \(ABI 7\)/);
    expect(line.getAttribute("data-sandbox")).toBe("landlock");
  });

  it("says plainly when the agent is not confined, and why", async () => {
    show({ mode: "off", reason: "this kernel was built without Landlock" });
    const line = await screen.findByText(/Off: this kernel was built without Landlock/);
    expect(line.textContent).toContain("can read every file the server can");
  });
});

describe("the agent's ceilings in Settings", () => {
  it("say how memory is held and how much a turn may print", () => {
    expect(limitsText({ memory: { mode: "cgroup", max_bytes: 2 * 1024 ** 3 }, output_max_bytes: 256 << 20 })).toBe(
      "Memory: 2 GiB for each agent and everything it starts (a cgroup); a turn past it is stopped. A turn may print at most 256 MiB.",
    );
    expect(limitsText({ memory: { mode: "rlimit", max_bytes: 1 << 30, reason: "no cgroup v2 here" }, output_max_bytes: 1 << 20 })).toMatch(
      /^Memory: 1 GiB for each agent process \(a per-process limit: no cgroup v2 here\)/,
    );
  });
});
