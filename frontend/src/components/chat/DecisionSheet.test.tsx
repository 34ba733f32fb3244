import { fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import DecisionSheet from "./DecisionSheet";

const payload = {
  id: "n1", title: "Paint the shed", body: "Which color?", icon: null, target: "/shell/?chat=c1&question=q-1",
  actions: [{ action: "option-0", title: "Blue" }, { action: "option-1", title: "Red" }],
  kind: "question", tag: "chat:c1", chat_id: "c1", question_id: "q-1", action_token: "tok",
};

/** The service worker's decision cache, as the sheet reads it. */
function stubCache(entries: Record<string, string>) {
  const deleted: string[] = [];
  const cache = {
    match: vi.fn((key: string) => Promise.resolve(entries[key] === undefined ? undefined : new Response(entries[key]))),
    delete: (key: string) => Promise.resolve(deleted.push(key) > 0),
  };
  vi.stubGlobal("caches", { open: () => Promise.resolve(cache) });
  return { deleted, match: cache.match };
}

afterEach(() => vi.unstubAllGlobals());

describe("DecisionSheet", () => {
  it("shows a kept question without the network and answers it with the action token", async () => {
    const { deleted } = stubCache({ "/__decisions/q-1": JSON.stringify(payload) });
    const fetchMock = vi.fn(() => Promise.resolve(new Response('{"status":"answer_delivered"}', { status: 202, headers: { "Content-Type": "application/json" } })));
    vi.stubGlobal("fetch", fetchMock);
    render(<DecisionSheet search="?question=q-1" />);
    fireEvent.click(await screen.findByRole("button", { name: "Red" }));
    await vi.waitFor(() => expect(deleted).toEqual(["/__decisions/q-1"]));
    const [url, init] = fetchMock.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe("/api/push/action");
    expect(JSON.parse(init.body as string)).toEqual({ token: "tok", question_id: "q-1", action: "option-1" });
    expect(new Headers(init.headers).get("Authorization")).toBeNull();
  });

  it("says so when the question was answered elsewhere", async () => {
    stubCache({ "/__decisions/q-1": JSON.stringify(payload) });
    vi.stubGlobal("fetch", vi.fn(() => Promise.resolve(new Response('{"code":"action_token_used","message":"used"}', { status: 410, headers: { "Content-Type": "application/json" } }))));
    render(<DecisionSheet search="?question=q-1" />);
    fireEvent.click(await screen.findByRole("button", { name: "Blue" }));
    expect(await screen.findByRole("alert")).toHaveProperty("textContent", expect.stringContaining("already answered"));
  });

  it("shows nothing for a question it does not keep", async () => {
    const { match } = stubCache({});
    const { container } = render(<DecisionSheet search="?question=q-9" />);
    await vi.waitFor(() => expect(match).toHaveBeenCalledWith("/__decisions/q-9"));
    await Promise.resolve();
    expect(container.textContent).toBe("");
  });
});
