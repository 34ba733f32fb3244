//! What the parts of an app's storage host (outbox, mirror, signals) share: the app, its
//! database, this page, and the host's own line to the server.

import type { AppDb } from "./appDb";

/** A request as the host sends it (the app token is added, and renewed once after a 401). */
export interface HostRequest {
  method: "GET" | "PUT" | "DELETE" | "POST";
  body?: BodyInit | null;
  headers?: Record<string, string>;
}

/** The storage host, as its parts see it. */
export interface HostCore {
  readonly appId: number;
  readonly db: AppDb;
  /** This page's id (an outbox op is sent only by the page that owns it). */
  readonly ownerId: string;
  readonly locks: LockManager | null;
  /** The installation written for (`<appId>:<app_nonce>`); null until a token named it. */
  scope(): string | null;
  /** The host was stopped (sign-out, another installation): no more timers or requests. */
  destroyed(): boolean;
  /** Whether the server can be reached. */
  online(): boolean;
  /** Learns the installation (once); rejects while no token can be had. */
  start(): Promise<string>;
  /** Sends `init` to `url` with the app token; `timeoutMs` (0: none) bounds the wait for headers. */
  send(url: string, init: HostRequest, timeoutMs?: number): Promise<Response>;
  /** Runs `fn` holding the Web Lock `name` (at once when the browser has no Web Locks). */
  withLock<T>(name: string, fn: () => Promise<T>): Promise<T>;
}
