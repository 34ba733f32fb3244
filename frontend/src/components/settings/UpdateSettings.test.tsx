import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { PlatformStatus } from "../../api/platform";
import { writeToken } from "../../auth/token";
import { mockFetch } from "../../test/fetchMock";
import { UpdateSettings } from "./UpdateSettings";

afterEach(() => vi.unstubAllGlobals());

const base: PlatformStatus = {
  version: "1.2.0",
  build_sha: "abcdef1234567890",
  serving: "image",
  supervised: true,
  feed: "https://example.test/latest.json",
  auto_check: true,
  checked_at: Date.now() - 60_000,
  check_error: null,
  available: null,
  running_turns: 0,
  progress: null,
  last: null,
};

function show(status: PlatformStatus) {
  writeToken("tok");
  mockFetch({
    "GET /api/platform/status": { status: 200, body: status },
    "GET /api/*": { status: 404, body: { code: "not_found", message: "No." } },
  });
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <QueryClientProvider client={client}>
      <UpdateSettings />
    </QueryClientProvider>,
  );
}

describe("Settings › About", () => {
  it("offers a newer version with its notes, and says what applying it does before it does it", async () => {
    show({ ...base, running_turns: 2, available: { version: "1.3.0", published_at: "2026-12-01", notes: "Faster sign-in.", download_bytes: 40 << 20 } });
    await screen.findByText("Version 1.3.0 is available");
    expect(screen.getByText("Faster sign-in.")).toBeTruthy();
    fireEvent.click(screen.getByRole("button", { name: "Update…" }));
    const box = screen.getByRole("group", { name: "Apply the update" });
    expect(box.textContent).toMatch(/about 40 MB/);
    expect(box.textContent).toMatch(/2 running turn\(s\) pause and continue/);
    expect(box.textContent).toMatch(/current one comes back with your data/);
    expect(screen.getByRole("button", { name: "Update to 1.3.0" })).toBeTruthy();
  });

  it("says why the last update was rolled back", async () => {
    show({ ...base, last: { version: "1.3.0", from: "1.2.0", outcome: "rolled_back", reason: "it exited at start (exit status: 3)", at: Date.now() - 5_000 } });
    const note = await screen.findByText(/was rolled back/);
    expect(note.textContent).toMatch(/your data was put back as it was: it exited at start/);
  });

  it("tells a server without the launcher to pull the image, and hides the restart", async () => {
    show({ ...base, supervised: false, available: { version: "1.3.0", published_at: "", notes: "", download_bytes: 1 } });
    await screen.findByText(/cannot update itself: pull the new image/);
    expect(screen.queryByRole("button", { name: "Update…" })).toBeNull();
    expect(screen.queryByRole("button", { name: "Restart server…" })).toBeNull();
  });

  it("asks twice before restarting", async () => {
    show(base);
    fireEvent.click(await screen.findByRole("button", { name: "Restart server…" }));
    expect(screen.getByRole("group", { name: "Restart the server" }).textContent).toMatch(/Nothing is running/);
    expect(screen.getByRole("button", { name: "Restart now" })).toBeTruthy();
  });
});
