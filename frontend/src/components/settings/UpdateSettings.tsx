//! Settings › About: the version running, whether a newer release is out (with its notes and
//! what applying it does), applying it and following it through the restart, how the last
//! update ended (applied, or rolled back and why), the daily check's switch, and restarting
//! the server (two taps).

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { formatDistanceToNow } from "date-fns";
import { useEffect, useId, useRef, useState } from "react";
import { ApiError } from "../../api/client";
import {
  applyUpdate,
  checkForUpdates,
  fetchHealth,
  fetchPlatformStatus,
  platformKey,
  restartServer,
  setAutoCheck,
  type PlatformStatus,
  type UpdateOutcome,
} from "../../api/platform";

const errorText = (error: unknown) => (error instanceof ApiError ? error.message : "Something went wrong.");
/** While an update or restart runs, the status is asked this often. */
const FOLLOW_MS = 1_000;
/** Give up following after this long (the launcher rolls back long before). */
const FOLLOW_LIMIT_MS = 5 * 60_000;

const mib = (bytes: number) => `${Math.max(1, Math.round(bytes / (1 << 20)))} MB`;

export function UpdateSettings() {
  const queryClient = useQueryClient();
  /** Set while following an update to `version` (from Apply until its outcome). */
  const [following, setFollowing] = useState<{ version: string; since: number } | null>(null);
  const status = useQuery({
    queryKey: platformKey,
    queryFn: ({ signal }) => fetchPlatformStatus(signal),
    retry: following ? true : false,
    refetchInterval: following ? FOLLOW_MS : false,
  });
  const data = status.data;
  const check = useMutation({ mutationFn: checkForUpdates, onSuccess: (s) => queryClient.setQueryData(platformKey, s) });
  const auto = useMutation({ mutationFn: setAutoCheck, onSuccess: (s) => queryClient.setQueryData(platformKey, s) });
  const apply = useMutation({
    mutationFn: (version: string) => applyUpdate(version),
    onSuccess: (_, version) => setFollowing({ version, since: Date.now() }),
  });

  // Following ends when the launcher recorded the outcome, the apply failed, or it took too long.
  const outcome = data?.last && following && data.last.version === following.version && data.last.at >= following.since ? data.last : null;
  const failed = following && data?.progress?.phase === "failed" && data.progress.version === following.version ? data.progress : null;
  if (following && (outcome || failed || status.dataUpdatedAt - following.since > FOLLOW_LIMIT_MS)) setFollowing(null);

  const autoId = useId();
  return (
    <div className="setting-stack" data-updates>
      <dl className="about">
        <dt>Version</dt>
        <dd data-version>{data?.version ?? "—"}</dd>
        <dt>Build</dt>
        <dd>
          <code>{data?.build_sha?.slice(0, 12) ?? "—"}</code>
          {data ? ` · ${data.serving === "release" ? "updated in place" : "from the image"}` : ""}
        </dd>
      </dl>
      {status.isError && !following && <p className="settings-error" role="alert">{`Couldn't load the update status: ${errorText(status.error)}`}</p>}
      {data && <LastOutcome last={data.last} />}
      {following ? (
        <p className="settings-lead" role="status" data-update-phase={data?.progress?.phase ?? "restarting"}>
          {progressText(data, following.version)}
        </p>
      ) : (
        data && <Available status={data} applying={apply.isPending} onApply={(v) => apply.mutate(v)} />
      )}
      {apply.isError && <p className="settings-error" role="alert">{errorText(apply.error)}</p>}
      {data?.progress?.phase === "failed" && !following && (
        <p className="settings-error" role="alert" data-update-error>
          {`Version ${data.progress.version} was not applied: ${data.progress.error ?? "it failed"}`}
        </p>
      )}
      {data && data.feed !== null && (
        <>
          <div className="inline-actions">
            <button type="button" className="btn btn-secondary btn-small" onClick={() => check.mutate()} disabled={check.isPending || following !== null}>
              {check.isPending ? "Checking…" : "Check for updates"}
            </button>
          </div>
          <p className="settings-lead">
            {data.checked_at ? `Last checked ${formatDistanceToNow(data.checked_at, { addSuffix: true })}` : "Not checked yet"}
            {data.check_error && data.check_error !== "update checks are off" ? ` (${data.check_error})` : ""}.
          </p>
          <label className="switch-row" htmlFor={autoId}>
            <input id={autoId} type="checkbox" checked={data.auto_check} disabled={auto.isPending} onChange={(e) => auto.mutate(e.target.checked)} />
            <span>Check once a day (nothing is sent but the request)</span>
          </label>
        </>
      )}
      {check.isError && <p className="settings-error" role="alert">{errorText(check.error)}</p>}
      {data?.feed === null && <p className="settings-lead">Update checks are off on this server.</p>}
      {data && <RestartServer supervised={data.supervised} runningTurns={data.running_turns} />}
    </div>
  );
}

function progressText(data: PlatformStatus | undefined, version: string): string {
  const p = data?.progress;
  if (!data || p === null || p === undefined) return `Restarting into ${version}…`;
  switch (p.phase) {
    case "checking":
      return "Checking the release…";
    case "verifying":
      return "Verifying the signature…";
    case "downloading":
      return p.total_bytes > 0 ? `Downloading ${version}: ${Math.min(100, Math.round((p.done_bytes / p.total_bytes) * 100))} %` : `Downloading ${version}…`;
    case "restarting":
      return `Restarting into ${version}…`;
    case "failed":
      return `Version ${version} was not applied.`;
  }
}

