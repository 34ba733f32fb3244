import { describe, expect, it } from "vitest";
import type { Message } from "../../api/types";
import { MAX_WINDOW_ROWS, grow } from "./HistoryView";

const msgs = (from: number, n: number): Message[] =>
  Array.from({ length: n }, (_, i): Message => ({ role: "user", content: `m${from + i}`, ts: from + i }));
const contents = (w: { messages: Message[] }) => w.messages.map((m) => m.content);

describe("the history window", () => {
  it("adds older and newer pages without gaps or repeats", () => {
    let win = { start: 40, messages: msgs(40, 20), total: 100 };
    win = grow(win, 20, msgs(20, 20), 100);
    expect(win.start).toBe(20);
    expect(contents(win)).toEqual(msgs(20, 40).map((m) => m.content));
    // A newer page that overlaps what is there adds only what is new.
    win = grow(win, 50, msgs(50, 20), 100);
    expect(win.start).toBe(20);
    expect(contents(win)).toEqual(msgs(20, 50).map((m) => m.content));
  });

  it("stays bounded, dropping the end away from the reader", () => {
    let win = { start: 0, messages: msgs(0, MAX_WINDOW_ROWS), total: 1000 };
    win = grow(win, MAX_WINDOW_ROWS, msgs(MAX_WINDOW_ROWS, 20), 1000);
    expect(win.messages.length).toBe(MAX_WINDOW_ROWS);
    expect(win.start).toBe(20);
    expect(win.messages[0]?.content).toBe("m20");
    win = grow(win, 0, msgs(0, 20), 1000);
    expect(win.start).toBe(0);
    expect(win.messages.length).toBe(MAX_WINDOW_ROWS);
    expect(win.messages[MAX_WINDOW_ROWS - 1]?.content).toBe(`m${MAX_WINDOW_ROWS - 1}`);
  });
});
