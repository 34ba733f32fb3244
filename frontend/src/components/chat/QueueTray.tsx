//! Messages sent while a turn runs: they wait here, can be edited, removed or sent into the
//! running turn now (steered), and otherwise run next.

import { useState } from "react";
import type { PendingMessage } from "../../api/types";
import { Icon } from "../ui/Icon";

export interface QueueTrayProps {
  rows: (PendingMessage & { confirmed: boolean })[];
  onEdit: (cid: string, content: string) => Promise<boolean>;
  onRemove: (cid: string) => Promise<void>;
  /** Sends this row into the running turn now; absent when no turn runs. */
  onSteer?: ((cid: string) => Promise<void>) | undefined;
  /** Steering is not possible right now (offline, a question is open, a steer is on its way). */
  steerDisabled?: boolean;
}

export function QueueTray({ rows, onEdit, onRemove, onSteer, steerDisabled = false }: QueueTrayProps) {
  if (rows.length === 0) return null;
  return (
    <section className="queue" aria-label="Queued messages">
      <p className="queue-title">
        Queued · runs after this turn
      </p>
      <ul className="queue-list">
        {rows.map((row) => (
          <QueueRow key={row.cid} row={row} onEdit={onEdit} onRemove={onRemove} onSteer={onSteer} steerDisabled={steerDisabled} />
        ))}
      </ul>
    </section>
  );
}

function QueueRow({ row, onEdit, onRemove, onSteer, steerDisabled }: { row: PendingMessage & { confirmed: boolean } } & Omit<QueueTrayProps, "rows">) {
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState(row.content);
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<string | null>(null);

  async function run(action: () => Promise<void>) {
    setBusy(true);
    setNote(null);
    try {
      await action();
    } catch {
      setNote("Couldn't update it — it may already be running.");
    } finally {
      setBusy(false);
    }
  }

  if (editing) {
    return (
      <li className="queue-row queue-row-editing">
        <textarea className="queue-edit" aria-label="Edit queued message" value={draft} onChange={(e) => setDraft(e.target.value)} rows={2} autoFocus />
        <div className="queue-actions">
          <button type="button" className="btn btn-ghost btn-small" onClick={() => setEditing(false)} disabled={busy}>
            Cancel
          </button>
          <button
            type="button"
            className="btn btn-primary btn-small"
            disabled={busy || draft.trim() === ""}
            onClick={() =>
              void run(async () => {
                const updated = await onEdit(row.cid, draft);
                if (!updated) setNote("Too late — it already started.");
                setEditing(false);
              })
            }
          >
            Save
          </button>
        </div>
        {note && <p className="queue-note">{note}</p>}
      </li>
    );
  }
  return (
    <li className="queue-row" data-confirmed={row.confirmed || undefined}>
      <span className="queue-text">{row.content}</span>
      {!row.confirmed && <span className="queue-pending">Sending…</span>}
      <div className="queue-actions">
        {onSteer && (
          <button
            type="button"
            className="btn btn-ghost btn-small queue-steer"
            disabled={!row.confirmed || busy || steerDisabled}
            title="Send it into the running turn now"
            onClick={() => void run(() => onSteer(row.cid))}
          >
            Send now
          </button>
        )}
        <button
          type="button"
          className="icon-button icon-button-small"
          aria-label="Edit queued message"
          disabled={!row.confirmed || busy}
          onClick={() => {
            setDraft(row.content);
            setEditing(true);
          }}
        >
          <Icon name="edit" size={16} />
        </button>
        <button
          type="button"
          className="icon-button icon-button-small"
          aria-label="Remove queued message"
          disabled={!row.confirmed || busy}
          onClick={() => void run(() => onRemove(row.cid))}
        >
          <Icon name="close" size={16} />
        </button>
      </div>
      {note && <p className="queue-note">{note}</p>}
    </li>
  );
}
