//! Schedules in words: a cron cadence as the owner reads it, the simple cadences the form
//! builds, times in a schedule's zone, and run statuses.

import type { RunStatus, Schedule } from "../api/schedules";

const DAYS = ["Sundays", "Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays", "Saturdays"];

const two = (n: number) => String(n).padStart(2, "0");
const isNumber = (field: string) => /^\d{1,2}$/.test(field);

/** "Every day at 07:30", "Weekdays at 07:30", "Mondays at 09:00", "Every 15 minutes", … or the
 * expression itself when it says something more particular. */
export function describeCron(cron: string): string {
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5) return `cron “${cron}”`;
  const [minute, hour, dom, month, dow] = fields as [string, string, string, string, string];
  const everyDayOfYear = dom === "*" && month === "*";
  if (minute === "*" && hour === "*" && everyDayOfYear && dow === "*") return "Every minute";
  const step = /^\*\/(\d{1,2})$/.exec(minute);
  if (step && hour === "*" && everyDayOfYear && dow === "*") return `Every ${step[1]} minutes`;
  if (isNumber(minute) && hour === "*" && everyDayOfYear && dow === "*") return `Every hour at :${two(Number(minute))}`;
  if (isNumber(minute) && isNumber(hour) && everyDayOfYear) {
    const at = `${two(Number(hour))}:${two(Number(minute))}`;
    if (dow === "*") return `Every day at ${at}`;
    if (dow === "1-5") return `Weekdays at ${at}`;
    if (dow === "0,6" || dow === "6,0") return `Weekends at ${at}`;
    if (isNumber(dow) && Number(dow) <= 7) return `${DAYS[Number(dow) % 7]} at ${at}`;
  }
  return `cron “${cron}”`;
}

export type SimpleCadence = { every: "day" | "weekdays" | "week"; time: string; weekday: number };

/** The cron of a simple cadence ("07:30" every weekday → `30 7 * * 1-5`); `null` for a bad time. */
export function buildCron({ every, time, weekday }: SimpleCadence): string | null {
  const m = /^(\d{1,2}):(\d{2})$/.exec(time.trim());
  if (!m) return null;
  const hour = Number(m[1]);
  const minute = Number(m[2]);
  if (hour > 23 || minute > 59) return null;
  const dow = every === "day" ? "*" : every === "weekdays" ? "1-5" : String(weekday % 7);
  return `${minute} ${hour} * * ${dow}`;
}

/** "Mon 3 Jun, 07:30" in `zone` (the schedule's), with the zone's name when it is not this device's. */
export function formatWhen(ms: number, zone: string, deviceZone: string = localZone()): string {
  let text: string;
  try {
    text = new Intl.DateTimeFormat(undefined, {
      timeZone: zone,
      weekday: "short",
      day: "numeric",
      month: "short",
      hour: "2-digit",
      minute: "2-digit",
    }).format(new Date(ms));
  } catch {
    return new Date(ms).toLocaleString();
  }
  return zone === deviceZone ? text : `${text} (${zone})`;
}

/** This device's IANA zone. */
export function localZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  } catch {
    return "UTC";
  }
}

/** When a schedule runs next, in words. */
export function nextText(s: Schedule): string {
  if (s.paused_at !== null) return "Paused";
  if (s.finished_at !== null) return "Done";
  if (s.next_due_at !== null) return formatWhen(s.next_due_at, s.zone);
  if (s.cron === null && s.run_at === null) return "Runs when asked";
  return "Planning…";
}

/** How a schedule comes round, in words. */
export function cadenceText(s: Schedule): string {
  if (s.cron) return describeCron(s.cron);
  if (s.run_at !== null) return `Once, ${formatWhen(s.run_at, s.zone)}`;
  return "On demand";
}

export const STATUS_TEXT: Record<RunStatus, string> = {
  running: "Running",
  succeeded: "Succeeded",
  failed: "Failed",
  timed_out: "Timed out",
  skipped: "Skipped",
  interrupted: "Interrupted",
  cancelled: "Cancelled",
};

/** "3.2 MB" for a byte count. */
export function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
