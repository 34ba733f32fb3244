//! The chat's info sheet: its note (the digest new chats remember it by, and the running
//! summary), written by the agent when the chat goes quiet, and editable here; and the prompts
//! scheduled into it, with a form to schedule another.

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { lazy, Suspense, useId, useState, type FormEvent } from "react";
import { ApiError } from "../api/client";
import { fetchNote, noteKey, saveNote, type NoteAnswer } from "../api/memory";
import { fetchSchedules, schedulesKey } from "../api/schedules";
import { cadenceText, nextText } from "../schedules/cadence";
import { Sheet } from "./Sheet";

const ScheduleForm = lazy(() => import("./ScheduleForm"));

const errorText = (error: unknown) => (error instanceof ApiError ? error.message : "Something went wrong.");

export function ChatInfo({ chatId, title, onClose }: { chatId: string; title: string; onClose: () => void }) {
  const queryClient = useQueryClient();
  const note = useQuery({ queryKey: noteKey(chatId), queryFn: () => fetchNote(chatId), retry: false });
  const [digest, setDigest] = useState<string | null>(null);
  const [summary, setSummary] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: (body: { digest: string; summary: string }) => saveNote(chatId, body),
    onSuccess: (saved: NoteAnswer) => {
      queryClient.setQueryData(noteKey(chatId), saved);
      setDigest(null);
      setSummary(null);
    },
  });
  const digestId = useId();
  const summaryId = useId();
  const stored = note.data?.note ?? null;
  const digestText = digest ?? stored?.digest ?? "";
  const summaryText = summary ?? stored?.summary ?? "";
  const dirty = digest !== null || summary !== null;
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate({ digest: digestText, summary: summaryText });
  };
  return (
    <Sheet label="Chat info" onClose={onClose}>
      <div className="review">
      <h2 className="review-name">{title}</h2>
      <p className="settings-lead">
        {stored === null
          ? "No note yet. When this chat has been quiet for a while, the agent writes a short digest and a summary; new chats remember it by the digest."
          : stored.by_owner
            ? `Edited by you · ${new Date(stored.updated_at).toLocaleString()}`
            : `Written by the agent · covers ${stored.source_count} messages · ${new Date(stored.updated_at).toLocaleString()}`}
      </p>
      {note.isError && (
        <p className="settings-error" role="alert">
          Couldn't load the note: {errorText(note.error)}
        </p>
      )}
      <form className="setting-stack" onSubmit={onSubmit}>
        <label htmlFor={digestId} className="field-label">
          Digest
        </label>
        <textarea
          id={digestId}
          className="field-input note-digest"
          rows={3}
          maxLength={note.data?.max_digest_chars}
          value={digestText}
          disabled={note.isPending}
          onChange={(e) => setDigest(e.target.value)}
        />
        <label htmlFor={summaryId} className="field-label">
          Summary
        </label>
        <textarea
          id={summaryId}
          className="field-input note-summary"
          rows={8}
          maxLength={note.data?.max_summary_chars}
          value={summaryText}
          disabled={note.isPending}
          onChange={(e) => setSummary(e.target.value)}
        />
        {save.isError && (
          <p className="settings-error" role="alert">
            {errorText(save.error)}
          </p>
        )}
        <div className="inline-actions">
          <button type="submit" className="btn btn-primary btn-small" disabled={!dirty || save.isPending}>
            Save
          </button>
          <button type="button" className="btn btn-secondary btn-small" onClick={onClose}>
            Close
          </button>
        </div>
      </form>
      <ChatSchedules chatId={chatId} title={title} />
      </div>
    </Sheet>
  );
}

/** The prompts scheduled into this chat, and the form for a new one. */
function ChatSchedules({ chatId, title }: { chatId: string; title: string }) {
  const schedules = useQuery({ queryKey: schedulesKey, queryFn: fetchSchedules, retry: false });
  const [adding, setAdding] = useState(false);
  const mine = (schedules.data?.schedules ?? []).filter((s) => s.chat_id === chatId && s.finished_at === null);
  return (
    <div className="setting-stack">
      <h3 className="review-section">Scheduled here</h3>
      {mine.length === 0 && !adding && <p className="field-hint">No prompt is scheduled in this chat.</p>}
      {mine.length > 0 && (
        <ul className="skill-list">
          {mine.map((s) => (
            <li key={s.id} className="skill">
              <span className="skill-name">{s.name}</span>
              <span className="skill-detail">
                {cadenceText(s)} · next: {nextText(s)}
              </span>
            </li>
          ))}
        </ul>
      )}
      {adding ? (
        <Suspense fallback={<p role="status">Loading…</p>}>
          <ScheduleForm chatId={chatId} chatTitle={title} onDone={() => setAdding(false)} onCancel={() => setAdding(false)} />
        </Suspense>
      ) : (
        <div className="inline-actions">
          <button type="button" className="btn btn-secondary btn-small" onClick={() => setAdding(true)}>
            Schedule a prompt here
          </button>
        </div>
      )}
    </div>
  );
}
