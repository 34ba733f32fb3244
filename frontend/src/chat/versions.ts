//! Versions of a reply (Regenerate): the rows after an owner's message, up to the next one,
//! are that message's reply; a row carrying `version: n` starts its n-th version, and the rows
//! after it (until the next version or owner message) belong to it. One version of each reply
//! shows at a time — the chosen one, else the newest —, with a switcher (‹ 1/2 ›) on its last
//! row. A handoff marker (a provider switch, a compaction) is never part of a reply.

import type { ChatMessage, Row } from "./reducer";

/** The switcher of a reply: its group (the owner's row key), the version shown, how many. */
export interface VersionSwitch {
  group: string;
  shown: number;
  count: number;
}

export interface VersionedRows {
  /** The rows to show, in order. */
  rows: Row[];
  /** Row key → the switcher under it (on the last shown row of a reply with versions). */
  switches: Map<string, VersionSwitch>;
  /** Row key → the reply group a row belongs to. */
  groups: Map<string, string>;
}

function isHandoff(message: ChatMessage): boolean {
  return (message.blocks ?? []).some((b) => b.type === "handoff");
}

/**
 * Shows one version of each reply: `chosen` maps a group to the version picked (else the
 * newest); `reveal` (a transcript index, a search hit) picks the version that holds it.
 */
export function versionRows(rows: readonly Row[], chosen: ReadonlyMap<string, number>, reveal: number | null = null): VersionedRows {
  const out: Row[] = [];
  const switches = new Map<string, VersionSwitch>();
  const groups = new Map<string, string>();
  let i = 0;
  while (i < rows.length) {
    const first = rows[i] as Row;
    let group: string;
    if (first.message.role === "user") {
      out.push(first);
      group = first.key;
      i += 1;
    } else {
      group = `lead:${first.key}`;
    }
    const members: Row[] = [];
    while (i < rows.length) {
      const row = rows[i] as Row;
      if (row.message.role !== "assistant" || isHandoff(row.message)) break;
      members.push(row);
      i += 1;
    }
    if (members.length === 0) {
      // A handoff marker (or an owner row right after another) stands alone.
      if (first.message.role !== "user") {
        out.push(first);
        i += 1;
      }
      continue;
    }
    let attempt = 1;
    const attempts = members.map((row) => {
      const version = row.message.version;
      if (typeof version === "number" && version > 1) attempt = version;
      return attempt;
    });
    const count = Math.max(...attempts);
    for (const row of members) groups.set(row.key, group);
    if (count <= 1) {
      out.push(...members);
      continue;
    }
    const revealed = reveal === null ? -1 : members.findIndex((row) => row.idx === reveal);
    let shown = revealed >= 0 ? (attempts[revealed] as number) : Math.min(Math.max(chosen.get(group) ?? count, 1), count);
    if (!attempts.includes(shown)) shown = count;
    const visible = members.filter((_, k) => attempts[k] === shown);
    out.push(...visible);
    const last = visible[visible.length - 1];
    if (last) switches.set(last.key, { group, shown, count });
  }
  return { rows: out, switches, groups };
}
