import { fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ToolBlock } from "../../api/types";
import { mockFetch } from "../../test/fetchMock";
import { ErrorView, TextRest, ToolView, wasCut } from "./Blocks";

afterEach(() => vi.unstubAllGlobals());

const tool: ToolBlock = {
  type: "tool",
  tool: "Bash",
  tool_use_id: "t1",
  input: "cat big.log",
  output: "first part…",
  status: "done",
  output_truncated: true,
  output_full_len: 5011,
};

describe("ToolView", () => {
  it("is collapsed with its status, and expands to show the output", () => {
    render(<ToolView chatId="c1" block={tool} />);
    const head = screen.getByRole("button", { name: /Bash/ });
    expect(head.getAttribute("aria-expanded")).toBe("false");
    expect(head.textContent).toContain("Done");
    fireEvent.click(head);
    expect(screen.getByText("first part…")).toBeTruthy();
  });

  it("fetches the full output behind the truncation marker", async () => {
    const { calls } = mockFetch({ "GET /api/chats/c1/tool-output/t1": { status: 200, body: "the whole log" } });
    render(<ToolView chatId="c1" block={tool} />);
    fireEvent.click(screen.getByRole("button", { name: /Bash/ }));
    fireEvent.click(screen.getByRole("button", { name: "Show full output (5,000 more characters)" }));
    await screen.findByText("the whole log");
    expect(calls).toHaveLength(1);
  });
});

describe("a text block cut at its inline cap", () => {
  it("is recognised by the server's note and loads its rest on demand", async () => {
    expect(wasCut("…\n\n… [The rest of this text was too long to show here. The server keeps it (up to 16 MiB) as this block's full output.]")).toBe(true);
    expect(wasCut("an ordinary reply")).toBe(false);
    const { calls } = mockFetch({ "GET /api/chats/c1/tool-output/m1%3A0": { status: 200, body: "… the rest" } });
    render(<TextRest chatId="c1" itemId="m1:0" />);
    fireEvent.click(screen.getByRole("button", { name: "Show the rest of this text" }));
    await screen.findByText("… the rest");
    expect(calls).toHaveLength(1);
  });
});

describe("ErrorView", () => {
  it("offers the provider's settings when only the owner can fix the error", () => {
    const open = vi.fn();
    const { rerender } = render(<ErrorView block={{ type: "error", message: "refused", fix: "provider_settings" }} onOpenSettings={open} />);
    fireEvent.click(screen.getByRole("button", { name: "Open provider settings" }));
    expect(open).toHaveBeenCalledTimes(1);
    rerender(<ErrorView block={{ type: "error", message: "boom" }} onOpenSettings={open} />);
    expect(screen.queryByRole("button", { name: "Open provider settings" })).toBeNull();
  });
});
