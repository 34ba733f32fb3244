//! Settings › Schedules: every schedule (app jobs and scheduled prompts) with its next run and
//! last status; a schedule's sheet runs it now, pauses and resumes it, edits its cadence where
//! allowed, and shows its runs with their output and full log. Also the owner's time zone.

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";
import { ApiError } from "../../api/client";
import {
  deleteSchedule,
  fetchRun,
  fetchRunLog,
  fetchRuns,
  fetchSchedules,
  patchSchedule,
  runScheduleNow,
  saveTimezone,
  scheduleRunKey,
  scheduleRunsKey,
  schedulesKey,
  type Schedule,
  type ScheduleRun,
} from "../../api/schedules";
import { cadenceText, describeCron, formatWhen, localZone, nextText, sizeText, STATUS_TEXT } from "../../schedules/cadence";
import ScheduleForm from "./ScheduleForm";
import { Sheet } from "../ui/Sheet";

const errorText = (error: unknown) => (error instanceof ApiError ? error.message : "Something went wrong.");

export function SchedulesSection() {
  const schedules = useQuery({ queryKey: schedulesKey, queryFn: fetchSchedules, retry: false });
  const [open, setOpen] = useState<number | null>(null);
  const [adding, setAdding] = useState(false);
  const list = schedules.data?.schedules ?? [];
  const selected = list.find((s) => s.id === open) ?? null;
  return (
    <section className="settings-section" aria-labelledby="s-schedules">
      <h2 id="s-schedules" className="settings-title">
        Schedules
      </h2>
      <p className="settings-lead">What runs on its own: your apps' jobs and the prompts you or the agent scheduled. A run that fails, or a schedule that pauses after five failures, notifies you.</p>
      {schedules.isError && (
        <p className="settings-error" role="alert">
          Couldn't load the schedules: {errorText(schedules.error)}
        </p>
      )}
      {schedules.data && <TimezoneRow list={schedules.data} />}
      {schedules.data && list.length === 0 && <p className="field-hint">Nothing is scheduled yet.</p>}
      {list.length > 0 && (
        <ul className="schedule-list">
          {list.map((s) => (
            <li key={s.id}>
              <button type="button" className="schedule-row" onClick={() => setOpen(s.id)}>
                <span className="schedule-name">
                  {s.name}
                  <span className="perm-badge perm-badge-quiet">{s.kind === "app_job" ? "App job" : s.chat_title ? `In “${s.chat_title}”` : "New chat each time"}</span>
                </span>
                <span className="schedule-meta">{cadenceText(s)}</span>
                <span className="schedule-meta">
                  Next: {nextText(s)}
                  {s.waiting ? " · waiting for a free agent" : s.running ? " · running now" : s.last_status ? ` · last: ${STATUS_TEXT[s.last_status]}` : ""}
                </span>
                {s.paused_reason && <span className="schedule-paused">{s.paused_reason}</span>}
              </button>
            </li>
          ))}
        </ul>
      )}
      {adding ? (
        <ScheduleForm chatId={null} onDone={() => setAdding(false)} onCancel={() => setAdding(false)} />
      ) : (
        <div className="inline-actions">
          <button type="button" className="btn btn-secondary btn-small" onClick={() => setAdding(true)}>
            New scheduled prompt
          </button>
        </div>
      )}
      {selected && <ScheduleSheet schedule={selected} onClose={() => setOpen(null)} />}
    </section>
  );
}

