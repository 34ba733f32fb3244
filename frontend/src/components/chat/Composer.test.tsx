import { act, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { loadDraft } from "../../chat/persist";
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

  it("offers the slash commands on a slash, picks one with Enter or a tap, and closes on Escape", () => {
    setPointer(false);
    const { onSend, box } = renderComposer();
    fireEvent.change(box, { target: { value: "/" } });
    const menu = screen.getByRole("listbox", { name: "Commands" });
    expect(Array.from(menu.querySelectorAll(".slash-name")).map((n) => n.textContent)).toEqual(["/goal", "/plan", "/compact"]);
    fireEvent.keyDown(box, { key: "Enter" });
    expect(onSend).not.toHaveBeenCalled();
    expect((box as HTMLTextAreaElement).value).toBe("/goal ");
    expect(screen.queryByRole("listbox")).toBeNull();
    fireEvent.change(box, { target: { value: "/p" } });
    fireEvent.click(screen.getByRole("option", { name: /\/plan/ }));
    expect((box as HTMLTextAreaElement).value).toBe("/plan ");
    fireEvent.change(box, { target: { value: "/" } });
    fireEvent.keyDown(box, { key: "ArrowDown" });
    expect(screen.getByRole("option", { selected: true }).textContent).toContain("/plan");
    fireEvent.keyDown(box, { key: "Escape" });
    expect(screen.queryByRole("listbox")).toBeNull();
    fireEvent.keyDown(box, { key: "Enter" });
    expect(onSend).toHaveBeenCalledWith("/");
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

  it("offline, a sent message waits in the box and goes when the device is back online", async () => {
    setPointer(false);
    const { box, onSend, rerender } = renderComposer({ offline: true });
    fireEvent.change(box, { target: { value: "later" } });
    fireEvent.click(screen.getByRole("button", { name: "Send" }));
    expect(onSend).not.toHaveBeenCalled();
    expect(screen.getByRole("status").textContent).toContain("Waiting for the connection");
    expect((box as HTMLTextAreaElement).value).toBe("later");
    rerender({ offline: false });
    await vi.waitFor(() => expect(onSend).toHaveBeenCalledWith("later"));
  });

  it("attaches picked files, uploads them with progress, sends them with the message, and removes one on request", async () => {
    setPointer(false);
    const uploads: { resolve: (body: string) => void; progress: (loaded: number) => void }[] = [];
    class FakeXhr {
      status = 0;
      responseText = "";
      upload: { onprogress: ((e: { lengthComputable: boolean; loaded: number; total: number }) => void) | null } = { onprogress: null };
      onload: (() => void) | null = null;
      onerror: (() => void) | null = null;
      onabort: (() => void) | null = null;
      open() {}
      setRequestHeader() {}
      abort() {
        this.onabort?.();
      }
      send() {
        uploads.push({
          resolve: (body) => {
            this.status = 200;
            this.responseText = body;
            this.onload?.();
          },
          progress: (loaded) => this.upload.onprogress?.({ lengthComputable: true, loaded, total: 100 }),
        });
      }
    }
    vi.stubGlobal("XMLHttpRequest", FakeXhr);
    vi.stubGlobal("fetch", vi.fn(() => Promise.resolve(new Response(null, { status: 204 }))));
    const { onSend } = renderComposer({ chatId: "files" });
    const input = screen.getByTestId<HTMLInputElement>("attach-input");
    const doc = new File(["a,b"], "data.csv", { type: "text/csv" });
    const note = new File(["hi"], "note.txt", { type: "text/plain" });
    fireEvent.change(input, { target: { files: [doc, note] } });
    expect(screen.getByRole("list", { name: "Attached files" }).children).toHaveLength(2);
    await vi.waitFor(() => expect(uploads).toHaveLength(2));
    uploads[0]?.progress(40);
    await vi.waitFor(() => expect(screen.getByRole("progressbar", { name: "Uploading data.csv" }).getAttribute("aria-valuenow")).toBe("40"));
    const stored = (name: string) => JSON.stringify([{ name, path: `/d/${name}`, size: 3, mime_type: "text/csv", uploaded_at: 1, url: `/api/chats/files/uploads/${name}`, preview: false }]);
    uploads[0]?.resolve(stored("data.csv"));
    // Sending before the second upload is done waits for it.
    fireEvent.click(screen.getByRole("button", { name: "Send" }));
    expect(onSend).not.toHaveBeenCalled();
    expect(screen.getByRole("status").textContent).toContain("uploads finish");
    fireEvent.click(screen.getByRole("button", { name: "Remove note.txt" }));
    await vi.waitFor(() =>
      expect(onSend).toHaveBeenCalledWith("", [{ name: "data.csv", mime_type: "text/csv", size: 3, preview: false }]),
    );
    await vi.waitFor(() => expect(screen.queryByRole("list", { name: "Attached files" })).toBeNull());
  });

  it("takes a pasted image and dropped files as attachments", () => {
    setPointer(false);
    class IdleXhr {
      upload = { onprogress: null };
      open() {}
      setRequestHeader() {}
      send() {}
      abort() {}
    }
    vi.stubGlobal("XMLHttpRequest", IdleXhr);
    const { box } = renderComposer({ chatId: "paste" });
    const image = new File([new Uint8Array([137, 80, 78, 71])], "image.png", { type: "image/png" });
    fireEvent.paste(box, { clipboardData: { files: [image], types: ["Files"] } });
    const dropped = new File(["x"], "notes.md", { type: "text/markdown" });
    const form = box.closest("form");
    if (!form) throw new Error("no form");
    fireEvent.dragOver(form, { dataTransfer: { types: ["Files"], files: [] } });
    expect(form.getAttribute("data-dragging")).toBe("true");
    fireEvent.drop(form, { dataTransfer: { types: ["Files"], files: [dropped] } });
    const names = [...screen.getByRole("list", { name: "Attached files" }).querySelectorAll(".composer-file-name")].map((n) => n.textContent);
    expect(names).toEqual(["image.png", "notes.md"]);
    expect(form.getAttribute("data-dragging")).toBeNull();
  });

  it("dictates into the box without sending, and offers no microphone where speech cannot be recognised", () => {
    setPointer(false);
    const { unmount } = render(<Composer owner="ada" chatId="m0" running={false} questionOpen={false} offline={false} stopping={false} onSend={vi.fn()} onStop={vi.fn()} />);
    expect(screen.queryByRole("button", { name: "Dictate" })).toBeNull();
    unmount();
    let instance: { onresult: ((e: unknown) => void) | null; onend: (() => void) | null } | null = null;
    class FakeRecognition {
      lang = "";
      continuous = false;
      interimResults = false;
      onresult: ((e: unknown) => void) | null = null;
      onend: (() => void) | null = null;
      onerror = null;
      start() {
        // eslint-disable-next-line @typescript-eslint/no-this-alias
        instance = this;
      }
      stop() {
        this.onend?.();
      }
    }
    vi.stubGlobal("webkitSpeechRecognition", FakeRecognition);
    const { onSend, box } = renderComposer({ chatId: "m1" });
    fireEvent.change(box, { target: { value: "Buy" } });
    fireEvent.click(screen.getByRole("button", { name: "Dictate" }));
    expect(screen.getByRole("button", { name: "Stop dictation" }).getAttribute("aria-pressed")).toBe("true");
    act(() => instance?.onresult?.({ resultIndex: 0, results: [{ isFinal: true, 0: { transcript: "milk and eggs" } }] }));
    expect((box as HTMLTextAreaElement).value).toBe("Buy milk and eggs");
    fireEvent.click(screen.getByRole("button", { name: "Stop dictation" }));
    expect(screen.getByRole("button", { name: "Dictate" })).toBeTruthy();
    expect(onSend).not.toHaveBeenCalled();
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
