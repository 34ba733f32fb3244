//! The chat list: New chat, pinned chats, the apps (icon, unseen-update dot), then recent chats
//! with running / needs-answer / queued badges; per-row rename, pin and delete (with Undo); above
//! them a search field whose results replace the list while it holds words. A persistent
//! sidebar on wide screens, a slide-in drawer on phones. The chat list arrives in pages as the
//! drawer scrolls, and only the rows near the visible part are rendered (`VirtualList`).

import { useEffect, useId, useRef, useState, type KeyboardEvent, type ReactNode } from "react";
import { sortApps, type AppSummary } from "../../api/apps";
import type { ChatSummary } from "../../api/types";
import { BrandMark } from "../ui/BrandMark";
import { ChatSearch } from "./ChatSearch";
import { Icon, type IconName } from "../ui/Icon";
import { VirtualList } from "../ui/VirtualList";

/** A chat row's height before it is measured, in pixels. */
const ROW_ESTIMATE_PX = 45;
/** The next page is asked for once the reader is this close to the end of the list. */
const LOAD_MORE_WITHIN_PX = 800;

const chatKeyOf = (chat: ChatSummary) => chat.id;

export interface DrawerProps {
  chats: ChatSummary[] | undefined;
  loading: boolean;
  /** More chats wait on the server (the list is paged). */
  hasMore?: boolean;
  loadingMore?: boolean;
  /** Asks for the next page. */
  onLoadMore?: () => void;
  activeId: string | null;
  settingsActive: boolean;
  settingsNeedsAttention: boolean;
  offline: boolean;
  creating: boolean;
  onNewChat: () => void;
  onOpenChat: (id: string) => void;
  /** Opens a chat at a search hit (`messageIdx` null: a title hit). */
  onOpenHit: (id: string, messageIdx: number | null) => void;
  onOpenSettings: () => void;
  onRename: (id: string, title: string) => void;
  onTogglePin: (chat: ChatSummary) => void;
  onDelete: (chat: ChatSummary) => void;
  apps: AppSummary[] | undefined;
  activeAppId: number | null;
  onOpenApp: (id: number) => void;
  onRenameApp: (app: AppSummary, name: string) => void;
  onTogglePinApp: (app: AppSummary) => void;
  onDeleteApp: (app: AppSummary) => void;
  /** Publishes the app: a read-only copy at a link (`PublishSheet`). */
  onPublishApp?: (app: AppSummary) => void;
  /** The account menu, in the phone drawer's head (the top bar keeps its width for the title). */
  account?: ReactNode;
  /** The Apps view (installed apps, updates, the store). */
  appsActive?: boolean;
  updatesAvailable?: number;
  onOpenApps?: () => void;
}

/**
 * Rows shown: pinned chats, then chats that have messages. An empty chat is not listed, even
 * when open (the New chat button stands for it), so the list and the empty chat's "No chats
 * yet" always agree.
 */
export function visibleChats(chats: ChatSummary[]): { pinned: ChatSummary[]; recent: ChatSummary[] } {
  const pinned = chats.filter((c) => c.pinned_at !== null);
  const recent = chats.filter((c) => c.pinned_at === null && (c.has_messages || c.running));
  return { pinned, recent };
}

/** Whether the drawer lists no chat at all (the list loaded, none pinned, none with messages). */
export function listsNoChat(chats: ChatSummary[] | undefined, hasMore: boolean): boolean {
  if (chats === undefined || hasMore) return false;
  const { pinned, recent } = visibleChats(chats);
  return pinned.length === 0 && recent.length === 0;
}