function TimezoneRow({ list }: { list: { timezone: string | null; server_timezone: string; zone: string } }) {
  const queryClient = useQueryClient();
  const [draft, setDraft] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: saveTimezone,
    onSuccess: () => {
      setDraft(null);
      void queryClient.invalidateQueries({ queryKey: schedulesKey });
    },
  });
  const id = useId();
  const device = localZone();
  const value = draft ?? list.timezone ?? "";
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate(value.trim() === "" ? null : value.trim());
  };
  return (
    <form className="setting-stack" onSubmit={onSubmit}>
      <label htmlFor={id} className="field-label">
        Time zone
      </label>
      <div className="inline-field">
        <input
          id={id}
          className="field-input"
          value={value}
          placeholder={`The server's: ${list.server_timezone}`}
          onChange={(e) => setDraft(e.target.value)}
          autoCapitalize="off"
          autoCorrect="off"
          spellCheck={false}
        />
        <button type="submit" className="btn btn-secondary btn-small" disabled={draft === null || save.isPending}>
          Save
        </button>
      </div>
      <p className="field-hint">
        Schedules run in {list.zone}.
        {list.zone !== device && (
          <>
            {" "}
            <button type="button" className="link-button" onClick={() => save.mutate(device)}>
              Use this device's ({device})
            </button>
          </>
        )}
      </p>
      {save.isError && (
        <p className="settings-error" role="alert">
          {errorText(save.error)}
        </p>
      )}
    </form>
  );
}

