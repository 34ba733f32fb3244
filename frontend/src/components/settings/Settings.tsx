//! Settings (loaded on demand), like a phone's: a list of sections (agents and how to connect
//! them, new chats, memory, schedules, connectors, notifications, appearance, the store, the sandbox, the account, the
//! version), each on its own page. A chat's own options live in its info sheet (`ChatInfo`).

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useId, useRef, useState, type FormEvent } from "react";
import { catalogIndexesKey, fetchCatalogIndexes, saveCatalogIndexes } from "../../api/apps";
import { changePassword, signOutEverywhere } from "../../api/auth";
import { writeToken } from "../../auth/token";
import { ApiError } from "../../api/client";
import {
  disconnectProvider,
  fetchCodexStatus,
  fetchModels,
  fetchProviders,
  fetchProvidersStatus,
  fetchSettings,
  modelsKey,
  providersKey,
  providersStatusKey,
  saveApiKey,
  saveSettings,
  settingsKey,
  startClaudeLogin,
  startCodexLogin,
  submitClaudeCode,
  fetchProviderUsage,
  providerUsageKey,
  resetTime,
  type AgentDefaults,
  type AgentLimits,
  type AgentSlots,
  type ToolInfo,
} from "../../api/settings";
import type { AgentPick, ModelInfo, ProviderId, ProviderInfo, ProvidersStatus } from "../../api/types";
import { SETTINGS_SECTIONS, settingsTitle, type SettingsSection } from "../../shell/router";
import { setTheme, useTheme, type ThemeChoice } from "../../shell/theme";
import { Icon, type IconName } from "../ui/Icon";
import { MemorySection } from "./MemorySettings";
import { effortLevels } from "../chat/ModelPicker";
import { SchedulesSection } from "../schedules/Schedules";
import { ConnectorsSection } from "./ConnectorSettings";
import { GithubSection } from "./GithubSettings";
import NotificationSettings from "./NotificationSettings";
import { DevicesSection } from "./Devices";
import { PublishedSettings } from "./PublishedSettings";
import { UpdateSettings } from "./UpdateSettings";
import { ShellSettings } from "./ShellSettings";
import { ThemeSettings } from "./ThemeSettings";

const errorText = (error: unknown) => (error instanceof ApiError ? error.message : "Something went wrong.");

export interface SettingsProps {
  owner: string;
  /** The section shown; none: the list of sections. */
  section?: SettingsSection | undefined;
  /** Opens a section from the list. */
  onOpenSection?: (section: SettingsSection) => void;
  onSignOut: (everywhere: boolean) => void;
}

/** Each section's one-line description in the list. */
const SECTION_DETAIL: Record<SettingsSection, string> = {
  agents: "Connect Claude Code or Codex",
  defaults: "The agent new chats use",
  memory: "What new chats remember",
  schedules: "App jobs, scheduled prompts, reminders",
  connectors: "Your tools the agent may use (MCP)",
  notifications: "When to tell you on this device",
  appearance: "Light, dark or as the system",
  store: "Where the store finds apps",
  published: "Apps anyone with the link can open",
  sandbox: "What the agent can reach",
  account: "Devices, pairing, sign out, password",
  about: "Version and updates",
};

const SECTION_ICON: Record<SettingsSection, IconName> = {
  agents: "spark",
  defaults: "compose",
  memory: "history",
  schedules: "clock",
  connectors: "external",
  notifications: "bell",
  appearance: "settings",
  store: "apps",
  published: "external",
  sandbox: "shield",
  account: "edit",
  about: "info",
};

/**
 * Settings like a phone's: a list of sections, each its own page (Back and Done live in the top
 * bar). A chat's own options (model, approval policy) are in that chat's info sheet.
 */
export default function Settings({ section, onOpenSection, onSignOut }: SettingsProps) {
  useEffect(() => {
    document.querySelector<HTMLElement>(".settings")?.scrollTo?.({ top: 0 });
  }, [section]);
  return (
    <div className="settings">
      <div className="settings-inner" data-section={section ?? "list"}>
        {section === undefined ? <SectionList onOpen={(s) => onOpenSection?.(s)} /> : <SectionPage section={section} onSignOut={onSignOut} />}
      </div>
    </div>
  );
}

