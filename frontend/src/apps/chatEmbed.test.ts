// window.mobius.chat as an app sees it (public/mobius-chat.js): resolving the chat, the nested
// frame, the grant handshake, the controls, and chat.start — against a stand-in server.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

interface Handle {
  readonly chatId: string;
  readonly instanceId: string;
  readonly iframe: HTMLIFrameElement;
  on: (event: string, cb: (detail: Record<string, unknown>) => void) => Handle;
  destroy: () => void;
}
type Chat = ((opts: Record<string, unknown>) => Promise<Handle>) & {
  start: (opts: Record<string, unknown>) => Promise<{ chatId: string; response: unknown }>;
};

const MODULE = "../../public/mobius-chat.js";
const CAPABILITY = "c".repeat(43);

let calls: { method: string; path: string; body: unknown; auth: string | null }[] = [];
let stored: Record<string, unknown> = {};
let chat: Chat;

function answer(method: string, path: string): unknown {
  if (method === "POST" && path === "/api/app-chats") return { id: `new-${calls.length}`, title: "App chat", created_by_app_id: 7 };
  if (method === "GET" && path.startsWith("/api/app-chats?")) {
    return [
      { id: "c-1", title: "Lesson one", scope_label: "Lessons" },
      { id: "c-0", title: "Older lesson", scope_label: null },
    ];
  }
  if (method === "POST" && path.endsWith("/embed-capability")) return { capability: CAPABILITY, expires_at: "x", role: "participant" };
  if (method === "POST" && path.endsWith("/messages")) return { status: "started", run_id: "r-1" };
  return { ok: true };
}

beforeEach(async () => {
  calls = [];
  stored = {};
  vi.stubGlobal(
    "fetch",
    vi.fn((url: string, init: RequestInit = {}) => {
      const method = init.method ?? "GET";
      const headers = (init.headers ?? {}) as Record<string, string>;
      const body: unknown = typeof init.body === "string" ? JSON.parse(init.body) : undefined;
      calls.push({ method, path: url, body, auth: headers.Authorization ?? null });
      const status = method === "POST" && url === "/api/app-chats" ? 201 : 200;
      return Promise.resolve(new Response(JSON.stringify(answer(method, url)), { status }));
    }),
  );
  const { createChat } = (await import(/* @vite-ignore */ MODULE)) as { createChat: (ctx: () => unknown) => Chat };
  const storage = {
    get: (path: string) => Promise.resolve(stored[path] ?? null),
    set: (path: string, value: unknown) => {
      stored[path] = value;
      return Promise.resolve({ synced: true });
    },
  };
  chat = createChat(() => ({ appId: 7, origin: "", getToken: () => Promise.resolve("app-token"), storage }));
});

afterEach(() => {
  vi.unstubAllGlobals();
  document.body.textContent = "";
});

/** A message from the nested chat frame. */
function fromChild(handle: Handle, data: Record<string, unknown>) {
  window.dispatchEvent(new MessageEvent("message", { data, source: handle.iframe.contentWindow, origin: "null" }));
}

