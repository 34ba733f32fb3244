//! Settings › Connectors › GitHub: the owner's account for the agent's git. Connecting takes a
//! fine-grained personal access token (checked with GitHub, kept sealed on the server, never
//! shown again); the owner lists the repositories the agent may clone and push (`owner/name`, or
//! `owner/*` for all of an owner's), and sees the agent's recent credential requests — a refused
//! one says which repository it wanted, so the owner can allow it.

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";
import { ApiError } from "../../api/client";
import { connectGithub, disconnectGithub, fetchGithub, githubKey, setGithubRepos, type Github, type GithubRequest } from "../../api/github";

const errorText = (error: unknown) => (error instanceof ApiError ? error.message : "Something went wrong.");

const OUTCOME_TEXT: Record<GithubRequest["outcome"], string> = {
  granted: "allowed",
  not_allowed: "refused: not in the list",
  not_connected: "refused: GitHub not connected",
  wrong_host: "refused: not GitHub",
  rejected: "GitHub refused the token",
};

const when = (ms: number) => new Date(ms).toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" });

export function GithubSection() {
  const queryClient = useQueryClient();
  const github = useQuery({ queryKey: githubKey, queryFn: fetchGithub, retry: false });
  const changed = (data?: Github) => {
    if (data) queryClient.setQueryData(githubKey, data);
    else void queryClient.invalidateQueries({ queryKey: githubKey });
  };
  const disconnect = useMutation({ mutationFn: disconnectGithub, onSuccess: () => changed() });
  const data = github.data;
  return (
    <section className="settings-section" aria-labelledby="s-github">
      <h2 id="s-github" className="settings-title">
        GitHub
      </h2>
      <p className="settings-lead">
        Let the agent clone and push the repositories you choose. Git asks the server for your token at each operation, and only for those
        repositories; the token never lands in the agent's files.
      </p>
      {github.isError && (
        <p className="settings-error" role="alert">
          Couldn't load GitHub: {errorText(github.error)}
        </p>
      )}
      {data?.connected ? (
        <div className="setting-row github-account">
          <span>
            Connected as <strong>{data.login}</strong>
          </span>
          <button type="button" className="btn btn-ghost btn-small" onClick={() => disconnect.mutate()} disabled={disconnect.isPending}>
            Disconnect
          </button>
        </div>
      ) : (
        data && <ConnectGithub onDone={changed} />
      )}
      {disconnect.isError && (
        <p className="settings-error" role="alert">
          {errorText(disconnect.error)}
        </p>
      )}
      {data && <GithubRepos github={data} onDone={changed} />}
      {data && data.requests.length > 0 && (
        <details className="connector-tools github-requests">
          <summary>Recent requests from the agent</summary>
          <ul>
            {data.requests.map((r) => (
              <li key={r.id} data-outcome={r.outcome}>
                <code>{r.repo || "(no repository)"}</code> — {OUTCOME_TEXT[r.outcome]} · {when(r.created_at)}
              </li>
            ))}
          </ul>
        </details>
      )}
    </section>
  );
}

function ConnectGithub({ onDone }: { onDone: (data: Github) => void }) {
  const [token, setToken] = useState("");
  const connect = useMutation({
    mutationFn: () => connectGithub(token.trim()),
    onSuccess: (data) => {
      setToken("");
      onDone(data);
    },
  });
  const id = useId();
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    connect.mutate();
  };
  return (
    <form className="setting-stack" onSubmit={onSubmit} aria-label="Connect GitHub">
      <label htmlFor={id} className="field-label">
        Personal access token
      </label>
      <input
        id={id}
        className="field-input"
        type="password"
        value={token}
        onChange={(e) => setToken(e.target.value)}
        placeholder="github_pat_…"
        required
        autoComplete="off"
      />
      <p className="settings-note">
        Create a fine-grained token on GitHub (Settings › Developer settings) with access to the repositories the agent should use and
        “Contents: read and write”.
      </p>
      {connect.isError && (
        <p className="settings-error" role="alert">
          {errorText(connect.error)}
        </p>
      )}
      <div>
        <button type="submit" className="btn btn-primary btn-small" disabled={connect.isPending}>
          {connect.isPending ? "Checking…" : "Connect"}
        </button>
      </div>
    </form>
  );
}

function GithubRepos({ github, onDone }: { github: Github; onDone: (data: Github) => void }) {
  const [repo, setRepo] = useState("");
  const save = useMutation({ mutationFn: setGithubRepos, onSuccess: onDone });
  const id = useId();
  const full = github.repos.length >= github.max_repos;
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    const wanted = repo.trim();
    if (!wanted) return;
    save.mutate([...github.repos, wanted], { onSuccess: () => setRepo("") });
  };
  return (
    <div className="setting-stack github-repos">
      <h3 className="settings-subtitle">Repositories the agent may use</h3>
      {github.repos.length === 0 ? (
        <p className="settings-note">None yet: the agent's git is refused for every repository.</p>
      ) : (
        <ul className="connector-list">
          {github.repos.map((r) => (
            <li key={r} className="setting-row" data-repo={r}>
              <code>{r}</code>
              <button
                type="button"
                className="btn btn-danger-quiet btn-small"
                onClick={() => save.mutate(github.repos.filter((x) => x !== r))}
                disabled={save.isPending}
                aria-label={`Remove ${r}`}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      {!full && (
        <form className="setting-row" onSubmit={onSubmit} aria-label="Allow a repository">
          <label htmlFor={id} className="visually-hidden">
            Repository
          </label>
          <input
            id={id}
            className="field-input"
            value={repo}
            onChange={(e) => setRepo(e.target.value)}
            placeholder="owner/name or owner/*"
            autoComplete="off"
            spellCheck={false}
          />
          <button type="submit" className="btn btn-secondary btn-small" disabled={save.isPending || !repo.trim()}>
            Allow
          </button>
        </form>
      )}
      {save.isError && (
        <p className="settings-error" role="alert">
          {errorText(save.error)}
        </p>
      )}
    </div>
  );
}
