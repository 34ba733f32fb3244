//! The chat's info sheet: the chat's own options (its model and what the agent may do without
//! asking, saved with `PATCH /api/chats/{id}`); its note (the digest new chats remember it by,
//! and the running summary), written by the agent when the chat goes quiet, editable here; and
//! the prompts scheduled into it, with a form to schedule another; and what the agent was given
//! (`AgentContext.tsx`).

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { chatConnectorsKey, chooseChatConnectors, connectorsKey, fetchChatConnectors, fetchConnectors } from "../../api/connectors";
import { lazy, Suspense, useId, useState, type FormEvent } from "react";
import { chatKey, fetchChat, patchChat, switchProvider } from "../../api/chats";
import { ApiError, apiFetch } from "../../api/client";
import { fetchNote, noteKey, saveNote, type NoteAnswer } from "../../api/memory";
import type { ApprovalPolicy, ChatDetail } from "../../api/protocol.gen";
import { fetchSchedules, schedulesKey } from "../../api/schedules";
import { fetchWorkspace, workspaceFileUrl, workspaceKey } from "../../api/uploads";
import { formatSize, useMediaToken, withToken } from "../../chat/media";
import { fetchModels, fetchProvidersStatus, modelsKey, providersStatusKey } from "../../api/settings";
import { cadenceText, nextText } from "../../schedules/cadence";
import { compactCount, dollars } from "./MessageRow";
import { Sheet } from "../ui/Sheet";
import { AgentContextSection } from "./AgentContext";

const ScheduleForm = lazy(() => import("../schedules/ScheduleForm"));

const errorText = (error: unknown) => (error instanceof ApiError ? error.message : "Something went wrong.");

/** The options part of a chat's detail, kept apart from the transcript's cache. */
export const chatOptionsKey = (id: string) => ["chat-options", id] as const;

const toPolicy = (value: string): ApprovalPolicy => (value === "ask" || value === "workspace" ? value : "full");

/** What each approval policy means, in the owner's words. */
export const POLICY_LABELS: Record<ApprovalPolicy, string> = {
  full: "Run without asking",
  workspace: "Ask for anything outside the workspace",
  ask: "Ask me first",
};

type ChatOptions = Pick<ChatDetail, "provider" | "model" | "approval_policy">;

/** The chat's model and approval policy, each saved as soon as it changes. */
function ChatOptionsForm({ chatId }: { chatId: string }) {
  const queryClient = useQueryClient();
  const options = useQuery({
    queryKey: chatOptionsKey(chatId),
    queryFn: async ({ signal }): Promise<ChatOptions> => {
      const detail = await fetchChat(chatId, { signal });
      return { provider: detail.provider, model: detail.model, approval_policy: detail.approval_policy };
    },
    staleTime: 0,
    retry: false,
  });
  const status = useQuery({ queryKey: providersStatusKey, queryFn: fetchProvidersStatus, staleTime: 60_000, retry: false });
  const models = useQuery({ queryKey: modelsKey, queryFn: fetchModels, retry: false, staleTime: 300_000 });
  const save = useMutation({
    mutationFn: (patch: Partial<Pick<ChatOptions, "model" | "approval_policy">>) => patchChat(chatId, patch),
    onMutate: (patch) => {
      const before = queryClient.getQueryData<ChatOptions>(chatOptionsKey(chatId));
      if (before) queryClient.setQueryData<ChatOptions>(chatOptionsKey(chatId), { ...before, ...patch });
      return before;
    },
    onError: (_error, _patch, before) => {
      if (before) queryClient.setQueryData(chatOptionsKey(chatId), before);
    },
  });
  const modelId = useId();
  const policyId = useId();
  const current = options.data;
  const provider = current?.provider ?? status.data?.default_provider ?? "claude";
  const modelList = (models.data?.providers[provider] ?? []).flatMap((m) => (m.id ? [{ id: m.id, label: m.label }] : []));
  // A model set elsewhere that the list does not name still shows as chosen.
  const unlisted = current?.model && !modelList.some((m) => m.id === current.model) ? current.model : null;
  return (
    <section className="chat-options" aria-labelledby={`${modelId}-title`}>
      <h3 id={`${modelId}-title`} className="field-label">
        This chat
      </h3>
      <div className="setting-row">
        <label htmlFor={modelId}>Model</label>
        <select
          id={modelId}
          className="select"
          value={current?.model ?? ""}
          onChange={(e) => save.mutate({ model: e.target.value === "" ? null : e.target.value })}
          disabled={current === undefined}
        >
          <option value="">Default</option>
          {unlisted && <option value={unlisted}>{unlisted}</option>}
          {modelList.map((m) => (
            <option key={m.id} value={m.id}>
              {m.label}
            </option>
          ))}
        </select>
      </div>
      <div className="setting-row">
        <label htmlFor={policyId}>Approvals</label>
        <select
          id={policyId}
          className="select"
          value={current?.approval_policy ?? "full"}
          onChange={(e) => save.mutate({ approval_policy: toPolicy(e.target.value) })}
          disabled={current === undefined}
        >
          {(Object.keys(POLICY_LABELS) as ApprovalPolicy[]).map((policy) => (
            <option key={policy} value={policy}>
              {POLICY_LABELS[policy]}
            </option>
          ))}
        </select>
      </div>
      <p className="settings-lead">Changes apply from the next message.</p>
      {options.isError && (
        <p className="settings-error" role="alert">
          Couldn't load this chat's options: {errorText(options.error)}
        </p>
      )}
      {save.isError && (
        <p className="settings-error" role="alert">
          Couldn't save that: {errorText(save.error)}
        </p>
      )}
    </section>
  );
}

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
  const planMode = useMutation({
    mutationFn: (on: boolean) => patchChat(chatId, { plan_mode: on }),
    onSettled: () => queryClient.invalidateQueries({ queryKey: chatKey(chatId) }),
  });
  const planModeId = useId();
  const status = useQuery({ queryKey: providersStatusKey, queryFn: fetchProvidersStatus, retry: false });
  const current = chat.data?.provider ?? status.data?.default_provider ?? null;
  const other = current === "claude" ? "codex" : current === "codex" ? "claude" : null;
  const otherConnected = other !== null && status.data?.providers[other]?.connected === true;
  const move = useMutation({
    mutationFn: () => switchProvider(chatId, other ?? "claude", crypto.randomUUID()),
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: chatKey(chatId) });
      void queryClient.invalidateQueries({ queryKey: chatOptionsKey(chatId) });
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
    <Sheet label="Chat info" title={title} onClose={onClose}>
      <div className="review review-under-head">
      <ChatOptionsForm chatId={chatId} />
      <h3 className="field-label">Note</h3>
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
      {chat.data && (
        <div className="setting-row setting-toggle">
          <input
            id={planModeId}
            type="checkbox"
            checked={planMode.isPending ? planMode.variables : chat.data.plan_mode}
            disabled={planMode.isPending}
            onChange={(e) => planMode.mutate(e.target.checked)}
          />
          <label htmlFor={planModeId}>Plan first: the agent proposes a plan you approve before it changes anything</label>
        </div>
      )}
      {planMode.isError && (
        <p className="settings-error" role="alert">
          {errorText(planMode.error)}
        </p>
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
        </div>
      </form>
      <ChatWorkspace chatId={chatId} />
      <ChatSchedules chatId={chatId} title={title} />
      <ChatConnectorChoice chatId={chatId} />
      <AgentContextSection chatId={chatId} />
      </div>
    </Sheet>
  );
}

