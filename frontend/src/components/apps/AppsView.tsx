//! The Apps view (loaded on demand): installed apps with their update marks (a check runs when
//! the view opens), each app's update preview, version history with one-tap restore, data and
//! uninstall choices; the store (catalog indexes, search); and installing from a pasted link or
//! a `/install?source=` deep link, always through the review card. An app with `manage_apps`
//! (a store written as a mini-app) lands here too: its installs on the review card, its updates
//! on the update preview and its uninstalls on the keep-or-delete choice (`manage`).

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useId, useRef, useState, type FormEvent } from "react";
import {
  appsKey,
  applyUpdate,
  catalogKey,
  checkUpdates,
  deleteAppData,
  fetchCatalog,
  fetchHistory,
  fetchUpdatePreview,
  historyKey,
  installApp,
  previewKey,
  restoreVersion,
  reviewSource,
  uninstallApp,
  type AppSummary,
  type CatalogEntry,
  type Permission,
  type PermissionChange,
} from "../../api/apps";
import { ApiError } from "../../api/client";
import type { ManageAction } from "../../apps/host";
import { saveDraft } from "../../chat/persist";
import { navigate, openApp } from "../../shell/router";
import { fetchSchedules, runScheduleNow, schedulesKey } from "../../api/schedules";
import { cadenceText, nextText, STATUS_TEXT } from "../../schedules/cadence";
import { Icon } from "../ui/Icon";
import { Sheet } from "../ui/Sheet";
import { AppSecrets } from "./AppSecrets";

const errorText = (error: unknown) => (error instanceof ApiError ? error.message : "Something went wrong. Try again.");
const shortCommit = (commit: string) => commit.slice(0, 7);
const when = (ms: number) => new Date(ms).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });

export interface AppsViewProps {
  tab: "installed" | "store";
  /** A source to review (the deep link, or a pasted link). */
  source?: string | undefined;
  /** An installed app whose update preview or uninstall choice to open (asked for by an app with `manage_apps`). */
  manage?: { action: ManageAction; appId: number } | undefined;
  apps: AppSummary[] | undefined;
  owner: string;
  online: boolean;
  showToast: (toast: { text: string }) => void;
}

export default function AppsView({ tab, source, manage, apps, owner, online, showToast }: AppsViewProps) {
  const queryClient = useQueryClient();
  const [updating, setUpdating] = useState<AppSummary | null>(null);
  const requested = manage?.action === "update" ? (apps?.find((a) => a.id === manage.appId) ?? null) : null;
  const shownUpdate = updating ?? requested;
  const focus = manage?.action === "uninstall" ? manage.appId : null;
  // Leaves `?update=`/`?uninstall=` once the owner has answered, so Back and reloads do not ask again.
  const doneManaging = () => {
    if (manage) navigate({ name: "apps", tab: "installed" }, { replace: true });
  };

  // Opening the view asks each installed app's source for a new release (the server answers
  // from a check made in the last minute, and runs one daily anyway).
  useEffect(() => {
    if (!online) return;
    let live = true;
    checkUpdates()
      .then((summary) => {
        if (live && summary.ran) void queryClient.invalidateQueries({ queryKey: appsKey });
      })
      .catch(() => undefined);
    return () => {
      live = false;
    };
  }, [online, queryClient]);

  const review = (src: string) => navigate({ name: "apps", tab, source: src });

  return (
    <div className="apps-view">
      <div className="apps-inner">
        <div className="apps-tabs" role="tablist" aria-label="Apps">
          <button type="button" role="tab" aria-selected={tab === "installed"} className="apps-tab" onClick={() => navigate({ name: "apps", tab: "installed" }, { replace: true })}>
            Installed
          </button>
          <button type="button" role="tab" aria-selected={tab === "store"} className="apps-tab" onClick={() => navigate({ name: "apps", tab: "store" }, { replace: true })}>
            Store
          </button>
        </div>
        <InstallFromLink disabled={!online} onReview={review} />
        {tab === "installed" && <CheckNow online={online} available={apps?.filter((a) => a.update?.available).length ?? 0} />}
        {tab === "installed" ? (
          <InstalledList
            key={focus ?? "all"}
            apps={apps}
            online={online}
            onUpdate={setUpdating}
            owner={owner}
            showToast={showToast}
            focus={focus}
            onFocusDone={doneManaging}
          />
        ) : (
          <Store online={online} onReview={review} onUpdate={(id) => setUpdating(apps?.find((a) => a.id === id) ?? null)} />
        )}
      </div>
      {source !== undefined && (
        <ReviewSheet
          source={source}
          onClose={() => navigate({ name: "apps", tab }, { replace: true })}
          onInstalled={(app) => {
            queryClient.setQueryData<AppSummary[]>(appsKey, (list) => [...(list ?? []).filter((a) => a.id !== app.id), app]);
            void queryClient.invalidateQueries({ queryKey: appsKey });
            showToast({ text: `Installed “${app.name}”` });
            navigate({ name: "apps", tab: "installed" }, { replace: true });
            openApp(app.id);
          }}
        />
      )}
      {shownUpdate && (
        <UpdateSheet
          app={shownUpdate}
          owner={owner}
          onClose={() => {
            setUpdating(null);
            doneManaging();
          }}
          showToast={showToast}
        />
      )}
    </div>
  );
}

