//! Typed calls for providers, models, settings and the version, with their query keys.

import { apiFetch } from "./client";
import type { AgentPick, ModelsList, PlanWindow, ProviderId, ProviderInfo, ProvidersStatus, VersionInfo } from "./types";

export const providersKey = ["providers"] as const;
export const providersStatusKey = ["providers", "status"] as const;
export const modelsKey = ["models"] as const;
export const settingsKey = ["settings"] as const;
export const versionKey = ["version"] as const;

/** What confines the agent's processes on this server (`GET /api/settings`). */
/** Whom the agent's processes may signal: only their own (Landlock ABI 6+), or anyone of the server's user. */
export type SignalScope = { mode: "scoped" } | { mode: "open"; reason: string };
export type SandboxState = { mode: "landlock"; abi: number; signals: SignalScope } | { mode: "off"; reason: string };

/** A tool on the agent's PATH (`GET /api/settings` › toolbox): `command` null when it is not installed,
 *  `version` null when it did not answer. */
export interface ToolInfo {
  name: string;
  command: string | null;
  version: string | null;
  purpose: string;
}

/** The owner's default model and effort per provider. */
export type AgentDefaults = Partial<Record<ProviderId, AgentPick>>;

/** How many agents (turns and app jobs) run at once, and how busy they are now. */
export interface AgentSlots {
  max: number;
  /** Scheduled prompts, continuations and app jobs use at most this many. */
  background_max: number;
  running: number;
  background_running: number;
  waiting: number;
}

/** How agents are bounded (`GET /api/settings`). */
export interface AgentLimits {
  memory: { mode: "cgroup"; max_bytes: number } | { mode: "rlimit"; max_bytes: number; reason: string } | { mode: "off" };
  output_max_bytes: number;
}

export interface Settings {
  default_provider: ProviderId | null;
  claude_version?: string | null;
  codex_version?: string | null;
  sandbox?: SandboxState;
  toolbox?: ToolInfo[];
  agent_defaults?: AgentDefaults;
  /** CLI processes kept between a chat's turns. */
  warm?: { max: number; idle_secs: number; parked: number };
  agent_limits?: AgentLimits;
  agent_slots?: AgentSlots;
}

/** The plan's windows as the provider's CLI last reported them. */
export interface ProviderUsage {
  provider: ProviderId;
  windows: PlanWindow[];
  updated_at: number | null;
}

export const providerUsageKey = (provider: ProviderId) => ["provider-usage", provider] as const;
export const fetchProviderUsage = (provider: ProviderId) => apiFetch<ProviderUsage>(`/api/settings/provider-usage/${provider}`);

/** A window this full (percent) shows a warning in the composer. */
export const NEAR_LIMIT_PERCENT = 80;

/** The window closest to its limit when one is near it (or refused), else null. */
export function nearLimit(windows: PlanWindow[], now: number): PlanWindow | null {
  const live = windows.filter((w) => typeof w.resets_at !== "number" || w.resets_at > now);
  const near = live.filter((w) => w.status === "rejected" || (w.used_percent ?? 0) >= NEAR_LIMIT_PERCENT);
  near.sort((a, b) => (b.status === "rejected" ? 101 : b.used_percent ?? 0) - (a.status === "rejected" ? 101 : a.used_percent ?? 0));
  return near[0] ?? null;
}

/** "17:20" today, "Tue 09:00" within a week, else the date. */
export function resetTime(at: number, now: number): string {
  const date = new Date(at);
  const time = date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (new Date(now).toDateString() === date.toDateString()) return time;
  if (at - now < 6 * 86_400_000) return `${date.toLocaleDateString([], { weekday: "short" })} ${time}`;
  return date.toLocaleDateString();
}

/** The composer's note for a window near its limit. */
export function limitWarning(window: PlanWindow, now: number): string {
  const reset = window.resets_at ? ` · resets ${resetTime(window.resets_at, now)}` : "";
  if (window.status === "rejected") return `${window.label} limit reached${reset}`;
  return `${Math.round(window.used_percent ?? 0)}% of your ${window.label} limit used${reset}`;
}

export const fetchProviders = () => apiFetch<ProviderInfo[]>("/api/auth/providers");
export const fetchProvidersStatus = () => apiFetch<ProvidersStatus>("/api/auth/providers/status");
export const fetchModels = () => apiFetch<ModelsList>("/api/models");
export const fetchSettings = () => apiFetch<Settings>("/api/settings");
export const fetchVersion = () => apiFetch<VersionInfo>("/api/version");

export function saveSettings(body: { default_provider?: ProviderId; agent_defaults?: AgentDefaults }): Promise<unknown> {
  return apiFetch("/api/settings", { method: "POST", body });
}

/** A model's short name for a chip ("Claude Sonnet" → "Sonnet", "GPT-5.5" stays). */
export function shortModel(label: string): string {
  return label.replace(/^Claude\s+/, "");
}

/** `checked: false` with a `warning` when the provider could not be asked (the key is saved). */
export function saveApiKey(provider: ProviderId, apiKey: string): Promise<{ ok: boolean; checked?: boolean; warning?: string }> {
  return apiFetch(`/api/providers/${provider}/api-key`, { method: "POST", body: { api_key: apiKey } });
}

export function disconnectProvider(provider: ProviderId): Promise<{ ok: boolean }> {
  return apiFetch(`/api/providers/${provider}`, { method: "DELETE" });
}

export function startClaudeLogin(): Promise<{ auth_url: string }> {
  return apiFetch("/api/auth/provider/login", { method: "POST" });
}

export function submitClaudeCode(code: string): Promise<{ ok: boolean }> {
  return apiFetch("/api/auth/provider/code", { method: "POST", body: { code } });
}

export function startCodexLogin(): Promise<{ url: string; code: string }> {
  return apiFetch("/api/auth/provider/codex/login", { method: "POST" });
}

export type CodexLoginStatus = { status: "none" | "pending" | "complete" | "failed"; error?: string | null };

export function fetchCodexStatus(): Promise<CodexLoginStatus> {
  return apiFetch("/api/auth/provider/codex/status");
}

/** True when at least one provider is connected (undefined while unknown). */
export function anyConnected(status: ProvidersStatus | undefined): boolean | undefined {
  if (!status) return undefined;
  return Object.values(status.providers).some((p) => p?.connected);
}