export function Drawer(props: DrawerProps) {
  const { chats, loading, activeId, offline, creating, onNewChat, onOpenSettings, settingsActive, settingsNeedsAttention } = props;
  const { pinned, recent } = visibleChats(chats ?? []);
  // The open chat is an empty one: the New chat button stands for it.
  const onNewChatPage = activeId !== null && chats?.some((c) => c.id === activeId && !c.has_messages && !c.running && c.pinned_at === null) === true;
  const apps = sortApps(props.apps ?? []);
  // The list's scroller, as state: it is replaced while search results show.
  const [scroller, setScroller] = useState<HTMLDivElement | null>(null);
  const { hasMore = false, loadingMore = false, onLoadMore } = props;
  // Near the end (or a list shorter than the drawer): ask for the next page.
  useEffect(() => {
    const box = scroller;
    if (!box || !hasMore || loadingMore || !onLoadMore) return;
    const check = () => {
      if (box.scrollTop + box.clientHeight >= box.scrollHeight - LOAD_MORE_WITHIN_PX) onLoadMore();
    };
    check();
    box.addEventListener("scroll", check, { passive: true });
    return () => box.removeEventListener("scroll", check);
  }, [scroller, hasMore, loadingMore, onLoadMore, chats]);
  const row = (chat: ChatSummary) => <ChatRow key={chat.id} chat={chat} {...props} />;
  return (
    <nav className="drawer-inner" aria-label="Chats">
      <div className="drawer-head">
        <div className="drawer-brand">
          <BrandMark size={26} />
          <span>Möbius</span>
        </div>
        {props.account && <div className="drawer-account">{props.account}</div>}
      </div>
      <button type="button" className="new-chat" onClick={onNewChat} disabled={offline || creating} aria-busy={creating} aria-current={onNewChatPage ? "page" : undefined}>
        <Icon name="compose" size={18} />
        <span>New chat</span>
      </button>
      <ChatSearch onOpenHit={props.onOpenHit}>
      <div className="drawer-scroll" ref={setScroller}>
        {pinned.length > 0 && <ChatSection title="Pinned" chats={pinned} scroller={scroller} row={row} />}
        {apps.length > 0 && (
          <DrawerSection title="Apps">
            {apps.map((app) => (
              <AppRow key={app.id} app={app} {...props} />
            ))}
          </DrawerSection>
        )}
        {(recent.length > 0 || pinned.length === 0 || hasMore) && (
          <ChatSection
            title="Recent"
            chats={recent}
            scroller={scroller}
            row={row}
            footer={
              <>
                {!loading && !hasMore && recent.length === 0 && <li className="drawer-empty">Your chats will appear here.</li>}
                {loading && chats === undefined && <li className="drawer-empty">Loading chats…</li>}
                {hasMore && loadingMore && <li className="drawer-empty" role="status">Loading more chats…</li>}
              </>
            }
          />
        )}
      </div>
      </ChatSearch>
      <div className="drawer-foot">
        <button type="button" className="drawer-link" aria-current={props.appsActive ? "page" : undefined} onClick={props.onOpenApps}>
          <Icon name="apps" size={18} />
          <span>Apps &amp; store</span>
          {(props.updatesAvailable ?? 0) > 0 && (
            <span className="badge badge-count" role="img" aria-label={`${props.updatesAvailable} updates available`}>
              {props.updatesAvailable}
            </span>
          )}
        </button>
        <button type="button" className="drawer-link" aria-current={settingsActive ? "page" : undefined} onClick={onOpenSettings}>
          <Icon name="settings" size={18} />
          <span>Settings</span>
          {settingsNeedsAttention && (
            <span className="attention-dot" role="img" aria-label="needs attention" />
          )}
        </button>
      </div>
    </nav>
  );
}

/** A section of chats, rendered as a virtualized list. */
function ChatSection({
  title,
  chats,
  scroller,
  row,
  footer,
}: {
  title: string;
  chats: ChatSummary[];
  scroller: HTMLDivElement | null;
  row: (chat: ChatSummary) => ReactNode;
  footer?: ReactNode;
}) {
  const id = useId();
  return (
    <section className="drawer-section" aria-labelledby={id}>
      <h2 id={id} className="drawer-section-title">
        {title}
      </h2>
      <VirtualList
        className="drawer-list drawer-list-virtual"
        items={chats}
        itemKey={chatKeyOf}
        renderItem={row}
        estimate={ROW_ESTIMATE_PX}
        scroller={scroller}
        footer={footer}
      />
    </section>
  );
}

function DrawerSection({ title, children }: { title: string; children: ReactNode }) {
  const id = useId();
  return (
    <section className="drawer-section" aria-labelledby={id}>
      <h2 id={id} className="drawer-section-title">
        {title}
      </h2>
      <ul className="drawer-list">{children}</ul>
    </section>
  );
}

interface MenuItem {
  icon: IconName;
  label: string;
  danger?: boolean;
  disabled?: boolean;
  onSelect: () => void;
}

/** The "…" button of a row and its menu (arrow keys, Escape, click away). */
function RowMenu({ label, items }: { label: string; items: MenuItem[] }) {
  const [open, setOpen] = useState(false);
  const menuRef = useRef<HTMLDivElement>(null);
  const moreRef = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    if (!open) return;
    menuRef.current?.querySelector<HTMLButtonElement>("[role=menuitem]")?.focus();
    const away = (event: PointerEvent) => {
      if (!menuRef.current?.contains(event.target as Node) && !moreRef.current?.contains(event.target as Node)) setOpen(false);
    };
    document.addEventListener("pointerdown", away);
    return () => document.removeEventListener("pointerdown", away);
  }, [open]);

  function onMenuKey(event: KeyboardEvent<HTMLDivElement>) {
    const buttons = [...(menuRef.current?.querySelectorAll<HTMLButtonElement>("[role=menuitem]") ?? [])];
    const index = buttons.indexOf(document.activeElement as HTMLButtonElement);
    if (event.key === "Escape") {
      event.preventDefault();
      setOpen(false);
      moreRef.current?.focus();
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const next = (index + (event.key === "ArrowDown" ? 1 : -1) + buttons.length) % buttons.length;
      buttons[next]?.focus();
    } else if (event.key === "Tab") setOpen(false);
  }

  return (
    <>
      <button
        ref={moreRef}
        type="button"
        className="icon-button chat-more"
        aria-label={`Options for ${label}`}
        aria-haspopup="menu"
        aria-expanded={open}
        onClick={() => setOpen((m) => !m)}
      >
        <Icon name="more" size={18} />
      </button>
      {open && (
        <div ref={menuRef} className="menu chat-menu" role="menu" aria-label={`Options for ${label}`} onKeyDown={onMenuKey}>
          {items.map((item) => (
            <button
              key={item.label}
              type="button"
              role="menuitem"
              className={item.danger ? "menu-item menu-item-icon menu-item-danger" : "menu-item menu-item-icon"}
              disabled={item.disabled}
              onClick={() => {
                setOpen(false);
                item.onSelect();
              }}
            >
              <Icon name={item.icon} size={16} /> {item.label}
            </button>
          ))}
        </div>
      )}
    </>
  );
}