function CheckNow({ online, available }: { online: boolean; available: number }) {
  const queryClient = useQueryClient();
  const check = useMutation({
    mutationFn: () => checkUpdates(true),
    onSettled: () => queryClient.invalidateQueries({ queryKey: appsKey }),
  });
  return (
    <div className="apps-check">
      <span className="apps-check-text" role="status">
        {check.isPending
          ? "Checking for updates…"
          : check.isError
            ? errorText(check.error)
            : available > 0
              ? `${available} ${available === 1 ? "update" : "updates"} available.`
              : check.isSuccess
                ? "Everything is up to date."
                : ""}
      </span>
      <button type="button" className="btn btn-ghost btn-small" onClick={() => check.mutate()} disabled={!online || check.isPending}>
        <Icon name="refresh" size={16} /> Check for updates
      </button>
    </div>
  );
}

function InstallFromLink({ disabled, onReview }: { disabled: boolean; onReview: (source: string) => void }) {
  const [value, setValue] = useState("");
  const id = useId();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const source = value.trim();
    if (source) onReview(source);
  };
  return (
    <form className="install-link" onSubmit={submit}>
      <label htmlFor={id} className="field-label">
        Install from a link
      </label>
      <div className="inline-field">
        <input
          id={id}
          className="field-input"
          type="text"
          inputMode="url"
          autoCapitalize="off"
          autoCorrect="off"
          spellCheck={false}
          placeholder="https://github.com/someone/app.git"
          value={value}
          onChange={(e) => setValue(e.target.value)}
        />
        <button type="submit" className="btn btn-primary" disabled={disabled || !value.trim()}>
          Review
        </button>
      </div>
      <p className="field-hint">Nothing is installed until you have seen what the app asks for.</p>
    </form>
  );
}