function SectionList({ onOpen }: { onOpen: (section: SettingsSection) => void }) {
  const status = useQuery({ queryKey: providersStatusKey, queryFn: fetchProvidersStatus, retry: false });
  const connected = status.data ? Object.values(status.data.providers).filter((p) => p?.connected).length : null;
  const detail = (section: SettingsSection): string => {
    if (section === "agents" && connected !== null) return connected === 0 ? "Not connected: connect one to start" : `${connected} connected`;
    return SECTION_DETAIL[section];
  };
  return (
    <nav aria-label="Settings sections">
      <ul className="settings-list">
        {SETTINGS_SECTIONS.map((s) => (
          <li key={s}>
            <button type="button" className="settings-row" onClick={() => onOpen(s)}>
              <Icon name={SECTION_ICON[s]} size={20} className="settings-row-icon" />
              <span className="settings-row-text">
                <span className="settings-row-label">{settingsTitle(s)}</span>
                <span className="settings-row-detail">{detail(s)}</span>
              </span>
              {s === "agents" && connected === 0 && <span className="attention-dot" role="img" aria-label="needs attention" />}
              <Icon name="chevron" size={18} className="settings-row-chevron" />
            </button>
          </li>
        ))}
      </ul>
    </nav>
  );
}

function SectionPage({ section, onSignOut }: { section: SettingsSection; onSignOut: (everywhere: boolean) => void }) {
  switch (section) {
    case "agents":
      return <AgentsSection />;
    case "defaults":
      return <DefaultsSection />;
    case "memory":
      return <MemorySection />;
    case "schedules":
      return <SchedulesSection />;
    case "connectors":
      return (
        <>
          <ConnectorsSection />
          <GithubSection />
        </>
      );
    case "notifications":
      return <NotificationSettings />;
    case "appearance":
      return <AppearanceSection />;
    case "store":
      return <StoreSection />;
    case "published":
      return (
        <section className="settings-section" aria-labelledby="s-published">
          <h2 id="s-published" className="settings-title">
            Published pages
          </h2>
          <PublishedSettings />
        </section>
      );
    case "sandbox":
      return <SandboxSection />;
    case "account":
      return (
        <section className="settings-section" aria-labelledby="s-sessions">
          <h2 id="s-sessions" className="settings-title">
            Account
          </h2>
          <SessionsRow onSignOut={onSignOut} />
          <DevicesSection onSignedOutHere={() => onSignOut(false)} />
        </section>
      );
    case "about":
      return <VersionSection />;
  }
}

