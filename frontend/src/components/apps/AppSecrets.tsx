//! An app's secrets (Apps › an app): their names and when each was set — never a value —, with
//! Replace (type a new value) and Delete. Values come in through here or through a secure-input
//! card the agent shows in a chat; the app can use them but never read them back.

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState } from "react";
import { ApiError, apiFetch } from "../../api/client";

interface SecretName {
  name: string;
  updated_at: number;
}

const secretsKey = (appId: number) => ["app-secrets", appId] as const;
const path = (appId: number, name?: string) => `/api/apps/${appId}/secrets${name ? `/${encodeURIComponent(name)}` : ""}`;
const errorText = (error: unknown) => (error instanceof ApiError ? error.message : "Something went wrong.");

export function AppSecrets({ appId, online }: { appId: number; online: boolean }) {
  const queryClient = useQueryClient();
  const secrets = useQuery({
    queryKey: secretsKey(appId),
    queryFn: ({ signal }) => apiFetch<{ secrets: SecretName[] }>(path(appId), { signal }),
    retry: false,
  });
  const [editing, setEditing] = useState<string | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const [value, setValue] = useState("");
  const inputId = useId();
  const refresh = () => void queryClient.invalidateQueries({ queryKey: secretsKey(appId) });
  const replace = useMutation({
    mutationFn: (name: string) => apiFetch(path(appId, name), { method: "PUT", body: { value } }),
    onSuccess: () => {
      setValue("");
      setEditing(null);
      refresh();
    },
  });
  const remove = useMutation({
    mutationFn: (name: string) => apiFetch(path(appId, name), { method: "DELETE" }),
    onSuccess: () => {
      setConfirming(null);
      refresh();
    },
  });
  const list = secrets.data?.secrets ?? [];
  if (secrets.isPending || list.length === 0) return null;
  return (
    <div className="app-jobs" aria-label="Secrets" role="group">
      <h3 className="review-section">Secrets</h3>
      {list.map((s) => (
        <div key={s.name} className="skill" data-secret={s.name}>
          <span className="skill-name">
            <code>{s.name}</code>
          </span>
          <span className="skill-detail">Set {new Date(s.updated_at).toLocaleString()} · the value is never shown</span>
          {editing === s.name ? (
            <form
              className="inline-actions"
              autoComplete="off"
              onSubmit={(e) => {
                e.preventDefault();
                if (value !== "") replace.mutate(s.name);
              }}
            >
              <label htmlFor={inputId} className="visually-hidden">
                New value for {s.name}
              </label>
              <input id={inputId} type="password" autoComplete="new-password" value={value} onChange={(e) => setValue(e.target.value)} autoFocus />
              <button type="button" className="btn btn-secondary btn-small" onClick={() => setEditing(null)}>
                Cancel
              </button>
              <button type="submit" className="btn btn-primary btn-small" disabled={!online || value === "" || replace.isPending}>
                Save
              </button>
            </form>
          ) : confirming === s.name ? (
            <div className="inline-actions" role="alertdialog" aria-label={`Delete ${s.name}`}>
              <span>Delete {s.name}? The app can no longer use it.</span>
              <button type="button" className="btn btn-secondary btn-small" onClick={() => setConfirming(null)}>
                Cancel
              </button>
              <button type="button" className="btn btn-danger btn-small" onClick={() => remove.mutate(s.name)} disabled={!online || remove.isPending}>
                Delete
              </button>
            </div>
          ) : (
            <div className="inline-actions">
              <button type="button" className="btn btn-secondary btn-small" onClick={() => setEditing(s.name)} disabled={!online}>
                Replace
              </button>
              <button type="button" className="btn btn-danger-quiet btn-small" onClick={() => setConfirming(s.name)} disabled={!online}>
                Delete
              </button>
            </div>
          )}
        </div>
      ))}
      {replace.isError && <p role="alert">{errorText(replace.error)}</p>}
      {remove.isError && <p role="alert">{errorText(remove.error)}</p>}
      {secrets.isError && <p role="alert">{errorText(secrets.error)}</p>}
    </div>
  );
}