function PermissionList({ permissions, changes }: { permissions: Permission[]; changes?: PermissionChange[] }) {
  if (permissions.length === 0 && !changes?.length) {
    return <p className="review-quiet">It asks for nothing beyond its own storage.</p>;
  }
  const changed = new Map((changes ?? []).map((c) => [c.key, c]));
  const removed = (changes ?? []).filter((c) => c.change === "removed");
  return (
    <ul className="perm-list">
      {permissions.map((p) => {
        const change = changed.get(p.key);
        return (
          <li key={p.key} className="perm" data-level={p.level} data-change={change?.change} data-effective={p.effective || undefined}>
            <span className="perm-title">
              {p.title}
              {change && <span className="perm-badge">{change.change === "added" ? "New" : "Changed"}</span>}
              {!p.effective && <span className="perm-badge perm-badge-quiet">Not available here</span>}
            </span>
            <span className="perm-detail">{p.detail}</span>
            {change?.before && <span className="perm-detail perm-before">Before: {change.before.title}</span>}
          </li>
        );
      })}
      {removed.map((c) => (
        <li key={`removed-${c.key}`} className="perm" data-change="removed">
          <span className="perm-title">
            {c.title}
            <span className="perm-badge perm-badge-quiet">No longer asked</span>
          </span>
        </li>
      ))}
    </ul>
  );
}

function AppBadge({ name, icon, theme }: { name: string; icon: string | null; theme: string | null }) {
  if (icon) return <img className="review-icon" src={icon} alt="" width={64} height={64} />;
  return (
    <span className="review-icon review-icon-letter" style={{ background: theme ?? undefined }} aria-hidden="true">
      {(name.match(/[A-Za-z0-9]/)?.[0] ?? "?").toUpperCase()}
    </span>
  );
}

function ReviewSheet({ source, onClose, onInstalled }: { source: string; onClose: () => void; onInstalled: (app: AppSummary) => void }) {
  // Fetched afresh each time the card opens (the source, or what is installed, may have moved).
  const review = useQuery({ queryKey: ["review", source], queryFn: () => reviewSource(source), retry: false, gcTime: 0 });
  const install = useMutation({
    mutationFn: () => installApp(source, review.data?.commit ?? null),
    onSuccess: (result) => onInstalled(result.app),
  });
  const data = review.data;
  return (
    <Sheet label="Review the app" onClose={onClose}>
      <div className="review" aria-busy={review.isPending}>
        {review.isPending && (
          <div className="review-loading" role="status">
            <span className="skeleton review-icon" />
            <p>Fetching the app from {source}…</p>
          </div>
        )}
        {review.isError && (
          <div className="review-error" role="alert">
            <Icon name="alert" size={22} />
            <div>
              <p className="review-error-title">This can't be installed</p>
              <p>{errorText(review.error)}</p>
              <p className="review-source">{source}</p>
            </div>
          </div>
        )}
        {data && (
          <>
            <header className="review-head">
              <AppBadge name={data.name} icon={data.icon} theme={data.theme_color} />
              <div>
                <h2 className="review-name">{data.name}</h2>
                <p className="review-meta">
                  Version {data.version}
                  {data.author && <> · by {data.author}</>}
                </p>
              </div>
            </header>
            <p className="review-description">{data.description}</p>
            <dl className="review-facts">
              <dt>Source</dt>
              <dd className="review-source">{data.source}</dd>
              <dt>Commit</dt>
              <dd>
                <code>{shortCommit(data.commit)}</code>
              </dd>
            </dl>
            <h3 className="review-section">What it asks for</h3>
            <PermissionList permissions={data.permissions} />
            {data.existing && !data.existing.uninstalled && (
              <p className="review-note" role="status">
                {data.existing.name} {data.existing.version} is already installed. Update it from the Installed list instead.
              </p>
            )}
            {data.existing?.uninstalled && <p className="review-note">You uninstalled this app before and kept its data: installing brings it back.</p>}
            {data.warnings.length > 0 && (
              <details className="review-warnings">
                <summary>Notes for the app's author ({data.warnings.length})</summary>
                <ul>
                  {data.warnings.map((w) => (
                    <li key={w}>{w}</li>
                  ))}
                </ul>
              </details>
            )}
            {install.isError && (
              <p className="review-error-inline" role="alert">
                {errorText(install.error)}
              </p>
            )}
          </>
        )}
        <div className="review-actions">
          <button type="button" className="btn btn-secondary" onClick={onClose}>
            Cancel
          </button>
          {data && !(data.existing && !data.existing.uninstalled) && (
            <button type="button" className="btn btn-primary" onClick={() => install.mutate()} disabled={install.isPending} aria-busy={install.isPending}>
              {install.isPending ? "Installing…" : "Install"}
            </button>
          )}
        </div>
      </div>
    </Sheet>
  );
}

