//! Schedules (`/api/schedules…`): app jobs and scheduled prompts, their runs and logs, and the
//! owner's time zone.

import { apiFetch } from "./client";

export const schedulesKey = ["schedules"] as const;
export const scheduleRunsKey = (id: number) => ["schedules", id, "runs"] as const;
export const scheduleRunKey = (id: number, run: number) => ["schedules", id, "runs", run] as const;

export type RunStatus = "running" | "succeeded" | "failed" | "timed_out" | "skipped" | "interrupted" | "cancelled";

export interface Schedule {
  id: number;
  kind: "app_job" | "agent_turn";
  name: string;
  cron: string | null;
  run_at: number | null;
  timezone: string | null;
  app_id: number | null;
  job: string | null;
  manifest_cron: string | null;
  user_configurable: boolean;
  chat_id: string | null;
  prompt: string | null;
  created_by: string;
  /** The chat whose agent made it (agent-made schedules only). */
  origin_chat_id: string | null;
  missed: "run_once" | "skip";
  timeout_secs: number | null;
  paused_at: number | null;
  paused_reason: string | null;
  failures: number;
  next_due_at: number | null;
  finished_at: number | null;
  last_run_at: number | null;
  last_status: RunStatus | null;
  created_at: number;
  updated_at: number;
  app_name: string | null;
  app_slug: string | null;
  chat_title: string | null;
  running: boolean;
  /** That run has not started: it waits for a free agent. */
  waiting: boolean;
  /** The zone its cadence is read in. */
  zone: string;
  cadence_editable: boolean;
}

export interface ScheduleList {
  timezone: string | null;
  server_timezone: string;
  zone: string;
  schedules: Schedule[];
}

export interface ScheduleRun {
  id: number;
  schedule_id: number;
  trigger: "schedule" | "catch_up" | "manual" | "install";
  due_at: number | null;
  started_at: number;
  ended_at: number | null;
  status: RunStatus;
  exit_code: number | null;
  reason: string | null;
  output?: string | null;
  output_bytes: number;
  has_log: boolean;
  chat_id: string | null;
  run_id: string | null;
  /** A running run that has not started: it waits for a free agent since then. */
  waiting_since: number | null;
}

export interface NewSchedule {
  name?: string;
  prompt: string;
  cron?: string;
  at?: string;
  timezone?: string;
  chat_id?: string;
  new_chat?: boolean;
  missed?: "run_once" | "skip";
}

export type SchedulePatch = Partial<{
  name: string;
  cron: string;
  at: string;
  timezone: string | null;
  prompt: string;
  paused: boolean;
  missed: "run_once" | "skip";
  timeout_secs: number | null;
}>;

export const fetchSchedules = () => apiFetch<ScheduleList>("/api/schedules");
export const createSchedule = (body: NewSchedule) => apiFetch<Schedule>("/api/schedules", { method: "POST", body });
export const patchSchedule = (id: number, body: SchedulePatch) => apiFetch<Schedule>(`/api/schedules/${id}`, { method: "PATCH", body });
export const deleteSchedule = (id: number) => apiFetch(`/api/schedules/${id}`, { method: "DELETE" });
export const runScheduleNow = (id: number) =>
  apiFetch<{ run_id: number; status: "running" | "skipped"; started_at: number }>(`/api/schedules/${id}/run`, { method: "POST" });
export const fetchRuns = (id: number) => apiFetch<{ runs: ScheduleRun[]; next_before: number | null }>(`/api/schedules/${id}/runs?limit=20`);
export const fetchRun = (id: number, run: number) => apiFetch<ScheduleRun>(`/api/schedules/${id}/runs/${run}`);
export const fetchRunLog = (id: number, run: number) =>
  apiFetch<string>(`/api/schedules/${id}/runs/${run}/log`, { responseType: "text", timeoutMs: 30_000 });
export const saveTimezone = (timezone: string | null) =>
  apiFetch<{ timezone: string | null; zone: string }>("/api/schedules/timezone", { method: "PUT", body: { timezone } });
