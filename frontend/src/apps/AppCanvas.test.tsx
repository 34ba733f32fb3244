import { act, cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import type { AppSummary } from "../api/apps";
import { AppPane } from "../components/apps/AppPane";
import { mockFetch } from "../test/fetchMock";
import { appSummary } from "../test/fixtures";
import AppCanvas, { FRAME_SANDBOX } from "./AppCanvas";
import type { AppIntent } from "../shell/router";
import { forgetAppTokens } from "./tokens";

const app = appSummary(5, { slug: "hello", name: "Hello", v: "abc", chat_id: "chat-1" });

function setup(shown: AppSummary = app, intent: AppIntent | null = null) {
  forgetAppTokens();
  localStorage.setItem("mobius.token", "OWNER-SECRET");
  const server = mockFetch({
    "POST /api/auth/app-token": { status: 200, body: { token: "app-token-5", expires_in: 8 * 3600 } },
    "GET /api/apps/5/module?v=abc": { status: 200, body: "export default 1" },
  });
  const onHostRequest = vi.fn();
  const view = render(<AppCanvas app={shown} onHostRequest={onHostRequest} intent={intent} />);
  const iframe = view.container.querySelector("iframe");
  if (!iframe?.contentWindow) throw new Error("no frame window");
  const frameWindow = iframe.contentWindow;
  const posted: unknown[] = [];
  vi.spyOn(frameWindow, "postMessage").mockImplementation((message: unknown) => {
    posted.push(message);
  });
  const fromFrame = (data: unknown, source: Window = frameWindow) => {
    fireEvent(window, new MessageEvent("message", { data, origin: "null", source }));
    return Promise.resolve();
  };
  const setIntent = (next: AppIntent | null) => view.rerender(<AppCanvas app={shown} onHostRequest={onHostRequest} intent={next} />);
  return { server, onHostRequest, iframe, posted, fromFrame, setIntent };
}

describe("AppCanvas broker", () => {
  it("renders the frame sandboxed like its CSP, with no way for popups to escape", () => {
    const { iframe } = setup();
    expect(iframe.getAttribute("src")).toBe("/api/apps/5/frame?v=abc");
    expect(iframe.getAttribute("sandbox")).toBe(FRAME_SANDBOX);
    const flags = (iframe.getAttribute("sandbox") ?? "").split(" ");
    expect(flags).toContain("allow-scripts");
    expect(flags).not.toContain("allow-same-origin");
    expect(flags).not.toContain("allow-popups-to-escape-sandbox");
    expect(iframe.getAttribute("allow")).toBe("fullscreen");
  });

  it("sends frame-init with the app token (never the owner's) once the frame says hello", async () => {
    const { posted, fromFrame } = setup();
    await fromFrame({ type: "moebius:frame-hello" });
    await waitFor(() => expect(posted).toContainEqual(expect.objectContaining({ type: "moebius:frame-init", token: "app-token-5" })));
    expect(JSON.stringify(posted)).not.toContain("OWNER-SECRET");
  });

  it("ignores messages from any window but the mounted frame", async () => {
    const { posted, fromFrame, onHostRequest } = setup();
    await fromFrame({ type: "moebius:frame-mounted" }, window);
    await fromFrame({ type: "moebius:open-settings" }, window);
    await fromFrame({ type: "moebius:module-request", requestId: "m1" }, window);
    expect(screen.getByRole("status", { name: "Opening Hello" })).toBeTruthy();
    expect(onHostRequest).not.toHaveBeenCalled();
    expect(posted).toEqual([]);
  });

  it("hides the loading overlay on frame-mounted and passes host requests up", async () => {
    const { fromFrame, onHostRequest } = setup();
    await fromFrame({ type: "moebius:frame-mounted" });
    expect(screen.queryByRole("status", { name: "Opening Hello" })).toBeNull();
    await fromFrame({ type: "moebius:new-chat", title: "Idea", draft: "Make it blue" });
    expect(onHostRequest).toHaveBeenCalledWith({ kind: "new-chat", title: "Idea", draft: "Make it blue" });
  });

  it("passes installs, updates and uninstalls up only for an app whose manifest asks for manage_apps", async () => {
    const asks = [
      { type: "moebius:install-app", source: "https://example.com/a.git" },
      { type: "moebius:manage-app", action: "update", appId: 7 },
      { type: "moebius:manage-app", action: "uninstall", appId: 7 },
    ];
    const plain = setup();
    for (const ask of asks) await plain.fromFrame(ask);
    expect(plain.onHostRequest).not.toHaveBeenCalled();
    cleanup();
    const store = setup({ ...app, capability_contract: { schema: 1, data: { manage_apps: true } } });
    for (const ask of asks) await store.fromFrame(ask);
    expect(store.onHostRequest.mock.calls.map((c): unknown => c[0])).toEqual([
      { kind: "install-app", source: "https://example.com/a.git" },
      { kind: "manage-app", action: "update", appId: 7 },
      { kind: "manage-app", action: "uninstall", appId: 7 },
    ]);
  });

  it("answers a module request with an ack, then the bytes fetched with the app token", async () => {
    const { server, posted, fromFrame } = setup();
    await fromFrame({ type: "moebius:module-request", requestId: "m1" });
    expect(posted[0]).toEqual({ type: "moebius:module-ack", requestId: "m1", appId: 5 });
    await waitFor(() => expect(posted).toContainEqual(expect.objectContaining({ type: "moebius:module-result", requestId: "m1", ok: true })));
    const moduleCall = server.calls.find((c) => c.key.startsWith("GET /api/apps/5/module"));
    expect((moduleCall?.init.headers as Record<string, string>).Authorization).toBe("Bearer app-token-5");
  });

  it("shows a retry surface on frame-error", async () => {
    const { fromFrame, onHostRequest } = setup();
    await fromFrame({ type: "moebius:frame-error", error: { code: "render_error", message: "boom" } });
    expect(screen.getByRole("alert").textContent).toContain("boom");
    fireEvent.click(screen.getByRole("button", { name: "Report to agent" }));
    expect(onHostRequest).toHaveBeenCalledWith({ kind: "report", message: "boom" });
    fireEvent.click(screen.getByRole("button", { name: "Try again" }));
    expect(screen.getByRole("status", { name: "Opening Hello" })).toBeTruthy();
  });
});

/** The app in its pane (bar + canvas), as the shell shows it; the frame's messages recorded. */
async function setupPane() {
  forgetAppTokens();
  localStorage.setItem("mobius.token", "OWNER-SECRET");
  mockFetch({
    "POST /api/auth/app-token": { status: 200, body: { token: "app-token-5", expires_in: 8 * 3600 } },
    "GET /api/apps/5/module?v=abc": { status: 200, body: "export default 1" },
  });
  const onClose = vi.fn();
  const view = render(<AppPane app={app} loading={false} onClose={onClose} onHostRequest={vi.fn()} />);
  // The canvas loads on demand.
  const iframe = await waitFor(() => {
    const found = view.container.querySelector("iframe");
    if (!found?.contentWindow) throw new Error("no frame yet");
    return found;
  });
  // The broker listens from an effect of the commit that mounted the frame: let effects run
  // before the frame speaks (a loaded machine can otherwise get here first).
  await act(async () => {
    await new Promise((resolve) => setTimeout(resolve, 0));
  });
  const frameWindow = iframe.contentWindow as Window;
  const posted: Record<string, unknown>[] = [];
  const transferred: unknown[][] = [];
  vi.spyOn(frameWindow, "postMessage").mockImplementation((message: unknown, _origin?: unknown, transfer?: unknown) => {
    posted.push(message as Record<string, unknown>);
    transferred.push(Array.isArray(transfer) ? transfer : []);
  });
  const fromFrame = (data: unknown, source: Window = frameWindow) => {
    act(() => {
      fireEvent(window, new MessageEvent("message", { data, origin: "null", source }));
    });
    return Promise.resolve();
  };
  const bar = () => view.container.querySelector<HTMLElement>(".app-pane-bar");
  const states = () => posted.filter((m) => m.type === "moebius:immersive-state").map((m) => m.value);
  return { view, posted, transferred, fromFrame, bar, states, onClose };
}

describe("immersive mode", () => {
  it("hides the pane's bar on request, shows a way out, and tells the frame what it did", async () => {
    const { fromFrame, bar, states, view } = await setupPane();
    expect(bar()?.hidden).toBe(false);
    expect(screen.getByRole("button", { name: "Back" })).toBeTruthy();
    expect(screen.queryByRole("button", { name: "Exit full screen" })).toBeNull();

    await fromFrame({ type: "moebius:immersive", value: true });
    expect(bar()?.hidden).toBe(true);
    expect(screen.queryByRole("button", { name: "Back" })).toBeNull();
    expect(view.container.querySelector(".app-pane")?.hasAttribute("data-immersive")).toBe(true);
    expect(states()).toEqual([true]);
    // Immersive is a history entry of its own, so the system Back can leave it.
    expect((history.state as { appNav?: string } | null)?.appNav).toBe("mobius:immersive");

    fireEvent.click(screen.getByRole("button", { name: "Exit full screen" }));
    expect(bar()?.hidden).toBe(false);
    expect(screen.queryByRole("button", { name: "Exit full screen" })).toBeNull();
    expect(states()).toEqual([true, false]);
    await waitFor(() => expect((history.state as { appNav?: string } | null)?.appNav).toBeUndefined());
  });

  it("leaves immersive mode on Escape", async () => {
    const { fromFrame, bar, states } = await setupPane();
    await fromFrame({ type: "moebius:immersive", value: true });
    expect(bar()?.hidden).toBe(true);
    fireEvent.keyDown(window, { key: "Escape" });
    expect(bar()?.hidden).toBe(false);
    expect(states()).toEqual([true, false]);
    await waitFor(() => expect((history.state as { appNav?: string } | null)?.appNav).toBeUndefined());
  });

  it("leaves immersive mode on Back, without closing the app", async () => {
    const { fromFrame, bar, states, onClose } = await setupPane();
    await fromFrame({ type: "moebius:immersive", value: true });
    expect(bar()?.hidden).toBe(true);
    act(() => history.back());
    await waitFor(() => expect(bar()?.hidden).toBe(false));
    expect(states()).toEqual([true, false]);
    expect(onClose).not.toHaveBeenCalled();
  });

  it("answers a repeated or an off request with the shell's state, and a frame's own 'off' ends it", async () => {
    const { fromFrame, bar, states } = await setupPane();
    await fromFrame({ type: "moebius:immersive", value: false });
    expect(states()).toEqual([false]);
    await fromFrame({ type: "moebius:immersive", value: true });
    await fromFrame({ type: "moebius:immersive", value: true });
    expect(states()).toEqual([false, true, true]);
    await fromFrame({ type: "moebius:immersive", value: false });
    expect(bar()?.hidden).toBe(false);
    expect(states()).toEqual([false, true, true, false]);
    await waitFor(() => expect((history.state as { appNav?: string } | null)?.appNav).toBeUndefined());
  });

  it("ignores malformed requests and requests from any other window", async () => {
    const { fromFrame, bar, posted } = await setupPane();
    await fromFrame({ type: "moebius:immersive", value: "true" });
    await fromFrame({ type: "moebius:immersive" });
    await fromFrame({ type: "moebius:immersive", value: true }, window);
    expect(bar()?.hidden).toBe(false);
    expect(screen.queryByRole("button", { name: "Exit full screen" })).toBeNull();
    expect(posted).toEqual([]);
  });

  it("resets when a different app opens in the pane", async () => {
    const { fromFrame, bar, view } = await setupPane();
    await fromFrame({ type: "moebius:immersive", value: true });
    expect(bar()?.hidden).toBe(true);
    const other: AppSummary = { ...app, id: 6, name: "Other", module_url: "/api/apps/6/module?v=abc", frame_url: "/api/apps/6/frame?v=abc" };
    view.rerender(<AppPane app={other} loading={false} onClose={vi.fn()} onHostRequest={vi.fn()} />);
    await waitFor(() => expect(view.container.querySelector("iframe")?.getAttribute("src")).toBe("/api/apps/6/frame?v=abc"));
    expect(bar()?.hidden).toBe(false);
    expect(screen.queryByRole("button", { name: "Exit full screen" })).toBeNull();
  });
});

describe("safe-area insets", () => {
  it("sends the frame its insets right after frame-init", async () => {
    const { posted, fromFrame } = await setupPane();
    await fromFrame({ type: "moebius:frame-hello" });
    await waitFor(() => expect(posted.map((m) => m.type)).toContain("moebius:frame-insets"));
    const types = posted.map((m) => m.type);
    expect(types.indexOf("moebius:frame-insets")).toBeGreaterThan(types.indexOf("moebius:frame-init"));
    expect(posted.find((m) => m.type === "moebius:frame-insets")?.insets).toEqual({ top: 0, right: 0, bottom: 0, left: 0 });
  });
});

describe("in-app screens (nav)", () => {
  const navState = () => history.state as { appNav?: string; appNavDepth?: number } | null;
  /** In-app entries above where the test started (jsdom's history outlives each test). */
  const depthFrom = (start: number) => (navState()?.appNavDepth ?? 0) - start;

  it("acknowledges a push (the runtime's, or an app's own raw one without an id) with a history entry", async () => {
    const { fromFrame, posted } = await setupPane();
    const start = navState()?.appNavDepth ?? 0;
    await fromFrame({ type: "moebius:nav-push", requestId: "nav-1", label: "Details", reversible: false });
    expect(posted).toContainEqual({ type: "moebius:nav-push-ack", requestId: "nav-1" });
    expect(navState()?.appNav).toBe("nav-1");
    expect(depthFrom(start)).toBe(1);
    await fromFrame({ type: "moebius:nav-push", label: "raw" });
    const ack = posted.filter((m) => m.type === "moebius:nav-push-ack").pop();
    expect(typeof ack?.requestId).toBe("string");
    expect(navState()?.appNav).toBe(ack?.requestId);
    expect(depthFrom(start)).toBe(2);
    // The app's own Back (a pop without an id) closes its top screen.
    await fromFrame({ type: "moebius:nav-pop" });
    await waitFor(() => expect(depthFrom(start)).toBe(1));
    await fromFrame({ type: "moebius:nav-pop", requestId: "nav-1" });
    await waitFor(() => expect(depthFrom(start)).toBe(0));
    // Closed by the app: the frame hears no nav-back for them.
    expect(posted.filter((m) => m.type === "moebius:nav-back")).toEqual([]);
  });

  it("the system Back closes the top screen and tells the frame which", async () => {
    const { fromFrame, posted, onClose } = await setupPane();
    await fromFrame({ type: "moebius:nav-push", requestId: "nav-b", label: "Sheet" });
    act(() => history.back());
    await waitFor(() => expect(posted).toContainEqual({ type: "moebius:nav-back", requestId: "nav-b" }));
    expect(onClose).not.toHaveBeenCalled();
  });

  it("rejects pushes past 20 screens, and while the page is hidden", async () => {
    const { fromFrame, posted } = await setupPane();
    for (let i = 0; i < 21; i++) await fromFrame({ type: "moebius:nav-push", requestId: `n${i}`, label: "x" });
    expect(posted.filter((m) => m.type === "moebius:nav-push-ack")).toHaveLength(20);
    expect(posted).toContainEqual({ type: "moebius:nav-push-rejected", requestId: "n20" });
    const hidden = vi.spyOn(document, "visibilityState", "get").mockReturnValue("hidden");
    await fromFrame({ type: "moebius:nav-push", requestId: "late", label: "x" });
    expect(posted).toContainEqual({ type: "moebius:nav-push-rejected", requestId: "late" });
    hidden.mockRestore();
    act(() => history.go(-20));
  });

  it("Forward onto a screen the app can restore asks it to, and steps back off one it refuses", async () => {
    const { fromFrame, posted } = await setupPane();
    const before = navState()?.appNav;
    await fromFrame({ type: "moebius:nav-push", requestId: "rev", label: "Editor", reversible: true });
    act(() => history.back());
    await waitFor(() => expect(posted).toContainEqual({ type: "moebius:nav-back", requestId: "rev" }));
    act(() => history.forward());
    await waitFor(() => expect(posted).toContainEqual({ type: "moebius:nav-forward", requestId: "rev" }));
    expect(navState()?.appNav).toBe("rev");
    await fromFrame({ type: "moebius:nav-forward-rejected", requestId: "rev" });
    await waitFor(() => expect(navState()?.appNav).toBe(before));
  });
});

describe("deep-link intents and visibility", () => {
  const intents = (posted: unknown[]) => posted.filter((m) => (m as { type: string }).type === "moebius:app-intent") as { intent: string; nonce: string }[];

  it("hands the mounted app its intent and keeps it covered until the frame applied that nonce", async () => {
    const { posted, fromFrame } = setup(app, { value: "note:7", nonce: 1 });
    expect(intents(posted)).toEqual([]);
    await fromFrame({ type: "moebius:frame-mounted" });
    expect(intents(posted)).toEqual([expect.objectContaining({ intent: "note:7" })]);
    const nonce = intents(posted)[0]?.nonce;
    expect(screen.getByRole("status", { name: "Opening Hello" })).toBeTruthy();
    await fromFrame({ type: "moebius:app-intent-applied", nonce: "someone-else" });
    expect(screen.getByRole("status", { name: "Opening Hello" })).toBeTruthy();
    await fromFrame({ type: "moebius:app-intent-applied", nonce });
    await waitFor(() => expect(screen.queryByRole("status", { name: "Opening Hello" })).toBeNull());
  });

  it("a new intent for the open app goes to the frame once; the same nonce again is not repeated", async () => {
    const { posted, fromFrame, setIntent } = setup();
    await fromFrame({ type: "moebius:frame-mounted" });
    expect(intents(posted)).toEqual([]);
    const intent = { value: "today", nonce: 2 };
    setIntent(intent);
    setIntent({ ...intent });
    expect(intents(posted).map((m) => m.intent)).toEqual(["today"]);
    setIntent({ value: "today", nonce: 3 });
    expect(intents(posted).map((m) => m.intent)).toEqual(["today", "today"]);
  });

  it("an app that never answers is uncovered after a short while, not kept behind the cover", async () => {
    vi.useFakeTimers();
    try {
      const { fromFrame } = setup(app, { value: "x", nonce: 4 });
      await fromFrame({ type: "moebius:frame-mounted" });
      expect(screen.getByRole("status", { name: "Opening Hello" })).toBeTruthy();
      act(() => void vi.advanceTimersByTime(1_600));
      expect(screen.queryByRole("status", { name: "Opening Hello" })).toBeNull();
    } finally {
      vi.useRealTimers();
    }
  });

  it("passes open-app up with the app's id or slug and the intent", async () => {
    const { fromFrame, onHostRequest } = setup();
    await fromFrame({ type: "moebius:open-app", appId: "notes", intent: "new" });
    await fromFrame({ type: "moebius:open-app", appId: 9 });
    expect(onHostRequest.mock.calls).toEqual([[{ kind: "open-app", appId: "notes", intent: "new" }], [{ kind: "open-app", appId: 9, intent: null }]]);
  });

  it("tells the app whether it is on screen, once mounted and when the page is hidden", async () => {
    const { posted, fromFrame } = setup();
    await fromFrame({ type: "moebius:frame-hello" });
    await waitFor(() => expect(posted).toContainEqual(expect.objectContaining({ type: "moebius:frame-init" })));
    expect(posted).not.toContainEqual(expect.objectContaining({ type: "moebius:frame-visibility" }));
    await fromFrame({ type: "moebius:frame-mounted" });
    expect(posted).toContainEqual({ type: "moebius:frame-visibility", visible: true });
    const visibility = vi.spyOn(document, "visibilityState", "get").mockReturnValue("hidden");
    try {
      fireEvent(document, new Event("visibilitychange"));
      expect(posted).toContainEqual({ type: "moebius:frame-visibility", visible: false });
    } finally {
      visibility.mockRestore();
    }
  });
});

describe("capabilities", () => {
  it("answers every request with an error naming why: undeclared, or not provided here (never silence)", () => {
    const declared = { ...app, capability_contract: { schema: 5, runtime: { "media.microphone.capture": { version: 1 } } } };
    forgetAppTokens();
    mockFetch({ "POST /api/auth/app-token": { status: 200, body: { token: "app-token-5", expires_in: 8 * 3600 } } });
    const view = render(<AppCanvas app={declared} onHostRequest={vi.fn()} />);
    const frameWindow = view.container.querySelector("iframe")?.contentWindow as Window;
    const posted: Record<string, unknown>[] = [];
    vi.spyOn(frameWindow, "postMessage").mockImplementation((m: unknown) => void posted.push(m as Record<string, unknown>));
    const send = (data: unknown) => fireEvent(window, new MessageEvent("message", { data, origin: "null", source: frameWindow }));
    send({ type: "moebius:capability-open", requestId: "c1", capability: "media.microphone.capture", version: 1, input: {} });
    send({ type: "moebius:capability-open", requestId: "c2", capability: "device.camera", version: 1, input: {} });
    expect(posted).toEqual([
      expect.objectContaining({ type: "moebius:capability-error", requestId: "c1", capability: "media.microphone.capture", code: "unavailable" }),
      expect.objectContaining({ type: "moebius:capability-error", requestId: "c2", capability: "device.camera", code: "undeclared" }),
    ]);
  });
});

describe("frame-init", () => {
  it("carries the theme under both names, the capability contract, and is followed by the online status", async () => {
    const { posted, fromFrame } = await setupPane();
    await fromFrame({ type: "moebius:frame-hello" });
    await waitFor(() => expect(posted.map((m) => m.type)).toContain("moebius:frame-init"));
    const init = posted.find((m) => m.type === "moebius:frame-init") as Record<string, unknown>;
    expect(init.scheme).toMatch(/^(light|dark)$/);
    for (const name of ["bg", "surface", "surface2", "border", "border-light", "text", "muted", "accent", "accent-hover", "accent-dim", "accent-fg", "danger", "green", "font", "mono"]) {
      expect(init.themeCss).toContain(`--${name}: `);
      expect(init.themeCss).toContain(`--mobius-${name}: `);
    }
    expect(init.capabilityContract).toBeNull();
    const types = posted.map((m) => m.type);
    expect(types.indexOf("moebius:online-status")).toBeGreaterThan(types.indexOf("moebius:frame-init"));
  });

  it("storage RPC errors reach the frame with the contract's fields", async () => {
    const { posted, fromFrame } = await setupPane();
    await fromFrame({ type: "moebius:storage-rpc", requestId: "r1", method: "set", args: ["a.json", 1] });
    await waitFor(() => expect(posted.find((m) => m.type === "moebius:storage-rpc-result")).toBeTruthy());
    const result = posted.find((m) => m.type === "moebius:storage-rpc-result") as { ok: boolean; error: Record<string, unknown> };
    expect(result.ok).toBe(false);
    expect(result.error).toMatchObject({ name: "StorageError", code: "storage_method_denied" });
    expect(Object.keys(result.error).sort()).toEqual(["code", "message", "name", "path", "refusedValue", "retryable", "status", "writeId"]);
  });
});

describe("the storage port", () => {
  it("answers storage RPCs on the port the runtime asked for once the frame took it; a new request replaces the port", async () => {
    const { posted, transferred, fromFrame } = await setupPane();
    const offer = async () => {
      await fromFrame({ type: "moebius:storage-port-request" });
      const index = posted.map((m) => m.type).lastIndexOf("moebius:storage-port");
      const port = transferred[index]?.[0];
      if (!(port instanceof MessagePort)) throw new Error("no port was handed over");
      const heard: Record<string, unknown>[] = [];
      port.onmessage = (event: MessageEvent) => heard.push(event.data as Record<string, unknown>);
      return { port, heard };
    };
    const first = await offer();
    first.port.postMessage({ type: "moebius:storage-port-ready" });
    first.port.postMessage({ type: "moebius:storage-rpc", requestId: "p1", method: "set", args: ["a.json", 1] });
    // Not a frame message: ignored, never answered.
    first.port.postMessage({ type: "moebius:open-settings" });
    await waitFor(() => expect(first.heard).toContainEqual(expect.objectContaining({ type: "moebius:storage-rpc-result", requestId: "p1", ok: false })));
    expect(first.heard).toHaveLength(1);
    expect((first.heard[0]?.error as Record<string, unknown> | undefined)?.code).toBe("storage_method_denied");
    expect(posted.some((m) => m.type === "moebius:storage-rpc-result")).toBe(false);

    // The frame reloaded and asked again: the old port is closed, the new one answers.
    const second = await offer();
    second.port.postMessage({ type: "moebius:storage-rpc", requestId: "p2", method: "set", args: ["b.json", 2] });
    await waitFor(() => expect(second.heard).toContainEqual(expect.objectContaining({ requestId: "p2" })));
    first.port.postMessage({ type: "moebius:storage-rpc", requestId: "p3", method: "set", args: ["c.json", 3] });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(first.heard.map((m) => m.requestId)).toEqual(["p1"]);
    first.port.close();
    second.port.close();
  });
});

describe("offline.precache", () => {
  it("asks the service worker to keep the app's listed assets", () => {
    const worker = { postMessage: vi.fn() };
    Object.defineProperty(navigator, "serviceWorker", { configurable: true, value: { controller: worker } });
    forgetAppTokens();
    mockFetch({ "POST /api/auth/app-token": { status: 200, body: { token: "app-token-5", expires_in: 8 * 3600 } } });
    render(<AppCanvas app={{ ...app, offline_precache: ["/app-assets/by-id/5/logo.png"] }} onHostRequest={vi.fn()} />);
    expect(worker.postMessage).toHaveBeenCalledWith({ type: "moebius:precache-app", appId: 5, urls: ["/app-assets/by-id/5/logo.png"] });
    Reflect.deleteProperty(navigator, "serviceWorker");
  });
});