/** What the agent made in this chat's workspace, newest first, each a download. */
function ChatWorkspace({ chatId }: { chatId: string }) {
  const workspace = useQuery({ queryKey: workspaceKey(chatId), queryFn: () => fetchWorkspace(chatId), retry: false });
  const files = workspace.data?.files ?? [];
  const token = useMediaToken(chatId, files.length > 0);
  return (
    <div className="setting-stack" data-workspace>
      <h3 className="review-section">Files the agent made</h3>
      {workspace.isError && (
        <p className="settings-error" role="alert">
          Couldn't load them: {errorText(workspace.error)}
        </p>
      )}
      {workspace.isSuccess && files.length === 0 && <p className="field-hint">Nothing yet. What the agent writes in this chat's workspace shows up here.</p>}
      {files.length > 0 && (
        <ul className="skill-list workspace-files">
          {files.map((f) => (
            <li key={f.path} className="skill">
              <a
                className="skill-name"
                href={token ? withToken(workspaceFileUrl(chatId, f.path), token) : undefined}
                download={f.path.slice(f.path.lastIndexOf("/") + 1)}
                aria-label={`Download ${f.path}, ${formatSize(f.size)}`}
              >
                {f.path}
              </a>
              <span className="skill-detail">
                {formatSize(f.size)} · {new Date(f.modified).toLocaleString()}
              </span>
            </li>
          ))}
        </ul>
      )}
      {workspace.data?.truncated && <p className="field-hint">Only the newest {files.length} are listed.</p>}
    </div>
  );
}

/** Connectors this chat uses: every-chat ones always, chosen-chats ones when ticked here. */
function ChatConnectorChoice({ chatId }: { chatId: string }) {
  const queryClient = useQueryClient();
  const all = useQuery({ queryKey: connectorsKey, queryFn: fetchConnectors, retry: false });
  const mine = useQuery({ queryKey: chatConnectorsKey(chatId), queryFn: () => fetchChatConnectors(chatId), retry: false });
  const choose = useMutation({
    mutationFn: (ids: number[]) => chooseChatConnectors(chatId, ids),
    onSuccess: (answer) => queryClient.setQueryData(chatConnectorsKey(chatId), answer),
  });
  const connectors = all.data?.connectors ?? [];
  if (connectors.length === 0) return null;
  const chosen = mine.data?.chosen ?? [];
  const toggle = (id: number, on: boolean) => choose.mutate(on ? [...chosen, id] : chosen.filter((c) => c !== id));
  return (
    <div className="setting-stack">
      <h3 className="review-section">Connectors</h3>
      <ul className="skill-list">
        {connectors.map((c) => (
          <li key={c.id} className="skill">
            {c.chats === "all" ? (
              <span className="skill-name">{c.name}</span>
            ) : (
              <label className="setting-check">
                <input type="checkbox" checked={chosen.includes(c.id)} disabled={!mine.data || choose.isPending} onChange={(e) => toggle(c.id, e.target.checked)} />
                {c.name}
              </label>
            )}
            <span className="skill-detail">
              {c.status !== "connected" ? "not connected" : c.chats === "all" ? "every chat" : chosen.includes(c.id) ? "this chat" : "not in this chat"}
            </span>
          </li>
        ))}
      </ul>
      {choose.isError && (
        <p className="settings-error" role="alert">
          Couldn't save that: {errorText(choose.error)}
        </p>
      )}
    </div>
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
