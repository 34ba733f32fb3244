import { act, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FIRST_STEPS, STEPS_PER_FRAME, WINDOWED_FROM_STEPS } from "../../chat/activity";
import type { ChatMessage } from "../../chat/reducer";
import { mockFetch } from "../../test/fetchMock";
import { copyText, MessageRow } from "./MessageRow";

afterEach(() => {
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

const reply: ChatMessage = {
  role: "assistant",
  content: "",
  ts: 1_000,
  blocks: [
    { type: "text", content: "First part.", item_id: "a" },
    { type: "tool", tool: "Bash", tool_use_id: "t", input: "ls", output: "x", status: "done" },
    { type: "text", content: "Second part.", item_id: "b" },
  ],
};
const noAnswer = async () => {};

/** The chat's scroller for a windowed stretch: jsdom lays nothing out, so its scroll and size
 *  are set by hand (the steps count at their estimated 54 px), and the list's top on screen
 *  moves up as the chat scrolls down. `done` puts everything back. */
function windowedScroller() {
  const scroller = document.createElement("div");
  scroller.style.overflowY = "auto";
  let top = 0;
  Object.defineProperty(scroller, "scrollTop", { get: () => top, set: (v: number) => (top = v), configurable: true });
  Object.defineProperty(scroller, "clientHeight", { value: 844, configurable: true });
  document.body.appendChild(scroller);
  vi.spyOn(HTMLElement.prototype, "getBoundingClientRect").mockImplementation(function (this: HTMLElement) {
    return DOMRect.fromRect({ x: 0, y: this.classList.contains("activity-group-window") ? -top : 0, width: 390, height: 0 });
  });
  const scrollTo = (y: number) =>
    act(() => {
      top = y;
      scroller.dispatchEvent(new Event("scroll"));
    });
  const done = () => {
    vi.restoreAllMocks();
    scroller.remove();
  };
  return { scroller, scrollTo, done };
}

describe("scheduled messages", () => {
  it("marks a message the scheduler sent, and only those", () => {
    const scheduled: ChatMessage = { role: "user", content: "Morning brief", ts: 1, cid: "schedule-3-17" };
    const { rerender } = render(<MessageRow rowKey="s" chatId="c" message={scheduled} live={false} working={false} onAnswer={noAnswer} offline={false} idx={0} />);
    expect(screen.getByText("Scheduled")).toBeTruthy();
    rerender(<MessageRow rowKey="s" chatId="c" message={{ ...scheduled, cid: "m1" }} live={false} working={false} onAnswer={noAnswer} offline={false} idx={0} />);
    expect(screen.queryByText("Scheduled")).toBeNull();
  });
});

describe("a settled reply's tool work", () => {
  const work: ChatMessage = {
    role: "assistant",
    content: "",
    ts: 1_000,
    blocks: [
      { type: "tool", tool: "Read", tool_use_id: "r1", input: "a.ts", output: "", status: "done", elapsed_ms: 2_000 },
      { type: "tool", tool: "Bash", tool_use_id: "b1", input: "npm test", output: "ok", status: "done", elapsed_ms: 3_000 },
      { type: "tool", tool: "Edit", tool_use_id: "e1", input: "a.ts", output: "", status: "done", files: [{ path: "a.ts", change: "update", added: 2, removed: 1, diff: "-a\n+b\n+c\n" }] },
      { type: "text", content: "All done.", item_id: "t" },
    ],
  };

  it("is one line per stretch that opens into its steps, with the files changed at the end", () => {
    const { container } = render(<MessageRow rowKey="r" chatId="c" message={work} live={false} working={false} onAnswer={noAnswer} offline={false} idx={1} />);
    const group = screen.getByRole("button", { name: "Read a file, ran a command, edited a file · 5 s" });
    expect(container.querySelector(".tool")).toBeNull();
    fireEvent.click(group);
    expect(container.querySelectorAll(".tool")).toHaveLength(3);
    expect(screen.getByText("1 file changed")).toBeTruthy();
  });

  it("draws the chevron of a stretch's head and of a subagent chip with CSS, not an SVG each", () => {
    const { container } = render(<MessageRow rowKey="r" chatId="c" message={work} live={false} working={false} onAnswer={noAnswer} offline={false} idx={1} />);
    const head = container.querySelector(".activity-group-head");
    expect(head?.querySelector("svg")).toBeNull();
    expect(head?.querySelectorAll(".tool-glyph")).toHaveLength(2);
    const task: ChatMessage = { role: "assistant", content: "", ts: 1_000, blocks: [{ type: "tool", tool: "Task", tool_use_id: "s1", input: "Look around", output: "", status: "running" }] };
    const chip = render(<MessageRow rowKey="s" chatId="c" message={task} live working={false} onAnswer={noAnswer} offline={false} />).container.querySelector(".subagent-head");
    expect(chip?.querySelector(".tool-chevron")?.matches("span.tool-glyph")).toBe(true);
  });

  it("opens a long stretch at once with its first steps, the rest a batch a frame", async () => {
    const blocks = Array.from({ length: 200 }, (_, i) => ({ type: "tool" as const, tool: "Read", tool_use_id: `r${i}`, input: `f${i}.ts`, output: "", status: "done" as const }));
    const long: ChatMessage = { role: "assistant", content: "", ts: 1_000, blocks };
    const { container } = render(<MessageRow rowKey="r" chatId="c" message={long} live={false} working={false} onAnswer={noAnswer} offline={false} idx={1} />);
    fireEvent.click(screen.getByRole("button", { name: "Read 200 files" }));
    expect(container.querySelectorAll(".tool")).toHaveLength(FIRST_STEPS);
    expect(container.querySelector(".activity-group-steps")?.getAttribute("aria-busy")).toBe("true");
    // A hang guard, not a speed check: rendering is slow on a loaded machine.
    await waitFor(() => expect(container.querySelectorAll(".tool")).toHaveLength(200), { timeout: 15_000 });
    expect(container.querySelector(".activity-group-steps")?.hasAttribute("aria-busy")).toBe(false);
    // In order, in fixed chunks: a step never moves to another chunk as more arrive.
    expect(container.querySelectorAll(".activity-group-chunk")).toHaveLength(Math.ceil(200 / STEPS_PER_FRAME));
    expect([...container.querySelectorAll(".tool-input")].map((e) => e.textContent)).toEqual(blocks.map((b) => b.input));
  });

  it("keeps only the steps near the screen of a stretch past the window threshold, and a step opened stays open", () => {
    const n = 2_000;
    const blocks = Array.from({ length: n }, (_, i) => ({ type: "tool" as const, tool: "Read", tool_use_id: `w${i}`, input: `f${i}.ts`, output: `out ${i}`, status: "done" as const }));
    const long: ChatMessage = { role: "assistant", content: "", ts: 1_000, blocks };
    expect(n).toBeGreaterThan(WINDOWED_FROM_STEPS);
    const { scroller, scrollTo, done } = windowedScroller();
    try {
      const { container } = render(<MessageRow rowKey="r" chatId="c" message={long} live={false} working={false} onAnswer={noAnswer} offline={false} idx={1} />, { container: scroller });
      fireEvent.click(screen.getByRole("button", { name: "Read 2000 files" }));
      const inputs = () => [...container.querySelectorAll(".tool-input")].map((e) => e.textContent);
      expect(inputs()[0]).toBe("f0.ts");
      expect(inputs().length).toBeGreaterThan(10);
      expect(inputs().length).toBeLessThan(60);
      // Screen readers hear each step's place in the whole stretch.
      const first = container.querySelector(".activity-step");
      expect(first?.getAttribute("aria-setsize")).toBe(String(n));
      expect(first?.getAttribute("aria-posinset")).toBe("1");
      expect(container.querySelector(".activity-group-steps")?.hasAttribute("aria-busy")).toBe(false);

      // Open the first step, scroll it far out of range: the window moves to the steps on screen.
      const head = (input: string) => screen.getByText(input, { selector: ".tool-input" }).closest("button") as HTMLButtonElement;
      fireEvent.click(head("f0.ts"));
      expect(screen.getByText("out 0")).toBeTruthy();
      scrollTo(54 * 1_000);
      expect(inputs()).toContain("f1000.ts");
      expect(inputs()).not.toContain("f0.ts");
      expect(inputs().length).toBeLessThan(60);
      expect(screen.getByText("f1000.ts").closest(".activity-step")?.getAttribute("aria-posinset")).toBe("1001");

      // Back at the top, the step is open as it was left.
      scrollTo(0);
      expect(inputs()[0]).toBe("f0.ts");
      expect(screen.getByText("out 0")).toBeTruthy();
      expect(head("f0.ts").getAttribute("aria-expanded")).toBe("true");
    } finally {
      done();
    }
  });

  it("keeps a diff's opened context, rows shown and fetched rest while its step is windowed out and back", async () => {
    // An edit whose diff folds 6 unchanged lines, runs past a page of rows and was cut by the
    // server, first in a stretch long enough to be windowed.
    const adds = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `+line ${from + i}\n`).join("");
    const head = `-old\n${Array.from({ length: 12 }, (_, i) => ` same ${i}\n`).join("")}+new\n`;
    const edit = { type: "tool" as const, tool: "Edit", tool_use_id: "e0", input: "big.txt", output: "", status: "done" as const, files: [{ path: "big.txt", change: "update" as const, added: 401, removed: 1, diff: head + adds(0, 300), full_len: 100_000, stash_id: "e0:diff:0" }] };
    const reads = Array.from({ length: 2_000 }, (_, i) => ({ type: "tool" as const, tool: "Read", tool_use_id: `w${i}`, input: `f${i}.ts`, output: "", status: "done" as const }));
    const long: ChatMessage = { role: "assistant", content: "", ts: 1_000, blocks: [edit, ...reads] };
    const { calls } = mockFetch({ "GET /api/chats/c/tool-output/e0%3Adiff%3A0": { status: 200, body: head + adds(0, 400) } });
    const { scroller, scrollTo, done } = windowedScroller();
    try {
      const { container } = render(<MessageRow rowKey="r" chatId="c" message={long} live={false} working={false} onAnswer={noAnswer} offline={false} idx={1} />, { container: scroller });
      fireEvent.click(screen.getByRole("button", { name: /^Edited a file, read 2000 files/ }));
      fireEvent.click(screen.getByText("big.txt", { selector: ".tool-input" }));
      const lines = () => container.querySelectorAll(".diff-line");
      // Open the folded context, show more rows, then the rest the server kept. Timeouts here
      // are hang guards, not speed checks: rendering is slow on a loaded machine.
      fireEvent.click(screen.getByRole("button", { name: "⋯ 6 unchanged lines" }));
      fireEvent.click(await screen.findByRole("button", { name: /^Show more/ }, { timeout: 15_000 }));
      fireEvent.click(await screen.findByRole("button", { name: /^Show the rest/ }, { timeout: 15_000 }));
      await waitFor(() => expect(lines()).toHaveLength(414), { timeout: 15_000 });
      expect(container.querySelectorAll('[data-kind="ctx"]')).toHaveLength(12);

      // Far down the stretch, the edit leaves the page.
      scrollTo(54 * 1_000);
      expect(container.querySelector(".diff")).toBeNull();

      // Back at the top, its diff is as it was left, at once: context open, every row, the rest
      // fetched once.
      scrollTo(0);
      expect(lines()).toHaveLength(414);
      expect(container.querySelectorAll('[data-kind="ctx"]')).toHaveLength(12);
      expect(screen.queryByRole("button", { name: /unchanged lines|^Show more|^Show the rest/ })).toBeNull();
      expect(screen.getByText("line 399")).toBeTruthy();
      expect(calls).toHaveLength(1);
    } finally {
      done();
    }
  });

  it("keeps a subagent chip open and a fetched full output while their steps are windowed out and back", async () => {
    // A subagent call with one step of its own, then a command whose output the server cut, first
    // in a stretch long enough to be windowed.
    const task = { type: "tool" as const, tool: "Task", tool_use_id: "t0", input: "Survey the repo", output: "Report.", status: "done" as const, subagent_type: "general-purpose" };
    const inner = { type: "tool" as const, tool: "Read", tool_use_id: "t0r", input: "inner.ts", output: "", status: "done" as const, parent_tool_use_id: "t0" };
    const cmd = { type: "tool" as const, tool: "Bash", tool_use_id: "b0", input: "make", output: "head of it", output_truncated: true, output_full_len: 40, status: "done" as const };
    const reads = Array.from({ length: 2_000 }, (_, i) => ({ type: "tool" as const, tool: "Read", tool_use_id: `w${i}`, input: `f${i}.ts`, output: "", status: "done" as const }));
    const long: ChatMessage = { role: "assistant", content: "", ts: 1_000, blocks: [task, inner, cmd, ...reads] };
    const { calls } = mockFetch({ "GET /api/chats/c/tool-output/b0": { status: 200, body: "the whole output of make" } });
    const { scroller, scrollTo, done } = windowedScroller();
    try {
      const { container } = render(<MessageRow rowKey="r" chatId="c" message={long} live={false} working={false} onAnswer={noAnswer} offline={false} idx={1} />, { container: scroller });
      fireEvent.click(screen.getByRole("button", { name: /^Ran a subagent, ran a command, read 2000 files/ }));
      fireEvent.click(container.querySelector(".subagent-head")!);
      expect(screen.getByText("inner.ts", { selector: ".tool-input" })).toBeTruthy();
      fireEvent.click(screen.getByText("make", { selector: ".tool-input" }));
      fireEvent.click(screen.getByRole("button", { name: /^Show full output/ }));
      expect(await screen.findByText("the whole output of make")).toBeTruthy();

      scrollTo(54 * 1_000);
      expect(container.querySelector(".subagent")).toBeNull();
      scrollTo(0);
      expect(container.querySelector(".subagent-head")!.getAttribute("aria-expanded")).toBe("true");
      expect(screen.getByText("inner.ts", { selector: ".tool-input" })).toBeTruthy();
      expect(screen.getByText("the whole output of make")).toBeTruthy();
      expect(screen.queryByRole("button", { name: /^Show full output/ })).toBeNull();
      expect(calls).toHaveLength(1);
    } finally {
      done();
    }
  });

  it("shows each step on the live row", () => {
    const { container } = render(<MessageRow rowKey="r" chatId="c" message={work} live working={false} onAnswer={noAnswer} offline={false} />);
    expect(container.querySelectorAll(".tool")).toHaveLength(3);
    expect(screen.queryByText("1 file changed")).toBeNull();
  });
});

describe("row actions", () => {
  it("copies a reply's text blocks, not its tools", async () => {
    const writeText = vi.fn(async () => {});
    vi.stubGlobal("navigator", { ...navigator, clipboard: { writeText } });
    expect(copyText(reply)).toBe("First part.\n\nSecond part.");
    render(<MessageRow rowKey="r" chatId="c" message={reply} live={false} working={false} onAnswer={noAnswer} offline={false} idx={1} />);
    fireEvent.click(screen.getByRole("button", { name: "Copy message" }));
    expect(writeText).toHaveBeenCalledWith("First part.\n\nSecond part.");
    expect(await screen.findByRole("button", { name: "Copied" })).toBeTruthy();
  });

  it("offers Edit and Regenerate only where the chat view passes them", () => {
    const onEdit = vi.fn();
    const onRegenerate = vi.fn();
    const user: ChatMessage = { role: "user", content: "make it blue", ts: 1 };
    const { rerender } = render(<MessageRow rowKey="u" chatId="c" message={user} live={false} working={false} onAnswer={noAnswer} offline={false} idx={0} onEdit={onEdit} />);
    fireEvent.click(screen.getByRole("button", { name: "Edit and resend" }));
    expect(onEdit).toHaveBeenCalledTimes(1);
    rerender(<MessageRow rowKey="u" chatId="c" message={user} live={false} working={false} onAnswer={noAnswer} offline={false} idx={0} />);
    expect(screen.queryByRole("button", { name: "Edit and resend" })).toBeNull();
    rerender(<MessageRow rowKey="a" chatId="c" message={reply} live={false} working={false} onAnswer={noAnswer} offline={false} idx={1} onRegenerate={onRegenerate} />);
    fireEvent.click(screen.getByRole("button", { name: "Regenerate reply" }));
    expect(onRegenerate).toHaveBeenCalledTimes(1);
  });

  it("has no actions on the live row, which says what the agent does and for how long", () => {
    vi.useFakeTimers();
    vi.setSystemTime(61_000);
    const live: ChatMessage = { role: "assistant", content: "", ts: 0, blocks: [{ type: "tool", tool: "Bash", tool_use_id: "t", input: "npm test", output: "PASS a\nPASS b", status: "running" }] };
    const { container } = render(<MessageRow rowKey="l" chatId="c" message={live} live working onAnswer={noAnswer} offline={false} />);
    const line = container.querySelector(".working");
    expect(line?.textContent).toContain("Running `npm test`");
    expect(line?.textContent).toContain("1 min 01 s");
    act(() => {
      vi.advanceTimersByTime(2_000);
    });
    expect(line?.textContent).toContain("1 min 03 s");
    // The ticking clock is not read out: no live region around it, and hidden from readers.
    expect(screen.queryByRole("status")).toBeNull();
    expect(container.querySelector(".working-time")?.getAttribute("aria-hidden")).toBe("true");
    // The running tool's latest output shows without opening it.
    expect(screen.getByLabelText("Latest output of Bash").textContent).toBe("PASS a\nPASS b");
    expect(screen.queryByRole("button", { name: "Copy message" })).toBeNull();
  });
});

describe("a turn waiting for a free agent", () => {
  it("says so on the live row instead of what it would be doing", () => {
    const live: ChatMessage = { role: "assistant", content: "", ts: 0, blocks: [] };
    const { container, rerender } = render(<MessageRow rowKey="l" chatId="c" message={live} live working onAnswer={noAnswer} offline={false} waiting={{ busy: 3, limit: 3 }} />);
    // The live row is not a live region (its clock would be read every second): its text is.
    const what = () => container.querySelector(".working-what")?.textContent ?? "";
    expect(what()).toBe("Waiting for a free agent: 3 of 3 are busy");
    rerender(<MessageRow rowKey="l" chatId="c" message={live} live working onAnswer={noAnswer} offline={false} waiting={null} />);
    expect(what()).not.toContain("Waiting for a free agent");
    expect(what()).not.toBe("");
  });
});

describe("attachments in the transcript", () => {
  it("shows a message's pictures as thumbnails behind a media token and its other files as chips; a tap opens the lightbox", async () => {
    const { LightboxHost } = await import("./Lightbox");
    vi.stubGlobal(
      "fetch",
      vi.fn(() => Promise.resolve(new Response(JSON.stringify({ token: "mt", expires_in: 900 }), { status: 200, headers: { "Content-Type": "application/json" } }))),
    );
    const message: ChatMessage = {
      role: "user",
      content: "",
      ts: 1,
      attachments: [
        { name: "a.png", mime_type: "image/png", size: 3000, width: 40, height: 30, preview: true },
        { name: "b.jpg", mime_type: "image/jpeg", size: 5000, preview: true },
        { name: "report.pdf", mime_type: "application/pdf", size: 12 * 1024, preview: false },
      ],
    };
    render(
      <>
        <MessageRow rowKey="u" chatId="att" message={message} live={false} working={false} onAnswer={noAnswer} offline={false} idx={0} />
        <LightboxHost />
      </>,
    );
    const thumb = await screen.findByRole("img", { name: "a.png" });
    expect(thumb.getAttribute("src")).toBe("/api/chats/att/uploads/a.png?token=mt&preview=true");
    const chip = screen.getByRole("link", { name: "Download report.pdf, 12 KB" });
    expect(chip.getAttribute("href")).toBe("/api/chats/att/uploads/report.pdf?token=mt");
    expect(document.querySelector(".bubble")).toBeNull();
    fireEvent.click(screen.getByRole("button", { name: "Open image b.jpg" }));
    const dialog = await screen.findByRole("dialog", { name: "Image 2 of 2: b.jpg" });
    expect(dialog.querySelector("img")?.getAttribute("src")).toBe("/api/chats/att/uploads/b.jpg?token=mt");
    fireEvent.keyDown(window, { key: "ArrowLeft" });
    expect(await screen.findByRole("dialog", { name: "Image 1 of 2: a.png" })).toBeTruthy();
    fireEvent.click(screen.getByRole("button", { name: "Close" }));
    expect(screen.queryByRole("dialog")).toBeNull();
  });
});