function UpdateSheet({ app, owner, onClose, showToast }: { app: AppSummary; owner: string; onClose: () => void; showToast: (t: { text: string }) => void }) {
  const queryClient = useQueryClient();
  const preview = useQuery({ queryKey: previewKey(app.id), queryFn: ({ signal }) => fetchUpdatePreview(app.id, signal), retry: false, staleTime: 0 });
  const apply = useMutation({
    mutationFn: () => applyUpdate(app.id, preview.data?.commit ?? null),
    onSuccess: (result) => {
      void queryClient.invalidateQueries({ queryKey: appsKey });
      void queryClient.invalidateQueries({ queryKey: historyKey(app.id) });
      if (result.mode === "conflict" && result.resolver_chat_id) {
        if (result.draft) saveDraft(owner, result.resolver_chat_id, result.draft);
        onClose();
        navigate({ name: "chat", id: result.resolver_chat_id });
        return;
      }
      showToast({ text: result.mode === "updated" ? `Updated “${result.app.name}” to ${result.app.version}` : `“${app.name}” is up to date` });
      onClose();
    },
  });
  const data = preview.data;
  const conflict = (data?.conflict_paths.length ?? 0) > 0;
  return (
    <Sheet label={`Update ${app.name}`} onClose={onClose}>
      <div className="review" aria-busy={preview.isPending}>
        <header className="review-head">
          <img className="review-icon" src={app.icon_url} alt="" width={64} height={64} />
          <div>
            <h2 className="review-name">Update {app.name}</h2>
            <p className="review-meta">
              {data ? (
                <>
                  {data.current_version} → <strong>{data.version ?? "?"}</strong>
                </>
              ) : (
                `Installed: ${app.version}`
              )}
            </p>
          </div>
        </header>
        {preview.isPending && <p role="status">Fetching the new release…</p>}
        {preview.isError && (
          <p className="review-error-inline" role="alert">
            {errorText(preview.error)}
          </p>
        )}
        {data?.up_to_date && <p role="status">{app.name} is up to date.</p>}
        {data && !data.up_to_date && (
          <>
            {data.manifest_error && (
              <div className="review-error" role="alert">
                <Icon name="alert" size={22} />
                <div>
                  <p className="review-error-title">This release can't be installed</p>
                  <p>{data.manifest_error}</p>
                  <p>The installed version keeps running.</p>
                </div>
              </div>
            )}
            {data.permission_changes.length > 0 && (
              <div className="update-perm-changes">
                <h3 className="review-section">It asks for something new</h3>
                <PermissionList permissions={data.permission_changes.filter((c) => c.change !== "removed")} changes={data.permission_changes} />
              </div>
            )}
            <h3 className="review-section">
              {data.commits.length} {data.commits.length === 1 ? "change" : "changes"}
              {data.more_commits ? " (and more)" : ""}
            </h3>
            <ul className="update-commits">
              {data.commits.map((c) => (
                <li key={c.commit}>
                  <span className="update-commit-summary">{c.summary || "(no description)"}</span>
                  <span className="update-commit-meta">
                    {c.author} · {when(c.at)} · <code>{shortCommit(c.commit)}</code>
                  </span>
                </li>
              ))}
            </ul>
            <details className="update-files">
              <summary>
                {data.files.length}
                {data.more_files ? "+" : ""} {data.files.length === 1 ? "file" : "files"} changed
              </summary>
              <ul>
                {data.files.map((f) => (
                  <li key={f.path}>
                    <code>{f.path}</code> <span className="update-file-stat">{f.status}{f.additions + f.deletions > 0 ? ` +${f.additions} −${f.deletions}` : ""}</span>
                  </li>
                ))}
              </ul>
            </details>
            {conflict && (
              <p className="review-note" role="status">
                You changed {data.conflict_paths.join(", ")} too. Applying opens a chat where the agent merges both; the installed version keeps running until
                then.
              </p>
            )}
            {apply.isError && (
              <p className="review-error-inline" role="alert">
                {errorText(apply.error)}
              </p>
            )}
          </>
        )}
        <div className="review-actions">
          <button type="button" className="btn btn-secondary" onClick={onClose}>
            {data?.up_to_date ? "Close" : "Not now"}
          </button>
          {data && !data.up_to_date && !data.manifest_error && (
            <button type="button" className="btn btn-primary" onClick={() => apply.mutate()} disabled={apply.isPending} aria-busy={apply.isPending}>
              {apply.isPending ? "Updating…" : conflict ? "Resolve with the agent" : "Apply update"}
            </button>
          )}
        </div>
      </div>
    </Sheet>
  );
}

