//! `mobius.signal` events on their way to `/api/client-signal`: a bounded queue on the device
//! (IndexedDB), delivered in batches by one page at a time; transient failures back off
//! (Retry-After respected), and events the server refuses are found and dropped.

import type { SignalRecord } from "./appDb";
import type { HostCore } from "./core";
import { StorageRpcError } from "./wire";

/** Signals per delivery request (the server's limit). */
const SIGNAL_BATCH = 100;
const SIGNAL_RETRY_FIRST_MS = 5_000;
const SIGNAL_RETRY_MAX_MS = 5 * 60_000;
const SIGNAL_RETRY_AFTER_MAX_MS = 24 * 3600_000;
/** One signal event, serialised, as the server counts it. */
const MAX_SIGNAL_EVENT_BYTES = 4_096;
export const SIGNAL_BOUNDS = { perScopeCount: 500, perScopeBytes: 2 * 1024 * 1024, totalCount: 2_000, totalBytes: 8 * 1024 * 1024 };

/** The signal queue of one app in this page. */
export class SignalQueue {
  private pass: Promise<void> | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private delay = SIGNAL_RETRY_FIRST_MS;
  private nextAt = 0;

  constructor(private readonly core: HostCore) {}

  /** Stops the retry timer (the host stops). */
  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
  }

  /** Queues the frame's events (`mobius.signal`), bounded, and starts delivering them. */
  async queue(raw: unknown): Promise<boolean> {
    const scope = await this.core.start();
    if (!Array.isArray(raw)) throw new StorageRpcError("invalid_argument", "queueSignals needs a list of events.", 400, { name: "TypeError" });
    const now = Date.now();
    const records: SignalRecord[] = [];
    for (const [i, event] of raw.slice(0, SIGNAL_BATCH).entries()) {
      if (typeof event !== "object" || event === null) continue;
      const e = event as Record<string, unknown>;
      if (typeof e.id !== "string" || !/^[A-Za-z0-9._:-]{1,100}$/.test(e.id) || typeof e.name !== "string" || !e.name) continue;
      let serialized: string;
      try {
        serialized = JSON.stringify(e);
      } catch {
        continue;
      }
      const bytes = new Blob([serialized]).size;
      if (bytes > MAX_SIGNAL_EVENT_BYTES) continue;
      records.push({ key: `${scope}:${e.id}`, scope, event: e, bytes, queuedAt: now + i });
    }
    if (records.length > 0) {
      await this.core.db.queueSignals(records, SIGNAL_BOUNDS);
      void this.drain(false);
    }
    return true;
  }

  /** Delivers queued signals in batches; transient failures back off (Retry-After respected). */
  drain(force: boolean): Promise<void> {
    if (!force && Date.now() < this.nextAt) return Promise.resolve();
    if (force && this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    // A pass already running may have listed the queue before these events joined it.
    if (this.pass) return this.pass.then(() => this.drain(false));
    const pass: Promise<void> = Promise.resolve()
      .then(async () => {
        const scope = this.core.scope();
        if (scope === null || !this.core.online() || this.core.destroyed()) return;
        await this.core.withLock(`mobius-signals-${this.core.appId}`, async () => {
          for (;;) {
            const records = await this.core.db.listSignals(scope, SIGNAL_BATCH);
            if (records.length === 0 || !(await this.deliver(records))) return;
          }
        });
      })
      .catch(() => undefined)
      .finally(() => {
        if (this.pass === pass) this.pass = null;
      });
    this.pass = pass;
    return pass;
  }

  private async deliver(records: SignalRecord[]): Promise<boolean> {
    let response: Response;
    try {
      response = await this.core.send("/api/client-signal", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ signals: records.map((r) => r.event) }),
      });
    } catch {
      this.retryLater(null);
      return false;
    }
    if (response.ok || response.status === 403) {
      await this.core.db.deleteSignals(records.map((r) => r.key));
      if (response.ok) {
        this.delay = SIGNAL_RETRY_FIRST_MS;
        this.nextAt = 0;
      }
      return true;
    }
    if ([401, 404, 405, 408, 429].includes(response.status) || response.status >= 500) {
      this.retryLater(response);
      return false;
    }
    // Refused: find the records the server will not take, keep the rest.
    if (records.length === 1) {
      await this.core.db.deleteSignals(records.map((r) => r.key));
      return true;
    }
    const middle = Math.floor(records.length / 2);
    if (!(await this.deliver(records.slice(0, middle)))) return false;
    return this.deliver(records.slice(middle));
  }

  private retryLater(response: Response | null): void {
    if (this.timer !== null || this.core.destroyed()) return;
    let delay = this.delay;
    const retryAfter = response?.headers.get("Retry-After");
    if (retryAfter) {
      const seconds = Number(retryAfter);
      const until = Date.parse(retryAfter) - Date.now();
      if (Number.isFinite(seconds)) delay = Math.max(delay, seconds * 1000);
      else if (Number.isFinite(until)) delay = Math.max(delay, until);
    }
    delay = Math.min(delay, SIGNAL_RETRY_AFTER_MAX_MS);
    this.delay = Math.min(this.delay * 2, SIGNAL_RETRY_MAX_MS);
    this.nextAt = Date.now() + delay;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.drain(true);
    }, delay);
  }
}
