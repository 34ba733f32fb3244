//! Reads, and the mirror they come from: the last value the server was known to hold for each
//! path, kept on the device (IndexedDB). A read is answered from the mirror at once when there is
//! one (then revalidated in the background: subscribers hear of a change), else from the server;
//! a path written since the mirror last learned the server's value (`unmirrored.ts`: a reload may
//! have cut that update short) is read from the server first. Reads see queued writes, and a
//! listing shows them too.

import type { MirrorRecord, ReadKind } from "./appDb";
import type { HostCore } from "./core";
import { valueOf, type Outbox } from "./outbox";
import { forgetOtherInstallations, UnmirroredPaths } from "./unmirrored";
import { checkPath, convert, errorOf, fileUrl, listUrl, sameValue, StorageRpcError, storedFrom, type Stored } from "./wire";

/** A read waits this long for the response headers, then counts as offline. */
export const READ_TIMEOUT_MS = 2_500;
const LIST_PAGE = 500;
const LIST_PAGE_WITH_CONTENT = 16;
const MAX_LIST_PAGES = 1_000;

/** An app's reads in this page, and what it knows of the server's values. */
export class ReadMirror {
  private unmirrored: UnmirroredPaths | null = null;
  /** Mirror updates not yet committed, and whether one failed (then the marks stay). */
  private mirrorWrites = 0;
  private mirrorFailed = false;
  private readonly revalidating = new Set<string>();

  constructor(
    private readonly core: HostCore,
    /** The queued writes reads must show. */
    private readonly writes: Pick<Outbox, "ops" | "queuedFor">,
    /** Tells subscribers of `path` its new state (null: deleted). */
    private readonly notify: (path: string, stored: Stored | null) => void,
  ) {}

  /** The installation is known: marks of other installations go, this one's are loaded. */
  begin(scope: string): void {
    forgetOtherInstallations(this.core.appId, scope);
    this.unmirrored = new UnmirroredPaths(scope);
  }

  /** `path` was written here: until the server confirms it, the mirror is behind on it. */
  written(path: string): void {
    this.unmirrored?.add(path);
  }

  private mirrorKey(path: string): string {
    return `${this.core.scope()}:${path}`;
  }

  private async record(path: string): Promise<MirrorRecord | undefined> {
    return this.core.db.getMirror(this.mirrorKey(path)).catch(() => undefined);
  }

  /**
   * What the server holds for `path` now, for later reads (also after a reload: the write starts
   * at once, and transactions run in call order, so a read issued after it sees it).
   */
  remember(path: string, stored: Stored | null, version: string | null): void {
    const record: MirrorRecord = {
      key: this.mirrorKey(path),
      scope: this.core.scope() ?? "",
      path,
      present: stored !== null,
      kind: stored?.kind ?? "json",
      contentType: stored?.contentType ?? null,
      value: stored?.value ?? null,
      version,
      at: Date.now(),
    };
    this.mirrorWrites += 1;
    void this.core.db
      .putMirror(record)
      .then(
        () => {
          if (!this.writes.queuedFor(path)) this.unmirrored?.remove(path);
        },
        () => {
          this.mirrorFailed = true;
        },
      )
      .finally(() => {
        this.mirrorWrites -= 1;
        if (this.mirrorWrites === 0 && this.writes.ops.length === 0 && !this.mirrorFailed) this.unmirrored?.settled();
      });
  }

  /** GET from the server: the stored value (null when absent) and its version. */
  private async fetchStored(path: string): Promise<{ stored: Stored | null; version: string | null }> {
    const response = await this.core.send(fileUrl(this.core.appId, path), { method: "GET", headers: { "X-Mobius-Version": "1" } }, READ_TIMEOUT_MS);
    if (response.status === 404) return { stored: null, version: null };
    if (!response.ok) throw await errorOf(response, path);
    return { stored: await storedFrom(response, path), version: response.headers.get("ETag") };
  }

  /** `storage.get`/`getText`/`getBlob`: the value of `path` as `kind` (null when absent). */
  async read(path: string, kind: ReadKind): Promise<unknown> {
    await this.core.start();
    const op = this.writes.queuedFor(path);
    if (op) return valueOf(op, kind);
    const mirrored = await this.record(path);
    const online = this.core.online();
    // Written since the mirror last heard from the server: the server's answer comes first.
    const behind = online && (this.unmirrored?.has(path) ?? false);
    // A known absence of a blob is checked again (the agent or a job may have written it since).
    const usable = !behind && mirrored && !(mirrored.present === false && kind === "blob" && online) && (!mirrored.present || mirrored.kind === kind || !online);
    if (mirrored && usable) {
      if (online && kind !== "blob") this.revalidate(path);
      return mirrored.present ? convert(mirrored, kind, path) : null;
    }
    if (online) {
      try {
        const { stored, version } = await this.fetchStored(path);
        this.remember(path, stored, version);
        const again = this.writes.queuedFor(path);
        if (again) return valueOf(again, kind);
        return stored ? convert(stored, kind, path) : null;
      } catch (error) {
        // The server refused (not a missing network): say so rather than pretend there is nothing.
        if (error instanceof StorageRpcError && error.status > 0 && error.code !== "token_unavailable") throw error;
      }
    }
    // The server could not say: what the device last knew beats nothing.
    if (behind && mirrored?.present && mirrored.kind === kind) return convert(mirrored, kind, path);
    return null;
  }

