import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { writeToken } from "../../auth/token";
import type { SettingsSection } from "../../shell/router";
import { mockFetch } from "../../test/fetchMock";
import Settings, { limitsText, slotsText } from "./Settings";

afterEach(() => vi.unstubAllGlobals());

function show({ sandbox, toolbox, section, onOpenSection = vi.fn(), status }: { sandbox?: unknown; toolbox?: unknown; section?: SettingsSection; onOpenSection?: (s: SettingsSection) => void; status?: unknown }) {
  writeToken("tok");
  mockFetch({
    "GET /api/settings": { status: 200, body: { default_provider: null, sandbox, toolbox } },
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
      "Schedules",
      "Connectors",
      "Notifications",
      "Appearance",
      "App store",
      "Published pages",
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

  it("lists the published pages with their kind, and says how to publish when there are none", async () => {
    writeToken("tok");
    const site = { id: 3, app_id: 7, app_slug: "board", app_name: "Board", url: "/sites/abc/", live: false, bytes: 2048, files: 2, created_at: Date.now(), updated_at: Date.now() };
    mockFetch({
      "GET /api/published-sites": { status: 200, body: { sites: [site, { ...site, id: 4, app_name: "Trips", live: true }], max: 20 } },
      "GET /api/*": { status: 404, body: { code: "not_found", message: "No." } },
    });
    const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
    render(
      <QueryClientProvider client={client}>
        <Settings owner="owner" section="published" onOpenSection={vi.fn()} onSignOut={vi.fn()} />
      </QueryClientProvider>,
    );
    const list = await screen.findByRole("list", { name: "Published pages" });
    expect(list.textContent).toContain("Snapshot · 2 files, 2 KB");
    expect(list.textContent).toContain("Live data (read only)");
    expect(screen.getAllByRole("link", { name: "Open" }).map((a) => a.getAttribute("href"))).toEqual([`${window.location.origin}/sites/abc/`, `${window.location.origin}/sites/abc/`]);
    expect(screen.getByRole("button", { name: "Unpublish Trips" })).toBeTruthy();
  });

  it("explains where to get a key before the owner opens the form", async () => {
    show({ section: "agents" });
    const links = await screen.findAllByRole("link", { name: /Anthropic Console|OpenAI dashboard/ });
    expect(links.map((a) => a.getAttribute("href"))).toEqual(["https://console.anthropic.com/settings/keys", "https://platform.openai.com/api-keys"]);
  });
});

describe("the agent sandbox in Settings", () => {
  it("names the Landlock ABI in force", async () => {
    show({ sandbox: { mode: "landlock", abi: 7, signals: { mode: "scoped" } }, section: "sandbox" });
    const line = await screen.findByText(/On: Landlock \(ABI 7\)/);
    expect(line.getAttribute("data-sandbox")).toBe("landlock");
    const signals = await screen.findByText(/Signals are contained/);
    expect(signals.getAttribute("data-signals")).toBe("scoped");
  });

  it("says when the agent could still signal the server, and why", async () => {
    const reason = "this kernel's Landlock is ABI 5; keeping signals in needs ABI 6 (Linux 6.12)";
    show({ sandbox: { mode: "landlock", abi: 5, signals: { mode: "open", reason } }, section: "sandbox" });
    const line = await screen.findByText(/Signals are not contained/);
    expect(line.getAttribute("data-signals")).toBe("open");
    expect(line.getAttribute("role")).toBe("status");
    expect(line.textContent).toContain(reason);
    expect(line.textContent).toContain("could stop or kill the server");
  });

  it("lists the agent's tools with their versions and says which are missing", async () => {
    const toolbox = [
      { name: "python3", command: "python3", version: "3.11.2", purpose: "Python 3" },
      { name: "ripgrep", command: "rg", version: null, purpose: "fast search (rg)" },
      { name: "chromium", command: null, version: null, purpose: "headless browser" },
    ];
    show({ sandbox: { mode: "landlock", abi: 7, signals: { mode: "scoped" } }, toolbox, section: "sandbox" });
    await screen.findByText("Tools the agent can use");
    const row = (name: string) => document.querySelector(`[data-tool="${name}"]`);
    expect(row("python3")?.textContent).toContain("3.11.2");
    expect(row("ripgrep")?.textContent).toContain("installed");
    expect(row("chromium")?.getAttribute("data-installed")).toBe("no");
    expect(row("chromium")?.textContent).toContain("not installed");
  });

  it("says plainly when the agent is not confined, and why", async () => {
    show({ sandbox: { mode: "off", reason: "this kernel was built without Landlock" }, section: "sandbox" });
    const line = await screen.findByText(/Off: this kernel was built without Landlock/);
    expect(line.textContent).toContain("can read every file the server can");
  });
});

describe("how many agents run at once, in Settings", () => {
  it("says the cap, the share background work may use and how busy it is", () => {
    expect(slotsText({ max: 4, background_max: 3, running: 4, background_running: 3, waiting: 2 })).toBe(
      "At most 4 agents run at once; more wait their turn. Scheduled prompts, continuations and app jobs use at most 3, so 1 stays free for you; your turns go first. Now: 4 running, 2 waiting.",
    );
    expect(slotsText({ max: 1, background_max: 1, running: 0, background_running: 0, waiting: 0 })).toBe(
      "At most 1 agent runs at once; more wait their turn. Now: 0 running, 0 waiting.",
    );
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