function LastOutcome({ last }: { last: UpdateOutcome | null }) {
  if (!last) return null;
  const when = formatDistanceToNow(last.at, { addSuffix: true });
  if (last.outcome === "applied") {
    const took = last.took_ms ? ` in ${(last.took_ms / 1000).toFixed(1)} s` : "";
    return (
      <p className="settings-lead" data-update-outcome="applied">
        {`Updated from ${last.from} to ${last.version} ${when}${took}.`}
      </p>
    );
  }
  return (
    <p className="settings-error" role="status" data-update-outcome={last.outcome}>
      {last.outcome === "rolled_back"
        ? `Version ${last.version} was rolled back ${when}, and your data was put back as it was: ${last.reason ?? "it did not start"}`
        : `Version ${last.version} was not started ${when}: ${last.reason ?? "it failed"}`}
    </p>
  );
}

function Available({ status, applying, onApply }: { status: PlatformStatus; applying: boolean; onApply: (version: string) => void }) {
  const [confirming, setConfirming] = useState(false);
  const available = status.available;
  if (!available) return status.checked_at ? <p className="settings-lead">Möbius is up to date.</p> : null;
  return (
    <div className="update-offer" data-available={available.version}>
      <p className="settings-lead">
        <strong>{`Version ${available.version} is available`}</strong>
        {available.published_at ? ` (${available.published_at.slice(0, 10)})` : ""}
      </p>
      {available.notes.trim() !== "" && <pre className="release-notes">{available.notes.trim()}</pre>}
      {!status.supervised ? (
        <p className="settings-lead">This server was not started by the launcher, so it cannot update itself: pull the new image instead.</p>
      ) : confirming ? (
        <div className="confirm-box" role="group" aria-label="Apply the update">
          <p className="settings-lead">
            {`Downloads about ${mib(available.download_bytes)}, backs the database up and restarts the server (a few seconds). `}
            {status.running_turns > 0 ? `${status.running_turns} running turn(s) pause and continue afterwards. ` : ""}
            If the new version does not start, the current one comes back with your data as it was.
          </p>
          <div className="inline-actions">
            <button type="button" className="btn btn-primary btn-small" onClick={() => onApply(available.version)} disabled={applying}>
              {applying ? "Starting…" : `Update to ${available.version}`}
            </button>
            <button type="button" className="btn btn-secondary btn-small" onClick={() => setConfirming(false)}>
              Not now
            </button>
          </div>
        </div>
      ) : (
        <div className="inline-actions">
          <button type="button" className="btn btn-primary btn-small" onClick={() => setConfirming(true)}>
            Update…
          </button>
        </div>
      )}
    </div>
  );
}

/** Restart the server: a first tap asks, a second one restarts; then waits for the new start. */
function RestartServer({ supervised, runningTurns }: { supervised: boolean; runningTurns: number }) {
  const [step, setStep] = useState<"idle" | "confirm" | "restarting" | "done">("idle");
  const bootBefore = useRef<string | null>(null);
  const restart = useMutation({
    mutationFn: async () => {
      bootBefore.current = (await fetchHealth().catch(() => null))?.boot_id ?? null;
      return restartServer();
    },
    onSuccess: () => setStep("restarting"),
  });
  useEffect(() => {
    if (step !== "restarting") return;
    let stopped = false;
    const started = Date.now();
    const poll = async () => {
      while (!stopped && Date.now() - started < FOLLOW_LIMIT_MS) {
        await new Promise((r) => setTimeout(r, FOLLOW_MS));
        const health = await fetchHealth().catch(() => null);
        if (health && health.boot_id !== bootBefore.current) {
          if (!stopped) setStep("done");
          return;
        }
      }
    };
    void poll();
    return () => {
      stopped = true;
    };
  }, [step]);
  if (!supervised) return null;
  return (
    <div className="setting-stack" data-restart={step}>
      {step === "confirm" ? (
        <div className="confirm-box" role="group" aria-label="Restart the server">
          <p className="settings-lead">{`Restart the server now? ${runningTurns > 0 ? `${runningTurns} running turn(s) pause and continue afterwards.` : "Nothing is running."}`}</p>
          <div className="inline-actions">
            <button type="button" className="btn btn-danger-quiet btn-small" onClick={() => restart.mutate()} disabled={restart.isPending}>
              {restart.isPending ? "Restarting…" : "Restart now"}
            </button>
            <button type="button" className="btn btn-secondary btn-small" onClick={() => setStep("idle")}>
              Cancel
            </button>
          </div>
        </div>
      ) : (
        <div className="inline-actions">
          <button type="button" className="btn btn-secondary btn-small" onClick={() => setStep("confirm")} disabled={step === "restarting"}>
            {step === "restarting" ? "Restarting…" : "Restart server…"}
          </button>
        </div>
      )}
      {step === "done" && <p className="settings-lead" role="status">The server restarted.</p>}
      {restart.isError && <p className="settings-error" role="alert">{errorText(restart.error)}</p>}
    </div>
  );
}