function ScheduleSheet({ schedule: s, onClose }: { schedule: Schedule; onClose: () => void }) {
  const queryClient = useQueryClient();
  const runs = useQuery({ queryKey: scheduleRunsKey(s.id), queryFn: () => fetchRuns(s.id), retry: false });
  const [cron, setCron] = useState<string | null>(null);
  const [shown, setShown] = useState<number | null>(null);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: schedulesKey });
    void queryClient.invalidateQueries({ queryKey: scheduleRunsKey(s.id) });
  };
  const patch = useMutation({
    mutationFn: (body: Parameters<typeof patchSchedule>[1]) => patchSchedule(s.id, body),
    onSuccess: () => {
      setCron(null);
      refresh();
    },
  });
  const run = useMutation({ mutationFn: () => runScheduleNow(s.id), onSuccess: refresh });
  const remove = useMutation({
    mutationFn: () => deleteSchedule(s.id),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: schedulesKey });
      onClose();
    },
  });
  const cronId = useId();
  const missedId = useId();
  const failure = patch.error ?? run.error ?? remove.error;
  return (
    <Sheet label={s.name} onClose={onClose}>
      <div className="review">
        <h2 className="review-name">{s.name}</h2>
        <dl className="about">
          <dt>What</dt>
          <dd>{s.kind === "app_job" ? `Runs ${s.job ?? "its job script"} in ${s.app_name ?? "the app"}'s folder` : s.prompt}</dd>
          <dt>Where</dt>
          <dd>{s.kind === "app_job" ? "On this server" : s.chat_title ? `In “${s.chat_title}”` : "A new chat each time"}</dd>
          <dt>When</dt>
          <dd>
            {cadenceText(s)} · {s.zone}
          </dd>
          <dt>Next</dt>
          <dd>{nextText(s)}</dd>
          {s.paused_reason && (
            <>
              <dt>Paused</dt>
              <dd>{s.paused_reason}</dd>
            </>
          )}
        </dl>
        <div className="inline-actions">
          <button type="button" className="btn btn-primary btn-small" onClick={() => run.mutate()} disabled={run.isPending}>
            Run now
          </button>
          <button type="button" className="btn btn-secondary btn-small" onClick={() => patch.mutate({ paused: s.paused_at === null })} disabled={patch.isPending}>
            {s.paused_at === null ? "Pause" : "Resume"}
          </button>
          {s.kind === "agent_turn" && (
            <button type="button" className="btn btn-danger-quiet btn-small" onClick={() => setConfirmDelete(true)}>
              Delete
            </button>
          )}
        </div>
        {run.data && <p role="status">{run.data.status === "skipped" ? "Skipped: the previous run is still going." : "Started."}</p>}
        {confirmDelete && (
          <div className="apps-confirm" role="alertdialog" aria-label={`Delete ${s.name}`}>
            <p>Delete this schedule and its history?</p>
            <div className="review-actions">
              <button type="button" className="btn btn-secondary btn-small" onClick={() => setConfirmDelete(false)}>
                Keep it
              </button>
              <button type="button" className="btn btn-danger btn-small" onClick={() => remove.mutate()} disabled={remove.isPending}>
                Delete
              </button>
            </div>
          </div>
        )}
        {s.cron !== null &&
          (s.cadence_editable ? (
            <form
              className="setting-stack"
              onSubmit={(e) => {
                e.preventDefault();
                if (cron !== null) patch.mutate({ cron });
              }}
            >
              <label htmlFor={cronId} className="field-label">
                Cadence (cron)
              </label>
              <div className="inline-field">
                <input
                  id={cronId}
                  className="field-input mono"
                  value={cron ?? s.cron}
                  onChange={(e) => setCron(e.target.value)}
                  spellCheck={false}
                  autoCapitalize="off"
                  autoCorrect="off"
                />
                <button type="submit" className="btn btn-secondary btn-small" disabled={cron === null || patch.isPending}>
                  Save
                </button>
              </div>
              <p className="field-hint">minute hour day month weekday · {describeCron(cron ?? s.cron)}</p>
            </form>
          ) : (
            <p className="field-hint">The app sets this cadence itself.</p>
          ))}
        {s.cron !== null && (
          <div className="setting-row">
            <label htmlFor={missedId}>After the server was down</label>
            <select
              id={missedId}
              className="select"
              value={s.missed}
              disabled={patch.isPending}
              onChange={(e) => patch.mutate({ missed: e.target.value === "skip" ? "skip" : "run_once" })}
            >
              <option value="run_once">Run once for what it missed</option>
              <option value="skip">Skip what it missed</option>
            </select>
          </div>
        )}
        {failure && (
          <p className="settings-error" role="alert">
            {errorText(failure)}
          </p>
        )}
        <h3 className="review-section">Runs</h3>
        {runs.isPending && <p role="status">Loading the runs…</p>}
        {runs.isError && <p role="alert">{errorText(runs.error)}</p>}
        {runs.data?.runs.length === 0 && <p className="field-hint">It has not run yet.</p>}
        <ol className="history-list">
          {runs.data?.runs.map((r) => (
            <li key={r.id} className="history-row run-row" data-status={r.status}>
              <button type="button" className="run-open" onClick={() => setShown(shown === r.id ? null : r.id)} aria-expanded={shown === r.id}>
                <span className="history-title">
                  {r.status === "running" && r.waiting_since !== null ? "Waiting for a free agent" : STATUS_TEXT[r.status]}
                  {r.exit_code !== null && r.exit_code !== 0 ? ` (exit ${r.exit_code})` : ""}
                  {r.trigger === "manual" ? " · run by hand" : r.trigger === "catch_up" ? " · catch-up" : ""}
                </span>
                <span className="history-meta">
                  {formatWhen(r.started_at, s.zone)}
                  {r.ended_at !== null ? ` · ${Math.max(0, Math.round((r.ended_at - r.started_at) / 1000))} s` : ""}
                  {r.output_bytes > 0 ? ` · ${sizeText(r.output_bytes)}` : ""}
                </span>
                {r.reason && <span className="history-meta">{r.reason}</span>}
              </button>
              {shown === r.id && <RunOutput schedule={s} run={r} />}
            </li>
          ))}
        </ol>
      </div>
    </Sheet>
  );
}

function RunOutput({ schedule, run }: { schedule: Schedule; run: ScheduleRun }) {
  const detail = useQuery({ queryKey: scheduleRunKey(schedule.id, run.id), queryFn: () => fetchRun(schedule.id, run.id), retry: false });
  const log = useMutation({ mutationFn: () => fetchRunLog(schedule.id, run.id) });
  const output = detail.data?.output ?? "";
  return (
    <div className="run-output">
      {detail.isPending && <p role="status">Loading its output…</p>}
      {detail.isError && <p role="alert">{errorText(detail.error)}</p>}
      {run.chat_id && (
        <a className="link-button" href={`/chat/${run.chat_id}`}>
          Open the chat
        </a>
      )}
      {detail.data && (output ? <pre className="run-log" aria-label="Output">{log.data ?? output}</pre> : <p className="field-hint">No output.</p>)}
      {run.has_log && run.output_bytes > output.length && !log.data && (
        <button type="button" className="btn btn-secondary btn-small" onClick={() => log.mutate()} disabled={log.isPending}>
          Show the full log
        </button>
      )}
      {log.isError && <p role="alert">{errorText(log.error)}</p>}
    </div>
  );
}