function AgentsSection() {
  const providers = useQuery({ queryKey: providersKey, queryFn: fetchProviders, retry: false });
  const status = useQuery({ queryKey: providersStatusKey, queryFn: fetchProvidersStatus, retry: false });

  useEffect(() => {
    const onVisible = () => {
      if (document.visibilityState === "visible") void status.refetch();
    };
    document.addEventListener("visibilitychange", onVisible);
    return () => document.removeEventListener("visibilitychange", onVisible);
  }, [status]);

  const list: ProviderInfo[] = providers.data ?? [
    { id: "claude", name: "Claude Code", available: false, version: null },
    { id: "codex", name: "Codex", available: false, version: null },
  ];

  return (
    <section className="settings-section" aria-labelledby="s-providers">
      <h2 id="s-providers" className="settings-title">
        Agents
      </h2>
      <p className="settings-lead">
        Möbius runs these command-line agents on your server, signed in with your own account or an API key. Signing in uses your
        subscription; an API key is billed by the provider per use.
      </p>
      {providers.isError && <p className="settings-error" role="alert">Couldn't load the agent list: {errorText(providers.error)}</p>}
      <div className="provider-list">
        {list.map((p) => (
          <ProviderCard key={p.id} provider={p} status={status.data} />
        ))}
      </div>
    </section>
  );
}

function ProviderCard({ provider, status }: { provider: ProviderInfo; status: ProvidersStatus | undefined }) {
  const queryClient = useQueryClient();
  const state = status?.providers[provider.id];
  const connected = state?.connected === true;
  const [open, setOpen] = useState(false);
  const refresh = () => queryClient.invalidateQueries({ queryKey: providersStatusKey });
  const disconnect = useMutation({ mutationFn: () => disconnectProvider(provider.id), onSettled: refresh });
  const headingId = useId();

  return (
    <article className="provider" aria-labelledby={headingId}>
      <div className="provider-head">
        <div className="provider-name">
          <h3 id={headingId}>{provider.name}</h3>
          <p className="provider-meta">
            {provider.available ? `Installed · ${provider.version ?? "unknown version"}` : "Not installed on this server"}
          </p>
        </div>
        <span className="provider-status" data-connected={connected || undefined}>
          {connected ? `Connected${state?.method ? ` · ${state.method.replace(/_/g, " ")}` : ""}` : "Not connected"}
        </span>
      </div>
      {!connected && <ProviderAbout provider={provider.id} />}
      <div className="provider-actions">
        {connected ? (
          <>
            <button type="button" className="btn btn-secondary btn-small" onClick={() => setOpen((o) => !o)} aria-expanded={open}>
              Reconnect
            </button>
            <button type="button" className="btn btn-ghost btn-small" onClick={() => disconnect.mutate()} disabled={disconnect.isPending}>
              {disconnect.isPending ? "Disconnecting…" : "Disconnect"}
            </button>
          </>
        ) : (
          <button type="button" className="btn btn-primary btn-small" onClick={() => setOpen((o) => !o)} aria-expanded={open} disabled={!provider.available}>
            Connect {provider.id === "claude" ? "Claude" : "Codex"}
          </button>
        )}
      </div>
      {disconnect.isError && <p className="settings-error" role="alert">{errorText(disconnect.error)}</p>}
      {open && (
        <div className="provider-connect">
          {provider.id === "claude" ? <ClaudeSignIn onDone={() => void refresh().then(() => setOpen(false))} /> : <CodexSignIn onDone={() => void refresh().then(() => setOpen(false))} />}
          <ApiKeyForm provider={provider.id} onDone={() => void refresh().then(() => setOpen(false))} />
        </div>
      )}
    </article>
  );
}

/** Where each provider's keys are made, and its sign-in's name. */
const KEY_PAGES: Record<ProviderId, { href: string; name: string; account: string }> = {
  claude: { href: "https://console.anthropic.com/settings/keys", name: "Anthropic Console", account: "a Claude Pro or Max account" },
  codex: { href: "https://platform.openai.com/api-keys", name: "OpenAI dashboard", account: "a ChatGPT Plus, Pro or Team account" },
};

/** What connecting needs, before the owner opens the form: an account to sign in with, or a key and where to make one. */
function ProviderAbout({ provider }: { provider: ProviderId }) {
  const page = KEY_PAGES[provider];
  return (
    <p className="provider-about">
      Sign in with {page.account}, or paste an API key: make one in the{" "}
      <a href={page.href} target="_blank" rel="noreferrer">
        {page.name}
      </a>{" "}
      under API keys.
    </p>
  );
}

function ApiKeyForm({ provider, onDone }: { provider: ProviderId; onDone: () => void }) {
  const [key, setKey] = useState("");
  const id = useId();
  const [warning, setWarning] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: () => saveApiKey(provider, key.trim()),
    onSuccess: (result) => (result.warning ? setWarning(result.warning) : onDone()),
  });
  const keyPage = KEY_PAGES[provider];
  if (warning) {
    return (
      <div className="connect-block">
        <p className="settings-note" role="status">
          {warning}
        </p>
        <button type="button" className="btn btn-secondary btn-small" onClick={onDone}>
          Done
        </button>
      </div>
    );
  }
  return (
    <form
      className="connect-block"
      onSubmit={(e: FormEvent) => {
        e.preventDefault();
        if (key.trim()) save.mutate();
      }}
    >
      <label htmlFor={id} className="connect-label">
        Or use an API key
      </label>
      <div className="inline-field">
        <input
          id={id}
          className="text-input"
          type="password"
          autoComplete="off"
          spellCheck={false}
          placeholder={provider === "claude" ? "sk-ant-…" : "sk-…"}
          value={key}
          onChange={(e) => setKey(e.target.value)}
        />
        <button type="submit" className="btn btn-primary btn-small" disabled={!key.trim() || save.isPending} aria-busy={save.isPending}>
          {save.isPending ? "Saving…" : "Save key"}
        </button>
      </div>
      <p className="connect-hint">
        Create one in the{" "}
        <a href={keyPage.href} target="_blank" rel="noreferrer">
          {keyPage.name}
        </a>
        . It is checked with the provider before it is saved.
      </p>
      {save.isError && <p className="settings-error" role="alert">{errorText(save.error)}</p>}
    </form>
  );
}

