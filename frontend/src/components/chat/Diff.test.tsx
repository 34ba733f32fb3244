import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { FileDiff, ToolBlock } from "../../api/types";
import { mockFetch } from "../../test/fetchMock";
import { ToolView } from "./Blocks";
import { type DiffView, FileDiffView, FilesChanged } from "./Diff";
import { DIFF_FIRST_ROWS, filesChanged } from "../../chat/diff";

afterEach(() => vi.unstubAllGlobals());

const many = (n: number) => Array.from({ length: n }, (_, i) => `+line ${i}`).join("\n") + "\n";

describe("FileDiffView", () => {
  it("shows added and removed lines and folds unchanged ones until tapped", () => {
    const context = Array.from({ length: 12 }, (_, i) => ` same ${i}`).join("\n");
    const file: FileDiff = { path: "a.ts", change: "update", added: 1, removed: 1, diff: `-old\n${context}\n+new\n` };
    const { container } = render(<FileDiffView chatId="c1" file={file} />);
    expect(container.querySelector('[data-kind="del"]')?.textContent).toContain("old");
    expect(container.querySelector('[data-kind="add"]')?.textContent).toContain("new");
    // All its rows are in the first frame: nothing is pending.
    expect(container.querySelector(".diff")?.hasAttribute("aria-busy")).toBe(false);
    fireEvent.click(screen.getByRole("button", { name: "⋯ 6 unchanged lines" }));
    expect(container.querySelectorAll('[data-kind="ctx"]')).toHaveLength(12);
  });

  it("shows a page of rows, then more, then fetches the rest of a cut diff", async () => {
    const file: FileDiff = { path: "big.txt", change: "write", added: 3000, removed: 0, diff: many(600), full_len: 100_000, stash_id: "t9:diff:0" };
    const { calls } = mockFetch({ "GET /api/chats/c1/tool-output/t9%3Adiff%3A0": { status: 200, body: many(700) } });
    const { container } = render(<FileDiffView chatId="c1" file={file} />);
    // The first frame paints a screen of lines; the rest of the page follows a batch a frame.
    expect(container.querySelectorAll(".diff-line")).toHaveLength(DIFF_FIRST_ROWS);
    expect(container.querySelector(".diff")?.getAttribute("aria-busy")).toBe("true");
    expect(screen.queryByRole("button", { name: /Show more/ })).toBeNull();
    // Timeouts here are hang guards, not speed checks: rendering is slow on a loaded machine.
    await waitFor(() => expect(container.querySelectorAll(".diff-line")).toHaveLength(200), { timeout: 15_000 });
    expect(container.querySelector(".diff")?.hasAttribute("aria-busy")).toBe(false);
    fireEvent.click(screen.getByRole("button", { name: "Show more (400 more lines)" }));
    await waitFor(() => expect(container.querySelectorAll(".diff-line")).toHaveLength(600), { timeout: 15_000 });
    fireEvent.click(screen.getByRole("button", { name: /Show the rest/ }));
    await screen.findByText("line 699", undefined, { timeout: 15_000 });
    expect(calls).toHaveLength(1);
  });

  it("keeps its view in the store it is given only once changed, and comes back from it", () => {
    const context = Array.from({ length: 12 }, (_, i) => ` same ${i}`).join("\n");
    const file: FileDiff = { path: "a.txt", change: "update", added: 1, removed: 1, diff: `-old\n${context}\n+new\n` };
    const views = new Map<string, DiffView>();
    const first = render(<FileDiffView chatId="c1" file={file} views={views} viewKey="e1:0" />);
    // Opened and left as it opens: nothing kept.
    expect(views.size).toBe(0);
    fireEvent.click(screen.getByRole("button", { name: "⋯ 6 unchanged lines" }));
    expect([...views.keys()]).toEqual(["e1:0"]);
    first.unmount();
    const { container } = render(<FileDiffView chatId="c1" file={file} views={views} viewKey="e1:0" />);
    expect(container.querySelectorAll('[data-kind="ctx"]')).toHaveLength(12);
  });

  it("says a binary file changed instead of lines", () => {
    render(<FileDiffView chatId="c1" file={{ path: "i.png", change: "write", added: 0, removed: 0, diff: "", binary: true }} />);
    expect(screen.getByText("Binary file written")).toBeTruthy();
  });
});

