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
  const onStop = vi.fn();
  render(<Composer owner="ada" chatId="c1" running={false} questionOpen={false} offline={false} stopping={false} onSend={onSend} onStop={onStop} {...overrides} />);
  return { onSend, onStop, box: screen.getByRole("textbox", { name: "Message" }) };
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
});