function InstalledList({
  apps,
  online,
  onUpdate,
  owner,
  showToast,
  focus,
  onFocusDone,
}: {
  apps: AppSummary[] | undefined;
  online: boolean;
  onUpdate: (app: AppSummary) => void;
  owner: string;
  showToast: (t: { text: string }) => void;
  /** The app whose uninstall choice opens at once. */
  focus: number | null;
  onFocusDone: () => void;
}) {
  const [open, setOpen] = useState<number | null>(focus);
  if (apps === undefined) return <p className="apps-empty">Loading your apps…</p>;
  if (apps.length === 0) return <p className="apps-empty">No apps yet. Ask the agent to build one, or install one from the store or a link.</p>;
  const sorted = [...apps].sort((a, b) => Number(b.update?.available ?? false) - Number(a.update?.available ?? false) || a.name.localeCompare(b.name));
  return (
    <ul className="apps-list" aria-label="Installed apps">
      {sorted.map((app) => (
        <InstalledRow
          key={app.id}
          app={app}
          online={online}
          expanded={open === app.id}
          onToggle={() => setOpen(open === app.id ? null : app.id)}
          onUpdate={() => onUpdate(app)}
          owner={owner}
          showToast={showToast}
          askUninstall={focus === app.id}
          onFocusDone={onFocusDone}
        />
      ))}
    </ul>
  );
}

function InstalledRow({
  app,
  online,
  expanded,
  onToggle,
  onUpdate,
  showToast,
  askUninstall,
  onFocusDone,
}: {
  app: AppSummary;
  online: boolean;
  expanded: boolean;
  onToggle: () => void;
  onUpdate: () => void;
  owner: string;
  showToast: (t: { text: string }) => void;
  askUninstall: boolean;
  onFocusDone: () => void;
}) {
  const update = app.update;
  const detailsId = useId();
  return (
    <li className="apps-row" data-expanded={expanded || undefined}>
      <div className="apps-row-main">
        <img className="app-icon apps-row-icon" src={app.icon_url} alt="" width={40} height={40} loading="lazy" />
        <button type="button" className="apps-row-name" aria-expanded={expanded} aria-controls={detailsId} onClick={onToggle}>
          <span className="apps-row-title">{app.name}</span>
          <span className="apps-row-meta">
            {app.version ? `Version ${app.version}` : "Built here"}
            {update?.error ? " · couldn't check for updates" : ""}
          </span>
        </button>
        {update?.resolver_chat_id ? (
          <button type="button" className="btn btn-secondary btn-small" onClick={() => navigate({ name: "chat", id: update.resolver_chat_id ?? "" })}>
            Resolving…
          </button>
        ) : update?.available ? (
          <button type="button" className="btn btn-primary btn-small update-available" onClick={onUpdate} disabled={!online}>
            Update available
          </button>
        ) : (
          <button type="button" className="btn btn-ghost btn-small" onClick={() => openApp(app.id)}>
            Open
          </button>
        )}
      </div>
      {expanded && (
        <div id={detailsId} className="apps-row-details">
          <AppDetails app={app} online={online} showToast={showToast} onUpdate={onUpdate} askUninstall={askUninstall} onFocusDone={onFocusDone} />
        </div>
      )}
    </li>
  );
}