/** A row being renamed in place: Enter or leaving the field saves, Escape cancels. */
function RenameRow({ label, initial, maxLength, onDone }: { label: string; initial: string; maxLength: number; onDone: (next: string | null) => void }) {
  const [value, setValue] = useState(initial);
  return (
    <li className="chat-row chat-row-renaming">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          const next = value.trim();
          onDone(next && next !== initial ? next : null);
        }}
      >
        <input
          className="rename-input"
          aria-label={label}
          value={value}
          maxLength={maxLength}
          onChange={(event) => setValue(event.target.value)}
          onBlur={(event) => event.currentTarget.form?.requestSubmit()}
          onKeyDown={(event) => {
            if (event.key === "Escape") onDone(null);
          }}
          autoFocus
        />
      </form>
    </li>
  );
}

function ChatRow({ chat, activeId, offline, onOpenChat, onRename, onTogglePin, onDelete }: { chat: ChatSummary } & DrawerProps) {
  const [renaming, setRenaming] = useState(false);
  const active = chat.id === activeId;
  const label = chat.title || "New chat";

  if (renaming) {
    return (
      <RenameRow
        label="Chat title"
        initial={chat.title}
        maxLength={200}
        onDone={(next) => {
          if (next !== null) onRename(chat.id, next);
          setRenaming(false);
        }}
      />
    );
  }

  const badges: ReactNode[] = [];
  if (chat.pending_question_id) badges.push(<span key="q" className="badge badge-question" title="Waiting for your answer">Needs answer</span>);
  else if (chat.running) badges.push(<span key="r" className="badge-running" role="img" aria-label="Working" title="Working" />);
  if (chat.queued > 0) badges.push(<span key="n" className="badge badge-count" title={`${chat.queued} queued`}>{chat.queued}<span className="visually-hidden"> queued</span></span>);

  return (
    <li className="chat-row" data-active={active || undefined}>
      <button type="button" className="chat-link" aria-current={active ? "page" : undefined} onClick={() => onOpenChat(chat.id)}>
        {chat.pinned_at !== null && <Icon name="pin" size={14} className="chat-pin" />}
        <span className="chat-title">{label}</span>
        {badges}
      </button>
      <RowMenu
        label={label}
        items={[
          { icon: "edit", label: "Rename", disabled: offline, onSelect: () => setRenaming(true) },
          { icon: "pin", label: chat.pinned_at !== null ? "Unpin" : "Pin", disabled: offline, onSelect: () => onTogglePin(chat) },
          { icon: "trash", label: "Delete", danger: true, disabled: offline, onSelect: () => onDelete(chat) },
        ]}
      />
    </li>
  );
}

function AppRow({ app, activeAppId, offline, onOpenApp, onRenameApp, onTogglePinApp, onDeleteApp, onPublishApp }: { app: AppSummary } & DrawerProps) {
  const [renaming, setRenaming] = useState(false);
  const [iconFailed, setIconFailed] = useState(false);
  const active = app.id === activeAppId;

  if (renaming) {
    return (
      <RenameRow
        label="App name"
        initial={app.name}
        maxLength={128}
        onDone={(next) => {
          if (next !== null) onRenameApp(app, next);
          setRenaming(false);
        }}
      />
    );
  }

  return (
    <li className="chat-row app-row" data-active={active || undefined}>
      <button type="button" className="chat-link" aria-current={active ? "page" : undefined} onClick={() => onOpenApp(app.id)}>
        {iconFailed ? (
          <Icon name="apps" size={22} className="app-icon app-icon-fallback" />
        ) : (
          <img className="app-icon" src={app.icon_url} alt="" width={24} height={24} loading="lazy" onError={() => setIconFailed(true)} />
        )}
        <span className="chat-title">{app.name}</span>
        {app.pinned_at !== null && <Icon name="pin" size={14} className="chat-pin" />}
        {app.has_unseen_update && <span className="update-dot" role="img" aria-label="Updated" title="Updated since you last opened it" />}
      </button>
      <RowMenu
        label={app.name}
        items={[
          { icon: "edit", label: "Rename", disabled: offline, onSelect: () => setRenaming(true) },
          { icon: "pin", label: app.pinned_at !== null ? "Unpin" : "Pin", disabled: offline, onSelect: () => onTogglePinApp(app) },
          ...(onPublishApp ? [{ icon: "external" as const, label: "Publish…", disabled: offline, onSelect: () => onPublishApp(app) }] : []),
          { icon: "trash", label: "Delete", danger: true, disabled: offline, onSelect: () => onDeleteApp(app) },
        ]}
      />
    </li>
  );
}
