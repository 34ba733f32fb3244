//! The bell in the top bar: unread notifications (and the app badge), and the list with
//! mark-all-read, clear and delete. A tap on one opens its chat or app.

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { clearAll, deleteNotification, fetchNotifications, notificationsKey, readAll } from "../api/push";
import { shellUrlFor } from "../pwa/push";
import { useUnread } from "../shell/push";
import { Icon } from "./Icon";

export default function NotificationBell() {
  const { count } = useUnread();
  const [open, setOpen] = useState(false);
  const queryClient = useQueryClient();
  const list = useQuery({ queryKey: [...notificationsKey, "list"], queryFn: fetchNotifications, enabled: open, retry: false });
  const refresh = () => void queryClient.invalidateQueries({ queryKey: notificationsKey });
  const markRead = useMutation({ mutationFn: readAll, onSuccess: refresh });
  const clear = useMutation({ mutationFn: clearAll, onSuccess: refresh });
  const remove = useMutation({ mutationFn: deleteNotification, onSuccess: refresh });
  const go = (target: string | null) => {
    setOpen(false);
    const url = shellUrlFor(target, location.origin);
    history.pushState(null, "", url);
    window.dispatchEvent(new PopStateEvent("popstate"));
  };
  return (
    <div className="bell">
      <button
        type="button"
        className="icon-button"
        aria-label={count > 0 ? `Notifications, ${count} unread` : "Notifications"}
        aria-expanded={open}
        onClick={() => setOpen((o) => !o)}
      >
        <Icon name="bell" size={20} />
        {count > 0 && <span className="bell-count">{count > 99 ? "99+" : count}</span>}
      </button>
      {open && (
        <div className="bell-panel" role="dialog" aria-label="Notifications">
          <div className="inline-actions">
            <button type="button" className="btn btn-ghost btn-small" onClick={() => markRead.mutate()} disabled={count === 0}>
              Mark all read
            </button>
            <button type="button" className="btn btn-ghost btn-small" onClick={() => clear.mutate()} disabled={!list.data?.length}>
              Clear
            </button>
          </div>
          {list.data?.length === 0 && <p className="settings-lead">Nothing yet.</p>}
          <ul className="bell-list">
            {list.data?.map((n) => (
              <li key={n.id} className="bell-item" data-unread={n.read_at === null || undefined}>
                <button type="button" className="bell-open" onClick={() => go(n.target)}>
                  <strong>{n.title}</strong>
                  {n.body && <span>{n.body}</span>}
                </button>
                <button type="button" className="icon-button" aria-label="Delete notification" onClick={() => remove.mutate(n.id)}>
                  <Icon name="close" size={14} />
                </button>
              </li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}
