import { fireEvent, render, screen, within } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import { sortApps, type AppSummary } from "../api/apps";
import type { ChatSummary } from "../api/types";
import { Drawer, visibleChats } from "./Drawer";

const chat = (id: string, extra: Partial<ChatSummary> = {}): ChatSummary => ({
  id,
  title: id,
  provider: "claude",
  created_at: 1,
  updated_at: 1,
  activity_at: 1,
  pinned_at: null,
  has_messages: true,
  running: false,
  pending_question_id: null,
  queued: 0,
  ...extra,
});

describe("drawer rows", () => {
  it("lists pinned chats apart, and hides empty chats unless one is open", () => {
    const list = [chat("p", { pinned_at: 5 }), chat("a"), chat("empty", { has_messages: false }), chat("open", { has_messages: false })];
    const { pinned, recent } = visibleChats(list, "open");
    expect(pinned.map((c) => c.id)).toEqual(["p"]);
    expect(recent.map((c) => c.id)).toEqual(["a", "open"]);
  });
});

describe("drawer apps", () => {
  const app = (id: number, extra: Partial<AppSummary> = {}): AppSummary => ({
    id,
    slug: `app-${id}`,
    name: `App ${id}`,
    description: "",
    version: "1",
    theme_color: null,
    background_color: null,
    display: null,
    offline_capable: false,
    bundle_sha: "s",
    v: "s",
    module_url: "",
    frame_url: "",
    icon_url: `/api/apps/${id}/icon?v=s`,
    standalone_url: "",
    chat_id: null,
    pinned_at: null,
    last_opened_at: null,
    has_unseen_update: false,
    created_at: 1,
    updated_at: 1,
    ...extra,
  });

  it("orders pinned apps first (oldest pin first), then the most recently used", () => {
    const list = [app(1, { updated_at: 5 }), app(2, { pinned_at: 9 }), app(3, { last_opened_at: 50 }), app(4, { pinned_at: 3 })];
    expect(sortApps(list).map((a) => a.id)).toEqual([4, 2, 3, 1]);
  });

  it("lists apps with their icon and an unseen-update dot, and opens one on click", () => {
    const onOpenApp = vi.fn();
    const noop = () => undefined;
    render(
      <Drawer
        chats={[]}
        loading={false}
        activeId={null}
        settingsActive={false}
        settingsNeedsAttention={false}
        offline={false}
        creating={false}
        onNewChat={noop}
        onOpenChat={noop}
        onOpenSettings={noop}
        onRename={noop}
        onTogglePin={noop}
        onDelete={noop}
        apps={[app(1, { name: "Counter", has_unseen_update: true }), app(2, { name: "Notes" })]}
        activeAppId={2}
        onOpenApp={onOpenApp}
        onRenameApp={noop}
        onTogglePinApp={noop}
        onDeleteApp={noop}
      />,
    );
    const section = screen.getByRole("region", { name: "Apps" });
    const counter = within(section).getByRole("button", { name: /^Counter/ });
    expect(within(counter).getByRole("img", { name: "Updated" })).toBeTruthy();
    expect(within(section).getByRole("button", { name: "Notes" }).getAttribute("aria-current")).toBe("page");
    fireEvent.click(counter);
    expect(onOpenApp).toHaveBeenCalledWith(1);
  });
});
