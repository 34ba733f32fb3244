import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { writeToken } from "../auth/token";
import type { SettingsSection } from "../shell/router";
import { mockFetch } from "../test/fetchMock";
import Settings from "./Settings";

afterEach(() => vi.unstubAllGlobals());

function show({ sandbox, section, onOpenSection = vi.fn(), status }: { sandbox?: unknown; section?: SettingsSection; onOpenSection?: (s: SettingsSection) => void; status?: unknown }) {
  writeToken("tok");
  mockFetch({
    "GET /api/settings": { status: 200, body: { default_provider: null, sandbox } },
    "GET /api/auth/providers/status": status ? { status: 200, body: status } : { status: 404, body: { code: "not_found", message: "No." } },
    "GET /api/*": { status: 404, body: { code: "not_found", message: "No." } },
  });
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <QueryClientProvider client={client}>
      <Settings owner="owner" section={section} onOpenSection={onOpenSection} onSignOut={vi.fn()} />
    </QueryClientProvider>,
  );
}

describe("Settings as pages", () => {
  it("lists its sections, says when no agent is connected, and opens the one tapped", async () => {
    const onOpenSection = vi.fn();
    show({ onOpenSection, status: { default_provider: null, providers: { claude: { connected: false }, codex: { connected: false } } } });
    const nav = screen.getByRole("navigation", { name: "Settings sections" });
    const rows = nav.querySelectorAll("button");
    expect([...rows].map((b) => b.querySelector(".settings-row-label")?.textContent)).toEqual([
      "Agents",
      "New chats",
      "Memory",
      "Notifications",
      "Appearance",
      "App store",
      "Agent sandbox",
      "Account",
      "About",
    ]);
    await screen.findByText("Not connected: connect one to start");
    fireEvent.click(screen.getByRole("button", { name: /^Memory/ }));
    expect(onOpenSection).toHaveBeenCalledWith("memory");
    // No chat's options here: they live in the chat's info sheet.
    expect(screen.queryByLabelText(/Model/)).toBeNull();
  });

  it("explains where to get a key before the owner opens the form", async () => {
    show({ section: "agents" });
    const links = await screen.findAllByRole("link", { name: /Anthropic Console|OpenAI dashboard/ });
    expect(links.map((a) => a.getAttribute("href"))).toEqual(["https://console.anthropic.com/settings/keys", "https://platform.openai.com/api-keys"]);
  });
});

describe("the agent sandbox in Settings", () => {
  it("names the Landlock ABI in force", async () => {
    show({ sandbox: { mode: "landlock", abi: 7 }, section: "sandbox" });
    const line = await screen.findByText(/On: Landlock \(ABI 7\)/);
    expect(line.getAttribute("data-sandbox")).toBe("landlock");
  });

  it("says plainly when the agent is not confined, and why", async () => {
    show({ sandbox: { mode: "off", reason: "this kernel was built without Landlock" }, section: "sandbox" });
    const line = await screen.findByText(/Off: this kernel was built without Landlock/);
    expect(line.textContent).toContain("can read every file the server can");
  });
});
