//! The bell in the top bar: unread notifications (and the app badge), and the list. Opening the
//! list marks everything read (the original's rule: what was new stays marked in that view);
//! each item shows its text without Markdown and when it came; a tap opens its chat or app.
//! Escape, a tap outside or a second tap on the bell closes it. On a phone the list spans the
//! screen under the top bar.

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { clearAll, deleteNotification, fetchNotifications, notificationsKey, readAll } from "../../api/push";
import { shellUrlFor } from "../../pwa/push";
import { plainText } from "../../shell/plainText";
import { useUnread } from "../../shell/push";
import { fullTime, whenText } from "../../shell/when";
import { Icon } from "../ui/Icon";

export default function NotificationBell() {
  const { count } = useUnread();
  const [open, setOpen] = useState(false);
  /** The ids that were unread when the list opened: they stay marked while it shows. */
  const [fresh, setFresh] = useState<ReadonlySet<string>>(new Set());
  const queryClient = useQueryClient();
  const buttonRef = useRef<HTMLButtonElement>(null);
  const panelRef = useRef<HTMLDivElement>(null);
  const list = useQuery({ queryKey: [...notificationsKey, "list"], queryFn: fetchNotifications, enabled: open, retry: false });
  const refresh = () => void queryClient.invalidateQueries({ queryKey: notificationsKey });
  const markRead = useMutation({ mutationFn: readAll, onSuccess: refresh });
  const clear = useMutation({ mutationFn: clearAll, onSuccess: refresh });
  const remove = useMutation({ mutationFn: deleteNotification, onSuccess: refresh });

  // Seen once the list is open: remember what was new (while it shows), then mark all read.
  const listed = list.data;
  const [noted, setNoted] = useState<typeof listed>(undefined);
  if (open && listed && listed !== noted) {
    setNoted(listed);
    const unread = listed.filter((n) => n.read_at === null).map((n) => n.id);
    if (unread.length > 0) setFresh((before) => new Set([...before, ...unread]));
  }
  const { mutate: markAllRead } = markRead;
  useEffect(() => {
    if (open && listed?.some((n) => n.read_at === null)) markAllRead();
  }, [open, listed, markAllRead]);
  /** When the list was opened: its times are read against it. */
  const [openedAt, setOpenedAt] = useState(0);

  const close = (returnFocus: boolean) => {
    setOpen(false);
    setFresh(new Set());
    if (returnFocus) buttonRef.current?.focus();
  };
  const closeRef = useRef(close);
  useEffect(() => {
    closeRef.current = close;
  });

  useEffect(() => {
    if (!open) return;
    panelRef.current?.focus();
    const onKey = (event: KeyboardEvent) => {
      if (event.key === "Escape") {
        event.preventDefault();
        closeRef.current(true);
      }
    };
    const onPointerDown = (event: PointerEvent) => {
      const target = event.target as Node;
      if (!panelRef.current?.contains(target) && !buttonRef.current?.contains(target)) closeRef.current(false);
    };
    document.addEventListener("keydown", onKey);
    document.addEventListener("pointerdown", onPointerDown);
    return () => {
      document.removeEventListener("keydown", onKey);
      document.removeEventListener("pointerdown", onPointerDown);
    };
  }, [open]);

  const go = (target: string | null) => {
    close(false);
    const url = shellUrlFor(target, location.origin);
    history.pushState(null, "", url);
    window.dispatchEvent(new PopStateEvent("popstate"));
  };
  return (
    <div className="bell">
      <button
        ref={buttonRef}
        type="button"
        className="icon-button"
        aria-label={count > 0 ? `Notifications, ${count} unread` : "Notifications"}
        aria-expanded={open}
        aria-haspopup="dialog"
        onClick={() => {
          if (open) close(false);
          else {
            setOpenedAt(Date.now());
            setOpen(true);
          }
        }}
      >
        <Icon name="bell" size={20} />
        {count > 0 && (
          <span className="bell-count" aria-hidden="true">
            {count > 99 ? "99+" : count}
          </span>
        )}
      </button>
      {open && (
        <div ref={panelRef} className="bell-panel" role="dialog" aria-label="Notifications" tabIndex={-1}>
          <div className="bell-head">
            <h2 className="bell-title">Notifications</h2>
            <button type="button" className="btn btn-ghost btn-small" onClick={() => clear.mutate()} disabled={!list.data?.length}>
              Clear all
            </button>
            <button type="button" className="icon-button" aria-label="Close notifications" onClick={() => close(true)}>
              <Icon name="close" size={18} />
            </button>
          </div>
          {list.isPending && <p className="bell-empty">Loading…</p>}
          {list.isError && <p className="bell-empty">Couldn't load the notifications.</p>}
          {list.data?.length === 0 && <p className="bell-empty">Nothing yet.</p>}
          <ul className="bell-list">
            {list.data?.map((n) => {
              const body = n.body ? plainText(n.body) : "";
              const isNew = n.read_at === null || fresh.has(n.id);
              return (
                <li key={n.id} className="bell-item" data-unread={isNew || undefined}>
                  <button type="button" className="bell-open" onClick={() => go(n.target)}>
                    <span className="bell-item-head">
                      <strong className="bell-item-title">{n.title}</strong>
                      <time className="bell-time" dateTime={n.sent_at} title={fullTime(n.sent_at)}>
                        {whenText(n.sent_at, openedAt)}
                      </time>
                    </span>
                    {body && <span className="bell-item-body">{body}</span>}
                    {isNew && <span className="visually-hidden">New.</span>}
                  </button>
                  <button type="button" className="icon-button" aria-label="Delete notification" onClick={() => remove.mutate(n.id)}>
                    <Icon name="close" size={16} />
                  </button>
                </li>
              );
            })}
          </ul>
        </div>
      )}
    </div>
  );
}
