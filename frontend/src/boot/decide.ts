//! The boot decision: which screen to show from the token and the two boot probes. Pure, so
//! every branch is unit-tested; `App` only feeds it query results.

import type { Session, SetupStatus } from "../api/auth";
import { ApiError, isUnauthorized } from "../api/client";

/** The state of one boot request, reduced to what the decision needs. */
export type Probe<T> =
  | { state: "idle" }
  | { state: "pending" }
  | { state: "ok"; data: T }
  | { state: "error"; error: unknown; retrying: boolean };

export type BootScreen =
  | { screen: "splash" }
  | { screen: "setup" }
  | { screen: "login" }
  | { screen: "shell"; session: Session }
  | { screen: "unreachable"; error: unknown; retrying: boolean; probe: "session" | "setup-status" };

export interface BootInput {
  hasToken: boolean;
  session: Probe<Session>;
  setupStatus: Probe<SetupStatus>;
  /** The last session verified for the stored token on this device, for offline starts. */
  offlineSession?: Session | null;
}

/** The screen to show now. Never guesses: a failed probe shows the unreachable screen. */
export function decideBoot({ hasToken, session, setupStatus, offlineSession = null }: BootInput): BootScreen {
  if (hasToken) {
    switch (session.state) {
      case "ok":
        return { screen: "shell", session: session.data };
      case "error":
        // A 401 is being handled centrally (token cleared, back to login); hold the splash
        // for the moment until the token store says so.
        if (isUnauthorized(session.error)) return { screen: "splash" };
        // No network at all: a token verified here before opens the shell with saved data.
        if (offlineSession && session.error instanceof ApiError && session.error.isNetwork) {
          return { screen: "shell", session: offlineSession };
        }
        return { screen: "unreachable", error: session.error, retrying: session.retrying, probe: "session" };
      default:
        return { screen: "splash" };
    }
  }
  switch (setupStatus.state) {
    case "ok":
      return setupStatus.data.configured ? { screen: "login" } : { screen: "setup" };
    case "error":
      return { screen: "unreachable", error: setupStatus.error, retrying: setupStatus.retrying, probe: "setup-status" };
    default:
      return { screen: "splash" };
  }
}

/** The parts of a TanStack query result the probe reads. */
export interface QueryLike<T> {
  data: T | undefined;
  error: unknown;
  status: "pending" | "error" | "success";
  fetchStatus: "fetching" | "paused" | "idle";
}

/** Reduces a query result to a probe. Data already shown wins over a failed background refetch. */
export function probeOf<T>(query: QueryLike<T>, enabled: boolean): Probe<T> {
  if (query.data !== undefined) return { state: "ok", data: query.data };
  if (!enabled) return { state: "idle" };
  if (query.status === "error") return { state: "error", error: query.error, retrying: query.fetchStatus === "fetching" };
  return { state: "pending" };
}
