import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import type { AppSummary } from "../api/apps";
import { mockFetch } from "../test/fetchMock";
import AppCanvas from "./AppCanvas";
import { forgetAppTokens } from "./tokens";

const app: AppSummary = {
  id: 5,
  slug: "hello",
  name: "Hello",
  description: "",
  version: "1",
  theme_color: null,
  background_color: null,
  display: null,
  offline_capable: false,
  bundle_sha: "abc",
  v: "abc",
  module_url: "/api/apps/5/module?v=abc",
  frame_url: "/api/apps/5/frame?v=abc",
  icon_url: "/api/apps/5/icon?v=abc",
  standalone_url: "/apps/hello/",
  chat_id: "chat-1",
  pinned_at: null,
  last_opened_at: null,
  has_unseen_update: false,
  created_at: 1,
  updated_at: 1,
};

function setup() {
  forgetAppTokens();
  localStorage.setItem("mobius.token", "OWNER-SECRET");
  const server = mockFetch({
    "POST /api/auth/app-token": { status: 200, body: { token: "app-token-5", expires_in: 8 * 3600 } },
    "GET /api/apps/5/module?v=abc": { status: 200, body: "export default 1" },
  });
  const onHostRequest = vi.fn();
  const view = render(<AppCanvas app={app} onHostRequest={onHostRequest} />);
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
  return { server, onHostRequest, iframe, posted, fromFrame };
}

describe("AppCanvas broker", () => {
  it("renders the frame without a sandbox attribute (the document's CSP sandboxes it)", () => {
    const { iframe } = setup();
    expect(iframe.getAttribute("src")).toBe("/api/apps/5/frame?v=abc");
    expect(iframe.hasAttribute("sandbox")).toBe(false);
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

  it("answers a module request with an ack, then the bytes fetched with the app token", async () => {
    const { server, posted, fromFrame } = setup();
    await fromFrame({ type: "moebius:module-request", requestId: "m1" });
    expect(posted[0]).toEqual({ type: "moebius:module-ack", requestId: "m1" });
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
