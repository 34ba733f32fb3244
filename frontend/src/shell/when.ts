//! Short, human times for lists ("now", "5 min ago", "Yesterday 14:05", "12 Mar"), in the
//! reader's locale and zone.

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

function startOfDay(at: Date): number {
  return new Date(at.getFullYear(), at.getMonth(), at.getDate()).getTime();
}

/** When `at` (unix ms or an ISO string) happened, as seen at `now`. */
export function whenText(at: number | string, now: number = Date.now(), locale?: string): string {
  const time = typeof at === "number" ? at : Date.parse(at);
  if (!Number.isFinite(time)) return "";
  const ago = now - time;
  if (ago < MINUTE_MS) return "now";
  if (ago < HOUR_MS) return `${Math.floor(ago / MINUTE_MS)} min ago`;
  const then = new Date(time);
  const today = startOfDay(new Date(now));
  const clock = then.toLocaleTimeString(locale, { hour: "2-digit", minute: "2-digit" });
  if (time >= today) return ago < 6 * HOUR_MS ? `${Math.floor(ago / HOUR_MS)} h ago` : clock;
  if (time >= today - DAY_MS) return `Yesterday ${clock}`;
  if (time >= today - 6 * DAY_MS) return `${then.toLocaleDateString(locale, { weekday: "short" })} ${clock}`;
  const sameYear = then.getFullYear() === new Date(now).getFullYear();
  return then.toLocaleDateString(locale, sameYear ? { day: "numeric", month: "short" } : { day: "numeric", month: "short", year: "numeric" });
}

/** The full date and time, for a tooltip. */
export function fullTime(at: number | string, locale?: string): string {
  const time = typeof at === "number" ? at : Date.parse(at);
  return Number.isFinite(time) ? new Date(time).toLocaleString(locale, { dateStyle: "medium", timeStyle: "short" }) : "";
}