describe("mobius.chat", () => {
  it("needs a mount element", async () => {
    await expect(chat({})).rejects.toThrow("opts.mount must be a DOM element");
  });

  it("creates and persists the chat, mounts a hidden sandboxed frame, and hands it a fresh grant", async () => {
    const mount = document.body.appendChild(document.createElement("div"));
    const ready = vi.fn();
    const handle = await chat({ mount, persist: "chat.json", title: "Tutor", systemPrompt: "Be kind.", picker: false, onReady: ready });
    const created = calls.find((c) => c.method === "POST" && c.path === "/api/app-chats");
    expect(created?.body).toMatchObject({ title: "Tutor", system_prompt: "Be kind.", owner_visible: false });
    expect(created?.auth).toBe("Bearer app-token");
    expect(stored["chat.json"]).toEqual({ id: handle.chatId });
    expect(handle.instanceId).toMatch(/^7:\d+:\d+$/);
    expect(handle.iframe.getAttribute("sandbox")).toBe("allow-scripts allow-forms allow-popups allow-top-navigation-by-user-activation");
    expect(handle.iframe.src).toContain("/shell/embed/chat");
    expect(handle.iframe.style.opacity).toBe("0");

    const toChild = vi.spyOn(handle.iframe.contentWindow as Window, "postMessage");
    fromChild(handle, { type: "moebius:chat-embed:bootstrap-ready" });
    await vi.waitFor(() => expect(toChild).toHaveBeenCalled());
    const mint = calls.find((c) => c.path.endsWith("/embed-capability"));
    expect(mint?.body).toEqual({ instance_id: handle.instanceId });
    const init = toChild.mock.calls[0]?.[0] as Record<string, unknown>;
    expect(init).toMatchObject({ type: "moebius:chat-embed:init", chatId: handle.chatId, bootstrapCapability: CAPABILITY, picker: false });

    // A READY for another authorization is ignored; the matching one reveals and is sticky.
    fromChild(handle, { type: "moebius:chat-embed:ready", instanceId: handle.instanceId, chatId: handle.chatId, authorizationId: "other" });
    fromChild(handle, { type: "moebius:chat-embed:ready", instanceId: handle.instanceId, chatId: handle.chatId, authorizationId: init.authorizationId });
    await vi.waitFor(() => expect(ready).toHaveBeenCalledWith({ chatId: handle.chatId }));
    expect(handle.iframe.style.opacity).toBe("1");
    const late = vi.fn();
    handle.on("ready", late);
    expect(late).toHaveBeenCalledTimes(1);

    // A second mount with the same persist path reuses the chat.
    const again = await chat({ mount: document.body.appendChild(document.createElement("div")), persist: "chat.json" });
    expect(again.chatId).toBe(handle.chatId);
    handle.destroy();
    await vi.waitFor(() =>
      expect(calls.some((c) => c.method === "DELETE" && c.path.endsWith(`/embed-sessions/${encodeURIComponent(handle.instanceId)}`))).toBe(true),
    );
    expect(mount.querySelector("iframe")).toBeNull();
  });

  it("with a scope shows a chat picker and a new-chat button that switch the embed", async () => {
    const mount = document.body.appendChild(document.createElement("div"));
    const handle = await chat({ mount, chatId: "c-1", scope: "lessons", scopeLabel: "Lessons" });
    const picker = mount.querySelector("select") as HTMLSelectElement;
    await vi.waitFor(() => expect(picker.options).toHaveLength(2));
    expect([...picker.options].map((o) => o.textContent)).toEqual(["Lessons", "Older lesson"]);
    const firstInstance = handle.instanceId;

    picker.value = "c-0";
    picker.dispatchEvent(new Event("change"));
    await vi.waitFor(() => expect(handle.chatId).toBe("c-0"));
    expect(calls.some((c) => c.method === "PATCH" && c.path === "/api/app-chats/c-0")).toBe(true);
    expect(calls.some((c) => c.method === "DELETE" && c.path.includes(encodeURIComponent(firstInstance)))).toBe(true);
    expect(handle.instanceId).not.toBe(firstInstance);
    expect(mount.querySelectorAll("iframe")).toHaveLength(1);

    (mount.querySelector('button[aria-label="New chat"]') as HTMLButtonElement).click();
    await vi.waitFor(() => expect(handle.chatId).toMatch(/^new-/));
    handle.destroy();
  });
});

describe("mobius.chat.start", () => {
  it("creates an owner-visible chat and sends its first message", async () => {
    await expect(chat.start({ draft: "   " })).rejects.toThrow("opts.draft must not be empty");
    const result = await chat.start({ draft: " Start a lesson ", title: "Lesson" });
    const created = calls.find((c) => c.method === "POST" && c.path === "/api/app-chats");
    expect(created?.body).toMatchObject({ title: "Lesson", owner_visible: true });
    const sent = calls.find((c) => c.path === `/api/chats/${result.chatId}/messages`);
    expect(sent?.body).toMatchObject({ content: "Start a lesson" });
    expect(sent?.body).toHaveProperty("cid");
    expect(sent?.body).toHaveProperty("viewport.pixelRatio");
    expect(result.response).toEqual({ status: "started", run_id: "r-1" });
  });
});