describe("edits in the transcript", () => {
  const edit: ToolBlock = {
    type: "tool",
    tool: "Edit",
    tool_use_id: "e1",
    input: "src/a.ts",
    output: "ok",
    status: "done",
    files: [{ path: "src/a.ts", change: "update", added: 2, removed: 1, diff: "-a\n+b\n+c\n" }],
  };

  it("a tool head counts the lines and its body is the diff", () => {
    const { container } = render(<ToolView chatId="c1" block={edit} />);
    fireEvent.click(screen.getByRole("button", { name: /Edit/ }));
    expect(screen.getByLabelText("2 added, 1 removed")).toBeTruthy();
    expect(container.querySelectorAll(".diff-line")).toHaveLength(3);
  });

  it("Files changed lists each file and opens its diff on tap", () => {
    const { container } = render(<FilesChanged chatId="c1" files={filesChanged([edit])} />);
    expect(screen.getByText("1 file changed")).toBeTruthy();
    expect(container.querySelector(".diff")).toBeNull();
    fireEvent.click(screen.getByRole("button", { name: /src\/a\.ts/ }));
    expect(container.querySelectorAll(".diff-line")).toHaveLength(3);
  });
});

describe("web sources under a reply", () => {
  it("shows each page once as a chip with its title and domain, opening in a new tab", async () => {
    const { MessageRow } = await import("./MessageRow");
    const search = (id: string, urls: string[]): ToolBlock => ({
      type: "tool",
      tool: "WebSearch",
      tool_use_id: id,
      input: "q",
      output: "",
      status: "done",
      sources: urls.map((url, i) => ({ url, title: `Page ${i}` })),
    });
    const message = {
      role: "assistant" as const,
      content: "",
      ts: 1,
      blocks: [search("s1", ["https://www.a.example/1", "https://b.example/2"]), search("s2", ["https://b.example/2", "https://c.example/3"]), { type: "text" as const, content: "Found it.", item_id: "t" }],
    };
    render(<MessageRow rowKey="r" chatId="c1" message={message} live={false} working={false} onAnswer={async () => {}} offline={false} idx={1} />);
    const links = screen.getAllByRole("link");
    expect(links.map((l) => l.getAttribute("href"))).toEqual(["https://www.a.example/1", "https://b.example/2", "https://c.example/3"]);
    expect(links[0]?.textContent).toBe("Page 0a.example");
    expect(links[0]?.getAttribute("rel")).toContain("noopener");
    expect(links[0]?.getAttribute("target")).toBe("_blank");
  });
});

describe("the plan card", () => {
  it("shows the steps with their progress and stands for the TodoWrite calls", async () => {
    const { MessageRow } = await import("./MessageRow");
    const message = {
      role: "assistant" as const,
      content: "",
      ts: 1,
      blocks: [
        { type: "tool" as const, tool: "TodoWrite", tool_use_id: "p1", input: "", output: "", status: "done" as const },
        { type: "plan" as const, steps: [{ text: "Read", status: "completed" as const }, { text: "Edit", status: "in_progress" as const }, { text: "Test", status: "pending" as const }] },
      ],
    };
    const { container } = render(<MessageRow rowKey="r" chatId="c1" message={message} live working={false} onAnswer={async () => {}} offline={false} />);
    expect(screen.getByText("1 of 3 done")).toBeTruthy();
    expect([...container.querySelectorAll(".plan-step")].map((li) => li.getAttribute("data-status"))).toEqual(["completed", "in_progress", "pending"]);
    expect(container.querySelector(".tool")).toBeNull();
  });

  it("stands for Claude's task tool calls too, and a settled turn counts them as planning", async () => {
    const { MessageRow } = await import("./MessageRow");
    const tool = (tool: string, id: string) => ({ type: "tool" as const, tool, tool_use_id: id, input: "", output: "", status: "done" as const, elapsed_ms: 10 });
    const message = {
      role: "assistant" as const,
      content: "",
      ts: 1,
      blocks: [
        tool("TaskCreate", "c1"),
        tool("TaskCreate", "c2"),
        tool("TaskUpdate", "u1"),
        tool("TaskList", "l1"),
        tool("TaskGet", "g1"),
        { type: "plan" as const, steps: [{ text: "Draft", status: "completed" as const }, { text: "Write", status: "in_progress" as const }] },
      ],
    };
    const { container } = render(<MessageRow rowKey="r" chatId="c1" message={message} live working={false} onAnswer={async () => {}} offline={false} />);
    expect(screen.getByText("1 of 2 done")).toBeTruthy();
    expect(container.querySelector(".tool")).toBeNull();
    const { describeStretch, describeActivity } = await import("../../chat/activity");
    expect(describeStretch([tool("TaskCreate", "c1"), tool("TaskUpdate", "u1"), tool("Bash", "b1")])).toBe("Updated the plan, ran a command");
    expect(describeActivity([{ ...tool("TaskUpdate", "u1"), status: "running" as const }])).toBe("Planning");
  });
});
