import { describe, expect, it } from "vitest";
import type { Session, SetupStatus } from "../api/auth";
import { ApiError } from "../api/client";
import { decideBoot, probeOf, type Probe } from "./decide";

const session: Session = { username: "ada", scope: "owner", expires_at: 2_000_000_000 };
const idle = { state: "idle" } as const;
const pending = { state: "pending" } as const;
const ok = <T>(data: T): Probe<T> => ({ state: "ok", data });
const failed = (error: unknown, retrying = false) => ({ state: "error", error, retrying }) as const;
const status = (configured: boolean): SetupStatus => ({ configured, auth_mode: "local" });

describe("decideBoot with a stored token", () => {
  it("shows the splash while the session is checked", () => {
    expect(decideBoot({ hasToken: true, session: pending, setupStatus: idle })).toEqual({ screen: "splash" });
  });

  it("opens the shell once the session is verified", () => {
    expect(decideBoot({ hasToken: true, session: ok(session), setupStatus: idle })).toEqual({ screen: "shell", session });
  });

  it("does not trust a cached setup status over the session check", () => {
    expect(decideBoot({ hasToken: true, session: pending, setupStatus: ok(status(true)) }).screen).toBe("splash");
  });

  it("holds the splash on a 401 while the central handler signs out", () => {
    const error = new ApiError(401, "token_expired", "Expired.");
    expect(decideBoot({ hasToken: true, session: failed(error), setupStatus: idle }).screen).toBe("splash");
  });

  it("reports an unreachable server instead of guessing", () => {
    const error = new ApiError(0, "network", "down");
    expect(decideBoot({ hasToken: true, session: failed(error, true), setupStatus: idle })).toEqual({
      screen: "unreachable",
      error,
      retrying: true,
      probe: "session",
    });
  });

  it("opens the shell offline with the session last verified on this device", () => {
    const offline = new ApiError(0, "network", "Couldn't reach Möbius.");
    expect(decideBoot({ hasToken: true, session: failed(offline), setupStatus: idle, offlineSession: session })).toEqual({ screen: "shell", session });
    expect(decideBoot({ hasToken: true, session: failed(offline), setupStatus: idle, offlineSession: null }).screen).toBe("unreachable");
    const serverError = new ApiError(500, "internal", "Boom.");
    expect(decideBoot({ hasToken: true, session: failed(serverError), setupStatus: idle, offlineSession: session }).screen).toBe("unreachable");
  });

  it("treats a server error on the session check as unreachable, not as signed out", () => {
    const error = new ApiError(503, "not_ready", "Starting.");
    expect(decideBoot({ hasToken: true, session: failed(error), setupStatus: idle }).screen).toBe("unreachable");
  });
});

describe("decideBoot without a token", () => {
  it("waits for the setup status", () => {
    expect(decideBoot({ hasToken: false, session: idle, setupStatus: pending }).screen).toBe("splash");
  });

  it("shows sign-in on a configured server and setup on a fresh one", () => {
    expect(decideBoot({ hasToken: false, session: idle, setupStatus: ok(status(true)) }).screen).toBe("login");
    expect(decideBoot({ hasToken: false, session: idle, setupStatus: ok(status(false)) }).screen).toBe("setup");
  });

  it("ignores a leftover session when the token is gone", () => {
    expect(decideBoot({ hasToken: false, session: ok(session), setupStatus: ok(status(true)) }).screen).toBe("login");
  });

  it("reports a failed setup-status check as unreachable", () => {
    const decision = decideBoot({ hasToken: false, session: idle, setupStatus: failed(new ApiError(0, "network", "x")) });
    expect(decision).toMatchObject({ screen: "unreachable", probe: "setup-status", retrying: false });
  });
});

describe("probeOf", () => {
  it("keeps showing data when a background refetch fails", () => {
    const probe = probeOf({ data: session, error: new ApiError(0, "network", "x"), status: "error", fetchStatus: "idle" }, true);
    expect(probe).toEqual({ state: "ok", data: session });
  });

  it("is idle when the query is disabled and pending while it runs", () => {
    expect(probeOf({ data: undefined, error: null, status: "pending", fetchStatus: "idle" }, false)).toEqual(idle);
    expect(probeOf({ data: undefined, error: null, status: "pending", fetchStatus: "fetching" }, true)).toEqual(pending);
  });

  it("marks an error as retrying while a refetch is in flight", () => {
    const error = new ApiError(0, "network", "x");
    expect(probeOf({ data: undefined, error, status: "error", fetchStatus: "fetching" }, true)).toEqual(failed(error, true));
  });
});
