import { fireEvent, render, screen, within } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import { sortApps } from "../api/apps";
import type { ChatSummary } from "../api/types";
import { appSummary } from "../test/fixtures";
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

  it("orders pinned apps first (oldest pin first), then the most recently used", () => {
    const list = [appSummary(1, { updated_at: 5 }), appSummary(2, { pinned_at: 9 }), appSummary(3, { last_opened_at: 50 }), appSummary(4, { pinned_at: 3 })];
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
        onOpenHit={noop}
        onOpenSettings={noop}
        onRename={noop}
        onTogglePin={noop}
        onDelete={noop}
        apps={[appSummary(1, { name: "Counter", has_unseen_update: true }), appSummary(2, { name: "Notes" })]}
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
