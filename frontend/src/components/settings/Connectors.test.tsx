import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import type { ReactNode } from "react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { writeToken } from "../../auth/token";
import { mockFetch } from "../../test/fetchMock";
import { ConnectorsSection } from "./ConnectorSettings";

afterEach(() => vi.unstubAllGlobals());

const sentBody = (init: RequestInit | undefined) => JSON.parse(init?.body as string) as Record<string, unknown>;

function withQueries(node: ReactNode) {
  writeToken("tok");
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  return render(<QueryClientProvider client={client}>{node}</QueryClientProvider>);
}

const notes = {
  id: 1,
  name: "notes",
  url: "https://mcp.example.com/mcp",
  auth: "bearer",
  header_name: null,
  has_secret: true,
  chats: "all",
  read_only_auto: false,
  status: "connected",
  last_error: null,
  tools: [{ name: "search", description: "Searches notes", read_only: true }],
  created_at: 1,
  updated_at: 1,
};

describe("Settings › Connectors", () => {
  it("lists a connector with its tools, adds one with a secret and switches read-only approvals", async () => {
    const server = mockFetch({
      "GET /api/connectors": { status: 200, body: { connectors: [notes], max: 32 } },
      "POST /api/connectors": (init) => ({ status: 201, body: { ...notes, id: 2, ...sentBody(init), status: "error", last_error: "the server refused the credential (401)" } }),
      "PATCH /api/connectors/1": (init) => ({ status: 200, body: { ...notes, ...sentBody(init) } }),
    });
    withQueries(<ConnectorsSection />);
    expect(await screen.findByText("notes")).toBeTruthy();
    expect(screen.getByText("Connected")).toBeTruthy();
    expect(screen.getByText("1 tool")).toBeTruthy();

    fireEvent.click(screen.getByLabelText("Run its read-only tools without asking"));
    await waitFor(() => expect(server.calls.some((c) => c.key === "PATCH /api/connectors/1")).toBe(true));
    expect(sentBody(server.calls.find((c) => c.key === "PATCH /api/connectors/1")?.init)).toEqual({ read_only_auto: true });

    fireEvent.change(screen.getByLabelText("Name"), { target: { value: "Tracker" } });
    fireEvent.change(screen.getByLabelText("MCP server URL"), { target: { value: "https://tracker.example.com/mcp" } });
    fireEvent.change(screen.getByLabelText("Sign-in"), { target: { value: "bearer" } });
    fireEvent.change(screen.getByLabelText("Token"), { target: { value: "s3cret" } });
    fireEvent.click(screen.getByRole("button", { name: "Add" }));
    expect(await screen.findByText(/could not connect: the server refused the credential/)).toBeTruthy();
    const sent = sentBody(server.calls.find((c) => c.key === "POST /api/connectors")?.init);
    expect(sent).toMatchObject({ name: "tracker", url: "https://tracker.example.com/mcp", auth: "bearer", secret: "s3cret", chats: "all" });
  });

  it("an OAuth connector signs in at its server, takes a pasted client and says how the sign-in ended", async () => {
    const calendar = { ...notes, id: 3, name: "calendar", auth: "oauth", has_secret: false, status: "needs_auth", last_error: "Sign in to connect.", tools: [] };
    history.replaceState(null, "", "/settings/connectors?connector=3&oauth=failed");
    const assign = vi.fn();
    vi.stubGlobal("location", { ...window.location, search: "?connector=3&oauth=failed", pathname: "/settings/connectors", assign });
    const server = mockFetch({
      "GET /api/connectors": { status: 200, body: { connectors: [calendar], max: 32 } },
      "POST /api/connectors/3/oauth/start": { status: 200, body: { authorization_url: "https://auth.example.com/authorize?state=s" } },
      "POST /api/connectors/3/oauth/client": (init) => ({ status: 200, body: { ...calendar, has_secret: true, ...sentBody(init) } }),
    });
    withQueries(<ConnectorsSection />);
    expect(await screen.findByText("Sign in to connect")).toBeTruthy();
    expect(screen.getByText("The sign-in did not complete; see the connector below.")).toBeTruthy();
    expect(screen.queryByRole("button", { name: "Reconnect" })).toBeNull();

    fireEvent.change(screen.getByLabelText("Client ID"), { target: { value: " my-client " } });
    fireEvent.click(screen.getByRole("button", { name: "Save client" }));
    await waitFor(() => expect(server.calls.some((c) => c.key === "POST /api/connectors/3/oauth/client")).toBe(true));
    expect(sentBody(server.calls.find((c) => c.key === "POST /api/connectors/3/oauth/client")?.init)).toEqual({ client_id: "my-client" });

    fireEvent.click(screen.getByRole("button", { name: "Sign in" }));
    await waitFor(() => expect(assign).toHaveBeenCalledWith("https://auth.example.com/authorize?state=s"));
  });
});
