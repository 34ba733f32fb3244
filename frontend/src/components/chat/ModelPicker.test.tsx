import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { writeToken } from "../../auth/token";
import { mockFetch } from "../../test/fetchMock";
import type { ModelInfo } from "../../api/types";
import { ModelPicker, effortLevels, pickLabel } from "./ModelPicker";

afterEach(() => vi.unstubAllGlobals());

const model = (id: string, label: string, levels: string[], isDefault = false): ModelInfo => ({
  id,
  label,
  provider: "claude",
  available: true,
  effort_levels: levels,
  default_effort: null,
  is_default: isDefault,
});
const LIST = [model("opus", "Claude Opus", ["low", "high"]), model("haiku", "Claude Haiku", [])];

describe("the model chip", () => {
  it("names the model shortly, with the effort", () => {
    expect(pickLabel(LIST, "opus", "high")).toBe("Opus · high");
    expect(pickLabel(LIST, null, null)).toBe("Default");
    expect(pickLabel(LIST, "custom-1", null)).toBe("custom-1");
  });

  it("offers the levels the chosen model takes, or every level for one it does not know", () => {
    expect(effortLevels(LIST, "haiku")).toEqual([]);
    expect(effortLevels(LIST, "opus")).toEqual(["low", "high"]);
    expect(effortLevels(LIST, "unknown")).toEqual(["low", "high"]);
  });

  it("shows the owner's default and saves a pick on the chat at once", async () => {
    writeToken("tok");
    const { calls } = mockFetch({
      "GET /api/models": { status: 200, body: { providers: { claude: LIST } } },
      "GET /api/auth/providers/status": { status: 200, body: { default_provider: "claude", providers: {} } },
      "GET /api/settings": { status: 200, body: { default_provider: "claude", agent_defaults: { claude: { model: "opus", effort: "low" } } } },
      "PATCH /api/chats/c1": { status: 200, body: { ok: true } },
    });
    const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
    render(
      <QueryClientProvider client={client}>
        <ModelPicker chatId="c1" provider="claude" model={null} effort={null} />
      </QueryClientProvider>,
    );
    const chip = await screen.findByRole("button", { name: "Model and effort: Opus · low" });
    fireEvent.click(chip);
    fireEvent.change(screen.getByLabelText("Effort"), { target: { value: "high" } });
    await waitFor(() => expect(calls.some((c) => c.key === "PATCH /api/chats/c1")).toBe(true));
    const patch = calls.find((c) => c.key === "PATCH /api/chats/c1");
    expect(JSON.parse(patch?.init.body as string)).toEqual({ model: null, effort: "high" });
    expect(screen.getByRole("button", { name: "Model and effort: Opus · high" })).toBeTruthy();
  });
});
