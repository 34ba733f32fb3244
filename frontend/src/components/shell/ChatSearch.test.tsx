import { act, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type * as SearchApi from "../../api/search";
import { groupHits, snippetParts, type SearchHit, type SearchPage } from "../../api/search";
import { ChatSearch, Snippet } from "./ChatSearch";

const searchChats = vi.hoisted(() => vi.fn<(q: string, options?: { cursor?: string; signal?: AbortSignal }) => Promise<SearchPage>>());
vi.mock("../../api/search", async (importOriginal) => ({ ...(await importOriginal<typeof SearchApi>()), searchChats }));

const hit = (chat_id: string, message_idx: number | null, snippet: string, title = chat_id): SearchHit => ({
  chat_id,
  title,
  message_idx,
  ts: 1_700_000_000_000,
  snippet,
});

afterEach(() => searchChats.mockReset());

describe("snippets", () => {
  it("split at the marks, dropping stray ones", () => {
    expect(snippetParts("a \u0002b\u0003 c")).toEqual([
      { text: "a ", match: false },
      { text: "b", match: true },
      { text: " c", match: false },
    ]);
    expect(snippetParts("\u0003x\u0002")).toEqual([{ text: "x", match: false }]);
    expect(snippetParts("")).toEqual([]);
  });

  it("render matches in <mark> and everything else as text, never as HTML", () => {
    const hostile = '<img src=x onerror="window.hacked=1"> \u0002<b>bold</b>\u0003 &amp; <script>alert(1)</script>';
    const { container } = render(<Snippet text={hostile} />);
    expect(container.querySelector("img, b, script")).toBeNull();
    const marks = container.querySelectorAll("mark");
    expect(marks).toHaveLength(1);
    expect(marks[0]?.textContent).toBe("<b>bold</b>");
    expect(container.textContent).toBe('<img src=x onerror="window.hacked=1"> <b>bold</b> &amp; <script>alert(1)</script>');
  });

  it("group hits by chat in the order of each chat's best hit", () => {
    const groups = groupHits([hit("a", 3, "x"), hit("b", 1, "y"), hit("a", 1, "z")]);
    expect(groups.map((g) => [g.chatId, g.hits.map((h) => h.message_idx)])).toEqual([
      ["a", [3, 1]],
      ["b", [1]],
    ]);
  });
});

describe("the drawer's search", () => {
  it("searches as you type, drops stale answers, groups results and opens a hit", async () => {
    const answers: Record<string, (page: SearchPage) => void> = {};
    searchChats.mockImplementation((q) => new Promise((resolve) => (answers[q] = resolve)));
    const onOpenHit = vi.fn();
    render(
      <ChatSearch onOpenHit={onOpenHit}>
        <p>the chat list</p>
      </ChatSearch>,
    );
    expect(screen.getByText("the chat list")).toBeTruthy();
    const field = screen.getByRole("searchbox", { name: "Search chats" });

    fireEvent.change(field, { target: { value: "otter" } });
    await waitFor(() => expect(answers.otter).toBeDefined());
    expect(screen.queryByText("the chat list")).toBeNull();
    fireEvent.change(field, { target: { value: "otters" } });
    await waitFor(() => expect(answers.otters).toBeDefined());
    const firstSignal = searchChats.mock.calls[0]?.[1]?.signal;
    expect(firstSignal?.aborted).toBe(true);

    await act(async () => {
      answers.otters?.({ hits: [hit("c1", 4, "river \u0002otters\u0003", "Rivers"), hit("c2", null, "\u0002Otters\u0003", "Otters")], next_cursor: null });
      await Promise.resolve();
    });
    const results = await screen.findByRole("region", { name: "Search results" });
    const group = await within(results).findByRole("region", { name: "Rivers" });
    // The older answer arrives last and is ignored.
    await act(async () => {
      answers.otter?.({ hits: [hit("stale", 0, "stale")], next_cursor: null });
      await Promise.resolve();
    });
    expect(within(results).queryByText("stale")).toBeNull();
    expect(within(results).getByRole("region", { name: "Rivers" })).toBe(group);
    expect(within(group).getByText("otters").tagName).toBe("MARK");

    fireEvent.click(within(group).getByRole("button"));
    expect(onOpenHit).toHaveBeenCalledWith("c1", 4);
    fireEvent.click(within(within(results).getByRole("region", { name: "Otters" })).getByRole("button"));
    expect(onOpenHit).toHaveBeenLastCalledWith("c2", null);

    // A blank field brings the list back.
    fireEvent.change(field, { target: { value: "   " } });
    expect(screen.getByText("the chat list")).toBeTruthy();
    expect(screen.queryByRole("region", { name: "Search results" })).toBeNull();
  });

  it("says when an import is still being indexed and asks again until it is done", async () => {
    const pages: SearchPage[] = [
      { hits: [], next_cursor: null, indexing: true },
      { hits: [hit("imported", 7, "a \u0002heron\u0003")], next_cursor: null, indexing: false },
    ];
    searchChats.mockImplementation(() => Promise.resolve(pages.shift() ?? { hits: [], next_cursor: null }));
    render(
      <ChatSearch onOpenHit={vi.fn()}>
        <p>the chat list</p>
      </ChatSearch>,
    );
    fireEvent.change(screen.getByRole("searchbox", { name: "Search chats" }), { target: { value: "heron" } });
    const note = await screen.findByRole("status");
    expect(note.textContent).toContain("Indexing");
    // The same search again, once the server has indexed the import.
    await waitFor(() => expect(screen.getByText("heron").tagName).toBe("MARK"), { timeout: 3000 });
    expect(screen.queryByRole("status")).toBeNull();
    expect(searchChats).toHaveBeenCalledTimes(2);
    expect(searchChats.mock.calls.map((call) => call[0])).toEqual(["heron", "heron"]);
  });
});
