//! GitHub (`/api/github`): the owner's account for the agent's git. A fine-grained personal
//! access token the server checks with GitHub and keeps sealed (never read back), the
//! repositories the agent may use, and the agent's credential requests — granted or refused.

import { apiFetch } from "./client";

export interface GithubRequest {
  id: number;
  chat_id: string | null;
  host: string;
  repo: string;
  operation: "get" | "erase";
  /** `rejected`: git said GitHub refused the token it was given. */
  outcome: "granted" | "not_allowed" | "not_connected" | "wrong_host" | "rejected";
  created_at: number;
}

export interface Github {
  connected: boolean;
  login: string | null;
  connected_at: number | null;
  /** `owner/name` or `owner/*`. */
  repos: string[];
  max_repos: number;
  git_url: string;
  requests: GithubRequest[];
}

export const githubKey = ["github"] as const;

export const fetchGithub = () => apiFetch<Github>("/api/github");

export const connectGithub = (token: string) => apiFetch<Github>("/api/github", { method: "PUT", body: { token }, timeoutMs: 30_000 });

export const disconnectGithub = () => apiFetch<void>("/api/github", { method: "DELETE" });

export const setGithubRepos = (repos: string[]) => apiFetch<Github>("/api/github/repos", { method: "PUT", body: { repos } });
