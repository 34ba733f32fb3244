//! Settings › Appearance › Screens: the shell's builds (the screens the agent rebuilt) — which
//! one is on, when each was built and from which chat —, switching to one or to the stock
//! screens (the API `/recovery` uses), and a platform update waiting for the agent to merge it.

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { formatDistanceToNow } from "date-fns";
import { ApiError } from "../../api/client";
import { fetchShell, shellKey, switchShell, type ShellStatus } from "../../api/shell";
import { navigate } from "../../shell/router";

function errorText(error: unknown): string {
  return error instanceof ApiError ? error.message : "Something went wrong.";
}

function ChatLink({ id, label }: { id: string; label: string }) {
  return (
    <button type="button" className="link-button" onClick={() => navigate({ name: "chat", id })}>
      {label}
    </button>
  );
}

export function ShellSettings() {
  const queryClient = useQueryClient();
  const shell = useQuery({ queryKey: shellKey, queryFn: fetchShell });
  const switching = useMutation({
    mutationFn: switchShell,
    onSuccess: (status: ShellStatus) => queryClient.setQueryData(shellKey, status),
  });
  const status = shell.data;
  if (!status?.editable) return null;
  const resolving = status.resolving ?? null;
  return (
    <div className="setting-stack shell-settings">
      <h3 className="settings-subtitle">Screens</h3>
      <p className="settings-lead">
        Ask the agent to change the screens themselves; each rebuild is kept here. Switch back to any of them, or to the stock screens (also at{" "}
        <a href="/recovery">/recovery</a>).
      </p>
      {resolving && (
        <p className="settings-note" role="status">
          A platform update changed the same parts as your edits ({[...resolving.markers, ...resolving.kept].join(", ")}). The current screens stay until the agent merges them.{" "}
          {resolving.chat && <ChatLink id={resolving.chat} label="Open the chat" />}
        </p>
      )}
      <div className="inline-actions">
        <button type="button" className="btn btn-secondary btn-small" onClick={() => switching.mutate(null)} disabled={switching.isPending || status.serving === null}>
          {status.serving === null ? "Stock screens on" : "Use the stock screens"}
        </button>
      </div>
      {switching.isError && (
        <p className="settings-error" role="alert">
          {errorText(switching.error)}
        </p>
      )}
      {status.builds.length > 0 && (
        <ul className="device-list shell-builds" aria-label="Shell versions">
          {status.builds.map((b) => {
            const current = b.n === status.serving;
            return (
              <li key={b.n} className="device-row" data-build={b.n} data-current={current || undefined}>
                <span className="device-text">
                  <span className="device-name">
                    Build {b.n}
                    {current && <span className="device-badge">Current</span>}
                  </span>
                  <span className="device-detail">
                    {formatDistanceToNow(b.at, { addSuffix: true })}
                    {b.failed ? " · rolled back" : ""}
                    {b.chat ? (
                      <>
                        {" · "}
                        <ChatLink id={b.chat} label="from a chat" />
                      </>
                    ) : (
                      ""
                    )}
                  </span>
                </span>
                {!current && (
                  <button type="button" className="btn btn-secondary btn-small" onClick={() => switching.mutate(b.n)} disabled={switching.isPending} aria-label={`Switch to build ${b.n}`}>
                    Switch to
                  </button>
                )}
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}