/** The app's job: when it runs, how it last went, and a button to run it now (its history is in
 * Settings › Schedules). */
function AppJobs({ appId, online }: { appId: number; online: boolean }) {
  const queryClient = useQueryClient();
  const schedules = useQuery({ queryKey: schedulesKey, queryFn: fetchSchedules, retry: false });
  const jobs = (schedules.data?.schedules ?? []).filter((s) => s.kind === "app_job" && s.app_id === appId);
  const run = useMutation({
    mutationFn: runScheduleNow,
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: schedulesKey }),
  });
  if (jobs.length === 0) return null;
  return (
    <div className="app-jobs" aria-label="Jobs" role="group">
      <h3 className="review-section">Jobs</h3>
      {jobs.map((job) => (
        <div key={job.id} className="skill">
          <span className="skill-name">{job.job ?? "Its job"}</span>
          <span className="skill-detail">
            {cadenceText(job)} · next: {nextText(job)}
            {job.running ? " · running now" : job.last_status ? ` · last: ${STATUS_TEXT[job.last_status]}` : ""}
          </span>
          {job.paused_reason && <span className="schedule-paused">{job.paused_reason}</span>}
          <div className="inline-actions">
            <button type="button" className="btn btn-secondary btn-small" onClick={() => run.mutate(job.id)} disabled={!online || run.isPending}>
              Run now
            </button>
            <button type="button" className="btn btn-secondary btn-small" onClick={() => navigate({ name: "settings" })}>
              History
            </button>
          </div>
        </div>
      ))}
      {run.data && <p role="status">{run.data.status === "skipped" ? "Skipped: its last run is still going." : "Started."}</p>}
      {run.isError && <p role="alert">{errorText(run.error)}</p>}
    </div>
  );
}