function ClaudeSignIn({ onDone }: { onDone: () => void }) {
  const [authUrl, setAuthUrl] = useState<string | null>(null);
  const [code, setCode] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const id = useId();

  async function start() {
    setError(null);
    // Reserve the tab during the click itself, or the popup blocker eats it after the await.
    const popup = window.open("", "_blank");
    setBusy(true);
    try {
      const { auth_url } = await startClaudeLogin();
      setAuthUrl(auth_url);
      if (popup) popup.location.href = auth_url;
    } catch (e) {
      popup?.close();
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await submitClaudeCode(code.trim());
      onDone();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <div className="connect-block">
      <p className="connect-label">Sign in with your Claude account</p>
      {authUrl === null ? (
        <button type="button" className="btn btn-secondary btn-small" onClick={() => void start()} disabled={busy}>
          {busy ? "Opening…" : "Sign in with Claude"}
        </button>
      ) : (
        <form onSubmit={(e) => void submit(e)} className="connect-steps">
          <p className="connect-help">
            A sign-in page opened in a new tab.{" "}
            <a href={authUrl} target="_blank" rel="noopener noreferrer">
              Open it again
            </a>
            . When it shows a code, paste it here.
          </p>
          <label htmlFor={id} className="visually-hidden">
            Code from Anthropic
          </label>
          <div className="inline-field">
            <input id={id} className="text-input" placeholder="Paste the code" value={code} onChange={(e) => setCode(e.target.value)} autoComplete="off" spellCheck={false} />
            <button type="submit" className="btn btn-primary btn-small" disabled={!code.trim() || busy} aria-busy={busy}>
              Connect
            </button>
          </div>
        </form>
      )}
      {error && <p className="settings-error" role="alert">{error}</p>}
    </div>
  );
}

const CODEX_POLL_MS = 3_000;
const CODEX_MAX_POLLS = 60;

function CodexSignIn({ onDone }: { onDone: () => void }) {
  const [device, setDevice] = useState<{ url: string; code: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  const [busy, setBusy] = useState(false);
  const generation = useRef(0);

  useEffect(() => {
    if (!device) return;
    const mine = ++generation.current;
    let polls = 0;
    let timer: ReturnType<typeof setTimeout>;
    const poll = async () => {
      polls += 1;
      try {
        const status = await fetchCodexStatus();
        if (mine !== generation.current) return;
        if (status.status === "complete") {
          setDevice(null);
          onDone();
          return;
        }
        if (status.status === "failed") {
          setDevice(null);
          setError(status.error ?? "Sign-in failed. Try again.");
          return;
        }
      } catch {
        // A missed poll is retried on the next tick.
      }
      if (mine !== generation.current) return;
      if (polls >= CODEX_MAX_POLLS) {
        setDevice(null);
        setError("The code expired before sign-in finished. Start again.");
        return;
      }
      timer = setTimeout(() => void poll(), CODEX_POLL_MS);
    };
    timer = setTimeout(() => void poll(), CODEX_POLL_MS);
    const counter = generation;
    return () => {
      counter.current++;
      clearTimeout(timer);
    };
  }, [device, onDone]);

  async function start() {
    setBusy(true);
    setError(null);
    try {
      setDevice(await startCodexLogin());
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }

  async function copyAndOpen() {
    if (!device) return;
    try {
      await navigator.clipboard.writeText(device.code);
      setCopied(true);
    } catch {
      setCopied(false);
    }
    window.open(device.url, "_blank", "noopener");
  }

  return (
    <div className="connect-block">
      <p className="connect-label">Sign in with ChatGPT</p>
      {device === null ? (
        <>
          <p className="connect-help">Turn on “device code authorization” in ChatGPT's security settings first.</p>
          <button type="button" className="btn btn-secondary btn-small" onClick={() => void start()} disabled={busy}>
            {busy ? "Starting…" : "Get a sign-in code"}
          </button>
        </>
      ) : (
        <div className="connect-steps">
          <p className="connect-help">Enter this code on the ChatGPT page:</p>
          <p className="device-code" aria-label={`Sign-in code ${device.code.split("").join(" ")}`}>
            {device.code}
          </p>
          <div className="inline-actions">
            <button type="button" className="btn btn-primary btn-small" onClick={() => void copyAndOpen()}>
              <Icon name="copy" size={16} /> {copied ? "Copied — open again" : "Copy code and open ChatGPT"}
            </button>
            <button type="button" className="btn btn-ghost btn-small" onClick={() => setDevice(null)}>
              Cancel
            </button>
          </div>
          <p className="connect-help" role="status">
            Waiting for you to finish signing in…
          </p>
        </div>
      )}
      {error && <p className="settings-error" role="alert">{error}</p>}
    </div>
  );
}

/** What new chats start with. A chat's own model and approval policy are in its info sheet. */
function DefaultsSection() {
  const queryClient = useQueryClient();
  const providers = useQuery({ queryKey: providersKey, queryFn: fetchProviders, retry: false });
  const status = useQuery({ queryKey: providersStatusKey, queryFn: fetchProvidersStatus, retry: false });
  const models = useQuery({ queryKey: modelsKey, queryFn: fetchModels, retry: false, staleTime: 300_000 });
  const saveDefault = useMutation({
    mutationFn: (provider: ProviderId) => saveSettings({ default_provider: provider }),
    onSettled: () => queryClient.invalidateQueries({ queryKey: providersStatusKey }),
  });
  const defaultId = useId();
  const list = providers.data ?? [];

  return (
    <section className="settings-section" aria-labelledby="s-defaults">
      <h2 id="s-defaults" className="settings-title">
        New chats
      </h2>
      <div className="setting-row">
        <label htmlFor={defaultId}>New chats use</label>
        <select
          id={defaultId}
          className="select"
          value={status.data?.default_provider ?? ""}
          onChange={(e) => saveDefault.mutate(e.target.value as ProviderId)}
          disabled={!status.data}
        >
          {status.data?.default_provider === null && <option value="">Choose…</option>}
          {list.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name}
            </option>
          ))}
        </select>
      </div>
      {list
        .filter((p) => status.data?.providers[p.id]?.connected)
        .map((p) => (
          <div key={p.id}>
            <ProviderDefaults provider={p} models={models.data?.providers[p.id] ?? []} />
            <PlanWindows provider={p} />
          </div>
        ))}
      <p className="settings-lead">A chat's own model, effort and whether the agent asks before acting are in the chat's info sheet (the ⓘ beside its title).</p>
      {saveDefault.isError && (
        <p className="settings-error" role="alert">
          {errorText(saveDefault.error)}
        </p>
      )}
    </section>
  );
}

