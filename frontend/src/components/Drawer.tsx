//! The chat list: New chat, pinned chats then recent ones with running / needs-answer / queued
//! badges, and per-chat rename, pin and delete (with Undo). A persistent sidebar on wide
//! screens, a slide-in drawer on phones. Apps get their own section here in a later issue.

import { useEffect, useId, useRef, useState, type KeyboardEvent, type ReactNode } from "react";
import type { ChatSummary } from "../api/types";
import { BrandMark } from "./BrandMark";
import { Icon } from "./Icon";

export interface DrawerProps {
  chats: ChatSummary[] | undefined;
  loading: boolean;
  activeId: string | null;
  settingsActive: boolean;
  settingsNeedsAttention: boolean;
  offline: boolean;
  creating: boolean;
  onNewChat: () => void;
  onOpenChat: (id: string) => void;
  onOpenSettings: () => void;
  onRename: (id: string, title: string) => void;
  onTogglePin: (chat: ChatSummary) => void;
  onDelete: (chat: ChatSummary) => void;
}

/** Rows shown: pinned, then chats that have messages; the open chat always appears. */
export function visibleChats(chats: ChatSummary[], activeId: string | null): { pinned: ChatSummary[]; recent: ChatSummary[] } {
  const pinned = chats.filter((c) => c.pinned_at !== null);
  const recent = chats.filter((c) => c.pinned_at === null && (c.has_messages || c.id === activeId));
  return { pinned, recent };
}

export function Drawer(props: DrawerProps) {
  const { chats, loading, activeId, offline, creating, onNewChat, onOpenSettings, settingsActive, settingsNeedsAttention } = props;
  const { pinned, recent } = visibleChats(chats ?? [], activeId);
  return (
    <nav className="drawer-inner" aria-label="Chats">
      <div className="drawer-head">
        <div className="drawer-brand">
          <BrandMark size={26} />
          <span>Möbius</span>
        </div>
      </div>
      <button type="button" className="new-chat" onClick={onNewChat} disabled={offline || creating} aria-busy={creating}>
        <Icon name="compose" size={18} />
        <span>New chat</span>
      </button>
      <div className="drawer-scroll">
        {pinned.length > 0 && (
          <DrawerSection title="Pinned">
            {pinned.map((chat) => (
              <ChatRow key={chat.id} chat={chat} {...props} />
            ))}
          </DrawerSection>
        )}
        {/* A later issue adds the "Apps" section here, between pinned and recent chats. */}
        {(recent.length > 0 || pinned.length === 0) && (
          <DrawerSection title="Recent">
            {recent.map((chat) => (
              <ChatRow key={chat.id} chat={chat} {...props} />
            ))}
            {!loading && recent.length === 0 && <li className="drawer-empty">Your chats will appear here.</li>}
            {loading && chats === undefined && <li className="drawer-empty">Loading chats…</li>}
          </DrawerSection>
        )}
      </div>
      <div className="drawer-foot">
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

function ChatRow({ chat, activeId, offline, onOpenChat, onRename, onTogglePin, onDelete }: { chat: ChatSummary } & DrawerProps) {
  const [menu, setMenu] = useState(false);
  const [renaming, setRenaming] = useState(false);
  const [title, setTitle] = useState(chat.title);
  const menuRef = useRef<HTMLDivElement>(null);
  const moreRef = useRef<HTMLButtonElement>(null);
  const active = chat.id === activeId;
  const label = chat.title || "New chat";

  useEffect(() => {
    if (!menu) return;
    menuRef.current?.querySelector<HTMLButtonElement>("[role=menuitem]")?.focus();
    const away = (event: PointerEvent) => {
      if (!menuRef.current?.contains(event.target as Node) && !moreRef.current?.contains(event.target as Node)) setMenu(false);
    };
    document.addEventListener("pointerdown", away);
    return () => document.removeEventListener("pointerdown", away);
  }, [menu]);

  function onMenuKey(event: KeyboardEvent<HTMLDivElement>) {
    const items = [...(menuRef.current?.querySelectorAll<HTMLButtonElement>("[role=menuitem]") ?? [])];
    const index = items.indexOf(document.activeElement as HTMLButtonElement);
    if (event.key === "Escape") {
      event.preventDefault();
      setMenu(false);
      moreRef.current?.focus();
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const next = (index + (event.key === "ArrowDown" ? 1 : -1) + items.length) % items.length;
      items[next]?.focus();
    } else if (event.key === "Tab") setMenu(false);
  }

  if (renaming) {
    return (
      <li className="chat-row chat-row-renaming">
        <form
          onSubmit={(event) => {
            event.preventDefault();
            const next = title.trim();
            if (next && next !== chat.title) onRename(chat.id, next);
            setRenaming(false);
          }}
        >
          <input
            className="rename-input"
            aria-label="Chat title"
            value={title}
            maxLength={200}
            onChange={(event) => setTitle(event.target.value)}
            onBlur={(event) => event.currentTarget.form?.requestSubmit()}
            onKeyDown={(event) => {
              if (event.key === "Escape") {
                setTitle(chat.title);
                setRenaming(false);
              }
            }}
            autoFocus
          />
        </form>
      </li>
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
      <button
        ref={moreRef}
        type="button"
        className="icon-button chat-more"
        aria-label={`Options for ${label}`}
        aria-haspopup="menu"
        aria-expanded={menu}
        onClick={() => setMenu((m) => !m)}
      >
        <Icon name="more" size={18} />
      </button>
      {menu && (
        <div ref={menuRef} className="menu chat-menu" role="menu" aria-label={`Options for ${label}`} onKeyDown={onMenuKey}>
          <button
            type="button"
            role="menuitem"
            className="menu-item menu-item-icon"
            disabled={offline}
            onClick={() => {
              setMenu(false);
              setTitle(chat.title);
              setRenaming(true);
            }}
          >
            <Icon name="edit" size={16} /> Rename
          </button>
          <button
            type="button"
            role="menuitem"
            className="menu-item menu-item-icon"
            disabled={offline}
            onClick={() => {
              setMenu(false);
              onTogglePin(chat);
            }}
          >
            <Icon name="pin" size={16} /> {chat.pinned_at !== null ? "Unpin" : "Pin"}
          </button>
          <button
            type="button"
            role="menuitem"
            className="menu-item menu-item-icon menu-item-danger"
            disabled={offline}
            onClick={() => {
              setMenu(false);
              onDelete(chat);
            }}
          >
            <Icon name="trash" size={16} /> Delete
          </button>
        </div>
      )}
    </li>
  );
}
