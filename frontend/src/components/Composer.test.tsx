import { fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { loadDraft } from "../chat/persist";
import { Composer, type ComposerProps } from "./Composer";

afterEach(() => vi.unstubAllGlobals());

function setPointer(coarse: boolean) {
  vi.stubGlobal("matchMedia", (query: string) => ({ matches: coarse && query.includes("coarse"), media: query, addEventListener() {}, removeEventListener() {} }));
}

function renderComposer(overrides: Partial<ComposerProps> = {}) {
  const onSend = vi.fn<(text: string) => Promise<boolean>>(() => Promise.resolve(true));
  const onSteer = vi.fn<(text: string) => Promise<boolean>>(() => Promise.resolve(true));
  const onSteerQueued = vi.fn();
  const onStop = vi.fn();
  const props = { owner: "ada", chatId: "c1", running: false, questionOpen: false, offline: false, stopping: false, onSend, onSteer, onSteerQueued, onStop, ...overrides };
  const view = render(<Composer {...props} />);
  const rerender = (more: Partial<ComposerProps>) => view.rerender(<Composer {...props} {...more} />);
  return { onSend, onSteer, onSteerQueued, onStop, rerender, box: screen.getByRole("textbox", { name: "Message" }) };
}

describe("Composer", () => {
  it("sends with Enter on desktop and keeps Shift+Enter for a newline", () => {
    setPointer(false);
    const { onSend, box } = renderComposer();
    fireEvent.change(box, { target: { value: "hello" } });
    fireEvent.keyDown(box, { key: "Enter", shiftKey: true });
    expect(onSend).not.toHaveBeenCalled();
    fireEvent.keyDown(box, { key: "Enter" });
    expect(onSend).toHaveBeenCalledWith("hello");
  });

  it("treats Enter as a newline on touch-first devices (Ctrl/Cmd+Enter still sends)", () => {
    setPointer(true);
    const { onSend, box } = renderComposer();
    fireEvent.change(box, { target: { value: "hello" } });
    fireEvent.keyDown(box, { key: "Enter" });
    expect(onSend).not.toHaveBeenCalled();
    fireEvent.keyDown(box, { key: "Enter", ctrlKey: true });
    expect(onSend).toHaveBeenCalledWith("hello");
  });

  it("keeps the draft per chat in storage, and gives the text back when a send fails", async () => {
    setPointer(false);
    const { box } = renderComposer({ onSend: () => Promise.resolve(false) });
    fireEvent.change(box, { target: { value: "half a thought" } });
    expect(loadDraft("ada", "c1")).toBe("half a thought");
    fireEvent.click(screen.getByRole("button", { name: "Send" }));
    await vi.waitFor(() => expect((box as HTMLTextAreaElement).value).toBe("half a thought"));
  });

  it("shows Stop while a turn runs and disables Send offline", () => {
    setPointer(false);
    const { onStop } = renderComposer({ running: true });
    fireEvent.click(screen.getByRole("button", { name: "Stop" }));
    expect(onStop).toHaveBeenCalled();
  });

  it("disables sending offline but keeps typing possible", () => {
    setPointer(false);
    const { box } = renderComposer({ offline: true });
    fireEvent.change(box, { target: { value: "later" } });
    expect(screen.getByRole<HTMLButtonElement>("button", { name: "Send" }).disabled).toBe(true);
  });

  it("while a turn runs, Enter queues and Ctrl/Cmd+Enter steers the text in", () => {
    setPointer(false);
    const { onSend, onSteer, box } = renderComposer({ running: true });
    fireEvent.change(box, { target: { value: "later" } });
    fireEvent.keyDown(box, { key: "Enter" });
    expect(onSend).toHaveBeenCalledWith("later");
    fireEvent.change(box, { target: { value: "now" } });
    fireEvent.keyDown(box, { key: "Enter", ctrlKey: true });
    expect(onSteer).toHaveBeenCalledWith("now");
    fireEvent.change(box, { target: { value: "now too" } });
    fireEvent.keyDown(box, { key: "Enter", metaKey: true });
    expect(onSteer).toHaveBeenLastCalledWith("now too");
    expect(onSend).toHaveBeenCalledTimes(1);
  });

  it("a steer that fails puts the text back", async () => {
    setPointer(false);
    const { box } = renderComposer({ running: true, onSteer: () => Promise.resolve(false) });
    fireEvent.change(box, { target: { value: "steer me" } });
    fireEvent.keyDown(box, { key: "Enter", ctrlKey: true });
    await vi.waitFor(() => expect((box as HTMLTextAreaElement).value).toBe("steer me"));
  });

  it("with an empty box and a queue, offers Steer beside Stop; typing turns it back into Queue", () => {
    setPointer(false);
    const { onSteerQueued, onStop, box } = renderComposer({ running: true, queued: 2 });
    fireEvent.click(screen.getByRole("button", { name: "Steer" }));
    expect(onSteerQueued).toHaveBeenCalledTimes(1);
    fireEvent.click(screen.getByRole("button", { name: "Stop" }));
    expect(onStop).toHaveBeenCalled();
    fireEvent.change(box, { target: { value: "more" } });
    expect(screen.queryByRole("button", { name: "Steer" })).toBeNull();
    screen.getByRole("button", { name: "Queue message" });
  });

  it("takes text handed back from a failed steer of queued messages, after what is typed", () => {
    setPointer(false);
    const { box, rerender } = renderComposer({ running: true });
    fireEvent.change(box, { target: { value: "typed" } });
    rerender({ restore: { id: 1, text: "queued one\n\nqueued two" } });
    expect((box as HTMLTextAreaElement).value).toBe("typed\n\nqueued one\n\nqueued two");
    rerender({ restore: { id: 1, text: "queued one\n\nqueued two" } });
    expect((box as HTMLTextAreaElement).value).toBe("typed\n\nqueued one\n\nqueued two");
  });
});
