import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { writeToken } from "../../auth/token";
import { currentNav, navigate, useNav } from "../../shell/router";
import { mockFetch } from "../../test/fetchMock";
import { appSummary } from "../../test/fixtures";
import AppsView from "./AppsView";

afterEach(() => {
  vi.unstubAllGlobals();
  history.replaceState({}, "", "/");
});

const notes = appSummary(3, { name: "Notes", source_url: "https://example.com/notes.git", update: { available: true, checked_at: 1, error: null, resolver_chat_id: null } });
const other = appSummary(4, { name: "Other" });

/** The Apps view as the shell shows it: following the route. */
function Routed() {
  const { route } = useNav();
  if (route.name !== "apps") return null;
  return <AppsView tab={route.tab} manage={route.manage} apps={[notes, other]} owner="owner" online showToast={vi.fn()} />;
}

function view(manage: { action: "update" | "uninstall"; appId: number }) {
  writeToken("tok");
  const server = mockFetch({
    "POST /api/apps/updates/check": { status: 200, body: { ran: false, checked: 0, available: 0, results: [] } },
    "GET /api/apps/3/history": { status: 200, body: { versions: [] } },
    "GET /api/apps/3/update/preview": {
      status: 200,
      body: {
        commit: "b".repeat(40),
        up_to_date: false,
        current_version: "1.0.0",
        version: "1.1.0",
        name: "Notes",
        commits: [{ commit: "b".repeat(40), summary: "Tags", author: "Ann", at: 1 }],
        more_commits: false,
        files: [{ path: "index.jsx", status: "modified", additions: 3, deletions: 1 }],
        more_files: false,
        local_edits: false,
        conflict_paths: [],
        permissions: [],
        permission_changes: [],
        manifest_error: null,
        resolver_chat_id: null,
      },
    },
    "DELETE /api/apps/3?data=keep": { status: 204 },
  });
  navigate({ name: "apps", tab: "installed", manage });
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <QueryClientProvider client={client}>
      <Routed />
    </QueryClientProvider>,
  );
  return server;
}

describe("an app that manages apps asks the owner", () => {
  it("to update: the update preview opens for that app, and nothing is applied without the owner's tap", async () => {
    const server = view({ action: "update", appId: 3 });
    const sheet = await screen.findByRole("dialog", { name: "Update Notes" });
    await waitFor(() => expect(sheet.textContent).toContain("1.1.0"));
    expect(server.calls.some((c) => c.key.startsWith("POST /api/apps/3/update"))).toBe(false);
    fireEvent.keyDown(document, { key: "Escape" });
    await waitFor(() => expect(screen.queryByRole("dialog", { name: "Update Notes" })).toBeNull());
    expect(currentNav().route).toEqual({ name: "apps", tab: "installed" });
  });

  it("to uninstall: the keep-or-delete choice opens for that app, keeping the data unless told", async () => {
    const server = view({ action: "uninstall", appId: 3 });
    const choice = await screen.findByRole("alertdialog", { name: "Uninstall Notes" });
    expect(screen.queryByRole("alertdialog", { name: "Uninstall Other" })).toBeNull();
    expect(screen.getByRole<HTMLInputElement>("radio", { name: /Keep its data/ }).checked).toBe(true);
    expect(server.calls.some((c) => c.key.startsWith("DELETE"))).toBe(false);
    fireEvent.click(choice.querySelector(".btn-danger") as HTMLElement);
    await waitFor(() => expect(server.calls.map((c) => c.key)).toContain("DELETE /api/apps/3?data=keep"));
    await waitFor(() => expect(currentNav().route).toEqual({ name: "apps", tab: "installed" }));
  });
});