/** The plan's windows the provider's CLI last reported (nothing until a turn ran on a plan that
 *  reports them: Claude subscriptions, Codex). */
function PlanWindows({ provider }: { provider: ProviderInfo }) {
  const usage = useQuery({ queryKey: providerUsageKey(provider.id), queryFn: () => fetchProviderUsage(provider.id), retry: false });
  const windows = usage.data?.windows ?? [];
  if (windows.length === 0) return null;
  const now = usage.dataUpdatedAt;
  return (
    <div className="setting-stack" data-plan={provider.id}>
      <p className="settings-lead">{provider.name} plan usage</p>
      <ul className="plan-windows">
        {windows.map((w) => (
          <li key={w.id}>
            <span>{w.label}</span>
            <meter min={0} max={100} value={w.used_percent ?? 0} aria-label={`${w.label} used`} />
            <span>
              {w.status === "rejected" ? "limit reached" : `${Math.round(w.used_percent ?? 0)}%`}
              {w.resets_at ? ` · resets ${resetTime(w.resets_at, now)}` : ""}
            </span>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** The model and effort new turns of `provider` run with when a chat picks none. */
function ProviderDefaults({ provider, models }: { provider: ProviderInfo; models: ModelInfo[] }) {
  const queryClient = useQueryClient();
  const settings = useQuery({ queryKey: settingsKey, queryFn: fetchSettings, retry: false });
  const defaults: AgentDefaults = settings.data?.agent_defaults ?? {};
  const pick = defaults[provider.id] ?? {};
  const save = useMutation({
    mutationFn: (next: AgentPick) => saveSettings({ agent_defaults: { ...defaults, [provider.id]: next } }),
    onSettled: () => queryClient.invalidateQueries({ queryKey: settingsKey }),
  });
  const modelId = useId();
  const effortId = useId();
  const levels = effortLevels(models, pick.model ?? null);
  return (
    <>
      <div className="setting-row">
        <label htmlFor={modelId}>{provider.name}: default model</label>
        <select
          id={modelId}
          className="select"
          value={pick.model ?? ""}
          disabled={!settings.data || save.isPending}
          onChange={(e) => save.mutate({ model: e.target.value || null, effort: pick.effort ?? null })}
        >
          <option value="">The CLI's default</option>
          {models.map((m) => (
            <option key={m.id} value={m.id}>
              {m.label}
            </option>
          ))}
        </select>
      </div>
      <div className="setting-row">
        <label htmlFor={effortId}>{provider.name}: default effort</label>
        <select
          id={effortId}
          className="select"
          value={pick.effort ?? ""}
          disabled={!settings.data || save.isPending || (levels.length === 0 && !pick.effort)}
          onChange={(e) => save.mutate({ model: pick.model ?? null, effort: e.target.value || null })}
        >
          <option value="">The CLI's default</option>
          {[...new Set([...levels, ...(pick.effort ? [pick.effort] : [])])].map((level) => (
            <option key={level} value={level}>
              {level}
            </option>
          ))}
        </select>
      </div>
      {save.isError && <p className="settings-error" role="alert">{errorText(save.error)}</p>}
    </>
  );
}

const THEMES: { value: ThemeChoice; label: string }[] = [
  { value: "system", label: "System" },
  { value: "light", label: "Light" },
  { value: "dark", label: "Dark" },
];

function AppearanceSection() {
  const theme = useTheme();
  return (
    <section className="settings-section" aria-labelledby="s-appearance">
      <h2 id="s-appearance" className="settings-title">
        Appearance
      </h2>
      <div className="segmented" role="radiogroup" aria-labelledby="s-appearance">
        {THEMES.map((t) => (
          <label key={t.value} className="segment" data-checked={theme === t.value || undefined}>
            <input type="radio" name="theme" value={t.value} checked={theme === t.value} onChange={() => setTheme(t.value)} />
            {t.label}
          </label>
        ))}
      </div>
      <ThemeSettings />
      <ShellSettings />
    </section>
  );
}

function SessionsRow({ onSignOut }: { onSignOut: (everywhere: boolean) => void }) {
  const everywhere = useMutation({ mutationFn: signOutEverywhere, onSuccess: () => onSignOut(true) });
  return (
    <div className="setting-stack">
      <p className="settings-lead">Signing out everywhere ends the session on every device, this one included.</p>
      <div className="inline-actions">
        <button type="button" className="btn btn-secondary btn-small" onClick={() => onSignOut(false)}>
          Sign out
        </button>
        <button type="button" className="btn btn-danger-quiet btn-small" onClick={() => everywhere.mutate()} disabled={everywhere.isPending}>
          {everywhere.isPending ? "Signing out…" : "Sign out everywhere"}
        </button>
      </div>
      {everywhere.isError && <p className="settings-error" role="alert">{errorText(everywhere.error)}</p>}
      <PasswordForm />
    </div>
  );
}

/** A new password signs every other device out (and rotates the server's signing key). */
function PasswordForm() {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const change = useMutation({
    mutationFn: () => changePassword({ current_password: current, new_password: next }),
    onSuccess: (answer) => {
      writeToken(answer.access_token);
      setCurrent("");
      setNext("");
    },
  });
  const currentId = useId();
  const nextId = useId();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    change.mutate();
  };
  return (
    <form className="setting-stack" onSubmit={submit}>
      <label htmlFor={currentId}>Current password</label>
      <input id={currentId} className="text-input" type="password" autoComplete="current-password" value={current} onChange={(e) => setCurrent(e.target.value)} />
      <label htmlFor={nextId}>New password</label>
      <input id={nextId} className="text-input" type="password" autoComplete="new-password" minLength={8} value={next} onChange={(e) => setNext(e.target.value)} />
      <div className="inline-actions">
        <button type="submit" className="btn btn-secondary btn-small" disabled={change.isPending || !current || next.length < 8}>
          {change.isPending ? "Changing…" : "Change password"}
        </button>
      </div>
      {change.isSuccess && <p className="settings-lead" role="status">Password changed. Every other device is signed out.</p>}
      {change.isError && <p className="settings-error" role="alert">{errorText(change.error)}</p>}
    </form>
  );
}

/** What the agent's processes can reach on this server, as the server reports it. */
function SandboxSection() {
  const settings = useQuery({ queryKey: settingsKey, queryFn: fetchSettings, retry: false });
  const sandbox = settings.data?.sandbox;
  return (
    <section className="settings-section" aria-labelledby="s-sandbox">
      <h2 id="s-sandbox" className="settings-title">
        Agent sandbox
      </h2>
      {sandbox === undefined ? (
        <p className="settings-lead">{settings.isError ? `Couldn't load it: ${errorText(settings.error)}` : "Loading…"}</p>
      ) : sandbox.mode === "landlock" ? (
        <>
          <p className="settings-lead" data-sandbox="landlock">
            On: Landlock (ABI {sandbox.abi}). The agent works in its apps, storage, home and scratch folders; the server's keys,
            database and the other agent's sign-in are out of its reach.
          </p>
          {sandbox.signals?.mode === "open" ? (
            <p className="settings-error" role="status" data-signals="open">
              Signals are not contained: {sandbox.signals.reason}. The agent's processes could stop or kill the server, other chats' agents
              and app jobs.
            </p>
          ) : (
            <p className="settings-lead" data-signals="scoped">
              Signals are contained: the agent can stop or kill only its own processes, not the server, other chats' agents or app jobs.
            </p>
          )}
        </>
      ) : (
        <p className="settings-error" role="status" data-sandbox="off">
          Off: {sandbox.reason}. The agent can read every file the server can, including its keys and database.
        </p>
      )}
      {settings.data?.toolbox && <Toolbox tools={settings.data.toolbox} />}
      {settings.data?.agent_limits && <p className="settings-lead" data-memory={settings.data.agent_limits.memory.mode}>{limitsText(settings.data.agent_limits)}</p>}
      {settings.data?.agent_slots && <p className="settings-lead" data-slots={settings.data.agent_slots.max}>{slotsText(settings.data.agent_slots)}</p>}
    </section>
  );
}

/** The tools on the agent's PATH, as the server found them (missing ones say so). */
function Toolbox({ tools }: { tools: ToolInfo[] }) {
  return (
    <div className="setting-stack" data-toolbox>
      <p className="settings-lead">Tools the agent can use</p>
      <ul className="toolbox-list">
        {tools.map((t) => (
          <li key={t.name} data-tool={t.name} data-installed={t.command ? "yes" : "no"}>
            <span className="toolbox-name">{t.name}</span>
            <span className="toolbox-version">{t.command ? (t.version ?? "installed") : "not installed"}</span>
            <span className="toolbox-purpose">{t.purpose}</span>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** How many agents run at once, and who may use how many, in words. */
export function slotsText(slots: AgentSlots): string {
  const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
  const share =
    slots.background_max < slots.max
      ? ` Scheduled prompts, continuations and app jobs use at most ${slots.background_max}, so ${plural(slots.max - slots.background_max, "stays", "stay")} free for you; your turns go first.`
      : "";
  return `At most ${plural(slots.max, "agent runs", "agents run")} at once; more wait their turn.${share} Now: ${slots.running} running, ${slots.waiting} waiting.`;
}

/** How the agent's memory and output are bounded, in words. */
export function limitsText(limits: AgentLimits): string {
  const mib = (bytes: number) => (bytes >= 1 << 30 ? `${(bytes / (1 << 30)).toFixed(bytes % (1 << 30) === 0 ? 0 : 1)} GiB` : `${Math.round(bytes / (1 << 20))} MiB`);
  const output = `A turn may print at most ${mib(limits.output_max_bytes)}.`;
  const memory = limits.memory;
  switch (memory.mode) {
    case "cgroup":
      return `Memory: ${mib(memory.max_bytes)} for each agent and everything it starts (a cgroup); a turn past it is stopped. ${output}`;
    case "rlimit":
      return `Memory: ${mib(memory.max_bytes)} for each agent process (a per-process limit: ${memory.reason}); a process past it fails to allocate. ${output}`;
    case "off":
      return `Memory: no ceiling. ${output}`;
  }
}

function VersionSection() {
  return (
    <section className="settings-section" aria-labelledby="s-about">
      <h2 id="s-about" className="settings-title">
        About
      </h2>
      <UpdateSettings />
    </section>
  );
}

/** The store's catalog indexes, one address per line (empty: the default catalog). */
function StoreSection() {
  const queryClient = useQueryClient();
  const indexes = useQuery({ queryKey: catalogIndexesKey, queryFn: fetchCatalogIndexes, retry: false });
  const [draft, setDraft] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: (list: string[] | null) => saveCatalogIndexes(list),
    onSuccess: (saved) => {
      queryClient.setQueryData(catalogIndexesKey, saved);
      void queryClient.invalidateQueries({ queryKey: ["catalog"] });
      setDraft(null);
    },
  });
  const fieldId = useId();
  const current = indexes.data?.indexes.join("\n") ?? "";
  const text = draft ?? current;
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    const list = text
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean);
    save.mutate(list.length > 0 ? list : null);
  };
  return (
    <section className="settings-section" aria-labelledby="s-store">
      <h2 id="s-store" className="settings-title">
        App store
      </h2>
      <p className="settings-lead">The catalogs the store lists apps from: https:// addresses of catalog.json files, one per line.</p>
      {indexes.isError && <p className="settings-error" role="alert">Couldn't load the catalogs: {errorText(indexes.error)}</p>}
      <form className="setting-stack" onSubmit={onSubmit}>
        <label htmlFor={fieldId} className="field-label">
          Catalogs
        </label>
        <textarea id={fieldId} className="field-input catalog-indexes" rows={3} value={text} spellCheck={false} onChange={(e) => setDraft(e.target.value)} />
        {save.isError && <p className="settings-error" role="alert">{errorText(save.error)}</p>}
        <div className="inline-actions">
          <button type="submit" className="btn btn-primary btn-small" disabled={save.isPending || draft === null}>
            Save
          </button>
          <button
            type="button"
            className="btn btn-secondary btn-small"
            disabled={save.isPending || (indexes.data !== undefined && current === indexes.data.default)}
            onClick={() => save.mutate(null)}
          >
            Use the default catalog
          </button>
        </div>
      </form>
    </section>
  );
}
