import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import type { ReactNode } from "react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { writeToken } from "../../auth/token";
import { mockFetch } from "../../test/fetchMock";
import { GithubSection } from "./GithubSettings";

afterEach(() => vi.unstubAllGlobals());

const sentBody = (init: RequestInit | undefined) => JSON.parse(init?.body as string) as Record<string, unknown>;

function withQueries(node: ReactNode) {
  writeToken("tok");
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  return render(<QueryClientProvider client={client}>{node}</QueryClientProvider>);
}

const none = { connected: false, login: null, connected_at: null, repos: [], max_repos: 100, git_url: "https://github.com", requests: [] };

describe("Settings › Connectors › GitHub", () => {
  it("connects with a token, says why GitHub refused one, and never shows it again", async () => {
    let refused = true;
    const server = mockFetch({
      "GET /api/github": { status: 200, body: none },
      "PUT /api/github": () =>
        refused
          ? { status: 400, body: { code: "github_token_refused", message: "GitHub refused this token (401): check it was copied whole." } }
          : { status: 200, body: { ...none, connected: true, login: "octo", connected_at: 1 } },
    });
    withQueries(<GithubSection />);
    fireEvent.change(await screen.findByLabelText("Personal access token"), { target: { value: " github_pat_bad " } });
    fireEvent.click(screen.getByRole("button", { name: "Connect" }));
    expect(await screen.findByText(/GitHub refused this token \(401\)/)).toBeTruthy();
    expect(sentBody(server.calls.find((c) => c.key === "PUT /api/github")?.init)).toEqual({ token: "github_pat_bad" });

    refused = false;
    fireEvent.change(screen.getByLabelText("Personal access token"), { target: { value: "github_pat_good" } });
    fireEvent.click(screen.getByRole("button", { name: "Connect" }));
    expect(await screen.findByText("octo")).toBeTruthy();
    expect(screen.getByText(/Connected as/)).toBeTruthy();
    expect(screen.queryByLabelText("Personal access token")).toBeNull();
    expect(document.body.textContent).not.toContain("github_pat_good");
  });

  it("allows and removes repositories and shows the agent's refused requests", async () => {
    const connected = {
      ...none,
      connected: true,
      login: "octo",
      connected_at: 1,
      repos: ["octo/site"],
      requests: [{ id: 2, chat_id: "c1", host: "github.com", repo: "other/secret", operation: "get", outcome: "not_allowed", created_at: 2 }],
    };
    const server = mockFetch({
      "GET /api/github": { status: 200, body: connected },
      "PUT /api/github/repos": (init) => ({ status: 200, body: { ...connected, ...sentBody(init) } }),
      "DELETE /api/github": { status: 204 },
    });
    withQueries(<GithubSection />);
    expect(await screen.findByText("octo/site")).toBeTruthy();
    expect(screen.getByText("other/secret")).toBeTruthy();
    expect(screen.getByText(/refused: not in the list/)).toBeTruthy();

    fireEvent.change(screen.getByLabelText("Repository"), { target: { value: " other/secret " } });
    fireEvent.click(screen.getByRole("button", { name: "Allow" }));
    await waitFor(() => expect(server.calls.filter((c) => c.key === "PUT /api/github/repos").length).toBe(1));
    expect(sentBody(server.calls.find((c) => c.key === "PUT /api/github/repos")?.init)).toEqual({ repos: ["octo/site", "other/secret"] });

    fireEvent.click(await screen.findByRole("button", { name: "Remove octo/site" }));
    await waitFor(() => expect(server.calls.filter((c) => c.key === "PUT /api/github/repos").length).toBe(2));
    expect(sentBody(server.calls.filter((c) => c.key === "PUT /api/github/repos")[1]?.init)).toEqual({ repos: ["other/secret"] });

    fireEvent.click(screen.getByRole("button", { name: "Disconnect" }));
    await waitFor(() => expect(server.calls.some((c) => c.key === "DELETE /api/github")).toBe(true));
  });
});