function AppDetails({
  app,
  online,
  showToast,
  onUpdate,
  askUninstall,
  onFocusDone,
}: {
  app: AppSummary;
  online: boolean;
  showToast: (t: { text: string }) => void;
  onUpdate: () => void;
  /** Opens with the uninstall choice (an app with `manage_apps` asked for it). */
  askUninstall: boolean;
  onFocusDone: () => void;
}) {
  const queryClient = useQueryClient();
  const history = useQuery({ queryKey: historyKey(app.id), queryFn: ({ signal }) => fetchHistory(app.id, signal), retry: false });
  const [confirm, setConfirmState] = useState<"uninstall" | "data" | null>(askUninstall ? "uninstall" : null);
  const setConfirm = (next: "uninstall" | "data" | null) => {
    if (askUninstall && next !== "uninstall") onFocusDone();
    setConfirmState(next);
  };
  const asked = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (askUninstall) asked.current?.scrollIntoView?.({ block: "center" });
  }, [askUninstall]);
  const [keepData, setKeepData] = useState(true);
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: appsKey });
    void queryClient.invalidateQueries({ queryKey: historyKey(app.id) });
  };
  const restore = useMutation({
    mutationFn: (commit: string) => restoreVersion(app.id, commit),
    onSuccess: (result) => {
      refresh();
      showToast({ text: `Restored “${app.name}” ${result.app.version}` });
    },
  });
  const uninstall = useMutation({
    mutationFn: () => uninstallApp(app.id, keepData),
    onSuccess: () => {
      refresh();
      if (askUninstall) onFocusDone();
      showToast({ text: keepData ? `Uninstalled “${app.name}”; its data is kept` : `Uninstalled “${app.name}” and deleted its data` });
    },
  });
  const wipe = useMutation({
    mutationFn: () => deleteAppData(app.id),
    onSuccess: () => {
      setConfirm(null);
      showToast({ text: `Deleted everything “${app.name}” saved` });
    },
  });
  const name = useId();
  return (
    <>
      <div className="apps-actions">
        <button type="button" className="btn btn-secondary btn-small" onClick={() => openApp(app.id)}>
          Open
        </button>
        {app.source_url && (
          <button type="button" className="btn btn-secondary btn-small" onClick={onUpdate} disabled={!online}>
            <Icon name="refresh" size={16} /> Check for update
          </button>
        )}
        <button type="button" className="btn btn-danger-quiet btn-small" onClick={() => setConfirm("data")} disabled={!online}>
          Delete data
        </button>
        <button type="button" className="btn btn-danger-quiet btn-small" onClick={() => setConfirm("uninstall")} disabled={!online}>
          Uninstall
        </button>
      </div>
      {app.source_url && <p className="apps-source">From {app.source_url}</p>}
      <AppJobs appId={app.id} online={online} />
      <AppSecrets appId={app.id} online={online} />
      {confirm === "data" && (
        <div className="apps-confirm" role="alertdialog" aria-label={`Delete ${app.name}'s data`}>
          <p>Delete everything {app.name} saved? It starts again as if newly installed. Secrets you gave it stay. This can't be undone.</p>
          {wipe.isError && <p role="alert">{errorText(wipe.error)}</p>}
          <div className="review-actions">
            <button type="button" className="btn btn-secondary btn-small" onClick={() => setConfirm(null)}>
              Cancel
            </button>
            <button type="button" className="btn btn-danger btn-small" onClick={() => wipe.mutate()} disabled={wipe.isPending}>
              Delete its data
            </button>
          </div>
        </div>
      )}
      {confirm === "uninstall" && (
        <div ref={asked} className="apps-confirm" role="alertdialog" aria-label={`Uninstall ${app.name}`}>
          <fieldset className="apps-choice">
            <legend>Uninstall {app.name}</legend>
            <label>
              <input type="radio" name={name} checked={keepData} onChange={() => setKeepData(true)} />
              <span>
                <strong>Keep its data</strong> — installing it again brings everything back.
              </span>
            </label>
            <label>
              <input type="radio" name={name} checked={!keepData} onChange={() => setKeepData(false)} />
              <span>
                <strong>Delete its data now</strong> — what it saved and its secrets are gone for good.
              </span>
            </label>
          </fieldset>
          {uninstall.isError && <p role="alert">{errorText(uninstall.error)}</p>}
          <div className="review-actions">
            <button type="button" className="btn btn-secondary btn-small" onClick={() => setConfirm(null)}>
              Cancel
            </button>
            <button type="button" className="btn btn-danger btn-small" onClick={() => uninstall.mutate()} disabled={uninstall.isPending}>
              Uninstall
            </button>
          </div>
        </div>
      )}
      <h3 className="review-section">
        <Icon name="history" size={16} /> Versions
      </h3>
      {history.isPending && <p role="status">Loading its history…</p>}
      {history.isError && <p role="alert">{errorText(history.error)}</p>}
      {restore.isError && (
        <p className="review-error-inline" role="alert">
          {errorText(restore.error)}
        </p>
      )}
      {history.data && (
        <ol className="history-list">
          {history.data.versions.map((v) => (
            <li key={v.commit} className="history-row" data-live={v.live || undefined}>
              <div className="history-text">
                <span className="history-title">
                  {v.version ? `Version ${v.version}` : "Version"} · {{ install: "installed", update: "updated", restore: "restored", apply: "edited here" }[v.kind]}
                </span>
                <span className="history-meta">
                  {when(v.at)} · {v.files_changed} {v.files_changed === 1 ? "file" : "files"}
                  {v.files.length > 0 ? `: ${v.files.slice(0, 4).join(", ")}${v.files_changed > 4 ? "…" : ""}` : ""}
                </span>
              </div>
              {v.live ? (
                <span className="history-live">Running</span>
              ) : (
                <button
                  type="button"
                  className="btn btn-secondary btn-small"
                  onClick={() => restore.mutate(v.commit)}
                  disabled={!online || restore.isPending}
                  aria-label={`Restore version ${v.version ?? shortCommit(v.commit)} from ${when(v.at)}`}
                >
                  Restore
                </button>
              )}
            </li>
          ))}
        </ol>
      )}
    </>
  );
}

