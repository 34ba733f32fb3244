//! Settings › Memory: whether new chats start with what the agent remembers (recent chats'
//! digests and the owner's memory file), the memory file itself (which the agent edits too),
//! and the skills the agent can read, built-in and its own.

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";
import { ApiError } from "../../api/client";
import { fetchMemory, fetchSkills, memoryKey, saveOwnerMemory, setMemoryEnabled, skillsKey, utf8Bytes, type MemoryState } from "../../api/memory";

const errorText = (error: unknown) => (error instanceof ApiError ? error.message : "Something went wrong.");

export function MemorySection() {
  const queryClient = useQueryClient();
  const memory = useQuery({ queryKey: memoryKey, queryFn: fetchMemory, retry: false });
  const skills = useQuery({ queryKey: skillsKey, queryFn: fetchSkills, retry: false });
  const [draft, setDraft] = useState<string | null>(null);
  const saved = (state: MemoryState) => queryClient.setQueryData(memoryKey, state);
  const toggle = useMutation({ mutationFn: setMemoryEnabled, onSuccess: saved });
  const save = useMutation({
    mutationFn: saveOwnerMemory,
    onSuccess: (state: MemoryState) => {
      saved(state);
      setDraft(null);
    },
  });
  const enabledId = useId();
  const fileId = useId();
  const text = draft ?? memory.data?.owner_md ?? "";
  const bytes = utf8Bytes(text);
  const max = memory.data?.max_bytes ?? 16384;
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate(text);
  };
  return (
    <section className="settings-section" aria-labelledby="s-memory">
      <h2 id="s-memory" className="settings-title">
        Memory
      </h2>
      <p className="settings-lead">
        New chats can start knowing what you did lately: the digests of your recent chats and your memory file, where the agent keeps facts and
        preferences you tell it. A chat keeps what it started with.
      </p>
      {memory.isError && (
        <p className="settings-error" role="alert">
          Couldn't load memory: {errorText(memory.error)}
        </p>
      )}
      <div className="setting-row">
        <label htmlFor={enabledId}>New chats remember</label>
        <select
          id={enabledId}
          className="select"
          value={memory.data?.enabled === false ? "off" : "on"}
          disabled={!memory.data || toggle.isPending}
          onChange={(e) => toggle.mutate(e.target.value === "on")}
        >
          <option value="on">Recent chats and my memory file</option>
          <option value="off">Nothing</option>
        </select>
      </div>
      <form className="setting-stack" onSubmit={onSubmit}>
        <label htmlFor={fileId} className="field-label">
          Memory file
        </label>
        <textarea
          id={fileId}
          className="field-input memory-file"
          rows={6}
          value={text}
          disabled={!memory.data}
          onChange={(e) => setDraft(e.target.value)}
          placeholder="- I prefer metric units"
        />
        <p className="field-hint" data-over={bytes > max || undefined}>
          {bytes.toLocaleString()} / {max.toLocaleString()} bytes
          {memory.data?.truncated && draft === null ? " · the file is longer; this is its beginning" : ""}
        </p>
        {(save.isError || toggle.isError) && (
          <p className="settings-error" role="alert">
            {errorText(save.error ?? toggle.error)}
          </p>
        )}
        <div className="inline-actions">
          <button type="submit" className="btn btn-primary btn-small" disabled={draft === null || bytes > max || save.isPending}>
            Save
          </button>
        </div>
      </form>
      <h3 className="field-label">Skills</h3>
      {skills.isError && (
        <p className="settings-error" role="alert">
          Couldn't load the skills: {errorText(skills.error)}
        </p>
      )}
      <ul className="skill-list">
        {skills.data?.skills.map((s) => (
          <li key={s.path} className="skill" data-error={s.error ? true : undefined}>
            <span className="skill-name">
              {s.name}
              <span className="perm-badge perm-badge-quiet">{s.origin === "agent" ? "Written by the agent" : "Built in"}</span>
            </span>
            <span className="skill-detail">{s.error ? `Can't be used: this file ${s.error}.` : s.description}</span>
            {s.last_used !== null && <span className="skill-detail">Last read {new Date(s.last_used).toLocaleString()}</span>}
          </li>
        ))}
      </ul>
      {skills.data && skills.data.left_out > 0 && <p className="field-hint">{skills.data.left_out} more skills are not indexed.</p>}
    </section>
  );
}