  /** Refreshes the mirror of `path` in the background; subscribers hear of a change. */
  private revalidate(path: string): void {
    if (this.revalidating.has(path)) return;
    this.revalidating.add(path);
    void (async () => {
      try {
        if (this.writes.queuedFor(path)) return;
        const { stored, version } = await this.fetchStored(path);
        if (this.writes.queuedFor(path)) return;
        const before = await this.record(path);
        this.remember(path, stored, version);
        const changed = !before || before.present !== (stored !== null) || (stored !== null && !sameValue(before.value, stored.value));
        if (changed) this.notify(path, stored);
      } catch {
        // Offline or refused: the mirror stays as it was.
      } finally {
        this.revalidating.delete(path);
      }
    })();
  }

  /** `storage.getWithVersion`: the server's value and version (offline: the mirror's, marked so). */
  async readWithVersion(path: string, kind: ReadKind): Promise<{ value: unknown; version: string | null; offline?: true }> {
    await this.core.start();
    if (!this.core.online()) {
      const mirrored = await this.record(path);
      const op = this.writes.queuedFor(path);
      const value = op ? valueOf(op, kind) : mirrored?.present ? convert(mirrored, kind, path) : null;
      return { value, version: mirrored?.version ?? null, offline: true };
    }
    const { stored, version } = await this.fetchStored(path);
    this.remember(path, stored, version);
    const op = this.writes.queuedFor(path);
    return { value: op ? valueOf(op, kind) : stored ? convert(stored, kind, path) : null, version };
  }

  /** Reads `path` again after a refused write (and, when `tell`, shows subscribers the server's value). */
  repair(path: string, tell: boolean): void {
    if (this.writes.queuedFor(path)) return;
    void this.fetchStored(path)
      .then(({ stored, version }) => {
        if (this.writes.queuedFor(path)) return;
        this.remember(path, stored, version);
        if (tell) this.notify(path, stored);
      })
      .catch(() => undefined);
  }

  // ---------- listing ----------

  /** `storage.list`: the entries under `prefix`, the server's (else the mirror's) with queued writes applied. */
  async list(prefix: string, includeContent: boolean): Promise<unknown[]> {
    const scope = await this.core.start();
    const clean = prefix.replace(/^\/+|\/+$/g, "");
    if (clean !== "") checkPath(clean);
    const base = clean ? `${clean}/` : "";
    const byName = new Map<string, Record<string, unknown>>();
    const server = this.core.online() ? await this.listServer(clean, includeContent) : null;
    const child = (path: string): string | null => (base ? (path.startsWith(base) ? path.slice(base.length) : null) : path);
    const addDerived = (path: string, kind: ReadKind, contentType: string | null, value: unknown) => {
      const rest = child(path);
      if (!rest) return;
      const slash = rest.indexOf("/");
      if (slash === -1) {
        const existing = byName.get(rest);
        if (existing) {
          if (includeContent && kind === "json") existing.content = value;
          return;
        }
        const entry: Record<string, unknown> = { name: rest, path: base + rest, type: "file", mime_type: contentType ?? (kind === "json" ? "application/json" : null) };
        if (includeContent && kind === "json") entry.content = value;
        byName.set(rest, entry);
      } else {
        const dir = rest.slice(0, slash);
        if (!byName.has(dir)) byName.set(dir, { name: dir, path: base + dir, type: "directory" });
      }
    };
    if (server) for (const entry of server) byName.set(String(entry.name), entry);
    else {
      for (const record of await this.core.db.listMirror(scope).catch(() => [] as MirrorRecord[])) {
        if (record.present) addDerived(record.path, record.kind, record.contentType, record.value);
      }
    }
    for (const op of this.writes.ops) {
      if (op.method === "DELETE") {
        const rest = child(op.path);
        if (rest && !rest.includes("/")) byName.delete(rest);
      } else addDerived(op.path, op.kind, op.contentType, op.value);
    }
    return [...byName.values()].sort((a, b) => {
      const x = String(a.name);
      const y = String(b.name);
      return x < y ? -1 : x > y ? 1 : 0;
    });
  }

  /** Every page of the server's listing, or null when it cannot be had. */
  private async listServer(prefix: string, includeContent: boolean): Promise<Record<string, unknown>[] | null> {
    try {
      const entries: Record<string, unknown>[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const url = listUrl(this.core.appId, prefix, { includeContent, cursor, limit: includeContent ? LIST_PAGE_WITH_CONTENT : LIST_PAGE });
        const response = await this.core.send(url, { method: "GET" }, READ_TIMEOUT_MS);
        if (response.status === 404) return [];
        if (!response.ok) return null;
        const body = (await response.json()) as { entries?: Record<string, unknown>[]; next_cursor?: string | null };
        entries.push(...(body.entries ?? []));
        cursor = body.next_cursor ?? null;
        if (!cursor) break;
      }
      return entries;
    } catch {
      return null;
    }
  }
}
