//! The chat's info sheet: its note (the digest new chats remember it by, and the running
//! summary), written by the agent when the chat goes quiet, and editable here.

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";
import { ApiError } from "../api/client";
import { fetchNote, noteKey, saveNote, type NoteAnswer } from "../api/memory";
import { apiFetch } from "../api/client";
import { chatKey, fetchChat, patchChat, switchProvider } from "../api/chats";
import { fetchProvidersStatus, providersStatusKey } from "../api/settings";
import { compactCount, dollars } from "./MessageRow";
import { Sheet } from "./Sheet";

const errorText = (error: unknown) => (error instanceof ApiError ? error.message : "Something went wrong.");

/** `GET /api/chats/{id}/usage`: what the chat's turns used in all. */
interface ChatUsage {
  turns: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  cost_usd: number;
}

export function ChatInfo({ chatId, title, onClose }: { chatId: string; title: string; onClose: () => void }) {
  const queryClient = useQueryClient();
  const usage = useQuery({
    queryKey: ["chat-usage", chatId],
    queryFn: () => apiFetch<ChatUsage>(`/api/chats/${encodeURIComponent(chatId)}/usage`),
    retry: false,
  });
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
  const chat = useQuery({ queryKey: chatKey(chatId), queryFn: () => fetchChat(chatId), retry: false });
  const autoResume = useMutation({
    mutationFn: (on: boolean) => patchChat(chatId, { auto_resume: on }),
    onSettled: () => queryClient.invalidateQueries({ queryKey: chatKey(chatId) }),
  });
  const autoResumeId = useId();
  const status = useQuery({ queryKey: providersStatusKey, queryFn: fetchProvidersStatus, retry: false });
  const current = chat.data?.provider ?? status.data?.default_provider ?? null;
  const other = current === "claude" ? "codex" : current === "codex" ? "claude" : null;
  const otherConnected = other !== null && status.data?.providers[other]?.connected === true;
  const move = useMutation({
    mutationFn: () => switchProvider(chatId, other ?? "claude", crypto.randomUUID()),
    onSettled: () => queryClient.invalidateQueries({ queryKey: chatKey(chatId) }),
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
      {usage.data && usage.data.turns > 0 && (
        <p className="settings-lead" data-chat-usage>
          {usage.data.turns} {usage.data.turns === 1 ? "turn" : "turns"} ·{" "}
          {compactCount(usage.data.input_tokens + usage.data.cache_read_tokens + usage.data.cache_write_tokens)} tokens in ·{" "}
          {compactCount(usage.data.output_tokens)} out
          {usage.data.cost_usd > 0 ? ` · ${dollars(usage.data.cost_usd)}` : ""}
        </p>
      )}
      {chat.data && (
        <div className="setting-row setting-toggle">
          <input
            id={autoResumeId}
            type="checkbox"
            checked={autoResume.isPending ? autoResume.variables : chat.data.auto_resume}
            disabled={autoResume.isPending}
            onChange={(e) => autoResume.mutate(e.target.checked)}
          />
          <label htmlFor={autoResumeId}>Continue by itself when a usage limit resets</label>
        </div>
      )}
      {chat.data && other && chat.data.total > 0 && (
        <div className="setting-stack">
          <button
            type="button"
            className="btn btn-secondary btn-small"
            disabled={!otherConnected || chat.data.running || move.isPending}
            onClick={() => move.mutate()}
          >
            {move.isPending ? "Summarising the conversation…" : `Continue this chat on ${other === "codex" ? "Codex" : "Claude"}`}
          </button>
          {!otherConnected && <p className="settings-lead">Connect {other === "codex" ? "Codex" : "Claude"} in Settings to move this chat there.</p>}
          {move.isSuccess && <p className="settings-lead" role="status">Moved. The next message goes to {move.data.provider === "codex" ? "Codex" : "Claude"}, starting from a summary.</p>}
          {move.isError && (
            <p className="settings-error" role="alert">
              {errorText(move.error)}
            </p>
          )}
        </div>
      )}
      {autoResume.isError && (
        <p className="settings-error" role="alert">
          {errorText(autoResume.error)}
        </p>
      )}
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
      </div>
    </Sheet>
  );
}