function Store({ online, onReview, onUpdate }: { online: boolean; onReview: (source: string) => void; onUpdate: (id: number) => void }) {
  const [text, setText] = useState("");
  const [query, setQuery] = useState("");
  useEffect(() => {
    const timer = setTimeout(() => setQuery(text.trim()), 250);
    return () => clearTimeout(timer);
  }, [text]);
  const catalog = useQuery({ queryKey: catalogKey(query), queryFn: ({ signal }) => fetchCatalog(query, false, signal), enabled: online, retry: false, staleTime: 60_000 });
  const id = useId();
  return (
    <section className="store" aria-label="Store">
      <label htmlFor={id} className="visually-hidden">
        Search the store
      </label>
      <input id={id} className="field-input store-search" type="search" placeholder="Search apps" value={text} onChange={(e) => setText(e.target.value)} />
      {!online && <p className="apps-empty">The store needs a connection.</p>}
      {catalog.isPending && online && <p className="apps-empty">Loading the store…</p>}
      {catalog.isError && <p role="alert">{errorText(catalog.error)}</p>}
      {catalog.data?.errors.map((e) => (
        <p key={e.index} className="review-note" role="status">
          Couldn't read the catalog {e.index}: {e.message}
        </p>
      ))}
      {catalog.data && catalog.data.apps.length === 0 && <p className="apps-empty">{query ? `Nothing matches “${query}”.` : "This catalog has no apps."}</p>}
      <ul className="apps-list" aria-label="Store apps">
        {catalog.data?.apps.map((entry) => (
          <StoreRow key={entry.id} entry={entry} onReview={onReview} onUpdate={onUpdate} />
        ))}
      </ul>
    </section>
  );
}

function StoreRow({ entry, onReview, onUpdate }: { entry: CatalogEntry; onReview: (source: string) => void; onUpdate: (id: number) => void }) {
  const installed = entry.installed;
  return (
    <li className="apps-row">
      <div className="apps-row-main">
        <span className="review-icon review-icon-letter apps-row-icon" style={{ background: entry.theme_color ?? undefined }} aria-hidden="true">
          {(entry.name.match(/[A-Za-z0-9]/)?.[0] ?? "?").toUpperCase()}
        </span>
        <div className="apps-row-name">
          <span className="apps-row-title">{entry.name}</span>
          <span className="apps-row-meta">
            {[entry.version && `Version ${entry.version}`, entry.author].filter(Boolean).join(" · ")}
          </span>
          <span className="store-description">{entry.description}</span>
        </div>
        {installed ? (
          installed.update_available ? (
            <button type="button" className="btn btn-primary btn-small" onClick={() => onUpdate(installed.id)} aria-label={`Update ${entry.name}`}>
              Update
            </button>
          ) : (
            <button type="button" className="btn btn-ghost btn-small" onClick={() => openApp(installed.id)} aria-label={`Open ${entry.name}`}>
              Open
            </button>
          )
        ) : (
          <button type="button" className="btn btn-secondary btn-small" onClick={() => onReview(entry.source)} aria-label={`Get ${entry.name}`}>
            <Icon name="download" size={16} /> Get
          </button>
        )}
      </div>
    </li>
  );
}
