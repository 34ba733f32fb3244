import { fireEvent, render, screen, within } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import { sortApps } from "../../api/apps";
import type { ChatSummary } from "../../api/types";
import { appSummary } from "../../test/fixtures";
import { Drawer, listsNoChat, visibleChats } from "./Drawer";

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
  it("lists pinned chats apart, and hides empty chats, the open one too", () => {
    const list = [chat("p", { pinned_at: 5 }), chat("a"), chat("empty", { has_messages: false }), chat("starting", { has_messages: false, running: true })];
    const { pinned, recent } = visibleChats(list);
    expect(pinned.map((c) => c.id)).toEqual(["p"]);
    expect(recent.map((c) => c.id)).toEqual(["a", "starting"]);
  });

  it("says it lists no chat only when it shows none and no page is left to load", () => {
    const empty = chat("new", { has_messages: false });
    expect(listsNoChat(undefined, false)).toBe(false);
    expect(listsNoChat([empty], false)).toBe(true);
    expect(listsNoChat([empty], true)).toBe(false);
    expect(listsNoChat([empty, chat("a")], false)).toBe(false);
    expect(listsNoChat([chat("p", { has_messages: false, pinned_at: 3 })], false)).toBe(false);
  });

  it("never shows “No chats yet”-style emptiness beside a listed chat: the empty open chat is the New chat button", () => {
    const noop = () => undefined;
    render(
      <Drawer
        chats={[chat("open", { has_messages: false, title: "New chat" }), chat("a", { title: "Garden plan" })]}
        loading={false}
        activeId="open"
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
        apps={[]}
        activeAppId={null}
        onOpenApp={noop}
        onRenameApp={noop}
        onTogglePinApp={noop}
        onDeleteApp={noop}
      />,
    );
    expect(screen.getByRole("button", { name: "New chat" }).getAttribute("aria-current")).toBe("page");
    expect(screen.queryByRole("button", { name: "Options for New chat" })).toBeNull();
    expect(screen.getByRole("button", { name: "Options for Garden plan" })).toBeTruthy();
  });
});

describe("drawer apps", () => {

  it("orders pinned apps first (oldest pin first), then the most recently built or updated, as the server lists them", () => {
    const list = [appSummary(1, { updated_at: 5 }), appSummary(2, { pinned_at: 9 }), appSummary(3, { updated_at: 7 }), appSummary(4, { pinned_at: 3 }), appSummary(5, { updated_at: 7 })];
    expect(sortApps(list).map((a) => a.id)).toEqual([4, 2, 3, 5, 1]);
  });

  it("keeps its order when an app is opened", () => {
    const list = [appSummary(1, { updated_at: 9 }), appSummary(2, { updated_at: 5 }), appSummary(3, { updated_at: 1 })];
    const before = sortApps(list).map((a) => a.id);
    const opened = list.map((a) => (a.id === 3 ? { ...a, last_opened_at: 1_000, has_unseen_update: false } : a));
    expect(sortApps(opened).map((a) => a.id)).toEqual(before);
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
