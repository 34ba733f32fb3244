//! The stream connection's state machine: connecting → live → (lost → waiting → connecting)…,
//! with exponential backoff and the rule for when "Reconnecting…" may show. Pure.

export type ConnPhase = "connecting" | "live" | "waiting" | "offline" | "closed";

export interface ConnState {
  phase: ConnPhase;
  /** Consecutive failed attempts since the stream was last live. */
  failures: number;
  /** When the stream stopped being live (null while live or before the first attempt). */
  downSince: number | null;
  /** Whether it was ever live: decides "Connecting…" versus "Reconnecting…". */
  wasLive: boolean;
}

export type ConnEvent =
  | { type: "connect"; now: number }
  | { type: "live" }
  | { type: "lost"; now: number }
  | { type: "offline"; now: number }
  | { type: "online" }
  | { type: "retry_now" }
  | { type: "close" };

export const BACKOFF_BASE_MS = 1_000;
export const BACKOFF_MAX_MS = 30_000;
/** A reconnect shorter than this stays invisible. */
export const RECONNECTING_NOTE_AFTER_MS = 1_500;
/** After this many failures in a row the note offers a Retry button. */
export const FAILURES_BEFORE_RETRY_BUTTON = 3;

export const initialConn: ConnState = { phase: "closed", failures: 0, downSince: null, wasLive: false };

export function connReducer(state: ConnState, event: ConnEvent): ConnState {
  switch (event.type) {
    case "connect":
      if (state.phase === "offline") return state;
      return { ...state, phase: "connecting", downSince: state.downSince ?? event.now };
    case "live":
      return { phase: "live", failures: 0, downSince: null, wasLive: true };
    case "lost":
      if (state.phase === "closed" || state.phase === "offline") return state;
      return { ...state, phase: "waiting", failures: state.failures + 1, downSince: state.downSince ?? event.now };
    case "offline":
      return { ...state, phase: "offline", downSince: state.downSince ?? event.now };
    case "online":
      return state.phase === "offline" ? { ...state, phase: "waiting", failures: 0 } : state;
    case "retry_now":
      return { ...state, failures: 0 };
    case "close":
      return { ...initialConn, wasLive: state.wasLive };
  }
}

/** Wait before the next attempt after `failures` failures in a row: 1 s, 2 s, 4 s … 30 s. */
export function backoffDelay(failures: number): number {
  if (failures <= 0) return 0;
  return Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (failures - 1));
}

/** What the connection note says now, or null for nothing at all. */
export type ConnNote = { text: "Connecting…" | "Reconnecting…"; offerRetry: boolean } | null;

export function connNote(state: ConnState, now: number): ConnNote {
  if (state.phase === "live" || state.phase === "closed" || state.phase === "offline") return null;
  if (state.downSince === null || now - state.downSince < RECONNECTING_NOTE_AFTER_MS) return null;
  return {
    text: state.wasLive ? "Reconnecting…" : "Connecting…",
    offerRetry: state.failures >= FAILURES_BEFORE_RETRY_BUTTON,
  };
}

/** A stream that read nothing (not even a keepalive) for this long is treated as dead. */
export const STALE_STREAM_MS = 45_000;

/** On wake (visible/online): reconnect unless the stream is live and read something recently. */
export function shouldReconnectOnWake(state: ConnState, lastReadAt: number, now: number): boolean {
  // Offline waits for the `online` event; closed means the view stopped the stream on purpose.
  if (state.phase === "offline" || state.phase === "closed") return false;
  if (state.phase !== "live") return true;
  return now - lastReadAt > STALE_STREAM_MS;
}
